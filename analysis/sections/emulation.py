"""The `emulation` study: the workers' injected delay realised each way this machine allows, on the same
points, and the error of each against the most real one there.

Three ways (``work``, :func:`~skewbench.bench.spark.engine.work_mode`): ``spin`` burns the delay on a core, as
the papers' bolts do — real only where every worker slot has a core (W <= cores); ``sleep`` sleeps it in a task
per worker — wall time that really passes, without using a core; ``emulated`` packs the workers in a task per
core and computes each one's finish time, one closing group per task sleeping until the latest (the default
levers). Where W <= cores, ``spin`` is the reference and ``sleep`` is measured against it; above, nothing
spins honestly, and ``emulated`` is measured against ``sleep``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import seaborn as sns

from skewbench.analysis.repeats import CI_BARS, compare
from skewbench.analysis.sections.common import figure, markdown, study_table

# a batch's duration is its busiest worker's time plus the engine's overhead: the two parts apart say whether an
# error is the workers' delay realised otherwise or the engine's cost per task (paid per core when packed)
METRICS = {"throughput": "msgs/s", "batch_median_s": "batch s", "busiest_median_s": "busiest s",
           "overhead_median_s": "engine s", "latency_p50": "p50 s", "latency_p99": "p99 s"}
REFERENCE = ("spin", "sleep")  # the most real way a point has, in this order
POINT = ["workload", "workers"]


def emulation(folder: Path) -> list[str]:
    data = study_table(folder, "emulation")
    if data is None or "work" not in data:
        return []
    table = errors(data)
    if table.empty:
        return []
    grid = sns.catplot(data=data.assign(stream=data["workload"].map(_stream)), x="workers", y="throughput",
                       hue="work", col="stream", kind="point", dodge=0.3, height=3, aspect=1.2, **CI_BARS)
    grid.set_axis_labels("workers W", "messages / s")
    return ["## How the workers' delay is realised, measured against the real thing",
            "The same points (word count under kg, 0.4 ms per message, 1 s of work per worker and batch, 3 seeds) "
            "with the injected delay spun on "
            "a core (`spin`: real CPU work, honest only while every worker has a core, W <= 2 here), slept in a "
            "task per worker (`sleep`: real wall time, no CPU) and emulated (`emulated`, the default levers: "
            "workers packed in a task per core, their finish times computed, one closing group sleeping until "
            "the latest; a message's latency is then computed, not observed). Each row's error is its mean "
            "over the seeds against the reference's (spin where it ran, else sleep); `vs reference` names a "
            "difference only where the 95 % interval of the difference (Welch's t) excludes zero. A batch's "
            "duration is its busiest worker's time plus the engine's overhead: an error in the first is the "
            "delay realised otherwise, one in the second the engine's cost per task, which packed workers pay "
            "per core rather than per worker. Above W = 2 nothing here is the real thing: sleep pays every "
            "worker's task on 2 cores, as a cluster with a core per worker would not.", "",
            figure(folder, "emulation", grid), "", markdown(table), "", summary(table), ""]


def errors(data: pd.DataFrame) -> pd.DataFrame:
    """One row per (stream, W, work): the metrics' means over the seeds, and each one's error against the
    point's reference work (spin, else sleep)."""
    rows = []
    for (workload, workers), point in data.groupby(POINT, sort=True):
        modes = set(point["work"])
        reference = next((m for m in REFERENCE if m in modes), None)
        if reference is None:
            continue
        ref = point[point["work"] == reference]
        for work, runs in sorted(point.groupby("work"), key=lambda item: item[0] != reference):
            row = {"stream": _stream(workload), "W": workers, "work": work, "runs": len(runs),
                   "reference": reference}
            for column, name in METRICS.items():
                row[name] = runs[column].mean()
                row[f"error {name}"] = runs[column].mean() / ref[column].mean() - 1 if work != reference else 0.0
            row["vs reference (msgs/s)"] = "" if work == reference else compare(
                runs["throughput"], ref["throughput"], work, reference, lower_is_better=False)
            rows.append(row)
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame) -> str:
    """The largest error of each way against its reference, per metric: the sentence the README quotes."""
    parts = []
    for work, reference in (("sleep", "spin"), ("emulated", "sleep")):
        rows = table[(table["work"] == work) & (table["reference"] == reference)]
        if rows.empty:
            continue
        worst = ", ".join(f"{name} {_pct(rows[f'error {name}'])}" for name in METRICS.values())
        parts.append(f"{work} against {reference} (W = {', '.join(map(str, sorted(set(rows['W']))))}): {worst}")
    return ("Error of the means, smallest to largest over the points: " + "; ".join(parts) + ".") if parts else ""


def _pct(errors: pd.Series) -> str:
    low, high = errors.min(), errors.max()
    return f"{100 * low:+.1f} %" if abs(high - low) < 5e-4 else f"{100 * low:+.1f} to {100 * high:+.1f} %"


def _stream(workload: str) -> str:
    """A Zipf stream named by its skew: balanced at z = 0, else skewed (a hot worker decides the batch)."""
    z = float(re.search(r"\bz=([0-9.]+)", workload).group(1)) if re.search(r"\bz=([0-9.]+)", workload) else None
    return workload if z is None else "balanced (z = 0)" if z == 0 else f"skewed (z = {z:g})"
