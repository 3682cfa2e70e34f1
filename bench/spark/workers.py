"""The worker stage: W groups, worker *i* on Spark partition *i* (*i* mod P when the ``pack`` lever puts
the W workers in P tasks), the app's state kept across batches; with the ``defer-sleep`` lever, one
closing group more per task (:func:`close`), which sleeps for its task-mates.

Spark runs it as ``groupBy("wg").applyInPandasWithState(...)`` with the preimage ``wg`` of the
worker (:func:`~skewbench.spark.groups.preimages`) over the sources' bundles (one per source,
:mod:`~skewbench.bench.spark.source`).  Per micro-batch and worker: unpack the bundles, burn the injected
delay for every row (store and probe copies alike, :func:`~skewbench.bench.spark.delay.burn`), then
``app.process`` the rows in ``seq`` order, and emit one row holding one pickled record: the metrics
of that batch and worker, the app's outputs (an Arrow stream, :func:`arrow_stream`), the messages
it handled (for latency: :mod:`~skewbench.bench.spark.latency`; a message is done when its worker's
batch ends and its outputs exist), and the state once, with the ``flush`` row that follows the last
message (the driver needs the final states for ``app.combine``, as much as ``app.driver_state`` says;
shipping every batch's state would cost a copy of it per batch).  One binary column: PySpark converts
the returned frame to Arrow column by column through pandas, a cost per column and task.
"""

from __future__ import annotations

import pickle
import time

import numpy as np
import pandas as pd
import pyarrow as pa

from skewbench.bench.apps.handover import Desk, hand_over, sort_out
from skewbench.bench.spark.delay import burn, sleep_until
from skewbench.bench.spark.latency import handled

SCHEMA = "record binary"
METRICS = ["worker", "partition", "stored", "probed", "delay_intended", "delay_actual", "process_seconds",
           "busy_seconds", "state_entries", "t_start", "t_end"]


def work_batch(app, state, rows: pd.DataFrame, delay: float, mode: str, worker: int,
               partition: int = -1, clock: dict | None = None) -> tuple[object, dict]:
    """One worker's micro-batch (``rows`` may be empty); returns the new state and the emitted record.

    ``clock``: the task this worker shares with others (the ``pack`` lever, :func:`task_clock`); its
    delay counts from the task's start and so do its start and busy time.  When the clock ``defers``,
    the worker handles its rows at once and leaves the sleep to the task's closing group
    (:func:`owe`): its work still ends, as recorded, at the task's start plus its delay plus its handling."""
    began = time.perf_counter()
    since = began if clock is None else clock["since"]
    if not rows["seq"].is_monotonic_increasing:  # copies from several sources
        rows = rows.sort_values("seq", kind="stable").reset_index(drop=True)
    deferred = clock is not None and clock["defers"]
    actual = 0.0 if deferred else burn(len(rows), delay, mode, None if clock is None else since)
    tick = time.perf_counter()
    state, outputs = app.process(state, rows) if len(rows) else (state, None)
    end = time.perf_counter()
    process_seconds = end - tick
    finish = end
    if deferred:  # done when both its handling and its delay from the task's start are
        finish = max(end, since + len(rows) * delay + process_seconds)
        actual = finish - process_seconds - since
        owe(clock, finish)
    busy = end - began if clock is None else actual + process_seconds  # its own work, not its task-mates'
    t_end = time.time() + (finish - end)  # ahead of now when deferred: the closing group sleeps until then
    stored = int((rows["role"] == "store").sum())
    seq = rows["seq"].to_numpy(dtype=np.int64)
    first = np.r_[True, seq[1:] != seq[:-1]] if len(seq) else np.empty(0, bool)  # one per message
    record = {
        "worker": worker, "partition": partition, "stored": stored, "probed": len(rows) - stored,
        "delay_intended": len(rows) * delay, "delay_actual": actual, "process_seconds": process_seconds,
        "busy_seconds": busy, "state_entries": int(app.state_entries(state)),
        "t_start": t_end - (finish - since), "t_end": t_end, "outputs": outputs,
        "messages": handled(seq[first], rows["t_intended"].to_numpy(dtype=np.float64)[first]),
    }
    return state, record


