"""The worker stage: W groups, worker *i* on Spark partition *i*, the app's state kept across batches.

Spark runs it as ``groupBy("wg").applyInPandasWithState(...)`` with the preimage ``wg`` of the
worker (:func:`~skewbench.bench.spark.run.preimages`) over the sources' bundles (one per source,
:mod:`~skewbench.bench.spark.source`).  Per micro-batch and worker: unpack the bundles, burn the injected
delay for every row (store and probe copies alike, :func:`~skewbench.bench.spark.delay.burn`), then
``app.process`` the rows in ``seq`` order, and emit one row holding one pickled record: the metrics
of that batch and worker, the app's outputs (a frame), the messages it handled (for latency:
:mod:`~skewbench.bench.spark.latency`; a message is done when its worker's batch ends and its
outputs exist), and the state once, with the ``flush`` row that follows the last message (the
driver needs the final states for ``app.combine``; shipping every batch's state would cost a copy of
it per batch).  One binary column: PySpark converts the returned frame to Arrow column by column
through pandas, a cost per column and task.
"""

from __future__ import annotations

import pickle
import time

import numpy as np
import pandas as pd

from skewbench.bench.spark.delay import burn
from skewbench.bench.spark.latency import handled
from skewbench.bench.spark.source import unbundle

SCHEMA = "record binary"
METRICS = ["worker", "partition", "stored", "probed", "delay_intended", "delay_actual", "process_seconds",
           "busy_seconds", "state_entries", "t_start", "t_end"]


def work_batch(app, state, rows: pd.DataFrame, delay: float, mode: str, worker: int,
               partition: int = -1) -> tuple[object, dict]:
    """One worker's micro-batch (``rows`` may be empty); returns the new state and the emitted record."""
    t_start, began = time.time(), time.perf_counter()
    if not rows["seq"].is_monotonic_increasing:  # copies from several sources
        rows = rows.sort_values("seq", kind="stable").reset_index(drop=True)
    actual = burn(len(rows), delay, mode)
    tick = time.perf_counter()
    state, outputs = app.process(state, rows) if len(rows) else (state, None)
    process_seconds = time.perf_counter() - tick
    stored = int((rows["role"] == "store").sum())
    seq = rows["seq"].to_numpy(dtype=np.int64)
    first = np.r_[True, seq[1:] != seq[:-1]] if len(seq) else np.empty(0, bool)  # one per message
    record = {
        "worker": worker, "partition": partition, "stored": stored, "probed": len(rows) - stored,
        "delay_intended": len(rows) * delay, "delay_actual": actual, "process_seconds": process_seconds,
        "busy_seconds": time.perf_counter() - began, "state_entries": int(app.state_entries(state)),
        "t_start": t_start, "t_end": time.time(), "outputs": outputs,
        "messages": handled(seq[first], rows["t_intended"].to_numpy(dtype=np.float64)[first]),
    }
    return state, record


def worker(app, delay: float, mode: str):
    """The ``applyInPandasWithState`` function of the worker stage."""

    def work(key, frames, state):
        from pyspark import TaskContext

        bundles = pd.concat(list(frames), ignore_index=True)
        rows, worker = unbundle(bundles), int(bundles["worker"].iloc[0])
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
