"""Routing-table planners of Fang et al. (HPDC 2017): LLFD, MinTable, MinMig, Mixed (heuristic and brute force).

Y. Fang, W. Zhang et al., "Parallel stream processing against workload skewness and variance",
HPDC 2017.  A *problem* (:class:`Problem`) holds, for every key the controller knows of, its
computation cost c(k) of the last interval, its window state size S(k) (the migration cost of the
key, Eq. 2), its hash destination h(k) and its current instance F_t(k).  A planner returns the
new instance of every key, ``assign``; the routing table is ``{k: assign[k] != h(k)}`` (Eq. 1) and
the keys with ``assign[k] != F_t(k)`` migrate.  Instance d is *overloaded* when
``L(d) > (1 + θ_max) · L̄`` (Sec. 2.1; we bound the upper side only, as LLFD does).

Every strategy follows the three phases of Sec. 3: I cleaning (move table entries back to h),
II preparing (disassociate keys from overloaded instances, by a criterion), III assigning
(:func:`llfd`, Algorithm 1).  Criteria are scores, larger first: the cost c(k) ("highest
computation cost first", MinTable) or the migration priority index γ(k) = c(k)^β / S(k)
(Sec. 3.2, MinMig and Mixed).

For huge key spaces the planners run on the compact representation of Sec. 4
(:func:`compact`): keys with the same (F_t, h, ĉ, Ŝ) after HLHE discretisation (Sec. 4.2,
:func:`hlhe`) form one record with a multiplicity n.

>>> cost = np.array([7.0, 4, 5, 2, 1, 1])            # Fig. 4: d1 = {7, 4, 5}, d2 = {2, 1, 1}
>>> home = np.array([0, 1, 1, 1, 1, 1])               # k2, k3 sit on d1 through table entries
>>> p = Problem(cost, cost.copy(), home, np.array([0, 0, 0, 1, 1, 1]), workers=2, theta=0.0)
>>> [int(table_size(p, solve(p, s))) for s in ("llfd", "mintable")]  # the paper's 4 vs 2 entries
[4, 2]
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace

import numba
import numpy as np

STRATEGIES = ("llfd", "mintable", "minmig", "mixed", "mixed-brute")
_TOL = 1e-9  # relative slack on the balance bound: float sums of equal loads must count as equal


@dataclass(frozen=True)
class Problem:
    """One rebalancing instance (Eq. 3).

    Parameters
    ----------
    cost : float array
        c(k): computation cost of each key in the last interval (frequency × per-tuple cost).
    memory : float array
        S(k): state held for the key over the window; what migrating it costs (Eq. 2).
    home : int array
        h(k) under the *new* number of instances.
    current : int array
        F_t(k); values ``>= workers`` (instances removed by a scale-in) force the key to move.
    workers : int
        Number of instances after the plan.
    theta : float
        θ_max: an instance may carry up to (1 + θ_max) times the mean load (Table 2: 0.08).
    beta : float
        β of the migration priority index γ = c^β / S (Table 2: 1.5).
    table_max : int
        A_max, the routing-table size bound (Mixed only).
    members : int array, optional
        Keys each entry stands for (the compact representation's n); ``None``: one each.
        Table sizes and Phase I's move-back counts are in keys.
    """

    cost: np.ndarray
    memory: np.ndarray
    home: np.ndarray
    current: np.ndarray
    workers: int
    theta: float = 0.08
    beta: float = 1.5
    table_max: int = 3000
    members: np.ndarray | None = None

    def per_key(self, values: np.ndarray) -> np.ndarray:
        """``values`` per key of an entry: criteria rank keys, not chunks of keys."""
        return values if self.members is None else values / self.members

    def keys_in(self, mask: np.ndarray) -> int:
        """Number of keys behind the entries selected by ``mask``."""
        return int(np.count_nonzero(mask) if self.members is None else self.members[mask].sum())

    @property
    def limit(self) -> float:
        """The largest load an instance may carry: (1 + θ_max) · L̄."""
        return (1.0 + self.theta) * float(np.sum(self.cost)) / self.workers * (1.0 + _TOL)


# -- metrics -------------------------------------------------------------------------------------

def loads(cost: np.ndarray, assign: np.ndarray, workers: int) -> np.ndarray:
    """L(d) = Σ_{F(k)=d} c(k) for every instance (Sec. 2.1)."""
    return np.bincount(assign, weights=cost, minlength=workers)


def imbalance(p: Problem, assign: np.ndarray) -> float:
    """max_d θ(d) = max_d L(d) / L̄ − 1 of an assignment (0 = perfect)."""
    total = float(np.sum(p.cost))
    return float(loads(p.cost, assign, p.workers).max() * p.workers / total - 1.0) if total > 0 else 0.0


def table_size(p: Problem, assign: np.ndarray) -> int:
    """|A|: keys routed away from their hash destination."""
    return p.keys_in(assign != p.home)


def migration(p: Problem, assign: np.ndarray) -> float:
    """M(F_t, F_t+1) = Σ S(k) over keys whose instance changes (Eq. 2)."""
    return float(p.memory[assign != p.current].sum())


def priority(cost: np.ndarray, memory: np.ndarray, beta: float) -> np.ndarray:
    """Migration priority index γ(k) = c(k)^β / S(k) (Sec. 3.2); keys without state are free to move."""
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = np.power(cost, beta) / memory
    return np.where(memory > 0, gamma, np.where(cost > 0, np.inf, 0.0))


# -- Phase I and II ------------------------------------------------------------------------------

def clean(p: Problem, assign: np.ndarray, n: int) -> np.ndarray:
    """Phase I: move back ``n`` keys of the table, smallest state first (Algorithm 4, line 1).

    ``n >= |A|`` empties the table (MinTable's Phase I); ties go to the lower index.  With
    ``p.members`` whole entries move back until at least ``n`` keys have.
    """
    entries = np.flatnonzero(assign != p.home)
    if n <= 0 or len(entries) == 0:
        return assign.copy()
    entries = entries[np.argsort(p.memory[entries] / (1 if p.members is None else p.members[entries]),
                                 kind="stable")]
    weight = np.ones(len(entries)) if p.members is None else p.members[entries]
    back = entries[: int(np.searchsorted(np.cumsum(weight), n)) + 1]
    out = assign.copy()
    out[back] = p.home[back]
    return out


def prepare(cost: np.ndarray, score: np.ndarray, assign: np.ndarray, workers: int, limit: float) -> np.ndarray:
    """Phase II: from each overloaded instance disassociate keys, best ``score`` first, until it fits.

    Returns a copy of ``assign`` with ``-1`` for the keys put into the candidate set C; keys
    already at ``-1`` stay candidates.
    """
    out = assign.copy()
    placed = np.flatnonzero(out >= 0)
    order = placed[np.lexsort((placed, -score[placed], out[placed]))]  # by instance, best first
    inst = out[order]
    load = loads(cost[placed], out[placed], workers)
    before = np.cumsum(cost[order]) - cost[order]  # load removed before this key, per instance
    first = np.searchsorted(inst, np.arange(workers))
    before -= np.r_[before, 0.0][first[inst]]
    out[order[load[inst] - before > limit]] = -1
    return out


# -- Phase III: LLFD (Algorithm 1) ---------------------------------------------------------------

def _by_cost(cost: np.ndarray, assign: np.ndarray, workers: int):
    """Keys originally on each instance, costliest first: (order, starts, negated costs)."""
    placed = np.flatnonzero(assign >= 0)
    order = placed[np.lexsort((placed, -cost[placed], assign[placed]))]
    starts = np.searchsorted(assign[order], np.arange(workers + 1)).astype(np.int64)
    return order.astype(np.int64), starts, -cost[order]


@numba.njit(cache=True)
def _llfd(cost, score, assign, origin, workers, limit, slack, order, starts, negc):
    """Algorithm 1 over ``assign`` (−1 = in C), in place.  See :func:`llfd_reference`."""
    load = np.zeros(workers)
    heap = [(0.0, np.int64(0))]
    heap.pop()
    for k in range(cost.shape[0]):
        if assign[k] >= 0:
            load[assign[k]] += cost[k]
        else:
            heap.append((-score[k], np.int64(k)))
    heapq.heapify(heap)
    evicted = np.zeros(cost.shape[0], dtype=np.bool_)
    while len(heap) > 0:
        k = heapq.heappop(heap)[1]
        c = cost[k]
        least = np.argmin(load)
        if load[least] + c <= limit:
            assign[k] = least
            load[least] += c
            continue
        target = -1
        for d in np.argsort(load, kind="mergesort"):  # Adjust(k, d), least loaded first
            need = load[d] + c - limit
            lo, hi = starts[d], starts[d + 1]
            j = lo + np.searchsorted(negc[lo:hi], -c, side="right")  # first original key cheaper than k
            got, last = 0.0, j
            while last < hi and got < need:
                if not evicted[order[last]]:
                    got += cost[order[last]]
                last += 1
            if got >= need:
                for i in range(j, last):
                    e = order[i]
                    if not evicted[e]:
                        evicted[e] = True
                        assign[e] = -1
                        load[d] -= cost[e]
                        heapq.heappush(heap, (-score[e], e))
                target = d
                break
        if target < 0:  # no instance accepts k: least loaded, or stay when that is no better
            o = origin[k]
            target = o if o >= 0 and load[o] <= load[least] + slack else least
            if c > limit:  # k alone breaks the bound: isolate it, as Adjust would if it could
                lo, hi = starts[target], starts[target + 1]
                for i in range(lo + np.searchsorted(negc[lo:hi], -c, side="right"), hi):
                    e = order[i]
                    if not evicted[e]:
                        evicted[e] = True
                        assign[e] = -1
                        load[target] -= cost[e]
                        heapq.heappush(heap, (-score[e], e))
        assign[k] = target
        load[target] += c


def _fallback(origin_k, load, least, slack):
    return origin_k if origin_k >= 0 and load[origin_k] <= load[least] + slack else least


def llfd(cost, score, assign, origin, workers: int, limit: float) -> np.ndarray:
    """Least-Load Fit Decreasing (Algorithm 1): place every candidate (``assign == -1``).

    Candidates are taken best ``score`` first; each goes to the least-loaded instance d that
    accepts it.  *Adjust* accepts when L(d) + c(k) ≤ limit, or when evicting keys that were on d
    before LLFD started, each cheaper than k (conditions i, ii), costliest first, brings d within
    the limit (iii); the evicted keys join C.  A key no instance accepts goes to the least-loaded
    instance (the Simple algorithm of Appendix A), or stays on ``origin`` (its instance before
    Phase II) when that is at most θ_max·L̄ more loaded: no instance keeps it within the bound,
    and moving it would migrate state (and ping-pong between intervals) for little gain.  A key
    costlier than the limit itself (Adjust's condition iii can never hold) is isolated there: the
    cheaper original keys of that instance are evicted, so the maximum load is c(k), its lower bound.

    Parameters
    ----------
    cost, score : float arrays
        c(k) and the selection criterion (larger first).
    assign : int array
        Instance per key, ``-1`` for the candidate set C.  Not modified.
    origin : int array
        Instance before Phase II (``-1``: none).
    workers : int
    limit : float
        (1 + θ_max) · L̄.

    Returns
    -------
    int64 array: every key's instance.
    """
    out = np.ascontiguousarray(assign, dtype=np.int64).copy()
    order, starts, negc = _by_cost(cost, out, workers)
    _llfd(np.ascontiguousarray(cost, dtype=np.float64), np.ascontiguousarray(score, dtype=np.float64), out,
          np.ascontiguousarray(origin, dtype=np.int64), workers, float(limit), _slack(cost, workers, limit),
          order, starts, negc)
    return out


def _slack(cost, workers: int, limit: float) -> float:
    """θ_max · L̄: how much more loaded than the least-loaded instance a stuck key's origin may be."""
    return max(float(limit) - float(np.sum(cost)) / workers, 0.0)


def llfd_reference(cost, score, assign, origin, workers: int, limit: float) -> np.ndarray:
    """Plain-Python LLFD (tests compare :func:`llfd` with it); same tie-breaking."""
    out = [int(a) for a in assign]
    original = {d: sorted((k for k in range(len(out)) if out[k] == d), key=lambda k: (-cost[k], k))
                for d in range(workers)}
    load = [0.0] * workers
    for k, a in enumerate(out):
        if a >= 0:
            load[a] += cost[k]
    heap = [(-score[k], k) for k in range(len(out)) if out[k] < 0]
    heapq.heapify(heap)
    evicted = set()
    while heap:
        _, k = heapq.heappop(heap)
        least = min(range(workers), key=lambda d: (load[d], d))
        if load[least] + cost[k] <= limit:
            out[k] = least
            load[least] += cost[k]
            continue
        target = -1
        for d in sorted(range(workers), key=lambda d: (load[d], d)):
            need, chosen, got = load[d] + cost[k] - limit, [], 0.0
            for e in original[d]:
                if got >= need:
                    break
                if cost[e] < cost[k] and e not in evicted:
                    chosen.append(e)
                    got += cost[e]
            if got >= need:
                for e in chosen:
                    evicted.add(e)
                    out[e] = -1
                    load[d] -= cost[e]
                    heapq.heappush(heap, (-score[e], e))
                target = d
                break
        if target < 0:
            target = _fallback(int(origin[k]), load, least, _slack(cost, workers, limit))
            if cost[k] > limit:
                for e in original[target]:
                    if cost[e] < cost[k] and e not in evicted:
                        evicted.add(e)
                        out[e] = -1
                        load[target] -= cost[e]
                        heapq.heappush(heap, (-score[e], e))
        out[k] = target
        load[target] += cost[k]
    return np.array(out, dtype=np.int64)


# -- strategies (Algorithms 2-4) -------------------------------------------------------------------

def _start(p: Problem) -> tuple[np.ndarray, np.ndarray]:
    """F_t restricted to the new instance set: keys on removed instances become candidates."""
    origin = np.where(p.current < p.workers, p.current, -1).astype(np.int64)
    return origin, origin.copy()


def _phases(p: Problem, assign: np.ndarray, origin: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Phases II and III with one criterion."""
    limit = p.limit
    candidates = prepare(p.cost, score, assign, p.workers, limit)
    return llfd(p.cost, score, candidates, origin, p.workers, limit)


def solve_with(p: Problem, n_back: int, score: np.ndarray) -> np.ndarray:
    """Move back ``n_back`` entries (smallest state first), then Phases II-III by ``score``."""
    origin, assign = _start(p)
    assign = np.where(assign >= 0, assign, p.home)  # removed instances: their keys start at h
    assign = clean(p, assign, n_back)
    assign[p.current >= p.workers] = -1
    return _phases(p, assign, origin, score)


def mixed(p: Problem) -> np.ndarray:
    """Algorithm 4: start as MinMig (n = 0) and move back the overused entries until |A| ≤ A_max.

    Stops at n ≥ |A_t| (everything moved back) with the last plan even if it is still too large.
    """
    gamma = priority(p.per_key(p.cost), p.per_key(p.memory), p.beta)
    entries = p.keys_in(p.current != p.home)
    n = 0
    while True:
        assign = solve_with(p, n, gamma)
        over = table_size(p, assign) - p.table_max
        if over <= 0 or n >= entries:
            return assign
        n = min(n + over, entries)


def _rank(p: Problem, assign: np.ndarray) -> tuple:
    """Brute-force preference: balanced, then within A_max, then least migration, smallest table."""
    theta = imbalance(p, assign)
    excess = theta - p.theta if theta > p.theta + 1e-9 else 0.0
    return (excess, max(table_size(p, assign) - p.table_max, 0), migration(p, assign), table_size(p, assign))


def mixed_brute(p: Problem, betas: tuple | None = None, points: int = 64) -> np.ndarray:
    """Mixed by brute force (Sec. 3.3 and 5, "Mixed_BF"): try every n (or ``points`` evenly spaced values)
    and keep the balanced plan within A_max with the least migration.

    The paper's brute force searches n only, at Mixed's β (``p.beta``); ``betas`` widens the search to
    other β values (then it also optimises a parameter Mixed is given, and is no longer Fig. 12's Mixed_BF).
    """
    entries = p.keys_in(p.current != p.home)
    grid = np.unique(np.linspace(0, entries, min(entries + 1, points)).round().astype(np.int64))
    best, best_rank = None, None
    for beta in (p.beta,) if betas is None else betas:
        gamma = priority(p.per_key(p.cost), p.per_key(p.memory), beta)
        for n in grid:
            assign = solve_with(p, int(n), gamma)
            rank = _rank(p, assign)
            if best is None or rank < best_rank:
                best, best_rank = assign, rank
    return best


def solve(p: Problem, strategy: str, **options) -> np.ndarray:
    """New instance of every key under ``strategy`` (one of :data:`STRATEGIES`).

    ``llfd``: Phases II-III by cost, no cleaning (Fig. 4, left).  ``mintable``: Algorithm 2.
    ``minmig``: Algorithm 3.  ``mixed``: Algorithm 4.  ``mixed-brute``: :func:`mixed_brute`.
    """
    if strategy == "llfd":
        return solve_with(p, 0, p.per_key(p.cost))
    if strategy == "mintable":
        return solve_with(p, p.keys_in(np.ones(len(p.cost), dtype=bool)), p.per_key(p.cost))
    if strategy == "minmig":
        return solve_with(p, 0, priority(p.per_key(p.cost), p.per_key(p.memory), p.beta))
    if strategy == "mixed":
        return mixed(p)
    if strategy == "mixed-brute":
        return mixed_brute(p, **options)
    raise ValueError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")


# -- compact representation and HLHE discretisation (Sec. 4) ---------------------------------------

def hlhe_levels(top: float, degree: int) -> np.ndarray:
    """Representative values of HLHE with degree e (Sec. 4.2), ascending, for values in [1, top].

    Our reading of the (garbled) definition: relative resolution ρ = 2^e / 256 (e = 0 finest,
    e = 8 coarsest, the paper's "1 to 256"); a *linear* part, every integer 1 … ⌈1/ρ⌉ (exact for
    small counts), then an *exponential* part r_{j+1} = r_j (1 + ρ) until top is covered.

    >>> hlhe_levels(20, 7).tolist()  # ρ = 1/2: integers 1, 2, then ×1.5
    [1.0, 2.0, 3.0, 4.5, 6.75, 10.125, 15.1875, 22.78125]
    """
    if not 0 <= degree <= 8:
        raise ValueError(f"degree must be in 0..8, got {degree}")
    rho = 2.0 ** degree / 256.0
    linear = np.arange(1.0, math.ceil(1.0 / rho) + 1.0)
    if top <= linear[-1]:
        return linear[: max(1, math.ceil(top))]
    steps = math.ceil(math.log(top / linear[-1]) / math.log1p(rho))
    return np.r_[linear, linear[-1] * (1.0 + rho) ** np.arange(1, steps + 1)]


@numba.njit(cache=True)
def _hlhe_round(values, order, groups, levels, out):
    """Greedy second step: each value between two levels takes the one that cancels the deviation
    accumulated so far in its group (``order`` runs through the groups one after the other)."""
    deviation = 0.0  # Σ (x − x̂) so far: > 0 means under-counting, so round up
    for i in range(order.shape[0]):
        if i > 0 and groups[order[i]] != groups[order[i - 1]]:
            deviation = 0.0
        x = values[order[i]]
        j = np.searchsorted(levels, x)
        if j < levels.shape[0] and levels[j] == x:
            pick = x
        elif j == 0:
            pick = levels[0]
        else:
            pick = levels[j] if deviation > 0 else levels[j - 1]
        deviation += x - pick
        out[order[i]] = pick


def hlhe(values: np.ndarray, degree: int, groups: np.ndarray | None = None) -> np.ndarray:
    """HLHE discretisation (Sec. 4.2): normalise by the smallest positive value, round each value
    to a neighbouring level of :func:`hlhe_levels` so that the running total deviation stays
    small (values taken in non-increasing order), scale back.  Zeros stay zero.

    ``groups`` (optional): cancel the deviation within each group separately — we pass the
    current instance, so every instance's estimated load stays within one level gap of the truth.

    >>> x = np.array([10.0, 9, 7, 5, 5, 3, 2, 1])
    >>> y = hlhe(x, 7)
    >>> float(abs(y.sum() - x.sum())) <= 4.5 / 2 + 1e-9
    True
    """
    values = np.asarray(values, dtype=np.float64)
    groups = np.zeros(len(values), dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    out = np.zeros_like(values)
    pos = values > 0
    if not pos.any():
        return out
    unit = values[pos].min()
    norm = np.where(pos, values / unit, 0.0)
    levels = hlhe_levels(float(norm.max()), degree)
    order = np.flatnonzero(pos)
    order = order[np.lexsort((order, -norm[order], groups[order]))]
    _hlhe_round(norm, order.astype(np.int64), groups, levels, out)
    return out * unit


def hlhe_reference(values: np.ndarray, degree: int) -> np.ndarray:
    """Plain-Python :func:`hlhe` without groups (tests compare)."""
    values = np.asarray(values, dtype=np.float64)
    out = np.zeros_like(values)
    if not (values > 0).any():
        return out
    unit = values[values > 0].min()
    levels = hlhe_levels(float(values.max() / unit), degree).tolist()
    deviation = 0.0
    for i in sorted(np.flatnonzero(values > 0), key=lambda i: (-values[i], i)):
        x = values[i] / unit
        above = [v for v in levels if v >= x]
        below = [v for v in levels if v <= x]
        if above and above[0] == x:
            pick = x
        elif not below:
            pick = levels[0]
        else:
            pick = above[0] if deviation > 0 else below[-1]
        deviation += x - pick
        out[i] = pick * unit
    return out


@dataclass(frozen=True)
class Compact:
    """The 6-dimensional records (F_t+1, F_t, h, ĉ, Ŝ, n) of Sec. 4, as planner input.

    ``problem`` holds one entry per *chunk*; ``chunk_of`` maps every key to its chunk.  A record
    of n keys is split into chunks of 1, 2, 4, … keys (and the rest), so the unmodified planners
    can split a record over instances, which the paper's adapted LLFD does by rewriting n.
    ``records`` is the number of distinct (F_t, h, ĉ, Ŝ).
    """

    problem: Problem
    chunk_of: np.ndarray
    records: int


def compact(p: Problem, degree: int = 0) -> Compact:
    """Group keys with equal (F_t, h, ĉ, Ŝ) after :func:`hlhe` of c and S (Sec. 4.1-4.2)."""
    c_hat, s_hat = hlhe(p.cost, degree, p.current), hlhe(p.memory, degree, p.current)
    fields = (s_hat, c_hat, p.home, p.current)
    order = np.lexsort((-p.cost,) + fields)  # within a record: costliest keys first
    sorted_fields = [f[order] for f in fields]
    new = np.ones(len(order), dtype=bool)
    new[1:] = np.any([f[1:] != f[:-1] for f in sorted_fields], axis=0)
    record = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    rank = np.arange(len(order)) - first[record]  # position of the key inside its record
    size = np.diff(np.r_[first, len(order)])[record]
    full = np.floor(np.log2(size + 1)).astype(np.int64)  # chunks 1, 2, …, 2^(full−1), then the rest
    local = np.minimum(np.floor(np.log2(rank + 1)).astype(np.int64), full)
    chunk_sorted = np.cumsum(np.r_[True, (record[1:] != record[:-1]) | (local[1:] != local[:-1])]) - 1
    chunk_of = np.empty(len(order), dtype=np.int64)
    chunk_of[order] = chunk_sorted
    heads = np.flatnonzero(np.r_[True, chunk_sorted[1:] != chunk_sorted[:-1]])
    members = np.bincount(chunk_sorted).astype(np.float64)
    at = order[heads]
    chunks = replace(p, cost=c_hat[at] * members, memory=s_hat[at] * members, home=p.home[at],
                     current=p.current[at], members=members.astype(np.int64))
    return Compact(problem=chunks, chunk_of=chunk_of, records=int(record[-1]) + 1 if len(order) else 0)


def solve_compact(p: Problem, strategy: str, degree: int = 0, **options) -> np.ndarray:
    """:func:`solve` on the compact representation, mapped back to keys (Sec. 4.1, Phase III)."""
    packed = compact(p, degree)
    return solve(packed.problem, strategy, **options)[packed.chunk_of]
