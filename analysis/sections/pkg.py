"""PKG (Nasir et al., ICDE 2015): Table II, Figs. 2-4 and the successors, from ``make study``'s tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from skewbench.analysis.fidelity import results_folders
from skewbench.analysis.published import published
from skewbench.analysis.sections.common import BAND, figure, floored, load, markdown

PAPER_NAMES = {"kg": "Hashing", "potc": "PoTC", "on-greedy": "On-Greedy", "off-greedy": "Off-Greedy", "pkg": "PKG"}


def table2(folder: Path) -> list[str]:
    """PKG Table II: the final imbalance I(m) in messages, ours beside the paper's (every printed cell is the
    final imbalance at the trace's length: see analysis/measures/pkg.yaml), and a large cell also as a
    fraction of its stream, since our TW stream may be shorter than the paper's 1.2G."""
    tw_full = [load(place, "tw_full_pkg_table2") for place in results_folders(folder)]  # make study-tw's tw-full/
    ours = pd.concat([t for t in (load(folder, "pkg_table2"), *tw_full) if t is not None] or [pd.DataFrame()],
                     ignore_index=True)
    if ours.empty:
        return []
    paper = published()["pkg"]
    lines = ["## PKG Table II — final imbalance I(m) = max load − m/W, in messages",
             "Ours: the median over the seeds run (stream and hash functions), one source, at our stream's "
             "length m; the paper's: one run on the real trace. A cell of a few messages is perfect balance "
             "up to the last few messages (m mod W sets its fraction); a large cell grows with m, so where our "
             "m differs from the paper's the fraction I(m) / m is the one to compare.", ""]
    for dataset in ("WP", "TW"):
        mine = ours[ours.workload == dataset.lower()]
        if mine.empty:
            continue
        m_ours, m_paper = mine.messages.max(), paper["datasets"][dataset]["messages"]
        mine = mine[mine.messages == m_ours]  # the full-length run where there is one
        rows = []
        for scheme, label in PAPER_NAMES.items():
            got = mine[mine.scheme == scheme].groupby("workers")["final_imbalance"].median()
            theirs = dict(zip(paper["table2_average_imbalance"]["workers"],
                              paper["table2_average_imbalance"][dataset][label]))
            rows.append([label] + [_cell(got.get(w, np.nan), theirs[w], m_ours, m_paper) for w in theirs])
        lines += [f"**{dataset}** (ours / paper; m = {m_ours:,} / {m_paper:,.0f})", "",
                  markdown(pd.DataFrame(rows, columns=["scheme"] + [f"W={w}" for w in theirs])), ""]
    return lines


def _cell(ours: float, theirs: float, m_ours: int, m_paper: float) -> str:
    """Messages side by side; a cell of 0.5 % or more of the paper's stream adds both as fractions of their stream."""
    text = f"{ours:.3g} / {theirs:.3g}"
    if theirs >= 0.005 * m_paper and m_ours != m_paper:
        text += f" ({ours / m_ours:.2%} / {theirs / m_paper:.2%})"
    return text


def fig2(folder: Path) -> list[str]:
    """PKG Fig. 2: H vs G vs L_S over W for every dataset, with the W ≈ 2/p1 transition marked."""
    data = load(folder, "pkg_fig2")
    if data is None:
        return []
    data["technique"] = data.scheme.map({"kg": "H", "pkg-global": "G", "pkg": "L"}) + np.where(
        data.scheme == "pkg", "_S=" + data.sources.astype(str), "")
    data = data[(data.scheme != "kg") | (data.sources == data.sources.min())]
    data = data[(data.scheme != "pkg-global") | (data.sources == data.sources.min())]
    grid = sns.relplot(data=floored(data), x="workers", y="imbalance_fraction", hue="technique", col="workload",
                       col_wrap=3, kind="line", marker="o", height=2.8, facet_kws={"sharey": False},
                       estimator="median", errorbar=BAND)
    for ax, (_, part) in zip(grid.axes.flat, data.groupby("workload", sort=True)):
        ax.set(xscale="log", yscale="log", ylabel="avg imbalance / messages")
        ax.axvline(2 / (part.p1_pct.iloc[0] / 100), color="grey", linestyle=":", linewidth=1)
    lines = ["## PKG Fig. 2 — hashing (H), global (G) and local estimation (L_S)",
             "Median over the seeds run, band from the best to the worst seed. "
             "Dotted line: W = 2/p1, where two choices can no longer absorb the hottest key.", "",
             figure(folder, "pkg_fig2", grid), ""]
    gap = data.pivot_table(index=["workload", "workers"], columns="technique", values="imbalance_fraction",
                           aggfunc="median")
    l_cols = [c for c in gap.columns if c.startswith("L")]
    if "G" in gap and l_cols:
        ratio = (gap[l_cols].max(axis=1) / gap["G"].replace(0, np.nan)).dropna()
        lines.append(f"Worst L_S / G ratio over all datasets and W: {ratio.max():.2f} "
                     f"(the paper: always within one order of magnitude).\n")
    return lines


def fig3(folder: Path) -> list[str]:
    path = folder / "pkg_fig3.timeseries.csv"
    if not path.exists():
        return []
    series = pd.read_csv(path)
    series = series[series.workers_initial.isin([10, 50])]  # the figure's panels (5 and 100: "similar")
    series["technique"] = series.scheme.map({"kg": "H", "pkg-global": "G", "pkg": "L5", "pkg-probe": "L5P1"})
    rows = "workload" if "workload" in series else None
    grid = sns.relplot(data=floored(series), x="messages", y="imbalance_fraction", hue="technique",
                       col="workers_initial", row=rows, kind="line", height=2.6, aspect=1.3,
                       estimator="median", errorbar=BAND, facet_kws={"sharey": False, "sharex": False})
    grid.set(yscale="log", ylabel="I(t) / t")
    return ["## PKG Fig. 3 — imbalance through time (S=5), with periodic probing (pkg-probe)",
            "H hashing, G global oracle, L5 local estimation at 5 sources, L5P1 the same probing the true loads "
            "every minute of the trace's time.", "", figure(folder, "pkg_fig3", grid), ""]


def fig4(folder: Path) -> list[str]:
    data = load(folder, "pkg_fig4")
    if data is None:
        return []
    grid = sns.relplot(data=floored(data), x="workers", y="imbalance_fraction", hue="sources", style="split",
                       kind="line", marker="o", height=3, palette="viridis", estimator="median", errorbar=BAND)
    grid.set(xscale="log", yscale="log", ylabel="avg imbalance / messages")
    return ["## PKG Fig. 4 — skewed (by key) vs. uniform split of graph edges to sources", "",
            figure(folder, "pkg_fig4", grid), ""]


def newer(folder: Path) -> list[str]:
    data = load(folder, "newer_")  # newer_wp, newer_ln1; not the newer-* studies
    if data is None:
        return []
    grid = sns.relplot(data=floored(data), x="workers", y="imbalance_fraction", hue="scheme", col="workload",
                       kind="line", marker="o", height=3, facet_kws={"sharey": False})
    grid.set(xscale="log", yscale="log", ylabel="avg imbalance / messages")
    data["column"] = data.workload.str.replace("lognormal:preset=", "") + " W=" + data.workers.astype(str)
    columns = data.sort_values(["workload", "workers"]).column.unique()
    summary = data.pivot_table(index="scheme", columns="column", values="dist_cost")[columns]
    return ["## Successors side by side (S=5): imbalance and replication (DistCost)", "",
            figure(folder, "newer", grid), "", "DistCost (state entries per distinct key):", "",
            markdown(summary.reset_index()), ""]
