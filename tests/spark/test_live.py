"""Live routing on the local cluster (issue 21): adaptive schemes rebalancing while the stream runs, W
changing during a run, and the keys' state moving exactly once — every app's answer equals the
reference, every message goes to the worker the simulator (with the same micro-batches) sends it to,
and the run's summary and timeline count the migrations.  Bad live options are usage errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from skewbench.migration import moves_state

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_PYTHON = ROOT / ".venv-cluster" / "bin" / "python"

FLUCTUATING = "fzipf:z=1.2,keys=400,f=0.5,intervals=30"
BASE = {"workers": 4, "sources": 2, "delay_ms": 0.05, "workload": FLUCTUATING, "messages": 4400, "batch_rows": 100}
KILLED = "kg-killed"  # an executor JVM gets SIGKILL while this run's state is in flight (test below)
CASES = {  # name: the run's options beyond BASE.  A rebalancing run needs 42 micro-batches for 20 migrations
    "mixed-wordcount": {"app": "wordcount", "scheme": "mixed", "rebalance_every": 1},
    "readj-selfjoin": {"app": "selfjoin", "scheme": "gedik-readj", "rebalance_every": 2},
    "mixed-naivebayes": {"app": "naivebayes", "scheme": "mixed", "rebalance_every": 2},
    "mixed-ahead": {"app": "selfjoin", "scheme": "mixed", "rebalance_every": 1, "handover": "ahead"},
    "kg-in-out": {"app": "wordcount", "scheme": "kg", "schedule": "5:3,12:4", "messages": 2000},
    "consistent-in-out": {"app": "wordcount", "scheme": "consistent", "schedule": "5:3,12:4", "messages": 2000},
    "kg-fluid": {"app": "selfjoin", "scheme": "kg", "schedule": "5:3", "migration": "fluid", "fluid_keys": 10,
                 "messages": 2000},
    "pkg-in-out": {"app": "selfjoin", "scheme": "pkg", "schedule": "5:3,12:4", "messages": 2000},  # nothing moves
    # told the workers' loads before every batch (bench/spark/feedback.py) while W changes; a query also probes
    # the holders its word will have (skewbench.migration.Live.holders_ahead)
    "probe-naivebayes": {"app": "naivebayes", "scheme": "pkg-probe", "workers": 3, "schedule": "5:4,12:2",
                         "messages": 2000},
    "global-in-out": {"app": "wordcount", "scheme": "pkg-global", "schedule": "5:3,12:4", "messages": 2000},
    # offered open loop, 1 s of stream: micro-batches of batch_rows still, each once its last message has come
    "kg-rate": {"app": "wordcount", "scheme": "kg", "schedule": "5:3,12:4", "messages": 2000, "rate": 2000},
    KILLED: {"app": "selfjoin", "scheme": "kg", "workers": 3, "schedule": "4:4", "delay_ms": 2, "messages": 6000,
             "batch_rows": 600},  # last: the executor it loses is replaced, but for no later run
}


def config(name: str) -> dict:
    return {**BASE, **CASES[name]}


@pytest.fixture(scope="module")
def live_runs(spark_cluster, tmp_path_factory):
    """The CASES in one Spark application: ({name: result folder}, when the executor was killed)."""
    folder = tmp_path_factory.mktemp("live")
    files = []
    for name in CASES:
        files.append(folder / f"{name}.json")
        files[-1].write_text(json.dumps({**config(name), "out": str(folder / name)}))
    runs = subprocess.Popen([str(CLUSTER_PYTHON), "-m", "skewbench.bench.spark.run", *map(str, files)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "SPARK_CONF_DIR": str(spark_cluster)})
    # Batch 4 routes with the version that moves keys; its parcels are written under batch 5, which installs them.
    parcels = folder / f"{KILLED}.partial" / "checkpoint" / "routing" / "parcels-000005.pickle"
    deadline = time.monotonic() + 1800
    while not parcels.exists() and runs.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    killed_at = time.time()
    if runs.poll() is None:
        os.kill(executor_pids(spark_cluster.parent.parent)[0], signal.SIGKILL)
    stdout, stderr = runs.communicate(timeout=1800)
    assert runs.returncode == 0, stdout[-2000:] + stderr[-4000:]
    return {name: folder / name for name in CASES}, killed_at


def simulated(name: str):
    """The simulated run of CASES[name] and every worker's stored and probe copies in it."""
    from skewbench.bench.apps import make_app
    from skewbench.bench.prediction import live_copies, simulate_live
    from skewbench.migration import Live, parse_schedule
    from skewbench.workloads import parse

    c = config(name)
    app = make_app(c["app"])
    live = Live(c["batch_rows"], c.get("rebalance_every", 0), parse_schedule(c["schedule"]) if "schedule" in c else {},
                c.get("migration", "all-at-once"), c.get("fluid_keys", 0), c.get("handover", "hold"),
                app.probes_read_final_state)
    stream = app.prepare(parse(FLUCTUATING, messages=c["messages"], seed=0))
    sim = simulate_live(app, stream, c["scheme"], c["workers"], c["sources"], live)
    store, probe, _ = live_copies(app, stream, sim, live, live.widest(c["workers"]))
    return sim, store.sum(0), probe.sum(0)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_live_runs_are_exact_and_route_as_simulated(live_runs, name):
    out = live_runs[0][name]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["correct"], summary
    timeline = pd.read_parquet(out / "timeline.parquet")
    assert len(timeline) == config(name)["messages"] // config(name)["batch_rows"]
    assert timeline["duplicates"].sum() == 0  # no parcel installed twice, not even after the kill
    assert {"latency_p99", "latency_max", "max_over_mean", "moved_bytes", "plan_seconds"} <= set(timeline.columns)
    sim, stored, probed = simulated(name)
    assert summary["versions"] == len(sim.versions) and summary["migrated_keys"] == sim.row["migrated_keys"]
    if moves_state(sim.versions[0].router):
        assert summary["migrated_bytes"] > 0 and len(summary["migration_list"]) == summary["migrations"]
        assert all(m["seconds"] > 0 and m["keys"] > 0 for m in summary["migration_list"]), summary["migration_list"]
        assert summary["migrated_keys"] > 0
    else:  # each key's partial state stays where it is
        assert summary["migrations"] == summary["migrated_bytes"] == summary["migrated_keys"] == 0
    assert summary["worker_messages"] == stored.tolist() and summary["worker_probes"] == probed.tolist()
    assert timeline["version"].tolist() == [max(v.number for v in sim.versions if v.first_batch <= b)
                                            for b in range(len(timeline))]
    if "rebalance_every" in CASES[name]:
        assert summary["migrations"] >= 20
    if CASES[name].get("handover") == "ahead":
        assert timeline["held"].max() == 0  # the state was handed over the batch before: no row waits
    elif "rebalance_every" in CASES[name]:
        assert timeline["held"].max() > 0  # rows did wait for their key's state


