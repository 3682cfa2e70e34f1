"""The Spark pipeline's live-routing path without a cluster (run by tests/spark/test_live.py with the
cluster's interpreter, which has PySpark): the "skewbench" source's offsets, partitions and reads, the
worker stage's function and the driver's Publisher, batch by batch, as Spark calls them.  Exits 1 unless
every case gives the reference answer and sends every message where the simulator sends it."""
import pickle
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyspark
from pyspark.sql.streaming.datasource import ReadMaxRows


class Task:  # what the worker function asks of Spark's TaskContext
    def partitionId(self):
        return 0

    def taskAttemptId(self):
        return 1


pyspark.TaskContext.get = staticmethod(lambda: Task())

from skewbench.bench.apps import make_app
from skewbench.bench.prediction import live_copies, simulate_live
from skewbench.bench.spark import feedback
from skewbench.bench.spark import live as routing_live
from skewbench.bench.spark import routing
from skewbench.bench.spark import workers
from skewbench.bench.spark.source import Options, SkewbenchStreamReader, stream_of
from skewbench.migration import Live, moves_state, parse_schedule
from skewbench.scheme import make_scheme
from skewbench.sources import prepare_scheme

WORKLOAD = "fzipf:z=1.2,keys=400,f=0.5,intervals=30"
MESSAGES, BATCH, W, S = 4400, 100, 4, 2
routing.SAVED_DIR = Path(tempfile.mkdtemp())  # where a source's router is kept between batches

class State:  # applyInPandasWithState's GroupState, as the worker function uses it
    def __init__(self):
        self.exists, self.get = False, None

    def update(self, value):
        self.exists, self.get = True, value


def run(app_name: str, scheme: str, every: int = 0, schedule: str = "", migration: str = "all-at-once",
        fluid_keys: int = 0, handover: str = "hold", rate: float = 0.0) -> bool:
    """One run of W = 4 workers, S = 2 sources, 44 micro-batches (offered at ``rate`` messages/s, 0: all at
    once); True when exact and as simulated (and, with the hand-over ahead, with no row held)."""
    app = make_app(app_name)
    live = Live(BATCH, every, parse_schedule(schedule) if schedule else {}, migration, fluid_keys, handover,
                app.probes_read_final_state)
    width = live.widest(W)
    stream = app.prepare(stream_of(WORKLOAD, MESSAGES, 0))
    first = make_scheme(scheme, W)
    prepared = lambda w: prepare_scheme(scheme, w, stream, seed=0)  # noqa: E731
    controller = live.controller(first if first.adaptive else prepared(W), MESSAGES, prepared)
    folder = Path(tempfile.mkdtemp()) / "routing"
    folder.mkdir()
    publisher = routing_live.Publisher(folder, controller, stream)
    feed = feedback.LoadFeed(folder, np.ones(width)) if feedback.needs_loads(first) else None  # pkg-probe, pkg-global
    reader = SkewbenchStreamReader(Options({
        "workload": WORKLOAD, "messages": MESSAGES, "seed": 0, "sources": S, "max_rows_per_trigger": BATCH,
        "app": app_name, "scheme": scheme, "workers": width, "versions": str(folder),
        "loads": str(folder) if feed else "", "rate": rate}))
    work = workers.worker(app, 0.0, "sleep", width, live=True)
    states = [State() for _ in range(width)]
    start, batch, outputs, finals, handled = reader.initialOffset(), 0, [], {}, np.zeros((2, width), int)
    whole = True  # every micro-batch BATCH messages, also when they arrive at a rate
    while start["offset"] < MESSAGES:
        while (end := reader.latestOffset(start, ReadMaxRows(BATCH))) == start:  # Spark polls until a batch is due
            time.sleep(0.001)
        whole &= end["offset"] - start["offset"] == min(BATCH, MESSAGES - start["offset"])
        bundles = pa.Table.from_batches([b for p in reader.partitions(start, end) for b in reader.read(p)]).to_pandas()
        records = [pickle.loads(blob) for w, group in bundles.groupby("worker")
                   for frame in work((w,), iter([group.reset_index(drop=True)]), states[w]) for blob in frame["record"]]
        for r in records:
            handled[:, r["worker"]] += r["stored"], r["probed"]
            if r["outputs"] is not None:
                outputs.append(pa.ipc.open_stream(r["outputs"]).read_all().to_pandas())
            if r["state"] is not None:
                finals[r["worker"]] = r["state"]
        publisher.after_batch(batch, records)
        if feed is not None:
            feed.after_batch(batch, np.array([r["worker"] for r in records]),
                             np.array([r["stored"] + r["probed"] for r in records]))
        start, batch = end, batch + 1
    answer = app.combine(app.reduce(outputs), [finals.get(i, app.new_state(i)) for i in range(width)])
    correct = app.same(answer, app.reference(stream))
    sim = simulate_live(app, stream, scheme, W, S, live)
    store, probe, _ = live_copies(app, stream, sim, live, width)
    as_simulated = np.array_equal([store.sum(0), probe.sum(0)], handled)  # a self-join's sum hides where it stored
    summary = publisher.summary()
    print(f"{app_name} {scheme} every={every} schedule={schedule or '-'} {migration} {handover} rate={rate}: "
          f"correct={correct} as simulated={as_simulated} whole batches={whole} {summary}")
    enough = summary["migrations"] >= (20 if every else 1)  # the bar: >= 20 migrations a rebalancing run
    waits = handover == "hold" or summary["held_max"] == 0  # ahead, no row waits for its key's state
    moved = summary["migrated_keys"] == sim.row["migrated_keys"]
    moved = moved and (summary["migrated_keys"] > 0) == moves_state(first)
    return correct and as_simulated and whole and (enough or not moves_state(first)) and waits and moved


CASES = [("wordcount", "mixed", 1), ("selfjoin", "gedik-readj", 2), ("naivebayes", "mixed", 2),
         ("wordcount", "kg", 0, "5:3,25:4"), ("wordcount", "consistent", 0, "5:3,25:4"),
         ("selfjoin", "kg", 0, "5:3", "fluid", 10), ("selfjoin", "mixed", 1, "", "all-at-once", 0, "ahead"),
         ("naivebayes", "consistent", 0, "5:3,25:4", "fluid", 10, "ahead"),
         ("selfjoin", "pkg", 0, "5:3,25:4"), ("wordcount", "dkg", 0, "5:6,25:3", "all-at-once", 0, "ahead"),
         ("selfjoin", "pkg-probe", 0, "5:6,25:3"), ("wordcount", "pkg-global", 0, "5:3,25:4"),
         ("naivebayes", "pkg", 0, "5:6,25:3"),
         # offered open loop at 20,000 messages/s: 0.22 s of stream each
         ("wordcount", "mixed", 1, "", "all-at-once", 0, "hold", 20_000),
         ("selfjoin", "kg", 0, "5:3,25:4", "all-at-once", 0, "ahead", 20_000)]

if __name__ == "__main__":
    sys.exit(0 if all([run(*case) for case in CASES]) else 1)
