"""Fang et al., "Parallel Stream Processing Against Workload Skewness and Variance" (HPDC 2017), Sec. 5.

Fang's synthetic experiments (Figs. 7-13) work on *snapshots*: per interval, a Zipf(z) count per key
of a domain of K keys, whose frequencies fluctuate between intervals at rate f.  The controller
sees the interval's counts, and plans only when an instance is overloaded.  We reproduce that
directly: :class:`Fluctuation` makes the snapshots and :func:`run` feeds them to one scheme
(routing the keys with their counts, or the messages for schemes that look at each message),
measuring per interval the instances' loads, the plan's construction time, its migration cost
(Sec. 5: % of the window's state that moves) and the routing-table size.

Throughput (Figs. 13-16) is not timed here: Fang saturates the CPU (Sec. 5, "we force the system to
a saturation point"), so the busiest instance paces the operator and we report the bottleneck
share ``mean / max`` of the interval's instance loads (1 = Ideal).  It charges no migration pause,
plan time or PKG merge work; the fidelity reasons say where that matters.

Our reading of settings the text lost (Table 2 lost its symbols and bold defaults):
K = 10,000 and W = 15 (Appendix B: MinMig's table converges to ~9,350 = K(1 − 1/W) entries),
A_max = 3,000 (Table 2 "3·10³"), z = 0.85, f = 1, θ_max = 0.08, β = 1.5, windows w = 1 and 5.
f is the total change of the instances' loads a fluctuation must reach, in units of the mean
load: swaps go on until Σ_d |L'(d) − L(d)| ≥ f · L̄ (the range [0, 2] of Table 2).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.bench.provenance import write_metadata
from skewbench.bench.study import Study
from skewbench.hashing import fingerprints
from skewbench.scheme import Stats, make_scheme
from skewbench.schemes import fang_planning as fp
from skewbench.schemes.consistent import lookup, ring
from skewbench.workloads.synthetic import swap_load

ZIPF = "zipf:z=1.0,keys=100000"
Z, F, THETA, BETA = 0.85, 1.0, 0.08, 1.5  # Table 2 defaults
SEEDS = 5  # streams and hash seeds behind every point an order is claimed between (planning, fluctuation, Fig. 14)
KEYS, WORKERS, TABLE = 10_000, 15, 3000  # our reading (module docstring)
TUPLES = 200_000  # tuples per interval (not stated; only the shares matter)
INTERVALS = 20  # controller steps per run (Fig. 7 shows 50; 20 keep the sweeps within budget)
FANG_SCHEMES = ("mixed", "mintable", "minmig", "llfd", "mixed-brute")
BY_MESSAGE = ("gedik-readj", "pkg", "sg")  # look at every message (sketch, load estimates, round robin)
EMPTY_KEYS, EMPTY_WORKERS = np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)


# -- the synthetic workload (Sec. 5, "Synthetic Data") ---------------------------------------------

def zipf_probabilities(keys: int, z: float) -> np.ndarray:
    p = np.arange(1, keys + 1, dtype=np.float64) ** -z
    return p / p.sum()


def hashed(fps: np.ndarray, workers: int, seed: int = 0) -> np.ndarray:
    """h(k): the consistent hash our table schemes fall back to (100 points per instance)."""
    return lookup(fps, EMPTY_KEYS, EMPTY_WORKERS, *ring(workers, 100, seed), seed)


class Fluctuation:
    """Zipf(z) over K keys whose frequencies are swapped between intervals (Sec. 5).

    A swap exchanges the frequencies of two keys drawn uniformly that h puts on different
    instances; swaps go on until the instances' loads changed by Σ_d |ΔL(d)| ≥ f · L̄.
    """

    def __init__(self, keys: int, z: float, f: float, workers: int, seed: int = 0):
        self.zipf, self.f, self.workers = zipf_probabilities(keys, z), f, workers
        self.rng = np.random.default_rng(seed)
        self.fps = fingerprints(np.arange(keys))
        self.home = hashed(self.fps, workers)
        self.key_of_rank = self.rng.permutation(keys)

    def probabilities(self) -> np.ndarray:
        p = np.empty_like(self.zipf)
        p[self.key_of_rank] = self.zipf
        return p

    def fluctuate(self) -> int:
        """Swap until the load change reaches f · L̄ (:func:`~skewbench.workloads.synthetic.swap_load`);
        returns the number of swaps."""
        return swap_load(self.key_of_rank, self.rng, self.zipf, self.home, self.workers, self.f)

    def snapshots(self, intervals: int, tuples: int, every: int = 1) -> list[np.ndarray]:
        """Per-interval tuple counts per key, fluctuating at the start of every ``every``-th interval
        (the first interval is the initial Zipf)."""
        out = []
        for t in range(intervals):
            if t and t % every == 0 and self.f > 0:
                self.fluctuate()
            out.append(self.rng.multinomial(tuples, self.probabilities()))
        return out


# -- one run: snapshots through a scheme and its controller ------------------------------------------

def _messages(fps: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return rng.permutation(np.repeat(fps, counts))


def _loads(router, fps, counts, workers, rng) -> np.ndarray:
    """The interval's load per instance under ``router`` (per message for message-aware schemes)."""
    if router.name in BY_MESSAGE:
        return np.bincount(router.route_many(_messages(fps, counts, rng)), minlength=workers).astype(float)
    return np.bincount(router.route_many(fps), weights=counts, minlength=workers)


