"""Faults on the local cluster (``skewbench run --faults``, bench/spark/faults.py): a worker node killed mid-run
(every process in its namespace), the broker killed mid-stream, and the driver killed, in a run from Spark's own
source and in one through the broker; each run still gives the reference's answer,
every message counted once, and says how long the batches took to get back to their pace."""
import json
import os
import pickle
import subprocess
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from skewbench.bench.spark import faults
from skewbench.bench.spark.faults import Fault, FaultError, parse_all, recovery, share_done
from skewbench.bench.spark.run import CLUSTER_PYTHON, ROOT

MESSAGES = 16_000
RUN = {"app": "wordcount", "scheme": "pkg", "workers": 3, "sources": 2, "delay_ms": 0.05, "messages": MESSAGES,
       "batch_rows": 2000, "rate": 2000, "workload": "zipf:z=1.2,keys=500"}


def checked(summary: dict, specs: list[str]) -> None:
    """The run's answer is the reference's, every message counted once, each fault struck and said."""
    assert summary["correct"], specs
    assert summary["messages_counted"] == summary["messages"] and summary["duplicates"] == 0, specs
    assert [f["fault"] for f in summary["faults"]] == specs, summary["faults"]
    for fault, spec in zip(summary["faults"], specs):
        assert fault["processes_killed"] >= 1 and fault["down_s"] >= Fault.parse(spec).down, fault
        print(f"{spec}: {summary['messages']:,} messages in, {summary['messages_counted']:,} counted, "
              f"{summary['duplicates']} duplicates; {fault['node']} killed ({fault['processes_killed']} processes), "
              f"down {fault['down_s']:.1f} s, batches back at their pace after {fault['recovery_s']} s")


def cli(options: dict) -> list[str]:
    return [part for key, value in options.items() for part in (f"--{key.replace('_', '-')}", str(value))]


def workers_alive(cluster: Path) -> set[str]:
    state = json.loads((cluster / "state.json").read_text())
    with urllib.request.urlopen(f"http://{state['nodes']['master']['ip']}:8080/json/", timeout=5) as reply:
        return {w["host"] for w in json.load(reply)["workers"] if w["state"] == "ALIVE"}


@pytest.fixture
def cluster_as_found(spark_cluster):
    """The cluster's configuration; after the test, every worker back (as a failed run may have left one
    down, a moment before its launcher started it again), so that the next test finds every slot."""
    yield spark_cluster
    cluster = spark_cluster.parent.parent
    state = json.loads((cluster / "state.json").read_text())
    workers = {n["ip"] for name, n in state["nodes"].items() if name.startswith("worker")}
    for _ in range(120):
        if workers_alive(cluster) == workers:
            return
        time.sleep(1)


