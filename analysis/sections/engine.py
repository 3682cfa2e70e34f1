"""The engine on Spark (``make bench``): its levers off and on, and its efficiency (sg at 1 ms against
the ideal W / delay)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from skewbench.analysis.repeats import CI_BARS, compare, interval
from skewbench.analysis.sections.common import figure, load, markdown

#: Issue 20's goal for the engine's overhead per batch without delay, by W (seconds).
OVERHEAD_GOAL = {10: 0.4, 20: 0.6, 50: 1.2, 100: 2.0}


def levers(folder: Path) -> list[str]:
    """The ``levers`` study: the engine's overhead per batch by W with each lever set, repeats as 95 % intervals."""
    from skewbench.bench.spark.engine import LEVERS

    data = load(folder, "levers")
    if data is None:
        return []
    order = sorted(set(data["levers"]), key=lambda s: (s != "none", -s.count("+"), s))  # none, then the bigger sets
    grid = sns.catplot(data=data, x="workers", y="overhead_median_s", hue="levers", hue_order=order, kind="point",
                       **CI_BARS, dodge=0.3, height=3.2, aspect=1.6)
    grid.set(xlabel="workers W", ylabel="engine overhead per batch (s)")
    none = {w: runs["overhead_median_s"] for w, runs in data[data.levers == "none"].groupby("workers")}
    rows = []
    for (workers, lever_set), runs in data.groupby(["workers", "levers"]):
        off, on = none.get(workers, pd.Series(dtype=float)), runs["overhead_median_s"]
        rows.append({"W": workers, "levers": lever_set, "runs": len(on), "overhead s [95 % CI]": str(interval(on)),
                     "÷ none": on.mean() / off.mean(), "vs none": compare(on, off, lever_set, "none")
                     if lever_set != "none" else "", "goal s": OVERHEAD_GOAL.get(workers, np.nan),
                     "messages/s": runs["throughput"].mean()})
    table = pd.DataFrame(rows).sort_values(["W", "levers"], key=lambda c: c.map(order.index) if c.name == "levers"
                                           else c)
    slopes = {lever_set: np.polyfit(runs["workers"], runs["overhead_median_s"], 1)[0]
              for lever_set, runs in data.groupby("levers") if runs["workers"].nunique() > 1}
    return ["## The engine's levers — overhead per batch, each off and on", "",
            "sg word count without delay: a batch's duration beyond its busiest worker is the engine's own cost. "
            "Each lever (docs/engine.md) is a setting of a run, so every lever set ran in the same Spark "
            "application, in random order, with seeds as repeats; the intervals are 95 % bootstrap intervals "
            "over the seeds, and a lever set is *not distinguishable* from none where the 95 % interval of their "
            "difference (Welch's t) includes zero.", "",
            *[f"- `{name}`: {lever.why}" for name, lever in LEVERS.items()
              if any(name in s.split("+") or s == "all" for s in order)], "",
            figure(folder, "levers", grid), "", markdown(table.round(3)), "",
            "Cost of one more worker partition (slope of the overhead from the smallest to the largest W): "
            + ", ".join(f"{name} {1000 * slope:.0f} ms" for name, slope in sorted(slopes.items(),
                                                                             key=lambda kv: order.index(kv[0])))
            + " per batch.", ""]


def efficiency(folder: Path) -> list[str]:
    """Engine efficiency (``make bench``): sg at 1 ms vs. the ideal W / delay, and the per-batch cost; means over
    the seeds, the efficiency with its 95 % interval."""
    data = load(folder, "efficiency")
    if data is None:
        return []
    if "levers" in data:  # the bench's own lever set; a lever left out is the levers section's to compare
        data = data[data["levers"] == data["levers"].mode()[0]]
    delayed, bare = data[data.delay_ms > 0], data[data.delay_ms == 0]
    rows = []
    for workers, runs in delayed.groupby("workers"):
        mean = runs[["throughput", "efficiency", "overhead_median_s", "batch_median_s"]].mean()
        rows.append({"workers": workers, "runs": len(runs), "batch_rows": runs["batch_rows"].iloc[0],
                     "throughput": mean["throughput"], "ideal": runs["ideal"].iloc[0], "efficiency": mean["efficiency"],
                     "efficiency [95 % CI]": str(interval(runs["efficiency"])),
                     "overhead_median_s": mean["overhead_median_s"], "batch_median_s": mean["batch_median_s"],
                     "no-delay throughput": bare.loc[bare["workers"] == workers, "throughput"].mean(),
                     "overhead s / worker": mean["overhead_median_s"] / workers,
                     "python PSS GiB": max(_peak_gib(folder, r, "python_worker", "peak_pss_mib") for r in runs["run"]),
                     "executors RSS GiB": max(_peak_gib(folder, r, "executor", "peak_rss_mib") for r in runs["run"])})
    table = pd.DataFrame(rows)
    long = pd.concat([delayed.assign(run="sg, 1 ms"), bare.assign(run="sg, no delay"),
                      delayed.assign(run="ideal W / delay", throughput=delayed["ideal"])])
    grid = sns.relplot(data=long, x="workers", y="throughput", hue="run", kind="line", marker="o", height=3,
                       aspect=1.5, **CI_BARS)
    grid.set(xlabel="workers W", ylabel="messages/s")
    return ["## Engine efficiency — sg, 1 ms per message, W = 10 … 100", "",
            figure(folder, "efficiency", grid), "", *_overhead_parts(folder, delayed),
            markdown(table.drop(columns="efficiency").round(3)), "",
            "Overhead = batch duration − the busiest worker's busy time (median over the batches), drawn above "
            "in the three parts where it is paid. It has a part per worker (one Spark task, one state-store "
            "version and one Python call per worker and batch) and a part per message (routing, Arrow, shuffle, "
            "state update), both paid on the machine's cores; with a fixed cost c per batch, efficiency is "
            "B / (B + c) for B seconds of work per batch. The no-delay runs measure the engine's capacity: "
            "where it is below the ideal W / delay, "
            "no batch size can reach the ideal on this machine. Memory: peaks of the summed PSS of the Python "
            "workers (a page shared by the forks of one daemon counted once) and of the executors' RSS. "
            + efficiency_verdict(table), ""]


