"""``skewbench run``: one Spark Structured Streaming run of an app with a scheme, checked and measured.

The query: the "skewbench" source (S partitions, open loop, each routing its messages with its
scheme, :mod:`~skewbench.bench.spark.routing`; with ``--ingest locust`` the "skewbench-broker" source,
reading what locust sends to the cluster's broker, :mod:`~skewbench.bench.spark.ingest`) → worker stage
(``applyInPandasWithState`` on W groups, worker *i* on partition *i* mod P: ``spark.sql.shuffle.partitions
= P`` and the group key is a preimage, :func:`~skewbench.spark.groups.preimages`; P = W, or the machine's
cores with the ``pack`` lever, :func:`~skewbench.bench.spark.engine.worker_tasks`, and with ``defer-sleep``
one closing group more per task) → ``foreachBatch`` on the driver, which writes every batch's app outputs
(Arrow) and worker metrics (Parquet).  The run ends when all N messages have been processed and every
worker sent its final state; then ``app.combine`` (outputs + states) is compared with ``app.reference``.
A run that stops progressing before then — a message lost — fails (:class:`Watchdog`, :class:`RunFailed`).

Written into ``DIR.partial`` and renamed to ``DIR`` when complete (an ``INCOMPLETE`` marker is left
after a failure or Ctrl-C):

* ``outputs/batch-NNNNNN.arrow`` — the app's output rows (Arrow IPC files: ``pandas.read_feather``);
  ``metrics/batch-NNNNNN.parquet`` — one row per (batch, worker): messages stored/probed, delay intended
  vs actual, process and busy seconds, state entries, partition;
* ``batches.parquet`` — per batch: duration, bundles and message copies, Spark's phases
  (latestOffset … commitOffsets), the busiest worker's busy time and the engine overhead (duration −
  that busy time) in three parts: before the first worker starts, workers' spread, after the last
  (:func:`~skewbench.bench.spark.summary.batch_table`);
* ``periodic.parquet`` — what the app's aggregator reports after every batch (word count: top-k);
* ``stages.parquet`` — Spark's task metrics per stage (REST API); ``resources.parquet`` — CPU and RSS
  of every Spark JVM and Python worker during the run (psutil agent; local cluster);
* ``locust/`` — with ``--ingest locust``: locust's log and statistics (CSV) of sending the stream;
* ``summary.json`` (:func:`~skewbench.bench.spark.summary.summarize`; ``ingest``: where the stream came from,
  with the broker path's offered and achieved rate and lateness) and ``run.meta.json``
  (versions, commit, cluster shape from the master, config, delay mode, the levers' settings and the
  worker stage's tasks).

While it runs, ``checkpoint/`` holds Spark's checkpoint and the driver's own (:func:`driver_folder`), from
which a new driver finishes the run if this one dies (:func:`resume`; ``--faults driver@...`` kills it on
purpose, :mod:`~skewbench.bench.spark.faults`, whose ``worker`` and ``broker`` faults the wait loop strikes).
"""

from __future__ import annotations

import functools
import json
import math
import os
import pickle
import shutil
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.bench.interrupts import deferred
from skewbench.bench.progress import clock
from skewbench import speeds as speed_profile
from skewbench.bench.spark import engine, faults, feedback, routing
from skewbench.bench.spark.engine import DEFAULT as LEVERS_DEFAULT
from skewbench.bench.broker import Broker, BrokerError
from skewbench.bench.spark.ingest import PATHS, Ingest
from skewbench.bench.spark.latency import batch_messages, first_arrival, seqs
from skewbench.bench.spark.summary import OVERHEAD_PARTS, batch_table, summarize  # noqa: F401  (re-exported)
from skewbench.spark.groups import preimages

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_PYTHON = ROOT / ".venv-cluster" / "bin" / "python"
DEFAULT_CONF_DIR = ROOT / ".cluster" / "loadgen" / "conf"


class RunError(ValueError):
    """Bad input or environment: reported in one line, exit code 2."""


class RunFailed(RuntimeError):
    """The run measured nothing valid — messages lost, the pipeline stalled: reported in one line, exit code 1;
    its ``DIR.partial`` keeps what it did and, in :data:`FAILED`, why."""


