"""The preloading Python daemon (bench/spark/daemon.py): it imports pandas and pyarrow and starts numba
without starting a thread (so forking stays safe), refuses to serve when an import did start one, and the
cluster's tasks really run in its forks with the imports done and the hashing kernels compiled."""
import os
import subprocess

import pytest

from skewbench.bench.spark.run import CLUSTER_PYTHON, ROOT

PRELOAD = """
import gc, sys
from skewbench.bench.spark import daemon
daemon.preload()
from skewbench import hashing
print(daemon.threads(), gc.get_freeze_count() > 0, "pandas" in sys.modules and "pyarrow" in sys.modules,
      bool(hashing._murmur64_array.signatures))
"""

# A driver of the cluster: which module forked the task's Python worker, and had it imported pandas and
# compiled the hashing kernels before the task began (a plain RDD task does neither itself)?
TASK_ORIGIN = """
import sys
from skewbench.bench.spark.run import master_url, session, Config
spark = session(master_url(Config(app="wordcount", scheme="kg", workers=1, sources=1, delay_ms=0)), "daemon-test")
seen = spark.sparkContext.parallelize(range(4), 4).map(
    lambda _: (sys.modules["__main__"].__spec__.name, "pandas" in sys.modules,
               bool(sys.modules["skewbench.hashing"]._murmur64_array.signatures))).distinct().collect()
spark.stop()
print(sorted(seen))
"""


def cluster_python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLUSTER_PYTHON), "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, **(env or {})})


@pytest.mark.spark
def test_preload_imports_without_starting_a_thread(spark_cluster):
    done = cluster_python(PRELOAD)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["1", "True", "True", "True"]


@pytest.mark.spark
def test_preload_refuses_to_fork_a_threaded_process(spark_cluster):
    done = cluster_python(PRELOAD, env={"OPENBLAS_NUM_THREADS": "2"})  # numpy's OpenBLAS starts a thread
    assert done.returncode != 0
    assert "forking would be unsafe" in done.stderr and "spark.python.daemon.module" in done.stderr


@pytest.mark.spark
def test_tasks_run_in_forks_of_the_preloading_daemon(spark_cluster):
    done = cluster_python(TASK_ORIGIN, env={"SPARK_CONF_DIR": str(spark_cluster)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[('skewbench.bench.spark.daemon', True, True)]"
