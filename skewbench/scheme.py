"""The one protocol every partitioning scheme follows (after Storm's ``CustomStreamGrouping``).

A :class:`Scheme` object is the router of **one source**: it sees only that source's messages and
keeps that source's state (local load estimates, sketches, routing tables).  Keys arrive as 64-bit
fingerprints (:mod:`skewbench.hashing`).

* The constructor takes parameters only and stores them unchanged; derived state lives in
  ``_``-prefixed attributes built by :meth:`Scheme.reset`.
* :meth:`candidates` is pure: the workers a key may go to, the same on every machine.
* :meth:`route` / :meth:`route_many` pick among the candidates and update the state;
  ``route_many(fps)`` equals ``[route(fp) for fp in fps]``.
* :meth:`holders` / :meth:`holder_pairs` say where a key's state may live: every worker that any
  source's router may ever send the key to, the same answer on every source and at every time
  (an app sends a read to all of them).  The default is :meth:`candidates` for schemes that keep a
  key on one worker; schemes that split keys (``splits_keys = True``) or decide per source must
  override it, or set ``state_everywhere = True`` (a key's state may live on every worker), which
  :meth:`holds_every_key` answers without listing W workers per key.
* ``coupling`` tells a driver how sources relate: ``"local"`` — each source routes alone (its
  state depends only on its own messages); ``"global"`` — the scheme models shared state (a global
  load oracle, a routing table every source must agree on), so one object routes all sources'
  messages in arrival order.
* Adaptive schemes (``adaptive = True``) also implement :meth:`rebalance`, which turns the
  statistics of the last interval into a :class:`Plan` — plain data that the simulator and the
  Spark pipeline both execute with :meth:`apply`.
* Offline schemes (``offline = True``, e.g. Off-Greedy) are first given the whole stream's
  statistics with :meth:`fit`.
* Stateless schemes (``stateless = True``: a hash, a ring, a fitted table) change nothing when they
  route — a message's worker depends on its key alone — so a router may route any batch, in any
  order, without the ones before it (the Spark sources then keep one copy per run).  Adaptive schemes
  are not: a plan changes where keys go.
* Objects pickle (PySpark ships them to executors) and :meth:`merge` sums per-source estimates.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from skewbench.hashing import distinct_choices, fingerprint

REGISTRY: dict[str, type[Scheme]] = {}


def register(cls: type[Scheme]) -> type[Scheme]:
    """Class decorator: make a scheme available under ``cls.name`` (CLI, simulator, Spark)."""
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise ValueError(f"scheme name {cls.name!r} registered twice")
    REGISTRY[cls.name] = cls
    return cls


@dataclass(frozen=True)
class Stats:
    """What a controller sees at the end of an interval.

    ``keys``/``counts``: fingerprints and message counts of the keys seen in the interval (exact;
    schemes that model a sketch keep their own). ``loads``: messages per worker in the interval.
    ``costs``: optional per-key processing cost (e.g. injected CPU delay); ``None`` means 1 each.
    ``now``: the simulated clock at the end of the interval, in seconds.
    """

    keys: np.ndarray
    counts: np.ndarray
    loads: np.ndarray
    now: float = 0.0
    costs: np.ndarray | None = None


MOVE_DTYPE = np.dtype([("key", np.uint64), ("src", np.int64), ("dst", np.int64)])


@dataclass
class Plan:
    """A rebalancing decision, as data.

    ``table_keys``/``table_workers``: the explicit routing table after the plan (keys not in it
    fall back to the scheme's hash function). ``moves``: one ``(key, src, dst)`` row per key whose
    state migrates (:data:`MOVE_DTYPE`). ``workers``: the worker count the plan is for.
    ``build_seconds``: wall time spent constructing it.
    """

    table_keys: np.ndarray
    table_workers: np.ndarray
    moves: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=MOVE_DTYPE))
    workers: int = 0
    build_seconds: float = 0.0

    def table(self) -> dict[int, int]:
        return dict(zip(self.table_keys.tolist(), self.table_workers.tolist()))


class Scheme:
    """Base class; see the module docstring for the contract."""

    name: ClassVar[str] = ""
    coupling: ClassVar[str] = "local"
    adaptive: ClassVar[bool] = False
    offline: ClassVar[bool] = False  # needs fit() with the whole stream's statistics first
    splits_keys: ClassVar[bool] = False  # may send one key to several workers
    stateless: ClassVar[bool] = False  # routing changes no state: a message's worker depends on its key alone
    state_everywhere: ClassVar[bool] = False  # a key's state may live on every worker (holders: all W)

    def __init__(self, workers: int, seed: int = 0):
        if int(workers) < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = int(workers)
        self.seed = int(seed)
        self.reset()

    # -- state ---------------------------------------------------------------------------------
    def reset(self) -> None:
        """(Re)build derived state from the parameters."""

    def spawn(self) -> Scheme:
        """A fresh router for another source, with the same parameters and empty state."""
        twin = copy.copy(self)
        twin.reset()
        return twin

    def merge(self, other: Scheme) -> Scheme:
        """Combine per-source estimates (default: nothing to combine)."""
        return self

    def sync(self, loads: np.ndarray) -> None:
        """Told the true per-worker loads (periodic probing); default: ignored."""

    # -- routing -------------------------------------------------------------------------------
    def candidates(self, fp: int) -> np.ndarray:
        """Workers that may receive key ``fp`` (pure, deterministic)."""
        raise NotImplementedError

    def route(self, fp: int, now: float = 0.0) -> int:
        """Worker for one message with key fingerprint ``fp`` at time ``now``; updates state."""
        return int(self.route_many(np.array([fp], dtype=np.uint64), np.array([now]))[0])

    def route_many(self, fps: np.ndarray, now: np.ndarray | None = None) -> np.ndarray:
        """Workers (int64) for a batch of messages, in order; equals the ``route`` loop."""
        raise NotImplementedError

    def holds_every_key(self) -> bool:
        """Whether every worker may hold state of every key (then :meth:`holder_pairs` lists all W)."""
        return self.state_everywhere or self.workers == 1

    def holder_pairs(self, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where the keys ``fps`` (uint64, or their int64 view) may have state, on any source, ever.

        Returns ``(rows, workers)``, int64: one pair per holder of each row's key, grouped by row,
        workers ascending within a row.  Default: all W when :meth:`holds_every_key`; the route itself
        for a ``stateless`` scheme that never splits a key; else the union of :meth:`candidates`, which
        must then be the same on every source and stay so (the current table of an adaptive scheme:
        exact while no plan moves a key).  Schemes that split keys override it.
        """
        fps = np.ascontiguousarray(fps).view(np.uint64)
        n, w = len(fps), self.workers
        if self.holds_every_key() or n == 0:
            return np.repeat(np.arange(n, dtype=np.int64), w), np.tile(np.arange(w, dtype=np.int64), n)
        if self.stateless and not self.splits_keys:  # its one holder is where it routes, asked all at once
            return np.arange(n, dtype=np.int64), self.route_many(fps).astype(np.int64)
        if self.splits_keys:
            raise NotImplementedError(f"scheme {self.name!r} splits keys but does not say where their state may "
                                      f"live: override holder_pairs() or set state_everywhere = True")
        uniq, inverse = np.unique(fps, return_inverse=True)  # ask once per distinct key, then gather per row
        per_key = [np.sort(np.asarray(self.candidates(int(fp)), dtype=np.int64)) for fp in uniq]
        sizes = np.array([len(c) for c in per_key], dtype=np.int64)
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        counts = sizes[inverse]
        rows = np.repeat(np.arange(n, dtype=np.int64), counts)
        offsets = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
        return rows, np.concatenate(per_key)[starts[inverse][rows] + offsets]

    def holders(self, fp: int) -> np.ndarray:
        """Every worker that may hold state of key ``fp`` (ascending): :meth:`holder_pairs` of one key."""
        return self.holder_pairs(np.array([fp], dtype=np.uint64))[1]

    def route_key(self, key: str | bytes | int, now: float = 0.0) -> int:
        """Convenience: route a raw key (str/bytes/int) by its fingerprint."""
        return self.route(fingerprint(key), now)

    def fit(self, stats: Stats) -> None:
        """Offline schemes: learn from the statistics of the whole stream before routing."""

    # -- adaptation ----------------------------------------------------------------------------
    def rebalance(self, stats: Stats, workers: int | None = None) -> Plan | None:
        """Adaptive schemes: plan for the next interval (optionally for a new worker count)."""
        return None

    def apply(self, plan: Plan) -> None:
        """Install a plan produced by :meth:`rebalance` (possibly on another object)."""
        raise NotImplementedError(f"{self.name} is not adaptive")

    def table_size(self) -> int:
        """Entries in the explicit routing table (0 for pure hash schemes)."""
        return 0

    def __repr__(self) -> str:
        params = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})"


