"""``skewbench api-bench``: what :mod:`skewbench.spark` buys a Structured Streaming job, measured on the cluster.

A study file (``bench/studies/api.yaml``) names the points: a skewed stream whose hottest key carries a
share ``p1`` of the rows, through two operators computing the sum of ``value`` per key,

* ``python`` — a per-key Python stateful operator spending ``cost_ms`` per row (slept, as the benchmark's
  injected delay: W workers' work shares the machine's few cores), and
* ``sum`` — Spark's built-in ``groupBy().agg(sum)``,

each run ``plain`` (Spark's own per-key grouping) and through a :class:`~skewbench.spark.Balancer` with each
scheme.  Every run reads the same Parquet files (S files a micro-batch: S sources), runs to the end
(``availableNow``), writes its partials with :func:`~skewbench.spark.balancer.write_partials` and is checked
against the sums computed in pandas.  Per run: throughput (rows of the micro-batches after the first / their
durations), latency (the median micro-batch: a row's result is visible when its micro-batch commits), state
(the state store's bytes, and the partials kept: one per key and worker that holds it).

Writes ``DIR/results.csv`` (+ ``.meta.json``: versions, commit, cluster, the study), ``DIR/api.png`` and each
run's Spark progress (``DIR/runs/*/progress.json``); a correct run's checkpoint and partials are removed.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import yaml

from skewbench.bench.progress import Progress
from skewbench.bench.provenance import write_metadata

OPERATORS = ("python", "sum")
SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["kind", "name", "p1"],
    "properties": {
        "kind": {"const": "api"}, "name": {"type": "string", "pattern": "^[a-z0-9-]+$"},
        "description": {"type": "string"},
        "p1": {"type": "array", "minItems": 1, "items": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}},
        "operators": {"type": "array", "minItems": 1, "items": {"enum": list(OPERATORS)}},
        "schemes": {"type": "array", "items": {"type": "string"}},
        "workers": {"type": "integer", "minimum": 1, "maximum": 1000},
        "sources": {"type": "integer", "minimum": 1, "maximum": 100},
        "keys": {"type": "integer", "minimum": 2},
        "cost_ms": {"type": "number", "minimum": 0, "maximum": 100},
        "batch_rows": {"type": "integer", "minimum": 1},
        "batches": {"type": "integer", "minimum": 2},
        "seed": {"type": "integer", "minimum": 0},
        "repeats": {"type": "integer", "minimum": 1, "maximum": 10},
    },
}


class ApiBenchError(ValueError):
    """A bad study file or output folder; the message says what to fix."""


@dataclass(frozen=True)
class ApiStudy:
    name: str
    p1: list[float]
    operators: list[str] = field(default_factory=lambda: list(OPERATORS))
    schemes: list[str] = field(default_factory=lambda: ["pkg", "dchoices", "wchoices"])
    workers: int = 10
    sources: int = 4
    keys: int = 1000
    cost_ms: float = 0.5
    batch_rows: int = 40_000
    batches: int = 5
    seed: int = 0
    repeats: int = 1
    description: str = ""
    kind: str = "api"

    def runs(self) -> list[tuple[float, int, str, str]]:
        """Every (p1, seed, operator, way) of the study; ``way`` is ``plain`` or a scheme; seeds ``seed`` to
        ``seed + repeats - 1`` (each its own stream and routers)."""
        return [(p1, seed, op, way) for p1 in self.p1 for seed in range(self.seed, self.seed + self.repeats)
                for op in self.operators for way in ["plain", *self.schemes]]


def load(path: str | Path) -> ApiStudy:
    """The study file at ``path``, validated whole before anything runs."""
    from skewbench.spark import balancer_schemes

    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
        if not isinstance(doc, dict) or doc.get("kind") != "api":
            raise ApiBenchError(f"{path}: not an API study (kind: api); a bench study runs with `skewbench bench`")
        jsonschema.validate(doc, SCHEMA)
    except OSError as error:
        raise ApiBenchError(f"{path}: cannot read it ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise ApiBenchError(f"{path}: not YAML ({error})") from None
    except jsonschema.ValidationError as error:
        where = ".".join(str(p) for p in error.absolute_path) or "(top)"
        raise ApiBenchError(f"{path}: {where}: {error.message}") from None
    unknown = sorted(set(doc.get("schemes", [])) - set(balancer_schemes()))
    if unknown:
        raise ApiBenchError(f"{path}: schemes: {', '.join(unknown)} cannot balance a Spark job; "
                            f"use some of {', '.join(balancer_schemes())}")
    return ApiStudy(**doc)


def zipf_exponent(p1: float, keys: int) -> float:
    """The Zipf exponent z at which the hottest of ``keys`` keys has the share ``p1`` (1 / H(keys, z))."""
    ranks = np.arange(1, keys + 1, dtype=np.float64)
    low, high = 0.0, 50.0
    if p1 <= 1 / keys:
        raise ApiBenchError(f"p1 = {p1} is not skewed over {keys} keys (uniform gives {1 / keys:.2g})")
    for _ in range(100):  # the share grows with z
        z = (low + high) / 2
        low, high = (z, high) if 1 / np.sum(ranks ** -z) < p1 else (low, z)
    return (low + high) / 2


def stream(study: ApiStudy, p1: float, seed: int) -> pd.DataFrame:
    """The rows of one point: ``key`` (string, Zipf with the hottest key's share ``p1``) and ``value``."""
    rng = np.random.default_rng([seed, round(p1 * 1e6)])
    ranks = np.arange(1, study.keys + 1, dtype=np.float64) ** -zipf_exponent(p1, study.keys)
    n = study.batch_rows * study.batches
    ids = rng.choice(study.keys, size=n, p=ranks / ranks.sum())
    return pd.DataFrame({"key": np.char.add("k", ids.astype(str)).astype(object),
                         "value": rng.integers(1, 100, n, dtype=np.int64)})


def write_files(rows: pd.DataFrame, folder: Path, study: ApiStudy) -> None:
    """S Parquet files per micro-batch, their modification times in order (the file source's order)."""
    folder.mkdir(parents=True)
    per_file = -(-study.batch_rows // study.sources)
    for i, start in enumerate(range(0, len(rows), per_file)):
        path = folder / f"part-{i:05d}.parquet"
        rows.iloc[start:start + per_file].to_parquet(path, index=False)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))