def _tolerance(router, workers: int) -> float | None:
    """θ_max of a table scheme, or the θ Gedik's α allows (Eq. 15); None for static schemes."""
    if hasattr(router, "theta"):
        return float(router.theta)
    if hasattr(router, "alpha"):
        from skewbench.schemes.gedik import theta
        return theta(router.alpha, workers)
    return None


def alpha_for(theta: float, workers: int) -> float:
    """Gedik's α (max/min) whose Eq. 15 deviation from the mean equals Fang's θ_max."""
    return (1 + theta) / (1 - theta / (workers - 1))


def run(scheme: str, workers: int, snapshots: list[np.ndarray], fps: np.ndarray, params: dict | None = None,
        window: int = 1, schedule: dict[int, int] | None = None, seed: int = 0) -> pd.DataFrame:
    """One row per interval: loads, then the controller's plan made from them (for the next one).

    Columns: interval, workers, max_over_mean, bottleneck (mean / max: the throughput share of a
    saturated operator), triggered (an instance was overloaded), plan_seconds, migration_pct (% of
    the window's state whose instance changes, Sec. 5), moved_keys, table_size, and for Fang's
    planners planned_bottleneck: mean / max of this interval's loads under the plan just made from
    them, i.e. without the one-interval lag (``bottleneck`` of the next interval is what it achieves).
    """
    rng = np.random.default_rng(seed + 1)
    router = make_scheme(scheme, workers, seed=seed, **(params or {}))
    schedule = schedule or {}
    rows, history = [], []
    for t, counts in enumerate(snapshots):
        loads = _loads(router, fps, counts, workers, rng)
        live = loads[:workers]
        history = (history + [counts])[-window:]
        state = np.sum(history, axis=0)
        row = {"interval": t, "workers": workers, "max_over_mean": live.max() / live.mean(),
               "bottleneck": live.mean() / live.max(), "triggered": False, "plan_seconds": np.nan,
               "migration_pct": 0.0, "moved_keys": 0, "table_size": router.table_size(),
               "planned_bottleneck": np.nan}
        new_workers = schedule.get(t, workers)
        if router.adaptive:
            theta = _tolerance(router, workers)
            seen = counts > 0
            stats = Stats(keys=fps[seen], counts=counts[seen].astype(float), loads=live)
            plan = router.rebalance(stats, workers=new_workers if new_workers != workers else None)
            router.apply(plan)
            moved = np.isin(fps, plan.moves["key"])
            row.update(triggered=bool(new_workers != workers or live.max() / live.mean() - 1 > theta + 1e-9),
                       plan_seconds=plan.build_seconds, moved_keys=int(moved.sum()),
                       migration_pct=100 * state[moved].sum() / state.sum(), table_size=router.table_size())
            if scheme in FANG_SCHEMES:  # a table routes keys alike, so the counts can be routed again
                planned = np.bincount(router.route_many(fps), weights=counts, minlength=new_workers)
                row["planned_bottleneck"] = planned.mean() / planned.max()
        elif new_workers != workers:
            router = make_scheme(scheme, new_workers, seed=seed, **(params or {}))
        workers = new_workers
        rows.append(row)
    return pd.DataFrame(rows)


