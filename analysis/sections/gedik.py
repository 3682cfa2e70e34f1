"""Gedik (VLDB J. 2014), Sec. 5: Figs. 3-14 from ``make study``'s gedik_* tables (bench/papers/gedik.py).

One heading per figure group, each figure with the median of the runs (line or point) and their whole spread
(band or bar: the best to the worst run), and under it the paper's published numbers and claims for that figure
beside ours (the fidelity recipes of analysis/measures/gedik.yaml).  Where the paper gives a number the figure
also marks it (★, or a dotted line / shaded range).
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from skewbench.analysis.published import published
from skewbench.analysis.sections import common
from skewbench.analysis.sections.common import BAND, figure, markdown, study_table

TABLES = ("gedik_resources", "gedik_skew", "gedik_sigma", "gedik_channels", "gedik_utility", "gedik_domain")
NAMES = {"kg": "uniform hash", "consistent": "consistent hash", "gedik-scan": "scan", "gedik-redist": "redist",
         "gedik-readj": "readj"}  # the paper's names
PALETTE = dict(zip(NAMES.values(), sns.color_palette("tab10")))
SPREAD = "Median over the runs; band or bar: best to worst run."
METRICS = {"relative_migration": "migration m", "relative_imbalance": "imbalance b"}
# results.* entries are cited for "Figs. 3-12" as a whole: the figure each number is read from (Sec. 5.3-5.5).
RESULTS_AT = {
    3: ("uniform_hash_relative_migration.min", "consistent_hash_relative_imbalance_LLL",
        "uniform_hash_relative_imbalance_LLL", "readj_relative_imbalance_LLL", "scan_redist_relative_imbalance_LLL",
        "readj_relative_migration_LLL", "scan_redist_relative_migration_LLL"),
    6: ("uniform_hash_relative_migration.at_32_channels", "redist_relative_migration_flat",
        "scan_relative_migration_32_channels_min", "consistent_hash_relative_imbalance_32_channels_min"),
    9: ("lossy_counter_items_sigma_0_1", "lossy_counter_items_LQL_sigma_0_1", "explicit_hash_items_sigma_0_1"),
    12: ("readj_construction_s.sigma_0_1_max", "readj_construction_s.sigma_0_008", "redist_construction_s_sigma_0_008"),
}


def sections(folder: Path) -> list[str]:
    """Figs. 3-14 of the paper, for the gedik_* tables present in ``folder`` (none: no section)."""
    tables = {name: _table(folder, name) for name in TABLES}
    if all(t is None for t in tables.values()):
        return []
    beside = common.beside(folder, "gedik")
    parts = [(fig3, "gedik_resources"), (fig4, "gedik_skew"), (fig5, "gedik_sigma"), (fig6, "gedik_channels"),
             (fig7, "gedik_utility"), (fig8, "gedik_domain")]
    lines = []
    for part, name in parts:
        if tables[name] is not None:
            lines += part(folder, tables[name], beside)
    lines += sizes(folder, tables, beside) + times(folder, tables, beside)
    return lines


def published_table(beside: pd.DataFrame, fig: int | tuple[int, ...]) -> list[str]:
    """Every published number and claim of figure(s) ``fig`` beside ours, as Markdown lines."""
    figs = (fig,) if isinstance(fig, int) else fig
    ids = [f"results.{r}" for n in figs for r in RESULTS_AT.get(n, ())]
    ids += [i for i in beside.index if any(re.match(rf"fig{n}[ab]?_", i) for n in figs)]  # Fig. 7 has (a), (b)
    return common.published_table(beside.loc[[i for i in ids if i in beside.index]], "gedik")


# --- reading ---------------------------------------------------------------------------------------------------

def _table(folder: Path, name: str) -> pd.DataFrame | None:
    """One experiment's rows (exactly ``name``.csv: gedik_skew_onset is a table of its own), schemes by the
    paper's names."""
    data = study_table(folder, name)
    return None if data is None else data.assign(scheme=data.scheme.map(NAMES).fillna(data.scheme))










def _long(data: pd.DataFrame, ids: list[str], metrics: dict = METRICS) -> pd.DataFrame:
    """Migration and imbalance as one column (``value``) with a ``metric`` label, for row/col facets."""
    long = data.melt(id_vars=ids, value_vars=list(metrics), var_name="metric")
    return long.assign(metric=long.metric.map(metrics))


def _ideal(grid) -> None:
    """The paper's ideal line: relative values ≤ 1 (Figs. 3-8)."""
    for ax in grid.axes.flat:
        ax.axhline(1, color="black", linewidth=0.8)


