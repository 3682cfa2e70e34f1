"""Live routing on the local cluster (issue 21): adaptive schemes rebalancing while the stream runs, W
changing during a run, and the keys' state moving exactly once — every app's answer equals the
reference, every message goes to the worker the simulator (with the same micro-batches) sends it to,
and the run's summary and timeline count the migrations.  Bad live options are usage errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_PYTHON = ROOT / ".venv-cluster" / "bin" / "python"

FLUCTUATING = "fzipf:z=1.2,keys=400,f=0.5,intervals=30"
MESSAGES, BATCH, W, S = 4400, 100, 4, 2  # 44 micro-batches
CASES = {  # name: (app, scheme, live options)
    "mixed-wordcount": ("wordcount", "mixed", {"rebalance_every": 1}),
    "readj-selfjoin": ("selfjoin", "gedik-readj", {"rebalance_every": 2}),
    "mixed-naivebayes": ("naivebayes", "mixed", {"rebalance_every": 2}),
    "kg-in-out": ("wordcount", "kg", {"schedule": "5:3,12:4", "messages": 2000}),
    "consistent-in-out": ("wordcount", "consistent", {"schedule": "5:3,12:4", "messages": 2000}),
    "kg-fluid": ("selfjoin", "kg", {"schedule": "5:3", "migration": "fluid", "fluid_keys": 10, "messages": 2000}),
}  # (a rebalancing case needs 42 micro-batches for 20 migrations: one batch in flight after each)


@pytest.fixture(scope="module")
def live_runs(spark_cluster, tmp_path_factory):
    """The CASES in one Spark application: {name: result folder}."""
    folder = tmp_path_factory.mktemp("live")
    files = []
    for name, (app, scheme, options) in CASES.items():
        config = {"app": app, "scheme": scheme, "workers": W, "sources": S, "delay_ms": 0.05,
                  "workload": FLUCTUATING, "messages": MESSAGES, "batch_rows": BATCH, "out": str(folder / name),
                  **options}
        files.append(folder / f"{name}.json")
        files[-1].write_text(json.dumps(config))
    done = subprocess.run([str(CLUSTER_PYTHON), "-m", "skewbench.bench.spark.run", *map(str, files)],
                          capture_output=True, text=True, timeout=2400, cwd=ROOT,
                          env={**os.environ, "SPARK_CONF_DIR": str(spark_cluster)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return {name: folder / name for name in CASES}


def simulated(name: str):
    from skewbench.migration import Live, parse_schedule
    from skewbench.simulator import simulate
    from skewbench.workloads import parse

    _, scheme, options = CASES[name]
    schedule = parse_schedule(options["schedule"]) if "schedule" in options else {}
    live = Live(BATCH, options.get("rebalance_every", 0), schedule, options.get("migration", "all-at-once"),
                options.get("fluid_keys", 0))
    return simulate(parse(FLUCTUATING, messages=options.get("messages", MESSAGES), seed=0), scheme, W, S, live=live)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_live_runs_are_exact_and_route_as_simulated(live_runs, name):
    out = live_runs[name]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["correct"], summary
    timeline = pd.read_parquet(out / "timeline.parquet")
    assert len(timeline) == CASES[name][2].get("messages", MESSAGES) // BATCH and timeline["duplicates"].sum() == 0
    assert {"latency_p99", "latency_max", "max_over_mean", "moved_bytes", "plan_seconds"} <= set(timeline.columns)
    assert summary["migrated_bytes"] > 0 and len(summary["migration_list"]) == summary["migrations"]
    assert all(m["seconds"] > 0 and m["keys"] > 0 for m in summary["migration_list"]), summary["migration_list"]
    sim = simulated(name)
    assert summary["migrated_keys"] == sim.row["migrated_keys"] > 0
    assert summary["versions"] == len(sim.versions)
    width = len(summary["worker_messages"])
    handled = np.add(summary["worker_messages"], summary["worker_probes"])  # a query is a probe, not stored
    assert handled.tolist() == np.bincount(sim.routes, minlength=width).tolist()
    assert timeline["version"].tolist() == [max(v.number for v in sim.versions if v.first_batch <= b)
                                            for b in range(len(timeline))]
    if CASES[name][1] in ("mixed", "gedik-readj"):
        assert summary["migrations"] >= 20
        assert timeline["held"].max() > 0  # rows did wait for their key's state


@pytest.mark.spark
@pytest.mark.slow
def test_consistent_hashing_moves_fewer_keys_than_kg_on_the_same_schedule(live_runs):
    moved = {name: json.loads((live_runs[name] / "summary.json").read_text())["migrated_keys"]
             for name in ("kg-in-out", "consistent-in-out")}
    assert moved["consistent-in-out"] < moved["kg-in-out"] / 2, moved


def executor_pids(cluster: Path) -> list[int]:
    """The executor JVMs of the test's own cluster (their working folders are under it)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and b"CoarseGrainedExecutorBackend" in (proc / "cmdline").read_bytes() \
                    and os.readlink(proc / "cwd").startswith(str(cluster)):
                found.append(int(proc.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


@pytest.mark.spark
@pytest.mark.slow
def test_an_executor_killed_while_state_is_in_flight_changes_no_answer(spark_cluster, tmp_path):
    """kg scales out 3 -> 4 at batch 4 (the test cluster has 4 slots); once the workers' parcels are out
    (written under batch 5) and not yet installed, an executor JVM gets SIGKILL.  Spark reruns its tasks from
    the committed state and the offsets, which name the version and the batch: the answer is exact, nothing
    is installed twice, and the batches' times show that the kill landed inside the migration."""
    out = tmp_path / "killed"
    env = {**os.environ, "SPARK_CONF_DIR": str(spark_cluster)}
    run = subprocess.Popen([sys.executable, "-m", "skewbench.cli", "run", "--app", "selfjoin", "--scheme", "kg",
                            "--workers", "3", "--sources", "2", "--delay-ms", "2", "--workload", FLUCTUATING,
                            "--messages", "6000", "--batch-rows", "600", "--schedule", "4:4", "--out", str(out)],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    parcels = out.with_name(out.name + ".partial") / "checkpoint" / "routing" / "parcels-000005.pickle"
    deadline = time.monotonic() + 900
    while not parcels.exists():
        assert run.poll() is None and time.monotonic() < deadline, run.stderr.read()[-3000:] if run.stderr else ""
        time.sleep(0.05)
    victims = executor_pids(spark_cluster.parent.parent)
    killed_at = time.time()
    os.kill(victims[0], signal.SIGKILL)
    stdout, stderr = run.communicate(timeout=900)
    assert run.returncode == 0, stdout[-2000:] + stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["correct"] and summary["migrations"] == 1, summary
    migration = summary["migration_list"][0]
    assert (migration["first_batch"], migration["last_batch"]) == (4, 5)
    batches = pd.read_parquet(out / "batches.parquet").set_index("batch")
    began, ended = batches.loc[4, "started"], batches.loc[5, "started"] + batches.loc[5, "duration"]
    assert began <= killed_at <= ended, (began, killed_at, ended)  # after the hand-over, before the install
    assert pd.read_parquet(out / "timeline.parquet")["duplicates"].sum() == 0


@pytest.mark.parametrize("options, message", [
    (["--scheme", "kg", "--rebalance-every", "2"], "cannot rebalance"),
    (["--scheme", "mixed", "--rebalance-every", "-1"], ">= 1 micro-batches"),
    (["--scheme", "kg", "--schedule", "0:4"], "outside the run's batches"),
    (["--scheme", "kg", "--schedule", "3:0"], "W must be >= 1"),
    (["--scheme", "kg", "--schedule", "3-4"], "BATCH:W pairs"),
    (["--scheme", "kg", "--schedule", "3:4", "--migration", "fluid"], "limit of keys"),
    (["--scheme", "kg", "--migration", "fluid", "--fluid-keys", "5"], "need --rebalance-every or --schedule"),
    (["--scheme", "pkg", "--schedule", "3:4"], "splits keys"),
    (["--scheme", "kg", "--schedule", "3:4", "--rate", "1000"], "--rate 0"),
])
def test_bad_live_options_are_usage_errors(tmp_path, capsys, options, message):
    from skewbench.cli import main

    code = main(["run", "--app", "wordcount", "--workers", "2", "--messages", "2000", "--batch-rows", "200", *options,
                 "--out", str(tmp_path / "x")])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.partial").exists()


@pytest.mark.spark
def test_the_spark_path_routes_and_moves_state_exactly_without_a_cluster(spark_cluster):
    """The source, the worker function and the driver's Publisher called as Spark calls them
    (tests/spark/live_path.py, in the cluster's interpreter): quick to rerun while changing them."""
    done = subprocess.run([str(CLUSTER_PYTHON), str(ROOT / "tests" / "spark" / "live_path.py")], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
