"""The "skewbench-broker" source (bench/spark/broker_source.py) reads exactly what the generated source
produces, from the cluster's broker, refuses what would make an answer wrong, and locust (bench/locustfile.py)
delivers a stream at the offered rate (tests/spark/broker_path.py, in the cluster's interpreter, Spark's calls
made as Spark makes them)."""
import os
import subprocess

import pytest

from skewbench.bench.spark.run import CLUSTER_PYTHON, ROOT


@pytest.mark.spark
def test_the_broker_path_reads_what_the_generated_source_makes_at_the_offered_rate(spark_cluster):
    done = subprocess.run([str(CLUSTER_PYTHON), str(ROOT / "tests" / "spark" / "broker_path.py")],
                          env={**os.environ, "SPARK_CONF_DIR": str(spark_cluster)}, capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    print("\n".join(lines))  # with -s: the checks, and locust's delivery (rate, lateness)
    assert lines[0].startswith("broker: Broker(host=") and "password" not in lines[0], done.stdout
    checks = [line for line in lines[1:] if not line.startswith(" ")]
    assert len(checks) == 21 and all(line.endswith(": ok") for line in checks), done.stdout
