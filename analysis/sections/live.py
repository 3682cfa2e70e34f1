"""Live routing on Spark (issue 21): the scaleout study — every scheme's response when a worker is added or
removed while the stream runs (Fang et al. 2017 Fig. 15, Gedik 2014's migration cost) — and the fang-live
study — Fang's Figs. 12–13 with the table schemes rebalancing as the distribution fluctuates."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from skewbench.analysis.repeats import CI_BARS, compare, interval
from skewbench.analysis.sections.common import figure, markdown, study_table, with_latency_labels

THETA = 0.08  # Fang's default θmax, the table schemes' default (skewbench.schemes.fang)
NOISE = 0.03  # a batch's max/mean beyond the plan's: the busiest of W sampled counts (tests/test_migration.py)

MEASURES = ["moved_share", "migrated_keys", "migrated_bytes", "migration_batches", "migration_s", "plan_s",
            "per_worker_before", "per_worker_after", "recovery_s", "latency_p99_before_s", "latency_p99_migration_s",
            "latency_peak_s", "dist_cost"]


def scaleout_spark(folder: Path) -> list[str]:
    data = study_table(folder, "scaleout")
    if data is None or data.empty or "moved_share" not in data:
        return []
    data = _how_state_moved(data.reindex(columns=[*data.columns, *(c for c in MEASURES if c not in data)]))
    data = data.assign(change=_changes(data))
    table = data.groupby(["change", "scheme", "migration"], sort=False)[MEASURES].median().reset_index()
    ideal = 1 / data[["workers", "final_workers"]].max(axis=1)  # the least state a change of W must move
    data = data.assign(relative_migration=data["moved_share"] / ideal)
    table["relative_migration"] = data.groupby(["change", "scheme", "migration"], sort=False)[
        "relative_migration"].median().to_numpy()
    lines = ["## Scale-out and scale-in on Spark — every scheme's response to a change of W", "",
             f"{len(data)} runs ({int(data['correct'].sum())} gave the single-process reference's answer, "
             f"{int(data['sim_exact'].sum())} routed exactly as the simulator predicts). The migrations start at "
             f"micro-batch {_span(data['change_batch'])} while the stream runs (a hand-over ahead a batch before W "
             "changes); each key's state moves inside the stream "
             "(docs/migration.md). `moved_share`: keys moved ÷ keys seen so far; `relative_migration`: that "
             "share ÷ 1/max(W, W′), the least a change of W must move (Gedik's *ideal*). Throughput per worker "
             "before the change and after the state landed; `recovery_s`: from the change until a batch carries "
             "90 % of the throughput per worker before it (Fang's response time); latency from intended arrival; "
             "`dist_cost`: counters per key at the end (DKG's DistCost: the state a scheme that splits keys leaves "
             "behind when W changes, where nothing moves).",
             "", markdown(table.round(3)), "", *_timelines(folder, data), *_beside_the_papers(table)]
    return lines


def _changes(data: pd.DataFrame) -> list[str]:
    """Each run's change of W, e.g. "out 10→11"."""
    return [f"{'out' if f > w else 'in'} {w}→{f}" for w, f in zip(data["workers"], data["final_workers"])]


def _span(values: pd.Series) -> str:
    low, high = int(values.min()), int(values.max())
    return f"{low}" if low == high else f"{low}–{high}"


def _how_state_moved(data: pd.DataFrame) -> pd.DataFrame:
    """``migration`` with ", ahead" where the state was handed over ahead (docs/migration.md)."""
    if "handover" not in data:
        return data
    ahead = data["handover"].fillna("hold") == "ahead"
    return data.assign(migration=data["migration"].where(~ahead, data["migration"] + ", ahead"))


def _batches(folder: Path, data: pd.DataFrame) -> pd.DataFrame | None:
    """The timelines of ``data``'s runs (kept run folders only), each row with its run's columns."""
    frames = [pd.read_parquet(folder / "runs" / run / "timeline.parquet").assign(run=run) for run in data["run"]
              if (folder / "runs" / run / "timeline.parquet").exists()]
    return pd.concat(frames).merge(data, on="run", suffixes=("", "_run")) if frames else None


def _timelines(folder: Path, data: pd.DataFrame) -> list[str]:
    """Throughput and the latency's maximum per micro-batch, one line per scheme (kept run folders only)."""
    t = _batches(folder, data)
    if t is None:
        return []
    t = t.assign(scheme=t["scheme"].where(t["migration"] == "all-at-once", t["scheme"] + " (" + t["migration"] + ")"))
    t["messages/s"], t["latency max (s)"] = t["messages_done"] / t["duration"], t["latency_max"]
    long = t[["batch", "scheme", "change", "messages/s", "latency max (s)"]].melt(
        id_vars=["batch", "scheme", "change"], var_name="measure")
    grid = sns.relplot(data=long, x="batch", y="value", hue="scheme", row="measure", col="change", kind="line",
                       marker="o", height=2.6, aspect=1.5, facet_kws={"sharey": "row"})
    grid.set_titles("{col_name} — {row_name}").set(ylabel="")
    return [figure(folder, "scaleout", grid), ""]


