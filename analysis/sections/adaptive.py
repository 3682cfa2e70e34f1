"""The adaptive tables (Gedik, Fang) rebalanced in the simulator, and one worker added half-way."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns
from skewbench.analysis.sections.common import figure, floored, load, markdown


def adaptive(folder: Path) -> list[str]:
    data = load(folder, "adaptive")
    if data is None:
        return []
    cols = ["scheme", "workers", "avg_imbalance", "max_over_mean", "table_size", "migrated_keys", "plan_seconds_mean"]
    return ["## Adaptive partitioning functions (Gedik, Fang), rebalanced every interval", "",
            markdown(data[cols].sort_values(["workers", "scheme"])), ""]


def scale_out(folder: Path) -> list[str]:
    data = load(folder, "scale_out")
    if data is None:
        return []
    cols = ["scheme", "workers", "final_workers", "migrated_keys", "avg_imbalance", "max_over_mean"]
    lines = ["## Scale-out: one worker added half-way", "", markdown(data[cols]), ""]
    series = folder / "scale_out.timeseries.csv"
    if series.exists():
        grid = sns.relplot(data=floored(pd.read_csv(series)), x="messages", y="imbalance_fraction",
                           hue="scheme", kind="line", height=3, aspect=1.6)
        grid.set(yscale="log", ylabel="I(t) / t")
        lines += [figure(folder, "scale_out", grid), ""]
    return lines
