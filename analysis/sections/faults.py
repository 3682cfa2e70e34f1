"""Runs with faults (a study's ``faults`` factor, :mod:`skewbench.bench.spark.faults`): whether each still gave
the reference's answer with every message counted once, how long the batches took to get back to their
pace, and each run's batches over time with its faults marked."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from skewbench.analysis.sections.common import figure, markdown


def faults_spark(folder: Path) -> list[str]:
    path = folder / "results.csv"
    data = pd.read_csv(path) if path.exists() else None
    if data is None or "faults_struck" not in data or not (data["faults_struck"] > 0).any():
        return []
    struck = data[data["faults_struck"] > 0]
    strikes = pd.DataFrame([{"run": run, "scheme": scheme, **fault} for run, scheme in zip(struck["run"],
                                                                                            struck["scheme"])
                            for fault in _summary(folder, run).get("faults", [])])
    exact = int(((struck["duplicates"] == 0) & struck["correct"].astype(bool)).sum())
    lines = ["## Faults — nodes killed during runs", "",
             f"{len(struck)} runs had nodes killed while they ran; {exact} still gave the reference's answer with "
             f"every message counted once. `recovery (s)`: from the kill to the end of the first micro-batch that "
             f"began after it and ran at the pace of the batches before it.", ""]
    if strikes.empty:  # the run folders were not kept
        return lines
    recovery = strikes["recovery_s"].map(lambda s: "not before the end" if pd.isna(s) else f"{s:.1f}")
    table = strikes.assign(**{"down (s)": strikes["down_s"], "recovery (s)": recovery})[
        ["run", "scheme", "fault", "node", "processes_killed", "down (s)", "recovery (s)"]]
    return lines + [markdown(table), "", *_timelines(folder, struck, strikes)]


def _summary(folder: Path, run: str) -> dict:
    path = folder / "runs" / run / "summary.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _timelines(folder: Path, struck: pd.DataFrame, strikes: pd.DataFrame) -> list[str]:
    """Each run's batch durations over time, the faults marked: the kill (red), the node back (grey), the
    batches back at their pace (green)."""
    frames = [pd.read_parquet(folder / "runs" / run / "batches.parquet").assign(run=run) for run in struck["run"]
              if (folder / "runs" / run / "batches.parquet").exists()]
    if not frames:
        return []
    batches = pd.concat(frames, ignore_index=True)
    start = batches.groupby("run")["started"].min()
    batches["batch end (s)"] = batches["started"] + batches["duration"] - batches["run"].map(start)
    labels = strikes.groupby("run").apply(lambda g: f"{g['scheme'].iloc[0]} · {', '.join(g['fault'])}",
                                          include_groups=False)
    batches["run "] = batches["run"].map(labels) + " · " + batches["run"].str[-8:]  # (a run name ends in its digest)
    grid = sns.relplot(data=batches, x="batch end (s)", y="duration", col="run ", col_wrap=2, kind="line",
                       marker="o", height=2.6, aspect=1.6, facet_kws={"sharex": False})
    for label, axes in grid.axes_dict.items():
        run = batches.loc[batches["run "] == label, "run"].iloc[0]
        for strike in strikes[strikes["run"] == run].itertuples():
            killed = strike.killed_at - start[run]
            axes.axvline(killed, color="red", linestyle="--", label="killed")
            axes.axvline(killed + strike.down_s, color="grey", linestyle=":", label="started again")
            if pd.notna(strike.recovery_s):
                axes.axvline(killed + strike.recovery_s, color="green", label="back at pace")
    grid.set_titles("{col_name}").set(ylabel="batch duration (s)")
    handles, labels = grid.axes.flat[0].get_legend_handles_labels()
    grid.figure.legend(handles[:3], labels[:3], loc="upper center", ncol=3, bbox_to_anchor=(0.5, 1.05))
    plt.setp(grid.axes, ylim=(0, None))
    return [figure(folder, "faults", grid), ""]