class TwoChoices(Scheme):
    """A scheme that sends each key to one of its two distinct hash choices (:func:`distinct_choices`;
    worker 0 alone when W = 1), by this source's own counts: either may hold the key's state."""

    def candidates(self, fp: int) -> np.ndarray:
        if self.workers == 1:
            return np.zeros(1, dtype=np.int64)
        return distinct_choices(np.array([fp], dtype=np.uint64), self.workers, 2, self.seed)[0]

    def holder_pairs(self, fps) -> tuple[np.ndarray, np.ndarray]:
        """Both choices, on every source (each chooses by its own counts)."""
        if self.holds_every_key():
            return super().holder_pairs(fps)
        return choice_pairs(distinct_choices(fps, self.workers, 2, self.seed))


def as_fps(fps) -> np.ndarray:
    """Coerce to a contiguous uint64 array of fingerprints."""
    return np.ascontiguousarray(fps, dtype=np.uint64)


def choice_pairs(choices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`Scheme.holder_pairs` of keys whose holders are the rows of ``choices`` ((n, d) distinct workers)."""
    n, d = choices.shape
    return np.repeat(np.arange(n, dtype=np.int64), d), np.sort(choices, axis=1).ravel()


def parse_params(text: str) -> dict:
    """A scheme's parameters written ``"theta=0.02,table_max=3000"`` (as study files and ``--param`` give them):
    ints and floats as numbers (:func:`param_value`), the rest as strings; ``""`` is none.  ``ValueError``
    otherwise."""
    params = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, eq, value = item.partition("=")
        if not (eq and key.strip()):
            raise ValueError(f"scheme parameters are NAME=VALUE pairs like theta=0.02,table_max=3000, got {text!r}")
        try:
            params[key.strip()] = param_value(value.strip())
        except ValueError as exc:
            raise ValueError(f"parameter {key.strip()} {exc}") from None
    return params


def param_value(text: str):
    """``text`` as an int, else a float, else the string itself; ``ValueError`` for NaN and infinities."""
    from skewbench.bounds import Range, echo

    for cast in (int, float):
        try:
            value = cast(text)
        except ValueError:
            continue
        if not math.isfinite(value):
            raise ValueError(f"must be {Range()}, got {echo(text)}")
        return value
    return text


@functools.cache
def _signature(cls: type[Scheme]) -> dict[str, inspect.Parameter]:
    """A scheme's keyword parameters beyond W and the seed, their annotations evaluated: its constructor's and
    those a subclass passes on with ``**params`` to its parents'."""
    found: dict[str, inspect.Parameter] = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        signature = inspect.signature(klass.__init__, eval_str=True).parameters.values()
        found |= {p.name: p for p in signature if p.default is not inspect.Parameter.empty
                  and p.name not in ("seed", *found)}
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature):
            break
    return found


