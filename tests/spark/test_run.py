"""`skewbench run` end to end on a local cluster, and its clear errors.

Fidelity: for kg, sg and pkg (S=2, W=4, a Zipf stream, shuffle and key split) the messages each Spark
worker stored equal the simulator's per-worker loads for the same stream, seed and split, exactly;
worker *i* ran on Spark partition *i*; word count's answer equals the single-process reference, also
for dchoices and llfd (fixed table fitted on a warm-up prefix).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD, MESSAGES, W, S = "zipf:z=1.2,keys=500", 3000, 4, 2


def skewbench(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "skewbench.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=ROOT)


CASES = [("kg", "shuffle"), ("sg", "shuffle"), ("pkg", "shuffle"), ("kg", "key"), ("sg", "key"), ("pkg", "key"),
         ("dchoices", "shuffle")]
CLUSTER_PYTHON = ROOT / ".venv-cluster" / "bin" / "python"


def config(scheme, split, out):
    return {"app": "wordcount", "scheme": scheme, "workers": W, "sources": S, "delay_ms": 0.05,
            "workload": WORKLOAD, "messages": MESSAGES, "batch_rows": MESSAGES // 2, "split": split, "out": str(out)}


@pytest.fixture(scope="module")
def runs(spark_cluster, tmp_path_factory):
    """The CASES in one Spark application (start-up paid once): {(scheme, split): result folder}."""
    folder = tmp_path_factory.mktemp("runs")
    files = []
    for scheme, split in CASES:
        files.append(folder / f"{scheme}-{split}.json")
        files[-1].write_text(json.dumps(config(scheme, split, folder / f"{scheme}-{split}")))
    done = subprocess.run([str(CLUSTER_PYTHON), "-m", "skewbench.bench.spark.run", *map(str, files)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT,
                          env={**os.environ, "SPARK_CONF_DIR": str(spark_cluster)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return {case: folder / f"{case[0]}-{case[1]}" for case in CASES}


def check_run(out: Path, scheme: str, split: str):
    summary = json.loads((out / "summary.json").read_text())
    assert summary["correct"] and summary["partitions_match_workers"], summary
    assert sum(summary["worker_messages"]) == MESSAGES
    assert (out / "run.meta.json").exists() and not (out / "INCOMPLETE").exists()
    if scheme in ("kg", "sg", "pkg"):
        from skewbench.simulator.engine import simulate
        from skewbench.workloads import parse

        sim = simulate(parse(WORKLOAD, messages=MESSAGES, seed=0), scheme, W, S, split=split, seed=0)
        assert summary["worker_messages"] == np.bincount(sim.routes, minlength=W).tolist()


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("scheme,split", CASES)
def test_wordcount_matches_simulator_and_reference(runs, scheme, split):
    check_run(runs[scheme, split], scheme, split)


@pytest.mark.spark
@pytest.mark.slow
def test_cli_run_with_a_fitted_table(spark_cluster, tmp_path):
    """Through the CLI from the project's venv (it re-executes itself in .venv-cluster): llfd."""
    out = tmp_path / "run"
    c = config("llfd", "shuffle", out)
    args = [a for k, v in c.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    done = skewbench("run", *args, env={"SPARK_CONF_DIR": str(spark_cluster)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "correct=True" in done.stdout and "messages 3,000 of 3,000" in done.stderr
    check_run(out, "llfd", "shuffle")


def test_unknown_app_is_a_usage_error(tmp_path):
    done = skewbench("run", "--app", "nope", "--scheme", "kg", "--workers", "2", "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "skewbench: error: unknown app 'nope'" in done.stderr, done.stderr
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.partial").exists()


def test_unreachable_master_is_a_usage_error(tmp_path):
    done = skewbench("run", "--app", "wordcount", "--scheme", "kg", "--workers", "2", "--messages", "1000",
                     "--master", "spark://127.0.0.254:7077", "--out", str(tmp_path / "x"), timeout=120)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("skewbench: error:") and ("unreachable" in last or "make cluster-up" in last), last
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.partial").exists()


def test_existing_out_is_refused(tmp_path):
    (tmp_path / "x").mkdir()
    done = skewbench("run", "--app", "wordcount", "--scheme", "kg", "--workers", "2", "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "exists" in done.stderr, done.stderr
    assert list((tmp_path / "x").iterdir()) == []


@pytest.mark.parametrize("scheme,message", [("pkg-global", "cannot share"), ("pkg-probe", "true worker loads"),
                                            ("nope", "unknown scheme")])
def test_unsupported_scheme_is_a_usage_error(tmp_path, scheme, message):
    done = skewbench("run", "--app", "wordcount", "--scheme", scheme, "--workers", "2", "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and message in done.stderr, done.stderr
