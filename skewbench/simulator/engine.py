"""The exact balls-into-bins simulator: S sources, each with its own router, feeding W workers.

Messages are split over the sources (round-robin — shuffle grouping at the sources — or by key;
:mod:`skewbench.sources` splits them and builds the routers), then routed interval by interval.
Within an interval every source routes its own messages with its own scheme object, which is exact
for schemes whose state is per source (``coupling = "local"``): a source's decisions depend only on
the messages it has seen.  Between intervals the simulator does what a real deployment's controller
would do: tell probing sources the true loads, hand adaptive schemes the interval's statistics and
install their plan, and change the number of workers when the schedule says so.

The stream is read in pieces of at most :data:`PIECE_MESSAGES` messages, cut at the interval
boundaries, and the metrics accumulate piece by piece (:mod:`skewbench.simulator.metrics`), so a
:class:`~skewbench.stream.GeneratedStream` of any length is simulated in memory bounded by a
piece and the key space.  A scheme routes a piece as it would the whole (``route_many`` equals
the loop), so the pieces change no result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import pandas as pd

from skewbench.migration import Live, Version, moves_state, owners
from skewbench.scheme import Plan, Scheme, make_scheme
from skewbench import speeds as speed_profile
from skewbench.simulator import metrics
from skewbench.sources import plan_on_prefix, source_of_each_message, source_routers
from skewbench.stream import GeneratedStream, Stream

#: Messages a throwaway router routes before the timed run (:func:`_warm_up`).
WARM_UP_MESSAGES = 10_000
#: Messages routed at a time: ~120 bytes each while a piece is routed and measured.
PIECE_MESSAGES = 2_000_000


@dataclass
class SimResult:
    """One simulated run: a summary row, the imbalance time series I(t) and, for a stream held in
    memory, every message's worker (``None`` for a :class:`~skewbench.stream.GeneratedStream`,
    whose routes are never held at once)."""

    row: dict
    timeseries: pd.DataFrame
    routes: np.ndarray | None = field(repr=False)
    plans: list[Plan] = field(default_factory=list, repr=False)
    versions: list[Version] = field(default_factory=list, repr=False)  # live routing: every routing version


def _boundaries(n: int, interval: int, schedule: dict[int, int]) -> np.ndarray:
    points = set(range(interval, n, interval)) | {p for p in schedule if 0 < p < n} | {n}
    return np.array(sorted(points), dtype=np.int64)


def _pieces(stream: Stream | GeneratedStream, boundaries: np.ndarray) -> Iterator[tuple[int, Stream, bool]]:
    """``(start, piece, closes)``: the stream's messages from ``start`` on, in pieces of at most
    :data:`PIECE_MESSAGES` cut at every boundary; ``closes`` says the piece ends an interval."""
    at, b = 0, 0
    for chunk in stream.chunks(PIECE_MESSAGES):
        first, end = at, at + len(chunk)
        while at < end:
            hi = min(end, int(boundaries[b]))
            closes = hi == boundaries[b]
            yield at, chunk if (at, hi) == (first, end) else chunk.slice(at - first, hi - first), closes
            b, at = b + closes, hi


def _route(routers: list[Scheme], fps: np.ndarray, clock: np.ndarray, source: np.ndarray) -> np.ndarray:
    """Each source's router routes its own messages of a piece, in order."""
    if len(routers) == 1:
        return routers[0].route_many(fps, clock)
    routes = np.empty(len(fps), dtype=np.int64)
    for s, router in enumerate(routers):
        idx = np.flatnonzero(source == s)
        if len(idx):
            routes[idx] = router.route_many(fps[idx], clock[idx])
    return routes


def _warm_up(router: Scheme, stream: Stream | GeneratedStream) -> None:
    """Compile the scheme's kernels before routing is timed (numba: about 1 s the first time in a
    process, which would count against the first scheme run).  A spawned twin routes a prefix, so
    ``router`` and the results stay as they were; an adaptive twin first plans on it, since
    planning and routing by a table have kernels of their own."""
    n = min(stream.messages, WARM_UP_MESSAGES)
    prefix = next(iter(stream.chunks(n)))
    twin = router.spawn()
    if twin.adaptive:
        plan_on_prefix(twin, prefix, n)
    twin.route_many(prefix.fps, prefix.clock)


class _Interval:
    """The workers' loads in the current interval and, for an adaptive scheme's controller, its keys."""

    def __init__(self, width: int):
        self.loads, self.keys = np.zeros(width, dtype=np.int64), metrics.KeyCounts()

    def add(self, piece: Stream, routes: np.ndarray, keys: bool) -> None:
        self.loads += np.bincount(routes, minlength=len(self.loads))
        if keys:
            self.keys.add(piece.ids, piece.n_keys)