def parameters(cls: type[Scheme]) -> dict:
    """A scheme's parameters with their defaults."""
    return {name: p.default for name, p in _signature(cls).items()}


def _kinds(annotation) -> set[type]:
    """The types an annotation allows (``int | None`` → {int, NoneType}); empty when it does not say."""
    if annotation is inspect.Parameter.empty:
        return set()
    return {t for t in getattr(annotation, "__args__", (annotation,)) if isinstance(t, type)}


def check_param(cls: type[Scheme], name: str, value) -> None:
    """``TypeError`` for a value of a kind the parameter's annotation does not allow: text for a number, a
    fraction for an integer, a number for text (a parameter it does not take: the constructor's own error)."""
    if name not in _signature(cls) or not isinstance(value, (str, int, float)):
        return
    kinds = _kinds(_signature(cls)[name].annotation)
    numeric = kinds & {int, float}
    if not kinds & {int, float, str} or type(value) in kinds or (isinstance(value, int) and float in kinds):
        return
    if isinstance(value, float) and int in kinds and value.is_integer():
        return
    wanted = ("an integer" if numeric == {int} else "a number") if numeric else "text"
    raise TypeError(f"parameter {name} must be {wanted}, got {value!r}")


def make_scheme(name: str, workers: int, seed: int = 0, **params) -> Scheme:
    """Instantiate a registered scheme by name, with a clear error for unknown names and for parameters of the
    wrong kind (:func:`check_param`)."""
    import skewbench.schemes  # noqa: F401  (registers every scheme)

    try:
        cls = REGISTRY[name]
    except KeyError:
        known = " ".join(sorted(REGISTRY))
        raise ValueError(f"unknown scheme {name!r}; known schemes: {known}") from None
    for key, value in params.items():
        check_param(cls, key, value)
    return cls(workers, seed=seed, **params)
