"""A live run's response to a change of its routing, from its timeline (``timeline.parquet``, a row per
micro-batch: :func:`~skewbench.bench.spark.run.timeline`).

The *change* is the first batch of the run's first migration (a scale-out, a scale-in or a rebalance: the
summary's ``migration_list``, with its plan and wall-clock seconds and its keys moved, a share of the keys
seen so far), which has *landed* once the batch that installs its last parcels ran. Throughput per worker is a
batch's messages ÷ its duration ÷ its active W (closed loop: each batch as fast as it goes). Before: the
median over the batches before the change, the first (warm-up) excluded; after: the median over the batches
after the landing. *Recovery* (Fang et al.'s Fig. 15 "response time"): the seconds from the change's start
until the end of the first batch, from the change on, whose throughput per worker is back to :data:`RECOVERED`
of the before value. The latency peak is the largest latency (from intended arrival) from the change on,
beside the steady p99 before it; the p99 during the migration is the largest of its batches' p99.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

RECOVERED = 0.9  # share of the throughput per worker before the change that counts as recovered
COLUMNS = ("change_batch", "moved_share", "plan_s", "migration_batches", "migration_s", "per_worker_before",
           "per_worker_after", "recovery_s", "latency_p99_before_s", "latency_p99_migration_s", "latency_peak_s")


def response(timeline: pd.DataFrame, migrations: list[dict]) -> dict:
    """The measures of :data:`COLUMNS` for the run's first migration (``migrations``: the summary's
    ``migration_list``, each with its ``first_batch`` and ``last_batch``), or for its first change of routing
    that moved nothing (a scheme whose partial state stays where it is); NaN without either."""
    t = timeline.sort_values("batch").set_index("batch")
    migration = migrations[0] if migrations else _unmoved_change(t)
    if migration is None:
        return dict.fromkeys(COLUMNS, np.nan)
    first, last = migration["first_batch"], migration["last_batch"]
    per_worker = t["messages_done"] / t["duration"] / t["workers"]
    before = per_worker.loc[1:first - 1] if first > 1 else per_worker.loc[:first - 1]
    level = float(before.median()) if len(before) else np.nan
    back = per_worker.loc[first:] >= RECOVERED * level
    recovered = back.idxmax() if back.any() else None
    after = per_worker.loc[last + 1:]
    seen = migration.get("seen_keys", 0)
    moved = migration["keys"] / seen if seen else (0.0 if migration["keys"] == 0 else np.nan)
    return {"change_batch": first, "moved_share": moved,
            "plan_s": migration["plan_seconds"], "migration_batches": last - first + 1,
            "migration_s": migration.get("seconds", np.nan), "per_worker_before": level,
            "per_worker_after": float(after.median()) if len(after) else np.nan,
            "recovery_s": float(t["duration"].loc[first:recovered].sum()) if recovered is not None else np.nan,
            "latency_p99_before_s": float(t["latency_p99"].loc[1:first - 1].median()) if first > 1 else np.nan,
            "latency_p99_migration_s": float(t["latency_p99"].loc[first:last].max()),
            "latency_peak_s": float(t["latency_max"].loc[first:].max())}


def _unmoved_change(t: pd.DataFrame) -> dict | None:
    """The first batch routed by a new version, as a migration of no keys that lands at once."""
    changed = t.index[t["version"] > t["version"].iloc[0]]
    if not len(changed):
        return None
    batch = int(changed[0])
    return {"first_batch": batch, "last_batch": batch, "keys": 0, "plan_seconds": float(t.loc[batch, "plan_seconds"]),
            "seconds": 0.0}
