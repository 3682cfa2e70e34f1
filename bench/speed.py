"""Routing speed of every scheme on one core, as rates and ratios to key grouping measured in the same run."""

from __future__ import annotations

import statistics
import time

import numpy as np
import pandas as pd

from skewbench.scheme import REGISTRY, Stats, make_scheme
from skewbench.sources import source_of_each_message, source_routers
from skewbench.stream import Stream

BASELINE = "kg"


def published_plan_times() -> dict[str, str]:
    """The papers' plan construction times, as printed (their settings differ from ours: read the note)."""
    from skewbench.analysis.published import published

    gedik, fang = published()["gedik"]["results"], published()["fang"]["results"]
    return {
        "gedik-readj": f"≤{gedik['readj_construction_s']['sigma_0_1_max']} s at σ=0.1, "
                       f"{gedik['readj_construction_s']['sigma_0_008']} s at σ=0.008 (Gedik §5)",
        "gedik-redist": f"{gedik['redist_construction_s_sigma_0_008']} s at σ=0.008 (Gedik §5)",
        "mixed": f"<{fang['mixed_plan_generation_s_strict_theta_max']} s at strict θ_max (Fang §6)",
        "llfd": f"{fang['compact_representation_plan_s']['original_key_space']} s full key space, "
                f"{fang['compact_representation_plan_s']['discretized']} s compact (Fang §6)",
    }


def _fitted(name: str, workers: int, seed: int, stats: Stats):
    scheme = make_scheme(name, workers, seed=seed)
    if scheme.offline:
        scheme.fit(stats)
    return scheme


def routing_seconds(stream: Stream, name: str, workers: int, sources: int, seed: int, stats: Stats) -> float:
    """Wall time for S fresh per-source routers to route their share of the stream (fingerprints precomputed)."""
    routers = source_routers(_fitted(name, workers, seed, stats), sources)
    source = source_of_each_message(stream, len(routers), "shuffle")  # one router (global): all messages
    parts = [(router, stream.fps[source == s], stream.clock[source == s]) for s, router in enumerate(routers)]
    began = time.perf_counter()
    for router, fps, clock in parts:
        router.route_many(fps, clock)
    return time.perf_counter() - began


def plan_seconds(stream: Stream, name: str, workers: int, seed: int, stats: Stats) -> float:
    """Wall time of one rebalance() after the scheme has seen the whole stream (adaptive schemes).

    Gedik's schemes plan from their own lossy counter, Fang's from ``stats``: routing first fills both.
    """
    scheme = _fitted(name, workers, seed, stats)
    scheme.route_many(stream.fps, stream.clock)
    began = time.perf_counter()
    scheme.rebalance(stats)
    return time.perf_counter() - began


def measure(stream: Stream, schemes: list[str], workers: int = 100, sources: int = 5, repeat: int = 3,
            seed: int = 0, report=print) -> pd.DataFrame:
    """Median routing rate per scheme over ``repeat`` runs, after a warm-up that compiles every kernel."""
    keys, counts = np.unique(stream.ids, return_counts=True)
    stats = Stats(keys=stream.key_fps[keys], counts=counts.astype(float), loads=np.zeros(workers))
    warm = stream.head(min(20_000, stream.messages))
    rows = []
    for name in [BASELINE] + [s for s in schemes if s != BASELINE]:
        routing_seconds(warm, name, workers, sources, seed, stats)  # JIT compile, caches
        seconds = statistics.median(routing_seconds(stream, name, workers, sources, seed, stats)
                                    for _ in range(repeat))
        plan = plan_seconds(stream, name, workers, seed, stats) if REGISTRY[name].adaptive else float("nan")
        rows.append({"scheme": name, "msgs_per_s": stream.messages / seconds, "route_seconds": seconds,
                     "plan_seconds": plan})
        report(f"{name:>14}  {stream.messages / seconds / 1e6:8.2f} M msgs/s"
               + (f"  plan {plan:.3f} s" if plan == plan else ""))
    table = pd.DataFrame(rows)
    table["ratio_to_kg"] = table["msgs_per_s"] / table.loc[table.scheme == BASELINE, "msgs_per_s"].iloc[0]
    table["paper_plan"] = table.scheme.map(published_plan_times()).fillna("")
    return table.assign(workload=stream.name, messages=stream.messages, workers=workers, sources=sources,
                        repeat=repeat, seed=seed)
