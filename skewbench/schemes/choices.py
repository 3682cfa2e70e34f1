"""D-Choices and W-Choices: more than two choices for the head of the key distribution.

Nasir, De Francisci Morales, Kourtellis & Serafini, "When two choices are not enough: balancing at
scale in distributed stream processing", ICDE 2016.  PKG (two choices) balances only while the
most frequent key has p₁ ≲ 2/W; beyond that its two workers are overloaded.  Each source
therefore finds the *head* — keys of frequency ≥ θ — with a SpaceSaving sketch
(:mod:`skewbench.schemes.space_saving`) and gives head keys more choices, while the *tail* keeps
PKG's two choices:

* **D-Choices** (``dchoices``): a head key goes to the least loaded of its ``d`` distinct hashed
  workers, with the smallest ``d`` for which the expected load of the workers covered by the head
  stays within ε of their fair share (:func:`choices_needed`);
* **W-Choices** (``wchoices``): a head key goes to the least loaded of all W workers.

Choices of this module (the paper's text is not in the seeds; see also DESIGN.md §1):

* θ defaults to 1/(5W), PKG's Theorem 4.1 bound under which two choices suffice (the public
  simulator's ``2 / (W · 10)``).
* A key is head when its *guaranteed* count ``count − error`` is ≥ θ·n, n the messages this
  source has counted; the public simulator used ``count + error`` with a count that already
  includes the error, flagging almost every tracked key at W ≥ 20.
* The sketch has ``capacity = ⌈5/θ⌉`` counters by default (error ≤ θ·n/5); the public
  simulator's 100 counters cannot certify any key of frequency θ once 1/θ > 100.
* No key is head during the first ``warmup = ⌈1/θ⌉`` messages: before that every key seen has
  empirical frequency ≥ θ.
* The decision for a message uses the sketch *before* counting that message, so
  :meth:`candidates` is exactly the set the next route picks from.
* D-Choices recomputes ``d`` every ``refresh`` messages (the paper's per-message recomputation is
  O(capacity) each); ``d`` may also be fixed by a parameter.  ``d ≥ W`` means W-Choices.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from skewbench.hashing import distinct_choices, distinct_choices_into, two_choices
from skewbench.scheme import Scheme, as_fps, register
from skewbench.schemes.greedy import least_loaded
from skewbench.schemes.space_saving import (C_COUNT, C_ERROR, M_N, M_USED, ReferenceSketch, SpaceSaving, ss_find,
                                            ss_offer_at)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


# -- how many choices (the D-Choices condition) -------------------------------------------------

@numba.njit(cache=True)
def _choices_needed(h, p_head, p_top, workers, epsilon):
    if h == 0 or workers <= 2:
        return min(2, workers)
    p_tail = max(1.0 - p_head, 0.0)
    d = max(2, min(workers, int(math.ceil(p_top * workers - 1e-9))))  # the top key needs p₁·W workers
    while d < workers:
        b_top = d / workers  # share of workers among the top key's d distinct choices
        b_head = 1.0 - (1.0 - b_top) ** h  # ... expected, among the h head keys' choices
        head_ok = p_head + p_tail * b_head ** 2 <= b_head + epsilon
        top_ok = p_top + (p_head - p_top) * b_top ** d + p_tail * b_top ** 2 <= b_top + epsilon
        if head_ok and top_ok:
            return d
        d += 1
    return workers


def choices_needed(head_freqs, workers: int, epsilon: float = 1e-3) -> int:
    """The smallest d (2 ≤ d ≤ W) for which the head's workers are not expected to be overloaded.

    With ``b₁`` the share of workers among the top key's d choices and ``b_h`` the expected share
    among the h head keys' choices, p_H the head's total frequency, p₁ the top key's and
    p_T = 1 − p_H, d must satisfy

    * the whole head: ``p_H + p_T · b_h² ≤ b_h + ε`` — the load landing on the covered workers
      (all of the head, plus tail keys with both choices inside) is at most their fair share;
    * the top key: ``p₁ + (p_H − p₁) · b₁^d + p_T · b₁² ≤ b₁ + ε``;

    starting from ``d = max(2, ⌈p₁·W⌉)`` (a key needs p₁·W workers to get a fair share each).
    The paper takes ``b(x) = 1 − ((W − 1)/W)^x`` for x independent hashes; our choices are
    distinct (:func:`skewbench.hashing.distinct_choices`), so ``b₁ = d/W`` exactly and
    ``b_h = 1 − (1 − d/W)^h``.

    Parameters
    ----------
    head_freqs : float array
        Frequencies of the head keys (empty: d = 2).
    workers : int
        W.
    epsilon : float
        Tolerance ε on a share of the load.

    >>> choices_needed([0.2], 10)  # a key with a fifth of the stream: 3 of 10 workers
    3
    >>> choices_needed([0.5], 10)  # half the stream on one key, the rest spread thin: all of them
    10
    >>> choices_needed([0.01], 50)  # below 1/W: two choices are enough
    2
    """
    f = np.asarray(head_freqs, dtype=np.float64)
    if f.size == 0:
        return min(2, int(workers))
    return int(_choices_needed(f.size, float(f.sum()), float(f.max()), int(workers), float(epsilon)))


@numba.njit(cache=True)
def _head_d(cnt, meta, theta, warmup, workers, epsilon):
    """``d`` from the sketch's current head (guaranteed counts ≥ θ·n)."""
    n = meta[M_N]
    h, total, top = 0, 0.0, 0.0
    if n >= warmup:
        for c in range(meta[M_USED]):
            sure = cnt[C_COUNT, c] - cnt[C_ERROR, c]
            if sure > 0 and sure >= theta * n:
                h += 1
                total += sure / n
                top = max(top, sure / n)
    return _choices_needed(h, total, top, workers, epsilon)


