"""Mixed routing of Fang et al. (HPDC 2017): a hash function plus a small explicit routing table.

Y. Fang et al., "Parallel stream processing against workload skewness and variance", HPDC 2017.
A key goes to A(k) if the routing table A holds it, else to h(k) (Eq. 1, Fig. 3).  At the end of
every interval the controller (:meth:`FangRouting.rebalance`) turns the interval's statistics into
a new table with one of the planners of :mod:`skewbench.schemes.fang_planning` — ``llfd``,
``mintable``, ``minmig``, ``mixed`` (and ``mixed-brute``) — and every router installs it with
:meth:`~FangRouting.apply`.  The table is shared by all upstream instances (Sec. 4, steps 3-4),
hence ``coupling = "global"``.

Model (Sec. 2.1) as implemented:

* c(k) = frequency of k in the last interval × its per-tuple cost (``Stats.costs``, default 1).
* S(k), the state size and migration cost of k, is its tuple count over the last ``window``
  intervals (w in the paper; a sliding-window join keeps those tuples).
* θ(d) = L(d) / L̄ − 1 ≤ θ_max (only overload is bounded), A_max = ``table_max``.
* h: a consistent hash with ``vnodes`` points per instance, as in the paper's experiments
  (Sec. 5), or ``base_hash="mod"``: key grouping, murmur(fp) mod W.  With ``mod`` a scale-out
  rehashes almost every key, so consistent hashing is the default.
* The controller plans only when an instance is overloaded or W changes (Sec. 4, step 2).
"""

from __future__ import annotations

import time
from typing import ClassVar

import numba
import numpy as np

from skewbench.hashing import choice_hash
from skewbench.scheme import MOVE_DTYPE, Plan, Scheme, Stats, as_fps, register
from skewbench.schemes import fang_planning as fp
from skewbench.schemes.consistent import lookup, ring

_EMPTY_KEYS = np.empty(0, dtype=np.uint64)
_EMPTY_WORKERS = np.empty(0, dtype=np.int64)
BASE_HASHES = ("consistent", "mod")


@numba.njit(cache=True)
def _route_mod(fps, table_keys, table_workers, workers, seed, out):
    """Eq. 1 with h = murmur mod W: table (sorted keys, binary search) first, then the hash."""
    n_table = table_keys.shape[0]
    for i in range(fps.shape[0]):
        fp_ = fps[i]
        if n_table:
            t = np.searchsorted(table_keys, fp_)
            if t < n_table and table_keys[t] == fp_:
                out[i] = table_workers[t]
                continue
        out[i] = np.int64(choice_hash(fp_, seed, 0) % np.uint64(workers))


def route_mod_reference(fps, table_keys, table_workers, workers: int, seed: int) -> np.ndarray:
    """Plain-Python :func:`_route_mod` (tests compare)."""
    table = dict(zip(table_keys.tolist(), table_workers.tolist()))
    hashed = [int(choice_hash(np.uint64(f), seed & 0xFFFFFFFF, 0) % np.uint64(workers)) for f in fps]
    return np.array([table.get(int(f), h) for f, h in zip(fps, hashed)], dtype=np.int64)


