"""``skewbench advise`` (issue 24): which scheme for *your* stream on *your* cluster.

Every scheme the pipeline runs routes the user's stream as the Spark source would (the simulator,
:func:`~skewbench.bench.prediction.simulate_point`: the same routers, sources and micro-batches), and an
engine model predicts each run on the cluster (:func:`~skewbench.bench.prediction.predict`): the cost per
micro-batch that the engine adds to the busiest worker's work.  Machines of one kind differ 2–3× in that cost,
so the advice stands on a model fitted on the user's own cluster whenever there is one: ``--calibrate`` fits
it on the cluster of ``SPARK_CONF_DIR`` (the calibration a bench of the same points runs, cached per cluster
shape and code, so a second call reuses it: :func:`skewbench.bench.driver.cluster_model`), ``--engine-model``
reads one (a bench's ``engine_model.json``); without either, the kept bench's model, and the output says so.

Adaptive schemes also get their cost to plan and to migrate (:func:`plan_costs`).  The recommendation at
each W is the scheme with the highest predicted throughput; among those within :data:`TIE` of it, the one
holding the least state (counters per key), then the fewest probes, then the fastest.  Offline schemes are in
the table, not in the choice: they know the whole stream in advance.  Its reason sets the hottest key's share
p1 against 1/W (one worker's fair share: hashing alone carries a key up to it) and 2/W (what two choices can
spread), and the pick against kg and pkg.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.bench.prediction import EngineModel, predict, simulate_point
from skewbench.bench.studyfile import Point, Study, from_spec

ROOT = Path(__file__).resolve().parents[1]
#: The kept default bench's engine model (reports/README.md): fitted on the machine that ran it.
KEPT_MODEL = ROOT / "reports" / "bench-20261127b" / "engine_model.json"
#: Predicted throughputs within this share of the best are a tie, broken by state (counters per key within
#: STATE_TIE of the least are equal), then probes, then throughput.
TIE, STATE_TIE = 0.02, 0.05
#: mixed-brute routes as mixed does, with a planner that takes hours at W = 100.
LEFT_OUT = {"mixed-brute"}


def study(workload: str, app: str, workers: list[int], sources: int, delay_ms: float, messages: int,
          batch_rows_per_worker: int, levers: str, schemes: list[str]) -> Study:
    """Every scheme at every W, as a study (validated as study files are: one clear error); ``levers`` those
    of the engine model ("": the default set, which a calibration then fits)."""
    spec = {"name": "advise", "apps": app, "schemes": schemes, "workers": workers, "sources": sources,
            "delay_ms": delay_ms, "workloads": workload, "messages": messages,
            "batch_rows_per_worker": batch_rows_per_worker, "repeats": 1}
    return from_spec(spec | ({"levers": levers} if levers else {}), Path("advise"))


def points(study_: Study, seed: int) -> list[Point]:
    """The study's points with the stream's and routers' ``seed``."""
    return [Point(**{**asdict(p), "seed": seed}) for p in study_.points()]


def advise(points_: list[Point], model: EngineModel, progress=None) -> pd.DataFrame:
    """One row per point: predicted throughput and batch time, balance, state and probes."""
    rows = []
    for point in points_:
        if progress is not None:
            progress.step(f"{point.scheme} W={point.workers}")
        work = simulate_point(point, count_state=True)
        predicted = predict(point, work, model)
        stores = work.store.sum(0)
        rows.append({"workers": point.workers, "scheme": point.scheme,
                     "msgs/s": predicted["throughput"],
                     "batch s": predicted["overhead_s"] + predicted["busiest_s"],
                     "busiest / mean": float(stores.max() / stores.mean()) if stores.mean() else math.nan,
                     "counters per key": work.counters / work.keys if work.keys else math.nan,
                     "probes per message": work.probe.sum() / point.messages} | plan_costs(point))
    return pd.DataFrame(rows)


