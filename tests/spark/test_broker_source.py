"""The "skewbench-broker" source (bench/spark/broker_source.py) reads exactly what the generated source
produces, from a real Redis, and refuses what would make an answer wrong (tests/spark/broker_path.py, in the
cluster's interpreter: a Redis server of its own, Spark's calls made as Spark makes them)."""
import subprocess

import pytest

from skewbench.bench.spark.run import CLUSTER_PYTHON, ROOT


@pytest.mark.spark
def test_the_broker_source_reads_what_the_generated_source_makes_and_refuses_lost_or_altered_entries(spark_cluster):
    done = subprocess.run([str(CLUSTER_PYTHON), str(ROOT / "tests" / "spark" / "broker_path.py")],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    print("\n".join(lines))
    assert len(lines) == 19 and lines[0].startswith("broker: Broker(host=") and "password" not in lines[0], done.stdout
    assert all(line.endswith(": ok") for line in lines[1:]), done.stdout
