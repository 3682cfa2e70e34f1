"""Gedik's partitioning functions: an explicit hash for frequent items over a consistent hash.

B. Gedik, "Partitioning functions for stateful data parallelism in stream processing", VLDB J.
23(4), 2014.  The function is a pair ⟨H_p, H_c⟩ (Sec. 4.1): items with frequency ≥ δ are mapped
explicitly (H_p), everything else goes through a consistent hash over N channels (H_c).  The
splitter feeds every message to a sliding lossy counter (Sec. 4.1.2,
:mod:`skewbench.schemes.lossy_counting`); at each adaptation the controller rebuilds H_p for the
current or a new N with one of three greedy algorithms — *scan*, *redist*, *readj* (Sec. 4.2) —
driven by a utility U(ρ, γ) of a balance penalty ρ (Eq. 19–20) and a migration penalty γ (Eq. 18).

Resource functions are written as three letters for β_s (memory), β_c (computation) and β_n
(communication), each C/L/Q: β(x) = 1, x or x² (Table 1; default ``"LCL"``).  Channel *i*'s load for
resource k is ``L_k(i) = Σ_{p(d)=i} β_k(f(d))``: for β_c we fold the extra f(d) of Eq. 3 into β_c,
the reading under which Eq. 17, Sec. 4.4 ("constant resources balance for free") and the toy
example of Fig. 1 hold.

Module functions give the paper's formulas (θ: Eq. 15, δ: Eq. 17) and its evaluation metrics
(relative imbalance b: Eq. 11, relative migration cost m: Eq. 12).
"""

from __future__ import annotations

import math
import time
from typing import ClassVar

import numba
import numpy as np

from skewbench.scheme import MOVE_DTYPE, Plan, Scheme, Stats, register
from skewbench.schemes.consistent import lookup, ring
from skewbench.schemes.lossy_counting import SlidingLossyCounter

EXPONENTS = {"C": 0, "L": 1, "Q": 2}  # β(x) = x ** exponent
UTILITIES = ("A", "APM", "APLM", "ATM", "ATLM")  # Sec. 4.3, in the order of the kernels' codes
_EMPTY_KEYS = np.empty(0, dtype=np.uint64)
_EMPTY_WORKERS = np.empty(0, dtype=np.int64)


# -- the paper's formulas -----------------------------------------------------------------------

def resource_exponents(resources: str) -> np.ndarray:
    """Exponents of β_s, β_c, β_n from letters such as ``"LCL"`` (C = 0, L = 1, Q = 2).

    >>> resource_exponents("LQL").tolist()
    [1, 2, 1]
    """
    letters = str(resources).upper()
    if len(letters) != 3 or any(c not in EXPONENTS for c in letters):
        raise ValueError(f"resources must be three letters from C, L, Q (β_s β_c β_n), got {resources!r}")
    return np.array([EXPONENTS[c] for c in letters], dtype=np.int64)


def theta(alpha: float, workers: int) -> float:
    """Largest relative deviation of a channel's load from the mean that keeps max/min ≤ α (Eq. 15).

    θ = (α − 1) / (1 + α / (N − 1)); 0 for one channel (nothing can deviate).

    >>> round(theta(1.2, 10), 6)  # 0.2 / (1 + 1.2 / 9)
    0.176471
    """
    if workers <= 1:
        return 0.0
    return (alpha - 1.0) / (1.0 + alpha / (workers - 1))


def frequency_threshold(resources: str, alpha: float, workers: int, sigma: float, domain_size: int) -> float:
    """δ = min_k δ_k (Eq. 17): items at least this frequent get an explicit mapping.

    δ_k is 1 for a constant β_k, σθ/N for a linear one and sqrt(σθ / (|D|·N)) for a quadratic one;
    with one channel δ = 1 (nothing to balance).

    >>> round(frequency_threshold("LCL", 1.2, 10, 0.1, 10**6), 8)  # 0.1 · 0.176471 / 10
    0.00176471
    """
    th = theta(alpha, workers)
    if th == 0.0:
        return 1.0
    per_kind = {0: 1.0, 1: sigma * th / workers, 2: math.sqrt(sigma * th / (domain_size * workers))}
    return min(per_kind[int(e)] for e in resource_exponents(resources))


