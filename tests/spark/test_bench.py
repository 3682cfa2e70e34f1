"""`skewbench bench` end to end on a local cluster: study files in, one checked and predicted row per run
out (a run through the broker too); interrupted with Ctrl-C and resumed, it gives the plan's rows exactly
once, never re-running a complete run; a resume with other studies or a finished bench is refused."""
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
CALIBRATION = """\
name: cal
engine: true
apps: [wordcount, selfjoin]
schemes: sg
workers: [4, 2]
sources: [1, 2]
delay_ms: 0
batch_rows_per_worker: 400
batches: 3
design: around
"""
MEASURED = """\
name: tiny
apps: wordcount
schemes: [kg, pkg]
workers: 4
sources: 2
delay_ms: 0.2
workloads: ["zipf:z=1.2,keys=2000"]
messages: 6000
batch_rows: 2000
"""
# The same stream at an offered rate, generated in Spark's source and sent by locust through the broker.
THROUGH_THE_BROKER = """\
include:
  - {apps: wordcount, schemes: pkg, rate: 3000, ingest: [engine, locust]}
"""


def studies(tmp_path: Path) -> list[str]:
    paths = [tmp_path / "cal.yaml", tmp_path / "tiny.yaml"]
    for path, text in zip(paths, (CALIBRATION, MEASURED + THROUGH_THE_BROKER)):
        path.write_text(textwrap.dedent(text))
    return [str(p) for p in paths]


# An engine model as a bench fits it (engine_model.json): a micro-batch costs the engine 0.95 s and 30 µs a copy.
GIVEN_MODEL = {"intercept_s": 0.95, "coef_s": {}, "per_copy_s": {"wordcount": 3e-05}, "runs": 2, "serial": 0.0,
               "terms": ["workers", "sources", "copies"], "source": "",
               "levers": "fs-checkpoints+no-crc+pack+defer-sleep"}
# The tests measure nothing, so no warm-up run (the bench's own JIT warm-up costs each bench ~20 s), except
# where a test asks for one (a later --warm-up-batches wins).
WARM_UP = ("--warm-up-batches", "0")


def bench(*args, conf: Path, cache: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "skewbench.cli", "bench", *WARM_UP, *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "SPARK_CONF_DIR": str(conf)}
                            | ({"SKEWBENCH_CACHE": str(cache)} if cache else {}))


def finished(proc: subprocess.Popen, timeout: float = 900) -> tuple[int, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out + err


# Runs `skewbench bench ARGS` in .venv-cluster's Python (no re-exec) with MODULE:FUNCTION wrapped so that its
# Nth call sends this process SIGINT: a Ctrl-C landing exactly in that phase of the bench.
INTERRUPTING = """\
import importlib, os, signal, sys
target, nth, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
module_name, name = target.split(":")
module = importlib.import_module(module_name)
original, calls = getattr(module, name), []
def interrupting(*args, **kwargs):
    calls.append(1)
    if len(calls) == nth:
        os.kill(os.getpid(), signal.SIGINT)
    return original(*args, **kwargs)
setattr(module, name, interrupting)
from skewbench.cli import main
sys.exit(main(["bench", *argv]))
"""


def interrupted_bench(tmp_path: Path, target: str, nth: int, *args, conf: Path) -> tuple[int, str]:
    from skewbench.bench.spark.run import CLUSTER_PYTHON

    script = tmp_path / "interrupting.py"
    script.write_text(INTERRUPTING)
    return finished(subprocess.Popen([str(CLUSTER_PYTHON), str(script), target, str(nth), *WARM_UP, *args], cwd=ROOT,
                                     text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, "SPARK_CONF_DIR": str(conf)}))


def complete_runs(out: Path) -> dict[str, int]:
    return {p.parent.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*/summary.json")
            if not p.parent.name.endswith(".partial")}


def assert_stopped(code: int, log: str, out: Path) -> None:
    assert code == 130 and "--resume" in log, log[-3000:]
    assert not (out / "results.csv").exists()


