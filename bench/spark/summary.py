"""The summaries of a Spark run, from what the run wrote (pure pandas/numpy: no Spark needed).

:func:`batch_table` turns Spark's query progress and the workers' metrics into one row per
micro-batch with the engine overhead split in :data:`OVERHEAD_PARTS`; :func:`summarize` makes
``summary.json``'s dictionary of a finished run (:mod:`skewbench.bench.spark.run`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from pyarrow import feather

from skewbench.bench.spark.engine import canonical, latency_source, work_of

if TYPE_CHECKING:
    from skewbench.bench.spark.run import Collector, Config


#: Phases of a micro-batch as Spark's query progress reports them (durationMs); addBatch runs the tasks.
PHASES = ("latestOffset", "getBatch", "queryPlanning", "addBatch", "walCommit", "commitOffsets")


#: The engine overhead of a batch in the order it is paid (:func:`batch_table`).
OVERHEAD_PARTS = ("before_workers", "workers_spread", "after_workers")


def batch_table(progress: list[dict], metrics: pd.DataFrame) -> pd.DataFrame:
    """Per batch: duration (triggerExecution), bundles read (Spark's input rows), message copies the
    workers handled, the busiest worker's busy time, and the engine overhead (duration − that) in
    three parts: ``before_workers`` (until the first worker starts: planning, the source stage's
    routing, the shuffle, launching W tasks), ``workers_spread`` (from the first worker's start to the
    last one's end, beyond the busiest worker's busy time: workers waiting for a core or started late)
    and ``after_workers`` (results to the driver, state-store commits, ``foreachBatch``, the commit)."""
    rows = [{"batch": p["batchId"], "started": pd.Timestamp(p["timestamp"]).timestamp(),
             "duration": p["durationMs"].get("triggerExecution", 0) / 1000, "bundles": p["numInputRows"],
             **{f"{phase}_seconds": p["durationMs"].get(phase, 0) / 1000 for phase in PHASES}}
            for p in progress if p.get("numInputRows", 0) > 0]
    table = pd.DataFrame(rows, columns=["batch", "started", "duration", "bundles",
                                        *(f"{phase}_seconds" for phase in PHASES)])
    per_batch = metrics.assign(copies=metrics["stored"] + metrics["probed"]).groupby("batch").agg(
        copies=("copies", "sum"), max_worker_busy=("busy_seconds", "max"), first_start=("t_start", "min"),
        last_end=("t_end", "max"))
    table = table.merge(per_batch, left_on="batch", right_index=True, how="left")
    table["overhead"] = table["duration"] - table["max_worker_busy"]
    table["before_workers"] = table["first_start"] - table["started"]
    table["workers_spread"] = table["last_end"] - table["first_start"] - table["max_worker_busy"]
    table["after_workers"] = table["started"] + table["duration"] - table["last_end"]
    return table.drop(columns=["first_start", "last_end"])


def after_warmup(batches: pd.DataFrame, latency: dict[int, np.ndarray],
                 arrival: dict[int, float]) -> tuple[np.ndarray | None, float]:
    """The latencies of the messages of the batches after the first and their throughput: their count
    over the time from when the first of them arrived (or its batch started, if earlier) to when the
    last batch ended.  Under an offered rate the steady batches' messages arrive from the warm-up
    batch on, so timing from the second batch's start would count more than was offered.  Only
    batches whose progress Spark reported count.  (None, nan) with one batch."""
    steady = batches[batches["batch"] > batches["batch"].min()]
    if steady.empty:
        return None, float("nan")
    warm = np.concatenate([latency[b] for b in steady["batch"] if b in latency] or [np.empty(0)])
    begin = np.nanmin([steady["started"].min(), *(arrival.get(b, np.nan) for b in steady["batch"])])
    span = (steady["started"] + steady["duration"]).max() - begin
    return warm, len(warm) / span if span > 0 else float("nan")


def mean_counters(metrics: pd.DataFrame) -> float:
    """Counters held by all workers at the end of a micro-batch, averaged over the batches (a worker
    without messages in a batch still holds what it held before)."""
    held = metrics.pivot_table(index="batch", columns="worker", values="state_entries", aggfunc="last")
    return float(held.ffill().fillna(0).sum(axis=1).mean())


def final_counters(metrics: pd.DataFrame) -> int:
    """Counters held by all workers after the stream: each worker's last record (every worker has one
    in the last micro-batch, which carries its flush), as :meth:`App.state_entries` of its final state."""
    return int(metrics.sort_values("batch", kind="stable").groupby("worker")["state_entries"].last().sum())


def failures(summary: dict, simulated: tuple[np.ndarray, np.ndarray] | None = None) -> list[str]:
    """Why a finished run's numbers cannot be reported, one line each ([] for a run that passed): an answer
    other than the single-process reference's, messages counted twice, and with ``simulated`` (every worker's
    stored and probe copies in the simulator) a worker that did other work than simulated."""
    reasons = ["incorrect answer"] if not summary["correct"] else []
    if simulated is not None and (differ := unlike(summary, *simulated)):
        reasons.append(f"not simulator-exact: {differ}")
    if duplicates := summary.get("duplicates"):
        reasons.append(f"{duplicates:,} message{'s' if duplicates > 1 else ''} counted twice")
    return reasons


def unlike(summary: dict, stored: np.ndarray, probed: np.ndarray) -> str:
    """The first worker whose stored or probe copies differ from the simulator's ("" when none does)."""
    for what, spark, sim in (("stored", summary["worker_messages"], stored),
                             ("probed", summary["worker_probes"], probed)):
        sim = [int(v) for v in sim]
        if spark == sim:
            continue
        if len(spark) != len(sim):
            return f"{len(spark)} workers {what} copies, {len(sim)} simulated"
        differ = [i for i, (a, b) in enumerate(zip(spark, sim)) if a != b]
        more = f" (and {len(differ) - 1} more workers)" if len(differ) > 1 else ""
        i = differ[0]
        return f"worker {i} {what} {spark[i]:,} vs simulated {sim[i]:,}{more}"
    return ""