def _beside_the_papers(table: pd.DataFrame) -> list[str]:
    """Gedik's and Fang's observations in the words of our measurements."""
    def at(scheme: str, change: str, column: str) -> float | None:
        rows = table[(table["scheme"] == scheme) & table["change"].str.startswith(change)
                     & (table["migration"] == "all-at-once")]
        return float(rows[column].iloc[0]) if len(rows) else None

    lines = []
    kg, consistent = at("kg", "out", "relative_migration"), at("consistent", "out", "relative_migration")
    if kg is not None and consistent is not None:
        lines.append(f"- Gedik (Figs. 3–8): a uniform hash moves 6.5–8× the ideal state, consistent hashing about "
                     f"the ideal or below. Here, adding one worker: kg (hash mod W) {kg:.1f}× the ideal, consistent "
                     f"hashing {consistent:.2f}×.")
    mixed, readj = at("mixed", "out", "recovery_s"), at("gedik-readj", "out", "recovery_s")
    if mixed is not None and readj is not None:
        plan = at("gedik-readj", "out", "plan_s")
        lines.append(f"- Fang (Fig. 15): Mixed rebalances after a worker is added within a much shorter response "
                     f"time than Readj, whose plan took at least 5 minutes there. Here: Mixed {_seconds(mixed)}, "
                     f"Readj {_seconds(readj)}; Readj planned in {plan:.2f} s (ours tracks only the keys above its "
                     "frequency threshold).")
    lines += _fluid_beside_all_at_once(table) + _partial_state(table)
    return (["Beside the papers:", "", *lines, ""]) if lines else []


def _partial_state(table: pd.DataFrame) -> list[str]:
    """What a change of W costs a scheme whose partial state stays where it is (issue 21): nothing moves,
    and each key keeps counters on its holders under every W so far."""
    kg = table[(table["scheme"] == "kg") & (table["migration"] == "all-at-once")].set_index("change")["dist_cost"]
    lines = []
    for (change, scheme), row in table[table["migrated_keys"] == 0].set_index(["change", "scheme"]).iterrows():
        beside = f" against kg's {kg[change]:.2f} after moving its keys" if change in kg.index else ""
        lines.append(f"- Partial state left where it is ({scheme}, {change}): no key moved; "
                     f"{row['dist_cost']:.2f} counters per key at the end{beside}.")
    return lines


def _fluid_beside_all_at_once(table: pd.DataFrame) -> list[str]:
    """Megaphone's comparison, for every change a scheme made both ways with the same hand-over."""
    lines = []
    for (change, scheme), both in table.groupby(["change", "scheme"], sort=False):
        for ahead in ("", ", ahead"):
            fluid, whole = both[both["migration"] == "fluid" + ahead], both[both["migration"] == "all-at-once" + ahead]
            if not (len(fluid) and len(whole)):
                continue
            f, w = fluid.iloc[0], whole.iloc[0]
            verdict = "lower" if f["latency_p99_migration_s"] < w["latency_p99_migration_s"] else "not lower"
            why = ("the state handed over the batch before: no row waits" if ahead else
                   "a moved key's rows wait one micro-batch for their state either way")
            lines.append(f"- Megaphone (VLDB 2019): fluid migration lowers the latency during a migration below all "
                         f"at once's. Here, {scheme} {change}{ahead}: p99 during the migration (its batches' "
                         f"largest) fluid {f['latency_p99_migration_s']:.2f} s over {f['migration_batches']:.0f} "
                         f"batches, all at once {w['latency_p99_migration_s']:.2f} s over "
                         f"{w['migration_batches']:.0f} (peak {f['latency_peak_s']:.2f} s against "
                         f"{w['latency_peak_s']:.2f} s; steady p99 {w['latency_p99_before_s']:.2f} s): {verdict} "
                         f"({why}; docs/migration.md).")
    return lines