# -- routing ------------------------------------------------------------------------------------

@numba.njit(inline="always")
def _is_head(c, theta, warmup, cnt, meta):
    """Whether the key of counter ``c`` (-1: untracked) is head now."""
    n = meta[M_N]
    if n < warmup or c < 0:
        return False
    sure = cnt[C_COUNT, c] - cnt[C_ERROR, c]
    return sure > 0 and sure >= theta * n


@numba.njit(cache=True)
def is_head(fp, theta, warmup, cnt, index_keys, index_pos, meta):
    """Whether the next message of ``fp`` is routed as a head key (pure)."""
    return _is_head(ss_find(index_keys, index_pos, fp), theta, warmup, cnt, meta)


@numba.njit(cache=True)
def _cached_choices(fps, i, workers, d, seed, cache_keys, cache_d, cache_choices, cache_size):
    """Row of the head-choice cache holding ≥ d choices of ``fps[i]`` (fills it if needed).

    Column j of :func:`distinct_choices` does not depend on d, so a row computed for a larger d
    serves a smaller one.  The cache is emptied when half full (the head changed a lot).
    """
    fp = fps[i]
    mask = cache_keys.shape[0] - 1
    if 2 * cache_size[0] >= cache_keys.shape[0]:
        cache_d[:] = 0
        cache_size[0] = 0
    s = np.int64(((fp * _GOLDEN) >> np.uint64(32)) & np.uint64(mask))
    while cache_d[s] > 0 and cache_keys[s] != fp:
        s = (s + 1) & mask
    if cache_d[s] == 0:
        cache_size[0] += 1
        cache_keys[s] = fp
    if cache_d[s] < d:
        distinct_choices_into(fps[i:i + 1], workers, d, seed, cache_choices[s:s + 1, :d])
        cache_d[s] = d
    return s


@numba.njit(inline="always")
def _least_loaded_of(loads, choices, d):
    best = choices[0]
    for j in range(1, d):
        if loads[choices[j]] < loads[best]:
            best = choices[j]
    return best