def summary(series: pd.DataFrame) -> dict:
    """A run's averages (Sec. 5: "average values over the complete processing procedure").

    Balance and bottleneck (also the planned one) from the second interval on (the first is routed by
    h alone); plan time
    over the plans actually made; migration over every controller step, and per plan.
    """
    steady = series[series.interval > 0]
    plans = series[series.triggered]
    return {"max_over_mean": steady.max_over_mean.mean(), "bottleneck": steady.bottleneck.mean(),
            "planned_bottleneck": steady.planned_bottleneck.mean(),
            "bottleneck_min": steady.bottleneck.min(), "plans": len(plans),
            "plan_seconds": plans.plan_seconds.mean() if len(plans) else 0.0,
            "plan_seconds_max": plans.plan_seconds.max() if len(plans) else 0.0,
            "migration_pct": series.migration_pct.mean(),
            "migration_pct_per_plan": plans.migration_pct.mean() if len(plans) else 0.0,
            "table_size": series.table_size.iloc[-1]}


def _tuples(messages: int | None) -> int:
    from skewbench.bench.papers import size  # here: the package imports this module

    return size(TUPLES, messages)


def _write(out: Path, rows: list[dict], config: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out, index=False)
    write_metadata(out, config)


def _point(scheme, keys=KEYS, workers=WORKERS, z=Z, f=F, theta=THETA, window=1, intervals=INTERVALS,
           tuples=TUPLES, seed=0, params=None, **tags) -> dict:
    """One (scheme, setting) point on a fresh fluctuating stream (same seed → same stream)."""
    gen = Fluctuation(keys, z, f, workers, seed)
    snaps = gen.snapshots(intervals, tuples)
    if params is None:
        params = _params(scheme, theta, window, workers, keys, tuples)
    began = time.perf_counter()
    series = run(scheme, workers, snaps, gen.fps, params, window=window, seed=seed)
    return {"scheme": scheme, "keys": keys, "workers": workers, "z": z, "f": f, "theta": theta, "window": window,
            "intervals": intervals, "tuples": tuples, "seed": seed, **tags, **summary(series),
            "run_seconds": time.perf_counter() - began}


def _params(scheme: str, theta: float, window: int, workers: int, keys: int, tuples: int, sigma: float = 0.1) -> dict:
    if scheme in FANG_SCHEMES:
        return {"theta": theta, "beta": BETA, "table_max": TABLE, "window": window}
    if scheme == "gedik-readj":  # same balance bound; the sketch's window spans w intervals
        return {"alpha": alpha_for(theta, workers), "sigma": sigma, "window": window * tuples, "domain_size": keys}
    return {}


# -- Fig. 7: skew under hashing ----------------------------------------------------------------------

def hash_skew(out: Path, messages: int | None) -> None:
    """Fig. 7: max / min of the instances' average load over 50 intervals under h, by W and by K."""
    rows = []
    for sweep, points in (("workers", [(KEYS, w) for w in (1, 5, 10, 15, 20, 25, 30, 35, 40)]),
                          ("keys", [(k, WORKERS) for k in (5_000, 10_000, 100_000, 1_000_000)])):
        for keys, workers in points:
            gen = Fluctuation(keys, Z, F, workers, seed=0)
            total = np.zeros(workers)
            for t in range(50):
                if t:
                    gen.fluctuate()
                total += np.bincount(gen.home, weights=gen.probabilities(), minlength=workers)
            rows.append({"sweep": sweep, "keys": keys, "workers": workers, "max_over_min": total.max() / total.min(),
                         "max_over_mean": total.max() / total.mean()})
    _write(out, rows, {"figure": "Fang Fig. 7", "z": Z, "f": F, "intervals": 50, "hash": "consistent, 100 points"})


# -- Figs. 8-10 and 12: plan construction and migration ------------------------------------------------