def arrow_stream(frame: pd.DataFrame | None) -> bytes | None:
    """The app's outputs as an Arrow IPC stream (None when there are none): the driver concatenates and
    writes them without a Python object per row, where unpickling frames of strings cost it 0.25 s per
    batch at W = 100 (word count's 468,500 (worker, key) counts) on the batch's commit path."""
    if frame is None or not len(frame):
        return None
    table = pa.Table.from_pandas(frame, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


_TASK: dict = {"attempt": None}  # the clock of the Spark task this Python worker runs now


def task_clock(defers: bool = False) -> dict:
    """The clock of the current Spark task, shared by the workers packed in it: ``since``, the
    :func:`time.perf_counter` reading when its first worker began; with ``defers``, ``until``, the
    latest end its workers owe, and ``closed``, whether its closing group has run.  Python workers
    are reused: a new task attempt starts a new clock."""
    from pyspark import TaskContext

    attempt = TaskContext.get().taskAttemptId()
    if _TASK["attempt"] != attempt:
        _TASK.clear()
        _TASK.update(attempt=attempt, since=time.perf_counter(), defers=defers, until=0.0, closed=False)
    return _TASK


def owe(clock: dict, finish: float) -> None:
    """A deferred worker's work lasts until ``finish``: the task's closing group will sleep until then, or,
    when that group already ran (it should come last: its group key sorts after its task-mates'), the
    worker sleeps here itself, so that no task ever ends before its workers' work."""
    if clock["closed"]:
        sleep_until(finish)
    else:
        clock["until"] = max(clock["until"], finish)


def close(clock: dict) -> None:
    """The task's closing group: sleep until the last of the task's workers is done."""
    sleep_until(clock["until"])
    clock["closed"] = True


def worker(app, delay: float, mode: str, workers: int, packed: bool = False, defers: bool = False,
           live: bool = False, speeds: tuple[float, ...] = ()):
    """The ``applyInPandasWithState`` function of the worker stage (``packed``: several workers per task;
    ``defers``: their sleep left to a closing group per task, the groups of worker ids ``workers`` and up;
    ``live``: routing changes during the run, and keys' state moves in and out
    (:func:`~skewbench.bench.apps.handover.sort_out`; the state is then the app's and the worker's desk));
    ``speeds``: each worker's speed (:mod:`skewbench.speeds`), its injected delay per copy ``delay / speed``)."""

    def work(key, frames, state):
        from pyspark import TaskContext  # here, not above: the rest of this module runs without PySpark

        from skewbench.bench.spark import live as routing_live
        from skewbench.bench.spark.source import no_rows, unbundle

        clock = task_clock(defers) if packed else None
        bundles = pd.concat(list(frames), ignore_index=True)
        worker = int(bundles["worker"].iloc[0])
        if worker >= workers:  # a closing group: no rows, no state, no record
            close(clock)
            return
        control = (bundles["source"] == routing_live.CONTROL).to_numpy() if live else None
        rows = unbundle(bundles) if not live else unbundle(bundles[~control]) if not control.all() else no_rows()
        flush = (rows["role"] == "flush").to_numpy()
        kept = pickle.loads(state.get[0]) if state.exists else None
        if live:
            began = time.perf_counter()
            held, desk = kept if kept is not None else (app.new_state(worker), Desk())
            orders, parcels = routing_live.orders_and_parcels(bundles[control])
            moving = sort_out(app, held, desk, worker, rows[~flush], orders, parcels)
            held, todo = moving.state, moving.ready
            migrating = time.perf_counter() - began
        else:
            held, todo = (kept if kept is not None else app.new_state(worker)), rows[~flush]
        own_delay = delay / speeds[worker] if speeds else delay
        held, record = work_batch(app, held, todo, own_delay, mode, worker, TaskContext.get().partitionId(), clock)
        record["state"], record["final"] = None, False
        if live:  # the keys handed over ahead leave after this batch's rows
            began = time.perf_counter()
            held, handed = hand_over(app, held, worker, orders.handing)
            record |= {"received": routing_live.received(rows[~flush]), "parcels": moving.sent + handed,
                       "held": moving.held, "released": moving.released, "duplicates": moving.duplicates,
                       "migrating_seconds": migrating + time.perf_counter() - began}
        if flush.any():  # the worker's last batch: what it still holds goes to the aggregator, the state to the driver
            held, final = app.finish(held)
            sent = [o for o in (record["outputs"], final) if o is not None]
            record["outputs"] = pd.concat(sent, ignore_index=True) if sent else None
            record["state"], record["final"] = app.driver_state(held), True
        state.update((pickle.dumps((held, desk) if live else held),))
        record["outputs"] = arrow_stream(record["outputs"])
        yield pd.DataFrame({"record": [pickle.dumps(record)]})

    return work
