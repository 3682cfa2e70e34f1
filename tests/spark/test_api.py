"""examples/balanced_wordcount.py on the local cluster, as the README runs it (spark-submit): the counts of a
skewed stream equal a plain count, every word's partials sit on workers its scheme may send it to, the
routing is the simulator's exactly, a rerun on new files goes on from the checkpoint, and a restart with
another scheme is refused."""
import collections
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "balanced_wordcount.py"


def texts(folder: Path, files: int, first: int = 0, seed: int = 0) -> list[list[str]]:
    """``files`` text files of Zipf-skewed words (the hottest a fifth of the words), one per micro-batch."""
    rng, written = np.random.default_rng(seed + first), []
    folder.mkdir(exist_ok=True)
    for i in range(first, first + files):
        words = [f"w{k}" for k in np.minimum(rng.zipf(1.6, 3000), 400)]
        (folder / f"part-{i:03d}.txt").write_text("\n".join(" ".join(words[j:j + 12]) for j in range(0, 3000, 12)))
        written.append(words)
    return written


def submit(conf: Path, *args: str) -> subprocess.CompletedProcess:
    from skewbench.bench.spark.run import CLUSTER_PYTHON

    bin_dir = Path(CLUSTER_PYTHON).parent  # as after `. .venv-cluster/bin/activate`
    env = {**os.environ, "SPARK_CONF_DIR": str(conf), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["spark-submit", str(EXAMPLE), *args], cwd=ROOT, text=True, capture_output=True,
                          timeout=600, env=env)


@pytest.mark.spark
def test_the_example_job_counts_exactly_routes_as_the_simulator_and_keeps_its_scheme(spark_cluster, tmp_path):
    from skewbench.hashing import fingerprints
    from skewbench.scheme import make_scheme
    from skewbench.spark import merged

    batches = texts(tmp_path / "texts", 3)
    done = submit(spark_cluster, str(tmp_path / "texts"), str(tmp_path / "out"), "--scheme", "pkg", "--workers", "4")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    words = [w for batch in batches for w in batch]
    counts = merged(tmp_path / "out" / "counts", "word", sum_of)
    assert counts.to_dict() == dict(collections.Counter(words))
    assert collections.Counter(words).most_common(1)[0][0] in done.stdout  # the top ten printed

    # One file is one micro-batch of one partition, read in order: source 0's router routes every word as the
    # simulator's pkg routes the whole stream (its estimates carried from batch to batch), word for word.
    import pandas as pd

    partials = pd.read_parquet(tmp_path / "out" / "counts" / "partials")
    partials = partials.sort_values("batch").drop_duplicates(["word", "skewbench_worker"], keep="last")
    routes = make_scheme("pkg", workers=4).route_many(fingerprints(np.array(words, dtype=object)))
    expected = collections.Counter(zip(words, routes.tolist()))
    assert {(w, int(k)): int(v) for w, k, v in partials[["word", "skewbench_worker", "value"]].itertuples(
        index=False)} == dict(expected)
    assert partials.groupby("word")["skewbench_worker"].nunique().max() == 2  # the hot words were split

    texts(tmp_path / "texts", 1, first=3)  # a fourth file: the job goes on from its checkpoint
    again = submit(spark_cluster, str(tmp_path / "texts"), str(tmp_path / "out"), "--scheme", "pkg", "--workers", "4")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    all_words = words + texts(tmp_path / "copy", 1, first=3)[0]
    assert merged(tmp_path / "out" / "counts", "word", sum_of).to_dict() == dict(collections.Counter(all_words))

    refused = submit(spark_cluster, str(tmp_path / "texts"), str(tmp_path / "out"), "--scheme", "dchoices",
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
"""


@pytest.mark.spark
def test_api_bench_measures_plain_and_balanced_operators_with_the_same_answer(spark_cluster, tmp_path):
    """`skewbench api-bench` on a tiny API study: every run correct, one row per operator and way with its
    ratio to plain, the figure; the folder is never written twice."""
    import sys

    import pandas as pd

    study, out = tmp_path / "api-tiny.yaml", tmp_path / "api"
    study.write_text(TINY_API_STUDY)
    command = [sys.executable, "-m", "skewbench.cli", "api-bench", str(study), "--out", str(out)]
    env = {**os.environ, "SPARK_CONF_DIR": str(spark_cluster)}
    done = subprocess.run(command, cwd=ROOT, text=True, capture_output=True, timeout=900, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = pd.read_csv(out / "results.csv")
    assert sorted(zip(table["operator"], table["way"])) == [("python", "pkg"), ("python", "plain"),
                                                            ("sum", "pkg"), ("sum", "plain")]
    assert table["correct"].all() and (table["rows"] == 4000).all()
    assert (table.loc[table["way"] == "plain", "over_plain"] == 1.0).all()
    assert (table.loc[table["way"] == "pkg", "partials"] > table.loc[table["way"] == "plain", "partials"].max()).all()
    assert (out / "api.png").stat().st_size > 0 and (out / "results.csv.meta.json").exists()
    again = subprocess.run(command, cwd=ROOT, text=True, capture_output=True, timeout=120, env=env)
    assert again.returncode == 2 and "already exists" in again.stderr
