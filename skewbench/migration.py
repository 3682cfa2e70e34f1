"""Routing that changes while the stream runs (issue 21): versions, their moves, and the controller.

A run's routing is a sequence of immutable **versions**.  Version 0 is the scheme's initial router; the
:class:`Controller` publishes a new one after a micro-batch when the scheme rebalances (every ``every``
batches, adaptive schemes only) or when the schedule changes the number of workers W.  A version says
which router is in force from its first batch on, and which keys' state moves when it comes into force:
every key seen so far whose worker differs between the old router and the new (:data:`MOVE_DTYPE`
rows).  The workers carry the moves out (:mod:`skewbench.bench.apps.handover`), in one of two ways:

* ``hold`` — the old worker hands the state over in the version's first batch, the new one installs it
  in the next, holding the key's rows until then.  So a migration is *in flight* for one batch after its
  version, and the controller publishes nothing new meanwhile.
* ``ahead`` — the controller *announces* a version one batch before it comes into force; the old worker
  hands the state over at the end of that batch, after handling its rows, and the new one installs it at
  the start of the version's first batch, before its rows: nothing waits.  The keys first seen in the
  batch between the plan and the version (their state is where the old router put it) stay pinned there.

Two strategies, after Megaphone (Hoffmann et al., VLDB 2019):

* ``all-at-once`` — one version moves every key of the plan;
* ``fluid`` — the plan's moves are split over consecutive versions, each moving at most ``fluid_keys``
  keys out of and into any one worker; the keys not yet moved stay where their state is
  (:class:`Staged`: every step's router shares one :class:`Plan`, published once), so the scheme's
  plan is in force once the last step is.

Only a scheme that sends a key to one worker, the same on every source (:func:`moves_state`: a hash, a
fixed table), moves state.  A scheme that splits keys or routes by estimates of its own per source (pkg,
D-/W-Choices, DKG, sg, the greedy ones) may hold a key's partial state on several workers already: when W
changes, its new router starts afresh on every source and the partial state stays where it is, merged
downstream as it always is (word count's aggregator sums partial counts), and a key's holders are then
its holders under every version so far (:class:`Rescaled`), so that a self-join probe still reaches every
worker with ticks of its key.  An app whose queries read the holders' *final* state (Naive Bayes) needs the
holders a key will have too: with ``holders_ahead`` every version's holders include those under every W of
the schedule, from version 0 on.

Everything here is a deterministic function of the messages and the scheme, so the simulator and the
cluster publish the same versions at the same batches.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numba
import numpy as np

from skewbench.counts import add_counts, union
from skewbench.scheme import MOVE_DTYPE, Scheme, Stats

STRATEGIES = ("all-at-once", "fluid")
HANDOVERS = ("hold", "ahead")


class Wrapper(Scheme):
    """A router made of the scheme ``base``, and of its kind (name, coupling, adaptive, ...)."""

    def __init__(self, base: Scheme):
        self.base = base
        self.name, self.coupling, self.adaptive = base.name, base.coupling, base.adaptive
        self.stateless, self.offline, self.splits_keys = base.stateless, base.offline, base.splits_keys
        super().__init__(base.workers, base.seed)

    def table_size(self) -> int:
        return self.base.table_size()


class Pinned(Wrapper):
    """``base``, except that the keys ``keys`` go to the workers ``to``: a fluid migration's
    intermediate router, whose keys not yet moved still go where their state is."""

    def __init__(self, base: Scheme, keys: np.ndarray, to: np.ndarray):
        self.keys, self.to = keys, to
        super().__init__(base)

    def reset(self) -> None:
        keys, to = np.asarray(self.keys, dtype=np.uint64), np.asarray(self.to, dtype=np.int64)
        if len(keys) and not (keys[1:] > keys[:-1]).all():  # sorted already: share the arrays (pickled once)
            order = np.argsort(keys, kind="stable")
            keys, to = keys[order], to[order]
        self._keys, self._to = keys, to

    def spawn(self) -> Pinned:
        return Pinned(self.base.spawn(), self.keys, self.to)

    def _pin(self, fps: np.ndarray, routes: np.ndarray) -> np.ndarray:
        if not len(self._keys) or not len(fps):
            return routes
        at = np.minimum(np.searchsorted(self._keys, fps), len(self._keys) - 1)
        hit = (self._keys[at] == fps) & self._holds(at)
        return np.where(hit, self._to[at], routes)

    def _holds(self, at: np.ndarray) -> np.ndarray | bool:
        """Whether the pins at ``at`` are in force (all of them here)."""
        return True

    def route_many(self, fps, now=None) -> np.ndarray:
        fps = np.ascontiguousarray(fps).view(np.uint64)
        return self._pin(fps, np.asarray(self.base.route_many(fps, now), dtype=np.int64))

    def candidates(self, fp: int) -> np.ndarray:
        fps = np.array([fp], dtype=np.uint64)
        return self._pin(fps, np.asarray(self.base.candidates(fp), dtype=np.int64)[:1])

    def table_size(self) -> int:
        return self.base.table_size() + len(self._keys)


@dataclass(frozen=True, eq=False)
class Plan:
    """One fluid migration's moves, sorted by key: ``src`` the worker each key's state is on, ``step`` the
    step (from 1) whose version moves it.  Immutable and shared by the routers of all its steps, so the
    cluster publishes it once (:mod:`skewbench.bench.spark.live`), not once a step; ``number`` names it."""

    number: int
    keys: np.ndarray
    src: np.ndarray
    step: np.ndarray

    @classmethod
    def of(cls, number: int, steps: list[np.ndarray]) -> Plan:
        moves = np.concatenate(steps)
        step = np.concatenate([np.full(len(group), i + 1, np.int64) for i, group in enumerate(steps)])
        order = np.argsort(moves["key"], kind="stable")
        arrays = moves["key"][order].astype(np.uint64), moves["src"][order].astype(np.int64), step[order]
        for array in arrays:
            array.flags.writeable = False
        return cls(number, *arrays)

    def __deepcopy__(self, memo) -> Plan:
        return self  # immutable: a copied router shares it


class Staged(Pinned):
    """Step ``step`` of a fluid migration: ``base`` (the plan's router), except that the keys of ``plan``
    moved by a later step still go to the workers their state is on."""

    def __init__(self, base: Scheme, plan: Plan, step: int):
        self.plan, self.step = plan, step
        super().__init__(base, plan.keys, plan.src)

    def reset(self) -> None:
        self._keys, self._to = self.plan.keys, self.plan.src

    def spawn(self) -> Staged:
        return Staged(self.base.spawn(), self.plan, self.step)

    def __getstate__(self) -> dict:  # the plan's arrays travel with the plan (published once), not here
        return {k: v for k, v in self.__dict__.items() if k not in ("keys", "to", "_keys", "_to")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.keys, self.to = self.plan.keys, self.plan.src
        self.reset()

    def _holds(self, at: np.ndarray) -> np.ndarray:
        return self.plan.step[at] > self.step  # a key moved by a later step stays where its state is

    def table_size(self) -> int:
        return self.base.table_size() + int((self.plan.step > self.step).sum())


class Rescaled(Wrapper):
    """A router that routes as ``base`` while its keys' state may also be where ``before`` put it: a scheme
    whose partial state stays when W changes (module docstring).  Its holders are both routers'."""

    def __init__(self, base: Scheme, before: Scheme):
        self.before = before
        super().__init__(base)

    def spawn(self) -> Rescaled:
        return Rescaled(self.base.spawn(), self.before)

    def route_many(self, fps, now=None) -> np.ndarray:
        return self.base.route_many(fps, now)

    def candidates(self, fp: int) -> np.ndarray:
        return self.base.candidates(fp)

    def sync(self, loads: np.ndarray) -> None:
        self.base.sync(loads)

    @property
    def widest(self) -> int:
        """The most workers any version so far had: a key's state may be on any of them."""
        return max(self.base.workers, getattr(self.before, "widest", self.before.workers))

    def holds_every_key(self) -> bool:
        return self.base.holds_every_key() and self.widest == self.base.workers

    def holder_pairs(self, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        (rows, workers), (old_rows, old_workers) = self.base.holder_pairs(fps), self.before.holder_pairs(fps)
        width = self.widest
        pairs = np.unique(np.r_[rows, old_rows] * width + np.r_[workers, old_workers])  # by row, workers ascending
        return pairs // width, pairs % width


def moves_state(router: Scheme) -> bool:
    """Whether a change of ``router`` moves its keys' state: it sends a key to one worker, the same on every
    source (a pure function of the key, or an adaptive scheme's fixed table).  Otherwise the partial state
    stays where it is (:class:`Rescaled`)."""
    return router.stateless or router.adaptive


def unpinned(router: Scheme) -> Scheme:
    """The scheme's own router under any pins (what an adaptive scheme plans from)."""
    while isinstance(router, Pinned):
        router = router.base
    return router


def owners(router: Scheme, fps: np.ndarray) -> np.ndarray:
    """The worker ``router`` sends each key to, without changing ``router`` (a copy routes them)."""
    return np.asarray(copy.deepcopy(router).route_many(np.ascontiguousarray(fps).view(np.uint64)), dtype=np.int64)


def fluid_steps(moves: np.ndarray, fluid_keys: int) -> list[np.ndarray]:
    """Split ``moves`` (in order) into steps that move at most ``fluid_keys`` keys out of and into any one
    worker: each move goes to the first step where both its workers still have room."""
    if fluid_keys < 1:
        raise ValueError(f"fluid migration needs fluid_keys >= 1, got {fluid_keys}")
    if not len(moves):
        return []
    src, dst = moves["src"].astype(np.int64), moves["dst"].astype(np.int64)
    workers = int(max(src.max(), dst.max())) + 1
    # every step before a move's is full out of its source or into its destination
    most = -(-np.bincount(src).max() // fluid_keys) + -(-np.bincount(dst).max() // fluid_keys) + 1
    step = _first_steps_with_room(src, dst, fluid_keys, workers, most)
    return [moves[step == s] for s in range(int(step.max()) + 1)]


@numba.njit(cache=True)
def _first_steps_with_room(src, dst, fluid_keys, workers, most):
    out = np.zeros((most, workers), np.int64)  # keys leaving each worker per step
    into = np.zeros((most, workers), np.int64)
    step = np.empty(len(src), np.int64)
    for i in range(len(src)):
        a, b = src[i], dst[i]
        s = 0
        while out[s, a] >= fluid_keys or into[s, b] >= fluid_keys:
            s += 1
        step[i] = s
        out[s, a] += 1
        into[s, b] += 1
    return step


def _fluid_steps_reference(moves: np.ndarray, fluid_keys: int) -> list[np.ndarray]:
    """Plain-Python reference for the kernel (tests compare the two)."""
    step = np.empty(len(moves), dtype=np.int64)
    out: dict[tuple[int, int], int] = {}  # (step, worker) -> keys leaving it in that step
    into: dict[tuple[int, int], int] = {}
    for i, (src, dst) in enumerate(zip(moves["src"].tolist(), moves["dst"].tolist())):
        s = 0
        while out.get((s, src), 0) >= fluid_keys or into.get((s, dst), 0) >= fluid_keys:
            s += 1
        step[i] = s
        out[s, src], into[s, dst] = out.get((s, src), 0) + 1, into.get((s, dst), 0) + 1
    return [moves[step == s] for s in range(int(step.max()) + 1)] if len(moves) else []


@dataclass(frozen=True)
class Live:
    """Routing that changes during a run, as the simulator and the pipelines take it: micro-batches of
    ``batch`` messages; rebalance ``every`` that many batches (0: never); ``schedule`` ``{batch: W}``;
    ``migration``, ``fluid_keys``, ``handover`` and ``holders_ahead`` as :class:`Controller` takes them."""

    batch: int
    every: int = 0
    schedule: dict = field(default_factory=dict)
    migration: str = "all-at-once"
    fluid_keys: int = 0
    handover: str = "hold"
    holders_ahead: bool = False

    @classmethod
    def of(cls, batch: int, every: int, schedule: str, migration: str, fluid_keys: int,
           handover: str = "hold", holders_ahead: bool = False) -> Live | None:
        """From a run's options (``schedule`` as :func:`parse_schedule` reads it); None when nothing changes."""
        if not (every or schedule):
            return None
        return cls(batch, every, parse_schedule(schedule) if schedule else {}, migration, fluid_keys, handover,
                   holders_ahead)

    def batches(self, messages: int) -> int:
        return -(-messages // self.batch)

    def controller(self, router: Scheme, messages: int, rescale: Callable[[int], Scheme] | None = None) -> Controller:
        if self.batch < 1:
            raise ValueError(f"a micro-batch needs >= 1 messages, got {self.batch}")
        return Controller(router, self.batches(messages), every=self.every, schedule=self.schedule,
                          strategy=self.migration, fluid_keys=self.fluid_keys, handover=self.handover,
                          rescale=rescale, holders_ahead=self.holders_ahead)

    def widest(self, workers: int) -> int:
        """The most workers the run ever has (Spark provisions that many state partitions up front)."""
        return max([workers, *self.schedule.values()])


@dataclass(frozen=True)
class Version:
    """Routing version ``number``, in force from batch ``first_batch`` on: ``router`` routes, ``moves``
    (:data:`MOVE_DTYPE`) are the keys whose state moves as it comes into force.  ``step``/``steps``: its
    place in a fluid migration (1/1 otherwise); ``plan_seconds``: the scheme's planning time (first step);
    ``seen_keys``: the keys seen when it was planned, each with state somewhere (``moves`` are a share of them);
    ``handover``: how its moves are carried out (module docstring)."""

    number: int
    first_batch: int
    router: Scheme = field(repr=False)
    moves: np.ndarray = field(repr=False)
    workers: int = 0
    reason: str = "start"  # start | rebalance | scale
    step: int = 1
    steps: int = 1
    plan_seconds: float = 0.0
    seen_keys: int = 0
    handover: str = "hold"

    @property
    def handed_over_in(self) -> int:
        """The batch at whose start (``hold``) or end (``ahead``) the old workers hand its keys' state over."""
        return self.first_batch - (self.handover == "ahead")

    @property
    def installed_in(self) -> int:
        """The batch in which the new workers install the state of its moves (and hold no more rows)."""
        return self.first_batch + (self.handover == "hold")


class Controller:
    """Decides after every micro-batch which version the next batch routes with (module docstring).

    ``router``: the initial router (for an adaptive scheme, the object that plans and applies);
    ``batches``: the run's micro-batches (a migration must be delivered before the last ends);
    ``every``: rebalance every that many batches (0: never); ``schedule``: ``{batch: W}``;
    ``rescale``: a router for W workers, for schemes that do not plan (a hash: kg, consistent);
    ``handover``: ``hold`` or ``ahead`` (module docstring; ``announced`` is then the version the next
    batch hands over for, in force from the batch after it); ``holders_ahead``: a key's holders, where its
    state stays as W changes, include from the start those under every W of the schedule.
    """

    def __init__(self, router: Scheme, batches: int, *, every: int = 0, schedule: dict[int, int] | None = None,
                 strategy: str = "all-at-once", fluid_keys: int = 0, handover: str = "hold",
                 rescale: Callable[[int], Scheme] | None = None, holders_ahead: bool = False):
        schedule = dict(schedule or {})
        check(router, batches, every, schedule, strategy, fluid_keys, handover)
        if schedule and not router.adaptive and rescale is None:
            raise ValueError(f"scheme {router.name!r} changes W by starting a new router: give rescale")
        self.batches, self.every, self.schedule = batches, every, schedule
        self.strategy, self.fluid_keys, self.handover, self.rescale = strategy, fluid_keys, handover, rescale
        if holders_ahead and not moves_state(router):
            for workers in sorted(set(schedule.values()) - {router.workers}):
                router = Rescaled(router, rescale(workers))  # routes as before; holds as every later W will
        self.versions = [Version(0, 0, router, np.empty(0, MOVE_DTYPE), router.workers, handover=handover)]
        self.announced: Version | None = None
        self._pending: list[Version] = []  # the later steps of a fluid migration
        self._seen = np.empty(0, np.uint64)
        self._late = np.empty(0, np.uint64)  # the keys first seen since the migration under way was planned
        self._keys, self._counts = np.empty(0, np.uint64), np.empty(0, np.int64)
        self._loads = np.zeros(router.workers, np.int64)
        self._now = 0.0
        self.skipped: list[tuple[int, str]] = []  # (batch, why) of plans not made

    @property
    def current(self) -> Version:
        return self.versions[-1]

    def observe(self, fps: np.ndarray, workers: np.ndarray, now: float = 0.0) -> None:
        """A batch's message copies: their keys and the workers they went to.  Every key seen moves when
        its worker changes — a key only probed so far too: where it was probed, a reply may be due."""
        fps = np.ascontiguousarray(fps).view(np.uint64)
        keys, counts = np.unique(fps, return_counts=True)
        self._keys, self._counts = add_counts(self._keys, self._counts, keys, counts)
        self._seen, fresh = union(self._seen, keys)
        if self.handover == "ahead":  # only a hand-over ahead pins the keys first seen since its plan
            self._late, _ = union(self._late, fresh)
        width = max(len(self._loads), int(workers.max()) + 1 if len(workers) else 0)
        self._loads = np.pad(self._loads, (0, width - len(self._loads)))
        self._loads += np.bincount(np.asarray(workers, np.int64), minlength=width)
        self._now = float(now)

    def after(self, batch: int) -> Version:
        """The version batch ``batch + 1`` routes with, once batch ``batch`` has ended."""
        nxt = batch + 1
        if nxt >= self.batches:
            return self.current
        if self.handover == "ahead":
            return self._after_ahead(nxt)
        if self._pending:
            self.versions.append(replace(self._pending.pop(0), first_batch=nxt, number=len(self.versions)))
            return self.current
        if len(self.current.moves) and self.current.first_batch == batch:
            return self.current  # its state is in flight until batch `nxt` ends
        steps = self._due(nxt, lambda steps: nxt + len(steps) >= self.batches)  # the last parcel lands after nxt
        if steps:
            self.versions.append(replace(steps[0], number=len(self.versions)))
            self._pending = steps[1:]
        return self.current

    def _after_ahead(self, nxt: int) -> Version:
        """``ahead``: the version announced for ``nxt`` comes into force, with the keys first seen since its
        plan pinned where they are; then the next version is announced, for ``nxt + 1``."""
        if self.announced is not None:
            self.versions.append(self._pin_late(self.announced))
            self.announced = None
        if nxt + 1 >= self.batches:
            return self.current
        if self._pending:
            self.announced = replace(self._pending.pop(0), first_batch=nxt + 1, number=len(self.versions))
            return self.current
        steps = self._due(nxt + 1, lambda steps: nxt + len(steps) >= self.batches)  # the last step in force at nxt
        if steps:
            self.announced = replace(steps[0], number=len(self.versions))
            self._pending = steps[1:]
        return self.current

    def _due(self, batch: int, too_late: Callable[[list], bool]) -> list[Version]:
        """The steps of the migration that comes into force at ``batch``, if one is due then ([] if none, or
        if ``too_late`` says its last parcels would not be installed before the stream ends)."""
        target = self._target(batch)
        rebalance = self.every and self.current.router.adaptive and batch % self.every == 0
        if not (target != self.current.workers or rebalance):
            return []
        steps = self._plan(target, batch)
        if too_late(steps):
            self.skipped.append((batch, "too close to the end of the stream"))
            return []
        self._keys, self._counts = np.empty(0, np.uint64), np.empty(0, np.int64)
        self._loads[:] = 0
        self._late = np.empty(0, np.uint64)
        return steps

    def _pin_late(self, version: Version) -> Version:
        """``version`` with the keys first seen after its plan kept where the router in force sends them:
        their state is there, and no order moves it."""
        late = self._late
        if not len(late) or not moves_state(version.router):
            return version
        before, after = owners(self.current.router, late), owners(version.router, late)
        moved = before != after
        if not moved.any():
            return version
        return replace(version, router=Pinned(version.router, late[moved], before[moved]))

    def _target(self, batch: int) -> int:
        """W as the schedule has it at ``batch`` (its latest entry at or before it)."""
        due = [b for b in self.schedule if b <= batch]
        return self.schedule[max(due)] if due else self.versions[0].workers

    def _plan(self, target: int, batch: int) -> list[Version]:
        """The versions of one migration to ``target`` workers, the first from ``batch`` on.  An adaptive
        scheme plans on a copy of the router in force, which routes from then on if the plan is taken."""
        old, workers = self.current.router, self.current.workers
        began = time.perf_counter()
        if old.adaptive:
            new = copy.deepcopy(unpinned(old))
            stats = Stats(keys=self._keys, counts=self._counts.astype(np.float64), loads=self._loads[:workers],
                          now=self._now)
            new.apply(new.rebalance(stats, workers=target if target != workers else None))
        elif moves_state(old):
            new = self.rescale(target)
        else:  # every source starts afresh; the partial state stays where it is
            new = Rescaled(self.rescale(target), old.spawn())
        seconds = time.perf_counter() - began
        reason = "scale" if target != workers else "rebalance"
        moves = self._moves(old, new)
        groups = [moves] if self.strategy == "all-at-once" or not len(moves) else fluid_steps(moves, self.fluid_keys)
        plan = Plan.of(len(self.versions), groups) if len(groups) > 1 else None
        versions = []
        for i, group in enumerate(groups):
            router = new if i + 1 == len(groups) else Staged(new, plan, i + 1)
            versions.append(Version(0, batch, router, group, target, reason, i + 1, len(groups),
                                    seconds if i == 0 else 0.0, len(self._seen), self.handover))
        return versions

    def _moves(self, old: Scheme, new: Scheme) -> np.ndarray:
        """Every key seen whose worker differs between ``old`` and ``new`` (none when the state stays)."""
        if not moves_state(new):
            return np.empty(0, MOVE_DTYPE)
        before, after = owners(old, self._seen), owners(new, self._seen)
        changed = np.flatnonzero(before != after)
        moves = np.empty(len(changed), MOVE_DTYPE)
        moves["key"], moves["src"], moves["dst"] = self._seen[changed], before[changed], after[changed]
        return moves


def parse_schedule(text: str, at: str = "BATCH") -> dict[int, int]:
    """``"3:6,9:4"`` → ``{3: 6, 9: 4}`` (at ``at`` 3 — a micro-batch, or a message for the simulator — W
    becomes 6; at 9, 4); ``ValueError`` with one clear line otherwise."""
    example = "3:6,9:4" if at == "BATCH" else "500000:11,750000:12"
    try:
        pairs = [part.split(":") for part in text.split(",") if part.strip()]
        schedule = {int(when): int(workers) for when, workers in pairs}
    except ValueError:
        raise ValueError(f"a schedule is {at}:W pairs like {example}, got {text!r}") from None
    if not schedule:
        raise ValueError(f"the schedule is empty: give {at}:W pairs like {example}")
    if min(schedule.values()) < 1:
        raise ValueError(f"W must be >= 1 in a schedule, got {text!r}")
    return schedule


def check(router: Scheme, batches: int, every: int, schedule: dict[int, int], strategy: str,
          fluid_keys: int, handover: str = "hold") -> None:
    """``ValueError`` with one clear line for a controller setting the scheme or the run cannot honour."""
    if every < 0:
        raise ValueError(f"the rebalance interval must be >= 1 micro-batches (0: never), got {every}")
    if every and not router.adaptive:
        raise ValueError(f"scheme {router.name!r} cannot rebalance (not adaptive); drop the rebalance interval or "
                         f"use one of gedik-*, llfd, mintable, minmig, mixed*")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown migration strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    if strategy == "fluid" and fluid_keys < 1:
        raise ValueError(f"fluid migration needs a limit of keys per worker and batch >= 1, got {fluid_keys}")
    if handover not in HANDOVERS:
        raise ValueError(f"unknown hand-over {handover!r}; use one of {', '.join(HANDOVERS)}")
    first = 2 if handover == "ahead" else 1  # ahead: announced after batch 0, in force from batch 2
    for batch, workers in schedule.items():
        if batch < first or batch >= batches:
            raise ValueError(f"the schedule changes W at batch {batch}, outside the run's batches "
                             f"{first}..{batches - 1}{' (with the hand-over ahead)' if first == 2 else ''}")
        if workers < 1:
            raise ValueError(f"the schedule sets W = {workers} at batch {batch}; W must be >= 1")
