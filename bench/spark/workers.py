"""The worker stage: W groups, worker *i* on Spark partition *i*, the app's state kept across batches.

Spark runs it as ``groupBy("wg").applyInPandasWithState(...)`` with the preimage ``wg`` of the
worker (:func:`~skewbench.bench.spark.run.preimages`) over the sources' bundles (one per source,
:mod:`~skewbench.bench.spark.source`).  Per micro-batch and worker: unpack the bundles, burn the injected
delay for every row (store and probe copies alike, :func:`~skewbench.bench.spark.delay.burn`), then
``app.process`` the rows in ``seq`` order, and emit one row holding one pickled record: the metrics
of that batch and worker, the app's outputs (a frame), the seqs it handled with their intended
times (for latency), and the state once, with the ``flush`` row that follows the last message (the
driver needs the final states for ``app.combine``; shipping every batch's state would cost a copy of
it per batch).  One binary column: PySpark converts the returned frame to Arrow column by column
through pandas, a cost per column and task.

Latency of a message = the end of its worker's batch (when its outputs exist) − its intended arrival
time; for a message copied to several workers, the latest of them.
"""

from __future__ import annotations

import pickle
import time

import numpy as np
import pandas as pd

from skewbench.bench.spark.delay import burn
from skewbench.bench.spark.source import unbundle

SCHEMA = "record binary"
METRICS = ["worker", "partition", "stored", "probed", "delay_intended", "delay_actual", "process_seconds",
           "busy_seconds", "state_entries", "t_start", "t_end"]


def work_batch(app, state, rows: pd.DataFrame, delay: float, mode: str, worker: int,
               partition: int = -1) -> tuple[object, dict]:
    """One worker's micro-batch (``rows`` may be empty); returns the new state and the emitted record."""
    t_start, began = time.time(), time.perf_counter()
    rows = rows.sort_values("seq", kind="stable").reset_index(drop=True)
    actual = burn(len(rows), delay, mode)
    tick = time.perf_counter()
    state, outputs = app.process(state, rows) if len(rows) else (state, None)
    process_seconds = time.perf_counter() - tick
    stored = int((rows["role"] == "store").sum())
    seqs, first = np.unique(rows["seq"].to_numpy(dtype=np.int64), return_index=True)
    record = {
        "worker": worker, "partition": partition, "stored": stored, "probed": len(rows) - stored,
        "delay_intended": len(rows) * delay, "delay_actual": actual, "process_seconds": process_seconds,
        "busy_seconds": time.perf_counter() - began, "state_entries": int(app.state_entries(state)),
        "t_start": t_start, "t_end": time.time(), "outputs": outputs,
        "seqs": seqs, "t_intended": rows["t_intended"].to_numpy(dtype=np.float64)[first],
    }
    return state, record


def worker(app, delay: float, mode: str):
    """The ``applyInPandasWithState`` function of the worker stage."""

    def work(key, frames, state):
        from pyspark import TaskContext

        rows = unbundle(pd.concat(list(frames), ignore_index=True)["bundle"])
        worker = int(rows["worker"].iloc[0])
        flush = (rows["role"] == "flush").to_numpy()
        held = pickle.loads(state.get[0]) if state.exists else app.new_state(worker)
        held, record = work_batch(app, held, rows[~flush], delay, mode, worker, TaskContext.get().partitionId())
        record["state"] = None
        if flush.any():  # the worker's last batch: what it still holds goes to the aggregator, the state to the driver
            held, final = app.finish(held)
            sent = [o for o in (record["outputs"], final) if o is not None]
            record["outputs"] = pd.concat(sent, ignore_index=True) if sent else None
            record["state"] = held
        state.update((pickle.dumps(held),))
        yield pd.DataFrame({"record": [pickle.dumps(record)]})

    return work