def refined_threshold(freqs: np.ndarray, resources: str, alpha: float, workers: int, sigma: float,
                      domain_size: int) -> float:
    """δ' for quadratic resources (end of Sec. 4.1.3): Eq. 16 with L̄_k predicted from the items found.

    ``freqs`` are the items collected with the Eq. 17 threshold; the untracked rest is assumed spread
    evenly over the other |D| − |I| items (the worst case for the load), so
    L̄_k = (Σ_I β_k(f) + (|D| − |I|)·β_k((1 − Σ_I f)/(|D| − |I|))) / N and β_k(δ'_k) = σ·θ·L̄_k.

    >>> f = np.array([0.1, 0.05])
    >>> refined_threshold(f, "LQL", 1.2, 10, 0.1, 10**6) > frequency_threshold("LQL", 1.2, 10, 0.1, 10**6)
    True
    """
    th = theta(alpha, workers)
    if th == 0.0:
        return 1.0
    rest = max(domain_size - len(freqs), 0)
    rest_mass = max(1.0 - float(np.sum(freqs)), 0.0)
    deltas = []
    for e in resource_exponents(resources):
        if e == 0:
            deltas.append(1.0)
            continue
        tail = rest * (rest_mass / rest) ** e if rest else 0.0
        mean_load = (float(np.sum(freqs ** e)) + tail) / workers
        deltas.append((sigma * th * mean_load) ** (1.0 / e))
    return float(min(deltas))


# -- evaluation metrics (Sec. 3.4, 5) -----------------------------------------------------------

def channel_loads(freqs: np.ndarray, channels: np.ndarray, workers: int, exponent: int) -> np.ndarray:
    """``L_k(i) = Σ_{p(d)=i} β_k(f(d))`` for every channel i, with β_k(x) = x ** exponent (Eq. 1, 3, 5)."""
    return np.bincount(channels, weights=np.asarray(freqs, dtype=np.float64) ** exponent, minlength=workers)


def resource_imbalance(freqs, channels, workers: int, resources: str = "LCL", alpha: float = 1.2) -> np.ndarray:
    """Per-resource relative imbalance ``b_k = r_k / α`` for k = s, c, n (Eq. 2, 4, 6, 11).

    Parameters
    ----------
    freqs : float array
        Frequency (or count: the ratio is scale-free) of every key of the domain.
    channels : int array
        Channel of each key under the partitioning function, in ``[0, workers)``.
    workers : int
        Number of channels N; an empty channel makes r_k infinite.
    resources, alpha : str, float
        Resource functions (``"LCL"`` ...) and the imbalance tolerance α (the same for every k).

    >>> resource_imbalance(np.array([3.0, 1, 1, 1]), np.array([0, 1, 1, 1]), 2, "LCL", 1.2).round(3).tolist()
    [0.833, 2.5, 0.833]
    """
    b = []
    for e in resource_exponents(resources):
        loads = channel_loads(freqs, channels, workers, e)
        with np.errstate(divide="ignore"):
            b.append(loads.max() / loads.min() / alpha)
    return np.array(b)


def relative_imbalance(freqs, channels, workers: int, resources: str = "LCL", alpha: float = 1.2) -> float:
    """Relative load imbalance ``b``: geometric mean of the three ``b_k`` (Eq. 11); ≤ 1 is within α.

    Inputs as :func:`resource_imbalance`.

    >>> round(relative_imbalance(np.array([3.0, 1, 1, 1]), np.array([0, 1, 1, 1]), 2), 3)
    1.202
    """
    return float(np.prod(resource_imbalance(freqs, channels, workers, resources, alpha)) ** (1 / 3))


def relative_migration(freqs, before, after, workers: int, resources: str = "LCL") -> float:
    """Relative migration cost ``m = M(p_t, p_t+1) / L̄_s`` (Eq. 9, 10, 12).

    Parameters
    ----------
    freqs : float array
        Frequency of every key of the domain.
    before, after : int arrays
        Channel of each key under the old and the new function.
    workers : int
        N of the new function: L̄_s = Σ β_s(f) / N is one new channel's fair share of state, what
        consistent hashing moves when a channel is added (m = 1).
    resources : str
        Only β_s (the first letter) matters.

    >>> round(relative_migration(np.full(10, 0.1), np.zeros(10, int), np.r_[np.ones(5, int), np.zeros(5, int)], 2), 3)
    1.0
    """
    beta_s = np.asarray(freqs, dtype=np.float64) ** resource_exponents(resources)[0]
    moved = float(beta_s[np.asarray(before) != np.asarray(after)].sum())
    return moved / (float(beta_s.sum()) / workers)


