"""The S sources of a run: which source reads each message, and the router each source runs.

The simulator (:mod:`skewbench.simulator.engine`), the in-process pipeline
(:mod:`skewbench.bench.apps.local`) and the Spark routing stage (:mod:`skewbench.bench.spark.routing`)
all split a stream and build their routers here, so that for the same stream, split and scheme
they make the same decisions (the Spark tests compare per-worker counts with the simulator's).
"""

from __future__ import annotations

import pickle

import numpy as np

from skewbench.hashing import fingerprints
from skewbench.scheme import Scheme, Stats, make_scheme
from skewbench.stream import Stream

SPLITS = ("shuffle", "key")


def source_of_each_message(stream: Stream, sources: int, split: str, start: int = 0,
                           end: int | None = None, *, first: int = 0) -> np.ndarray:
    """Source index per message (of messages ``start .. end - 1``): ``shuffle`` deals round-robin,
    ``key`` hashes the split key.  ``first``: where ``stream`` starts in the whole stream (a piece's
    position), so that a piece is dealt as the whole stream deals it."""
    end = stream.messages if end is None else end
    if split == "shuffle":
        return np.arange(first + start, first + end, dtype=np.int64) % sources
    if split == "key":
        fps = stream.fps[start:end] if stream.split_ids is None else fingerprints(stream.split_ids[start:end])
        return (fps % np.uint64(sources)).astype(np.int64)
    raise ValueError(f"unknown source split {split!r}; use one of {', '.join(SPLITS)}")


def interval_stats(stream: Stream, lo: int, hi: int, loads: np.ndarray) -> Stats:
    """What a controller sees of messages ``lo .. hi - 1``, given the workers' ``loads`` over them."""
    keys, counts = np.unique(stream.ids[lo:hi], return_counts=True)
    return Stats(keys=stream.key_fps[keys], counts=counts.astype(np.float64), loads=loads.astype(np.float64),
                 now=float(stream.clock[hi - 1]))


def fit_offline(scheme: Scheme, stream: Stream) -> None:
    """Give an offline scheme (off-greedy) the whole stream's key counts; other schemes ignore it."""
    if scheme.offline:
        scheme.fit(interval_stats(stream, 0, stream.messages, np.zeros(scheme.workers)))


def prepare_scheme(name: str, workers: int, stream: Stream, *, seed: int = 0, params: dict | None = None,
                   plan_prefix: int | None = None) -> Scheme:
    """A prototype router for ``stream`` that keeps one routing function for the whole run.

    Offline schemes (off-greedy) are fitted on the whole stream's key counts (:func:`fit_offline`).
    Adaptive schemes (gedik-*, llfd, mintable, ...) route the first ``plan_prefix`` messages
    (default: a tenth of the stream), install the plan they produce from those statistics, and
    keep it: the apps do not migrate state, so a plan may not change while they run.  (The
    simulator instead rebalances every interval.)
    """
    scheme = make_scheme(name, workers, seed=seed, **(params or {}))
    fit_offline(scheme, stream)
    if scheme.adaptive:
        plan_on_prefix(scheme, stream, max(1, stream.messages // 10 if plan_prefix is None else int(plan_prefix)))
    return scheme


def plan_on_prefix(scheme: Scheme, stream: Stream, n: int) -> None:
    """An adaptive ``scheme`` routes the first ``n`` messages and installs the plan it makes of them."""
    routes = scheme.route_many(stream.fps[:n], stream.clock[:n])
    plan = scheme.rebalance(interval_stats(stream, 0, n, np.bincount(routes, minlength=scheme.workers)))
    if plan is not None:
        scheme.apply(plan)


def source_routers(proto: Scheme, sources: int, *, distributed: bool = False) -> list[Scheme]:
    """The router of every source, built from the prepared prototype ``proto`` (which becomes one).

    * ``coupling = "local"``: ``proto`` for source 0 and a :meth:`~skewbench.scheme.Scheme.spawn`
      (same parameters, empty state; an offline scheme's fitted table is shared) for each other
      source, which then keeps its own estimates;
    * ``coupling = "global"``: the scheme models state every source shares (a load oracle, one
      routing table), so one router takes all sources' messages in arrival order: ``[proto]``;
    * ``distributed`` (sources in separate processes, e.g. Spark tasks, cannot share an object):
      an adaptive scheme gives every source its own pickled copy of ``proto``, whose installed
      plan is a fixed table, so routing is a pure function of the key and the copies agree
      (:meth:`~skewbench.scheme.Scheme.spawn` would drop the plan).  A global scheme that is not
      adaptive (a load oracle) becomes one router per source, which a driver keeps in step by telling
      them all the same true loads between micro-batches (:meth:`~skewbench.scheme.Scheme.sync`).

    >>> [len(source_routers(make_scheme(name, workers=4), sources=3)) for name in ("pkg", "pkg-global")]
    [3, 1]
    """
    if distributed and proto.adaptive:
        frozen = pickle.dumps(proto)
        return [pickle.loads(frozen) for _ in range(sources)]
    if proto.coupling == "global" and not distributed:
        return [proto]
    return [proto] + [proto.spawn() for _ in range(sources - 1)]