#: Issue 20's goal for the engine's share of a batch at the matrix centre, every scheme.
SHARE_GOAL = 0.10


def centre(folder: Path) -> list[str]:
    """The ``centre`` study: every scheme at the matrix's centre with 5 s of work per worker and batch — the
    engine's share of each batch and the throughput, means over the seeds with their 95 % intervals."""
    data = load(folder, "centre")
    if data is None or "engine_share" not in data:
        return []
    share = data.groupby("scheme")["engine_share"].mean().sort_values()
    order = share.index.tolist()
    grid = sns.catplot(data=data, x="scheme", y="engine_share", order=order, kind="bar", color="#8da0cb",
                       height=3.2, aspect=2.6, **CI_BARS)
    for ax in grid.axes.flat:
        ax.axhline(SHARE_GOAL, color="grey", lw=0.8, ls="--")
    grid.set_xticklabels(rotation=45, ha="right")
    grid.set(ylabel="engine share of a batch", title=_centre_title(data))
    rows = [{"scheme": scheme, "runs": len(runs), "engine share [95 % CI]": str(interval(runs["engine_share"])),
             "messages/s [95 % CI]": str(interval(runs["throughput"])), "max / mean": runs["max_over_mean"].mean(),
             "before first worker s": runs["before_workers_median_s"].mean(),
             "after last worker s": runs["after_workers_median_s"].mean()}
            for scheme, runs in data.groupby("scheme")]
    table = pd.DataFrame(rows).set_index("scheme").loc[order].reset_index()
    over = share[share > SHARE_GOAL]
    return ["## The engine's share of a batch at the matrix centre — every scheme", "",
            "Engine share = (batch duration − the busiest worker's work) / batch duration, the median over a run's "
            "measured batches: what the engine, not the scheme, decides of each batch. Issue 20's goal: at most "
            f"{100 * SHARE_GOAL:.0f} % for every scheme (dashed line) with batches of at most 5 s of work per "
            "worker.", "",
            figure(folder, "centre", grid), "", markdown(table.round(3)), "",
            f"Mean engine share ≤ {100 * SHARE_GOAL:.0f} % for {len(share) - len(over)} of {len(share)} schemes"
            + (f"; above it: {', '.join(f'{s} {v:.3f}' for s, v in over.items())}." if len(over) else "."), ""]


def _centre_title(data: pd.DataFrame) -> str:
    first = data.iloc[0]
    work = first["batch_rows"] / first["workers"] * first["delay_ms"] / 1000
    return (f"{first['app']}, W = {first['workers']}, S = {first['sources']}, {first['delay_ms']:g} ms, "
            f"{work:g} s of work per worker and batch")


#: The parts of a batch's engine overhead (``skewbench.bench.spark.summary.batch_table``), as the report names them.
OVERHEAD_PARTS = {"before_workers_median_s": "before the first worker starts (routing, shuffle, task launch)",
                  "workers_spread_median_s": "workers starting late (task launch) or waiting for a core",
                  "after_workers_median_s": "after the last worker ends (results, state commits, driver)"}


def _overhead_parts(folder: Path, delayed: pd.DataFrame) -> list[str]:
    """A stacked bar per W of the engine overhead per batch, split where it is paid (runs that recorded it)."""
    if not set(OVERHEAD_PARTS) <= set(delayed.columns):
        return []
    parts = delayed.groupby("workers")[list(OVERHEAD_PARTS)].mean().rename(columns=OVERHEAD_PARTS)  # over seeds
    ax = parts.plot.bar(stacked=True, figsize=(6, 3.2), rot=0)
    ax.set(xlabel="workers W", ylabel="seconds per batch (median, mean of seeds)",
           title="engine overhead per batch")
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