@pytest.mark.spark
def test_bench_interrupted_in_every_phase_and_resumed_gives_every_run_once(spark_cluster, tmp_path):
    """Ctrl-C during a run (as it commits: the race that once let a bench run on), between runs (the
    partial table written after the last one) and while the final tables are written: each stops the bench
    with exit code 130 and the --resume hint, and no run is half-counted or run twice."""
    from skewbench.bench.studyfile import load_all

    files, out = studies(tmp_path), tmp_path / "out"
    plan = {p.name for s in load_all(files) for p in s.points()}
    args = (*files, "--out", str(out))

    # During a run: its 2nd call is the second measured run's, after its last batch.
    code, log = interrupted_bench(tmp_path, "skewbench.bench.spark.run:final_progress", 2, *args, conf=spark_cluster)
    assert_stopped(code, log, out)
    assert len(complete_runs(out)) == 1
    assert [p.name for p in (out / "runs").glob("*.partial/INCOMPLETE")] == ["INCOMPLETE"]

    # Between runs: the resumed bench's first measured run is complete when its partial table is written
    # (its simulation is not the mark: the resumed bench first simulates the runs it finds, to check them).
    kept = complete_runs(out)
    code, log = interrupted_bench(tmp_path, "skewbench.bench.driver:_write_partial", 1, *args, "--resume",
                                  conf=spark_cluster)
    assert_stopped(code, log, out)
    assert len(complete_runs(out)) == 2 and kept.items() <= complete_runs(out).items()

    # During the final tables: every run is done, the bench is not.
    kept = complete_runs(out)
    code, log = interrupted_bench(tmp_path, "skewbench.analysis.report:write_report", 1, *args, "--resume",
                                  conf=spark_cluster)
    assert_stopped(code, log, out)
    assert set(complete_runs(out)) == plan and kept.items() <= complete_runs(out).items()
    assert (out / "results.csv.partial").exists()

    kept = complete_runs(out)
    code, log = finished(bench(*args, "--resume", conf=spark_cluster))
    assert code == 0, log[-4000:]
    assert "every run is complete" in log and "warm-up run" not in log  # nothing left to run: no Spark
    table = pd.read_csv(out / "results.csv")
    assert sorted(table["run"]) == sorted(plan)  # every point once
    assert complete_runs(out) == kept  # complete runs were not run again
    assert not (out / "results.csv.partial").exists()
    assert table["correct"].all() and table["sim_exact"].all()
    assert not [p for name in ("outputs", "checkpoint") for p in (out / "runs").glob(f"*/{name}")]  # scratch gone
    assert table["predicted_throughput"].notna().all() and (table["throughput"] > 0).all()
    assert set(json.loads((out / "engine_model.json").read_text())["per_copy_s"]) == {"wordcount", "selfjoin"}
    for name in ("cal.csv", "tiny.csv", "results.csv.meta.json", "report.md", "prediction.png"):
        assert (out / name).exists(), name
    assert "## Every run of the bench" in (out / "report.md").read_text()
    through, twin = (table[(table["rate"] == 3000) & (table["ingest"] == way)] for way in ("locust", "engine"))
    assert len(through) == len(twin) == 1, through.T
    on_time = through["achieved_rate"].iloc[0] >= 0.98 * 3000  # (a loaded machine's locust may be late)
    assert str(through["ingest_valid"].iloc[0]) == str(on_time), through.T
    assert through["sim_exact"].all() and twin["sim_exact"].all()  # each counted as simulated: alike
    assert twin["ingest_valid"].isna().all()

    code, log = finished(bench(*files, "--out", str(out), "--resume", conf=spark_cluster), timeout=120)
    assert code == 2 and "is complete" in log
    other = tmp_path / "other" / "tiny.yaml"
    other.parent.mkdir()
    other.write_text(textwrap.dedent((MEASURED + THROUGH_THE_BROKER).replace("delay_ms: 0.2", "delay_ms: 0.3")))
    code, log = finished(bench(files[0], str(other), "--out", str(out), "--resume", conf=spark_cluster), timeout=120)
    assert code == 2 and "started with other studies or options (studies differ)" in log
    code, log = finished(bench(*files, "--out", str(out), conf=spark_cluster), timeout=120)
    assert code == 2 and "results are never overwritten" in log

    from skewbench.cli import main

    assert main(["report", str(out), "--rebuild"]) == 0  # the tables again, from the run folders alone
    rebuilt = pd.read_csv(out / "results.csv")
    pd.testing.assert_frame_equal(rebuilt, table)
    previous = next(out.glob("previous-*"))
    pd.testing.assert_frame_equal(pd.read_csv(previous / "results.csv"), table)  # the old tables kept
    assert (previous / "report.md").exists() and (out / "report.md").exists()
    assert main(["report", str(tmp_path), "--rebuild"]) == 2  # not a bench folder


