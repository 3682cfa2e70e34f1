"""``skewbench bench``'s runs: the failed ones, predictions beside measurements, the matrix, and the DKG, Fang,
Naive Bayes and sustainable-throughput studies on Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import seaborn as sns
from skewbench.analysis.repeats import CI_BARS
from skewbench.analysis.sections.common import (comparison, figure, latency, markdown, study_table,
                                              with_latency_labels)


def failed_runs(folder: Path) -> list[str]:
    """A bench's failed runs (``failed.csv``), first in the report: each with why it failed.  They are in no
    table, figure, comparison or fidelity row."""
    path = folder / "failed.csv"
    failed = pd.read_csv(path) if path.exists() else None
    if failed is None or failed.empty:
        return []
    studies = ", ".join(f"`{s}`" for s in dict.fromkeys(failed["study"]))
    rows = failed[["run", "study", "app", "scheme", "workers", "sources", "delay_ms", "seed", "reasons"]]
    return [f"## ⚠ {len(failed)} runs failed — left out of every table, figure, comparison and fidelity row", "",
            f"A failed run gave another answer than the single-process reference, did other work per worker than "
            f"the simulator, counted a message twice, or lost one. Its numbers are not reported: every section "
            f"below reads only the runs that passed, and a study with a failed run ({studies}) has no comparison "
            f"with its paper. The list is also in [failed.csv](failed.csv).", "",
            markdown(rows), ""]


def bench_results(folder: Path) -> list[str]:
    """``skewbench bench``'s ``results.csv``: correctness, the simulator's predictions beside the
    measurements (error distribution, the worst five and where their error comes from), the matrix."""
    path = folder / "results.csv"
    if not path.exists():
        return []
    data = pd.read_csv(path)
    if data.empty:
        return ["## Every run of the bench", "", "No run passed: every run failed (above).", ""]
    lines = ["## Every run of the bench — measured on Spark, predicted by the simulator", "",
             _checked(folder, data), "", *_engine_model(folder)]
    judged = data[data["predicted_throughput"].notna() & ~data["engine_study"].astype(bool)]
    if len(judged):
        error = judged["prediction_error"].abs()
        grid = sns.relplot(data=judged, x="throughput", y="predicted_throughput", hue="study", style="app",
                           height=3.5, aspect=1.3)
        top = max(judged["throughput"].max(), judged["predicted_throughput"].max())
        for ax in grid.axes.flat:
            ax.plot([0, top], [0, top], color="grey", lw=0.8, ls="--")
            ax.set(xscale="log", yscale="log", xlabel="measured messages/s", ylabel="predicted messages/s")
        worst = judged.assign(abs_error=error).nlargest(5, "abs_error")
        worst = worst.assign(why=[_why(r) for _, r in worst.iterrows()])
        lines += [figure(folder, "prediction", grid), "", _error_ecdf(folder, judged.assign(abs_error=100 * error)), "",
                  f"Prediction error |predicted / measured − 1| over the {len(judged)} runs outside the engine "
                  f"calibration: median {100 * error.median():.1f} %, "
                  f"90th percentile {100 * error.quantile(0.9):.1f} % "
                  "(the crosses: half of the runs within 10 %, nine in ten within 25 %). The worst five:", "",
                  markdown(worst[["study", "app", "scheme", "workers", "sources", "delay_ms", "throughput",
                                   "predicted_throughput", "prediction_error", "why"]].round(3)), ""]
    return lines + _matrix(folder, data[data["study"] == "matrix"], data[data["study"] == "centre"])


def _checked(folder: Path, data: pd.DataFrame) -> str:
    """How many runs of the tables gave the reference's answer and the simulator's exact work per worker, and
    how many failed (``failed.csv``: in no table)."""
    path = folder / "failed.csv"
    failed = len(pd.read_csv(path)) if path.exists() else 0
    return (f"{len(data)} runs in {data['study'].nunique()} studies in the tables; {int(data['correct'].sum())} gave "
            f"the single-process reference's answer; in {int(data['sim_exact'].sum())} the messages and probes every "
            "worker handled equal the simulator's exactly"
            + (f"; {failed} more runs failed (above)." if failed else "."))


def _engine_model(folder: Path) -> list[str]:
    """Which engine model turned the simulator's work into the predicted throughputs."""
    path = folder / "engine_model.json"
    model = json.loads(path.read_text()) if path.exists() else None
    if not model:
        return ["No engine model: no run is predicted (a bench without calibration runs and without "
                "`--engine-model`).", ""]
    return [f"The predictions' engine model ([engine_model.json](engine_model.json)): "
            f"{model.get('source') or 'fitted on the engine studies'}.", ""]


