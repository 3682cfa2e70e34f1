"""The app interface of the Spark pipeline (issue 4): what the routing stage sends, what a worker does.

An :class:`App` is pure pandas/numpy: the pipeline (``skewbench.bench.spark``) and the in-process
mini-pipeline (:mod:`skewbench.bench.apps.local`) call the same methods, so every scheme's final
answer can be compared with :meth:`App.reference`, computed by one process without routing.

The routing stage decides which copies of each message go to which worker (:meth:`App.fan_out`,
:class:`Copies`); a worker then sees one row per copy (:func:`copy_rows`): ``seq`` int64 (global
message index), ``source`` int32, ``key`` str (the label), ``fp`` int64 (the uint64 fingerprint
viewed as int64), ``t_intended`` float64, the app's payload columns, then ``worker`` int32 and
``role`` str (``'store'`` updates the worker's state, ``'probe'`` is a read-only copy for a worker
that may hold state of the key).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, NamedTuple

import numpy as np
import pandas as pd

from skewbench.scheme import Scheme
from skewbench.stream import Stream

APPS: dict[str, type[App]] = {}


def register_app(cls: type[App]) -> type[App]:
    """Class decorator: make an app available under ``cls.name``."""
    APPS[cls.name] = cls
    return cls


def make_app(name: str, **params) -> App:
    """Instantiate a registered app by name (``ValueError`` listing the names if unknown)."""
    try:
        cls = APPS[name]
    except KeyError:
        raise ValueError(f"unknown app {name!r}; known apps: {' '.join(sorted(APPS))}") from None
    return cls(**params)


class Copies(NamedTuple):
    """Where the copies of a source batch's messages go: copy *i* is of the batch's row ``row[i]``,
    for worker ``worker[i]``, stored there if ``store[i]`` else a probe.  Stored copies come first,
    each part in row order."""
    row: np.ndarray  # int64
    worker: np.ndarray  # int32
    store: np.ndarray  # bool


def copies(scheme: Scheme, fps: np.ndarray, routes: np.ndarray, store: np.ndarray, probe: np.ndarray,
           probe_store_worker: bool = False) -> Copies:
    """The copies of one source batch (rows ``fps``, routed to ``routes``).

    ``store`` marks rows stored at ``routes[i]``; ``probe`` marks rows copied read-only to every
    holder of their key (:meth:`Scheme.holder_pairs`) — except the store worker, unless
    ``probe_store_worker`` (rows that are probes only, e.g. Naive Bayes queries, go to all holders).
    Raises ``ValueError`` when a store worker is not among the holders (the holder rule would then
    miss state).
    """
    routes = np.asarray(routes, dtype=np.int64)
    store, probe = np.asarray(store, dtype=bool), np.asarray(probe, dtype=bool)
    stored = np.flatnonzero(store)
    everywhere = scheme.holds_every_key()
    need = np.flatnonzero(probe if everywhere else probe | store)  # sg: no W pairs per stored message
    rows, workers = scheme.holder_pairs(np.asarray(fps)[need])
    rows = need[rows]
    at_route = workers == routes[rows]
    covered = np.zeros(len(routes), dtype=bool)
    covered[rows[at_route]] = True
    if not (everywhere or covered[store].all()):
        bad = int(np.flatnonzero(store & ~covered)[0])
        raise ValueError(f"scheme {scheme.name!r} routed key fp={int(np.asarray(fps).view(np.uint64)[bad])} to "
                         f"worker {routes[bad]}, which is not among its holders: the app would miss state")
    keep = probe[rows] & (probe_store_worker | ~at_route)
    rows, workers = rows[keep], workers[keep]
    return Copies(np.concatenate([stored, rows]), np.concatenate([routes[stored], workers]).astype(np.int32),
                  np.arange(len(stored) + len(rows)) < len(stored))


def copy_rows(batch: pd.DataFrame, sent: Copies) -> pd.DataFrame:
    """The rows a worker sees for the copies ``sent`` of ``batch``'s messages (module docstring)."""
    return batch.iloc[sent.row].assign(worker=sent.worker, role=np.where(sent.store, "store", "probe"))


# -- the stream as the routing stage sees it ----------------------------------------------------------

def key_labels(stream: Stream, ids: np.ndarray | None = None) -> np.ndarray:
    """Each key's label as ``str`` (its id when the stream has no labels), indexed by key id; only those of
    the keys ``ids`` when given."""
    labels = np.arange(stream.n_keys) if stream.labels is None else np.asarray(stream.labels)
    return (labels if ids is None else labels[ids]).astype(str).astype(object)


