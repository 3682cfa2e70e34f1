"""The exact balls-into-bins simulator: S sources, each with its own router, feeding W workers.

Messages are split over the sources (round-robin — shuffle grouping at the sources — or by key;
:mod:`skewbench.sources` splits them and builds the routers), then routed interval by interval.
Within an interval every source routes its own messages with its own scheme object, which is exact
for schemes whose state is per source (``coupling = "local"``): a source's decisions depend only on
the messages it has seen.  Between intervals the simulator does what a real deployment's controller
would do: tell probing sources the true loads, hand adaptive schemes the interval's statistics and
install their plan, and change the number of workers when the schedule says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from skewbench.scheme import Plan, Scheme, make_scheme
from skewbench.simulator import metrics
from skewbench.sources import (fit_offline, interval_stats, plan_on_prefix, source_of_each_message,
                               source_routers)
from skewbench.stream import Stream

#: Messages a throwaway router routes before the timed run (:func:`_warm_up`).
WARM_UP_MESSAGES = 10_000


@dataclass
class SimResult:
    """One simulated run: a summary row and the imbalance time series I(t)."""

    row: dict
    timeseries: pd.DataFrame
    routes: np.ndarray = field(repr=False)
    plans: list[Plan] = field(default_factory=list, repr=False)


def _boundaries(n: int, interval: int, schedule: dict[int, int]) -> np.ndarray:
    points = set(range(interval, n, interval)) | {p for p in schedule if 0 < p < n} | {n}
    return np.array(sorted(points), dtype=np.int64)


def _warm_up(router: Scheme, stream: Stream) -> None:
    """Compile the scheme's kernels before routing is timed (numba: about 1 s the first time in a
    process, which would count against the first scheme run).  A spawned twin routes a prefix, so
    ``router`` and the results stay as they were; an adaptive twin first plans on it, since
    planning and routing by a table have kernels of their own."""
    n = min(stream.messages, WARM_UP_MESSAGES)
    twin = router.spawn()
    if twin.adaptive:
        plan_on_prefix(twin, stream, n)
    twin.route_many(stream.fps[:n], stream.clock[:n])


def _owners(router: Scheme, key_fps: np.ndarray) -> np.ndarray:
    return router.spawn().route_many(key_fps)


class Simulation:
    """Routes one stream through one scheme; :meth:`run` returns a :class:`SimResult`."""

    def __init__(self, stream: Stream, scheme: str, workers: int, sources: int = 1, *, split: str = "shuffle",
                 interval: int | None = None, schedule: dict[int, int] | None = None, seed: int = 0,
                 samples: int = 1000, params: dict | None = None):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if sources < 1:
            raise ValueError(f"sources must be >= 1, got {sources}")
        if stream.messages == 0:
            raise ValueError("the stream has no messages")
        self.stream, self.scheme, self.sources, self.split = stream, scheme, sources, split
        self.seed, self.params = seed, dict(params or {})
        self.schedule = {0: workers, **(schedule or {})}
        if min(self.schedule.values()) < 1:
            raise ValueError("every worker count in the schedule must be >= 1")
        self.interval = int(interval or max(1, stream.messages // 100))
        self.samples = samples

    def _new_router(self, workers: int) -> Scheme:
        return make_scheme(self.scheme, workers, seed=self.seed, **self.params)

    def run(self) -> SimResult:
        stream, n = self.stream, self.stream.messages
        source = source_of_each_message(stream, self.sources, self.split)
        width = max(self.schedule.values())
        workers = self.schedule[0]
        proto = self._new_router(workers)
        fit_offline(proto, stream)
        _warm_up(proto, stream)
        routers = source_routers(proto, self.sources)
        routes = np.empty(n, dtype=np.int64)
        active = np.empty(n, dtype=np.int64)
        totals = np.zeros(width, dtype=np.float64)
        plans, migrated, route_seconds, lo = [], 0, 0.0, 0
        for hi in _boundaries(n, self.interval, self.schedule):
            began = time.perf_counter()
            self._route_interval(routers, source, lo, hi, routes)
            route_seconds += time.perf_counter() - began
            active[lo:hi] = workers
            loads = np.bincount(routes[lo:hi], minlength=width)
            totals += loads
            for router in routers:
                router.sync(totals[:workers])
            new_workers = self.schedule.get(int(hi), workers)
            if proto.adaptive:
                plan = proto.rebalance(interval_stats(stream, lo, hi, loads[:workers]),
                                       workers=new_workers if new_workers != workers else None)
                if plan is not None:
                    proto.apply(plan)
                    plans.append(plan)
                    migrated += len(plan.moves)
            elif new_workers != workers:
                migrated += self._rescale(routers, new_workers, stream.key_fps[np.unique(stream.ids[:hi])])
                proto = routers[0]
            workers, lo = new_workers, hi
        return self._result(routes, active, width, routers, plans, migrated, route_seconds)

    def _route_interval(self, routers, source, lo, hi, routes):
        fps, clock = self.stream.fps, self.stream.clock
        if len(routers) == 1:
            routes[lo:hi] = routers[0].route_many(fps[lo:hi], clock[lo:hi])
            return
        for s, router in enumerate(routers):
            idx = lo + np.flatnonzero(source[lo:hi] == s)
            if len(idx):
                routes[idx] = router.route_many(fps[idx], clock[idx])

    def _rescale(self, routers: list[Scheme], workers: int, seen_fps: np.ndarray) -> int:
        """Non-adaptive schemes restart with the new W; returns how many seen keys change owner."""
        old, fresh = routers[0], self._new_router(workers)
        routers[:] = source_routers(fresh, self.sources)
        if old.splits_keys:
            return 0
        return int(np.count_nonzero(_owners(old, seen_fps) != _owners(fresh, seen_fps)))

    def _result(self, routes, active, width, routers, plans, migrated, route_seconds) -> SimResult:
        stream, n = self.stream, self.stream.messages
        points = np.unique(np.linspace(0, n, self.samples + 1).astype(np.int64)[1:])
        series_loads = metrics.cumulative_loads(routes, points, width)
        series = metrics.imbalance(series_loads, active[points - 1])
        final = series_loads[-1][: active[-1]]
        n_counters = metrics.counters(stream.ids, routes, width)
        avg_imbalance = float(series.mean())
        row = {
            "workload": stream.name, "scheme": self.scheme,
            "workers": int(self.schedule[0]), "final_workers": int(active[-1]),
            "sources": self.sources, "split": self.split, "messages": n,
            "keys": stream.distinct_keys, "p1_pct": 100 * stream.p1, "seed": self.seed,
            "interval": self.interval,
            "avg_imbalance": avg_imbalance,
            "imbalance_fraction": avg_imbalance / n,
            "final_imbalance": float(series[-1]),
            "max_over_mean": float(final.max() / final.mean()),
            "counters": n_counters,
            "dist_cost": n_counters / stream.distinct_keys,
            "load_stddev_pct": metrics.stddev_pct(final),
            "table_size": int(routers[0].table_size()),
            "plans": len(plans),
            "plan_seconds_mean": float(np.mean([p.build_seconds for p in plans])) if plans else 0.0,
            "migrated_keys": migrated,
            "route_seconds": route_seconds,
            "msgs_per_s": n / route_seconds if route_seconds > 0 else float("inf"),
            "params": ",".join(f"{k}={v}" for k, v in sorted(self.params.items())),
        }
        timeseries = pd.DataFrame({"messages": points, "workers": active[points - 1], "imbalance": series,
                                   "imbalance_fraction": series / points})
        return SimResult(row=row, timeseries=timeseries, routes=routes, plans=plans)


def simulate(stream: Stream, scheme: str, workers: int, sources: int = 1, **options) -> SimResult:
    """Route ``stream`` with ``scheme`` over ``workers`` workers from ``sources`` sources.

    Options: ``split`` (``"shuffle"`` or ``"key"``), ``interval`` (messages between controller
    steps; default n/100), ``schedule`` ({message index: new W}), ``seed``, ``samples`` (points of
    the I(t) series), ``params`` (scheme parameters).

    >>> from skewbench.stream import Stream
    >>> s = Stream("demo", np.random.default_rng(0).zipf(2.0, 20_000) % 500)
    >>> kg, pkg = (simulate(s, name, workers=5, sources=2).row for name in ("kg", "pkg"))
    >>> pkg["avg_imbalance"] < kg["avg_imbalance"]
    True
    """
    return Simulation(stream, scheme, workers, sources, **options).run()
