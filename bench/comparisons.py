"""The cluster benchmark's comparisons with the papers, computed from a study's results rows.

A study file names one with ``compare:`` (:mod:`~skewbench.bench.studyfile`); ``skewbench bench`` writes
it to ``<study>_vs_paper.json``.  Each takes the study's rows (:func:`skewbench.bench.driver.run_row`)
and compares medians over the seeds with ``published.yaml``.
"""

from __future__ import annotations

import pandas as pd

STORM_SCHEMES = ["kg", "pkg", "sg"]


def compare_storm(table: pd.DataFrame) -> dict:
    """Our Storm-experiment shape beside the paper's (``published.yaml``, pkg.storm_deployment), on the
    median over repeats of each (scheme, delay)."""
    from skewbench.analysis.published import published

    paper = published()["pkg"]["storm_deployment"]
    lo, hi = table["delay_ms"].min(), table["delay_ms"].max()
    at = table.groupby(["scheme", "delay_ms"])[["throughput", "counters", "latency_p50"]].median()
    drop = {s: float(1 - at.loc[(s, hi), "throughput"] / at.loc[(s, lo), "throughput"]) for s in STORM_SCHEMES}
    counters = {s: int(at.loc[(s, lo), "counters"]) for s in STORM_SCHEMES}
    delays = sorted(table["delay_ms"].unique())
    return {
        "delays_ms": [float(lo), float(hi)],
        "runs_per_point": int(table.groupby(["scheme", "delay_ms"]).size().min()),
        "median_throughput": {s: {str(d): round(float(at.loc[(s, d), "throughput"])) for d in delays}
                              for s in STORM_SCHEMES},
        "offered_rate": float(table["rate"].max()),
        "kg_over_pkg_throughput": {str(d): round(float(at.loc[("kg", d), "throughput"] /
                                                       at.loc[("pkg", d), "throughput"]), 3) for d in delays},
        "kg_over_pkg_latency_p50": {str(d): round(float(at.loc[("kg", d), "latency_p50"] /
                                                        at.loc[("pkg", d), "latency_p50"]), 3) for d in delays},
        "paper_kg_over_pkg_latency_max": 1 + paper["kg_latency_vs_pkg_max_increase_pct"] / 100,
        "paper_pkg_throughput_gain_pct": paper["headline"]["throughput_gain_pct"],
        "paper_kg_over_pkg_at_largest_delay": round(1 / (1 + paper["headline"]["throughput_gain_pct"] / 100), 3),
        "throughput_drop_pct": {s: round(100 * d, 1) for s, d in drop.items()},
        "paper_throughput_drop_pct": {"kg": paper["kg_throughput_drop_when_delay_x10_pct"],
                                      "pkg": paper["pkg_sg_throughput_drop_when_delay_x10_pct"],
                                      "sg": paper["pkg_sg_throughput_drop_when_delay_x10_pct"]},
        "kg_drops_most": drop["kg"] > max(drop["pkg"], drop["sg"]),
        "counters": counters,
        "paper_counters": {k.lower(): v for k, v in paper["memory_counters"].items()},
        "pkg_counters_between_kg_and_sg": counters["kg"] <= counters["pkg"] <= counters["sg"],
        "all_correct": bool(table["correct"].all()),
    }


def compare_aggregation(table: pd.DataFrame) -> dict:
    """PKG against SG (and KG) per aggregation period, medians over seeds, beside the paper's claims
    (Sec. V Q4: PKG's throughput above SG's with less memory at every period; above KG's once the
    period exceeds 30 s)."""
    from skewbench.analysis.published import published

    paper = published()["pkg"]["storm_deployment"]
    at = table.groupby(["scheme", "period"])[["throughput", "counters_mean", "batch_median_s"]].median()
    pkg, kg = at.loc["pkg"], at.loc[("kg", 0), "throughput"]
    over_sg = pkg / at.loc["sg"]  # per period
    per_period = {str(t): {"seconds": round(float(t * pkg.loc[t, "batch_median_s"]), 1) if t else None,
                           "pkg_over_sg_throughput": round(float(over_sg.loc[t, "throughput"]), 3),
                           "pkg_over_sg_counters": round(float(over_sg.loc[t, "counters_mean"]), 3),
                           "pkg_over_kg_throughput": round(float(pkg.loc[t, "throughput"] / kg), 3)}
                  for t in sorted(pkg.index)}
    return {"delay_ms": float(table["delay_ms"].iloc[0]),
            "runs_per_point": int(table.groupby(["scheme", "period"]).size().min()), "periods": per_period,
            "pkg_beats_sg_at_every_period": all(v["pkg_over_sg_throughput"] >= 1 and v["pkg_over_sg_counters"] < 1
                                                for v in per_period.values()),
            "paper": {"pkg_beats_sg_at_every_period": True,
                      "pkg_beats_kg_above_period_s": paper["aggregation_period_where_pkg_beats_kg_s"]},
            "all_correct": bool(table["correct"].all())}


#: The names a study file may give as ``compare``.
COMPARISONS = {"storm": compare_storm, "aggregation": compare_aggregation}
