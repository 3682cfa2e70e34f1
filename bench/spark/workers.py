"""The worker stage: W groups, worker *i* on Spark partition *i* (*i* mod P when the ``pack`` lever puts
the W workers in P tasks), the app's state kept across batches.

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
               partition: int = -1, since: float | None = None) -> tuple[object, dict]:
    """One worker's micro-batch (``rows`` may be empty); returns the new state and the emitted record.

    ``since``: the start of the task this worker shares with others (the ``pack`` lever); its delay
    counts from there (:func:`~skewbench.bench.spark.delay.burn`) and so do its start and busy time."""
    began = time.perf_counter()
    if not rows["seq"].is_monotonic_increasing:  # copies from several sources
        rows = rows.sort_values("seq", kind="stable").reset_index(drop=True)
    actual = burn(len(rows), delay, mode, since)
    tick = time.perf_counter()
    state, outputs = app.process(state, rows) if len(rows) else (state, None)
    end = time.perf_counter()
    process_seconds = end - tick
    busy = end - began if since is None else actual + process_seconds  # its own work, not its task-mates'
    t_end = time.time()
    stored = int((rows["role"] == "store").sum())
    seq = rows["seq"].to_numpy(dtype=np.int64)
    first = np.r_[True, seq[1:] != seq[:-1]] if len(seq) else np.empty(0, bool)  # one per message
    record = {
        "worker": worker, "partition": partition, "stored": stored, "probed": len(rows) - stored,
        "delay_intended": len(rows) * delay, "delay_actual": actual, "process_seconds": process_seconds,
        "busy_seconds": busy, "state_entries": int(app.state_entries(state)),
        "t_start": t_end - (end - (began if since is None else since)), "t_end": t_end, "outputs": outputs,
        "messages": handled(seq[first], rows["t_intended"].to_numpy(dtype=np.float64)[first]),
    }
    return state, record


_TASK = [None, 0.0]  # the Spark task this Python worker runs now, and when its first worker began


def task_start() -> float:
    """The :func:`time.perf_counter` reading when the current Spark task's first worker began (Python
    workers are reused: a new task attempt starts a new clock)."""
    from pyspark import TaskContext

    attempt = TaskContext.get().taskAttemptId()
    if _TASK[0] != attempt:
        _TASK[:] = [attempt, time.perf_counter()]
    return _TASK[1]


def worker(app, delay: float, mode: str, packed: bool = False):
    """The ``applyInPandasWithState`` function of the worker stage (``packed``: several workers per task)."""

    def work(key, frames, state):
        from pyspark import TaskContext

        since = task_start() if packed else None
        bundles = pd.concat(list(frames), ignore_index=True)
        rows, worker = unbundle(bundles), int(bundles["worker"].iloc[0])
        flush = (rows["role"] == "flush").to_numpy()
        held = pickle.loads(state.get[0]) if state.exists else app.new_state(worker)
        held, record = work_batch(app, held, rows[~flush], delay, mode, worker, TaskContext.get().partitionId(),
                                  since)
        record["state"] = None
        if flush.any():  # the worker's last batch: what it still holds goes to the aggregator, the state to the driver
            held, final = app.finish(held)
            sent = [o for o in (record["outputs"], final) if o is not None]
            record["outputs"] = pd.concat(sent, ignore_index=True) if sent else None
            record["state"] = held
        state.update((pickle.dumps(held),))
        yield pd.DataFrame({"record": [pickle.dumps(record)]})

    return work
