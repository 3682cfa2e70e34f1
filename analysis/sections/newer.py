"""Newer schemes (issue 23): Katsipoulakis et al.'s aggregation-cost partitioners on Spark (the
``aggregation-cost`` study) — throughput against what the merge downstream pays — and their claims beside ours."""

from __future__ import annotations

from pathlib import Path

import seaborn as sns

from skewbench.analysis.sections.common import beside, figure, load, markdown, published_table

COLUMNS = {"throughput": "msgs/s", "output_rows": "partial counts merged", "counters_mean": "counters held",
           "max_over_mean": "busiest / mean"}


def newer_schemes(folder: Path) -> list[str]:
    data = load(folder, "aggregation-cost")
    if data is None:
        return []
    median = data.groupby(["workload", "scheme"])[list(COLUMNS)].median().reset_index()
    grid = sns.relplot(data=median, x="output_rows", y="throughput", hue="scheme", style="scheme", col="workload",
                       s=80, height=3.2, facet_kws={"sharex": False})
    grid.set(xlabel="partial counts the merge receives", ylabel="messages/s (median)")
    return ["## Newer schemes: aggregation cost against throughput on Spark", "",
            "Katsipoulakis et al. (PVLDB 2017) weigh what the merge downstream pays — the distinct keys each "
            "worker holds — beside the tuples. Word count at 0.4 ms, W = 10, S = 5, every worker sending its "
            "partial counts after every micro-batch (`aggregation-cost` study; medians over the seeds): cm, lm, am "
            "and cam beside the state of the art (pkg, dchoices, wchoices) and kg and sg.", "",
            figure(folder, "aggregation_cost", grid), "",
            markdown(median.rename(columns=COLUMNS).round(2)), "", *published_table(beside(folder, "katsipoulakis"),
                                                                                 "katsipoulakis")]
