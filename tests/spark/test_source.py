"""The data source's planning side (bench/spark/source.py): Spark plans each streaming query's batches in a
Python process it starts afresh, so planning must not import what only reading needs (pandas, numba, the
apps and routers: 0.5 s before every run's first batch); and where routing depends on where batches end
(load feedback, live routing), an open-loop rate still gets whole batches, the first too."""
import subprocess

import pytest

from skewbench.bench.spark.run import CLUSTER_PYTHON, ROOT

PLAN = """
import sys, time
import pyspark.sql.streaming.python_streaming_source_runner  # what Spark's planning process runs
before = set(sys.modules)
from pyspark.sql.streaming.datasource import ReadMaxRows
from skewbench.bench.spark.source import Options, SkewbenchStreamReader

def reader(**options):
    return SkewbenchStreamReader(Options({"workload": "zipf:z=1.1,keys=300", "messages": "900", "sources": "3",
                                          "app": "wordcount", "scheme": "pkg", "workers": "4", **options}))

start = reader().initialOffset()
end = reader().latestOffset(start, ReadMaxRows(500))
parts = reader().partitions(start, end)
heavy = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in ("pandas", "numba")
               or m.startswith(("skewbench.bench.apps", "skewbench.migration", "skewbench.schemes")))
print(end["offset"], len(parts), heavy)
# 1,000 messages/s, 0.3 s after the start: 301 have come.  Batches of 500 after the first 100 messages: with
# load feedback only whole ones; the first batch (Spark runs one on the initial offset) waits to be whole
def offsets(**extra):
    r = reader(rate="1000", **extra)
    first = {**r.initialOffset(), "t0": time.time() - 0.3}
    return [r.latestOffset(start, ReadMaxRows(500))["offset"] for start in ({**first, "offset": 100}, first)]

print(offsets() + offsets(loads="/nowhere"))
"""


@pytest.mark.spark
def test_planning_is_light_and_cuts_whole_batches_where_routing_needs_them(spark_cluster):  # CLUSTER_PYTHON
    done = subprocess.run([str(CLUSTER_PYTHON), "-c", PLAN], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    first, rated = done.stdout.strip().splitlines()
    assert first.split() == ["500", "3", "[]"], done.stdout
    offsets = eval(rated)  # noqa: S307 (our own output)
    assert 300 <= offsets[0] < 600 and 300 <= offsets[1] < 500 and offsets[2:] == [100, 500], done.stdout
