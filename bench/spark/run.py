"""``skewbench run``: one Spark Structured Streaming run of an app with a scheme, checked and measured.

The query: the "skewbench" source (S partitions, open loop, each routing its messages with its
scheme, :mod:`~skewbench.bench.spark.routing`) → worker stage (``applyInPandasWithState`` on W groups,
worker *i* on partition *i*: ``spark.sql.shuffle.partitions = W`` and the group key is a preimage,
:func:`preimages`) → ``foreachBatch`` on the driver, which writes every batch's app outputs and
worker metrics as Parquet.  The run ends when all N messages have been processed and every worker
sent its final state; then ``app.combine`` (outputs + states) is compared with ``app.reference``.

Written into ``DIR.partial`` and renamed to ``DIR`` when complete (an ``INCOMPLETE`` marker is left
after a failure or Ctrl-C):

* ``outputs/batch-NNNNNN.parquet`` — the app's output rows; ``metrics/batch-NNNNNN.parquet`` — one row
  per (batch, worker): messages stored/probed, delay intended vs actual, process and busy seconds,
  state entries, partition;
* ``batches.parquet`` — per batch: duration, bundles and message copies, Spark's phases
  (latestOffset … commitOffsets), the busiest worker's busy time and the engine overhead (duration −
  that busy time) in three parts: before the first worker starts, workers' spread, after the last;
* ``periodic.parquet`` — what the app's aggregator reports after every batch (word count: top-k);
* ``stages.parquet`` — Spark's task metrics per stage (REST API); ``resources.parquet`` — CPU and RSS
  of every Spark JVM and Python worker during the run (psutil agent; local cluster);
* ``summary.json`` and ``run.meta.json`` (versions, commit, cluster shape from the master, config,
  delay mode).
"""

from __future__ import annotations

import json
import math
import os
import pickle
import shutil
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from skewbench.bench.progress import clock
from skewbench.bench.spark.latency import first_arrival, message_latency

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_PYTHON = ROOT / ".venv-cluster" / "bin" / "python"
DEFAULT_CONF_DIR = ROOT / ".cluster" / "loadgen" / "conf"


class RunError(ValueError):
    """Bad input or environment: reported in one line, exit code 2."""


@dataclass
class Config:
    app: str
    scheme: str
    workers: int
    sources: int
    delay_ms: float
    workload: str | None = None  # default: the app's
    messages: int = 50_000
    rate: float = 0.0
    batch_rows: int | None = None  # default: ceil(messages / 10)
    master: str | None = None
    seed: int = 0
    split: str = "shuffle"
    delay_mode: str | None = None  # default: default_mode(W, cores)
    aggregation_period: int = 0  # word count's T in micro-batches (0: counters kept, no flush)
    out: str = ""


# -- checks before Spark ------------------------------------------------------------------------------

def conf_dir() -> Path:
    return Path(os.environ.get("SPARK_CONF_DIR") or DEFAULT_CONF_DIR)


def spark_default(name: str) -> str | None:
    """A setting of the driver configuration (``SPARK_CONF_DIR/spark-defaults.conf``), or None."""
    defaults = conf_dir() / "spark-defaults.conf"
    if defaults.exists():
        for line in defaults.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == name:
                return parts[1]
    return None


def master_url(config: Config) -> str:
    """``--master``, else ``spark.master`` from the driver configuration (``SPARK_CONF_DIR``)."""
    url = config.master or spark_default("spark.master")
    if url:
        return url
    raise RunError(f"no cluster configuration in {conf_dir()}: start the local cluster with `make cluster-up`, "
                   f"or give --master spark://HOST:7077 (and SPARK_CONF_DIR for its secret)")


def master_status(url: str) -> dict:
    """The master's JSON status page (http://HOST:8080/json/); RunError with a hint if unreachable."""
    host = url.split("://", 1)[-1].split(":", 1)[0].split("/", 1)[0]
    page = f"http://{host}:8080/json/"
    try:
        with urllib.request.urlopen(page, timeout=5) as reply:
            return json.load(reply)
    except (OSError, urllib.error.URLError, ValueError) as exc:
        raise RunError(f"the Spark master {url} is unreachable ({page}: {getattr(exc, 'reason', exc)}); "
                       f"start the local cluster with `make cluster-up` or check --master") from None