def planning(out: Path, messages: int | None) -> None:
    """Figs. 8-10: Mixed vs MinTable with windows 1 and 5, over W, θ_max and K."""
    tuples = _tuples(messages)
    rows = []
    for seed in range(SEEDS):
        for window in (1, 5):
            for scheme in ("mixed", "mintable"):
                at = dict(window=window, seed=seed)
                for w in (5, 10, 15, 20, 30, 40):
                    rows.append(_point(scheme, workers=w, tuples=tuples, sweep="workers", **at))
                for theta in (0.02, 0.04, 0.08, 0.16, 0.32, 0.64):
                    rows.append(_point(scheme, theta=theta, tuples=tuples, sweep="theta", **at))
                for keys in (5_000, 10_000, 100_000, 1_000_000):
                    rows.append(_point(scheme, keys=keys, tuples=max(tuples, 20 * keys) if keys > 10_000 else tuples,
                                       intervals=5 if keys > 100_000 else INTERVALS, sweep="keys", **at))
    _write(out, rows, {"figure": "Fang Figs. 8-10", "seeds": SEEDS,
                       "defaults": {"keys": KEYS, "workers": WORKERS, "theta": THETA, "f": F, "z": Z,
                                    "table_max": TABLE}})


def fluctuation(out: Path, messages: int | None) -> None:
    """Figs. 12-13: Mixed, brute-force Mixed and Readj (best of several σ), and Ideal, over f."""
    tuples = _tuples(messages)
    rows = []
    for seed in range(SEEDS):
        for f in (0.0, 0.5, 1.0, 1.5, 2.0):
            at = dict(f=f, tuples=tuples, intervals=10, sweep="f", seed=seed)
            for scheme in ("mixed", "mixed-brute", "sg", "kg"):
                rows.append(_point(scheme, best=True, **at))
            rows += _readj_best([_point("gedik-readj", sigma=sigma, **at,
                                        params=_params("gedik-readj", THETA, 1, WORKERS, KEYS, tuples, sigma))
                                 for sigma in sigmas(THETA)])
    _write(out, rows, {"figure": "Fang Figs. 12-13", "seeds": SEEDS,
                       "readj": {"sigmas": sigmas(THETA), "best": "highest bottleneck, per seed"}})


def discretization(out: Path, messages: int | None) -> None:
    """Fig. 11: the Mixed planner on the original key space vs on the compact representation with HLHE
    granularity 2^e (e = 0..8), on the same planning problems (Mixed's controller over fluctuating
    intervals).  ``solve_seconds`` times the planner alone (Fang's instances report statistics as
    compact records, Sec. 4.1); ``compact_seconds`` the grouping we do in the controller instead.
    ``error_pct``: the worst instance's |estimated − actual| load / actual load, estimated from the
    discretised costs (Fig. 11(b)), mean over intervals."""
    rows = []
    for keys, intervals in ((KEYS, 5), (1_000_000, 3)):
        tuples = max(_tuples(messages), 20 * keys)
        gen = Fluctuation(keys, Z, F, WORKERS, seed=0)
        router = make_scheme("mixed", WORKERS, **_params("mixed", THETA, 1, WORKERS, keys, tuples))
        samples: dict = {}
        for counts in gen.snapshots(intervals, tuples):
            seen = counts > 0
            stats = Stats(keys=gen.fps[seen], counts=counts[seen].astype(float), loads=np.zeros(WORKERS))
            _, problem = router.problem(stats)  # window 1: rebalance below rebuilds the same problem
            for degree in [None, *range(9)]:
                samples.setdefault(degree, []).append(_plan_sample(problem, degree))
            router.apply(router.rebalance(stats))
        for degree, got in samples.items():
            rows.append({"keys": keys, "workers": WORKERS, "intervals": intervals,
                         "representation": "original" if degree is None else "compact",
                         "degree": -1 if degree is None else degree,
                         "granularity": 0 if degree is None else 2 ** degree,
                         **{k: float(np.mean([g[k] for g in got])) for k in got[0]},
                         "error_pct_max": float(np.max([g["error_pct"] for g in got]))})
    _write(out, rows, {"figure": "Fang Fig. 11"})