@numba.njit(cache=True)
def _route(fps, workers, seed, all_workers, theta, warmup, refresh, epsilon, fixed_d, d_now, loads,
           keys, cnt, bkt, index_keys, index_pos, meta,
           cache_keys, cache_d, cache_choices, cache_size, out):
    for i in range(fps.shape[0]):
        fp = fps[i]
        c = ss_find(index_keys, index_pos, fp)  # looked up once: for the decision and the count
        if _is_head(c, theta, warmup, cnt, meta):
            if all_workers or d_now[0] >= workers:
                w = least_loaded(loads)
            else:
                row = _cached_choices(fps, i, workers, d_now[0], seed, cache_keys, cache_d, cache_choices,
                                      cache_size)
                w = _least_loaded_of(loads, cache_choices[row], d_now[0])
        else:
            a, b = two_choices(fp, workers, seed)
            w = b if loads[b] < loads[a] else a
        loads[w] += 1.0
        out[i] = w
        ss_offer_at(keys, cnt, bkt, index_keys, index_pos, meta, fp, c)
        if not all_workers and fixed_d == 0 and meta[M_N] % refresh == 0:
            d_now[0] = _head_d(cnt, meta, theta, warmup, workers, epsilon)


def route_reference(fps, workers: int, seed: int, all_workers: bool, theta: float, warmup: int, refresh: int,
                    epsilon: float, fixed_d: int, capacity: int) -> np.ndarray:
    """Plain-Python reference of :func:`_route` from an empty state (dict sketch, no choice cache)."""
    loads = np.zeros(workers)
    sketch, d = ReferenceSketch(capacity), (min(fixed_d, workers) if fixed_d else 2)
    out = np.empty(len(fps), dtype=np.int64)
    for i, fp in enumerate(int(x) for x in as_fps(fps)):
        count, error = sketch.get(fp) if sketch.n >= warmup else (0, 0)
        one = np.array([fp], dtype=np.uint64)
        if count - error > 0 and count - error >= theta * sketch.n:
            choices = np.arange(workers) if all_workers or d >= workers else distinct_choices(one, workers, d, seed)[0]
        else:
            choices = distinct_choices(one, workers, 2, seed)[0]
        out[i] = choices[np.argmin(loads[choices])]  # first minimum in choice order
        loads[out[i]] += 1.0
        sketch.offer(fp)
        if not all_workers and not fixed_d and sketch.n % refresh == 0:
            sure = np.array([c - e for c, e in sketch.entries().values()], dtype=np.float64)
            head = sure[(sure > 0) & (sure >= theta * sketch.n)] / sketch.n if sketch.n >= warmup else sure[:0]
            d = choices_needed(head, workers, epsilon)
    return out


# -- the schemes --------------------------------------------------------------------------------