def free_slots(status: dict, own_app: str | None = None) -> int:
    """Task slots of ALIVE workers not taken by other applications than ``own_app``."""
    free = sum(w["cores"] - w.get("coresused", 0) for w in status.get("workers", []) if w.get("state") == "ALIVE")
    return free + sum(a.get("cores", 0) for a in status.get("activeapps", []) if a.get("id") == own_app)


def local_cluster_dir() -> Path | None:
    """The folder of the local cluster the driver configuration belongs to (None for VMs)."""
    folder = conf_dir().parent.parent
    return folder if (folder / "state.json").exists() else None


def machine_cores(status: dict) -> int:
    """Real cores under the worker slots: this machine's for a local cluster (its slots may be
    over-committed), else the slots the master reports."""
    return (os.cpu_count() or 1) if local_cluster_dir() else sum(w["cores"] for w in status.get("workers", []))


def check(config: Config, need_cluster: bool = True, own_app: str | None = None) -> tuple[object, dict]:
    """Every input check that needs no Spark; returns (app, master status).
    ``own_app``: the id of this driver's running application, whose slots count as free."""
    from skewbench.bench.apps import make_app
    from skewbench.bench.spark.delay import MODES
    from skewbench.bench.spark.routing import check_supported
    from skewbench.scheme import make_scheme
    from skewbench.workloads import parse

    params = {"period": config.aggregation_period} if config.aggregation_period else {}
    try:
        app = make_app(config.app, **params)
    except ValueError as exc:
        raise RunError(str(exc)) from None
    except TypeError:
        if not params:
            raise
        raise RunError(f"--aggregation-period applies to wordcount, not {config.app}") from None
    out = Path(config.out)
    if out.exists():
        raise RunError(f"--out {out} exists; results are never overwritten: pick another folder")
    if out.with_name(out.name + ".partial").exists():
        raise RunError(f"{out}.partial exists (an earlier run was interrupted): remove it or pick another --out")
    if config.workers < 1:
        raise RunError(f"--workers must be >= 1, got {config.workers}")
    if not 1 <= config.sources <= config.messages:
        raise RunError(f"--sources must be between 1 and --messages ({config.messages}), got {config.sources}")
    if config.messages < 1 or config.delay_ms < 0 or config.rate < 0 or (config.batch_rows or 1) < 1:
        raise RunError("--messages and --batch-rows must be >= 1, --delay-ms and --rate >= 0")
    if config.delay_mode not in (None, *MODES):
        raise RunError(f"--delay-mode must be one of {', '.join(MODES)}")
    try:
        check_supported(make_scheme(config.scheme, config.workers, seed=config.seed))
    except ValueError as exc:
        raise RunError(str(exc)) from None
    spec = config.workload or app.default_workload
    try:  # a malformed workload raises WorkloadError (a usage error of its own)
        app.check(parse(spec, messages=min(config.messages, 1000), seed=config.seed))
    except ValueError as exc:
        raise RunError(str(exc)) from None
    if not need_cluster:
        return app, {}
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        raise RunError("Java is missing: install openjdk-17-jre-headless (Spark 4 needs Java 17 or 21)")
    url = master_url(config)
    status = master_status(url)
    slots = free_slots(status, own_app)
    if config.workers > slots:
        raise RunError(f"--workers {config.workers} exceeds the {slots} free task slots of {url}: every worker "
                       f"needs its own slot (start the cluster with more CORES or WORKERS)")
    return app, status


# -- the query ------------------------------------------------------------------------------------------

def preimages(spark, count: int, partitions: int) -> np.ndarray:
    """``v[i]`` with ``pmod(hash(cast(v[i] as bigint)), partitions) == i``, computed by Spark itself.

    The group columns must then be bigint (an int literal hashes differently)."""
    from pyspark.sql import functions as F

    span = 64 * partitions
    ids = spark.range(0, span, numPartitions=1)  # one task: the default (one per core) costs 100 tasks
    found = (ids.select("id", F.expr(f"pmod(hash(id), {partitions})").alias("p"))
             .groupBy("p").agg(F.min("id").alias("v")).collect())
    table = {row["p"]: row["v"] for row in found}
    missing = [i for i in range(count) if i not in table]
    if missing:
        raise RuntimeError(f"no preimage below {span} for partitions {missing}")
    return np.array([table[i] for i in range(count)], dtype=np.int64)