#: In a failed run's folder: ``{"reasons": [...]}``, each a line saying why the run failed.
FAILED = "failed.json"


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
    levers: str = LEVERS_DEFAULT  # the engine's levers on in this run (:mod:`~skewbench.bench.spark.engine`)
    rebalance_every: int = 0  # live routing (:mod:`skewbench.migration`): an adaptive scheme plans every K batches
    schedule: str = ""  # "BATCH:W,...": W changes at these micro-batches
    migration: str = "all-at-once"  # or "fluid"
    fluid_keys: int = 0  # fluid: the most keys moving out of or into one worker per batch
    handover: str = "hold"  # or "ahead": the old worker hands a key's state over a batch early
    params: str = ""  # the scheme's parameters, "NAME=VALUE,..." (skewbench.scheme.parse_params)
    ingest: str = "engine"  # or "locust": the stream comes through the broker (bench.spark.ingest)
    faults: str = ""  # "KIND@AT+DOWN,...": nodes killed during the run (bench.spark.faults)
    slow: str = ""  # a worker-speed profile, "1@0.5": the injected delay / speed per worker (skewbench.speeds)

    def live(self):
        """The run's :class:`~skewbench.migration.Live`, or None when its routing never changes."""
        from skewbench.bench.apps import make_app
        from skewbench.migration import Live

        return Live.of(batch_rows(self), self.rebalance_every, self.schedule, self.migration, self.fluid_keys,
                       self.handover, make_app(self.app).probes_read_final_state)

    def width(self) -> int:
        """Worker slots provisioned: the most workers the schedule ever asks for (Spark fixes the state's
        partitions at the first batch)."""
        live = self.live()
        return live.widest(self.workers) if live else self.workers


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


def check(config: Config, need_cluster: bool = True, own_app: str | None = None,
          resuming: bool = False) -> tuple[object, dict]:
    """Every input check that needs no Spark; returns (app, master status).
    ``own_app``: the id of this driver's running application, whose slots count as free; ``resuming``: the
    run's DIR.partial is there to be finished (:func:`resume`)."""
    from skewbench.bench.apps import make_app
    from skewbench.bench.spark.delay import MODES
    from skewbench.scheme import make_scheme, parse_params
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
    if out.with_name(out.name + ".partial").exists() and not resuming:
        raise RunError(f"{out}.partial exists (an earlier run was interrupted): remove it or pick another --out")
    if config.workers < 1:
        raise RunError(f"--workers must be >= 1, got {config.workers}")
    if not 1 <= config.sources <= config.messages:
        raise RunError(f"--sources must be between 1 and --messages ({config.messages}), got {config.sources}")
    if config.messages < 1 or config.delay_ms < 0 or config.rate < 0 or (config.batch_rows or 1) < 1:
        raise RunError("--messages and --batch-rows must be >= 1, --delay-ms and --rate >= 0")
    try:
        struck = faults.parse_all(config.faults)
    except faults.FaultError as exc:
        raise RunError(f"--faults: {exc}") from None
    if config.delay_mode not in (None, *MODES):
        raise RunError(f"--delay-mode must be one of {', '.join(MODES)}")
    if config.ingest not in PATHS:
        raise RunError(f"--ingest must be one of {', '.join(PATHS)}, got {config.ingest!r}")
    try:
        engine.parse(config.levers)
    except engine.LeverError as exc:
        raise RunError(f"--levers: {exc}") from None
    try:
        proto = make_scheme(config.scheme, config.workers, seed=config.seed, **parse_params(config.params))
    except TypeError as exc:  # a parameter the scheme does not take
        raise RunError(f"--params: scheme {config.scheme!r}: {exc}") from None
    except ValueError as exc:
        raise RunError(str(exc)) from None
    try:
        check_live(config, proto)
    except ValueError as exc:
        raise RunError(str(exc)) from None
    try:
        speed_profile.parse(config.slow, config.width())
    except speed_profile.SpeedError as exc:
        raise RunError(f"--slow: {exc}") from None
    if any(f.kind == "driver" for f in struck) and not resumable(config):
        raise RunError(f"--faults: a driver fault needs a run a new driver can finish: {NOT_RESUMABLE}")
    spec = config.workload or app.default_workload
    try:  # a malformed workload raises WorkloadError (a usage error of its own)
        app.check(app.prepare(parse(spec, messages=min(config.messages, 1000), seed=config.seed)))
    except ValueError as exc:
        raise RunError(str(exc)) from None
    if not need_cluster:
        return app, {}
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        raise RunError("Java is missing: install openjdk-17-jre-headless (Spark 4 needs Java 17 or 21)")
    url = master_url(config)
    status = master_status(url)
    slots = free_slots(status, own_app)
    if config.width() > slots:
        width = config.width()
        asked = f"--workers {config.workers}" if width == config.workers else f"W = {width} (--schedule)"
        raise RunError(f"{asked} exceeds the {slots} free task slots of {url}: every worker needs its own slot (start "
                       f"the cluster with more CORES or WORKERS)")
    try:
        faults.check(config.faults, config.ingest, local_cluster_dir())
    except faults.FaultError as exc:
        raise RunError(f"--faults: {exc}") from None
    if config.ingest == "locust":
        try:
            Broker.of(conf_dir()).client()
        except BrokerError as exc:
            raise RunError(f"--ingest locust: {exc}") from None
    return app, status


def check_live(config: Config, proto) -> None:
    """``ValueError`` for live-routing options this run cannot honour (:func:`skewbench.migration.check`)."""
    live = config.live()
    if live is None:
        if config.migration != "all-at-once" or config.fluid_keys or config.handover != "hold":
            raise ValueError("--migration, --fluid-keys and --handover need --rebalance-every or --schedule")
        return
    live.controller(proto, config.messages, rescale=lambda w: proto)


# -- the query ------------------------------------------------------------------------------------------

