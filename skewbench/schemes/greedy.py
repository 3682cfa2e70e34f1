"""On-Greedy and Off-Greedy: the routing-table baselines of the PKG paper (Nasir et al., ICDE 2015, Sec. V-B).

* *On-Greedy* — "online greedy algorithm that picks the least loaded worker to handle a new key":
  at a key's first message the source sends it to its least loaded worker (any of W) and
  remembers the choice.
* *Off-Greedy* — "sorts the keys by decreasing frequency and executes On-Greedy": knowing every
  key's total count up front (:meth:`OffGreedy.fit`), keys are placed heaviest first on the least
  loaded worker, i.e. Graham's LPT rule for makespan (max load ≤ (4/3 − 1/(3W))·OPT).  The paper
  calls this an unfair comparison for online schemes.

Both never split keys.  Ties go to the lowest worker index.
"""

from __future__ import annotations

import copy
import heapq
import time

import numba
import numpy as np

from skewbench.hashing import choice_hash
from skewbench.scheme import Scheme, Stats, as_fps, register
from skewbench.schemes.potc import KeyTable, run_growing, table_slot


@numba.njit(inline="always")
def least_loaded(loads):
    """Index of the smallest load, the lowest index on ties."""
    best = 0
    for w in range(1, loads.shape[0]):
        if loads[w] < loads[best]:
            best = w
    return best


# -- On-Greedy ----------------------------------------------------------------------------------

@numba.njit(cache=True)
def _route_on_greedy(fps, start, keys, vals, size, loads, out):
    for i in range(start, fps.shape[0]):
        fp = fps[i]
        s = table_slot(keys, vals, fp)
        w = vals[s]
        if w < 0:  # a new key: the least loaded worker, for good
            w = least_loaded(loads)
            keys[s], vals[s] = fp, w
            size[0] += 1
        loads[w] += 1.0
        out[i] = w
        if 2 * size[0] > keys.shape[0]:
            return i + 1
    return fps.shape[0]


def route_on_greedy_reference(fps, table: dict, loads: np.ndarray) -> np.ndarray:
    """Plain-Python reference for the On-Greedy kernel (updates ``table`` and ``loads``)."""
    out = np.empty(len(fps), dtype=np.int64)
    for i, fp in enumerate(int(x) for x in as_fps(fps)):
        if fp not in table:
            table[fp] = int(np.argmin(loads))  # first minimum: lowest index
        out[i] = table[fp]
        loads[out[i]] += 1.0
    return out


@register
class OnGreedy(Scheme):
    """On-Greedy (PKG paper, Sec. V-B): a new key goes to this source's least loaded worker and stays.

    :meth:`candidates` is every worker for a key this source has not seen, else its table entry.

    >>> from skewbench.hashing import fingerprints
    >>> on = OnGreedy(workers=3)
    >>> on.route_many(fingerprints(np.array([7, 7, 7, 8, 9, 8]))).tolist()
    [0, 0, 0, 1, 2, 1]
    """

    name = "on-greedy"
    state_everywhere = True  # each source places a new key on its own least loaded worker

    def reset(self) -> None:
        self._loads = np.zeros(self.workers, dtype=np.float64)
        self._table = KeyTable()

    @property
    def loads(self) -> np.ndarray:
        """This source's load estimate per worker (messages it sent there)."""
        return self._loads

    def candidates(self, fp: int) -> np.ndarray:
        w = self._table.get(fp)
        return np.array([w], dtype=np.int64) if w >= 0 else np.arange(self.workers, dtype=np.int64)

    def route_many(self, fps, now=None) -> np.ndarray:
        return run_growing(_route_on_greedy, self._table, as_fps(fps), self._loads)

    def table_size(self) -> int:
        return len(self._table)


# -- Off-Greedy ---------------------------------------------------------------------------------

@numba.njit(cache=True)
def _lpt(weights, workers, out):
    """Graham's LPT: items already in decreasing weight order, each to the least loaded worker."""
    loads = np.zeros(workers)
    for i in range(weights.shape[0]):
        w = least_loaded(loads)
        out[i] = w
        loads[w] += weights[i]
    return loads


