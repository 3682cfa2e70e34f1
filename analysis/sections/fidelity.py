"""The report's first section: every published entry beside ours (``fidelity.csv``), led by the distribution
of ours / the paper's over every number, then the tiers, the verdicts and every recipe changed after it was
first measured."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from skewbench.analysis.fidelity import PRIMARY, changes, measured_numbers, summary, tiers, totals, write_fidelity
from skewbench.analysis.published import entries
from skewbench.analysis.sections.common import figure, markdown

FIGURE = "fidelity"
COLOURS = {"spark": "#cf222e", "simulator": "#0969da", "spark+simulator": "#8250df"}
# A bound or a range is met anywhere on its side, so its point may lie far from 1 and still be within it.
SHAPES = {"at_least": "a lower bound", "at_most": "an upper bound", "range": "a range"}
MARKERS = {"a value": "o", "a lower bound": ">", "an upper bound": "<", "a range": "D"}


def fidelity_section(folder: Path) -> list[str]:
    table = pd.read_csv(write_fidelity(folder))
    study = " and of the simulations in `study/`" if (folder / "study").is_dir() else ""
    lines = ["## Fidelity: the papers' numbers beside ours",
             f"Every entry of `analysis/published.yaml` measured by its recipe (`analysis/measures/`) against the "
             f"result files of this folder{study}: {summary(table)}. A number agrees within 25 % of the paper's "
             "(ours / paper between 0.8 and 1.25); the other tiers are counted, not called agreement. A claim "
             "names a winner only where the 95 % interval of the difference excludes zero. Each row of "
             "[fidelity.csv](fidelity.csv) names its rule, where it was measured (`measured_on`), how a Spark run's "
             "delay was realised (`work`), the recipe's note (`caveat`) and the commit its rule was fixed after.", ""]
    drawn = distribution(table)
    if drawn is not None:
        lines += [figure(folder, FIGURE, drawn), "",
                  "*Each point a number the paper publishes: ours / the paper's, on a log scale, coloured by where "
                  "ours was measured; a triangle is a bound the paper gives (met anywhere on its side). The dark "
                  "band is 25 %, the light one 2×.*", ""]
    lines += ["Tiers of the numbers (cumulative: within 25 % includes within 10 %):", "",
              markdown(tiers(table).reset_index()), "", "Verdicts:", "", markdown(totals(table).reset_index()), ""]
    changed = changes(table)
    if not changed.empty:
        moved = changed[changed["first_verdict"] != changed["verdict"]]
        lines += [f"**{len(changed)} recipes changed after they were first measured**; each is measured by its "
                  f"first rule too, on these results (`first_value`, `first_verdict`), and {len(moved)} of them "
                  "have another verdict by it:", "",
                  markdown(_changes_by_reason(changed)), ""]
        if not moved.empty:
            lines += ["Those whose verdict the change moved:", "",
                      markdown(moved[["paper", "entry", "first_value", "first_verdict", "our_value", "verdict"]]), ""]
    return lines


def distribution(table: pd.DataFrame):
    """A strip of ours / paper per paper (log x), each point a measured number; None without any.  A number
    without a ratio (a paper's 0, opposite signs) has no place on a log axis and is counted in the label."""
    numbers = measured_numbers(table).copy()
    if numbers.empty:
        return None
    numbers["ratio"] = pd.to_numeric(numbers["ratio"], errors="coerce")
    drawable = numbers[numbers["ratio"] > 0]
    off = numbers.groupby("paper").size().sub(drawable.groupby("paper").size(), fill_value=0).astype(int)
    qualifier = {(e["paper"], e["id"]): e["qualifier"] for e in entries()}
    drawable = drawable.assign(
        paper=drawable["paper"].map(lambda p: f"{p} ({off[p]} off the axis)" if off[p] else p),
        paper_gives=[SHAPES.get(qualifier.get((p, e)), "a value") for p, e in zip(drawable["paper"], drawable["entry"])])
    papers = sorted(drawable["paper"].unique())
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(papers) + 1.2))
    ax.axvspan(1 / 2, 2, color="#eaeef2", zorder=0)
    ax.axvspan(1 / PRIMARY, PRIMARY, color="#c8d1da", zorder=0)
    ax.axvline(1, color="#57606a", lw=0.8, zorder=1)
    for shape, marker in MARKERS.items():  # stripplot takes one marker per call
        part = drawable[drawable["paper_gives"] == shape]
        if not part.empty:
            sns.stripplot(data=part, x="ratio", y="paper", order=papers, hue="measured_on", palette=COLOURS,
                          marker=marker, size=4.5, jitter=0.25, alpha=0.8, ax=ax, log_scale=True, zorder=2,
                          legend=False)
    handles = [plt.Line2D([], [], ls="", marker="o", color=c, label=o) for o, c in COLOURS.items()
               if o in set(drawable["measured_on"])]
    handles += [plt.Line2D([], [], ls="", marker=m, color="#57606a", label=f"the paper gives {shape}")
                for shape, m in MARKERS.items() if shape in set(drawable["paper_gives"]) and shape != "a value"]
    low, high = drawable["ratio"].min(), drawable["ratio"].max()
    ax.set_xlim(min(low, 0.1) / 1.5, max(high, 10) * 1.5)
    ax.set(xlabel="ours / the paper's value (log scale)", ylabel="")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    return fig


def _changes_by_reason(changed: pd.DataFrame) -> pd.DataFrame:
    """One row per change (commit and why), with how many recipes it touched and their verdicts then and now."""
    rows = []
    for change, part in changed.groupby("change", sort=False):
        commit, _, why = change.partition(": ")
        rows.append({"changed at": commit, "why": why, "recipes": len(part),
                     "first verdicts": _counts(part["first_verdict"]), "verdicts now": _counts(part["verdict"])})
    return pd.DataFrame(rows)


def _counts(verdicts: pd.Series) -> str:
    return ", ".join(f"{n} {v}" for v, n in verdicts.value_counts().items())