def summarize(config: Config, app, stream, collector: Collector, batches: pd.DataFrame, elapsed: float,
              delay_mode: str, tasks: int) -> dict:
    metrics = pd.concat(collector.metrics, ignore_index=True)
    files = sorted((collector.folder / "outputs").glob("batch-*.arrow"))
    parts = lambda: ((int(p.stem.split("-")[1]), feather.read_feather(p)) for p in files)  # noqa: E731  one at a time
    periodic = app.periodic(parts())
    if periodic is not None:
        periodic.to_parquet(collector.folder / "periodic.parquet", index=False)
    W = config.width()  # every worker slot the run had (live routing: the most the schedule asked for)
    states = [collector.states.get(i, app.new_state(i)) for i in range(W)]
    result = app.combine(app.reduce(frame for _, frame in parts()), states)
    correct = bool(app.same(result, app.reference(stream)))
    stored = metrics.groupby("worker")["stored"].sum().reindex(range(W), fill_value=0).to_numpy()
    probed = metrics.groupby("worker")["probed"].sum().reindex(range(W), fill_value=0).to_numpy()
    first = int(batches["batch"].min()) if len(batches) else 0
    lat, throughput = after_warmup(batches, collector.latency, collector.arrival)
    if lat is None:
        lat, throughput = np.concatenate(list(collector.latency.values())), stream.messages / elapsed
    intended, actual = metrics["delay_intended"].to_numpy(), metrics["delay_actual"].to_numpy()
    sizable = intended >= 0.01  # per-batch accuracy is judged where at least 10 ms were asked for
    mean = stored.mean()
    work = work_of(config.delay_ms, delay_mode, tasks, W)
    return {
        "app": config.app, "scheme": config.scheme, "workload": config.workload or app.default_workload,
        "messages": stream.messages, "workers": W, "sources": config.sources, "split": config.split,
        "delay_ms": config.delay_ms, "delay_mode": delay_mode, "rate": config.rate, "seed": config.seed,
        "levers": canonical(config.levers), "work": work, "latency_source": latency_source(work, config.levers),
        "correct": correct,
        "messages_counted": collector.done, "duplicates": collector.duplicates,  # in = counted, 0: exactly once
        "batches": int(len(batches)), "elapsed_seconds": elapsed,
        "warmup": f"batch {first} ({len(collector.latency.get(first, []))} messages) excluded",
        "throughput_msgs_per_s": float(throughput),
        "latency_seconds": {f"p{q}": float(np.percentile(lat, q)) if len(lat) else None for q in (50, 95, 99)},
        "worker_messages": stored.tolist(), "worker_probes": probed.tolist(),
        "imbalance_max_minus_mean": float(stored.max() - mean),
        "imbalance_max_over_mean": float(stored.max() / mean) if mean > 0 else None,
        "counters": final_counters(metrics),
        "counters_mean": mean_counters(metrics),
        "output_rows": sum(feather.read_table(p, memory_map=True).num_rows for p in files),
        "overhead_seconds": {"median": float(batches["overhead"].median()) if len(batches) else None,
                             "mean": float(batches["overhead"].mean()) if len(batches) else None,
                             **{f"{part}_median": float(batches[part].median()) if len(batches) else None
                                for part in OVERHEAD_PARTS}},
        "batch_seconds_median": float(batches["duration"].median()) if len(batches) else None,
        "delay": {"intended_seconds": float(intended.sum()), "actual_seconds": float(actual.sum()),
                  "error": float(actual.sum() / intended.sum() - 1) if intended.sum() > 0 else None,
                  "max_batch_error": float(np.max(np.abs(actual[sizable] / intended[sizable] - 1)))
                  if sizable.any() else None},
        "worker_tasks": tasks,  # worker i ran in task i % worker_tasks
        "partitions_match_workers": bool((metrics["partition"] == metrics["worker"] % tasks).all()),
    }