class Collector:
    """The ``foreachBatch`` function: writes each batch's outputs and metrics, keeps the last states
    and every message's latency (8 bytes per message: the driver must hold a run of millions), and
    counts each message once: ``done`` the distinct messages handled, ``duplicates`` the messages
    handled twice.  Without live routing every copy of a message is handled in the batch it arrives in,
    so a message handled in a second batch is a duplicate (a replay that was not exactly once).  With live
    routing a held row is handled in a later batch than its message's other copies, and :class:`Copies`
    counts per copy instead."""

    def __init__(self, folder: Path, messages: int, publisher=None, feed=None):
        self.folder, self.publisher = folder, publisher  # publisher: live routing's (bench.spark.live)
        self.feed = feed  # the true loads for the sources of the next batch (bench.spark.feedback)
        for name in ("outputs", "metrics"):
            (folder / name).mkdir(exist_ok=True)  # a resumed run's hold the batches before
        driver_folder(folder).mkdir(parents=True, exist_ok=True)
        self.seen = np.zeros(messages, dtype=bool)
        self.done = 0
        self.duplicates = 0
        self.copies = Copies(messages) if publisher is not None else None
        self.batches = 0
        self.last_batch = -1
        self.states: dict[int, object] = {}
        self.latency: dict[int, np.ndarray] = {}
        self.arrival: dict[int, float] = {}
        self.metrics: list[pd.DataFrame] = []

    def __call__(self, frame, batch_id: int) -> None:
        import pyarrow as pa
        from pyarrow import feather

        from skewbench.bench.spark.workers import METRICS

        # Arrow, not collect(): collect pickles a binary column byte by byte in the driver's JVM
        records = [pickle.loads(blob) for blob in frame.toArrow().column("record").to_pylist()]
        if not records:
            return
        name = f"batch-{batch_id:06d}"
        outputs = [pa.ipc.open_stream(r["outputs"]).read_all() for r in records if r["outputs"] is not None]
        if outputs:  # an Arrow file, uncompressed: the run's scratch, read back once by summarize()
            feather.write_feather(pa.concat_tables(outputs, promote_options="default"),
                                  self.folder / "outputs" / f"{name}.arrow", compression="uncompressed")
        metrics = pd.DataFrame([{"batch": batch_id, **{k: r[k] for k in METRICS}} for r in records])
        metrics.to_parquet(self.folder / "metrics" / f"{name}.parquet", index=False)
        kept = [kept_of(r) for r in records]
        part = driver_folder(self.folder) / f"{name}.part"
        part.write_bytes(pickle.dumps(kept))
        part.replace(part.with_suffix(".pickle"))
        if self.publisher is not None:
            self.publisher.after_batch(batch_id, records)
        if self.feed is not None:
            copies = (metrics["stored"] + metrics["probed"]).to_numpy()
            self.feed.after_batch(batch_id, metrics["worker"].to_numpy(), copies)
        self.count(batch_id, kept, metrics)

    def count(self, batch_id: int, records: list[dict], metrics: pd.DataFrame) -> None:
        """A batch's final states, latencies and messages done."""
        for r in records:
            if r["final"]:  # the worker's last batch: what of its state the answer needs (App.driver_state)
                self.states[r["worker"]] = r["state"]
        seq, self.latency[batch_id] = batch_messages(records)
        self.arrival[batch_id] = first_arrival(records)
        self.metrics.append(metrics)
        again = int(self.seen[seq].sum())
        self.seen[seq] = True
        self.done += len(seq) - again
        self.duplicates += again if self.copies is None else self.copies.count(records)
        self.batches += 1
        self.last_batch = batch_id

    def missing(self) -> np.ndarray:
        """The messages no worker has handled yet, ascending."""
        return np.flatnonzero(~self.seen)

    def restore(self) -> None:
        """After a driver restart: count again every batch Spark committed before (its commit log); a batch
        begun and not committed is run again, and its files written again."""
        committed = {int(p.name) for p in (self.folder / "checkpoint" / "commits").glob("[0-9]*")}
        for path in sorted(driver_folder(self.folder).glob("batch-*.pickle")):
            batch_id = int(path.stem.split("-")[1])
            if batch_id in committed:
                self.count(batch_id, pickle.loads(path.read_bytes()),
                           pd.read_parquet(self.folder / "metrics" / f"{path.stem}.parquet"))


#: Of a worker record, what :meth:`Collector.count` reads, kept in the driver's checkpoint for a restart.
KEPT = ("worker", "messages", "t_end", "state", "final", "received")  # (received: live routing's alone)


def kept_of(record: dict) -> dict:
    return {k: record[k] for k in KEPT if k in record}