def megaphone_spark(folder: Path) -> list[str]:
    """Megaphone's comparison with a state whose move costs time: the latency p99 during a migration, fluid
    against all at once, on the same stream and plan (the megaphone study)."""
    data = study_table(folder, "megaphone")
    if data is None or data.empty or "latency_p99_migration_s" not in data:
        return []
    data = data.assign(change=_changes(data), migration=[
        "all at once" if m == "all-at-once" else f"fluid, {k:,.0f} keys" for m, k in
        zip(data["migration"], data["fluid_keys"])], migrated_mb=data["migrated_bytes"] / 1e6)
    if data["workload"].nunique() > 1:  # several state sizes: each change named with its key space
        data["change"] = [f"{c}, {_key_space(w)}" for c, w in zip(data["change"], data["workload"])]
    idle = data["migrations"].fillna(0) == 0
    many = int(idle.sum()) > 1
    skipped = [] if not idle.any() else [
        f"{int(idle.sum())} run{'s' if many else ''} did not migrate and {'are' if many else 'is'} "
        f"left out ({', '.join(sorted(set(_planned(data[idle]))))}): "
        "the controller skips a plan whose last step would come into force after the stream's last batch.", ""]
    data = data[~idle]
    measures = ["migrated_keys", "migrated_mb", "migration_batches", "migration_s", "latency_p99_before_s",
                "latency_p99_migration_s", "latency_peak_s", "recovery_s"]
    table = data.groupby(["change", "migration"], sort=False)[measures].median().reset_index()
    table = with_latency_labels(table, data)
    changed_at = _span(data["schedule"].str.split(":").str[0].astype(int))
    lines = ["## Fluid against all-at-once migration of a large state on Spark (Megaphone's comparison)", "",
             f"{len(data)} runs ({int(data['correct'].sum())} gave the reference's answer, "
             f"{int(data['sim_exact'].sum())} routed exactly as the simulator predicts). "
             f"{', '.join(data['scheme'].unique())} changes W at micro-batch {changed_at}; the state is handed "
             "over ahead (no row waits for it), in one step or at most so many keys out of and into any worker "
             "per batch. The p99 during the migration is the largest of its batches' p99 (medians of the runs "
             "below; the verdicts compare means with their 95 % intervals).", "", *skipped, markdown(table.round(3)),
             ""]
    batches = _batches(folder, data)
    if batches is not None:
        grid = sns.relplot(data=batches, x="batch", y="latency_p99", hue="migration", col="change", kind="line",
                           col_wrap=2 if batches["change"].nunique() > 2 else None, marker="o", height=2.8,
                           aspect=1.4, **CI_BARS)
        grid.set_titles("{col_name}").set(ylabel="latency p99 of the batch (s)")
        lines += [figure(folder, "megaphone", grid), ""]
    return lines + ["Beside Megaphone (Hoffmann et al., VLDB 2019: fluid migration keeps the latency during a "
                    "migration lower than all at once):", "", *_fluid_verdicts(data), ""]


def _planned(runs: pd.DataFrame) -> list[str]:
    """Each run's intended change, e.g. "in 10→9, 16M keys, fluid, 20,000 keys" (its W did not change)."""
    to = [int(s.split(",")[0].split(":")[1]) for s in runs["schedule"]]  # the first change of the schedule
    return [f"{'out' if t > w else 'in'} {w}→{t}, {_key_space(wl)}, {m}"
            for w, t, wl, m in zip(runs["workers"], to, runs["workload"], runs["migration"])]


def _key_space(workload: str) -> str:
    """"zipf:z=0.5,keys=16000000" → "16M keys"."""
    keys = re.search(r"\bkeys=(\d+)", workload)
    return f"{int(keys.group(1)) / 1e6:g}M keys" if keys else workload


def _fluid_verdicts(data: pd.DataFrame) -> list[str]:
    lines = []
    for change, runs in data.groupby("change", sort=False):
        whole = runs.loc[runs["migration"] == "all at once", "latency_p99_migration_s"]
        for migration, fluid in runs[runs["migration"] != "all at once"].groupby("migration", sort=False):
            steps = fluid["latency_p99_migration_s"]
            lines.append(f"- {change}, {migration}: p99 during the migration {interval(steps)} s against all at "
                         f"once's {interval(whole)} s — {compare(steps, whole, 'fluid', 'all at once')}.")
    return lines


def _seconds(recovery: float) -> str:
    return "did not recover within the run" if pd.isna(recovery) else f"recovers in {recovery:.1f} s"


