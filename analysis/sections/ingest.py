"""Runs through the broker beside their generated twins: the same answer and per-worker counts, throughput
and latency with their seeds' 95 % intervals, and whether the broker received the offered rate."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns

from skewbench.analysis.repeats import CI_BARS, compare, interval
from skewbench.analysis.sections.common import figure, markdown

#: What makes a run's generated twin: every factor of its point but the path its stream came in by.
POINT = ["study", "app", "scheme", "workers", "sources", "delay_ms", "workload", "messages", "batch_rows", "rate",
         "split", "levers", "rebalance_every", "schedule", "migration", "fluid_keys", "handover", "params", "faults",
         "seed"]


def ingest_spark(folder: Path) -> list[str]:
    path = folder / "results.csv"
    data = pd.read_csv(path) if path.exists() else None
    if data is None or "ingest" not in data or not (data["ingest"] == "locust").any():
        return []
    through = data[data["ingest"] == "locust"]
    point = [c for c in POINT if c in data]  # (a bench's table from before a factor existed lacks its column)
    twins = through.merge(data[data["ingest"] == "engine"], on=point, suffixes=("", "_engine"))
    exact = int(through["sim_exact"].astype(bool).sum())  # the simulator routes a point alike on either path
    late = int((through["ingest_valid"].astype(str) != "True").sum())
    lines = ["## Through the broker — locust and Redis Streams beside the stream generated in Spark's source", "",
             f"{len(through)} runs had their stream sent by locust to the cluster's broker and read by the "
             f"skewbench-broker source; {int(through['correct'].astype(bool).sum())} gave the reference's answer, "
             f"{exact} counted every worker's messages as the simulator predicts (as a generated stream does), and "
             f"{late} are not valid (the broker received less than the offered rate, by more than 2 %, or not every "
             f"message).", ""]
    if twins.empty:
        return lines + ["No run of this bench has a generated twin (the same point and seed) to set beside it.", ""]
    rows = []
    for key, group in twins.groupby(["study", "app", "scheme", "workers", "rate"], sort=True):
        engine, broker = interval(group["throughput_engine"]), interval(group["throughput"])
        rows.append({**dict(zip(["study", "app", "scheme", "W", "offered"], key)),
                     "generated msgs/s": str(engine), "through the broker": str(broker),
                     "ratio": broker.mean / engine.mean,
                     "throughput": compare(group["throughput"], group["throughput_engine"], "broker", "generated",
                                           lower_is_better=False),
                     "p99 generated (s)": group["latency_p99_engine"].median(),
                     "p99 broker (s)": group["latency_p99"].median(),
                     "achieved msgs/s": group["achieved_rate"].median(),
                     "generator lag p99 (ms)": 1000 * group["generator_lag_p99_s"].median()})
    axes = twins[["scheme", "rate"]]
    long = pd.concat([axes.assign(path="generated", value=twins["throughput_engine"]),
                      axes.assign(path="through the broker", value=twins["throughput"])], ignore_index=True)
    grid = sns.catplot(data=long, x="scheme", y="value", hue="path", col="rate", kind="bar", height=3, aspect=1.2,
                       sharey=False, **CI_BARS)
    grid.set_axis_labels("scheme", "throughput (msgs/s)")
    return lines + [f"Beside their generated twins (the same point and seed; {len(twins)} pairs):", "",
                    figure(folder, "ingest", grid), "", markdown(pd.DataFrame(rows)), "",
                    "`offered` 0: as fast as each path goes (through the broker, locust sends every message at once). "
                    "Intervals are the seeds' 95 %; `throughput` names a winner only where the 95 % interval of their difference excludes zero.", ""]