def stream_keys(stream: Stream) -> np.ndarray:
    """The ``key`` column: each message's label (:func:`key_labels`)."""
    return key_labels(stream)[stream.ids]


def stream_rows(stream: Stream, app: App, sources: np.ndarray | None = None) -> pd.DataFrame:
    """All messages as routing-stage input rows (``seq``, ``source``, ``key``, ``fp``,
    ``t_intended`` = the stream clock, then the app's payload columns)."""
    n = stream.messages
    frame = pd.DataFrame({
        "seq": np.arange(n, dtype=np.int64),
        "source": np.zeros(n, dtype=np.int32) if sources is None else np.asarray(sources, dtype=np.int32),
        "key": stream_keys(stream),
        "fp": stream.fps.view(np.int64),
        "t_intended": stream.clock.astype(np.float64),
    })
    for col in app.payload_columns:
        frame[col] = stream.payload[col]
    return frame


class App:
    """One streaming application; see the module docstring and ``/work/briefs/common-issue4.md``."""

    name: ClassVar[str] = ""
    default_workload: ClassVar[str] = ""
    payload_columns: ClassVar[tuple[str, ...]] = ()
    #: whether a probe reads its holders' final state, so that it must also reach the holders a key gains
    #: later, when W changes and a scheme leaves partial state where it is (:class:`skewbench.migration.Live`)
    probes_read_final_state: ClassVar[bool] = False

    def check(self, stream: Stream) -> None:
        """``ValueError`` with a clear message if ``stream`` lacks what the app needs."""
        missing = [c for c in self.payload_columns if c not in stream.payload]
        if missing:
            have = ", ".join(sorted(stream.payload)) or "none"
            raise ValueError(f"app {self.name!r} needs payload column(s) {', '.join(missing)} "
                             f"(stream {stream.name!r} has: {have}); try the workload {self.default_workload!r}")

    def prepare(self, stream: Stream) -> Stream:
        """The stream as the app reads it: apps that can give a plain keyed stream the payload they need
        (a self-join's prices, Naive Bayes's documents) add it here, deterministically; default: as is."""
        return stream

    def fan_out(self, scheme: Scheme, fps: np.ndarray, routes: np.ndarray, batch: pd.DataFrame) -> Copies:
        """The copies of a source batch (``fps`` its keys, ``routes`` the scheme's decisions; ``batch``
        has ``seq``, ``fp`` and the payload columns): :func:`copies` with the app's store/probe split."""
        raise NotImplementedError

    def new_state(self, worker: int) -> object:
        raise NotImplementedError

    def process(self, state, rows: pd.DataFrame) -> tuple[object, pd.DataFrame]:
        raise NotImplementedError

    def finish(self, state) -> tuple[object, pd.DataFrame | None]:
        """After the worker's last message: what it still holds that the aggregator must receive
        (outputs, or None), and the state left.  Apps that send as they go need nothing here."""
        return state, None

    def state_entries(self, state) -> int:
        raise NotImplementedError

    def driver_state(self, state) -> object:
        """What of a worker's final state :meth:`combine` needs: the worker sends it to the driver with its
        last micro-batch.  Default: all of it; apps whose answer is in their outputs send nothing."""
        return state

    # -- moving keys between workers (issue 21: :mod:`~skewbench.bench.apps.handover`) -----------------
    def take(self, state, fps: np.ndarray, to: int) -> tuple[object, object]:
        """Remove the state of the keys ``fps`` (int64 fingerprints) that go to worker ``to``; returns the
        state left and the part removed (any picklable object, for :meth:`put` on worker ``to``).  Keys the
        worker does not hold give an empty part."""
        raise NotImplementedError(f"app {self.name!r} cannot move a key's state")

    def put(self, state, part) -> object:
        """Add a part that :meth:`take` removed on another worker; returns the new state."""
        raise NotImplementedError(f"app {self.name!r} cannot move a key's state")

    def reduce(self, frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
        """The outputs the aggregator received (one frame per micro-batch, in order), as :meth:`combine`
        needs them; apps whose outputs shrink when merged override it, so that the driver never holds
        all of them at once.  Default: all of them."""
        frames = list(frames)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["seq", "worker"])

    def combine(self, outputs: pd.DataFrame, states: list) -> object:
        raise NotImplementedError

    def reference(self, stream: Stream) -> object:
        raise NotImplementedError

    def periodic(self, batches: Iterable[tuple[int, pd.DataFrame]]) -> pd.DataFrame | None:
        """What the aggregator reports after every micro-batch (``batches``: (batch id, that batch's
        outputs) in batch order), as one tidy frame with a ``batch`` column; None for apps that report
        only at the end."""
        return None

    def same(self, a, b) -> bool:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