@pytest.mark.spark
def test_sustainable_search_brackets_a_rate_the_workers_carry(spark_cluster, tmp_path):
    """The search (its start predicted by an engine model given with --engine-model, which the bench uses
    instead of calibrating) ends with a carried and a failed rate, each verdict the one its run's batches give,
    the carried rate under the workers' limit."""
    from skewbench.bench.sustainable import verdict

    study = tmp_path / "sus.yaml"
    study.write_text(textwrap.dedent("""\
        name: sus
        apps: wordcount
        schemes: pkg
        workers: 4
        sources: 1
        delay_ms: 0.5
        workloads: ["zipf:z=1.0,keys=500"]
        batch_rows: 4000
        batches: 4
        sustainable: {seconds: 6}
        """))
    out, given = tmp_path / "out", tmp_path / "engine_model.json"
    given.write_text(json.dumps(GIVEN_MODEL))
    code, log = finished(bench(str(study), "--out", str(out), "--engine-model", str(given), conf=spark_cluster,
                               cache=tmp_path / "empty"))
    assert code == 0 and f"engine model: --engine-model {given}" in log, log[-4000:]
    assert not (tmp_path / "empty" / "engine").exists()  # nothing calibrated (the no-fork lever's jar is there)
    model = json.loads((out / "engine_model.json").read_text())
    assert model["source"].startswith(f"--engine-model {given}") and model["intercept_s"] == 0.95
    table = pd.read_csv(out / "results.csv")
    assert table["predicted_throughput"].notna().all()
    search = table[table["search_of"].notna()]
    assert 2 <= len(search) <= 6 and search["correct"].all() and search["sim_exact"].all()
    assert (search["rate"] > 0).all() and search["messages"].max() <= 6 * search["rate"].max() + 1
    for run, rate, messages, ok in zip(search["run"], search["rate"], search["messages"], search["sustainable"]):
        assert verdict(pd.read_parquet(out / "runs" / run / "batches.parquet"), rate, messages)[0] == ok, run
    good = search.loc[search["sustainable"].astype(bool), "rate"]
    assert len(good) and len(good) < len(search)  # bracketed: a carried and a failed rate
    # Whatever the machine's speed, 4 workers at 0.5 ms carry at most 8,000 messages/s even perfectly balanced.
    # (The closed-loop peak is no bound: on a machine whose load varies, the two may differ several-fold.)
    assert good.max() < 4 / 0.0005
    failed = search[~search["sustainable"].astype(bool)]
    assert (failed["backlog_slope"].isna() | (failed["backlog_slope"] >= 0.01 * failed["rate"])).all()
    assert "## Sustainable throughput" in (out / "report.md").read_text()


@pytest.mark.spark
def test_a_bench_without_an_engine_study_calibrates_once_and_reuses_the_calibration(spark_cluster, tmp_path):
    """No engine study: the bench calibrates the engine itself and every row is predicted; `skewbench advise
    --calibrate` on the same points, cluster and code reuses that cached calibration (the same code a second
    bench's reuse runs: driver._calibration_for and driver._calibrate).
    The point scales out while it runs (a study's live-routing factors), exactly as simulated."""
    study = tmp_path / "tiny.yaml"
    study.write_text(textwrap.dedent(MEASURED.replace("schemes: [kg, pkg]", "schemes: consistent")
                                     .replace("workers: 4", "workers: 3\nschedule: '1:4'")))
    cache = tmp_path / "cache"
    code, log = finished(bench(str(study), "--out", str(tmp_path / "first"), "--warm-up-batches", "2",
                               conf=spark_cluster, cache=cache))
    assert code == 0 and "warm-up run" in log and "calibrated the engine now" in log, log[-3000:]
    assert "engine-calibration: wordcount sg" in log, log[-3000:]
    model = json.loads((tmp_path / "first" / "engine_model.json").read_text())
    assert str(cache) in model["source"] and model["runs"] == 2  # W, S and batch fixed: without and with delay
    table = pd.read_csv(tmp_path / "first" / "results.csv")
    assert len(table) == 1 and table["predicted_throughput"].notna().all() and table["sim_exact"].all()
    row = table.iloc[0]
    assert row["correct"] and row["schedule"] == "1:4" and row["final_workers"] == 4 and row["migrations"] == 1
    assert 0 < row["moved_share"] < 1 and row["change_batch"] == 1 and row["latency_peak_s"] > 0
    assert f"The predictions' engine model ([engine_model.json](engine_model.json)): calibration {cache}" in (
        tmp_path / "first" / "report.md").read_text()

    # skewbench advise --calibrate on the same points (W, S, batch per worker, delay) finds that calibration
    advise = subprocess.Popen([sys.executable, "-m", "skewbench.cli", "advise", "--calibrate", "--workload",
                               "zipf:z=1.2,keys=2000", "--workers", "3", "--sources", "2", "--delay-ms", "0.2",
                               "--batch-rows-per-worker", "667", "--messages", "6000", "--schemes", "kg,pkg"],
                              cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**os.environ, "SPARK_CONF_DIR": str(spark_cluster), "SKEWBENCH_CACHE": str(cache)})
    code, log = finished(advise)
    assert code == 0 and "engine model: the cached calibration" in log and "engine-calibration:" not in log, log
    assert f"engine model: {cache}/engine/" in log and "(calibration " in log and "recommended at W = 3" in log, log
    reused = re.search(rf"^engine model: ({re.escape(str(cache))}/engine/\S+) \(calibration ", log, re.M).group(1)
    assert json.loads(Path(reused).read_text()) == model  # the first bench's model, not one fitted again
    # (--engine-model, a model given instead: the sustainable search's test.)
