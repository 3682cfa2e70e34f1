"""skewbench.spark on the local cluster: examples/balanced_wordcount.py as docs/spark-api.md runs it
(spark-submit), restarted where its query died after writing a micro-batch, runs that batch again as the first
time and counts a skewed stream exactly, routing every word as the simulator does, and refuses a restart with
another scheme; `skewbench api-bench` measures plain and balanced operators with the same answer."""
import collections
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "balanced_wordcount.py"


def texts(folder: Path, files: int) -> list[list[str]]:
    """``files`` text files of Zipf-skewed words (the hottest a fifth of the words), one per micro-batch."""
    rng, written = np.random.default_rng(0), []
    folder.mkdir()
    for i in range(files):
        words = [f"w{k}" for k in np.minimum(rng.zipf(1.6, 3000), 400)]
        (folder / f"part-{i:03d}.txt").write_text("\n".join(" ".join(words[j:j + 12]) for j in range(0, 3000, 12)))
        written.append(words)
    return written


def submit(conf: Path, job: Path, *args) -> subprocess.CompletedProcess:
    """``spark-submit JOB ARGS`` on the cluster of ``conf``, in .venv-cluster."""
    from skewbench.bench.spark.run import CLUSTER_PYTHON

    bin_dir = Path(CLUSTER_PYTHON).parent  # as after `. .venv-cluster/bin/activate`
    env = {**os.environ, "SPARK_CONF_DIR": str(conf), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["spark-submit", str(job), *map(str, args)], cwd=ROOT, text=True, capture_output=True,
                          timeout=600, env=env)


def routed_as_the_simulator(counts_dir: Path, words: list[str]) -> None:
    """One file is one micro-batch of one partition, read in order: source 0's router routes every word as the
    simulator's pkg routes the whole stream (its estimates carried from batch to batch), word for word."""
    import pandas as pd

    from skewbench.hashing import fingerprints
    from skewbench.scheme import make_scheme

    partials = pd.read_parquet(counts_dir / "partials")
    partials = partials.sort_values("batch").drop_duplicates(["word", "skewbench_worker"], keep="last")
    routes = make_scheme("pkg", workers=4).route_many(fingerprints(np.array(words, dtype=object)))
    expected = collections.Counter(zip(words, routes.tolist()))
    assert {(w, int(k)): int(v) for w, k, v in partials[["word", "skewbench_worker", "value"]].itertuples(
        index=False)} == dict(expected)
    assert partials.groupby("word")["skewbench_worker"].nunique().max() == 2  # the hot words were split


# The example's query (its checkpoint and output folders, its split, its Balancer), whose driver dies after writing
# micro-batch FAIL_AT's partials and before Spark commits the batch: the restarted query runs that batch again.
DYING_JOB = """\
import operator, sys
from pyspark.sql import SparkSession, functions as F
from skewbench.spark import Balancer

texts, out, fail_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
spark = SparkSession.builder.config("spark.sql.shuffle.partitions", 4).getOrCreate()
lines = spark.readStream.option("maxFilesPerTrigger", 1).text(texts)
words = lines.select(F.explode(F.split("value", r"\\s+")).alias("word")).where("word != ''")
balancer = Balancer("word", scheme="pkg", workers=4, merge=operator.add, checkpoint=f"{out}/checkpoint")
partials = balancer.per_key(balancer.route(words), lambda word, rows, total: (total or 0) + len(rows), "bigint")


def commit(batch, batch_id):
    batch.write.mode("overwrite").parquet(f"{out}/counts/partials/batch={batch_id}")
    if batch_id == fail_at:
        raise RuntimeError(f"the driver dies after writing batch {batch_id}")


query = (partials.writeStream.outputMode("update").foreachBatch(commit).trigger(availableNow=True)
         .option("checkpointLocation", f"{out}/checkpoint/query").start())
try:
    query.awaitTermination()
except Exception:
    sys.exit(3)
"""