# -- construction kernels (Sec. 4.2) ------------------------------------------------------------
# Shared inputs: items in decreasing frequency order; ``loads_of`` (K, R) holds β_k(f) of each item
# for the K distinct non-constant balance exponents, ``weights`` their share in the geometric mean
# of Eq. 20 (constant resources are left out, Sec. 4.4); ``beta_s`` (R,) the state sizes, ``old``
# the channel each item had under p_t; ``m0`` the migration of items no longer tracked and
# ``mbar`` the ideal migration (Eq. 18).  Loads are updated incrementally in item order and each
# candidate's max/min comes from exact extremes, so the results equal the plain references below.
# Equal utilities go to the less loaded channel: while any channel is empty, Eq. 19's min is 0
# and every placement below the max ties; first-index tie-breaking would pile items up.

@numba.njit(inline="always")
def _utility(code, rho, gamma):
    if code == 0:
        return rho
    if code == 1:
        return rho + gamma
    if code == 2:
        return rho + math.log(1.0 + gamma)
    if code == 3:
        return rho * (1.0 + gamma)
    return rho * (1.0 + math.log(1.0 + gamma))


@numba.njit(inline="always")
def _penalty(spread, total, th, n_ch):
    """ρ_k of Eq. 19: max − min load over the allowed deviation θ·L̄_k."""
    return spread / (th * (total / n_ch)) if total > 0.0 else 0.0


@numba.njit(cache=True)
def _add_penalties(loads, total, add, weights, th, rho_out):
    """ρ after adding the loads ``add`` (K,) to each channel in turn, written to ``rho_out`` (N,)."""
    n_kinds, n_ch = loads.shape
    rho_out[:] = 1.0
    for k in range(n_kinds):
        row = loads[k]
        hi, lo1, lo2, at = -np.inf, np.inf, np.inf, -1
        for i in range(n_ch):  # max, and the two smallest (the min without channel l)
            v = row[i]
            hi = max(hi, v)
            if v < lo1:
                lo1, lo2, at = v, lo1, i
            elif v < lo2:
                lo2 = v
        for l in range(n_ch):
            v = row[l] + add[k]
            lo = min(lo2 if l == at else lo1, v)
            rho_out[l] *= _penalty(max(hi, v) - lo, total[k] + add[k], th, n_ch) ** weights[k]


@numba.njit(cache=True)
def _place(loads, total, add, l):
    for k in range(loads.shape[0]):
        loads[k, l] += add[k]
        total[k] += add[k]


@numba.njit(cache=True)
def _scan(loads_of, weights, beta_s, freqs, old, th, n_ch, m0, mbar, utility, assign):
    """Algorithm 2: place items in decreasing frequency order, each on its best channel."""
    n_kinds, n_items = loads_of.shape
    loads, total = np.zeros((n_kinds, n_ch)), np.zeros(n_kinds)
    rho = np.empty(n_ch)
    m = m0
    for r in range(n_items):
        add = loads_of[:, r].copy()
        _add_penalties(loads, total, add, weights, th, rho)
        best, best_u = -1, np.inf
        for l in range(n_ch):
            u = _utility(utility, rho[l], (m + (beta_s[r] if l != old[r] else 0.0)) / mbar)
            if u < best_u or (u == best_u and loads[0, l] < loads[0, best]):
                best, best_u = l, u
        assign[r] = best
        if best != old[r]:
            m += beta_s[r]
        _place(loads, total, add, best)