class Simulation:
    """Routes one stream through one scheme; :meth:`run` returns a :class:`SimResult`."""

    def __init__(self, stream: Stream, scheme: str, workers: int, sources: int = 1, *, split: str = "shuffle",
                 interval: int | None = None, schedule: dict[int, int] | None = None, seed: int = 0,
                 samples: int = 1000, params: dict | None = None, live: Live | None = None,
                 copies: Callable[[Scheme, int, np.ndarray], np.ndarray] | None = None, slow: str = ""):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if sources < 1:
            raise ValueError(f"sources must be >= 1, got {sources}")
        if stream.messages == 0:
            raise ValueError("the stream has no messages")
        self.stream, self.scheme, self.sources, self.split = stream, scheme, sources, split
        self.seed, self.params = seed, dict(params or {})
        if live is not None and (interval or schedule):
            raise ValueError("live routing counts in micro-batches: give its batch and schedule, not interval or "
                             "schedule")
        self.live = live
        self.schedule = {0: workers, **(schedule or {})}
        if live is not None:  # W per message index, for the widths the metrics need
            self.schedule.update({b * live.batch: w for b, w in live.schedule.items()})
        if min(self.schedule.values()) < 1:
            raise ValueError("every worker count in the schedule must be >= 1")
        self.interval = int(live.batch if live else interval or max(1, stream.messages // 100))
        self.samples = samples
        self.copies = copies
        self.slow, self.speeds = slow, speed_profile.parse(slow, max(self.schedule.values()))

    def _source_routers(self, proto: Scheme) -> list[Scheme]:
        """Every source's router; with live routing as the pipelines make them, each source in a process of
        its own (a load oracle: a router per source, kept in step by :meth:`~Scheme.sync`)."""
        return source_routers(proto, self.sources, distributed=self.live is not None and not moves_state(proto))

    def _new_router(self, workers: int) -> Scheme:
        return make_scheme(self.scheme, workers, seed=self.seed, **self.params)

    def _rescaled(self, workers: int) -> Scheme:
        """A scheme that does not plan, started again for a new W (an offline one fitted again)."""
        router = self._new_router(workers)
        if router.offline:
            router.fit(self._whole_stream_stats(workers))
        return router

    def run(self) -> SimResult:
        stream, n = self.stream, self.stream.messages
        width, workers = max(self.schedule.values()), self.schedule[0]
        proto = self._new_router(workers)
        if proto.offline:
            proto.fit(self._whole_stream_stats(workers))
        _warm_up(proto, stream)
        controller = self.live.controller(proto, n, self._rescaled) if self.live else None
        routers = self._source_routers(proto)
        handled = np.zeros(width)  # live routing with ``copies``: every worker's copies so far (an app's fan-out)
        measures = metrics.Measures(np.unique(np.linspace(0, n, self.samples + 1).astype(np.int64)[1:]), width)
        routes = np.empty(n, dtype=np.int64) if isinstance(stream, Stream) else None
        interval, plans, migrated, route_seconds = _Interval(width), [], 0, 0.0
        for start, piece, closes in _pieces(stream, _boundaries(n, self.interval, self.schedule)):
            source = source_of_each_message(piece, self.sources, self.split, first=start)
            fps, clock = piece.fps, piece.clock
            began = time.perf_counter()
            piece_routes = _route(routers, fps, clock, source)
            route_seconds += time.perf_counter() - began
            if routes is not None:
                routes[start:start + len(piece)] = piece_routes
            measures.add(piece.ids, piece_routes, piece.n_keys, workers)
            interval.add(piece, piece_routes, keys=proto.adaptive)
            if controller is not None:
                controller.observe(fps, piece_routes, float(clock[-1]))
                if self.copies is not None:
                    handled += self.copies(controller.current.router, start, piece_routes)
            if closes and controller is not None:
                version = controller.current
                if controller.after((start + len(piece) - 1) // self.interval) is not version:
                    routers = self._source_routers(controller.current.router)
                    workers, migrated = controller.current.workers, migrated + len(controller.current.moves)
                told = handled if self.copies is not None else measures.series.totals.astype(np.float64)
                for router in routers:  # as the pipeline's sources are told before the next batch
                    router.sync(speed_profile.busy_times(told, self.speeds))
            elif closes:
                for router in routers:
                    router.sync(speed_profile.busy_times(measures.series.totals[:workers].astype(np.float64),
                                                         self.speeds))
                proto, new_workers, moved = self._control(proto, routers, workers, start + len(piece), interval,
                                                          piece, measures.keys, plans)
                workers, interval, migrated = new_workers, _Interval(width), migrated + moved
        versions = controller.versions if controller is not None else []
        return self._result(measures, routes, routers, plans, migrated, route_seconds, versions)

    def _control(self, proto, routers, workers, end, interval, piece, keys, plans) -> tuple[Scheme, int, int]:
        """At the end of an interval (message ``end``, the last of ``piece``): an adaptive scheme
        installs the plan it makes of the interval, for the schedule's next W; another restarts
        when W changes.  Returns the prototype router, the new W and how many keys moved."""
        new_workers = self.schedule.get(end, workers)
        if proto.adaptive:
            stats = interval.keys.stats(piece.key_fps, interval.loads[:workers], float(piece.clock[-1]))
            plan = proto.rebalance(stats, workers=new_workers if new_workers != workers else None)
            if plan is None:
                return proto, new_workers, 0
            proto.apply(plan)
            plans.append(plan)
            return proto, new_workers, len(plan.moves)
        if new_workers == workers:
            return proto, workers, 0
        moved = self._rescale(routers, new_workers, piece.key_fps[keys.seen()])
        return routers[0], new_workers, moved

    def _whole_stream_stats(self, workers: int):
        """What an offline scheme is fitted on (:func:`~skewbench.sources.fit_offline`): the whole
        stream's key counts, read piece by piece."""
        keys = metrics.KeyCounts()
        for piece in self.stream.chunks(PIECE_MESSAGES):
            keys.add(piece.ids, piece.n_keys)
        return keys.stats(piece.key_fps, np.zeros(workers), float(piece.clock[-1]))

    def _rescale(self, routers: list[Scheme], workers: int, seen_fps: np.ndarray) -> int:
        """Non-adaptive schemes restart with the new W; returns how many seen keys change owner."""
        old, fresh = routers[0], self._new_router(workers)
        routers[:] = source_routers(fresh, self.sources)
        if old.splits_keys:
            return 0
        return int(np.count_nonzero(owners(old, seen_fps) != owners(fresh, seen_fps)))

    def _result(self, measures, routes, routers, plans, migrated, route_seconds, versions) -> SimResult:
        stream, n = self.stream, self.stream.messages
        measured = measures.row(n)
        final = measures.series.loads[-1][: measures.series.active[-1]]
        row = {
            "workload": stream.name, "scheme": self.scheme,
            "workers": int(self.schedule[0]), "final_workers": measured.pop("final_workers"),
            "sources": self.sources, "split": self.split, "messages": n,
            "keys": measured.pop("keys"), "p1_pct": measured.pop("p1_pct"), "seed": self.seed,
            "interval": self.interval,
            **measured,
            "table_size": int(routers[0].table_size()),
            "plans": len(plans) + sum(v.step == 1 for v in versions[1:]),
            "plan_seconds_mean": float(np.mean([p.build_seconds for p in plans] +
                                               [v.plan_seconds for v in versions[1:] if v.step == 1] or [0.0])),
            "migrated_keys": migrated,
            "route_seconds": route_seconds,
            "msgs_per_s": n / route_seconds if route_seconds > 0 else float("inf"),
            "params": ",".join(f"{k}={v}" for k, v in sorted(self.params.items())),
            "slow": self.slow,
            "time_over_ideal": speed_profile.time_over_ideal(final, self.speeds),
        }
        points, imbalance = measures.series.points, measures.imbalance()
        timeseries = pd.DataFrame({"messages": points, "workers": measures.series.active, "imbalance": imbalance,
                                   "imbalance_fraction": imbalance / points})
        return SimResult(row=row, timeseries=timeseries, routes=routes, plans=plans, versions=versions)


def simulate(stream: Stream | GeneratedStream, scheme: str, workers: int, sources: int = 1, **options) -> SimResult:
    """Route ``stream`` with ``scheme`` over ``workers`` workers from ``sources`` sources.

    ``stream`` may be a :class:`~skewbench.stream.GeneratedStream` of any length (e.g.
    ``parse("tw", messages=1_200_000_000)``): it is read piece by piece, never held.

    Options: ``split`` (``"shuffle"`` or ``"key"``), ``interval`` (messages between controller
    steps; default n/100), ``schedule`` ({message index: new W}), ``seed``, ``samples`` (points of
    the I(t) series), ``params`` (scheme parameters), ``live`` (a :class:`~skewbench.migration.Live`:
    routing that changes at micro-batch boundaries exactly as the pipelines change it, instead of
    ``interval`` and ``schedule``), ``copies`` (with ``live``: ``(router, first message, routes)`` → each
    worker's copies, the load a scheme told the loads is told; default one a message routed), ``slow`` (a
    worker-speed profile, :mod:`skewbench.speeds`: the row's ``time_over_ideal`` weighs each worker's load by
    its speed, and a scheme told the loads is told those times).

    >>> from skewbench.stream import Stream
    >>> s = Stream("demo", np.random.default_rng(0).zipf(2.0, 20_000) % 500)
    >>> kg, pkg = (simulate(s, name, workers=5, sources=2).row for name in ("kg", "pkg"))
    >>> pkg["avg_imbalance"] < kg["avg_imbalance"]
    True
    """
    return Simulation(stream, scheme, workers, sources, **options).run()