@register
class DChoices(Scheme):
    """D-Choices (Nasir et al., ICDE 2016): head keys get d choices, the tail PKG's two.

    Parameters
    ----------
    workers, seed : int
        As every scheme.
    theta : float, optional
        Head threshold on a key's frequency; default 1/(5W).
    capacity : int, optional
        SpaceSaving counters per source; default ⌈5/θ⌉.
    epsilon : float
        Tolerance of the d condition (:func:`choices_needed`); default 10⁻³, the public
        simulator's.
    d : int, optional
        Fix the number of head choices instead of computing it.
    refresh : int
        Messages between recomputations of d.
    warmup : int, optional
        Messages before any key can be head; default ⌈1/θ⌉.

    >>> from skewbench.hashing import fingerprints
    >>> ids = np.random.default_rng(0).zipf(2.0, 50_000)
    >>> dc = DChoices(workers=20, seed=1)
    >>> routes = dc.route_many(fingerprints(ids))
    >>> dc.head_choices, len(np.unique(routes[ids == 1]))  # the top key (p₁ ≈ 0.6) is spread over d workers
    (13, 13)
    """

    name = "dchoices"
    splits_keys = True
    state_everywhere = True  # which keys are head, and so their choices, differ per source and over time
    all_workers = False

    def __init__(self, workers: int, seed: int = 0, theta: float | None = None, capacity: int | None = None,
                 epsilon: float = 1e-3, d: int | None = None, refresh: int = 1000, warmup: int | None = None):
        self.theta, self.capacity, self.epsilon, self.d = theta, capacity, epsilon, d
        self.refresh, self.warmup = refresh, warmup
        super().__init__(workers, seed)

    def reset(self) -> None:
        w = self.workers
        self._theta = float(self.theta) if self.theta is not None else 1.0 / (5 * w)
        if not 0 < self._theta <= 1:
            raise ValueError(f"theta must be in (0, 1], got {self.theta}")
        if int(self.refresh) < 1:
            raise ValueError(f"refresh must be >= 1, got {self.refresh}")
        if self.d is not None and int(self.d) < 1:
            raise ValueError(f"d must be >= 1, got {self.d}")
        self._warmup = int(self.warmup) if self.warmup is not None else math.ceil(1 / self._theta)
        self._sketch = SpaceSaving(self.capacity if self.capacity is not None else math.ceil(5 / self._theta))
        self._loads = np.zeros(w, dtype=np.float64)
        self._fixed_d = min(int(self.d), w) if self.d is not None else 0
        self._d = np.array([self._fixed_d or min(2, w)], dtype=np.int64)
        slots = 1 << max(4, math.ceil(math.log2(2 / self._theta)))
        width = 0 if self.all_workers else w
        self._cache_keys = np.zeros(slots, dtype=np.uint64)
        self._cache_d = np.zeros(slots, dtype=np.int64)
        self._cache_choices = np.zeros((slots, width), dtype=np.int64)
        self._cache_size = np.zeros(1, dtype=np.int64)

    @property
    def loads(self) -> np.ndarray:
        """This source's load estimate per worker (messages it sent there)."""
        return self._loads

    @property
    def head_choices(self) -> int:
        """Current number of choices of a head key, d (W for W-Choices)."""
        return self.workers if self.all_workers else int(self._d[0])

    @property
    def sketch(self) -> SpaceSaving:
        return self._sketch

    def head(self) -> np.ndarray:
        """Fingerprints this source currently routes as head keys."""
        if self._sketch.n < self._warmup:
            return np.empty(0, dtype=np.uint64)
        return self._sketch.heavy(self._theta)[0]

    def _head_now(self, fp: int) -> bool:
        sk = self._sketch
        return bool(is_head(np.uint64(fp), self._theta, self._warmup, sk._cnt, sk._index_keys, sk._index_pos,
                            sk._meta))

    def candidates(self, fp: int) -> np.ndarray:
        w = self.workers
        if w == 1:
            return np.zeros(1, dtype=np.int64)
        one = np.array([fp], dtype=np.uint64)
        if not self._head_now(fp):
            return distinct_choices(one, w, 2, self.seed)[0]
        d = self.head_choices
        if d >= w:
            return np.arange(w, dtype=np.int64)
        return distinct_choices(one, w, d, self.seed)[0]

    def route_many(self, fps, now=None) -> np.ndarray:
        fps = as_fps(fps)
        if self.workers == 1:
            self._loads[0] += fps.shape[0]
            self._sketch.update(fps)
            return np.zeros(fps.shape[0], dtype=np.int64)
        out = np.empty(fps.shape[0], dtype=np.int64)
        _route(fps, self.workers, self.seed & 0xFFFFFFFF, self.all_workers, self._theta, self._warmup,
               int(self.refresh), float(self.epsilon), self._fixed_d, self._d, self._loads, *self._sketch.arrays(),
               self._cache_keys, self._cache_d, self._cache_choices, self._cache_size, out)
        return out

    def merge(self, other: DChoices) -> DChoices:
        """Sum the load estimates (the sketches stay per source)."""
        merged = self.spawn()
        merged._loads = self._loads + other._loads
        return merged


@register
class WChoices(DChoices):
    """W-Choices (Nasir et al., ICDE 2016): head keys go to the least loaded of all W workers.

    Parameters as :class:`DChoices` (``epsilon``, ``d`` and ``refresh`` are unused).

    >>> from skewbench.hashing import fingerprints
    >>> ids = np.random.default_rng(0).zipf(2.0, 50_000)
    >>> wc = WChoices(workers=20, seed=1)
    >>> routes = wc.route_many(fingerprints(ids))
    >>> len(np.unique(routes[ids == 1]))  # the top key reaches every worker
    20
    """

    name = "wchoices"
    all_workers = True