class Copies:
    """Duplicates under live routing, counted per message copy, exactly.

    A copy is a (message, worker) pair: a worker gets at most one copy of a message, and its record of a batch
    says which messages it received (``received``, before any row waits for its key's state) and which it
    handled (``messages``: the rows ready, and the held rows released).  A copy is received once, in the batch
    its message is routed in, and handled once, then or in a later batch when it was held.  So a message
    received in a second batch was delivered twice (a replay that was not exactly once, or a source that sent
    it again), and a copy handled when no receipt of it is waiting was handled twice.  The copies received and
    not yet handled — the held rows — are all this keeps beside one flag per message: held copies handled in a
    later batch are the pipeline's deferral, never duplicates.  ``count`` returns the messages of a batch with
    either (a message with both counts twice)."""

    WORKER_BITS = 20  # a copy's key: seq << WORKER_BITS | worker

    def __init__(self, messages: int):
        self.received = np.zeros(messages, dtype=bool)
        self.waiting = np.empty(0, dtype=np.int64)  # the keys of the copies received and not handled yet

    def count(self, records: list[dict]) -> int:
        """The batch's duplicate messages (``records``: the workers' records of one batch)."""
        arrived = self._keys(records, "received")
        seq = np.unique(arrived >> self.WORKER_BITS)
        again = int(self.received[seq].sum())
        self.received[seq] = True
        waiting = np.union1d(self.waiting, arrived)
        handled = self._keys(records, "messages")
        unawaited = handled[~np.isin(handled, waiting)]
        self.waiting = np.setdiff1d(waiting, handled)
        return again + len(np.unique(unawaited >> self.WORKER_BITS))

    def _keys(self, records: list[dict], field: str) -> np.ndarray:
        keys = [seqs(r[field]) << self.WORKER_BITS | r["worker"] for r in records if field in r]
        return np.concatenate(keys) if keys else np.empty(0, dtype=np.int64)


class Watchdog:
    """Fails a run that stops making progress instead of waiting for it forever: a lost message never comes.

    Progress is a message counted for the first time, a batch counted, or a node struck or started again by
    ``--faults``.  With none for :meth:`limit` seconds, :meth:`check` raises :class:`RunFailed` naming what is
    missing.  Before this driver's first batch the limit is :data:`START_S` plus :data:`STALL_FACTOR` times
    a batch's expected time (the time its messages take to arrive at the offered rate, or the whole batch's
    injected delay, as if one worker had it all: a bound, never a guess); after it, :data:`STALL_FACTOR`
    times the longest wait between two progresses so far or that arrival time, and at least :data:`STALL_S`.
    """

    def __init__(self, config: Config, messages: int):
        self.messages, self.width = messages, config.width()
        arrival = batch_rows(config) / config.rate if config.rate else 0.0
        self.arrival = arrival
        self.first = START_S + STALL_FACTOR * max(arrival, batch_rows(config) * config.delay_ms / 1000)
        self.seen = (-1, -1, -1)  # (messages done, batches, fault events) at the last progress
        self.since = time.monotonic()
        self.longest = 0.0  # the longest wait between two progresses after this driver's first batch
        self.batches = None  # the batches counted when this driver started (a restarted driver's restore)

    def limit(self) -> float:
        if self.batches is None or self.seen[1] <= self.batches:
            return self.first
        return max(STALL_S, STALL_FACTOR * max(self.longest, self.arrival))

    def check(self, collector: Collector, injector: faults.Injector) -> None:
        """Note any progress; :class:`RunFailed` when there was none for :meth:`limit` seconds."""
        now = time.monotonic()
        state = (collector.done, collector.batches,
                 sum(1 + (s.restarted_at is not None) for s in injector.strikes))
        if self.batches is None:
            self.batches = collector.batches
        if state != self.seen:
            if self.seen[1] > self.batches and state[:2] != self.seen[:2]:  # a wait for a batch, after this
                self.longest = max(self.longest, now - self.since)  # driver's first
            self.seen, self.since = state, now
            return
        quiet = now - self.since
        if quiet > self.limit():
            raise RunFailed(self.describe(collector, quiet))

    def describe(self, collector: Collector, quiet: float) -> str:
        """One line: how long nothing came, after which batch, and what is missing."""
        if collector.last_batch < 0:
            return f"stalled: no progress for {quiet:.0f} s and no batch ran ({collector.done:,} of " \
                   f"{self.messages:,} messages counted)"
        where = f"no progress for {quiet:.0f} s after batch {collector.last_batch}"
        missing = collector.missing()
        if len(missing):
            return f"lost: {where}: {len(missing):,} of {self.messages:,} messages never arrived " \
                   f"(message {int(missing[0]):,} first)"
        return f"stalled: {where}: every message arrived, but {self.width - len(collector.states)} of " \
               f"{self.width} workers sent no final state"


# On this 2-core machine under load 8-12 (other test suites beside), the first batch came 42-80 s after the query
# started, batches 2-4 s apart, the batch after a worker node's kill 2 s after it, a restarted driver's first batch
# 28 s after it began: each limit below holds with room on a machine three times slower.
START_S = 300.0  # before a driver's first batch: Spark plans the query, starts its executors' Python workers, the JIT
STALL_FACTOR = 4  # a wait this many times the longest one so far is no longer a slow batch
STALL_S = 30.0  # the shortest limit after the first batch: a lost message fails its run 30 s after the last batch


