"""The data source's planning side (bench/spark/source.py): Spark plans each streaming query's batches in a
Python process it starts afresh, so planning must not import what only reading needs (pandas, numba, the
apps and routers: 0.5 s before every run's first batch)."""
import subprocess

import pytest

from skewbench.bench.spark.run import CLUSTER_PYTHON, ROOT

PLAN = """
import sys
import pyspark.sql.streaming.python_streaming_source_runner  # what Spark's planning process runs
before = set(sys.modules)
from pyspark.sql.streaming.datasource import ReadMaxRows
from skewbench.bench.spark.source import Options, SkewbenchStreamReader
reader = SkewbenchStreamReader(Options({"workload": "zipf:z=1.1,keys=300", "messages": "900", "sources": "3",
                                        "app": "wordcount", "scheme": "pkg", "workers": "4"}))
start = reader.initialOffset()
end = reader.latestOffset(start, ReadMaxRows(500))
parts = reader.partitions(start, end)
heavy = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in ("pandas", "numba")
               or m.startswith(("skewbench.bench.apps", "skewbench.migration", "skewbench.schemes")))
print(end["offset"], len(parts), heavy)
"""


@pytest.mark.spark
def test_planning_imports_neither_pandas_nor_the_routers(spark_cluster):  # the fixture sets up CLUSTER_PYTHON
    done = subprocess.run([str(CLUSTER_PYTHON), "-c", PLAN], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["500", "3", "[]"], done.stdout