def _plan_sample(problem: fp.Problem, degree: int | None) -> dict:
    """Time Mixed on ``problem`` (compacted with HLHE ``degree`` unless None) and the load error."""
    began = time.perf_counter()
    packed = None if degree is None else fp.compact(problem, degree)
    compacted = time.perf_counter()
    fp.solve(problem if packed is None else packed.problem, "mixed")
    solved = time.perf_counter()
    actual = np.bincount(problem.current, weights=problem.cost, minlength=problem.workers)
    guess = actual if degree is None else np.bincount(
        problem.current, weights=fp.hlhe(problem.cost, degree, problem.current), minlength=problem.workers)
    live = actual > 0
    return {"solve_seconds": solved - compacted, "compact_seconds": compacted - began,
            "records": len(problem.cost) if packed is None else packed.records,
            "entries": len(problem.cost) if packed is None else len(packed.problem.cost),
            "error_pct": float(100 * np.max(np.abs(guess - actual)[live] / actual[live]))}


# -- Figs. 14-16: stand-ins for the real workloads and TPC-H Q5 -----------------------------------------

#: Social: 5 days of feeds over 180k words, "changes slowly"; Stock: 3 days over 1,036 stocks, "abrupt
#: bursts" (Sec. 5).  A day is an interval, as in the paper; f is our reading.  2M tuples instead of the
#: paper's 5M / 6M: our measures are load shares, and Readj's per-message sketch dominates the run time.
REAL = {"social": {"keys": 180_000, "f": 0.5, "intervals": 5, "tuples": 400_000},
        "stock": {"keys": 1036, "f": 2.0, "intervals": 3, "tuples": 600_000}}
THETAS = (0.02, 0.04, 0.08, 0.16, 0.32)
SIGMAS = (0.05, 0.1, 0.25, 0.5, 1.0)


def sigmas(theta: float) -> tuple[float, ...]:
    """Readj's σ values to try (Fang reports the best of several, Sec. 5): the three smallest whose
    frequency threshold σ·θ/N (Gedik Eq. 17) tracks few enough keys to plan in seconds — readj's swaps
    grow with the square of the tracked keys (σ·θ = 0.0016 took minutes per plan at W = 15)."""
    return tuple(s for s in SIGMAS if s * theta >= 0.004 - 1e-12)[:3]


def _readj_best(rows: list[dict]) -> list[dict]:
    """Flag the Readj σ with the best throughput share (then the least migration), as Fang reports."""
    best = max(range(len(rows)), key=lambda i: (rows[i]["bottleneck"], -rows[i]["migration_pct"]))
    return [{**r, "best": i == best} for i, r in enumerate(rows)]