def driver_folder(folder: Path) -> Path:
    """The driver's checkpoint beside Spark's: per batch what the collector counts (:data:`KEPT`), the
    query's progress, the run's configuration: what a restarted driver needs (:func:`resume`)."""
    return folder / "checkpoint" / "driver"


def start_query(spark, config: Config, app, folder: Path, collector: Collector, stream_file: str, tasks: int,
                closers: int = 0, ingest: Ingest | None = None):
    from pyspark.sql import functions as F

    from skewbench.bench.spark import workers
    from skewbench.bench.spark.broker_source import BrokerDataSource
    from skewbench.bench.spark.source import SkewbenchDataSource

    source = BrokerDataSource if ingest is not None else SkewbenchDataSource
    registered(spark, source)
    width = config.width()
    groups = preimages(spark, width + closers, tasks)  # a closing group sorts after its task's workers
    versions = str(collector.publisher.folder) if collector.publisher is not None else ""
    loads = str(collector.feed.folder) if collector.feed is not None else ""
    routed = (spark.readStream.format(source.name()).options(**(ingest.source_options() if ingest else {}))
              .option("workload", config.workload or app.default_workload).option("messages", config.messages)
              .option("seed", config.seed).option("sources", config.sources).option("split", config.split)
              .option("rate", config.rate).option("max_rows_per_trigger", batch_rows(config))
              .option("app", config.app).option("scheme", config.scheme).option("workers", width)
              .option("closers", closers).option("routers", str(routers_folder(folder))).option("versions", versions)
              .option("params", config.params).option("loads", loads).option("stream_file", stream_file)
              .options(**faults.source_options(config.faults, config.messages)).load())
    # Computing wg in Spark is also the projection that turns the source's Arrow-backed bundles into
    # UnsafeRows before the shuffle (straight from Python, the shuffle write fails: ColumnarBatchRow).
    routed = routed.withColumn("wg", F.element_at(F.array(*[F.lit(int(v)).cast("bigint") for v in groups]),
                                                F.col("worker") + 1))
    worked = (routed.groupBy("wg")
              .applyInPandasWithState(workers.worker(app, config.delay_ms / 1000, config.delay_mode, width,
                                                     packed=tasks < width, defers=closers > 0, live=bool(versions),
                                                     speeds=tuple(speed_profile.parse(config.slow, width))),
                                      workers.SCHEMA, "blob binary", "append", "NoTimeout"))
    return (worked.writeStream.outputMode("append").foreachBatch(collector)
            .option("checkpointLocation", str(folder / "checkpoint")).start())


@functools.cache  # once per session: 0.2 s a run
def registered(spark, source) -> None:
    spark.dataSource.register(source)


def load_feed(config: Config, folder: Path):
    """The driver's side of load feedback (:mod:`~skewbench.bench.spark.feedback`) for a scheme told the
    true loads between micro-batches; None for the others."""
    from skewbench.bench.spark.live import folder_of

    return (feedback.LoadFeed(folder_of(folder / "checkpoint"), speed_profile.parse(config.slow, config.width()))
            if told_loads(config) else None)


NOT_RESUMABLE = "a run with live routing or load feedback cannot resume yet"


def resumable(config: Config) -> bool:
    """Whether a new driver can finish the run (:func:`resume`): its driver holds no state but what it writes
    in the driver's checkpoint."""
    return config.live() is None and not told_loads(config)


def told_loads(config: Config) -> bool:
    """Whether the run's scheme is told the true loads between micro-batches."""
    from skewbench.scheme import make_scheme, parse_params

    return feedback.needs_loads(make_scheme(config.scheme, config.workers, **parse_params(config.params)))


def routers_folder(folder: Path) -> Path:
    """Where the sources keep their routers between batches, seen by every executor (Spark's state
    needs the checkpoint folder shared); removed when the run ends."""
    path = (folder / "checkpoint" / "routers").absolute()  # executors run in folders of their own
    path.mkdir(parents=True, exist_ok=True)
    return path


def batch_rows(config: Config) -> int:
    """Messages per micro-batch: ``--batch-rows``, else a tenth of the stream."""
    return config.batch_rows or math.ceil(config.messages / 10)


