"""Group keys that put worker *i* on Spark's shuffle partition *i* mod P.

Spark sends a group to partition ``pmod(hash(group columns), P)`` (Murmur3, seed 42).  A stage grouped
by one bigint column whose value for worker *i* is a *preimage* — a number Spark hashes to partition
*i* mod P — runs worker *i* in task *i* (mod P): the placement a scheme decided, not a second hash of it.
"""

from __future__ import annotations

import functools

import numpy as np


@functools.cache  # per session: a Spark job each run cost a bench's runs 0.7 s apiece
def preimages(spark, count: int, partitions: int) -> np.ndarray:
    """Distinct ``v[i]`` with ``pmod(hash(cast(v[i] as bigint)), partitions) == i % partitions``, computed by
    Spark itself: worker *i* runs in task ``i % partitions`` (in task *i* when there are W partitions).

    The group columns must then be bigint (an int literal hashes differently)."""
    from pyspark.sql import functions as F

    span, per = 64 * count, -(-count // partitions)
    ids = spark.range(0, span, numPartitions=1)  # one task: the default (one per core) costs 100 tasks
    found = (ids.select("id", F.expr(f"pmod(hash(id), {partitions})").alias("p")).groupBy("p")
             .agg(F.slice(F.sort_array(F.collect_list("id")), 1, per).alias("v")).collect())
    table = {row["p"]: row["v"] for row in found}
    missing = [i for i in range(count) if len(table.get(i % partitions, ())) <= i // partitions]
    if missing:
        raise RuntimeError(f"no preimage below {span} for workers {missing}")
    found = np.array([table[i % partitions][i // partitions] for i in range(count)], dtype=np.int64)
    found.flags.writeable = False  # shared by the runs of a session
    return found