def smoke_runs(folder: Path) -> list[str]:
    """A smoke run's every run: whether it gave the reference's answer and the simulator's exact work, and
    its throughput beside the prediction (numbers that show it ran, not measurements)."""
    path = folder / "results.csv"
    if not path.exists():
        return []
    data = pd.read_csv(path)
    if data.empty:
        return ["## Every run of the smoke run", "", "No run passed: every run failed (above).", ""]
    columns = ["study", "app", "scheme", "workers", "sources", "delay_ms", "correct", "sim_exact", "throughput",
               "predicted_throughput"]
    return ["## Every run of the smoke run", "",
            _checked(folder, data), "",
            markdown(data[columns].round({"throughput": 0, "predicted_throughput": 0})), ""]


def _error_ecdf(folder: Path, judged: pd.DataFrame) -> str:
    """The share of runs predicted within x %, per study, with the targets (10 % median, 25 % p90) marked."""
    grid = sns.displot(data=judged, x="abs_error", hue="study", kind="ecdf", height=3.5, aspect=1.3)
    for ax in grid.axes.flat:
        ax.plot([10, 25], [0.5, 0.9], "k+", ms=12, mew=2)
        ax.set(xscale="log", xlabel="|predicted / measured − 1| (%)", ylabel="share of runs")
    return figure(folder, "prediction_error", grid)


def _matrix_figure(folder: Path, delayed: pd.DataFrame, centre_study: pd.DataFrame) -> str:
    """Every scheme at the matrix's centre, measured and predicted."""
    at, title = matrix_centre(delayed, centre_study)
    bars = at.melt(id_vars="scheme", value_vars=["throughput", "predicted_throughput"], var_name="",
                   value_name="messages/s").replace({"throughput": "measured", "predicted_throughput": "predicted"})
    grid = sns.catplot(data=bars, x="scheme", y="messages/s", hue="", kind="bar", height=3.2, aspect=2.6, **CI_BARS)
    grid.set_xticklabels(rotation=45, ha="right")
    grid.set(title=title)
    return figure(folder, "matrix", grid)