def final_progress(query, last_batch: int, wait: float = 10.0) -> list[dict]:
    """The query's progress reports, once the one of ``last_batch`` is in (Spark posts it just after
    ``foreachBatch`` returns), or after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        progress = [json.loads(p.json) for p in query.recentProgress]
        if any(p["batchId"] >= last_batch for p in progress) or time.monotonic() > deadline:
            return progress
        time.sleep(0.1)


def engine_and_resources(spark, folder: Path, start: float) -> dict:
    """Spark's task metrics per stage (``stages.parquet``) and the psutil agent's samples of a local
    cluster (``resources.parquet``) for the run, and their summaries."""
    from skewbench.bench.spark import metrics

    try:
        stages = metrics.stage_metrics(spark, start)
    except (OSError, ValueError) as exc:
        tasks = {"error": f"Spark REST API: {exc}"}
    else:
        stages.to_parquet(folder / "stages.parquet", index=False)
        tasks = metrics.stage_summary(stages)
    cluster = local_cluster_dir()
    if cluster is None:
        return {"engine": tasks, "resources": {"note": "on VMs the samples stay on the nodes: make cluster-collect"}}
    samples = metrics.resource_samples(cluster, start, time.time())
    samples.to_parquet(folder / "resources.parquet", index=False)
    return {"engine": tasks, "resources": metrics.resource_summary(samples)}


def session(url: str, name: str):
    """A SparkSession on ``url`` configured for the pipeline."""
    from pyspark.sql import SparkSession

    from skewbench.bench.calibration import cache_root

    # A driver started as plain `python` (not spark-submit) ignores spark.pyspark.python and would send
    # executors `python3` from their PATH, which lacks the project: name the interpreter explicitly.
    os.environ.setdefault("PYSPARK_PYTHON", spark_default("spark.pyspark.python") or sys.executable)
    # The driver's JVM reads spark-defaults.conf (the cluster's secret) from here: without it the
    # master drops the connection and the driver waits 60 s for "All masters are unresponsive".
    os.environ.setdefault("SPARK_CONF_DIR", str(conf_dir()))
    builder = SparkSession.builder.master(url).appName(name)
    if jar := engine.lever_jar(cache_root().parent / "java"):  # the no-fork lever's class
        builder = builder.config("spark.jars", str(jar))
    spark = (builder
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


def timeline(collector: Collector, batches: pd.DataFrame) -> pd.DataFrame:
    """Live routing's row a batch (:meth:`~skewbench.bench.spark.live.Publisher.timeline`) with the batch's
    duration, messages done and their latency from intended arrival (p50, p99, max)."""
    rows = collector.publisher.timeline()
    latency = {b: (np.percentile(v, [50, 99]).tolist() + [float(v.max())] if len(v) else [np.nan] * 3)
               for b, v in collector.latency.items()}
    rows[["latency_p50", "latency_p99", "latency_max"]] = [latency.get(b, [np.nan] * 3) for b in rows["batch"]]
    rows["messages_done"] = [len(collector.latency.get(b, ())) for b in rows["batch"]]
    return rows.merge(batches[["batch", "duration"]], on="batch", how="left")


def publisher(config: Config, stream, folder: Path):
    """Live routing's driver side (:class:`~skewbench.bench.spark.live.Publisher`), or None without it."""
    live = config.live()
    if live is None:
        return None
    from skewbench.bench.spark.live import Publisher, folder_of
    from skewbench.scheme import make_scheme, parse_params
    from skewbench.sources import prepare_scheme

    params = parse_params(config.params)

    def prepared(workers: int):
        return prepare_scheme(config.scheme, workers, stream, seed=config.seed, params=params)

    first = make_scheme(config.scheme, config.workers, seed=config.seed, **params)  # adaptive: from its hash
    controller = live.controller(first if first.adaptive else prepared(config.workers), stream.messages, prepared)
    return Publisher(folder_of(folder / "checkpoint"), controller, stream)


def run(config: Config, log=sys.stderr, spark=None, profiler=None) -> dict:
    """One run; returns the summary (also written to ``DIR/summary.json``).  With ``spark`` given the
    run reuses that session (several runs in one application) and leaves it running.  ``profiler``
    (:class:`~skewbench.bench.spark.profile.Profiler`) is told the batches done while the run waits."""
    from skewbench.bench.spark.delay import default_mode

    app, status = check(config, own_app=spark.sparkContext.applicationId if spark is not None else None)
    delay_mode = config.delay_mode or default_mode(config.workers, machine_cores(status))
    config = Config(**{**asdict(config), "delay_mode": delay_mode})
    out = Path(config.out)
    folder = out.with_name(out.name + ".partial")
    folder.mkdir(parents=True)
    (folder / "INCOMPLETE").write_text("this run did not finish\n")
    driver_folder(folder).mkdir(parents=True)
    (driver_folder(folder) / "run.json").write_text(json.dumps({"config": asdict(config), "started": time.time()}))
    return drive(config, app, status, folder, log, spark, profiler)


def supervised(config: Config, log=sys.stderr) -> dict:
    """A run with driver faults (:class:`~skewbench.bench.spark.faults.Supervisor`): its driver a child process,
    killed and restarted from the checkpoints as the faults say; returns the finished run's summary."""
    check(config)
    code = faults.Supervisor(config, log).run()
    failed = Path(f"{config.out}.partial") / FAILED
    if code and failed.exists():  # the driver's watchdog said why
        raise RunFailed("; ".join(json.loads(failed.read_text())["reasons"]))
    if code:
        raise RuntimeError(f"the run's last driver exited with {code}: see {config.out}.partial and the log above")
    return json.loads((Path(config.out) / "summary.json").read_text())