def fang_live(folder: Path) -> list[str]:
    """Throughput, latency, keys moved and plan time against Fang's fluctuation f, per scheme."""
    data = study_table(folder, "fang-live")
    if data is None or data.empty:
        return []
    data = data.assign(f=[float(re.search(r"\bf=([0-9.]+)", w).group(1)) for w in data["workload"]],
                       batch_balance=[_batch_balance(folder, run) for run in data["run"]])
    measures = ["throughput", "latency_p99", "migrated_keys", "plan_median_s", "batch_balance"]
    long = data.melt(id_vars=["scheme", "f"], value_vars=measures, var_name="measure")
    grid = sns.relplot(data=long, x="f", y="value", hue="scheme", col="measure", col_wrap=3, kind="line",
                       marker="o", height=2.6, aspect=1.3, facet_kws={"sharey": False}, **CI_BARS)
    grid.set_titles("{col_name}").set(ylabel="")
    table = data.groupby(["scheme", "f"])[measures].median().reset_index()
    table = with_latency_labels(table, data)
    return ["## Fang et al.'s Figs. 12–13 on Spark — rebalancing live as the distribution fluctuates", "",
            f"{len(data)} runs ({int(data['correct'].sum())} gave the reference's answer, "
            f"{int(data['sim_exact'].sum())} routed exactly as the simulator predicts). Every other micro-batch "
            "the distribution changes by f times the mean load; the table schemes plan from the counts of the "
            "batches since their last plan. `batch_balance`: the median over the batches after the first two of "
            f"max/mean load per batch (kept run folders only); Fang's θmax is {THETA}.", "",
            figure(folder, "fang_live", grid), "", markdown(table.round(3)), "", *_fang_claims(table)]


def _batch_balance(folder: Path, run: str) -> float:
    path = folder / "runs" / run / "timeline.parquet"
    if not path.exists():
        return np.nan
    return float(pd.read_parquet(path).sort_values("batch")["max_over_mean"].iloc[2:].median())


def _fang_claims(table: pd.DataFrame) -> list[str]:
    """Figs. 12–13's observations in the words of our medians (over f)."""
    by = table.groupby("scheme")[["throughput", "plan_median_s", "migrated_keys", "batch_balance"]].median()
    if not {"mixed", "gedik-readj", "sg"} <= set(by.index):
        return []
    mixed, readj, ideal = by.loc["mixed"], by.loc["gedik-readj"], by.loc["sg"]
    return ["Beside Fang's observations:", "",
            f"- Fig. 12: Mixed plans faster than Readj \"by a large margin\": here {mixed['plan_median_s']:.3f} s "
            f"against {readj['plan_median_s']:.3f} s per plan (medians over f).",
            f"- Fig. 13: Ideal (sg) bounds every key-aware scheme and Mixed comes close: throughput sg "
            f"{ideal['throughput']:,.0f}, mixed {mixed['throughput']:,.0f}, readj {readj['throughput']:,.0f} "
            "messages/s (medians over f) — on Spark the engine's cost per batch narrows every gap.",
            f"- Mixed's balance per batch: {mixed['batch_balance']:.3f} against 1 + θmax = {1 + THETA} "
            f"(+{NOISE} sampling noise); a plan made from one interval routes the next, already changed one.", ""]


def fang_theta(folder: Path) -> list[str]:
    """Throughput against θmax per scheme, on the Social-like word count and the Stock-like self-join."""
    data = study_table(folder, "fang-theta")
    if data is None or data.empty:
        return []
    data = data.assign(theta=[_theta(p, w) for p, w in zip(data["params"].fillna(""), data["workers"])])
    tabled = data[data["theta"].notna()]
    grid = sns.relplot(data=tabled, x="theta", y="throughput", hue="scheme", col="app", kind="line", marker="o",
                       height=2.8, aspect=1.3, facet_kws={"sharey": False}, **CI_BARS)
    for ax, app in zip(grid.axes.flat, grid.col_names):
        pkg = data[(data["app"] == app) & (data["scheme"] == "pkg")]["throughput"]
        if len(pkg):  # PKG takes no θmax: one level across the axis
            ax.axhline(float(pkg.median()), color="grey", ls="--", lw=1, label="pkg")
    grid.set(xscale="log", xlabel="θmax (Readj: the α that bounds the same overload)")
    table = data.groupby(["app", "scheme", "theta"], dropna=False)[["throughput", "latency_p50", "migrated_keys",
                                                                   "plan_median_s"]].median().reset_index()
    table = with_latency_labels(table, data)
    return ["## Fang et al.'s Fig. 14 on Spark — throughput against the imbalance tolerance θmax", "",
            f"{len(data)} runs ({int(data['correct'].sum())} gave the reference's answer, "
            f"{int(data['sim_exact'].sum())} routed exactly as the simulator predicts). Mixed and Readj start from "
            "their hash and may rebalance after every micro-batch; PKG (dashed) takes no θmax.", "",
            figure(folder, "fang_theta", grid), "", markdown(table.round(3)), ""]


def _theta(params: str, workers: int) -> float:
    """θmax from a run's parameters: Mixed's ``theta``, or the overload Readj's ``alpha`` bounds
    (α = (1 + θ) / (1 − θ / (W − 1)), inverted); NaN for a scheme without either."""
    from skewbench.scheme import parse_params

    given = parse_params(params)
    if "theta" in given:
        return float(given["theta"])
    if "alpha" in given:
        alpha = float(given["alpha"])
        return round((alpha - 1) / (1 + alpha / (workers - 1)), 3)
    return np.nan