@numba.njit(cache=True)
def _redist(loads_of, weights, beta_s, freqs, old, th, n_ch, m0, mbar, utility, assign):
    """Algorithm 3: repeatedly place the (item, channel) with the best utility per frequency."""
    n_kinds, n_items = loads_of.shape
    loads, total = np.zeros((n_kinds, n_ch)), np.zeros(n_kinds)
    rho = np.empty(n_ch)
    placed = np.zeros(n_items, dtype=np.bool_)
    m = m0
    for _ in range(n_items):
        best_r, best_l, best_u = -1, -1, np.inf
        for r in range(n_items):
            if placed[r]:
                continue
            _add_penalties(loads, total, loads_of[:, r].copy(), weights, th, rho)
            for l in range(n_ch):
                u = _utility(utility, rho[l], (m + (beta_s[r] if l != old[r] else 0.0)) / mbar) / freqs[r]
                if u < best_u or (u == best_u and loads[0, l] < loads[0, best_l]):
                    best_r, best_l, best_u = r, l, u
        assign[best_r], placed[best_r] = best_l, True
        if best_l != old[best_r]:
            m += beta_s[best_r]
        _place(loads, total, loads_of[:, best_r].copy(), best_l)


@numba.njit(cache=True)
def _rho_of(loads, total, weights, th):
    n_ch = loads.shape[1]
    rho = 1.0
    for k in range(loads.shape[0]):
        rho *= _penalty(loads[k].max() - loads[k].min(), total[k], th, n_ch) ** weights[k]
    return rho


@numba.njit(cache=True)
def _extremes(row, top_val, top_at, bot_val, bot_at):
    """The three largest and three smallest loads of a row, with their channels (-1: none)."""
    top_val[:], bot_val[:], top_at[:], bot_at[:] = -np.inf, np.inf, -1, -1
    for i in range(row.shape[0]):
        v, a = row[i], i
        for s in range(3):
            if v > top_val[s]:
                v, top_val[s], a, top_at[s] = top_val[s], v, top_at[s], a
        v, a = row[i], i
        for s in range(3):
            if v < bot_val[s]:
                v, bot_val[s], a, bot_at[s] = bot_val[s], v, bot_at[s], a


@numba.njit(inline="always")
def _without(vals, at, i, j):
    """First of the sorted extremes that is neither channel i nor channel j."""
    for s in range(3):
        if at[s] != i and at[s] != j:
            return vals[s]
    return vals[2]  # ±inf padding: only i and j exist


@numba.njit(cache=True)
def _readj(loads_of, weights, beta_s, freqs, old, th, n_ch, m0, mbar, utility, max_moves, assign):
    """Algorithm 4: from the placement in ``assign``, apply the move or swap with the best gain.

    Only readjustments that lower ρ (Eq. 19–20) are candidates; among them the one with the best
    gain, the utility drop per frequency moved, is applied even when the gain is negative
    (Algorithm 4 starts g at −∞: "it only considers readjustments that reduce the imbalance, and
    only uses the utility function for picking the best among those", Sec. 4.2.4).  The search
    ends when no move or swap lowers ρ.  The gain is taken against the current placement's
    utility ("the utility values from different steps can be compared"), not against the
    pseudo-code's running ``u`` (set to 0 first and to each better candidate's utility).  Each
    item moves at most ``max_moves`` times (the c of Sec. 4.2.4).
    """
    n_kinds, n_items = loads_of.shape
    loads, total = np.zeros((n_kinds, n_ch)), np.zeros(n_kinds)
    m = m0
    for r in range(n_items):
        _place(loads, total, loads_of[:, r].copy(), assign[r])
        if assign[r] != old[r]:
            m += beta_s[r]
    moved = np.zeros(n_items, dtype=np.int64)
    top_val, bot_val = np.empty((n_kinds, 3)), np.empty((n_kinds, 3))
    top_at, bot_at = np.empty((n_kinds, 3), dtype=np.int64), np.empty((n_kinds, 3), dtype=np.int64)
    rho_now = _rho_of(loads, total, weights, th)
    u_now = _utility(utility, rho_now, m / mbar)
    while True:
        for k in range(n_kinds):
            _extremes(loads[k], top_val[k], top_at[k], bot_val[k], bot_at[k])
        best_g, best_1, best_2, best_j, best_rho, best_u, best_dm = -np.inf, -1, -1, -1, 0.0, 0.0, 0.0
        for d1 in range(n_items):
            if moved[d1] >= max_moves:
                continue
            i = assign[d1]
            for d2 in range(d1, n_items):  # d2 == d1: move d1 to any other channel; d2 > d1: swap them
                swap = d2 > d1
                if swap and (moved[d2] >= max_moves or assign[d2] == i):
                    continue
                for j in range(assign[d2], assign[d2] + 1) if swap else range(n_ch):
                    if j == i:
                        continue
                    rho = 1.0
                    for k in range(n_kinds):
                        shift = loads_of[k, d1] - (loads_of[k, d2] if swap else 0.0)
                        new_i, new_j = loads[k, i] - shift, loads[k, j] + shift
                        hi = max(_without(top_val[k], top_at[k], i, j), new_i, new_j)
                        lo = min(_without(bot_val[k], bot_at[k], i, j), new_i, new_j)
                        rho *= _penalty(hi - lo, total[k], th, n_ch) ** weights[k]
                    if rho >= rho_now:
                        continue
                    dm = 0.0  # Eq. 22: leaving the old channel costs, returning to it refunds
                    if old[d1] == i:
                        dm += beta_s[d1]
                    if old[d1] == j:
                        dm -= beta_s[d1]
                    if swap:
                        if old[d2] == j:
                            dm += beta_s[d2]
                        if old[d2] == i:
                            dm -= beta_s[d2]
                    u = _utility(utility, rho, (m + dm) / mbar)
                    df = abs(freqs[d1] - (freqs[d2] if swap else 0.0))
                    if df > 0.0 and (u_now - u) / df > best_g:
                        best_g, best_rho, best_u, best_dm = (u_now - u) / df, rho, u, dm
                        best_1, best_2, best_j = d1, (d2 if swap else -1), j
        if best_1 < 0:
            return
        i = assign[best_1]
        for k in range(n_kinds):
            shift = loads_of[k, best_1] - (loads_of[k, best_2] if best_2 >= 0 else 0.0)
            loads[k, i] -= shift
            loads[k, best_j] += shift
        assign[best_1] = best_j
        moved[best_1] += 1
        if best_2 >= 0:
            assign[best_2] = i
            moved[best_2] += 1
        m += best_dm
        rho_now, u_now = best_rho, best_u