@pytest.mark.spark
@pytest.mark.slow
def test_consistent_hashing_moves_fewer_keys_than_kg_on_the_same_schedule(live_runs):
    moved = {name: json.loads((live_runs[0][name] / "summary.json").read_text())["migrated_keys"]
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
def test_an_executor_killed_while_state_is_in_flight_changes_no_answer(live_runs):
    """kg scales out 3 -> 4 at batch 4 (the test cluster has 4 slots); once the workers' parcels are out
    (written under batch 5) and not yet installed, an executor JVM gets SIGKILL.  Spark reruns its tasks from
    the committed state and the offsets, which name the version and the batch: the answer is exact (above,
    with the other runs), nothing is installed twice, and the batches' times show that the kill landed
    inside the migration."""
    folders, killed_at = live_runs
    summary = json.loads((folders[KILLED] / "summary.json").read_text())
    assert summary["correct"] and summary["migrations"] == 1, summary
    migration = summary["migration_list"][0]
    assert (migration["first_batch"], migration["last_batch"]) == (4, 5)
    batches = pd.read_parquet(folders[KILLED] / "batches.parquet").set_index("batch")
    began, ended = batches.loc[4, "started"], batches.loc[5, "started"] + batches.loc[5, "duration"]
    assert began <= killed_at <= ended, (began, killed_at, ended)  # after the hand-over, before the install


@pytest.mark.parametrize("options, message", [
    (["--scheme", "kg", "--rebalance-every", "2"], "cannot rebalance"),
    (["--scheme", "mixed", "--rebalance-every", "-1"], "--rebalance-every: must be an integer in 0..1,000,000"),
    (["--scheme", "kg", "--schedule", "0:4"], "outside the run's batches"),
    (["--scheme", "kg", "--schedule", "3:0"], "W must be >= 1"),
    (["--scheme", "kg", "--schedule", "3-4"], "BATCH:W pairs"),
    (["--scheme", "kg", "--schedule", "3:4", "--migration", "fluid"], "limit of keys"),
    (["--scheme", "kg", "--migration", "fluid", "--fluid-keys", "5"], "need --rebalance-every or --schedule"),
    (["--scheme", "kg", "--handover", "ahead"], "need --rebalance-every or --schedule"),
    (["--scheme", "kg", "--schedule", "1:4", "--handover", "ahead"], "with the hand-over ahead"),
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