@pytest.mark.spark
def test_a_killed_worker_node_and_a_killed_driver_lose_and_repeat_nothing(cluster_as_found, tmp_path):
    """The last worker node killed at 25 % of the stream for 10 s, the driver at 30 %, likely while the worker
    is still down: the driver is restarted from the checkpoints by `skewbench run` itself; the restarted driver
    still knows of the worker's fault, starts the worker again when its 10 s are over, and waits for its slots."""
    done = subprocess.run([str(CLUSTER_PYTHON), "-m", "skewbench.cli", "run", *cli(RUN), "--faults",
                           "worker@0.25+10,driver@0.3+2", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=900, cwd=ROOT,
                          env={**os.environ, "SPARK_CONF_DIR": str(cluster_as_found)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "exactly once: 16,000 messages in, 16,000 counted, 0 duplicates" in done.stdout, done.stdout
    checked(json.loads((tmp_path / "run" / "summary.json").read_text()), ["worker@0.25+10", "driver@0.3+2"])
    assert not (tmp_path / "run" / "checkpoint" / "driver").exists()  # the driver's checkpoint: scratch
    cluster = cluster_as_found.parent.parent
    state = json.loads((cluster / "state.json").read_text())
    assert workers_alive(cluster) == {n["ip"] for name, n in state["nodes"].items() if name.startswith("worker")}


@pytest.mark.spark
def test_a_killed_broker_and_a_killed_driver_lose_nothing_the_broker_acknowledged(cluster_as_found, tmp_path):
    """The broker killed at 20 % of the stream (16 s at 500 messages/s: locust is still sending while Spark's
    first batches run): both wait for it, and it kept every entry it had acknowledged. Then the driver killed at
    half the stream: locust, the load generator, goes on sending on its schedule while no driver runs, and the
    new driver reads the backlog from the offsets Spark committed and judges locust by the exit code it left."""
    options = {**RUN, "messages": MESSAGES // 2, "batch_rows": 1000, "rate": 500, "ingest": "locust"}
    done = subprocess.run([str(CLUSTER_PYTHON), "-m", "skewbench.cli", "run", *cli(options), "--faults",
                           "broker@0.2+2,driver@0.5+2", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=900, cwd=ROOT,
                          env={**os.environ, "SPARK_CONF_DIR": str(cluster_as_found)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    checked(summary, ["broker@0.2+2", "driver@0.5+2"])
    ingest = summary["ingest"]
    assert ingest["messages"] == MESSAGES // 2 and ingest["valid"], ingest  # the broker kept what it acknowledged
    assert (tmp_path / "run" / "locust" / "exit_code").read_text().strip() == "0"
    print(f"locust sent at {ingest['achieved_rate']:,.0f} messages/s, at most {ingest['lag_max']:.2f} s late")


@pytest.mark.parametrize("spec, message", [
    ("worker", r"is not KIND@AT\+DOWN"),
    ("disk@0.5+1", "unknown kind 'disk'"),
    ("worker@1.5+1", "AT must be between 0 and 1"),
    ("worker@0.5+900", "DOWN at most 600 s"),
    ("worker@0.5+1,worker@0.5+1", "names a fault twice"),
])
def test_a_fault_that_cannot_be_written_is_refused(spec, message):
    with pytest.raises(FaultError, match=message):
        parse_all(spec)


def test_faults_strike_in_the_order_of_their_share_of_the_stream():
    assert [f.name for f in parse_all("broker@0.6+2, worker@0.25+5")] == ["worker@0.25+5", "broker@0.6+2"]
    assert parse_all("") == []


def test_a_fault_this_run_cannot_have_is_refused(tmp_path):
    with pytest.raises(FaultError, match="needs --ingest locust"):
        faults.check("broker@0.5+1", "engine", tmp_path)
    with pytest.raises(FaultError, match="needs the local cluster"):
        faults.check("worker@0.5+1", "engine", None)
    (tmp_path / "state.json").write_text(json.dumps({"mode": "loopback", "nodes": {}}))
    with pytest.raises(FaultError, match="network namespaces"):
        faults.check("worker@0.5+1", "engine", tmp_path)
    (tmp_path / "state.json").write_text(json.dumps({"mode": "netns", "nodes": {"worker1": {}}}))
    with pytest.raises(FaultError, match="BROKER=1"):
        faults.check("broker@0.5+1", "locust", tmp_path)
    assert faults.check("worker@0.5+1", "engine", tmp_path) == [Fault("worker", 0.5, 1)]


def test_recovery_ends_with_the_first_batch_back_at_the_old_pace():
    # batches of 1 s; the kill at 3.5 s; batch 4 (4-9 s) waits for the lost executor, batch 5 (9-10 s) is back
    batches = pd.DataFrame({"started": [0.0, 1, 2, 3, 4, 9], "duration": [1.0, 1, 1, 1, 5, 1]})
    assert recovery(batches, 3.5) == 10 - 3.5
    assert recovery(batches.iloc[:5], 3.5) is None  # never back before the run ended
    assert recovery(batches, 0.5) is None  # no batch before it to say what the pace was


def test_a_restarted_driver_starts_a_node_its_predecessor_struck_when_its_time_down_is_over(tmp_path):
    """The driver that struck a node died before starting it again: the next one (run.resume) starts it with the
    node's own launcher when DOWN is over, not before, and not a second time."""
    launcher = tmp_path / "broker" / "bin" / "redis.sh"
    launcher.parent.mkdir(parents=True)
    launcher.write_text(f'#!/bin/sh\ndate +%s.%N >> {tmp_path}/started\n')
    launcher.chmod(0o755)
    (tmp_path / "state.json").write_text(json.dumps({"nodes": {"broker": {"netns": ""}}}))
    killed = time.time()
    faults.save_strikes(tmp_path / "faults.json", [faults.Strike("broker@0.5+1.5", "broker", killed, 1)])
    injector = faults.Injector(parse_all("broker@0.5+1.5"), tmp_path, tmp_path)
    injector.settle(on_time=True)
    injector.settle(on_time=True)
    (started,) = map(float, (tmp_path / "started").read_text().split())
    assert started >= killed + 1.5
    assert faults.load_strikes(tmp_path / "faults.json")[0].restarted_at >= started


def kept_batch(folder, batch_id, seq, committed=True, final=None):
    """What a driver kept of a batch (run.Collector): one worker's record and metrics row, and Spark's commit."""
    from skewbench.bench.spark.latency import handled
    from skewbench.bench.spark.run import driver_folder

    record = {"worker": 0, "messages": handled(np.array(seq), np.zeros(len(seq))), "t_end": 1.0 + batch_id,
              "state": final, "final": final is not None}
    (driver_folder(folder) / f"batch-{batch_id:06d}.pickle").write_bytes(pickle.dumps([record]))
    pd.DataFrame({"batch": [batch_id], "worker": [0], "stored": [len(seq)]}).to_parquet(
        folder / "metrics" / f"batch-{batch_id:06d}.parquet")
    if committed:
        (folder / "checkpoint" / "commits" / str(batch_id)).write_text("v1\n{}")


def test_a_restarted_driver_counts_the_committed_batches_again_and_no_other(tmp_path):
    from skewbench.bench.spark.run import Collector

    first = Collector(tmp_path, messages=6)
    (tmp_path / "checkpoint" / "commits").mkdir()
    kept_batch(tmp_path, 0, [0, 1, 2])
    kept_batch(tmp_path, 1, [3, 4], committed=False)  # the driver died before Spark committed it: run again
    again = Collector(tmp_path, messages=6)
    again.restore()
    assert (again.done, again.duplicates, again.batches, sorted(again.latency)) == (3, 0, 1, [0])
    assert first.done == 0 and share_done(tmp_path) == 0  # no run.json: not a run's folder
    kept_batch(tmp_path, 1, [3, 4, 5], final="state")
    kept_batch(tmp_path, 2, [2, 3])  # a replay that was not exactly once
    again = Collector(tmp_path, messages=6)
    again.restore()
    assert (again.done, again.duplicates, again.states) == (6, 2, {0: "state"})
    (tmp_path / "checkpoint" / "driver" / "run.json").write_text(json.dumps({"config": {"messages": 6}}))
    assert share_done(tmp_path) == 4 / 6  # the last batch kept ended at seq 3


def test_the_progress_of_every_batch_survives_a_restart(tmp_path):
    from skewbench.bench.spark.run import ProgressLog, driver_folder

    driver_folder(tmp_path).mkdir(parents=True)
    report = lambda batch, rows: SimpleNamespace(json=json.dumps({"batchId": batch, "numInputRows": rows}))  # noqa: E731
    log = ProgressLog(tmp_path)
    for batch, rows in [(0, 4), (0, 4), (1, 0), (1, 6)]:  # the same report twice, an idle trigger
        log.keep(report(batch, rows))
    log.keep(None)
    later = ProgressLog(tmp_path)  # a new driver's
    assert [p["batchId"] for p in later.all([{"batchId": 2, "numInputRows": 3}])] == [0, 1, 2]
    assert later.all([{"batchId": 1, "numInputRows": 7}])[1]["numInputRows"] == 7  # run again: the newer report


@pytest.mark.parametrize("options, message", [
    (["--faults", "disk@0.5+1"], "--faults: fault 'disk@0.5+1': unknown kind 'disk'"),
    (["--faults", "driver@0.5+1", "--scheme", "mixed", "--rebalance-every", "2"],
     "a driver fault needs a run a new driver can finish"),
    (["--faults", "driver@0.5+1", "--scheme", "pkg-global"], "a driver fault needs a run a new driver can finish"),
])
def test_faults_a_run_cannot_have_are_usage_errors(tmp_path, capsys, options, message):
    from skewbench.cli import main

    args = ["run", "--app", "wordcount", "--scheme", "pkg", "--workers", "2", "--messages", "2000", *options,
            "--out", str(tmp_path / "x")]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.partial").exists()