# -- plain references for the kernels (tests compare) -------------------------------------------

def _rho_reference(loads, total, weights, th):
    n_ch = loads.shape[1]
    pens = [(loads[k].max() - loads[k].min()) / (th * (total[k] / n_ch)) if total[k] > 0 else 0.0
            for k in range(len(loads))]
    return math.prod(p ** w for p, w in zip(pens, weights))


def _utility_reference(code, rho, gamma):
    return [rho, rho + gamma, rho + math.log(1.0 + gamma), rho * (1.0 + gamma),
            rho * (1.0 + math.log(1.0 + gamma))][code]


def _greedy_reference(loads_of, weights, beta_s, freqs, old, th, n_ch, m0, mbar, utility, assign, pick_any):
    """Algorithms 2 (``pick_any=False``: items in order) and 3 (any unplaced item, utility / f)."""
    loads, total = np.zeros((len(loads_of), n_ch)), np.zeros(len(loads_of))
    m, todo = m0, list(range(loads_of.shape[1]))
    while todo:
        options = []
        for r in (todo if pick_any else todo[:1]):
            for l in range(n_ch):
                trial = loads.copy()
                trial[:, l] += loads_of[:, r]
                u = _utility_reference(utility, _rho_reference(trial, total + loads_of[:, r], weights, th),
                                       (m + (beta_s[r] if l != old[r] else 0.0)) / mbar)
                options.append((u / freqs[r] if pick_any else u, loads[0, l], r, l))
        _, _, r, l = min(options, key=lambda x: x[:2])  # the first of the best
        assign[r] = l
        m += beta_s[r] if l != old[r] else 0.0
        loads[:, l] += loads_of[:, r]
        total += loads_of[:, r]
        todo.remove(r)