class FangRouting(Scheme):
    """Base of ``llfd``/``mintable``/``minmig``/``mixed``; subclasses set :attr:`strategy`.

    Parameters
    ----------
    workers : int
        Number of downstream instances N_D.
    seed : int
        Seeds the hash function h.
    theta : float
        θ_max, the imbalance tolerance (Table 2 default 0.08).
    beta : float
        β of the migration priority index γ = c^β / S (Table 2 default 1.5).
    table_max : int
        A_max, the routing table bound used by Mixed (Table 2's default is illegible in our copy).
    window : int
        w, intervals of state kept per key (Sec. 2.1; the paper tests 1 and 5).
    base_hash : str
        ``"consistent"`` (the paper's h) or ``"mod"`` (key grouping).
    vnodes : int
        Points per instance on the consistent-hash ring.
    search : str
        Mixed only: ``"heuristic"`` (Algorithm 4) or ``"brute"`` (every n, Sec. 3.3).
    betas : tuple of float, optional
        β values the brute-force search also tries; ``None`` (the paper's Mixed_BF): ``beta`` only.
    compact_above : int
        Plan on the compact representation (Sec. 4) when more keys than this are known.
    degree : int
        HLHE degree of discretisation e in 0..8 (Sec. 4.2).
    """

    coupling = "global"
    adaptive = True
    strategy: ClassVar[str] = ""

    def __init__(self, workers: int, seed: int = 0, theta: float = 0.08, beta: float = 1.5, table_max: int = 3000,
                 window: int = 1, base_hash: str = "consistent", vnodes: int = 100, search: str = "heuristic",
                 betas: tuple | None = None, compact_above: int = 1_000_000, degree: int = 0):
        if theta < 0:
            raise ValueError(f"theta must be >= 0 (L(d) <= (1 + theta) * mean), got {theta}")
        if int(table_max) < 0 or int(window) < 1 or int(vnodes) < 1:
            raise ValueError("table_max must be >= 0, window and vnodes >= 1")
        if base_hash not in BASE_HASHES:
            raise ValueError(f"base_hash must be one of {', '.join(BASE_HASHES)}, got {base_hash!r}")
        if search not in ("heuristic", "brute"):
            raise ValueError(f"search must be 'heuristic' or 'brute', got {search!r}")
        if not 0 <= int(degree) <= 8:
            raise ValueError(f"degree must be in 0..8, got {degree}")
        self.theta, self.beta, self.table_max, self.window = theta, beta, table_max, window
        self.base_hash, self.vnodes, self.search, self.betas = base_hash, vnodes, search, betas
        self.compact_above, self.degree = compact_above, degree
        super().__init__(workers, seed)

    def reset(self) -> None:
        self._ring = ring(self.workers, self.vnodes, self.seed) if self.base_hash == "consistent" else None
        self._table_keys, self._table_workers = _EMPTY_KEYS, _EMPTY_WORKERS
        self._history: list[tuple[np.ndarray, np.ndarray]] = []  # (keys, counts) of the last w intervals

    # -- routing (Eq. 1) -----------------------------------------------------------------------
    def _lookup(self, fps, table_keys, table_workers, workers, hash_ring) -> np.ndarray:
        fps = as_fps(fps)
        if hash_ring is not None:
            return lookup(fps, table_keys, table_workers, *hash_ring, self.seed)
        out = np.empty(fps.shape[0], dtype=np.int64)
        _route_mod(fps, table_keys, table_workers, workers, self.seed & 0xFFFFFFFF, out)
        return out

    def route_many(self, fps, now=None) -> np.ndarray:
        return self._lookup(fps, self._table_keys, self._table_workers, self.workers, self._ring)

    def candidates(self, fp_: int) -> np.ndarray:
        return self.route_many(np.array([fp_], dtype=np.uint64))

    def table_size(self) -> int:
        return len(self._table_keys)

    def hashed(self, fps, workers: int | None = None) -> np.ndarray:
        """h(k) for ``workers`` instances (default: the current number), ignoring the table."""
        workers = int(workers or self.workers)
        return self._lookup(fps, _EMPTY_KEYS, _EMPTY_WORKERS, workers, self._ring_for(workers))

    def _ring_for(self, workers: int):
        if self.base_hash != "consistent":
            return None
        return self._ring if workers == self.workers else ring(workers, self.vnodes, self.seed)

    # -- adaptation ----------------------------------------------------------------------------
    def problem(self, stats: Stats, workers: int | None = None) -> tuple[np.ndarray, fp.Problem]:
        """Record ``stats`` in the window and build the planning problem over every known key.

        Known keys: those seen in the last w intervals and those in the table.  Returns the keys
        (sorted) and the :class:`~skewbench.schemes.fang_planning.Problem`.
        """
        workers = int(workers or self.workers)
        keys = as_fps(stats.keys)
        counts = np.asarray(stats.counts, dtype=np.float64)
        cost = counts if stats.costs is None else counts * np.asarray(stats.costs, dtype=np.float64)
        self._history = (self._history + [(keys, counts)])[-int(self.window):]
        known = np.union1d(np.concatenate([k for k, _ in self._history]), self._table_keys)
        c = np.zeros(len(known))
        np.add.at(c, np.searchsorted(known, keys), cost)
        memory = np.zeros(len(known))
        for k, n in self._history:
            np.add.at(memory, np.searchsorted(known, k), n)
        problem = fp.Problem(cost=c, memory=memory, home=self.hashed(known, workers), current=self.route_many(known),
                             workers=workers, theta=float(self.theta), beta=float(self.beta),
                             table_max=int(self.table_max))
        return known, problem

    def plan_assignment(self, problem: fp.Problem) -> np.ndarray:
        """Run this scheme's planner, on the compact representation for large key spaces."""
        strategy = "mixed-brute" if self.strategy == "mixed" and self.search == "brute" else self.strategy
        options = {"betas": tuple(self.betas)} if strategy == "mixed-brute" and self.betas is not None else {}
        if len(problem.cost) > self.compact_above:
            return fp.solve_compact(problem, strategy, degree=int(self.degree), **options)
        return fp.solve(problem, strategy, **options)

    def rebalance(self, stats: Stats | None, workers: int | None = None) -> Plan:
        """The new routing table for the next interval (for ``workers`` instances if given).

        Keeps the current table when no instance is overloaded and W is unchanged (Sec. 4,
        step 2).  ``moves`` lists every known key whose instance changes.
        """
        began = time.perf_counter()
        workers = int(workers or self.workers)
        if stats is None:
            stats = Stats(keys=_EMPTY_KEYS, counts=np.empty(0), loads=np.zeros(self.workers))
        known, problem = self.problem(stats, workers)
        if workers == self.workers and (fp.imbalance(problem, problem.current) <= problem.theta + 1e-9
                                        or not problem.cost.any()):
            assign = problem.current
        else:
            assign = self.plan_assignment(problem)
        entry = assign != problem.home
        changed = assign != problem.current
        moves = np.empty(int(changed.sum()), dtype=MOVE_DTYPE)
        moves["key"], moves["src"], moves["dst"] = known[changed], problem.current[changed], assign[changed]
        return Plan(table_keys=known[entry], table_workers=assign[entry].astype(np.int64), moves=moves,
                    workers=workers, build_seconds=time.perf_counter() - began)

    def apply(self, plan: Plan) -> None:
        if plan.workers != self.workers:
            self._ring = self._ring_for(int(plan.workers))
            self.workers = int(plan.workers)
        order = np.argsort(plan.table_keys, kind="stable")
        self._table_keys = np.ascontiguousarray(plan.table_keys[order], dtype=np.uint64)
        self._table_workers = np.ascontiguousarray(plan.table_workers[order], dtype=np.int64)