def _star(ax, x, y, scheme: str | None = None) -> None:
    """A published value, in its scheme's colour (black: no single scheme)."""
    ax.scatter([x], [y], marker="*", s=120, color=PALETTE.get(scheme, "black"), edgecolor="black", zorder=5)


def _lines(data, x, **facets):
    """Median over runs with the whole spread, one line per scheme; every panel its own y scale."""
    grid = sns.relplot(data=data, x=x, y="value", hue="scheme", kind="line", marker="o", estimator="median",
                       errorbar=BAND, palette=PALETTE, hue_order=[s for s in PALETTE if s in set(data.scheme)],
                       height=2.6, aspect=1.15, facet_kws={"sharey": False, "sharex": False}, **facets)
    return _titled(grid)


def _titled(grid):
    """Short panel titles (the facet values alone) and the y label the paper uses."""
    grid.set_titles(" | ".join(f"{{{k}_name}}" for k in ("row", "col") if getattr(grid, f"{k}_names")))
    grid.set_ylabels("relative value")
    return grid


def _shared_legend(fig, ax) -> None:
    """One legend for the whole figure, right of it, from the panel ``ax`` that drew every entry."""
    handles, labels = ax.get_legend_handles_labels()
    ax.get_legend().remove()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7, frameon=False)


# --- Figs. 3-8: balance and migration ---------------------------------------------------------------------------