def resume(partial: Path, log=sys.stderr) -> dict:
    """Finish the run in ``partial`` (``DIR.partial``) whose driver died: a new driver restarts its query from
    Spark's checkpoint, counts again what the driver's checkpoint (:func:`driver_folder`) says the committed
    batches did, and goes on; the result is the run's as if its driver had lived (summary.json's ``faults``
    names the restart when ``--faults`` asked for it)."""
    saved = driver_folder(partial) / "run.json"
    if not (partial / "INCOMPLETE").exists() or not saved.exists():
        raise RunError(f"{partial} is not an interrupted run's folder (INCOMPLETE and checkpoint/driver/run.json): "
                       f"give the DIR.partial a `skewbench run` left")
    kept = json.loads(saved.read_text())
    config = Config(**kept["config"])
    if not resumable(config):
        raise RunError(f"{NOT_RESUMABLE}: run it again")
    faults.Injector(faults.parse_all(config.faults), local_cluster_dir(), driver_folder(partial), log).settle(
        on_time=True)  # a node the dead driver struck and had not started again: its slots are needed
    wait_for_slots(config)
    app, status = check(config, resuming=True)
    return drive(config, app, status, partial, log, started=kept["started"])


def wait_for_slots(config: Config, timeout: float = 120) -> None:
    """Until the cluster has the run's task slots free: a dead driver's application keeps them until the
    master has seen it die."""
    deadline = time.monotonic() + timeout
    while free_slots(master_status(master_url(config))) < config.width() and time.monotonic() < deadline:
        time.sleep(1)


