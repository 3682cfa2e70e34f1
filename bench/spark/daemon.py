"""PySpark's Python worker daemon, with the pipeline's libraries imported once, before it forks.

Spark starts one daemon per executor and forks a Python worker from it for every concurrent task.
Each worker then imports pandas, pyarrow and the pipeline itself: ~110 MB of private memory per
process, 11 GB for the 100 workers of W = 100 (measured with psutil's USS).  Imported in the daemon,
those pages are shared by every fork (copy-on-write; ``gc.freeze`` keeps the collector from writing
into them).  PySpark imports after the fork because pandas and pyarrow start threads on import, and
forking a threaded process can deadlock the child: with OpenBLAS on one thread and the background
thread of Arrow's jemalloc off (for pyarrow builds whose pool is jemalloc; the mimalloc pool of the
current wheels starts none) they start none, which :func:`preload` checks.

Used through ``spark.python.daemon.module`` (:func:`~skewbench.bench.spark.run.session`, unless the
driver configuration names another daemon).
"""

from __future__ import annotations

import gc
import os

# Before numpy and pyarrow load; the forked workers inherit both settings.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("JE_ARROW_MALLOC_CONF", "background_thread:false")


def threads() -> int:
    """Threads of this process (1 where /proc is missing: nothing to check)."""
    return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1


def preload() -> None:
    """Import what every task needs and start numba (:func:`warm_numba`), or stop the daemon if that
    started a thread."""
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401
    import pyspark.worker  # noqa: F401
    from pyspark.sql.pandas import serializers  # noqa: F401

    from skewbench.bench.spark import feedback, live, routing, source, workers  # noqa: F401 (source imports these lazily)

    warm_numba()
    if threads() > 1:
        raise SystemExit(f"skewbench daemon: importing pandas/pyarrow started {threads() - 1} thread(s), and "
                         f"forking would be unsafe; put `spark.python.daemon.module pyspark.daemon` "
                         f"in the driver's spark-defaults.conf")
    gc.freeze()


def warm_numba() -> None:
    """Make the first numba call of the process here, before the fork.  It sets up LLVM and loads the
    hashing kernels from numba's cache: 0.17 s that every new Python worker paid again when it first
    routed (each scheme's own kernels then load in 2-60 ms).  A source task lands on a new worker
    whenever Spark forks one, and a run with a task per worker (no ``pack``) leaves as many idle
    workers behind, which Spark's pool hands out in turn to every later task."""
    import numpy as np

    from skewbench.scheme import make_scheme

    make_scheme("kg", 2).route_many(np.arange(8, dtype=np.uint64))


if __name__ == "__main__":
    from pyspark import daemon

    preload()
    daemon.manager()