def fig3(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Fig. 3 (radar charts): m, b and b_s, b_c, b_n per algorithm, one panel per resource functions (z = 1)."""
    metrics = {"relative_migration": "m", "relative_imbalance": "b", "b_s": "b_s", "b_c": "b_c", "b_n": "b_n"}
    long = _long(data, ["resources", "scheme", "seed"], metrics)
    grid = sns.catplot(data=long, x="metric", y="value", hue="scheme", col="resources", kind="point",
                       estimator="median", errorbar=BAND, dodge=0.5, linestyle="none", palette=PALETTE,
                       hue_order=list(NAMES.values()), col_order=["CCL", "LCL", "LLL", "LQL"], height=2.8,
                       aspect=1.1, marker="o", markersize=4)
    _titled(grid).set(yscale="log", xlabel="")
    _ideal(grid)
    return ["## Gedik Fig. 3 — migration and imbalance per resource functions (z = 1, N = 10)",
            "Relative migration m (Eq. 12), relative imbalance b (Eq. 11) and its per-resource b_s, b_c, b_n, "
            f"each against the ideal 1 (black line). {SPREAD}", "", figure(folder, "gedik_fig3", grid), "",
            *published_table(beside, 3)]


def fig4(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Fig. 4: m and b against the Zipf skew z, one column per resource functions; the onsets of imbalance."""
    grid = _lines(_long(data, ["resources", "scheme", "seed", "z"]), "z", row="metric", col="resources",
                  col_order=["LCL", "LLL", "LQL"])
    _ideal(grid)
    for ax in grid.axes[0]:
        ax.set_yscale("log")
        ax.axhline(8, color=PALETTE["uniform hash"], linestyle=":", linewidth=1)  # the paper: "more than 8"
    lines = ["## Gedik Fig. 4 — migration and imbalance vs. skew z (N = 10)",
             f"{SPREAD} Dotted line: the paper's uniform-hash migration (\"more than 8 times the ideal\").", "",
             figure(folder, "gedik_fig4", grid), ""]
    onset = study_table(folder, "gedik_skew_onset")
    if onset is not None:
        median = onset.assign(scheme=onset.scheme.map(NAMES)).pivot_table(
            index="resources", columns="scheme", values="onset_z", aggfunc="median")
        lines += ["Skew z at which b crosses 1 (interpolated between the swept z; median over runs; inf: never in "
                  "the range swept). The paper: consistent hash first, LQL earliest and LCL latest.", "",
                  markdown(median[[s for s in NAMES.values() if s in median]].reset_index()), ""]
    return lines + published_table(beside, 4)


def fig5(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Fig. 5: m and b against the frequency threshold scaler σ, for LCL and LQL."""
    data = data[data.resources.isin(["LCL", "LQL"]) & (data.sigma >= 0.01)]  # 0.008: Sec. 5.5's times only
    grid = _lines(_long(data, ["resources", "scheme", "seed", "sigma"]), "sigma", row="metric", col="resources")
    grid.set(xscale="log")
    _ideal(grid)
    for ax in grid.axes[0]:
        ax.set_yscale("log")  # uniform hash's m ≈ 9 beside the others' ≈ 1
    return ["## Gedik Fig. 5 — migration and imbalance vs. the frequency threshold scaler σ (z = 1, N = 10)",
            SPREAD, "", figure(folder, "gedik_fig5", grid), "", *published_table(beside, 5)]


def fig6(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Fig. 6: m and b against the number of channels N (one growth N = 2 … 32 per run)."""
    grid = _lines(_long(data, ["scheme", "seed", "workers"]), "workers", col="metric")
    _ideal(grid)
    paper = published()["gedik"]["results"]
    migration, imbalance = grid.axes.flat
    migration.set_yscale("log")
    _star(migration, 32, paper["uniform_hash_relative_migration"]["at_32_channels"], "uniform hash")
    _star(migration, 32, paper["scan_relative_migration_32_channels_min"], "scan")
    migration.axhline(paper["redist_relative_migration_flat"], color=PALETTE["redist"], linestyle=":", linewidth=1)
    _star(imbalance, 32, paper["consistent_hash_relative_imbalance_32_channels_min"], "consistent hash")
    return ["## Gedik Fig. 6 — migration and imbalance vs. the number of channels N (LCL, z = 1)",
            f"{SPREAD} m is the migration of the step N − 1 → N. ★: the paper's values at N = 32 (uniform hash m "
            "≈ 22, scan m above 3, consistent hash b above 2); dotted: redist's flat m ≈ 1.15.", "",
            figure(folder, "gedik_fig6", grid), "", *published_table(beside, 6)]


def fig7(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Fig. 7: the utility functions U^A … U^ATLM, (a) readj and (b) redist, per resource functions."""
    long = _long(data, ["resources", "scheme", "seed", "utility"])
    grid = sns.catplot(data=long, x="utility", y="value", hue="resources", row="scheme", col="metric", kind="point",
                       estimator="median", errorbar=BAND, dodge=0.4, linestyle="none", row_order=["readj", "redist"],
                       order=["A", "APM", "APLM", "ATM", "ATLM"], height=2.6, aspect=1.3, marker="o", markersize=4,
                       sharey=False)
    _titled(grid).set(yscale="log")
    _ideal(grid)
    return ["## Gedik Fig. 7 — utility functions for readj (a) and redist (b) (z = 1, N = 10)",
            f"{SPREAD} U^A = ρ, U^APM = ρ + γ, U^APLM = ρ + log(1 + γ), U^ATM = ρ(1 + γ), "
            "U^ATLM = ρ(1 + log(1 + γ)).", "", figure(folder, "gedik_fig7", grid), "", *published_table(beside, 7)]


def fig8(folder: Path, data: pd.DataFrame, beside: pd.DataFrame) -> list[str]:
    """Fig. 8: m and b against the domain size |D| (10⁴ … 10⁷ here; the paper goes to 10⁸)."""
    grid = _lines(_long(data, ["scheme", "seed", "domain"]), "domain", col="metric")
    grid.set(xscale="log")
    _ideal(grid)
    migration = grid.axes.flat[0]
    migration.set_yscale("log")
    migration.axhspan(6.5, 7.5, color=PALETTE["uniform hash"], alpha=0.2)  # the paper's 6.5x - 7.5x
    migration.axhspan(1.25, 2.2, color="grey", alpha=0.2)  # the paper's algorithms: 1.25x - 2.2x
    return ["## Gedik Fig. 8 — migration and imbalance vs. the domain size |D| (z = 1, N = 10)",
            f"{SPREAD} Shaded: the paper's migration ranges, uniform hash 6.5-7.5 (its colour) and scan/redist/"
            "readj 1.25-2.2 (grey). |D| = 10⁸ is not run (see analysis/measures/gedik.yaml).", "",
            figure(folder, "gedik_fig8", grid), "", *published_table(beside, 8)]


# --- Figs. 9-14: function size and construction time ----------------------------------------------------------

def _panels(count: int):
    fig, axes = plt.subplots(1, count, figsize=(3.4 * count, 3), squeeze=False)
    return fig, axes[0]


def sizes(folder: Path, tables: dict, beside: pd.DataFrame) -> list[str]:
    """Figs. 9-11: items in the lossy counter (solid) and in the explicit hash (dashed) vs. σ, z and N (scan:
    the sizes do not depend on the algorithm)."""
    sweeps = [(9, "gedik_sigma", "sigma"), (10, "gedik_skew", "z"), (11, "gedik_channels", "workers")]
    sweeps = [(n, tables[name], x) for n, name, x in sweeps if tables[name] is not None]
    if not sweeps:
        return []
    fig, axes = _panels(len(sweeps))
    for ax, (n, data, x) in zip(axes, sweeps):
        data = data[(data.scheme == "scan") & (data[x] >= 0.01 if x == "sigma" else True)]
        long = data.melt(id_vars=["resources", "seed", x], value_vars=["lossy_items", "explicit_items"],
                         var_name="items in")
        long["items in"] = long["items in"].map({"lossy_items": "lossy counter", "explicit_items": "explicit hash"})
        long["value"] = long["value"].clip(lower=0.5)  # log axis: an empty explicit hash is drawn at 0.5
        sns.lineplot(data=long, x=x, y="value", hue="resources", style="items in", estimator="median",
                     errorbar=BAND, marker="o", ax=ax, hue_order=["LCL", "LLL", "LQL"])
        ax.set(yscale="log", xscale="log" if x == "sigma" else "linear", ylabel="items", title=f"Fig. {n}")
        if x == "sigma":
            paper = published()["gedik"]["results"]
            _star(ax, 0.1, paper["lossy_counter_items_sigma_0_1"])
            _star(ax, 0.1, paper["lossy_counter_items_LQL_sigma_0_1"])
            _star(ax, 0.1, paper["explicit_hash_items_sigma_0_1"])
    _shared_legend(fig, axes[0])
    for ax in axes[1:]:
        ax.get_legend().remove()
    return ["## Gedik Figs. 9-11 — partitioning function size vs. σ, skew z and N (scan)",
            f"{SPREAD} Lossy counter: its peak size while counting the stream at the ε of N channels; explicit "
            "hash: the items mapped explicitly (empty: drawn at 0.5). ★: the paper's sizes at σ = 0.1 (lossy "
            "counter ≈ 2,500 for LCL and ≈ 50,000 for LQL, explicit hash ≈ 50).", "",
            figure(folder, "gedik_fig9_11", fig), "", *published_table(beside, (9, 10, 11))]


def times(folder: Path, tables: dict, beside: pd.DataFrame) -> list[str]:
    """Figs. 12-14: construction time (the new ring H_c and the explicit hash H_p) vs. σ, N and z (LCL)."""
    sweeps = [(12, "gedik_sigma", "sigma"), (13, "gedik_channels", "workers"), (14, "gedik_skew", "z")]
    sweeps = [(n, tables[name], x) for n, name, x in sweeps if tables[name] is not None]
    if not sweeps:
        return []
    fig, axes = _panels(len(sweeps))
    order = ["scan", "redist", "readj"]
    for ax, (n, data, x) in zip(axes, sweeps):
        data = data[data.scheme.isin(order) & (data.resources == "LCL")]
        sns.lineplot(data=data, x=x, y="build_seconds", hue="scheme", hue_order=order, palette=PALETTE,
                     estimator="median", errorbar=BAND, marker="o", ax=ax)
        if x == "workers":  # Fig. 13 compares scan's explicit hash with the consistent hash's construction
            ring = data[data.scheme == "scan"].melt(id_vars=[x, "seed"],
                                                    value_vars=["ring_seconds", "explicit_seconds"])
            ring["part"] = ring.variable.map({"ring_seconds": "H_c (ring)", "explicit_seconds": "scan's H_p"})
            sns.lineplot(data=ring, x=x, y="value", style="part", color="grey", estimator="median", errorbar=None,
                         ax=ax)
        ax.set(yscale="log", xscale="log" if x == "sigma" else "linear", ylabel="seconds", title=f"Fig. {n}")
        if x == "sigma":
            paper = published()["gedik"]["results"]
            _star(ax, 0.008, paper["readj_construction_s"]["sigma_0_008"], "readj")
            _star(ax, 0.008, paper["redist_construction_s_sigma_0_008"], "redist")
            ax.scatter([0.1], [paper["readj_construction_s"]["sigma_0_1_max"]], marker="v", s=60,
                       color=PALETTE["readj"], edgecolor="black", zorder=5)  # an upper bound: "below 0.05 s"
    fullest = max(axes, key=lambda ax: len(ax.get_legend_handles_labels()[0]))  # Fig. 13's has the ring too
    _shared_legend(fig, fullest)
    for ax in axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    return ["## Gedik Figs. 12-14 — construction time vs. σ, N and skew z (LCL)",
            f"{SPREAD} Time to build the new function: the ring H_c plus the explicit hash H_p (numba kernels on "
            "this machine; the paper's are C++ on a 2014 Xeon). ★: the paper's times at σ = 0.008 (readj ≈ 10 s, "
            "redist ≈ 0.5 s); ▼: its bound at σ = 0.1 (readj below 0.05 s).", "",
            figure(folder, "gedik_fig12_14", fig), "", *published_table(beside, (12, 13, 14))]
