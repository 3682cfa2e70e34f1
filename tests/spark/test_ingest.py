"""``skewbench run --ingest locust`` on the local cluster: locust sends the stream to the broker at the offered
rate, the "skewbench-broker" source reads it, and the run gives the same answer and the same per-worker
counts as the generated source's run of the same stream (bench/spark/ingest.py)."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from skewbench.bench.spark.run import CLUSTER_PYTHON, ROOT

MESSAGES, RATE = 8000, 4000


def config(out, ingest, scheme, app="wordcount", **extra):
    return {"app": app, "scheme": scheme, "workers": 3, "sources": 2, "delay_ms": 0.05, "messages": MESSAGES,
            "batch_rows": 2000, "rate": RATE, "workload": "zipf:z=1.2,keys=500" if app == "wordcount" else None,
            "ingest": ingest, "out": str(out), **extra}


@pytest.mark.spark
def test_locust_through_the_broker_gives_the_generated_sources_answer_and_counts(spark_cluster, tmp_path):
    cases = [(ingest, scheme, app, extra) for scheme, app, extra in
             [("mixed", "wordcount", {"rebalance_every": 1})]  # pkg: test_bench.py; Naive Bayes: broker_path.py
             for ingest in ("engine", "locust")]
    files = []
    for i, (ingest, scheme, app, extra) in enumerate(cases):
        files.append(tmp_path / f"{i}.json")
        files[-1].write_text(json.dumps(config(tmp_path / f"run{i}", ingest, scheme, app, **extra)))
    done = subprocess.run([str(CLUSTER_PYTHON), "-m", "skewbench.bench.spark.run", *map(str, files)],
                          capture_output=True, text=True, timeout=1800, cwd=ROOT,
                          env={**os.environ, "SPARK_CONF_DIR": str(spark_cluster)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    summaries = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    cluster = spark_cluster.parent.parent
    assert not holding_a_secret(cluster, tmp_path, done.stdout + done.stderr)
    meta = json.loads((tmp_path / "run1" / "run.meta.json").read_text())
    assert meta["config"]["security"] == {"authentication": True, "network_encryption": False}
    for i in range(0, len(cases), 2):
        engine, locust = summaries[i], summaries[i + 1]
        label = f"{locust['app']} {locust['scheme']}"
        assert engine["correct"] and locust["correct"], label
        assert locust["worker_messages"] == engine["worker_messages"], label  # routed exactly alike
        assert locust["worker_probes"] == engine["worker_probes"], label
        assert engine["ingest"] == {"path": "engine"}
        ingest = locust["ingest"]
        assert ingest["path"] == "locust" and ingest["messages"] == MESSAGES and ingest["valid"], ingest
        assert abs(ingest["achieved_rate"] / RATE - 1) <= 0.02, ingest
        stats = (tmp_path / f"run{i + 1}" / "locust" / "stats_stats.csv").read_text()
        assert "XADD" in stats, stats
        print(f"{label}: engine {engine['throughput_msgs_per_s']:,.0f} msgs/s, through locust and the broker "
              f"{locust['throughput_msgs_per_s']:,.0f} msgs/s (offered {RATE:,}/s, achieved "
              f"{ingest['achieved_rate']:,.0f}/s, lateness p99 {ingest['lag_p99'] * 1000:.1f} ms); latency p99 "
              f"{engine['latency_seconds']['p99']:.2f} / {locust['latency_seconds']['p99']:.2f} s")


def holding_a_secret(cluster: Path, runs: Path, output: str) -> list[str]:
    """What holds one of the cluster's secrets (Spark's and the broker's): the runs' files, the driver's
    output, the Ansible log, every node's logs and work folders — all but the configuration files and the
    secret files themselves, where they belong — and the repository's files."""
    secrets = [(cluster / name).read_text().strip() for name in ("spark.secret", "broker.secret")]
    assert all(len(s) == 48 for s in secrets)
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True).stdout
    files = [f for f in [*runs.rglob("*"), *cluster.rglob("*")] if f.is_file() and "conf" not in f.parent.parts
             and f.suffix != ".secret"] + [ROOT / name for name in tracked.split("\0") if (ROOT / name).is_file()]
    return [str(f) for f in files if any(s.encode() in f.read_bytes() for s in secrets)] + [
        "the driver's output" for s in secrets if s in output]


@pytest.mark.parametrize("options, message", [
    (["--ingest", "kafka", "--rate", "100"], "invalid choice: 'kafka'"),
])
def test_bad_ingest_options_are_usage_errors(tmp_path, capsys, options, message):
    from skewbench.cli import main

    try:
        code = main(["run", "--app", "wordcount", "--scheme", "pkg", "--workers", "2", "--messages", "2000", *options,
                     "--out", str(tmp_path / "x")])
    except SystemExit as exit_:  # argparse's own refusal
        code = exit_.code
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.partial").exists()
