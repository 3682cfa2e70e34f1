"""Heterogeneous workers (a study's ``slow`` factor, :mod:`skewbench.speeds`): each scheme's throughput with
slow workers as a share of its throughput on equal workers — on the cluster (measured beside predicted) and
in the simulator at the papers' sizes (``hetero_*.csv`` of ``make study``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns

from skewbench.analysis.sections.common import figure, load, markdown
from skewbench.speeds import beside_equal_twin

#: What makes two runs the same but for their workers' speeds (and the capacities a scheme was told).
SAME = ["study", "app", "scheme", "workers", "sources", "delay_ms", "workload", "messages", "seed", "params"]
EXPLAINED = ("A scheme splits in proportion to speed when it keeps Σ speed / W of its throughput (0.95 with one "
             "worker in ten at half speed). Only schemes that see the workers' time come near it: those told the "
             "workers' loads (pkg-global, pkg-probe: told their busy time) and Consistent Grouping told the "
             "capacities (cg with `capacity`). Schemes that balance the messages they send (sg, pkg, "
             "D-/W-Choices, ...) give the slow worker its equal share and wait for it: about half. A share near 1 "
             "can also mean that the slow worker was not the busiest: a hot key's worker already decided the "
             "throughput on equal workers (the absolute figures beside the shares tell the two apart).")


def heterogeneous_spark(folder: Path) -> list[str]:
    path = folder / "results.csv"
    data = pd.read_csv(path) if path.exists() else None
    if data is None or "slow" not in data or data["slow"].isna().all():
        return []
    measured = ["throughput", "predicted_throughput"]
    slow = beside_equal_twin(data, SAME, measured).dropna(subset=["throughput_equal"])
    if slow.empty:
        return []
    told = slow["params"].fillna("").str.contains("capacity=")  # cg told the capacities: against cg untold
    slow["label"] = slow["scheme"].where(~told, slow["scheme"] + " (capacity told)")
    slow["measured share"] = slow["throughput"] / slow["throughput_equal"]
    slow["predicted share"] = slow["predicted_throughput"] / slow["predicted_throughput_equal"]
    by = ["study", "workers", "label", "slow"]  # a study's points apart from another's (newer-claims: cg vs kg)
    table = (slow.groupby(by)[["throughput_equal", "throughput", "measured share", "predicted share"]]
             .median().reset_index().sort_values(["study", "workers", "measured share"], ascending=[True, True, False])
             .rename(columns={"label": "scheme", "throughput_equal": "equal workers (msgs/s)",
                              "throughput": "slow workers (msgs/s)"}))
    bars = table.assign(at=table["study"] + ", W = " + table["workers"].astype(str)).melt(
        id_vars=["at", "scheme", "slow"], value_vars=["measured share", "predicted share"], var_name="",
        value_name="share of its throughput on equal workers")
    grid = sns.catplot(data=bars, x="scheme", y="share of its throughput on equal workers", hue="", col="slow",
                       row="at", kind="bar", height=3.2, aspect=2.6, order=table["scheme"].drop_duplicates(),
                       sharex=False)
    grid.set_xticklabels(rotation=60, ha="right")
    return ["## Heterogeneous workers on the cluster", "",
            "Each scheme with slow workers (`slow`: `1@0.5` is worker 0 at half speed, its injected delay doubled) "
            "as a share of the same run on equal workers, measured and predicted (median over seeds). The engine's "
            "cost per batch is the same on both runs, so it pulls every measured share towards 1. " + EXPLAINED, "",
            markdown(table), "", figure(folder, "heterogeneous", grid), ""]


def heterogeneous_sim(folder: Path) -> list[str]:
    data = load(folder, "hetero_")
    if data is None or "speed_share" not in data:
        return []
    data = data[data["speed_share"].notna()]
    grid = sns.catplot(data=data, x="scheme", y="speed_share", hue="workers", col="slow", row="workload",
                       kind="bar", height=3, aspect=2.6, order=sorted(data["scheme"].unique()))
    grid.set_xticklabels(rotation=60, ha="right").set(ylabel="share on equal workers")
    share, busiest = (_by_scheme(data, value) for value in ("speed_share", "time_over_ideal"))
    return ["## Heterogeneous workers in the simulator", "",
            "Throughput with slow workers as a share of the same run's on equal workers, where the busiest "
            "worker's time alone decides it (no engine cost; `speed_share` in the simulator's rows). " + EXPLAINED,
            "", figure(folder, "heterogeneous_sim", grid), "", markdown(share), "",
            "The busiest worker's time with the slow workers over that of a split in proportion to speed "
            "(`time_over_ideal`, 1 is perfect):", "", markdown(busiest), ""]


def _by_scheme(data: pd.DataFrame, value: str) -> pd.DataFrame:
    table = data.pivot_table(index="scheme", columns=["slow", "workers"], values=value, aggfunc="median")
    table.columns = [f"{slow} W={w}" for slow, w in table.columns]
    return table.reset_index()
