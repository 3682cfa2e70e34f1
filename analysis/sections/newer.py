"""Newer schemes (issue 23): in the simulator over skew, W and S beside the schemes they claim to beat
(``sweep_*``); on Spark, Katsipoulakis et al.'s aggregation-cost partitioners (the ``aggregation-cost``
study) — throughput against what the merge downstream pays —, Dalton against the best of pkg, dchoices and
wchoices over skew and W (the ``dalton`` study), every newer scheme as S grows (``newer-sources``) and PStream's
and Consistent Grouping's claims against kg (``newer-claims``), and all of them at W = 100 on the least skewed
and the real-trace streams (``newer-skew``); their claims beside ours."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns

from skewbench.analysis.repeats import CI_BARS, compare, interval
from skewbench.analysis.sections.common import (beside, figure, latency, load, markdown, published_table,
                                              study_table)

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
            "verdict": compare(group.loc[group.scheme == "dalton", "throughput"], group.loc[group.scheme == best, "throughput"],
                               "dalton", best, lower_is_better=False),
            "dalton busiest / mean": group.loc[group.scheme == "dalton", "max_over_mean"].mean(),
            "rival busiest / mean": group.loc[group.scheme == best, "max_over_mean"].mean(), "seeds": ours.n,
            **{f"{s} / best rival": group.loc[group.scheme == s, "throughput"].mean() / rivals[best].mean
               for s in sorted(set(group.scheme) - {"dalton", *DALTON_RIVALS})}}


def _rate(rate) -> str:
    """A throughput's mean and 95 % interval, in full messages/s."""
    return f"{rate.mean:,.0f} [{rate.low:,.0f}, {rate.high:,.0f}]"


def newer_sources(folder: Path) -> list[str]:
    data = study_table(folder, "newer-sources")
    if data is None:
        return []
    grid = _rates(data, "sources", "sources S")
    rate = data.pivot_table(index="scheme", columns=["workers", "sources"], values="throughput", aggfunc="median")
    fewest, most = data["sources"].min(), data["sources"].max()
    table = pd.DataFrame({f"W = {w}, S = {s}": rate[(w, s)] for w, s in rate.columns}).round(0)
    for w in sorted(set(data["workers"])):
        table[f"W = {w}: S = {most} / S = {fewest}"] = (rate[(w, most)] / rate[(w, fewest)]).round(2)
    error = (data["predicted_throughput"] / data["throughput"] - 1).abs()
    return ["## Newer schemes on Spark as the sources grow", "",
            f"Word count at {data['delay_ms'].iloc[0]:g} ms on `{data['workload'].iloc[0]}`, W = "
            f"{' and '.join(map(str, sorted(set(data['workers']))))}, S = "
            f"{', '.join(map(str, sorted(set(data['sources']))))} (`newer-sources` study, one seed; the newer schemes "
            "solid, the rest dashed). Each source routes alone, so a scheme that learns or estimates loads sees 1/S "
            f"of the stream. Messages/s, and the rate at S = {most} over that at S = {fewest}; the simulator "
            f"predicted these runs within {error.median():.1%} (median).", "",
            figure(folder, "newer_sources", grid), "", markdown(table.reset_index()), ""]


def newer_skew(folder: Path) -> list[str]:
    data = study_table(folder, "newer-skew")
    if data is None:
        return []
    short = data["workload"].str.replace(",keys=100000", "").str.replace("zipf:z=", "Zipf z = ")
    grid = _rates(data.assign(stream=short), "stream", "stream")
    table = data.pivot_table(index="scheme", columns="workload", values=["throughput", "max_over_mean"])
    table.columns = [f"{w}: {'msgs/s' if v == 'throughput' else 'busiest / mean'}" for v, w in table.columns]
    error = data["predicted_throughput"] / data["throughput"] - 1
    return ["## Newer schemes on Spark at the ends of the sweep", "",
            f"Word count at {data['delay_ms'].iloc[0]:g} ms, S = {data['sources'].iloc[0]}, W = "
            f"{' and '.join(map(str, sorted(set(data['workers']))))} on the least skewed Zipf of the simulator's "
            "sweep and the real-trace stand-ins (`newer-skew` study, one seed; the newer schemes solid, the rest "
            f"dashed). The simulator predicted these runs {error.median():+.1%} off (median).", "",
            figure(folder, "newer_skew", grid), "", markdown(table.round(2).reset_index()), ""]


def _rates(data: pd.DataFrame, x: str, label: str):
    """Each scheme's throughput over ``x``, one panel per W: the newer schemes solid, the rest dashed."""
    order = sorted(set(data["scheme"]), key=lambda s: (s not in NEWER, s))
    grid = sns.catplot(data=data, x=x, y="throughput", hue="scheme", hue_order=order, col="workers",
                       kind="point", height=3.2, aspect=1.4, sharey=False, palette="husl",
                       linestyles=["-" if s in NEWER else "--" for s in order],
                       markers=["o" if s in NEWER else "s" for s in order])
    return grid.set(xlabel=label, ylabel="messages/s")


def newer_claims(folder: Path) -> list[str]:
    data = study_table(folder, "newer-claims")
    if data is None:
        return []
    data = data.assign(slow=data["slow"].fillna(""))
    rows = [_against_kg(scheme, slow, workers, data) for scheme, slow in (("pstream", ""), ("cg", ""), ("cg", "1@0.5"))
            for workers in sorted(set(data["workers"]))]
    return ["## Newer schemes: PStream's and Consistent Grouping's claims against key grouping on Spark", "",
            "PStream's authors claim 2.3x kg's throughput and 64 % less latency; Consistent Grouping's, 3.44x better "
            "latency than kg, on a heterogeneous cluster. Word count at "
            f"{data['delay_ms'].iloc[0]:g} ms, S = {data['sources'].iloc[0]}, `{data['workload'].iloc[0]}` "
            "(`newer-claims` study): on equal workers, and with worker 0 at half speed (`1@0.5`), cg told that "
            "capacity. Means over the seeds with 95 % intervals. Latency is a micro-batch's duration: a batch commits "
            "its results together at its end, so that is when a message's result becomes visible (the median "
            "message's task ends earlier, on a worker without the hot key: its latency is beside, as kg's over "
            "the scheme's).",
            "", markdown(pd.DataFrame([r for r in rows if r])), "",
            *published_table(beside(folder, "pstream"), "pstream"), *published_table(beside(folder, "cg"), "cg")]


def _against_kg(scheme: str, slow: str, workers: int, data: pd.DataFrame) -> dict | None:
    at = data[(data.workers == workers) & (data.slow == slow)]
    ours, kg = at[at.scheme == scheme], at[at.scheme == "kg"]
    if ours.empty or kg.empty:
        return None
    rate, kg_rate = interval(ours["throughput"]), interval(kg["throughput"])
    batch, kg_batch = interval(ours["batch_median_s"]), interval(kg["batch_median_s"])
    return {"scheme": scheme + (" (capacity told)" if slow else ""), "workers": slow or "equal", "W": workers,
            "msgs/s": _rate(rate), "kg msgs/s": _rate(kg_rate), "throughput / kg's": rate.mean / kg_rate.mean,
            "batch s": f"{batch.mean:.2f}", "kg batch s": f"{kg_batch.mean:.2f}",
            "kg's latency / its": kg_batch.mean / batch.mean,
            "verdict": compare(ours["batch_median_s"], kg["batch_median_s"], scheme, "kg"),
            latency("median message: kg's / its", at): kg["latency_p50"].mean() / ours["latency_p50"].mean(),
            "seeds": rate.n}
