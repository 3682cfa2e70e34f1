"""A failed run is a failure, on the local cluster: the source's own faults lose a message (``lose@AT``) or send
one twice (``duplicate@AT``); through ``skewbench bench`` each run fails quickly with one line saying why, neither
reaches results.csv, both are in failed.csv, and the bench exits 1.  Under live routing, whose held rows are
handled a batch after their message's other copies, a message sent twice is still counted once too often, and
the held rows are not."""
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from skewbench.bench.spark.run import CLUSTER_PYTHON, ROOT

STUDY = """\
name: faulty
apps: wordcount
schemes: kg
workers: 3
sources: 2
delay_ms: 0
workloads: ["zipf:z=1.2,keys=500"]
messages: 4000
batch_rows: 1000
faults: ["lose@0.5", "duplicate@0.5"]
"""
# An engine model as a bench fits it: the bench predicts with it instead of calibrating the engine first.
MODEL = {"intercept_s": 0.5, "coef_s": {}, "per_copy_s": {"wordcount": 3e-05}, "runs": 2, "serial": 0.0,
         "terms": ["workers", "sources", "copies"], "source": "", "levers": "fs-checkpoints+no-crc+pack+defer-sleep"}


@pytest.mark.spark
def test_a_lost_and_a_duplicated_message_fail_their_runs_and_stay_out_of_the_tables(spark_cluster, tmp_path):
    (tmp_path / "faulty.yaml").write_text(textwrap.dedent(STUDY))
    (tmp_path / "model.json").write_text(json.dumps(MODEL))
    out = tmp_path / "out"
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "skewbench.cli", "bench", str(tmp_path / "faulty.yaml"), "--out",
                           str(out), "--engine-model", str(tmp_path / "model.json"), "--warm-up-batches", "0"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "SPARK_CONF_DIR": str(spark_cluster)})
    took = time.monotonic() - began
    log = done.stdout + done.stderr
    assert done.returncode == 1, log[-4000:]
    assert f"2 runs failed (incorrect, not simulator-exact, counted twice or lost), kept out of every table: see " \
           f"{out / 'failed.csv'}" in done.stderr, log[-4000:]
    said = [line for line in done.stderr.splitlines() if line.startswith("the run failed")]
    lost = r"lost: no progress for 3\d s after batch 3: 1 of 4,000 messages never arrived \(message 2,000 first\)"
    assert len(said) == 1 and re.fullmatch(f"the run failed: {lost}", said[0]), log[-4000:]
    assert "Traceback" not in log, log[-4000:]
    assert pd.read_csv(out / "results.csv").empty and not (out / "faulty.csv").exists()
    failed = pd.read_csv(out / "failed.csv").set_index("faults")["reasons"]
    assert re.fullmatch(lost, failed["lose@0.5"]), failed
    twice = failed["duplicate@0.5"].split("; ")
    assert twice[0] == "incorrect answer" and twice[-1] == "1 message counted twice", twice  # word counted twice
    assert twice[1].startswith("not simulator-exact: worker ") and len(twice) == 3, twice  # and stored twice
    report = (out / "report.md").read_text()
    assert "## ⚠ 2 runs failed" in report and failed["lose@0.5"] in report
    print(f"bench of a lost and a duplicated message: exit 1 after {took:.0f} s; {failed.to_dict()}")


LIVE = {"app": "wordcount", "scheme": "kg", "workers": 3, "sources": 2, "delay_ms": 0, "messages": 4000,
        "batch_rows": 500, "workload": "zipf:z=1.2,keys=500", "schedule": "2:4"}


@pytest.mark.spark
def test_live_routing_counts_a_message_sent_twice_and_not_its_held_rows(spark_cluster, tmp_path):
    """kg adds a worker at batch 2: the moved keys' rows wait a batch for their state (held), no duplicate; with
    message 2,000 sent again in the next batch, one."""
    files = []
    for name, faults in (("held", ""), ("twice", "duplicate@0.5")):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps({**LIVE, "faults": faults, "out": str(tmp_path / name)}))
    began = time.monotonic()
    done = subprocess.run([str(CLUSTER_PYTHON), "-m", "skewbench.bench.spark.run", *map(str, files)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "SPARK_CONF_DIR": str(spark_cluster)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    held, twice = (json.loads((tmp_path / name / "summary.json").read_text()) for name in ("held", "twice"))
    assert held["held_max"] > 0 and held["migrations"] == 1, held  # rows handled a batch after their arrival
    assert held["correct"] and held["duplicates"] == 0 and held["messages_counted"] == 4000
    assert twice["duplicates"] == 1 and twice["messages_counted"] == 4000 and not twice["correct"]
    print(f"live: {held['held_max']} rows held, 0 duplicates; message 2,000 sent twice: 1 duplicate "
          f"({time.monotonic() - began:.0f} s)")
