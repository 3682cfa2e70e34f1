"""The engine's efficiency on Spark (``make bench``): sg at 1 ms against the ideal W / delay."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import seaborn as sns
from skewbench.analysis.sections.common import figure, load, markdown


def efficiency(folder: Path) -> list[str]:
    """Engine efficiency (``make bench``): sg at 1 ms vs. the ideal W / delay, and the per-batch cost."""
    data = load(folder, "efficiency")
    if data is None:
        return []
    delayed, bare = data[data.delay_ms > 0], data[data.delay_ms == 0]
    table = delayed[["workers", "batch_rows", "throughput", "ideal", "efficiency", "overhead_median_s",
                     "batch_median_s"]].merge(bare[["workers", "throughput"]].rename(
                         columns={"throughput": "no-delay throughput"}), on="workers", how="left")
    table["overhead s / worker"] = table["overhead_median_s"] / table["workers"]
    table["python PSS GiB"] = [_peak_gib(folder, run, "python_worker", "peak_pss_mib") for run in delayed["run"]]
    table["executors RSS GiB"] = [_peak_gib(folder, run, "executor", "peak_rss_mib") for run in delayed["run"]]
    long = pd.concat([delayed.assign(run="sg, 1 ms"), bare.assign(run="sg, no delay"),
                      delayed.assign(run="ideal W / delay", throughput=delayed["ideal"])])
    grid = sns.relplot(data=long, x="workers", y="throughput", hue="run", kind="line", marker="o", height=3,
                       aspect=1.5)
    grid.set(xlabel="workers W", ylabel="messages/s")
    return ["## Engine efficiency — sg, 1 ms per message, W = 10 … 100", "",
            figure(folder, "efficiency", grid), "", *_overhead_parts(folder, delayed), markdown(table.round(3)), "",
            "Overhead = batch duration − the busiest worker's busy time (median over the batches), drawn above "
            "in the three parts where it is paid. It has a part per worker (one Spark task, one state-store "
            "version and one Python call per worker and batch) and a part per message (routing, Arrow, shuffle, "
            "state update), both paid on the machine's cores; with a fixed cost c per batch, efficiency is "
            "B / (B + c) for B seconds of work per batch. The no-delay runs measure the engine's capacity: "
            "where it is below the ideal W / delay, "
            "no batch size can reach the ideal on this machine. Memory: peaks of the summed PSS of the Python "
            "workers (a page shared by the forks of one daemon counted once) and of the executors' RSS. "
            + efficiency_verdict(table), ""]


#: The parts of a batch's engine overhead (``skewbench.bench.spark.summary.batch_table``), as the report names them.
OVERHEAD_PARTS = {"before_workers_median_s": "before the first worker starts (routing, shuffle, task launch)",
                  "workers_spread_median_s": "workers starting late (task launch) or waiting for a core",
                  "after_workers_median_s": "after the last worker ends (results, state commits, driver)"}


def _overhead_parts(folder: Path, delayed: pd.DataFrame) -> list[str]:
    """A stacked bar per W of the engine overhead per batch, split where it is paid (runs that recorded it)."""
    if not set(OVERHEAD_PARTS) <= set(delayed.columns):
        return []
    parts = delayed.set_index("workers")[list(OVERHEAD_PARTS)].rename(columns=OVERHEAD_PARTS).sort_index()
    ax = parts.plot.bar(stacked=True, figsize=(6, 3.2), rot=0)
    ax.set(xlabel="workers W", ylabel="seconds per batch (median)", title="engine overhead per batch")
    ax.legend(fontsize=7, loc="upper left")
    return [figure(folder, "efficiency_overhead", ax.figure), ""]


def _peak_gib(folder: Path, run: str, role: str, key: str) -> float:
    """A role's peak memory during a run (GiB), from the run's ``summary.json``; NaN where not recorded."""
    path = folder / "runs" / run / "summary.json"
    resources = json.loads(path.read_text()).get("resources", {}) if path.exists() else {}
    return resources.get(role, {}).get(key, math.nan) / 1024


def efficiency_verdict(table: pd.DataFrame) -> str:
    """Where the efficiency reaches 70 %, and its value at the largest W whose ideal rate the engine
    alone (the no-delay run) sustains."""
    good = table.loc[table["efficiency"] >= 0.7, "workers"]
    verdict = f"Efficiency ≥ 70 %: at W = {', '.join(str(w) for w in good)}." if len(good) else \
        "Efficiency ≥ 70 %: at no W measured."
    sustained = table[table["no-delay throughput"] >= table["ideal"]]
    if sustained.empty:
        return verdict + " The engine sustains the ideal rate at no W measured."
    top = sustained.loc[sustained["workers"].idxmax()]
    return (verdict + f" Largest W whose ideal rate the engine sustains without delay: W = {int(top['workers'])} "
            f"(capacity {top['no-delay throughput']:,.0f} ≥ {top['ideal']:,.0f} messages/s); efficiency there "
            f"{100 * top['efficiency']:.0f} %.")
