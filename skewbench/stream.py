"""A keyed stream, as every part of skewbench sees it: one array per column, one row per message.

A stream too long to hold (TW's 1.2G messages would need ~100 GB as arrays) is a
:class:`GeneratedStream`: its pieces are generated from the seed each time it is read, and the
simulator reads them one at a time, so memory is bounded by a piece and the key space.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterator

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
    key_hashes : uint64 array, optional
        The fingerprint of each key id when it is already known — the pieces of a longer stream
        share their parent's (:meth:`chunks`), so no piece hashes its key space again; ``None``
        means hashed from the labels.
    """

    name: str
    ids: np.ndarray
    labels: np.ndarray | None = None
    times: np.ndarray | None = None
    split_ids: np.ndarray | None = None
    payload: dict[str, np.ndarray] = field(default_factory=dict)
    rate: float = 1.0
    key_hashes: np.ndarray | None = None

    def __post_init__(self):
        ids = np.ascontiguousarray(self.ids, dtype=np.int64)
        object.__setattr__(self, "ids", ids)
        if ids.ndim != 1:
            raise ValueError("ids must be one-dimensional")
        if len(ids) and ids.min() < 0:
            raise ValueError("key ids must be non-negative")
        if self.labels is not None and len(ids) and ids.max() >= len(self.labels):
            raise ValueError("a key id has no label")
        if self.key_hashes is not None and len(ids) and ids.max() >= len(self.key_hashes):
            raise ValueError("a key id has no fingerprint")
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
        """Size of the key id space (``len(key_hashes)``, ``len(labels)``, or ``max id + 1``)."""
        if self.key_hashes is not None:
            return len(self.key_hashes)
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
        """Fingerprint of each key id (``key_hashes``, or the hash of the label, or of the id itself)."""
        if self.key_hashes is not None:
            return self.key_hashes
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
        return self._clock(0, self.messages)

    def _clock(self, lo: int, hi: int) -> np.ndarray:
        if self.times is not None:
            return np.asarray(self.times[lo:hi], dtype=np.float64)
        return np.arange(lo, hi, dtype=np.float64) / self.rate

    def summary(self) -> dict:
        """Messages, distinct keys and p1 — the columns of PKG Table I."""
        return {"workload": self.name, "messages": self.messages,
                "keys": self.distinct_keys, "p1_pct": round(100 * self.p1, 3)}

    def head(self, n: int) -> Stream:
        """The first ``n`` messages (same key space)."""
        return self.slice(0, n)

    def slice(self, lo: int, hi: int) -> Stream:
        """Messages ``lo .. hi - 1``: same key space and fingerprints, their arrival times kept."""
        split_ids = None if self.split_ids is None else self.split_ids[lo:hi]
        piece = Stream(self.name, self.ids[lo:hi], self.labels, self._clock(lo, hi), split_ids,
                       {k: v[lo:hi] for k, v in self.payload.items()}, self.rate, self.key_fps)
        # Gathered once for the whole stream, not again for each piece of each run (a study
        # simulates one stream many times); stored where the cached property would store it.
        piece.__dict__["fps"] = self.fps[lo:hi]
        return piece

    def chunks(self, size: int) -> Iterator[Stream]:
        """Consecutive pieces of at most ``size`` messages (:meth:`slice`), as a :class:`GeneratedStream` gives."""
        for lo in range(0, self.messages, size):
            yield self.slice(lo, min(lo + size, self.messages))


class GeneratedStream:
    """A stream regenerated from its seed, piece by piece, each time it is read.

    ``chunks(size)`` yields consecutive :class:`Stream` pieces of at most ``size`` messages that
    share one key id space and its fingerprints (``key_hashes``) and carry their arrival times;
    their concatenation is the stream ``whole()`` generates in memory.  Any other attribute
    (``ids``, ``fps``, ``distinct_keys`` ...) generates that whole stream once, so code written for
    a :class:`Stream` keeps working — at a :class:`Stream`'s memory.

    Parameters
    ----------
    name : str
        The workload spec.
    messages : int
        Length of the stream.
    chunks : callable
        ``chunks(size)`` → iterator of pieces, as above.
    whole : callable
        ``whole()`` → the :class:`Stream` in memory.
    """

    def __init__(self, name: str, messages: int, chunks: Callable[[int], Iterator[Stream]],
                 whole: Callable[[], Stream]):
        self.name, self.messages, self._chunks, self._whole = name, messages, chunks, whole

    def __len__(self) -> int:
        return self.messages

    def chunks(self, size: int) -> Iterator[Stream]:
        return self._chunks(size)

    @cached_property
    def whole(self) -> Stream:
        return self._whole()

    def __getattr__(self, attribute: str):  # only called for what this class does not define
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        return getattr(self.whole, attribute)
