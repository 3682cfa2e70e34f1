"""A keyed stream, as every part of skewbench sees it: one array per column, one row per message."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from skewbench.hashing import fingerprints


@dataclass(frozen=True, eq=False)
class Stream:
    """Messages in arrival order.

    Parameters
    ----------
    name : str
        The workload spec that produced it (recorded with every result).
    ids : int64 array
        Dense key id of each message, ``0 .. n_keys - 1``.
    labels : array, optional
        The key itself for each id (``str`` words, ``int`` tickers ...); ``None`` means the id is
        the key.  Routing hashes the label, so Spark and the simulator agree.
    times : float64 array, optional
        Arrival time of each message in seconds (non-decreasing); ``None`` means one message per
        unit of time at a constant rate, i.e. ``index / rate``.
    split_ids : int64 array, optional
        The id that a *key split to sources* hashes on (PKG Q3: graph edges split by source vertex
        while workers are keyed by destination); ``None`` means the message key.
    payload : dict of arrays
        Per-message application columns (document class, tick price ...), same length as ``ids``.
    """

    name: str
    ids: np.ndarray
    labels: np.ndarray | None = None
    times: np.ndarray | None = None
    split_ids: np.ndarray | None = None
    payload: dict[str, np.ndarray] = field(default_factory=dict)
    rate: float = 1.0

    def __post_init__(self):
        ids = np.ascontiguousarray(self.ids, dtype=np.int64)
        object.__setattr__(self, "ids", ids)
        if ids.ndim != 1:
            raise ValueError("ids must be one-dimensional")
        if len(ids) and ids.min() < 0:
            raise ValueError("key ids must be non-negative")
        if self.labels is not None and len(ids) and ids.max() >= len(self.labels):
            raise ValueError("a key id has no label")
        for col_name, col in [("times", self.times), ("split_ids", self.split_ids), *self.payload.items()]:
            if col is not None and len(col) != len(ids):
                raise ValueError(f"column {col_name!r} has {len(col)} rows, expected {len(ids)}")

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def messages(self) -> int:
        return len(self.ids)

    @cached_property
    def n_keys(self) -> int:
        """Size of the key id space (``len(labels)``, or ``max id + 1``)."""
        if self.labels is not None:
            return len(self.labels)
        return int(self.ids.max()) + 1 if len(self.ids) else 0

    @cached_property
    def key_counts(self) -> np.ndarray:
        """Messages per key id."""
        return np.bincount(self.ids, minlength=self.n_keys)

    @property
    def distinct_keys(self) -> int:
        return int(np.count_nonzero(self.key_counts))

    @property
    def p1(self) -> float:
        """Share of the most frequent key (PKG Table I)."""
        return float(self.key_counts.max() / len(self.ids)) if len(self.ids) else 0.0

    @cached_property
    def key_fps(self) -> np.ndarray:
        """Fingerprint of each key id (hashes the label, or the id itself)."""
        if self.labels is None:
            return fingerprints(np.arange(self.n_keys, dtype=np.int64))
        return fingerprints(self.labels)

    @cached_property
    def fps(self) -> np.ndarray:
        """Fingerprint of each message's key."""
        return self.key_fps[self.ids]

    @cached_property
    def clock(self) -> np.ndarray:
        """Arrival time of each message (``times``, or ``index / rate``)."""
        if self.times is not None:
            return np.asarray(self.times, dtype=np.float64)
        return np.arange(len(self.ids), dtype=np.float64) / self.rate

    def summary(self) -> dict:
        """Messages, distinct keys and p1 — the columns of PKG Table I."""
        return {"workload": self.name, "messages": self.messages,
                "keys": self.distinct_keys, "p1_pct": round(100 * self.p1, 3)}

    def head(self, n: int) -> Stream:
        """The first ``n`` messages (same key space)."""
        cut = lambda a: None if a is None else a[:n]  # noqa: E731
        return Stream(self.name, self.ids[:n], self.labels, cut(self.times), cut(self.split_ids),
                      {k: v[:n] for k, v in self.payload.items()}, self.rate)
