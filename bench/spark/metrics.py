"""What a run cost the engine and the machines, beside what the app measured itself.

* :func:`stage_metrics` — Spark's own task metrics per stage of the run, from the driver's REST API
  (``/api/v1/applications/<id>/stages``): task time, CPU, deserialization, GC, shuffle bytes.  Stages
  of the worker stage dominate; the source stage's time is routing plus Arrow conversion.
* :func:`resource_samples` — the psutil agent's samples (``ansible/roles/metrics``: CPU % and RSS of
  every Spark JVM and Python worker on every node, one row per process and second) taken during the
  run, read from the nodes' folders of a local cluster.  On VMs they stay on the nodes until
  ``make cluster-collect`` fetches them.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

STAGE_FIELDS = {"numTasks": "tasks", "executorRunTime": "run_ms", "executorCpuTime": "cpu_ns",
                "executorDeserializeTime": "deserialize_ms", "jvmGcTime": "gc_ms",
                "resultSerializationTime": "result_serialize_ms", "shuffleReadBytes": "shuffle_read_bytes",
                "shuffleWriteBytes": "shuffle_write_bytes", "inputRecords": "input_records",
                "outputRecords": "output_records"}


def stage_metrics(spark, since: float) -> pd.DataFrame:
    """Completed stages submitted at or after ``since`` (epoch seconds); empty without a Spark UI."""
    url = spark.sparkContext.uiWebUrl
    if not url:
        return pd.DataFrame(columns=["stage", "name", "submitted", "wall_s", *STAGE_FIELDS.values()])
    page = f"{url}/api/v1/applications/{spark.sparkContext.applicationId}/stages?status=complete"
    with urllib.request.urlopen(page, timeout=30) as reply:
        stages = json.load(reply)
    rows = []
    for s in stages:
        submitted = pd.Timestamp(s["submissionTime"].replace("GMT", "+00:00")).timestamp()
        if submitted < since:
            continue
        done = pd.Timestamp(s["completionTime"].replace("GMT", "+00:00")).timestamp()
        rows.append({"stage": s["stageId"], "name": s["name"], "submitted": submitted, "wall_s": done - submitted,
                     **{ours: s.get(theirs, 0) for theirs, ours in STAGE_FIELDS.items()}})
    return pd.DataFrame(rows, columns=["stage", "name", "submitted", "wall_s", *STAGE_FIELDS.values()])


def stage_summary(stages: pd.DataFrame) -> dict:
    """Totals over the run's stages (seconds and bytes)."""
    return {"stages": int(len(stages)), "tasks": int(stages["tasks"].sum()),
            "task_seconds": float(stages["run_ms"].sum() / 1e3),
            "jvm_cpu_seconds": float(stages["cpu_ns"].sum() / 1e9),
            "deserialize_seconds": float(stages["deserialize_ms"].sum() / 1e3),
            "gc_seconds": float(stages["gc_ms"].sum() / 1e3),
            "shuffle_bytes": int(stages["shuffle_write_bytes"].sum())}


def resource_samples(cluster_dir: Path, start: float, end: float) -> pd.DataFrame:
    """The agent's rows with ``start <= time <= end`` from every ``NODE/metrics/resources.csv``."""
    parts = [_rows_since(f, start) for f in sorted(Path(cluster_dir).glob("*/metrics/resources.csv"))]
    parts = [p for p in parts if len(p)]  # a node without samples in the window (pandas warns on empty parts)
    samples = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=RESOURCE_COLUMNS)
    return samples[(samples["time"] >= start) & (samples["time"] <= end)].reset_index(drop=True)


RESOURCE_COLUMNS = ["time", "node", "pid", "role", "cpu_percent", "rss_bytes", "pss_bytes"]


def _rows_since(path: Path, start: float) -> pd.DataFrame:
    """The rows of an agent's CSV from the first with ``time >= start`` on.  The agent appends in time
    order, so a bisection over byte offsets finds that row: a run reads its own tail, not the whole
    file, which grows by megabytes an hour on every node."""
    with path.open("rb") as f:
        names = f.readline().decode().strip().split(",")

        def line_at(offset: int) -> tuple[int, bytes]:
            """The first line starting at or after ``offset``, and where it starts."""
            f.seek(offset - 1)
            f.readline()
            return f.tell(), f.readline()

        def at_or_after_start(offset: int) -> bool:
            line = line_at(offset)[1]
            return not line.endswith(b"\n") or float(line.split(b",", 1)[0]) >= start

        lo, hi = f.tell(), path.stat().st_size
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if at_or_after_start(mid) else (mid + 1, hi)
        f.seek(line_at(lo)[0])
        return pd.read_csv(f, names=names, header=None)


def resource_summary(samples: pd.DataFrame) -> dict:
    """Per role: peaks of the summed RSS and PSS over the cluster (MiB; PSS counts a page shared by
    forked Python workers once, and only some samples have it), mean and peak summed CPU (% of a core)."""
    if samples.empty:
        return {}
    second = samples.assign(second=samples["time"].round())
    per_second = second.groupby(["role", "second"]).agg(rss=("rss_bytes", "sum"), cpu=("cpu_percent", "sum"))
    # An agent reads PSS every few samples, each node at its own moments: a node's last reading counts.
    pss = (second.dropna(subset=["pss_bytes"]).groupby(["role", "second", "node"])["pss_bytes"].sum()
           .unstack("node").groupby(level="role").ffill().sum(axis=1))
    summary = {}
    for role, group in per_second.groupby(level="role"):
        summary[role] = {"peak_rss_mib": round(float(group["rss"].max()) / 2**20, 1),
                         "peak_pss_mib": round(float(pss.get(role, pd.Series([np.nan])).max()) / 2**20, 1),
                         "mean_cpu_pct": round(float(group["cpu"].mean()), 1),
                         "peak_cpu_pct": round(float(group["cpu"].max()), 1),
                         "processes": int(samples.loc[samples["role"] == role, "pid"].nunique())}
    return summary