class Collector:
    """The ``foreachBatch`` function: writes each batch's outputs and metrics, keeps the last states
    and every message's latency (8 bytes per message: the driver must hold a run of millions)."""

    def __init__(self, folder: Path):
        self.folder = folder
        (folder / "outputs").mkdir()
        (folder / "metrics").mkdir()
        self.done = 0
        self.batches = 0
        self.last_batch = -1
        self.states: dict[int, object] = {}
        self.latency: dict[int, np.ndarray] = {}
        self.arrival: dict[int, float] = {}
        self.metrics: list[pd.DataFrame] = []

    def __call__(self, frame, batch_id: int) -> None:
        from skewbench.bench.spark.workers import METRICS

        # Arrow, not collect(): collect pickles a binary column byte by byte in the driver's JVM
        records = [pickle.loads(blob) for blob in frame.toArrow().column("record").to_pylist()]
        if not records:
            return
        name = f"batch-{batch_id:06d}.parquet"
        outputs = [r["outputs"] for r in records if r["outputs"] is not None]
        if outputs and any(len(o) for o in outputs):
            pd.concat(outputs, ignore_index=True).to_parquet(self.folder / "outputs" / name, index=False)
        metrics = pd.DataFrame([{"batch": batch_id, **{k: r[k] for k in METRICS}} for r in records])
        metrics.to_parquet(self.folder / "metrics" / name, index=False)
        for r in records:
            if r["state"] is not None:
                self.states[r["worker"]] = r["state"]
        self.latency[batch_id] = message_latency(records)
        self.arrival[batch_id] = first_arrival(records)
        self.metrics.append(metrics)
        self.done += len(self.latency[batch_id])
        self.batches += 1
        self.last_batch = batch_id


def start_query(spark, config: Config, app, folder: Path, collector: Collector, stream_file: str):
    from pyspark.sql import functions as F

    from skewbench.bench.spark import workers
    from skewbench.bench.spark.source import SkewbenchDataSource

    spark.dataSource.register(SkewbenchDataSource)
    groups = preimages(spark, config.workers, config.workers)
    routed = (spark.readStream.format("skewbench")
              .option("workload", config.workload or app.default_workload).option("messages", config.messages)
              .option("seed", config.seed).option("sources", config.sources).option("split", config.split)
              .option("rate", config.rate).option("max_rows_per_trigger", batch_rows(config))
              .option("app", config.app).option("scheme", config.scheme).option("workers", config.workers)
              .option("stream_file", stream_file).load())
    # Computing wg in Spark is also the projection that turns the source's Arrow-backed bundles into
    # UnsafeRows before the shuffle (straight from Python, the shuffle write fails: ColumnarBatchRow).
    routed = routed.withColumn("wg", F.element_at(F.array(*[F.lit(int(v)).cast("bigint") for v in groups]),
                                                F.col("worker") + 1))
    worked = (routed.groupBy("wg")
              .applyInPandasWithState(workers.worker(app, config.delay_ms / 1000, config.delay_mode),
                                      workers.SCHEMA, "blob binary", "append", "NoTimeout"))
    return (worked.writeStream.outputMode("append").foreachBatch(collector)
            .option("checkpointLocation", str(folder / "checkpoint")).start())


def batch_rows(config: Config) -> int:
    """Messages per micro-batch: ``--batch-rows``, else a tenth of the stream."""
    return config.batch_rows or math.ceil(config.messages / 10)


#: Phases of a micro-batch as Spark's query progress reports them (durationMs); addBatch runs the tasks.
PHASES = ("latestOffset", "getBatch", "queryPlanning", "addBatch", "walCommit", "commitOffsets")


