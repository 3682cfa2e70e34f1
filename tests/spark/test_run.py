"""`skewbench run` end to end on a local cluster, and its clear errors.

Fidelity: for kg, sg and pkg (S=2, W=4, a Zipf stream, shuffle and key split) the messages each Spark
worker stored equal the simulator's per-worker loads for the same stream, seed and split, exactly;
worker *i* ran on Spark partition *i* mod P (P = 2 tasks: the cluster's machine has 2 cores and the
``pack`` lever shares them among the W = 4 sleeping workers; P = W with the levers off); for word count
under every scheme the pipeline runs (adaptive ones with a table fitted on a warm-up prefix), and the
self-join and Naive Bayes under a scheme of each way of sending a key's copies (:data:`HOLDERS`), the
answer equals the single-process reference: word counts, self-join pairs, Naive Bayes model and accuracy
(probes to 1, 2 and W workers); pkg-probe and pkg-global, told the workers' true loads before every batch,
route as the simulator says.  Every run has every engine lever on but the key-split ones, which run Spark
as configured, and the CLI run, which has the default set: all give the same answers, and only Spark as
configured writes Hadoop's ``.crc`` files.  A run interrupted with Ctrl-C leaves only ``OUT.partial`` with
its INCOMPLETE marker.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD, MESSAGES, W, S = "zipf:z=1.2,keys=500", 3000, 4, 2


def skewbench(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "skewbench.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=ROOT)


def supported() -> list[str]:
    """Every registered scheme: the pipeline runs them all."""
    import skewbench.schemes  # noqa: F401  (registers them)
    from skewbench.scheme import REGISTRY

    return sorted(REGISTRY)


SCHEMES = supported()
# Word count under every scheme (its routing is the simulator's, exactly); the self-join and Naive Bayes under
# a scheme of each way of sending a key's copies — 1, 2, d or W holders, a table, load feedback, DKG's rings —
# as the bench's `matrix` study runs them under every scheme, checked against the reference.
# The newer schemes too, under every app (issue 23: each newer scheme under all three).
HOLDERS = ("kg", "pkg", "sg", "dchoices", "wchoices", "mixed", "pkg-probe", "dkg")
NEWER = ("cm", "lm", "am", "cam", "cg", "dalton", "pstream")
CASES = ([("wordcount", scheme, "shuffle") for scheme in SCHEMES]
         + [(app, scheme, "shuffle") for app in ("selfjoin", "naivebayes") for scheme in HOLDERS + NEWER]
         + [("wordcount", scheme, "key") for scheme in ("kg", "sg", "pkg")])
APP_WORKLOADS = {"wordcount": WORKLOAD, "selfjoin": "ticks:symbols=200", "naivebayes": "docs:classes=4"}
CLUSTER_PYTHON = ROOT / ".venv-cluster" / "bin" / "python"
PARAMS = "vnodes=3"  # consistent hashing with 3 points per worker instead of 1,000: other workers
EXTRA = {"aggregation": {"batch_rows": MESSAGES // 6, "aggregation_period": 2},  # pkg runs of their own tests
         "rate": {"rate": 1500.0, "batch_rows": MESSAGES},
         "slow": {"scheme": "pkg-global", "slow": "1@0.5", "batch_rows": MESSAGES // 4}}  # worker 0 at half speed


def config(scheme, split, out, app="wordcount"):
    return {"app": app, "scheme": scheme, "workers": W, "sources": S, "delay_ms": 0.05,
            "workload": APP_WORKLOADS[app], "messages": MESSAGES, "batch_rows": MESSAGES // 2, "split": split,
            "levers": "none" if split == "key" else "all", "out": str(out)}


@pytest.fixture(scope="module")
def runs(spark_cluster, tmp_path_factory):
    """The CASES in one Spark application (start-up paid once): {(app, scheme, split): result folder}."""
    folder = tmp_path_factory.mktemp("runs")
    files = []
    for app, scheme, split in CASES:
        files.append(folder / f"{app}-{scheme}-{split}.json")
        files[-1].write_text(json.dumps(config(scheme, split, folder / f"{app}-{scheme}-{split}", app)))
    files.append(folder / "params.json")  # a scheme's parameters reach the executors' routers
    files[-1].write_text(json.dumps(config("consistent", "shuffle", folder / "params") | {"params": PARAMS}))
    for name, changes in EXTRA.items():
        files.append(folder / f"{name}.json")
        files[-1].write_text(json.dumps(config("pkg", "shuffle", folder / name) | changes))
    done = subprocess.run([str(CLUSTER_PYTHON), "-m", "skewbench.bench.spark.run", *map(str, files)],
                          capture_output=True, text=True, timeout=2400, cwd=ROOT,
                          env={**os.environ, "SPARK_CONF_DIR": str(spark_cluster)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return {case: folder / "-".join(case) for case in CASES} | {name: folder / name for name in ["params", *EXTRA]}


def check_run(out: Path, scheme: str, split: str, app: str = "wordcount"):
    summary = json.loads((out / "summary.json").read_text())
    assert summary["correct"] and summary["partitions_match_workers"], summary
    assert (out / "run.meta.json").exists() and not (out / "INCOMPLETE").exists()
    assert summary["engine"]["tasks"] >= W and (out / "stages.parquet").exists(), summary["engine"]
    assert {"executor", "python_worker"} <= set(summary["resources"]), summary["resources"]
    meta = json.loads((out / "run.meta.json").read_text())["config"]
    levers = summary["levers"].split("+")
    deferred = summary["worker_tasks"] < W and bool({"all", "defer-sleep"} & set(levers))  # a closing group per task
    assert meta["closing_groups"] == (summary["worker_tasks"] if deferred else 0), meta
    batches = pd.read_parquet(out / "batches.parquet")  # no batch ends before its busiest worker's work does
    assert (batches["duration"] >= batches["max_worker_busy"] - 0.01).all(), batches
    checksums = list((out / "checkpoint").rglob("*.crc"))  # none with the no-crc / no-fork levers
    assert bool(checksums) == (summary["levers"] == "none"), summary["levers"]
    state_files = list((out / "checkpoint" / "state").rglob("*.delta"))
    assert state_files and {p.stat().st_mode & 0o777 for p in state_files} == {0o644}  # no-fork's chmod too
    if app == "wordcount":  # the periodic top-k ends at the reference's top-k
        from skewbench.bench.apps import make_app
        from skewbench.workloads import parse

        top = pd.read_parquet(out / "periodic.parquet")
        final = top[top.batch == top.batch.max()].set_index("key")["count"]
        wordcount = make_app("wordcount")
        expected = wordcount.top(wordcount.reference(parse(WORKLOAD, messages=MESSAGES, seed=0)))
        assert final.index.tolist() == expected.index.tolist() and final.tolist() == expected.tolist()
    if app == "wordcount" and scheme in ("kg", "sg", "pkg", *NEWER):
        assert sum(summary["worker_messages"]) == MESSAGES
        from skewbench.simulator.engine import simulate
        from skewbench.workloads import parse

        sim = simulate(parse(WORKLOAD, messages=MESSAGES, seed=0), scheme, W, S, split=split, seed=0)
        assert summary["worker_messages"] == np.bincount(sim.routes, minlength=W).tolist()


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("app,scheme,split", CASES)
def test_run_matches_simulator_and_reference(runs, app, scheme, split):
    check_run(runs[app, scheme, split], scheme, split, app)
    levers = json.loads((runs[app, scheme, split] / "summary.json").read_text())["levers"]
    assert levers == ("none" if split == "key" else "all")


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["pkg-probe", "pkg-global"])
def test_the_true_loads_reach_the_sources_as_the_simulator_says(runs, scheme):
    """Load feedback: each source's estimates are set to the workers' true loads before every batch; the
    per-worker counts equal the simulator's with the same feedback, and differ from pkg's own estimates."""
    from skewbench.bench.prediction import simulate_point
    from skewbench.bench.studyfile import Point

    summary = json.loads((runs["wordcount", scheme, "shuffle"] / "summary.json").read_text())
    point = Point(study="t", app="wordcount", scheme=scheme, workers=W, sources=S, delay_ms=0.05,
                  workload=WORKLOAD, messages=MESSAGES, batch_rows=MESSAGES // 2, rate=0.0, aggregation_period=0,
                  split="shuffle", seed=0)
    assert summary["correct"] and summary["worker_messages"] == simulate_point(point).store.sum(0).tolist()
    pkg = json.loads((runs["wordcount", "pkg", "shuffle"] / "summary.json").read_text())
    assert summary["worker_messages"] != pkg["worker_messages"]


@pytest.mark.spark
@pytest.mark.slow
def test_a_schemes_parameters_route_as_the_simulator_says(runs):
    from skewbench.bench.prediction import simulate_point
    from skewbench.bench.studyfile import Point

    summary = json.loads((runs["params"] / "summary.json").read_text())
    point = Point(study="t", app="wordcount", scheme="consistent", workers=W, sources=S, delay_ms=0.05,
                  workload=WORKLOAD, messages=MESSAGES, batch_rows=MESSAGES // 2, rate=0.0, aggregation_period=0,
                  split="shuffle", seed=0, params=PARAMS)
    assert summary["correct"] and summary["worker_messages"] == simulate_point(point).store.sum(0).tolist()
    default = json.loads((runs["wordcount", "consistent", "shuffle"] / "summary.json").read_text())
    assert summary["worker_messages"] != default["worker_messages"]


@pytest.mark.spark
@pytest.mark.slow
def test_a_slow_worker_burns_twice_the_delay_and_is_told_as_its_time(runs):
    """--slow 1@0.5: worker 0's injected delay per copy is twice the others', and pkg-global, told the workers'
    busy time, sends it fewer messages than any other, exactly as the simulator says."""
    from skewbench.bench.prediction import simulate_point
    from skewbench.bench.studyfile import Point

    out = runs["slow"]
    check_run(out, "pkg-global", "shuffle")
    summary = json.loads((out / "summary.json").read_text())
    point = Point(study="t", app="wordcount", scheme="pkg-global", workers=W, sources=S, delay_ms=0.05,
                  workload=WORKLOAD, messages=MESSAGES, batch_rows=MESSAGES // 4, rate=0.0, aggregation_period=0,
                  split="shuffle", seed=0, slow="1@0.5")
    assert summary["worker_messages"] == simulate_point(point).store.sum(0).tolist()
    assert summary["worker_messages"][0] < min(summary["worker_messages"][1:]), summary["worker_messages"]
    rows = pd.concat(pd.read_parquet(p) for p in (out / "metrics").glob("*.parquet"))
    per_copy = rows.groupby("worker")[["delay_intended", "stored", "probed"]].sum()
    per_copy = per_copy["delay_intended"] / (per_copy["stored"] + per_copy["probed"])
    assert per_copy.loc[0] == pytest.approx(1e-4) and per_copy.drop(0).to_numpy() == pytest.approx(5e-5)
    assert json.loads((out / "run.meta.json").read_text())["config"]["config"]["slow"] == "1@0.5"


@pytest.mark.spark
@pytest.mark.slow
def test_probes_reach_one_two_or_every_worker(runs):
    """Naive Bayes queries probe 1 worker under kg, 2 under pkg and all W under sg."""
    probes = {s: sum(json.loads((runs["naivebayes", s, "shuffle"] / "summary.json").read_text())["worker_probes"])
              for s in ("kg", "pkg", "sg")}
    assert probes["kg"] > 0 and probes["pkg"] == 2 * probes["kg"] and probes["sg"] == W * probes["kg"], probes


@pytest.mark.spark
@pytest.mark.slow
def test_ctrl_c_leaves_an_incomplete_run(spark_cluster, tmp_path):
    out = tmp_path / "run"
    c = config("pkg", "shuffle", out) | {"messages": 200_000, "batch_rows": 2000}
    args = [a for k, v in c.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    proc = subprocess.Popen([str(CLUSTER_PYTHON), "-m", "skewbench.cli", "run", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "SPARK_CONF_DIR": str(spark_cluster)})
    for line in proc.stderr:  # interrupt once batches flow
        if line.startswith("messages ") and not line.startswith("messages 0 "):
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err[-3000:]
    assert "interrupted" in err and not out.exists()
    assert (tmp_path / "run.partial" / "INCOMPLETE").exists()


@pytest.mark.spark
@pytest.mark.slow
def test_cli_run_with_a_fitted_table(spark_cluster, tmp_path):
    """Through the CLI from the project's venv (it re-executes itself in .venv-cluster): llfd."""
    out = tmp_path / "run"
    c = config("llfd", "shuffle", out)
    del c["levers"]  # the default set
    args = [a for k, v in c.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    done = skewbench("run", *args, env={"SPARK_CONF_DIR": str(spark_cluster)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "correct=True" in done.stdout and "messages 3,000 of 3,000" in done.stderr
    check_run(out, "llfd", "shuffle")
    summary = json.loads((out / "summary.json").read_text())
    packed = W if summary["delay_mode"] == "spin" else min(W, os.cpu_count())  # a task per core, W = 4 sleeping
    assert summary["levers"] == "fs-checkpoints+no-crc+pack+defer-sleep" and summary["worker_tasks"] == packed


@pytest.mark.spark
@pytest.mark.slow
def test_aggregation_period_gives_the_answer_with_fewer_counters(runs):
    """--aggregation-period 2: partial counts every other micro-batch, the rest after the last message;
    the same answer and top-k, and fewer counters held on average than pkg keeping all of them."""
    check_run(runs["aggregation"], "pkg", "shuffle")
    flushed = json.loads((runs["aggregation"] / "summary.json").read_text())["counters_mean"]
    kept = json.loads((runs[("wordcount", "pkg", "shuffle")] / "summary.json").read_text())["counters_mean"]
    assert 0 < flushed < kept


@pytest.mark.spark
@pytest.mark.slow
def test_open_loop_rate_paces_the_input(runs):
    """--rate 1500: 3000 messages take at least 2 s, intended times are seq / rate apart."""
    summary = json.loads((runs["rate"] / "summary.json").read_text())
    assert summary["correct"] and summary["elapsed_seconds"] >= MESSAGES / 1500 * 0.95
    assert summary["throughput_msgs_per_s"] <= 1500 * 1.2, summary


@pytest.mark.spark
def test_more_workers_than_slots_is_a_usage_error(spark_cluster, tmp_path):
    done = skewbench("run", "--app", "wordcount", "--scheme", "kg", "--workers", "50", "--messages", "1000",
                     "--out", str(tmp_path / "x"), env={"SPARK_CONF_DIR": str(spark_cluster)})
    assert done.returncode == 2 and "exceeds the 4 free task slots" in done.stderr, done.stderr
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.partial").exists()


@pytest.mark.spark
def test_missing_java_is_a_usage_error(spark_cluster, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"} | {"PATH": "/nonexistent",
                                                                        "SPARK_CONF_DIR": str(spark_cluster)}
    done = subprocess.run([str(CLUSTER_PYTHON), "-m", "skewbench.cli", "run", "--app", "wordcount", "--scheme", "kg",
                           "--workers", "2", "--messages", "1000", "--out", str(tmp_path / "x")],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 2 and "Java is missing" in done.stderr, done.stderr
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.partial").exists()


def test_malformed_workload_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "words.csv"
    bad.write_text("word,count\nfoo,1\n")
    done = skewbench("run", "--app", "wordcount", "--scheme", "kg", "--workers", "2", "--out", str(tmp_path / "x"),
                     "--workload", f"file:path={bad},key=nope")
    assert done.returncode == 2 and "nope" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.partial").exists()


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


@pytest.mark.parametrize("app,period,message", [("selfjoin", "2", "applies to wordcount, not selfjoin"),
                                                ("wordcount", "-1", "must be an integer in 0..1,000,000")])
def test_bad_aggregation_period_is_a_usage_error(tmp_path, app, period, message):
    done = skewbench("run", "--app", app, "--scheme", "kg", "--workers", "2", "--aggregation-period", period,
                     "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.partial").exists()


def test_a_bad_speed_profile_is_a_usage_error(tmp_path):
    done = skewbench("run", "--app", "wordcount", "--scheme", "kg", "--workers", "2", "--slow", "3@0.5",
                     "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "--slow: speed profile '3@0.5' names 3 slow workers" in done.stderr, done.stderr
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.partial").exists()


def test_existing_out_is_refused(tmp_path):
    (tmp_path / "x").mkdir()
    done = skewbench("run", "--app", "wordcount", "--scheme", "kg", "--workers", "2", "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "exists" in done.stderr, done.stderr
    assert list((tmp_path / "x").iterdir()) == []


@pytest.mark.parametrize("scheme,rate,message", [("nope", "0", "unknown scheme"), ("pkg-probe", "-5", "--rate: must be a number in 0..")])
def test_unsupported_scheme_or_rate_is_a_usage_error(tmp_path, scheme, rate, message):
    done = skewbench("run", "--app", "wordcount", "--scheme", scheme, "--workers", "2", "--rate", rate,
                     "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and message in done.stderr and not (tmp_path / "x").exists(), done.stderr


# -- skewbench profile: one run, and the CPU of every Spark thread over it ------------------------------

ROLES = {"driver", "driver_python", "executor", "python"}


@pytest.mark.spark
@pytest.mark.slow
def test_profile_splits_the_runs_cpu_by_role_and_thread(spark_cluster, tmp_path):
    out = tmp_path / "profile"
    done = skewbench("profile", "--app", "wordcount", "--scheme", "sg", "--workers", "4", "--messages", "8000",
                     "--batch-rows", "1000", "--levers", "none", "--out", str(out),
                     env={"SPARK_CONF_DIR": str(spark_cluster)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert json.loads((out / "run" / "summary.json").read_text())["correct"]
    threads = pd.read_csv(out / "threads.csv")
    seconds = threads.groupby("role")["seconds"].sum()
    assert set(seconds.index) == ROLES and (seconds > 0).all(), seconds
    tasks = threads[threads["thread"].str.startswith("Executor task")]  # the kernel keeps 15 characters of a name
    assert len(tasks) == 1 and tasks["seconds"].iloc[0] > 0  # one row: the numbers are folded
    assert threads["share"].sum() == pytest.approx(1.0) and "CPU of the steady batches (7)" in done.stdout
    if shutil.which("perf") and (out / "execs.csv").exists():  # without the levers Hadoop forks chmod per file
        execs = pd.read_csv(out / "execs.csv").set_index("program")["count"]
        assert execs.get("chmod", 0) > 0, execs


def test_profile_refuses_an_existing_out(tmp_path):
    (tmp_path / "p").mkdir()
    done = skewbench("profile", "--app", "wordcount", "--scheme", "sg", "--workers", "2", "--out", str(tmp_path / "p"))
    assert done.returncode == 2 and "exists" in done.stderr, done.stderr
    assert list((tmp_path / "p").iterdir()) == []
