"""Fang et al. (HPDC 2017), Sec. 5: Figs. 7-16 from ``make study``'s fang_* tables (bench/papers/fang.py).

One heading per figure group.  Every figure draws the median over the seeds run with their whole spread (a band
where there are several: planning, fluctuation and Fig. 14 run five seeds), and under it the paper's published
numbers and claims for that figure beside ours (the recipes of analysis/measures/fang.yaml).  Where the paper
gives a number the figure also marks it (★, or a dotted line).  Throughput is simulated as the bottleneck share
mean/max of the instances' loads per interval (1 = Ideal): Fang saturates the CPU, so the busiest instance paces
the operator.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns
from skewbench.analysis.published import published
from skewbench.analysis.sections import common
from skewbench.analysis.sections.common import BAND, figure, markdown, study_table

TABLES = ("fang_hash_skew", "fang_planning", "fang_discretization", "fang_fluctuation", "fang_real_theta",
          "fang_real_scale_out", "fang_tpch")
NAMES = {"mixed": "Mixed", "mixed-brute": "Mixed_BF", "mintable": "MinTable", "minmig": "MinMig", "llfd": "LLFD",
         "gedik-readj": "Readj", "pkg": "PKG", "kg": "Storm (hash)", "sg": "Ideal (shuffle)"}  # the paper's names
PALETTE = dict(zip(NAMES.values(), sns.color_palette("tab10")))
SPREAD = "Median over the seeds run (band: best to worst seed, where there are several)."
# results.* entries are cited for "Figs. 7-15" as a whole: the figure each number is read from (Sec. 5).
RESULTS_AT = {7: ("hash_max_over_min_load_40_instances",),
              9: ("mixed_plan_generation_s_strict_theta_max", "mintable_migration_vs_mixed"),
              11: ("compact_representation_plan_s.original_key_space", "compact_representation_plan_s.discretized",
                   "discretization_load_error_max_pct"),
              14: ("mixed_vs_storm_readj_throughput_stock_small_theta",),
              15: ("readj_plan_on_scale_out_social_min_s",)}


def sections(folder: Path) -> list[str]:
    """Figs. 7-16 of the paper, for the fang_* tables present in ``folder`` (none: no section)."""
    tables = {name: _table(folder, name) for name in TABLES}
    if all(t is None for t in tables.values()):
        return []
    beside = common.beside(folder, "fang")
    parts = [(fig7, "fang_hash_skew"), (figs8_10, "fang_planning"), (fig11, "fang_discretization"),
             (figs12_13, "fang_fluctuation"), (fig14, "fang_real_theta"), (fig15, "fang_real_scale_out"),
             (fig16, "fang_tpch")]
    return [line for part, name in parts if tables[name] is not None
            for line in part(folder, tables[name], beside)]


def published_table(beside: pd.DataFrame, figs: tuple[int, ...]) -> list[str]:
    """Every published number and claim of the figures ``figs`` beside ours, as Markdown lines."""
    ids = [f"results.{r}" for n in figs for r in RESULTS_AT.get(n, ())]
    ids += [i for i in beside.index if any(i.startswith(f"fig{n}_") for n in figs)]
    return common.published_table(beside.loc[[i for i in ids if i in beside.index]], "fang")


# --- reading and the paper's numbers -----------------------------------------------------------------------------

def _table(folder: Path, name: str) -> pd.DataFrame | None:
    """One experiment's rows, schemes by the paper's names; Readj only at its best σ (Fang reports the best)."""
    data = study_table(folder, name)
    if data is None:
        return None
    if "best" in data:
        data = data[data.best.astype(bool)]
    return data.assign(scheme=data.scheme.map(NAMES).fillna(data.scheme)) if "scheme" in data else data










def _star(ax, x, y, scheme: str | None = None) -> None:
    """A published value, in its scheme's colour (black: no single scheme)."""
    ax.scatter([x], [y], marker="*", s=140, color=PALETTE.get(scheme, "black"), edgecolor="black", zorder=5)


def _order(data: pd.DataFrame) -> list[str]:
    return [s for s in PALETTE if s in set(data.scheme)]


def _log_ticks(ax, ticks) -> None:
    """A log x axis labelled at ``ticks`` only, in plain numbers."""
    ax.set_xscale("log")
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()