def final_progress(query, last_batch: int, wait: float = 10.0) -> list[dict]:
    """The query's progress reports, once the one of ``last_batch`` is in (Spark posts it just after
    ``foreachBatch`` returns), or after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        progress = [json.loads(p.json) for p in query.recentProgress]
        if any(p["batchId"] >= last_batch for p in progress) or time.monotonic() > deadline:
            return progress
        time.sleep(0.1)


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


def summarize(config: Config, app, stream, collector: Collector, batches: pd.DataFrame, elapsed: float,
              delay_mode: str) -> dict:
    metrics = pd.concat(collector.metrics, ignore_index=True)
    files = sorted((collector.folder / "outputs").glob("batch-*.parquet"))
    parts = lambda: ((int(p.stem.split("-")[1]), pd.read_parquet(p)) for p in files)  # noqa: E731  one at a time
    periodic = app.periodic(parts())
    if periodic is not None:
        periodic.to_parquet(collector.folder / "periodic.parquet", index=False)
    W = config.workers
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
    return {
        "app": config.app, "scheme": config.scheme, "workload": config.workload or app.default_workload,
        "messages": stream.messages, "workers": W, "sources": config.sources, "split": config.split,
        "delay_ms": config.delay_ms, "delay_mode": delay_mode, "rate": config.rate, "seed": config.seed,
        "correct": correct,
        "batches": int(len(batches)), "elapsed_seconds": elapsed,
        "warmup": f"batch {first} ({len(collector.latency.get(first, []))} messages) excluded",
        "throughput_msgs_per_s": float(throughput),
        "latency_seconds": {f"p{q}": float(np.percentile(lat, q)) if len(lat) else None for q in (50, 95, 99)},
        "worker_messages": stored.tolist(), "worker_probes": probed.tolist(),
        "imbalance_max_minus_mean": float(stored.max() - mean),
        "imbalance_max_over_mean": float(stored.max() / mean) if mean > 0 else None,
        "counters": int(sum(app.state_entries(s) for s in states)),
        "counters_mean": mean_counters(metrics),
        "output_rows": sum(pq.ParquetFile(p).metadata.num_rows for p in files),
        "overhead_seconds": {"median": float(batches["overhead"].median()) if len(batches) else None,
                             "mean": float(batches["overhead"].mean()) if len(batches) else None,
                             **{f"{part}_median": float(batches[part].median()) if len(batches) else None
                                for part in OVERHEAD_PARTS}},
        "batch_seconds_median": float(batches["duration"].median()) if len(batches) else None,
        "delay": {"intended_seconds": float(intended.sum()), "actual_seconds": float(actual.sum()),
                  "error": float(actual.sum() / intended.sum() - 1) if intended.sum() > 0 else None,
                  "max_batch_error": float(np.max(np.abs(actual[sizable] / intended[sizable] - 1)))
                  if sizable.any() else None},
        "partitions_match_workers": bool((metrics["partition"] == metrics["worker"]).all()),
    }


def engine_and_resources(spark, folder: Path, start: float) -> dict:
    """Spark's task metrics per stage (``stages.parquet``) and the psutil agent's samples of a local
    cluster (``resources.parquet``) for the run, and their summaries."""
    from skewbench.bench.spark import metrics

    try:
        stages = metrics.stage_metrics(spark, start)
    except (OSError, ValueError) as exc:
        engine = {"error": f"Spark REST API: {exc}"}
    else:
        stages.to_parquet(folder / "stages.parquet", index=False)
        engine = metrics.stage_summary(stages)
    cluster = local_cluster_dir()
    if cluster is None:
        return {"engine": engine, "resources": {"note": "on VMs the samples stay on the nodes: make cluster-collect"}}
    samples = metrics.resource_samples(cluster, start, time.time())
    samples.to_parquet(folder / "resources.parquet", index=False)
    return {"engine": engine, "resources": metrics.resource_summary(samples)}


def session(url: str, name: str):
    """A SparkSession on ``url`` configured for the pipeline."""
    from pyspark.sql import SparkSession

    # A driver started as plain `python` (not spark-submit) ignores spark.pyspark.python and would send
    # executors `python3` from their PATH, which lacks the project: name the interpreter explicitly.
    os.environ.setdefault("PYSPARK_PYTHON", spark_default("spark.pyspark.python") or sys.executable)
    # The driver's JVM reads spark-defaults.conf (the cluster's secret) from here: without it the
    # master drops the connection and the driver waits 60 s for "All masters are unresponsive".
    os.environ.setdefault("SPARK_CONF_DIR", str(conf_dir()))
    spark = (SparkSession.builder.master(url).appName(name)
             .config("spark.python.daemon.module",
                     spark_default("spark.python.daemon.module") or "skewbench.bench.spark.daemon")
             .config("spark.sql.streaming.numRecentProgressUpdates", 100_000)
             .config("spark.ui.showConsoleProgress", "false")
             # Per-row checksums of shuffle output detect a non-deterministic stage retry; the stream is
             # replayed exactly, and at W = 100 hashing every bundle cost the one source task 15 % of
             # the executors' CPU.
             .config("spark.sql.shuffle.orderIndependentChecksum.enabled", "false")
             .config("spark.sql.shuffle.orderIndependentChecksum.enableFullRetryOnMismatch", "false")
             # The executors log at the driver's level: at INFO, 50 tasks per executor queued on the
             # log appender's lock while holding the state store's (1 MB of log per run).
             .config("spark.executor.syncLogLevel.enabled", "true")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class DeferredInterrupt:
    """Ctrl-C (SIGINT) noted and acted on between calls into Spark: PySpark's own handler raises in
    the middle of a Py4J call and leaves a Py4JError instead of a KeyboardInterrupt."""

    def __init__(self):
        self.seen = False
        main = threading.current_thread() is threading.main_thread()
        self.previous = signal.signal(signal.SIGINT, self._note) if main else None

    def _note(self, *_) -> None:
        self.seen = True

    def __call__(self) -> bool:
        return self.seen

    def restore(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
            self.previous = None


def run(config: Config, log=sys.stderr, spark=None) -> dict:
    """One run; returns the summary (also written to ``DIR/summary.json``).  With ``spark`` given the
    run reuses that session (several runs in one application) and leaves it running."""
    from skewbench.bench.provenance import write_metadata
    from skewbench.bench.spark.delay import default_mode
    from skewbench.bench.spark import shared
    from skewbench.bench.spark.source import stream_of

    app, status = check(config, own_app=spark.sparkContext.applicationId if spark is not None else None)
    url = master_url(config)
    delay_mode = config.delay_mode or default_mode(config.workers, machine_cores(status))
    config = Config(**{**asdict(config), "delay_mode": delay_mode})
    out = Path(config.out)
    folder = out.with_name(out.name + ".partial")
    folder.mkdir(parents=True)
    marker = folder / "INCOMPLETE"
    marker.write_text("this run did not finish\n")
    spec = config.workload or app.default_workload
    stream = stream_of(spec, config.messages, config.seed)
    app.check(stream)
    own = spark is None
    if own:
        spark = session(url, f"skewbench-run-{config.app}-{config.scheme}-W{config.workers}")
    spark.conf.set("spark.sql.shuffle.partitions", config.workers)
    collector = Collector(folder)
    query = None
    interrupted = DeferredInterrupt()
    try:
        started, wall_start = time.monotonic(), time.time()
        query = start_query(spark, config, app, folder, collector, shared.share(spark, stream))
        last = 0.0
        while collector.done < stream.messages or len(collector.states) < config.workers:
            if interrupted():
                raise KeyboardInterrupt
            if query.exception() is not None or not query.isActive:
                raise RuntimeError(f"the streaming query failed: {query.exception()}")
            time.sleep(0.2)
            elapsed = time.monotonic() - started
            if elapsed - last >= 2 or collector.done >= stream.messages:
                last = elapsed
                share = collector.done / stream.messages
                eta = elapsed / share * (1 - share) if share else float("nan")
                print(f"messages {collector.done:,} of {stream.messages:,} ({100 * share:.0f}%)  batches "
                      f"{collector.batches}  elapsed {clock(elapsed)}  ETA {clock(eta)}", file=log, flush=True)
        elapsed = time.monotonic() - started
        progress = final_progress(query, collector.last_batch)
        query.stop()
        query = None
        metrics = pd.concat(collector.metrics, ignore_index=True)
        batches = batch_table(progress, metrics)
        batches.to_parquet(folder / "batches.parquet", index=False)
        summary = summarize(config, app, stream, collector, batches, elapsed, delay_mode)
        summary |= engine_and_resources(spark, folder, wall_start)
        (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        meta = {"config": asdict(config), "master": url, "spark_conf_dir": str(conf_dir()),
                "cluster": {k: status.get(k) for k in ("url", "aliveworkers", "cores", "memory", "status")}
                | {"workers": [{k: w.get(k) for k in ("host", "cores", "memory", "state")}
                               for w in status.get("workers", [])]},
                "machine_cores": machine_cores(status), "delay_mode": delay_mode,
                "shuffle_partitions": config.workers, "batch_rows": batch_rows(config),
                "spark_version": spark.version}
        write_metadata(folder / "run", meta)
        marker.unlink()
        folder.rename(out)
        return summary
    finally:
        interrupted.restore()
        if query is not None:
            query.stop()
        if own:
            spark.stop()


def main(argv: list[str]) -> int:
    """``python -m skewbench.bench.spark.run CONFIG.json ...``: several runs in one Spark application
    (what the tests use to pay the start-up once); prints one summary per line."""
    configs = [Config(**json.loads(Path(a).read_text())) for a in argv]
    spark = session(master_url(configs[0]), "skewbench-runs")
    try:
        for config in configs:
            print(json.dumps(run(config, spark=spark)), flush=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