def drive(config: Config, app, status: dict, folder: Path, log, spark=None, profiler=None,
          started: float | None = None) -> dict:
    """The driver of a run in ``folder``: started afresh, or (``started``: the run's first start, epoch
    seconds) again from the checkpoints after its driver died."""
    from skewbench.bench.spark import shared
    from skewbench.bench.spark.source import stream_of

    url = master_url(config)
    spec = config.workload or app.default_workload
    stream = app.prepare(stream_of(spec, config.messages, config.seed))
    app.check(stream)
    own = spark is None
    if own:
        spark = session(url, f"skewbench-run-{config.app}-{config.scheme}-W{config.workers}")
    tasks = engine.worker_tasks(config.levers, config.width(), machine_cores(status), config.delay_mode)
    closers = engine.closers(config.levers, config.width(), tasks)
    spark.conf.set("spark.sql.shuffle.partitions", tasks)
    try:
        levers = engine.apply(spark, config.levers)
    except engine.LeverError as exc:
        raise RunError(f"--levers: {exc}") from None
    collector = Collector(folder, stream.messages, publisher(config, stream, folder), load_feed(config, folder))
    if started is not None:
        collector.restore()
    elif config.live() is None:  # live routing routes by the versions it publishes instead
        run_key = routing.run_of(config.scheme, config.width(), config.sources, config.seed, spec, config.messages,
                                 config.split, config.params)
        routing.save_initial(run_key, stream, str(routers_folder(folder)))
    query = None
    ingest = Ingest(config, spec, folder, conf_dir(), driver_folder(folder) / "ingest.json") \
        if config.ingest == "locust" else None
    injector = faults.Injector(faults.parse_all(config.faults), local_cluster_dir(), driver_folder(folder), log)
    progress = ProgressLog(folder)
    wall_start = time.time()
    started = started or wall_start
    try:
        with deferred() as interrupts:
            if ingest is not None:
                ingest.start()
            query = start_query(spark, config, app, folder, collector, shared.share(spark, stream), tasks, closers,
                                ingest)
            last = 0.0
            watchdog = Watchdog(config, stream.messages)
            while collector.done < stream.messages or len(collector.states) < config.width():
                interrupts.check()
                if profiler is not None:
                    profiler.observe(collector.batches)
                injector.poll(collector.done / stream.messages)
                if query.exception() is not None or not query.isActive:
                    raise RuntimeError(f"the streaming query failed: {query.exception()}")
                if ingest is not None and ingest.failed():
                    raise RuntimeError(ingest.failed())
                watchdog.check(collector, injector)
                time.sleep(0.2)
                progress.keep(query.lastProgress)
                elapsed = time.time() - started
                if elapsed - last >= 2 or collector.done >= stream.messages:
                    last = elapsed
                    share = collector.done / stream.messages
                    eta = elapsed / share * (1 - share) if share else float("nan")
                    print(f"messages {collector.done:,} of {stream.messages:,} ({100 * share:.0f}%)  batches "
                          f"{collector.batches}  elapsed {clock(elapsed)}  ETA {clock(eta)}", file=log, flush=True)
            elapsed = time.time() - started
            if profiler is not None:
                profiler.finish(collector.batches)
            reports = progress.all(final_progress(query, collector.last_batch))
            query.stop()
            query = None
            injector.settle()  # every struck node back before the next run
            shutil.rmtree(routers_folder(folder))  # the routers' last states: no result
            metrics = pd.concat(collector.metrics, ignore_index=True)
            batches = batch_table(reports, metrics)
            batches["messages"] = [len(collector.latency.get(b, ())) for b in batches["batch"]]  # done in the batch
            batches["first_arrival"] = [collector.arrival.get(b, np.nan) for b in batches["batch"]]  # intended time
            batches.to_parquet(folder / "batches.parquet", index=False)
            summary = summarize(config, app, stream, collector, batches, elapsed, config.delay_mode, tasks)
            if collector.publisher is not None:  # live routing: its versions and migrations, a row a batch
                timeline(collector, batches).to_parquet(folder / "timeline.parquet", index=False)
                summary |= collector.publisher.summary(batches)
            summary |= engine_and_resources(spark, folder, wall_start)
            summary["ingest"] = ingest.finish() if ingest is not None else {"path": "engine"}
            if injector.strikes:
                summary["faults"] = injector.summary(batches)
            (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
            write_meta(folder, config, url, status, spark, tasks, closers, levers)
            interrupts.check()  # the last moment a Ctrl-C leaves the run incomplete
            shutil.rmtree(driver_folder(folder))  # what a restarted driver would have needed
            (folder / "INCOMPLETE").unlink()
            folder.rename(config.out)
            return summary
    except RunFailed as failure:
        (folder / FAILED).write_text(json.dumps({"reasons": [str(failure)]}) + "\n")
        raise
    finally:
        if query is not None:
            query.stop()
        if ingest is not None:
            ingest.stop()
        injector.restore()
        if own:
            spark.stop()


def write_meta(folder: Path, config: Config, url: str, status: dict, spark, tasks: int, closers: int,
               levers: dict) -> None:
    """``run.meta.json``: versions, commit, the cluster's shape, the configuration and the engine's settings."""
    from skewbench.bench.provenance import write_metadata

    meta = {"config": asdict(config), "master": url, "spark_conf_dir": str(conf_dir()),
            "cluster": {k: status.get(k) for k in ("url", "aliveworkers", "cores", "memory", "status")}
            | {"workers": [{k: w.get(k) for k in ("host", "cores", "memory", "state")}
                           for w in status.get("workers", [])]},
            "machine_cores": machine_cores(status), "delay_mode": config.delay_mode,
            "shuffle_partitions": tasks, "closing_groups": closers, "batch_rows": batch_rows(config),
            "spark_version": spark.version, "engine_settings": levers, "security": security(spark),
            "network": network_shaping()}
    write_metadata(folder / "run", meta)


class ProgressLog:
    """The query's progress reports of batches with data, kept in the driver's checkpoint as they come: a
    restarted driver's query reports only the batches it ran itself."""

    def __init__(self, folder: Path):
        self.path = driver_folder(folder) / "progress.jsonl"
        lines = self.path.read_text().splitlines() if self.path.exists() else []
        self.kept = {p["batchId"]: p for p in map(json.loads, lines)}

    def keep(self, last) -> None:
        """Keep the query's last report (``query.lastProgress``) if it is new and had data."""
        report = json.loads(last.json) if last is not None else {}
        if report.get("numInputRows", 0) > 0 and report["batchId"] not in self.kept:
            self.kept[report["batchId"]] = report
            with self.path.open("a") as file:
                file.write(json.dumps(report) + "\n")

    def all(self, reports: list[dict]) -> list[dict]:
        """The kept reports with ``reports`` (the query's, newer for a batch run again), in batch order."""
        merged = self.kept | {p["batchId"]: p for p in reports if p.get("numInputRows", 0) > 0}
        return [merged[b] for b in sorted(merged)]


def security(spark) -> dict:
    """Whether the cluster authenticates and encrypts its RPC (the cluster's spark-defaults.conf; no secret)."""
    conf = spark.sparkContext.getConf()
    return {"authentication": conf.get("spark.authenticate", "false") == "true",
            "network_encryption": conf.get("spark.network.crypto.enabled", "false") == "true"}


def network_shaping() -> dict | None:
    """The local cluster's emulated links: netem's options ("" for none) and what applies them (the
    kernel's ``tc`` or the user-space ``linkem``); None off a local cluster."""
    folder = local_cluster_dir()
    if folder is None:
        return None
    state = json.loads((folder / "state.json").read_text())
    return {"netem": state.get("netem", ""), "by": state.get("netem_by")}


def main(argv: list[str]) -> int:
    """``python -m skewbench.bench.spark.run CONFIG.json ...``: several runs in one Spark application
    (what the tests use to pay the start-up once); prints one summary per line.  ``--resume DIR.partial``:
    finish that run (:func:`resume`).  A failed run (:class:`RunFailed`) stops it with one line, exit code 1."""
    try:
        if argv[:1] == ["--resume"]:
            print(json.dumps(resume(Path(argv[1]))), flush=True)
            return 0
        configs = [Config(**json.loads(Path(a).read_text())) for a in argv]
        spark = session(master_url(configs[0]), "skewbench-runs")
        try:
            for config in configs:
                print(json.dumps(run(config, spark=spark)), flush=True)
        finally:
            spark.stop()
    except RunFailed as failure:
        print(f"skewbench: the run failed: {failure}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