def python_update(cost_s: float):
    """The per-key operator, the same function plain and balanced: sleep ``cost_s`` per row, sum ``value``."""

    def update(_key, rows, total):
        time.sleep(len(rows) * cost_s)
        return (total or 0) + int(rows["value"].sum())

    return update


def plain_query(rows_df, operator: str, cost_s: float):
    """Spark's own per-key grouping: partials with worker 0 (each key has one)."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    if operator == "sum":
        return rows_df.groupBy("key").agg(F.sum("value").alias("value")).withColumn("skewbench_worker", F.lit(0))
    update = python_update(cost_s)

    def per_key(key, frames, state):
        rows = pd.concat(list(frames), ignore_index=True)
        total = update(key[0], rows, state.get[0] if state.exists else None)
        state.update((total,))
        yield pd.DataFrame({"key": [key[0]], "skewbench_worker": [0], "value": [total]})

    return rows_df.groupBy("key").applyInPandasWithState(
        per_key, "key string, skewbench_worker int, value bigint", "total bigint", "Update",
        GroupStateTimeout.NoTimeout)


def balanced_query(balancer, rows_df, operator: str, cost_s: float):
    from pyspark.sql import functions as F

    routed = balancer.route(rows_df)
    if operator == "sum":  # the built-in aggregate over the split key (key, worker)
        return routed.groupBy("key", "skewbench_worker").agg(F.sum("value").alias("value"))
    return balancer.per_key(routed, python_update(cost_s), "bigint")


def run_one(spark, study: ApiStudy, p1: float, seed: int, operator: str, way: str, files: Path, folder: Path,
            reference: dict, sample) -> dict:
    """One run: the query to the end of the files, then its measurements and check (``sample``: the keys a
    scheme that plans a table plans on)."""
    from skewbench.spark import Balancer, merged
    from skewbench.spark.balancer import write_partials

    rows_df = (spark.readStream.schema("key string, value bigint").option("maxFilesPerTrigger", study.sources)
               .parquet(str(files)))
    cost_s = study.cost_ms / 1000
    began = time.perf_counter()
    if way == "plain":
        query = write_partials(plain_query(rows_df, operator, cost_s), folder / "out", folder / "checkpoint",
                               availableNow=True)
    else:
        balancer = Balancer("key", scheme=way, workers=study.workers, merge=_add, checkpoint=folder / "checkpoint",
                            seed=seed, sample=sample)
        query = balancer.write(balanced_query(balancer, rows_df, operator, cost_s), folder / "out", availableNow=True)
    query.awaitTermination()
    wall = time.perf_counter() - began
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    (folder / "progress.json").write_text(json.dumps(progress, indent=1, default=str) + "\n")
    steady = progress[1:]  # the first micro-batch starts the Python workers
    durations = [p["durationMs"]["triggerExecution"] / 1000 for p in steady]
    state = progress[-1].get("stateOperators", [])
    answer = merged(folder / "out", "key", _add)
    partials = _newest_partials(folder / "out")
    correct = answer.to_dict() == reference
    if correct:  # the checkpoint and partials of a correct run only take room (an incorrect run's stay to see why)
        for part in ("checkpoint", "out"):
            shutil.rmtree(folder / part)
    return {"p1": p1, "seed": seed, "operator": operator, "way": way, "workers": study.workers,
            "sources": study.sources,
            "cost_ms": study.cost_ms, "rows": sum(p["numInputRows"] for p in progress), "batches": len(progress),
            "throughput_rows_per_s": sum(p["numInputRows"] for p in steady) / sum(durations),
            "latency_p50_s": statistics.median(durations), "wall_s": wall,
            "state_bytes": sum(s.get("memoryUsedBytes", 0) for s in state),
            "partials": partials, "correct": correct}


def _add(a, b):
    return a + b


def _newest_partials(output: Path) -> int:
    """The (key, worker) entries the run kept."""
    partials = pd.read_parquet(output / "partials", columns=["key", "skewbench_worker"])
    return int(len(partials.drop_duplicates()))


def with_ratios(table: pd.DataFrame) -> pd.DataFrame:
    """Each run's throughput over the plain run's of the same p1, seed and operator."""
    plain = table[table["way"] == "plain"].set_index(["p1", "seed", "operator"])["throughput_rows_per_s"]
    return table.assign(over_plain=[row.throughput_rows_per_s / plain.get((row.p1, row.seed, row.operator), np.nan)
                                    for row in table.itertuples()])


#: Repeats whose throughputs' standard deviation exceeds this share of their mean are flagged (as pyperf does).
UNSTABLE = 0.10


def aggregate(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (operator, p1, way) over its repeats: medians, the ratio's range, and the spread."""
    groups = table.groupby(["operator", "p1", "way"], sort=False)
    rate = groups["throughput_rows_per_s"]
    return pd.DataFrame({
        "repeats": groups.size(), "rows/s": rate.median(), "x plain": groups["over_plain"].median(),
        "x plain min": groups["over_plain"].min(), "x plain max": groups["over_plain"].max(),
        "batch p50 s": groups["latency_p50_s"].median(), "state bytes": groups["state_bytes"].median(),
        "partials": groups["partials"].median(), "spread": (rate.std(ddof=1) / rate.mean()).fillna(0.0),
        "correct": groups["correct"].all()}).reset_index()


