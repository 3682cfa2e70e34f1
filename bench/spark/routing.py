"""The routing stage: one scheme object per source, kept across micro-batches.

Spark runs it as ``groupBy("rg").applyInPandasWithState(...)``: group *j* holds source *j*'s router
(the pickled :class:`~skewbench.scheme.Scheme`, the same object the simulator uses) and sees only
source *j*'s messages, in ``seq`` order, so a ``coupling = "local"`` scheme makes exactly the
decisions it makes in the simulator.  The group key ``rg`` is a *preimage* (:func:`preimages`) so that
group *j* is Spark partition *j*.

Which schemes can run (:func:`prepare`):

* online ``local`` schemes — as in the simulator, ``[proto] + [proto.spawn() ...]``;
* ``offline`` schemes (off-greedy) — fitted on the driver with the whole stream's key counts, exactly
  as the simulator fits them, then spawned to every source;
* ``adaptive`` schemes (gedik-*, llfd, mintable, minmig, mixed*) — the driver routes a warm-up prefix
  of :func:`warmup_messages` messages with the initial (hash) function, rebalances once on that
  prefix's statistics, and every source gets a copy of the resulting *fixed* table.  Routing by a
  fixed table is a pure function of the key, so sharing it is honest; what this does not do is
  rebalance during the run (the simulator rebalances every interval);
* ``coupling = "global"`` online schemes (pkg-global: one load vector for all sources) and schemes that
  need the true worker loads between intervals (pkg-probe's ``sync``) cannot share state inside a
  micro-batch and are refused by :func:`prepare` with a :class:`SchemeNotSupported`.
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd

from skewbench.scheme import Scheme, Stats, make_scheme


class SchemeNotSupported(ValueError):
    """The scheme cannot run in the Spark pipeline (see the module docstring)."""


def warmup_messages(n: int) -> int:
    """Prefix an adaptive scheme's table is fitted on: 10 % of the stream, at least 1000 messages."""
    return min(n, max(1000, n // 10))


def _key_stats(stream, lo: int, hi: int, loads: np.ndarray) -> Stats:
    keys, counts = np.unique(stream.ids[lo:hi], return_counts=True)
    return Stats(keys=stream.key_fps[keys], counts=counts.astype(np.float64), loads=loads.astype(np.float64),
                 now=float(stream.clock[hi - 1]))


def check_supported(proto: Scheme) -> None:
    """Raise :class:`SchemeNotSupported` for schemes the routing stage cannot run honestly."""
    if type(proto).sync is not Scheme.sync:
        raise SchemeNotSupported(f"scheme {proto.name!r} needs the true worker loads between intervals (sync), "
                                 f"which the Spark routing stage does not feed back; use pkg (local estimation)")
    if proto.coupling == "global" and not proto.adaptive:
        raise SchemeNotSupported(f"scheme {proto.name!r} shares one load vector across all sources, which Spark's "
                                 f"per-source routing tasks cannot share inside a micro-batch; use pkg "
                                 f"(per-source estimates) instead")


def prepare(name: str, workers: int, sources: int, stream, seed: int = 0) -> list[Scheme]:
    """The initial router of every source (raises :class:`SchemeNotSupported` or ``ValueError``)."""
    proto = make_scheme(name, workers, seed=seed)
    check_supported(proto)
    if proto.offline:
        proto.fit(_key_stats(stream, 0, stream.messages, np.zeros(workers)))
    if proto.adaptive:
        m = warmup_messages(stream.messages)
        loads = np.bincount(proto.route_many(stream.fps[:m], stream.clock[:m]), minlength=workers)
        proto.apply(proto.rebalance(_key_stats(stream, 0, m, loads)))
        frozen = pickle.dumps(proto)
        return [pickle.loads(frozen) for _ in range(sources)]
    return [proto] + [proto.spawn() for _ in range(sources - 1)]


def route_batch(scheme: Scheme, app, batch: pd.DataFrame) -> pd.DataFrame:
    """Route one source's micro-batch (any order) and fan it out: the rows for the worker stage."""
    batch = batch.sort_values("seq", kind="stable").reset_index(drop=True)
    fps = batch["fp"].to_numpy(dtype=np.int64).view(np.uint64)
    routes = scheme.route_many(fps, batch["t_stream"].to_numpy(dtype=np.float64))
    rows = app.fan_out(scheme, fps, routes, batch.drop(columns=["t_stream"]))
    rows["worker"] = rows["worker"].astype(np.int32)
    return rows


def router(initial: list[bytes], app, columns: list[str]):
    """The ``applyInPandasWithState`` function of the routing stage.

    ``initial[j]``: source *j*'s pickled router; ``columns``: the output columns in schema order.
    """

    def route(key, frames, state):
        batch = pd.concat(list(frames), ignore_index=True)
        if batch.empty:
            return
        scheme = pickle.loads(state.get[0] if state.exists else initial[int(batch["source"].iloc[0])])
        rows = route_batch(scheme, app, batch)
        state.update((pickle.dumps(scheme),))
        yield rows[columns]

    return route