def _readj_reference(loads_of, weights, beta_s, freqs, old, th, n_ch, m0, mbar, utility, max_moves, assign):
    """Algorithm 4, every candidate's loads recomputed from a copy: the best gain among the
    readjustments that lower ρ, negative gains included."""
    loads, total, m = np.zeros((len(loads_of), n_ch)), np.zeros(len(loads_of)), m0
    for r in range(loads_of.shape[1]):
        loads[:, assign[r]] += loads_of[:, r]
        total += loads_of[:, r]
        m += beta_s[r] if assign[r] != old[r] else 0.0
    moved = np.zeros(len(assign), dtype=np.int64)
    rho_now = _rho_reference(loads, total, weights, th)
    u_now = _utility_reference(utility, rho_now, m / mbar)
    zero = np.zeros(len(loads_of))
    while True:
        best = None
        for d1 in np.flatnonzero(moved < max_moves):
            i = assign[d1]
            options = [(-1, j) for j in range(n_ch) if j != i]
            options += [(d2, assign[d2]) for d2 in range(d1 + 1, len(assign))
                        if moved[d2] < max_moves and assign[d2] != i]
            for d2, j in options:
                shift = loads_of[:, d1] - (loads_of[:, d2] if d2 >= 0 else zero)
                trial = loads.copy()
                trial[:, i] -= shift
                trial[:, j] += shift
                rho = _rho_reference(trial, total, weights, th)
                if rho >= rho_now:
                    continue
                b2 = beta_s[d2] if d2 >= 0 else 0.0
                o2 = old[d2] if d2 >= 0 else -1
                dm = beta_s[d1] * (old[d1] == i) - beta_s[d1] * (old[d1] == j) + b2 * (o2 == j) - b2 * (o2 == i)
                u = _utility_reference(utility, rho, (m + dm) / mbar)
                df = abs(freqs[d1] - (freqs[d2] if d2 >= 0 else 0.0))
                if df > 0 and (u_now - u) / df > (best[0] if best else -math.inf):
                    best = ((u_now - u) / df, d1, d2, j, trial, rho, u, dm)
        if best is None:
            return
        _, d1, d2, j, loads, rho_now, u_now, dm = best
        if d2 >= 0:
            assign[d2] = assign[d1]
            moved[d2] += 1
        assign[d1] = j
        moved[d1] += 1
        m += dm


# -- the scheme ---------------------------------------------------------------------------------