def summary(table: pd.DataFrame) -> str:
    """One block per operator (medians over the repeats, the ratio's range), then a warning naming the points
    whose repeats disagree."""
    agg = aggregate(table)
    parts = []
    for operator, rows in agg.groupby("operator", sort=False):
        once = rows["repeats"].max() == 1
        shown = rows.drop(columns=["operator", "spread"] + (["repeats", "x plain min", "x plain max"] if once else []))
        title = f"{operator}:" if once else f"{operator} (medians of {int(rows['repeats'].max())} repeats):"
        parts += [title, shown.to_string(index=False, formatters={"rows/s": "{:,.0f}".format, "state bytes":
                                                                  "{:,.0f}".format, "partials": "{:,.0f}".format},
                                         float_format="{:.2f}".format), ""]
    unstable = agg[agg["spread"] > UNSTABLE]
    if len(unstable):
        named = ", ".join(f"{r.operator} p1 = {r.p1:g} {r.way} ({r.spread:.0%})" for r in unstable.itertuples())
        parts.append(f"warning: repeats disagree (standard deviation over {UNSTABLE:.0%} of the mean rows/s): {named}")
    return "\n".join(parts)


def draw(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import seaborn as sns

    grid = sns.relplot(data=table, x="p1", y="over_plain", hue="way", col="operator", kind="line", marker="o",
                       estimator="median", errorbar=("pi", 100), height=3.2, aspect=1.2, facet_kws={"sharey": False})
    grid.set_axis_labels("hottest key's share p1", "throughput / plain (median, range)")
    for ax in grid.axes.flat:
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    grid.figure.suptitle(f"skewbench.spark on the cluster (W = {table['workers'].iloc[0]})", y=1.03)
    grid.savefig(path, dpi=120, bbox_inches="tight")


def cluster(study: ApiStudy) -> tuple[str, dict]:
    """The master's URL and status, once Java, the cluster and its free slots are there for the study."""
    from skewbench.bench.spark.run import RunError, conf_dir, free_slots, master_status, spark_default

    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        raise ApiBenchError("Java is missing: install openjdk-17-jre-headless (Spark 4 needs Java 17 or 21)")
    url = spark_default("spark.master")
    if not url:
        raise ApiBenchError(f"no cluster configuration in {conf_dir()}: start the local cluster with `make cluster-up` "
                            f"or set SPARK_CONF_DIR")
    try:
        status = master_status(url)
    except RunError as error:
        raise ApiBenchError(str(error).replace(" or check --master", " or set SPARK_CONF_DIR")) from None
    need = study.workers + study.sources
    if free_slots(status) < need:
        raise ApiBenchError(f"W + S = {need} tasks need as many free slots, and {url} has {free_slots(status)}: start "
                            f"the cluster with more CORES or WORKERS")
    return url, status


def api_bench(study_path: str | Path, out: Path, log=sys.stderr, warm_up: int = 1) -> pd.DataFrame:
    """Run every point of the study on the cluster of ``SPARK_CONF_DIR``, after ``warm_up`` unreported runs;
    write ``out``'s tables and figure."""
    from skewbench.bench.spark.run import session

    study = load(study_path)
    out = Path(out)
    if out.exists():
        raise ApiBenchError(f"{out} exists: give a new --out folder (results are never overwritten)")
    url, status = cluster(study)
    spark = session(url, f"skewbench-api-{study.name}")
    spark.conf.set("spark.sql.shuffle.partitions", study.workers)
    out.mkdir(parents=True)
    try:
        rows = measure(spark, study, out, log, warm_up)
    finally:
        spark.stop()
    table = with_ratios(pd.DataFrame(rows))
    table.to_csv(out / "results.csv", index=False)
    write_metadata(out / "results.csv", {"study": asdict(study), "warm_up_runs": warm_up, "cluster": {
        "workers": len(status.get("workers", [])), "slots": sum(w["cores"] for w in status.get("workers", []))}})
    draw(table, out / "api.png")
    (out / "study.json").write_text(json.dumps(asdict(study), indent=1) + "\n")
    return table


def measure(spark, study: ApiStudy, out: Path, log, warm_up: int = 1) -> list[dict]:
    """Every run of the study, after ``warm_up`` unreported runs of its second (the JVMs' JIT, the Python
    workers: without them the first runs measure slow)."""
    rows, runs = [], study.runs()
    with Progress(len(runs) + warm_up, log) as progress:
        for point, (p1, seed) in enumerate(dict.fromkeys((p1, seed) for p1, seed, *_ in runs)):
            data = stream(study, p1, seed)
            files = out / "streams" / f"p1-{p1:g}-seed-{seed}"
            write_files(data, files, study)
            reference = data.groupby("key")["value"].sum().astype(np.int64).to_dict()
            sample = data["key"].iloc[:study.batch_rows]  # the first micro-batch: what a table is planned on
            for n in range(warm_up if point == 0 else 0):
                progress.step("warm-up (not reported)")
                run_one(spark, study, p1, seed, *runs[min(1, len(runs) - 1)][2:], files,
                        out / "runs" / ("warm-up" if n == 0 else f"warm-up-{n + 1}"), reference, sample)
            for *_, operator, way in (r for r in runs if r[:2] == (p1, seed)):
                progress.step(f"p1 = {p1:g} seed {seed} {operator} {way}")
                folder = out / "runs" / f"p1-{p1:g}-seed-{seed}-{operator}-{way}"
                rows.append(run_one(spark, study, p1, seed, operator, way, files, folder, reference, sample))
            shutil.rmtree(files)  # made again from the seed
    (out / "streams").rmdir()
    return rows
