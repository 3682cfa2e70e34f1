"""Load feedback on the cluster (issue 21): the workers' true loads reach the sources between micro-batches.

pkg-probe sets each source's load estimates to the workers' true loads every probing period, and pkg-global
routes with one load vector that every source shares (:mod:`skewbench.schemes.pkg`). Spark's source tasks
share nothing inside a micro-batch, so on the cluster both learn the true loads once per micro-batch: after
batch *b* the driver writes every worker's message copies so far (stored and probed; on slow workers weighed
by ``1 / speed``, their time: :mod:`skewbench.speeds`) as ``loads-<b+1>.npy`` in the run's routing folder
(:func:`~skewbench.bench.spark.live.folder_of`), once, and each source sets its router's estimates to them
(:meth:`~skewbench.scheme.Scheme.sync`) before it routes batch *b + 1*. The batch's index is in the offset
Spark logs before the batch runs, so a replayed batch reads the same file; and ``sync`` replaces the router's
estimates whole, so a router rebuilt from the stream (:func:`~skewbench.bench.spark.routing.router_at`) routes
on exactly as the one it replaces. pkg-global on the cluster is thus PKG with a probe every micro-batch, which
is also how the simulator predicts it (:func:`~skewbench.bench.prediction.simulate_point`). At an open-loop
rate the source still cuts whole micro-batches (:mod:`~skewbench.bench.spark.source`), so the loads come after
the same messages.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from skewbench.bench.spark.live import write_once
from skewbench.scheme import Scheme
from skewbench.speeds import busy_times


def needs_loads(router: Scheme) -> bool:
    """The scheme is told the true loads between intervals (it has a :meth:`~Scheme.sync` of its own)."""
    return type(router).sync is not Scheme.sync


def loads_before(folder: str, batch: int) -> np.ndarray:
    """Every worker's copies in the batches before ``batch`` (written by :class:`LoadFeed`)."""
    if batch == 0:
        raise ValueError("the first micro-batch has no loads before it")
    return np.load(Path(folder) / f"loads-{batch:06d}.npy")


class LoadFeed:
    """The driver's side: after each batch, the loads so far, for the sources of the next."""

    def __init__(self, folder: Path, speeds: np.ndarray):
        self.folder, self.speeds = folder, speeds  # (skewbench.speeds: a worker's load is its time)
        self._per_batch: dict[int, np.ndarray] = {}  # by batch id: a batch seen twice counts once

    def after_batch(self, batch: int, workers: np.ndarray, copies: np.ndarray) -> None:
        """Batch ``batch``'s copies per worker (``workers[i]`` handled ``copies[i]``)."""
        width = len(self.speeds)
        self._per_batch[batch] = busy_times(np.bincount(workers, weights=copies, minlength=width)[:width], self.speeds)
        loads = np.sum([v for b, v in self._per_batch.items() if b <= batch], axis=0)
        buffer = io.BytesIO()
        np.save(buffer, loads.astype(np.float64))
        write_once(self.folder / f"loads-{batch + 1:06d}.npy", buffer.getvalue())