class GedikPartitioner(Scheme):
    """Base of ``gedik-scan``/``gedik-redist``/``gedik-readj``; subclasses pick :attr:`algorithm`.

    Parameters
    ----------
    workers : int
        Number of channels N.
    seed : int
        Seeds the consistent hash.
    alpha : float
        Imbalance tolerance α > 1, the same for every resource (Table 1: 1.2).
    resources : str
        β_s β_c β_n as letters C/L/Q (Table 1: ``"LCL"``).
    sigma : float
        Frequency threshold scaler σ ∈ (0, 1] (Sec. 4.1.4: 0.1).
    utility : str
        One of A, APM, APLM, ATM, ATLM (Sec. 4.3: APM).
    domain_size : int
        |D|, used by the quadratic δ (Eq. 17) and its refinement (Table 1: 10⁶).
    window : int
        Sliding window of the lossy counter, in messages.
    eps_ratio : float
        Lossy counting error ε as a fraction of δ (Manku & Motwani's ε = δ/10).  The sketch is
        sized for δ at N + 1 channels so that the usual one-channel scale-out finds every item.
    vnodes : int
        Replicas per channel on the consistent-hash ring (Sec. 5.5: 1000).
    max_moves : int
        readj only: how often one item may be readjusted (Sec. 4.2.4: c = 5).
    """

    coupling = "global"
    adaptive = True
    algorithm: ClassVar[str] = ""

    def __init__(self, workers: int, seed: int = 0, alpha: float = 1.2, resources: str = "LCL",
                 sigma: float = 0.1, utility: str = "APM", domain_size: int = 10**6, window: int = 10**6,
                 eps_ratio: float = 0.1, vnodes: int = 1000, max_moves: int = 5):
        resource_exponents(resources)
        if not alpha > 1.0:
            raise ValueError(f"alpha must be > 1 (max/min load tolerated), got {alpha}")
        if not 0.0 < sigma <= 1.0:
            raise ValueError(f"sigma must be in (0, 1], got {sigma}")
        if utility not in UTILITIES:
            raise ValueError(f"utility must be one of {', '.join(UTILITIES)}, got {utility!r}")
        if not 0.0 < eps_ratio < 1.0:
            raise ValueError(f"eps_ratio must be in (0, 1), got {eps_ratio}")
        self.alpha, self.resources, self.sigma, self.utility = alpha, resources, sigma, utility
        self.domain_size, self.window, self.eps_ratio = domain_size, window, eps_ratio
        self.vnodes, self.max_moves = vnodes, max_moves
        super().__init__(workers, seed)

    def reset(self) -> None:
        self._points, self._owners = ring(self.workers, self.vnodes, self.seed)
        self._table_keys, self._table_workers = _EMPTY_KEYS, _EMPTY_WORKERS
        self._counter = SlidingLossyCounter(self.window, self._epsilon(self.workers))

    def _threshold(self, workers: int) -> float:
        return frequency_threshold(self.resources, self.alpha, workers, self.sigma, self.domain_size)

    def _epsilon(self, workers: int) -> float:
        return min(self.eps_ratio * self._threshold(workers + 1), 1.0)

    # -- routing -------------------------------------------------------------------------------
    def candidates(self, fp: int) -> np.ndarray:
        return self._route(np.array([fp], dtype=np.uint64))

    def _route(self, fps: np.ndarray) -> np.ndarray:
        return lookup(fps, self._table_keys, self._table_workers, self._points, self._owners, self.seed)

    def route_many(self, fps, now=None) -> np.ndarray:
        fps = np.ascontiguousarray(fps, dtype=np.uint64)
        self._counter.update(fps)  # the splitter observes the stream (Sec. 4.5)
        return self._route(fps)

    def table_size(self) -> int:
        return len(self._table_keys)

    @property
    def counter(self) -> SlidingLossyCounter:
        """The sliding lossy counter fed by :meth:`route_many`."""
        return self._counter

    # -- adaptation ----------------------------------------------------------------------------
    def tracked(self, workers: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Items to map explicitly for ``workers`` channels and their estimated frequencies.

        Frequencies are the lossy counts over the counter's n (never overestimates); an item is
        reported when ``f ≥ δ − ε``, so no item with true frequency ≥ δ is missed (Sec. 4.1.2).
        Most frequent first, ties by key.
        """
        workers = int(workers or self.workers)
        keys, counts, _, n, eps = self._counter.entries()
        if n == 0 or workers == 1:
            return _EMPTY_KEYS, np.empty(0)
        freqs = counts / n
        delta = self._threshold(workers)
        if 2 in resource_exponents(self.resources):
            delta = refined_threshold(freqs[freqs >= delta - eps], self.resources, self.alpha, workers,
                                      self.sigma, self.domain_size)
        hit = freqs >= delta - eps
        keys, freqs = keys[hit], freqs[hit]
        order = np.lexsort((keys, -freqs))
        return keys[order], freqs[order]

    def _frequency_of(self, keys: np.ndarray) -> np.ndarray:
        """Current estimate for any keys (0 for those the counter no longer holds)."""
        known, counts, _, n, _ = self._counter.entries()
        if len(known) == 0:
            return np.zeros(len(keys))
        at = np.minimum(np.searchsorted(known, keys), len(known) - 1)
        return np.where(known[at] == keys, counts[at] / n, 0.0)

    def _ring_for(self, workers: int) -> tuple[np.ndarray, np.ndarray]:
        return (self._points, self._owners) if workers == self.workers else ring(workers, self.vnodes, self.seed)

    def _hashed(self, keys: np.ndarray, new_ring: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """Channels of ``keys`` under a consistent hash alone (no explicit table)."""
        return lookup(keys, _EMPTY_KEYS, _EMPTY_WORKERS, *new_ring, self.seed)

    def build(self, workers: int, new_ring: tuple[np.ndarray, np.ndarray] | None = None):
        """Construct the explicit hash H_p for ``workers`` channels from p_t and the tracked items.

        Returns the new table (keys sorted, channels).  ``new_ring`` is H_c^(t+1), the ring for
        ``workers`` (Sec. 4.2); items tracked before but not now (D_o) fall back to it.
        """
        new_ring = new_ring or self._ring_for(workers)
        keys, freqs = self.tracked(workers)
        if len(keys) == 0:
            return _EMPTY_KEYS, _EMPTY_WORKERS
        exps = resource_exponents(self.resources)
        dropped = np.setdiff1d(self._table_keys, keys)  # D_o
        beta_dropped = self._frequency_of(dropped) ** exps[0]
        moved_dropped = self._route(dropped) != self._hashed(dropped, new_ring)
        beta_s = freqs ** exps[0]
        m0 = float(beta_dropped[moved_dropped].sum())
        mbar = (float(beta_s.sum()) + float(beta_dropped.sum())) / workers  # over D_a (Eq. 18)
        balanced, counts = np.unique(exps[exps > 0], return_counts=True)
        loads_of = np.ascontiguousarray(freqs[None, :] ** balanced[:, None], dtype=np.float64)
        weights = counts / counts.sum()
        old = self._route(keys)
        args = (loads_of, weights, beta_s, freqs, old, theta(self.alpha, workers), workers, m0, mbar,
                UTILITIES.index(self.utility))
        if self.algorithm == "readj":
            # Tracked items start where p_t had them; channels that no longer exist hand theirs to
            # the new ring (Sec. 4.2.4).
            assign = np.where(old < workers, old, self._hashed(keys, new_ring))
            _readj(*args, self.max_moves, assign)
        else:
            assign = np.empty(len(keys), dtype=np.int64)
            (_scan if self.algorithm == "scan" else _redist)(*args, assign)
        order = np.argsort(keys)
        return keys[order], assign[order]

    def rebalance(self, stats: Stats | None, workers: int | None = None) -> Plan:
        """Build p_(t+1) for the current N or for ``workers`` channels from the lossy counter.

        The plan moves every known key whose channel changes: table entries, and when N changes
        also the keys held by the lossy counter and those in ``stats.keys`` (``stats`` may be None).
        """
        workers = int(workers or self.workers)
        began = time.perf_counter()
        new_ring = self._ring_for(workers)
        table_keys, table_workers = self.build(workers, new_ring)
        build_seconds = time.perf_counter() - began
        known = np.union1d(self._table_keys, table_keys)
        if workers != self.workers:  # the ring changes too: every key we know of may move
            known = np.union1d(known, self._counter.entries()[0])
            if stats is not None:
                known = np.union1d(known, np.asarray(stats.keys, dtype=np.uint64))
        before, after = self._route(known), lookup(known, table_keys, table_workers, *new_ring, self.seed)
        changed = before != after
        moves = np.empty(int(changed.sum()), dtype=MOVE_DTYPE)
        moves["key"], moves["src"], moves["dst"] = known[changed], before[changed], after[changed]
        return Plan(table_keys=table_keys, table_workers=table_workers, moves=moves, workers=workers,
                    build_seconds=build_seconds)

    def apply(self, plan: Plan) -> None:
        if plan.workers != self.workers:
            self.workers = int(plan.workers)
            self._points, self._owners = ring(self.workers, self.vnodes, self.seed)
            self._counter.retune(self._epsilon(self.workers))
        order = np.argsort(plan.table_keys)
        self._table_keys = np.ascontiguousarray(plan.table_keys[order], dtype=np.uint64)
        self._table_workers = np.ascontiguousarray(plan.table_workers[order], dtype=np.int64)


@register
class GedikScan(GedikPartitioner):
    """Gedik's partitioning function built by *scan* (Algorithm 2, O(R·N)).

    >>> from skewbench.hashing import fingerprints
    >>> fps = fingerprints(np.random.default_rng(0).zipf(1.2, 20_000) % 5_000)
    >>> scheme = GedikScan(workers=4, seed=0)
    >>> _ = scheme.route_many(fps)
    >>> plan = scheme.rebalance(None, workers=5)
    >>> scheme.apply(plan)
    >>> plan.workers, scheme.table_size() > 0, bool(set(plan.moves["dst"].tolist()) <= set(range(5)))
    (5, True, True)
    """

    name = "gedik-scan"
    algorithm = "scan"


@register
class GedikRedist(GedikPartitioner):
    """Gedik's partitioning function built by *redist* (Algorithm 3, O(R²·N)): any unplaced item
    may go next, ranked by utility per unit of frequency."""

    name = "gedik-redist"
    algorithm = "redist"


@register
class GedikReadj(GedikPartitioner):
    """Gedik's partitioning function built by *readj* (Algorithm 4): keep p_t's placement and apply
    the moves and swaps with the best utility gain while they lower the imbalance."""

    name = "gedik-readj"
    algorithm = "readj"