def matrix_centre(delayed: pd.DataFrame, centre_study: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The runs at the matrix's centre (its most common app, W, S and delay) and a title: the ``centre``
    study's where the bench ran it (the same point, with seeds and bigger batches), else the matrix's."""
    factors = ["app", "workers", "sources", "delay_ms"]
    centre = pd.Series(delayed[factors].value_counts().index[0], index=factors)
    title = f"{centre['app']}, W = {centre['workers']}, S = {centre['sources']}, {centre['delay_ms']} ms per message"
    same = centre_study[(centre_study[factors] == centre).all(axis=1)] if len(centre_study) else centre_study
    if len(same):
        return same, title + f" (centre study, {same['seed'].nunique()} seeds)"
    return delayed[(delayed[factors] == centre).all(axis=1)], title


def _matrix(folder: Path, matrix: pd.DataFrame, centre: pd.DataFrame) -> list[str]:
    """The matrix study: throughput per scheme and app with the delay injected, and the answer of every
    scheme × app × W run without delay (✓ = the single-process reference's)."""
    if matrix.empty:
        return []
    lines = []
    delayed, bare = matrix[matrix["delay_ms"] > 0], matrix[matrix["delay_ms"] == 0]
    if len(delayed):
        by = delayed.groupby(["scheme", "app"])["throughput"].median().unstack("app").round(0)
        lines += ["### The matrix study — median throughput (messages/s) per scheme and app, delayed points", "",
                  _matrix_figure(folder, delayed, centre), "",
                  markdown(by.astype(object).where(by.notna(), "—").reset_index()), ""]
    if len(bare):
        cell = bare.assign(cell=[f"{'✓' if ok else '✗ wrong answer'} {t:,.0f}/s"
                                 for ok, t in zip(bare["correct"], bare["throughput"])],
                           column=bare["app"] + " W=" + bare["workers"].astype(str))
        grid = cell.pivot_table(index="scheme", columns="column", values="cell", aggfunc="first")
        lines += [f"### Every scheme × app × W without delay — {int(bare['correct'].sum())} of {len(bare)} correct", "",
                  "✓: the same answer as the single-process reference; then the throughput measured.", "",
                  markdown(grid.reset_index()), ""]
    return lines


def dkg_spark(folder: Path) -> list[str]:
    """The dkg study: throughput against the hot key's share beside DKG's Table 3 and claims."""
    data = study_table(folder, "dkg")
    if data is None or data.empty:
        return []
    data["skew %"] = data["workload"].str.extract(r"skew=([0-9.]+)")[0].astype(float) * 100
    centre = data[(data["workers"] == 10) & (data["sources"] == 5)]
    grid = sns.relplot(data=centre, x="skew %", y="throughput", hue="scheme", kind="line", marker="o", height=3,
                       aspect=1.5, **CI_BARS)
    grid.set(ylabel="messages/s", title="W = 10, S = 5, 1 ms per message")
    c = comparison(folder, "dkg")
    lines = ["## DKG's Storm experiments on Spark — country skew, sg / kg / pkg / dkg", "",
             figure(folder, "dkg_skew", grid), ""]
    if "table3" in c:
        rows = [[s, v["throughput_over_kg"], v["paper_throughput_over_kg"], v["stddev"], v["paper_stddev"],
                 v["dist_cost"], v["paper_dist_cost"], v["latency_p50_s"], v["eq6_latency_s"]]
                for s, v in c["table3"].items()]
        lines += ["Table 3's point (r = 68 %, W = 10, S = 5), ours beside the paper's:", "",
                  markdown(pd.DataFrame(rows, columns=["scheme", "throughput / KG", "paper", "StdDev", "paper",
                                                        "DistCost", "paper", latency("latency p50 s", data),
                                                        "Eq. 6 latency s"])), ""]
    if c:
        high, low = c["high_skew"], c["low_skew"]
        lines += [f"DKG over PKG by skew: {c['dkg_over_pkg_throughput_by_skew']}. At skew ≥ 80 % the smallest is "
                  f"{high['min_dkg_over_pkg']} (paper: up to {high['paper_max']}); at skew ≤ 20 % they differ by at "
                  f"most {low['max_abs_dkg_over_pkg_minus_1']}, at 30 % DKG / PKG is "
                  f"{low.get('dkg_over_pkg_at_30pct')} (paper: {low['paper']}). Throughput spread over W at "
                  f"68 %: {c.get('workers_throughput_spread_at_68pct')}; over S: "
                  f"{c.get('sources_throughput_spread_at_68pct')} (paper: W and S barely matter above 30 %).", ""]
        if "busiest_over_mean_by_skew" in c:
            lines += ["Busiest worker's stores over the mean, by skew (W = 10, S = 5): DKG grows a hot key's ring "
                      "only while its least loaded candidate is at or above L_s = L_i + √L_i (Eq. 4), so its busiest "
                      "worker settles near L_s / L_i (1.32 at W = 10) as soon as one key reaches the threshold; "
                      "PKG's two choices stay below that until the hottest key passes about a quarter of the "
                      "stream:", "",
                      markdown(pd.DataFrame(c["busiest_over_mean_by_skew"]).rename_axis("skew").reset_index()), ""]
    return lines


def naivebayes_spark(folder: Path) -> list[str]:
    """The naivebayes study: probes per query word and throughput as W grows."""
    data = study_table(folder, "naivebayes")
    if data is None or data.empty:
        return []
    data = data.assign(probes_per_query=data["probes"] / (data["messages"] - data["stored"]))
    long = data.melt(id_vars=["scheme", "workers"], value_vars=["probes_per_query", "throughput"])
    grid = sns.relplot(data=long, x="workers", y="value", hue="scheme", col="variable", kind="line", marker="o",
                       height=3, aspect=1.2, facet_kws={"sharey": False}, **CI_BARS)
    grid.set(xlabel="workers W")
    c = comparison(folder, "naivebayes")
    return ["## Naive Bayes on Spark (PKG §VI) — probes per query word and throughput vs W", "",
            figure(folder, "naivebayes", grid), "",
            f"Probes per query word equal the holders rule (kg 1, pkg 2, W where a word may live anywhere) at every "
            f"point: {c.get('probes_equal_theory')}.", ""]


def fang_spark(folder: Path) -> list[str]:
    """The fang study: throughput and latency per table scheme on Stock (self-join) and Social (word count)."""
    data = study_table(folder, "fang")
    if data is None or data.empty:
        return []
    grid = sns.catplot(data=data, x="scheme", y="throughput", col="app", kind="bar", height=3, aspect=1.4,
                       sharey=False, **CI_BARS)
    grid.set_xticklabels(rotation=30)
    table = data.groupby(["app", "scheme"])[["throughput", "latency_p50", "max_over_mean"]].median().reset_index()
    table = with_latency_labels(table, data)
    return ["## Fang et al.'s table schemes on Spark — Stock self-join and Social word count (Zipf 0.85)", "",
            figure(folder, "fang", grid), "", markdown(table.round(3)), ""]


def sustainable_spark(folder: Path) -> list[str]:
    """Sustainable throughput (Karimov et al.) beside the peak, for every searched point (and ingest path)."""
    path = folder / "results.csv"
    data = pd.read_csv(path) if path.exists() else None
    if data is None or "search_of" not in data or data["search_of"].isna().all():
        return []
    runs = data[data["search_of"].notna()]
    peaks = data.set_index("run")
    rows = []
    for base, tried in runs.groupby("search_of", sort=False):
        peak = peaks.loc[base]
        good = tried.loc[tried["sustainable"].astype(bool), "rate"]
        rows.append([peak["study"], peak["app"], peak["scheme"], peak.get("ingest", "engine"), peak["workers"],
                     peak["sources"], peak["delay_ms"], peak["throughput"], good.max() if len(good) else 0.0,
                     len(tried), ", ".join(f"{r:,.0f}{'✓' if ok else '✗'}"
                                           for r, ok in zip(tried["rate"], tried["sustainable"]))])
    table = pd.DataFrame(rows, columns=["study", "app", "scheme", "ingest", "W", "S", "delay_ms", "peak msgs/s",
                                        "sustainable msgs/s", "runs", "offered (✓ sustainable)"])
    table["sustainable / peak"] = table["sustainable msgs/s"] / table["peak msgs/s"]
    paths = table["ingest"].nunique() > 1
    bars = table.melt(id_vars=["scheme", "ingest"], value_vars=["peak msgs/s", "sustainable msgs/s"],
                      var_name="throughput", value_name="messages/s")
    grid = sns.catplot(data=bars, x="scheme", y="messages/s", hue="throughput", kind="bar", height=3, aspect=1.5,
                       **({"col": "ingest"} if paths else {}))
    return ["## Sustainable throughput (Karimov et al. 2018) beside the peak", "",
            "Peak: the point run as fast as it goes. Sustainable: the highest offered rate (open loop) whose "
            "backlog grew by less than 1 % of the rate after the warm-up batch, found by a search that starts at "
            "the simulator's predicted capacity (through the broker, the peak if lower), steps by 1.3× until "
            "bracketed and bisects to 5 %."
            + (" Through the broker (ingest locust) the backlog is the consumer's lag behind what the broker "
               "received, and a run whose broker missed the offered rate is not sustainable." if paths else ""), "",
            figure(folder, "sustainable", grid), "", markdown(table.round(3)), ""]


def _why(row: pd.Series) -> str:
    """Where a prediction's error comes from: the engine's cost or the busiest worker's work per batch."""
    engine = row["predicted_overhead_s"] - row["overhead_median_s"]
    work = row["predicted_busiest_s"] - row["busiest_median_s"]
    part = "engine cost" if abs(engine) >= abs(work) else "busiest worker"
    return (f"{part}: engine {row['overhead_median_s']:.2f} s measured vs {row['predicted_overhead_s']:.2f} s "
            f"predicted, busiest worker {row['busiest_median_s']:.2f} vs {row['predicted_busiest_s']:.2f} s per batch")
