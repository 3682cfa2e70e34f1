"""Newer schemes (issue 23): in the simulator over skew, W and S beside the schemes they claim to beat
(``sweep_*``); on Spark, Katsipoulakis et al.'s aggregation-cost partitioners (the ``aggregation-cost``
study) — throughput against what the merge downstream pays — and Dalton against the best of pkg, dchoices and
wchoices over skew and W (the ``dalton`` study); their claims beside ours."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns

from skewbench.analysis.repeats import CI_BARS, compare, interval
from skewbench.analysis.sections.common import beside, figure, load, markdown, published_table, study_table

NEWER = ("dalton", "pstream", "cg", "cm", "lm", "am", "cam")
#: The sweep's streams by rising skew, then the real-trace stand-ins (bench/papers/newer.py).
STREAMS = ["z08", "z10", "z12", "z15", "z20", "wp", "tw"]
COLUMNS = {"throughput": "msgs/s", "output_rows": "partial counts merged", "counters_mean": "counters held",
           "max_over_mean": "busiest / mean"}


def newer_sweep(folder: Path) -> list[str]:
    data = load(folder, "sweep_")
    if data is None:
        return []
    data = data.assign(stream=data["experiment"].str.removeprefix("sweep_"))
    streams = [s for s in STREAMS if s in set(data["stream"])]
    order = sorted(set(data["scheme"]), key=lambda s: (s not in NEWER, s))  # the newer first, solid; the rest dashed
    grid = sns.catplot(data=data, x="stream", y="max_over_mean", hue="scheme", hue_order=order, col="workers",
                       row="sources", kind="point", order=streams, height=3, dodge=0.4, markersize=4,
                       palette="tab10" if len(order) <= 10 else "husl",
                       linestyles=["-" if s in NEWER else "--" for s in order],
                       markers=["o" if s in NEWER else "s" for s in order])
    grid.set(yscale="log", xlabel="stream", ylabel="busiest / mean")
    wide = data[data.sources == data.sources.max()]
    table = wide.pivot_table(index="scheme", columns="workers", values="max_over_mean", aggfunc="median")
    table.columns = [f"busiest / mean, W = {w}" for w in table.columns]
    at = wide[wide.workers == wide.workers.max()].groupby("scheme")
    table = table.join(at["dist_cost"].median().rename("state entries per key")).join(
        at["msgs_per_s"].median().rename("routed msgs/s"))
    return ["## Newer schemes in the simulator: skew, W and S", "",
            f"The newer schemes ({', '.join(NEWER)}) beside the schemes they claim to beat, on Zipf streams "
            f"over 100,000 keys from z = 0.8 (`z08`) to 2.0 (`z20`) and the WP and TW stand-ins "
            f"({data['messages'].max():,} messages, `sweep_*`): the busiest worker over the mean (1 is even). "
            "The table gives medians over the streams at "
            f"S = {wide.sources.max()}; state entries per key and the routing rate at W = {wide.workers.max()}.",
            "",
            figure(folder, "sweep", grid), "", markdown(table.reset_index().round(3)), ""]


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


#: What Dalton's paper compares with, as the issue names it: the best of these at each point.
DALTON_RIVALS = ("pkg", "dchoices", "wchoices")


def dalton_claim(folder: Path) -> list[str]:
    data = study_table(folder, "dalton")
    if data is None:
        return []
    data = data.assign(z=data["workload"].str.extract(r"z=([0-9.]+)", expand=False).astype(float))
    rows = [_dalton_point(point, group) for point, group in data.groupby(["z", "workers"])]
    grid = sns.catplot(data=data, x="z", y="throughput", hue="scheme", col="workers", kind="point", dodge=0.3,
                       height=3.2, sharey=False, **CI_BARS)
    grid.set(xlabel="Zipf z (100,000 keys)", ylabel="messages/s")
    return ["## Newer schemes: Dalton against the best of pkg, dchoices and wchoices on Spark", "",
            "Dalton's claim (Zapridou et al., PVLDB 2022) checked where issue 23 asks for it: word count at "
            f"{data['delay_ms'].iloc[0]:g} ms, S = {data['sources'].iloc[0]}, W = 10 and 50, Zipf over 100,000 keys "
            "(`dalton` study). Each source's Dalton learns alone. Throughput is the mean over the seeds with its 95 % "
            "interval; the ratio is Dalton's mean over the best rival's, and the verdict says whether the two can be "
            "told apart.", "", figure(folder, "dalton", grid), "", markdown(pd.DataFrame(rows)), "",
            *published_table(beside(folder, "dalton"), "dalton")]


def _dalton_point(point: tuple, group: pd.DataFrame) -> dict:
    z, workers = point
    ours = interval(group.loc[group.scheme == "dalton", "throughput"])
    rivals = {s: interval(group.loc[group.scheme == s, "throughput"]) for s in DALTON_RIVALS}
    best = max(rivals, key=lambda s: rivals[s].mean)
    return {"z": z, "W": workers, "dalton msgs/s": _rate(ours), "best rival": best, "its msgs/s": _rate(rivals[best]),
            "ratio": ours.mean / rivals[best].mean,
            "verdict": compare(ours, rivals[best], "dalton", best, lower_is_better=False),
            "dalton busiest / mean": group.loc[group.scheme == "dalton", "max_over_mean"].mean(),
            "rival busiest / mean": group.loc[group.scheme == best, "max_over_mean"].mean(), "seeds": ours.n,
            **{f"{s} / best rival": group.loc[group.scheme == s, "throughput"].mean() / rivals[best].mean
               for s in sorted(set(group.scheme) - {"dalton", *DALTON_RIVALS})}}


def _rate(rate) -> str:
    """A throughput's mean and 95 % interval, in full messages/s."""
    return f"{rate.mean:,.0f} [{rate.low:,.0f}, {rate.high:,.0f}]"