def plan_costs(point: Point) -> dict:
    """What an adaptive scheme costs to plan and to migrate on the point's stream, as it would run live
    (rebalancing every micro-batch): it routes the first micro-batch with its hash function and plans on
    its statistics — the seconds that took, and the table's entries — then routes the second with that table
    and plans again: the keys the second plan moves, and the share of that micro-batch's messages whose keys
    they are (the state a live migration carries).  NaN for schemes that never plan."""
    from skewbench.bench.apps import make_app
    from skewbench.scheme import make_scheme, parse_params
    from skewbench.sources import interval_stats
    from skewbench.workloads import parse

    scheme = make_scheme(point.scheme, point.workers, seed=point.seed, **parse_params(point.params))
    if not scheme.adaptive:
        return dict.fromkeys(PLAN_COLUMNS, math.nan)
    stream = make_app(point.app).prepare(parse(point.workload, messages=point.messages, seed=point.seed))
    n = min(point.batch_rows, stream.messages // 2)
    plans = []
    for lo in (0, n):
        routes = scheme.route_many(stream.fps[lo:lo + n], stream.clock[lo:lo + n])
        plans.append(scheme.rebalance(interval_stats(stream, lo, lo + n, np.bincount(routes, minlength=point.workers))))
        if plans[-1] is not None:
            scheme.apply(plans[-1])
    first, second = plans
    moved = second.moves["key"] if second is not None else np.empty(0, np.uint64)
    carried = np.isin(stream.key_fps[stream.ids[n:2 * n]], moved).mean() if n else 0.0
    return {"plan ms": 1000 * first.build_seconds if first is not None else 0.0, "table entries": scheme.table_size(),
            "keys moved per plan": len(moved), "moved share per plan": float(carried)}


#: advise's columns for adaptive schemes (:func:`plan_costs`).
PLAN_COLUMNS = ("plan ms", "table entries", "keys moved per plan", "moved share per plan")


def recommend(table: pd.DataFrame, p1: float) -> pd.DataFrame:
    """Per W: the recommended scheme and the one-sentence reason (module docstring)."""
    picks = []
    for workers, at in table.groupby("workers", sort=True):
        pick, tied = choose(at)
        picks.append({"workers": workers, "scheme": pick["scheme"], "reason": _reason(pick, at, p1, tied)})
    return pd.DataFrame(picks)


def choose(at: pd.DataFrame) -> tuple[pd.Series, int]:
    """The recommended row of one W's table, and how many schemes tied for the best throughput.  Offline schemes
    (Off-Greedy: fitted on the whole stream before it starts) are a bound to compare with, not a choice."""
    at = at[~at["scheme"].map(_offline)]
    close = at[at["msgs/s"] >= (1 - TIE) * at["msgs/s"].max()]
    lean = close[close["counters per key"] <= (1 + STATE_TIE) * close["counters per key"].min()]
    return lean.sort_values(["probes per message", "msgs/s"], ascending=[True, False]).iloc[0], len(close)


def _offline(scheme: str) -> bool:
    import skewbench.schemes  # noqa: F401  (registers every scheme)
    from skewbench.scheme import REGISTRY

    return scheme in REGISTRY and REGISTRY[scheme].offline


def _reason(pick: pd.Series, at: pd.DataFrame, p1: float, tied: int) -> str:
    w = int(pick["workers"])
    by = at.set_index("scheme")
    if p1 > 2 / w:
        skew = f"p1 = {p1:.1%} > 2/W = {2 / w:.1%}: two choices cannot spread the hottest key"
    elif p1 > 1 / w:
        skew = f"p1 = {p1:.1%} > 1/W = {1 / w:.1%}: the hottest key alone overloads the worker it is hashed to"
    else:
        skew = f"p1 = {p1:.1%} <= 1/W = {1 / w:.1%}: no key alone overloads a worker"
    if "kg" in by.index and pick["scheme"] != "kg":
        skew += f" (kg's busiest worker: {by.loc['kg', 'busiest / mean']:.2f}x the mean)"
    versus = ", ".join(f"{pick['msgs/s'] / by.loc[s, 'msgs/s']:.2f}x {s}'s" for s in ("kg", "pkg")
                       if s in by.index and s != pick["scheme"])
    why = (f"{pick['scheme']} is predicted {pick['msgs/s']:,.0f} msgs/s" + (f" ({versus})" if versus else "")
           + f" with its busiest worker at {pick['busiest / mean']:.2f}x the mean and "
           f"{pick['counters per key']:.2f} counters per key")
    if at["probes per message"].max() > 0:  # the app probes every holder of a key: fan-out costs
        most = at.loc[at["probes per message"].idxmax()]
        why += (f" and {pick['probes per message']:.2f} probes per message ({most['scheme']}: "
                f"{most['probes per message']:.2f})")
    if not pd.isna(pick.get("plan ms", math.nan)):  # an adaptive pick: what its plans cost live
        why += (f"; its plan, {pick['table entries']:.0f} table entries, took {pick['plan ms']:.0f} ms and "
                f"the next moved {pick['keys moved per plan']:.0f} keys ({pick['moved share per plan']:.1%} of the "
                f"messages' state)")
    ties = f", the least state of the {tied} schemes within {TIE:.0%} of the best" if tied > 1 else ""
    return f"{skew}; {why}{ties}."


def hottest_share(point: Point) -> float:
    """The hottest key's share of the stream the points route."""
    from skewbench.bench.apps import make_app
    from skewbench.workloads import parse

    stream = make_app(point.app).prepare(parse(point.workload, messages=point.messages, seed=point.seed))
    counts = np.bincount(stream.ids)
    return float(counts.max() / counts.sum()) if counts.sum() else 0.0


def summary(table: pd.DataFrame, picks: pd.DataFrame, setting: str) -> str:
    """The tables (fastest first; probes and plan costs only where some scheme has them) and the recommendations,
    as text."""
    parts = []
    for w, at in table.groupby("workers"):
        unused = [c for c in ("probes per message", *PLAN_COLUMNS) if not at[c].fillna(0).any()]
        shown = at.drop(columns=["workers", *unused])
        parts += [f"W = {w} ({setting}):", shown.sort_values("msgs/s", ascending=False).to_string(
            index=False, formatters={"msgs/s": "{:,.0f}".format} | _PLAN_FORMATS, float_format="{:.2f}".format,
            na_rep="-"), ""]
    parts += [f"recommended at W = {p['workers']}: {p['scheme']} — {p['reason']}" for _, p in picks.iterrows()]
    return "\n".join(parts)


def write(out: Path, table: pd.DataFrame, picks: pd.DataFrame, config: dict) -> None:
    """``out/advice.csv`` (every row, the recommended ones marked, with provenance) and ``out/advice.png``."""
    from skewbench.bench.provenance import write_metadata

    out.mkdir(parents=True)
    marked = table.merge(picks.assign(recommended=True)[["workers", "scheme", "recommended"]], how="left")
    marked.fillna({"recommended": False}).to_csv(out / "advice.csv", index=False)
    write_metadata(out / "advice.csv", {"command": "advise", **config})
    draw(table, picks, out / "advice.png")


_PLAN_FORMATS = {"plan ms": "{:.1f}".format, "table entries": "{:,.0f}".format, "keys moved per plan": "{:,.0f}".format,
                 "moved share per plan": "{:.1%}".format}


def draw(table: pd.DataFrame, picks: pd.DataFrame, path: Path) -> None:
    """Predicted throughput of every scheme, fastest on top, one panel per W, the recommended one marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    widths = sorted(set(table["workers"]))
    fig, axes = plt.subplots(1, len(widths), figsize=(4.2 * len(widths), 0.22 * table["scheme"].nunique() + 1.2),
                             squeeze=False)
    for ax, w in zip(axes[0], widths):
        at = table[table["workers"] == w].sort_values("msgs/s")
        pick = picks.loc[picks["workers"] == w, "scheme"].iloc[0]
        ax.barh(at["scheme"], at["msgs/s"], color=["#e7298a" if s == pick else "#8da0cb" for s in at["scheme"]])
        ax.set(title=f"W = {w}: {pick} recommended", xlabel="predicted messages/s")
        ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