@register
class FangLLFD(FangRouting):
    """LLFD alone (Algorithm 1): disassociate the costliest keys of overloaded instances and place
    them least-load-fit-decreasing, never cleaning the table (Fig. 4, left).

    >>> from skewbench.hashing import fingerprints
    >>> fps = fingerprints(np.random.default_rng(0).zipf(1.5, 20_000) % 2_000)
    >>> scheme = FangLLFD(workers=8)
    >>> keys, counts = np.unique(fps, return_counts=True)
    >>> plan = scheme.rebalance(Stats(keys, counts.astype(float), np.zeros(8)))
    >>> scheme.apply(plan)
    >>> loads = np.bincount(scheme.route_many(fps), minlength=8)
    >>> bool(loads.max() / loads.mean() <= 1.08 or plan.table_keys.size > 0)
    True
    """

    name = "llfd"
    strategy = "llfd"


@register
class FangMinTable(FangRouting):
    """MinTable (Algorithm 2): empty the table, then re-place the costliest keys of overloaded
    instances with LLFD — the smallest tables, the most migration."""

    name = "mintable"
    strategy = "mintable"


@register
class FangMinMig(FangRouting):
    """MinMig (Algorithm 3): keep the table; disassociate and place keys by the migration priority
    index γ = c^β / S — the least migration, an unbounded table."""

    name = "minmig"
    strategy = "minmig"


@register
class FangMixed(FangRouting):
    """Mixed (Algorithm 4): MinMig, moving back the smallest-state entries until |A| ≤ A_max.

    ``search="brute"`` tries every number of moved-back entries at the same β (and every β of
    ``betas`` if given) and keeps the balanced plan within A_max with the least migration (the
    paper's Mixed_BF).
    """

    name = "mixed"
    strategy = "mixed"


@register
class FangMixedBrute(FangMixed):
    """``mixed`` with ``search="brute"`` by default (the paper's brute-force Mixed, Sec. 5)."""

    name = "mixed-brute"

    def __init__(self, workers: int, seed: int = 0, search: str = "brute", **params):
        super().__init__(workers, seed, search=search, **params)