def _scaled(spec: dict, messages: int | None) -> int:
    return spec["tuples"] if messages is None else max(1, min(spec["tuples"], messages // spec["intervals"]))


def real_theta(out: Path, messages: int | None) -> None:
    """Fig. 14: throughput share over θ_max on the Social and Stock stand-ins (PKG on Social only)."""
    rows = []
    for seed in range(SEEDS):
        for name, spec in REAL.items():
            tuples = _scaled(spec, messages)
            common = dict(keys=spec["keys"], f=spec["f"], intervals=spec["intervals"], tuples=tuples, dataset=name,
                          seed=seed)
            for theta in THETAS:
                for scheme in ("mixed", "mintable", "kg") + (("pkg",) if name == "social" else ()):
                    rows.append({**_point(scheme, theta=theta, **common), "best": True})
                rows += _readj_best([_point("gedik-readj", theta=theta, sigma=sigma, **common,
                                            params=_params("gedik-readj", theta, 1, WORKERS, spec["keys"], tuples,
                                                           sigma))
                                     for sigma in sigmas(theta)])
    _write(out, rows, {"figure": "Fang Fig. 14", "datasets": REAL, "thetas": THETAS, "seeds": SEEDS})


def real_scale_out(out: Path, messages: int | None) -> None:
    """Fig. 15: run to balance, add one instance (W → W + 1), follow each interval (one row each)."""
    rows = []
    for name, spec in REAL.items():
        tuples = _scaled(spec, messages)
        gen = Fluctuation(spec["keys"], Z, spec["f"], WORKERS, seed=0)
        snaps = gen.snapshots(8, tuples, every=4)  # a stable distribution, a fluctuation with the new instance
        for scheme, params in [("mixed", None), ("mintable", None), ("kg", {}), ("pkg", {}),
                               *[("gedik-readj", {"sigma": s}) for s in sigmas(THETA)]]:
            params = _params(scheme, THETA, 1, WORKERS, spec["keys"], tuples, **(params or {}))
            series = run(scheme, WORKERS, snaps, gen.fps, params, schedule={3: WORKERS + 1})
            rows += [{"dataset": name, "scheme": scheme, "sigma": params.get("sigma", np.nan), **r,
                      "phase": "before" if r["interval"] < 3 else ("scale_out" if r["interval"] == 3 else "after")}
                     for r in series.to_dict("records")]
    table = pd.DataFrame(rows)
    readj = table[(table.scheme == "gedik-readj") & (table.phase == "after")]
    best_sigma = readj.groupby(["dataset", "sigma"]).bottleneck.mean().groupby(level="dataset").idxmax()
    chosen = {dataset: sigma for dataset, sigma in best_sigma.values}
    table["best"] = (table.scheme != "gedik-readj") | (table.sigma == table.dataset.map(chosen))
    _write(out, table.to_dict("records"), {"figure": "Fang Fig. 15", "datasets": REAL, "scale_out_after_interval": 3})


def tpch(out: Path, messages: int | None) -> None:
    """Fig. 16 stand-in: Q5's join keyed by a Zipf-skewed foreign key (10,000 suppliers, TPC-H SF 1),
    an hour in 3-minute intervals (20 controller steps, to keep Readj affordable), a window of 2 intervals
    (Fang: 5 minutes), the distribution changing every 15 minutes (every 5 intervals)."""
    tuples = _tuples(messages) // 2
    rows = []
    for theta in (0.02, 0.08, 0.32):
        common = dict(keys=10_000, f=F, window=2, intervals=20, tuples=tuples, theta=theta)
        gen_args = dict(every=5)
        for scheme in ("mixed", "mintable", "kg"):
            rows.append({**_point_every(scheme, **common, **gen_args), "best": True})
        rows += _readj_best([_point_every("gedik-readj", **common, **gen_args, sigma=sigma,
                                          params=_params("gedik-readj", theta, 2, WORKERS, 10_000, tuples, sigma))
                             for sigma in sigmas(theta)])
    _write(out, rows, {"figure": "Fang Fig. 16 (stand-in)", "keys": 10_000, "interval_minutes": 3,
                       "window_intervals": 2, "change_every": 5})


def _point_every(scheme, keys, f, window, intervals, tuples, theta, every, params=None, **tags) -> dict:
    gen = Fluctuation(keys, Z, f, WORKERS, seed=0)
    snaps = gen.snapshots(intervals, tuples, every=every)
    params = _params(scheme, theta, window, WORKERS, keys, tuples) if params is None else params
    series = run(scheme, WORKERS, snaps, gen.fps, params, window=window)
    return {"scheme": scheme, "keys": keys, "workers": WORKERS, "f": f, "theta": theta, "window": window,
            "tuples": tuples, **tags, **summary(series)}


def experiments(messages: int | None) -> dict:
    m = messages or 2_000_000
    return {
        # Scale-out: one worker added half-way (Gedik grows N one channel at a time; Fang adds an instance).
        "scale_out": (Study(ZIPF, ["kg", "consistent", "gedik-readj", "mixed"], [10], [1], m,
                            schedule={m // 2: 11}), True),
        "fang_hash_skew": lambda out: hash_skew(out, messages),
        "fang_planning": lambda out: planning(out, messages),
        "fang_fluctuation": lambda out: fluctuation(out, messages),
        "fang_discretization": lambda out: discretization(out, messages),
        "fang_real_theta": lambda out: real_theta(out, messages),
        "fang_real_scale_out": lambda out: real_scale_out(out, messages),
        "fang_tpch": lambda out: tpch(out, messages),
    }