@pytest.mark.spark
def test_the_example_job_restarted_after_a_failure_counts_exactly_routes_as_the_simulator_and_keeps_its_scheme(
        spark_cluster, tmp_path):
    """The example's query dies after writing batch 1's partials (the offsets logged, the batch not committed);
    examples/balanced_wordcount.py, run as docs/spark-api.md runs it (spark-submit), goes on from that checkpoint:
    it runs batch 1 again from batch 0's saved routers, overwrites its partials and goes on — counts exact, the top
    ten printed, every word routed as the simulator routes the whole stream; a restart with another scheme is
    refused."""
    from skewbench.spark import merged

    words = [w for batch in texts(tmp_path / "texts", 3) for w in batch]
    job = tmp_path / "dying_job.py"
    job.write_text(DYING_JOB)
    died = submit(spark_cluster, job, tmp_path / "texts", tmp_path / "out", "1")
    assert died.returncode == 3, died.stdout[-3000:] + died.stderr[-3000:]
    assert (tmp_path / "out" / "checkpoint" / "routers" / "source-0-batch-1.pickle").exists()  # the dead attempt's
    done = submit(spark_cluster, EXAMPLE, tmp_path / "texts", tmp_path / "out", "--scheme", "pkg", "--workers", "4")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert merged(tmp_path / "out" / "counts", "word", sum_of).to_dict() == dict(collections.Counter(words))
    assert collections.Counter(words).most_common(1)[0][0] in done.stdout  # the top ten printed
    routed_as_the_simulator(tmp_path / "out" / "counts", words)

    refused = submit(spark_cluster, EXAMPLE, tmp_path / "texts", tmp_path / "out", "--scheme", "dchoices",
                     "--workers", "4")
    assert refused.returncode == 2 and "scheme 'pkg' -> 'dchoices'" in refused.stdout, refused.stdout[-2000:]


def sum_of(a, b):
    return a + b


TINY_API_STUDY = """\
kind: api
name: api-tiny
p1: [0.4]
schemes: [pkg]
workers: 2
sources: 2
keys: 100
cost_ms: 0.2
batch_rows: 2000
batches: 2
operators: [python]
"""


@pytest.mark.spark
def test_api_bench_measures_plain_and_balanced_operators_with_the_same_answer(spark_cluster, tmp_path):
    """`skewbench api-bench` on a tiny API study (the Python operator, no warm-up run): every run correct, one row
    per operator and way with its ratio to plain, the figure; the folder is never written twice."""
    import sys

    import pandas as pd

    study, out = tmp_path / "api-tiny.yaml", tmp_path / "api"
    study.write_text(TINY_API_STUDY)
    command = [sys.executable, "-m", "skewbench.cli", "api-bench", str(study), "--out", str(out), "--warm-up", "0"]
    env = {**os.environ, "SPARK_CONF_DIR": str(spark_cluster)}
    done = subprocess.run(command, cwd=ROOT, text=True, capture_output=True, timeout=900, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = pd.read_csv(out / "results.csv")
    assert (table["seed"] == 0).all()
    assert sorted(zip(table["operator"], table["way"])) == [("python", "pkg"), ("python", "plain")]
    assert "warm-up" not in done.stderr and not (out / "runs" / "warm-up").exists()  # --warm-up 0
    assert table["correct"].all() and (table["rows"] == 4000).all()
    assert (table.loc[table["way"] == "plain", "over_plain"] == 1.0).all()
    assert (table.loc[table["way"] == "pkg", "partials"] > table.loc[table["way"] == "plain", "partials"].max()).all()
    assert (out / "api.png").stat().st_size > 0 and (out / "results.csv.meta.json").exists()
    again = subprocess.run(command, cwd=ROOT, text=True, capture_output=True, timeout=120, env=env)
    assert again.returncode == 2 and "already exists" in again.stderr