def lpt(weights: np.ndarray, workers: int) -> tuple[np.ndarray, np.ndarray]:
    """Worker of each item (given in decreasing weight order) and the final loads."""
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    out = np.empty(weights.shape[0], dtype=np.int64)
    loads = _lpt(weights, int(workers), out)
    return out, loads


def lpt_reference(weights, workers: int) -> tuple[np.ndarray, np.ndarray]:
    """LPT with a heap of ``(load, worker)`` — ties to the lowest index, like the kernel."""
    heap = [(0.0, w) for w in range(workers)]
    out = np.empty(len(weights), dtype=np.int64)
    for i, x in enumerate(weights):
        load, w = heapq.heappop(heap)
        out[i] = w
        heapq.heappush(heap, (load + float(x), w))
    loads = np.zeros(workers)
    for load, w in heap:
        loads[w] = load
    return out, loads


def heaviest_first(keys: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Order of keys by decreasing weight, ties by increasing fingerprint (deterministic)."""
    return np.lexsort((as_fps(keys), -np.asarray(weights, dtype=np.float64)))


@numba.njit(cache=True)
def _route_table_or_hash(fps, keys, vals, workers, seed, out):
    for i in range(fps.shape[0]):
        w = vals[table_slot(keys, vals, fps[i])]
        out[i] = w if w >= 0 else np.int64(choice_hash(fps[i], seed, 0) % np.uint64(workers))


@numba.njit(cache=True)
def _fill(keys, vals, size, new_keys, new_vals):
    for i in range(new_keys.shape[0]):
        s = table_slot(keys, vals, new_keys[i])
        if vals[s] < 0:
            size[0] += 1
        keys[s], vals[s] = new_keys[i], new_vals[i]


@register
class OffGreedy(Scheme):
    """Off-Greedy (PKG paper, Sec. V-B): LPT over the whole stream's key counts, then table lookup.

    :meth:`fit` takes every key's total count (times its cost, if given) and places keys heaviest
    first on the least loaded worker.  Keys absent from the fit are hashed (key grouping,
    ``h_0 mod W``).  The fitted table is shared knowledge: :meth:`spawn` carries it to the other
    sources.

    >>> from skewbench.scheme import Stats
    >>> off = OffGreedy(workers=2)
    >>> off.fit(Stats(keys=np.array([1, 2, 3, 4], dtype=np.uint64), counts=np.array([5.0, 4, 3, 3]),
    ...               loads=np.zeros(2)))
    >>> off.route_many(np.array([1, 2, 3, 4], dtype=np.uint64)).tolist(), off.fitted_loads.tolist()
    ([0, 1, 1, 0], [8.0, 7.0])
    """

    name = "off-greedy"
    offline = True
    stateless = True  # once fitted: a table lookup

    def reset(self) -> None:
        self._table = KeyTable()
        self._fitted_loads = np.zeros(self.workers, dtype=np.float64)
        self._fit_seconds = 0.0

    @property
    def fitted_loads(self) -> np.ndarray:
        """Total weight placed on each worker by :meth:`fit`."""
        return self._fitted_loads

    def fit(self, stats: Stats) -> None:
        began = time.perf_counter()
        keys = as_fps(stats.keys)
        weights = np.asarray(stats.counts, dtype=np.float64)
        if stats.costs is not None:
            weights = weights * np.asarray(stats.costs, dtype=np.float64)
        order = heaviest_first(keys, weights)
        workers, self._fitted_loads = lpt(weights[order], self.workers)
        slots = 1 << max(10, int(np.ceil(np.log2(4 * max(len(keys), 1)))))  # at most 1/4 full
        self._table = KeyTable(slots)
        _fill(self._table.keys, self._table.vals, self._table.size, keys[order], workers)
        self._fit_seconds = time.perf_counter() - began

    def spawn(self) -> OffGreedy:
        twin = copy.copy(self)  # shares the (read-only) fitted table
        return twin

    def candidates(self, fp: int) -> np.ndarray:
        return self.route_many(np.array([fp], dtype=np.uint64))

    def route_many(self, fps, now=None) -> np.ndarray:
        fps = as_fps(fps)
        out = np.empty(fps.shape[0], dtype=np.int64)
        _route_table_or_hash(fps, self._table.keys, self._table.vals, self.workers, self.seed & 0xFFFFFFFF,
                             out)
        return out

    def table_size(self) -> int:
        return len(self._table)