def _long(data: pd.DataFrame, ids: list[str], metrics: dict) -> pd.DataFrame:
    """Several measurements as one column (``value``) with a ``metric`` label, for row/col facets (an id the
    table lacks, such as ``seed`` in a one-seed table, is left out)."""
    long = data.melt(id_vars=[i for i in ids if i in data], value_vars=list(metrics), var_name="metric")
    return long.assign(metric=long.metric.map(metrics))


# --- the figures -------------------------------------------------------------------------------------------------

def fig7(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Fig. 7: skew of the instances' average load over 50 intervals under the consistent hash, (a) over the
    number of instances W (K = 10,000), (b) over the key domain K (W = 15)."""
    long = _long(data.assign(x=data.workers.where(data.sweep == "workers", data["keys"])),
                 ["sweep", "x"], {"max_over_min": "max / min", "max_over_mean": "max / mean"})
    long["sweep"] = long.sweep.map({"workers": "(a) instances W", "keys": "(b) key domain K"})
    grid = sns.relplot(data=long, x="x", y="value", hue="metric", col="sweep", kind="line", marker="o",
                       height=2.8, aspect=1.2, facet_kws={"sharex": False})
    grid.set_titles("{col_name}").set_ylabels("load ratio")
    axes = dict(zip(grid.col_names, grid.axes.flat))
    axes["(a) instances W"].set_xlabel("W")
    axes["(b) key domain K"].set(xscale="log", xlabel="K")
    _star(axes["(a) instances W"], 40, published()["fang"]["results"]["hash_max_over_min_load_40_instances"])
    return ["## Fang Fig. 7 — load skew under hashing vs. instances W and key domain K",
            "Zipf z = 0.85 fluctuating at f = 1, consistent hash with 100 points per instance; the instances' load "
            "averaged over 50 intervals (the paper plots its distribution; we give the max / min it cites and the "
            "max / mean). ★: the paper's max / min ≈ 2.5 at W = 40.", "", figure(folder, "fang_fig7", grid), "",
            *published_table(beside, (7,))]


PLANNING = {"max_over_mean": "imbalance max/mean", "table_size": "table size |A|",
            "migration_pct": "migration % of state", "plan_seconds": "plan time (s)"}
SWEEPS = {"workers": "instances W", "theta": "θmax", "keys": "key domain K"}


def figs8_10(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Figs. 8-10: Mixed vs MinTable with windows w = 1 and 5, one column per swept setting (W, θmax, K), one row
    per measure; each point a run's average over its intervals (plan time over the plans made)."""
    data = data.assign(x=[row[row.sweep] for _, row in data.iterrows()], window=data.window.astype(str))
    long = _long(data, ["sweep", "x", "scheme", "window", "seed"], PLANNING)
    long["sweep"] = long.sweep.map(SWEEPS)
    grid = sns.relplot(data=long, x="x", y="value", hue="scheme", style="window", row="metric", col="sweep",
                       col_order=[c for c in SWEEPS.values() if c in set(long.sweep)],
                       row_order=list(PLANNING.values()),
                       hue_order=_order(data), palette=PALETTE, kind="line", marker="o", estimator="median",
                       errorbar=BAND, height=2.2, aspect=1.3, facet_kws={"sharex": "col", "sharey": "row"})
    grid.set_titles("{row_name} | {col_name}").set_xlabels("").set_ylabels("")
    for (metric, sweep), ax in grid.axes_dict.items():
        if sweep == "θmax":
            _log_ticks(ax, [0.02, 0.08, 0.32])
        elif sweep == "key domain K":
            ax.set_xscale("log")
        if metric == "plan time (s)":
            ax.set_yscale("log")
            if sweep == "θmax":  # "within 1 second" even at a strict θmax
                ax.axhline(published()["fang"]["results"]["mixed_plan_generation_s_strict_theta_max"],
                           color="black", linestyle=":", linewidth=1)
    return ["## Fang Figs. 8-10 — imbalance, table size, migration and plan time vs. instances W, θmax and key "
            "domain K",
            "Mixed vs MinTable, windows w = 1 (solid) and 5 (dashed); defaults K = 10,000, W = 15, θmax = 0.08, "
            "A_max = 3,000, f = 1, z = 0.85; each point averages a run of 20 intervals (5 at K = 1,000,000), "
            "imbalance after the first. Dotted: the paper's bound \"within 1 second\" at strict θmax. "
            f"{SPREAD}", "", figure(folder, "fang_fig8_10", grid), "", *published_table(beside, (8, 9, 10))]


def fig11(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Fig. 11: Mixed's plan time (a) and the load-estimation error (b) on the compact representation against
    the HLHE granularity 2^e, with the original key space as a horizontal line, for K = 10,000 and 1,000,000."""
    compact = data[data.representation == "compact"].assign(K=lambda d: d["keys"].map("{:,}".format))
    long = _long(compact, ["K", "granularity"], {"solve_seconds": "(a) plan time (s)", "error_pct": "(b) error %"})
    colours = dict(zip(sorted(set(compact.K), key=lambda k: int(k.replace(",", ""))), sns.color_palette()))
    grid = sns.relplot(data=long, x="granularity", y="value", hue="K", palette=colours, col="metric", kind="line",
                       marker="o", height=2.8, aspect=1.2, facet_kws={"sharey": False})
    grid.set_titles("{col_name}").set_ylabels("").set(yscale="log")
    for ax in grid.axes.flat:
        _log_ticks(ax, [1, 4, 16, 64, 256])
    timing, error = grid.axes_dict["(a) plan time (s)"], grid.axes_dict["(b) error %"]
    for row in data[data.representation == "original"].itertuples():
        timing.axhline(row.solve_seconds, color=colours.get(f"{row.keys:,}", "grey"), linestyle="--", linewidth=1)
    paper = published()["fang"]["results"]
    timing.axhline(paper["compact_representation_plan_s"]["original_key_space"], color="black", linestyle=":",
                   linewidth=1)
    _star(timing, 1, paper["compact_representation_plan_s"]["discretized"])
    error.axhline(paper["discretization_load_error_max_pct"], color="black", linestyle=":", linewidth=1)
    return ["## Fang Fig. 11 — compact representation: plan time and load-estimation error vs. granularity",
            "Mixed on the compact records (HLHE degree e, granularity 2^e = 1 … 256) of the same planning problems; "
            "dashed: the original key space, in its K's colour. Plan time is the planner alone (Fang's instances "
            "report compact records). Error: the worst instance's |estimated − actual| load, % of actual, mean "
            "over intervals. Black dotted: the paper's original key space (6 s) in (a) and its error bound (1 %) "
            "in (b); ★ its 0.6 s at granularity 1. The paper's numbers are read at K = 1,000,000 (its \"within 1 "
            "second\" at the default K rules out a 6 s plan there; analysis/measures/fang.yaml).", "",
            figure(folder, "fang_fig11", grid), "",
            *published_table(beside, (11,))]


FLUCTUATION = {"plan_seconds": "(12a) plan time (s)", "migration_pct": "(12b) migration % of state",
               "bottleneck": "(13) throughput share mean/max"}


def figs12_13(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Figs. 12-13: plan time and migration (Mixed, Mixed_BF, Readj at its best σ) and throughput (also Ideal and
    Storm's hashing) against the fluctuation rate f."""
    long = _long(data, ["f", "scheme", "seed"], FLUCTUATION)
    long = long[(long.metric == FLUCTUATION["bottleneck"]) | long.scheme.isin(["Mixed", "Mixed_BF", "Readj"])]
    grid = sns.relplot(data=long, x="f", y="value", hue="scheme", col="metric", hue_order=_order(data),
                       palette=PALETTE, kind="line", marker="o", estimator="median", errorbar=BAND, height=2.8,
                       aspect=1.1, facet_kws={"sharey": False})
    grid.set_titles("{col_name}").set_ylabels("")
    grid.axes_dict[FLUCTUATION["plan_seconds"]].set_yscale("log")
    if "planned_bottleneck" in data:  # Mixed's plan on the counts it was made from: the share without the lag
        planned = data[data.scheme == "Mixed"].groupby("f").planned_bottleneck.median()
        grid.axes_dict[FLUCTUATION["bottleneck"]].plot(planned.index, planned.values, linestyle="--",
                                                        color=PALETTE["Mixed"], linewidth=1)
    return ["## Fang Figs. 12-13 — plan time, migration and throughput vs. the fluctuation rate f",
            "W = 15, K = 10,000, θmax = 0.08, 10 intervals; f: the instances' loads change by f mean loads "
            "between intervals (our reading). Readj at the best of its σ by throughput, as Fang reports. "
            "Throughput: the bottleneck share mean/max (1 = Ideal) of each interval under the plan made at the "
            "end of the one before; dashed: Mixed's plans on the interval they were made from (no lag). Latency "
            "is not simulated. " + SPREAD, "",
            figure(folder, "fang_fig12_13", grid), "", *published_table(beside, (12, 13))]


def fig14(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Fig. 14: throughput share against θmax on the Social (a) and Stock (b) stand-ins."""
    data = data.assign(dataset=data.dataset.map({"social": "(a) Social", "stock": "(b) Stock"}))
    grid = sns.relplot(data=data, x="theta", y="bottleneck", hue="scheme", col="dataset", hue_order=_order(data),
                       palette=PALETTE, kind="line", marker="o", estimator="median", errorbar=BAND, height=2.8,
                       aspect=1.2)
    grid.set_titles("{col_name}").set(xlabel="θmax", ylabel="throughput share mean/max")
    for ax in grid.axes.flat:
        _log_ticks(ax, [0.02, 0.08, 0.32])
    return ["## Fang Fig. 14 — throughput vs. θmax on the real workloads' stand-ins",
            "Social: Zipf 0.85 over 180,000 keys, 5 day-intervals, f = 0.5; Stock: 1,036 keys, 3 day-intervals, "
            "f = 2 (the traces are not available); W = 15. PKG on Social only (no join), as in the paper. The "
            "paper's Fig. 14 numbers on Storm (Mixed 10 % above PKG, 2× Storm at strict θmax on Stock) are "
            "ratios: see the table. " + SPREAD, "", figure(folder, "fang_fig14", grid), "",
            *published_table(beside, (14,))]


def fig15(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Fig. 15: throughput share per interval around the scale-out W = 15 → 16 (after interval 3), with the
    plan time of the scale-out step per scheme."""
    data = data.assign(dataset=data.dataset.map({"social": "(a) Social", "stock": "(b) Stock"}))
    grid = sns.relplot(data=data, x="interval", y="bottleneck", hue="scheme", col="dataset", hue_order=_order(data),
                       palette=PALETTE, kind="line", marker="o", height=2.8, aspect=1.3)
    grid.set_titles("{col_name}").set(ylabel="throughput share mean/max")
    for ax in grid.axes.flat:
        ax.axvline(3.5, color="grey", linestyle=":", linewidth=1)  # the new instance takes load from interval 4
    step = data[data.phase == "scale_out"].pivot_table(index="scheme", columns="dataset", values="plan_seconds")
    paper = published()["fang"]["results"]["readj_plan_on_scale_out_social_min_s"]
    return ["## Fang Fig. 15 — throughput during scale-out (one instance added)",
            "Balanced for 3 intervals, the plan for W = 16 made at the end of interval 3 (dotted), a fluctuation "
            "at interval 4; W = 15, θmax = 0.08, Readj at its best σ.", "", figure(folder, "fang_fig15", grid), "",
            f"Plan time of the scale-out step, seconds (the paper: Readj on Social \"at least {paper / 60:.0f} "
            "minutes\"):", "", markdown(step.reset_index().rename_axis(columns=None)), "",
            *published_table(beside, (15,))]


def fig16(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Fig. 16: TPC-H Q5 stand-in, throughput share per scheme at each θmax."""
    grid = sns.catplot(data=data, x="theta", y="bottleneck", hue="scheme", hue_order=_order(data), palette=PALETTE,
                       kind="bar", estimator="median", errorbar=BAND, height=2.8, aspect=1.6)
    grid.set(xlabel="θmax", ylabel="throughput share mean/max")
    return ["## Fang Fig. 16 — TPC-H Q5 stand-in: throughput per balancing tolerance θmax",
            "Q5's join keyed by a Zipf 0.85 foreign key over 10,000 suppliers, 20 three-minute intervals, a "
            "window of 2 intervals, the distribution changing every 5 intervals (no DBGen data or Storm join). "
            + SPREAD, "", figure(folder, "fang_fig16", grid), "", *published_table(beside, (16,))]
