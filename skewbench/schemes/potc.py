"""Static power of two choices (PoTC): two choices *without* key splitting (PKG paper, Sec. III, V-B).

Nasir et al. (ICDE 2015) use it as a baseline: ``P_t(k) = argmin_i {L_i(t) : H_1(k) = i ∨ H_2(k) = i}``
is evaluated once, when a source first sees key k, and the choice is remembered in a per-key
routing table so that every later message of k goes to the same worker ("static PoTC", Sec. III-A).
Each source keeps its own table and its own load vector (messages it sent per worker).

The per-key table is a small open-addressing hash map (linear probing, doubling when half full)
shared with :mod:`skewbench.schemes.greedy`.
"""

from __future__ import annotations

import numba
import numpy as np

from skewbench.hashing import distinct_choices, two_choices
from skewbench.scheme import TwoChoices, as_fps, register

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_INITIAL_SLOTS = 1024


# -- the per-key routing table ------------------------------------------------------------------

@numba.njit(inline="always")
def table_slot(keys, vals, fp):
    """Slot holding ``fp``, or the empty slot where it would go (``vals == -1`` marks empty)."""
    mask = keys.shape[0] - 1
    s = np.int64(((fp * _GOLDEN) >> np.uint64(32)) & np.uint64(mask))
    while vals[s] >= 0 and keys[s] != fp:
        s = (s + 1) & mask
    return s


@numba.njit(cache=True)
def _rehash(keys, vals, new_keys, new_vals):
    for s in range(keys.shape[0]):
        if vals[s] >= 0:
            t = table_slot(new_keys, new_vals, keys[s])
            new_keys[t], new_vals[t] = keys[s], vals[s]


@numba.njit(cache=True)
def _table_lookup(keys, vals, fps, out):
    for i in range(fps.shape[0]):
        out[i] = vals[table_slot(keys, vals, fps[i])]


class KeyTable:
    """A growable ``uint64 → worker`` map in two numpy arrays (pickles as plain data)."""

    def __init__(self, slots: int = _INITIAL_SLOTS):
        self.keys = np.zeros(slots, dtype=np.uint64)
        self.vals = np.full(slots, -1, dtype=np.int64)
        self.size = np.zeros(1, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.size[0])

    def full(self) -> bool:
        """Half full: time to double (keeps linear probes short)."""
        return 2 * len(self) > self.keys.shape[0]

    def grow(self) -> None:
        keys = np.zeros(2 * self.keys.shape[0], dtype=np.uint64)
        vals = np.full(keys.shape[0], -1, dtype=np.int64)
        _rehash(self.keys, self.vals, keys, vals)
        self.keys, self.vals = keys, vals

    def get(self, fp: int) -> int:
        """Worker of ``fp``, or -1 when absent."""
        out = np.empty(1, dtype=np.int64)
        _table_lookup(self.keys, self.vals, np.array([fp], dtype=np.uint64), out)
        return int(out[0])

    def lookup(self, fps: np.ndarray) -> np.ndarray:
        out = np.empty(len(fps), dtype=np.int64)
        _table_lookup(self.keys, self.vals, as_fps(fps), out)
        return out

    def __getstate__(self) -> dict:
        """Only the occupied slots: a quarter to a half of the table, so a quarter to a half of the bytes
        that every source task reads when it picks a router up from a file (Off-Greedy's on the WP-like
        stream: 8.4 MB in full)."""
        used = self.vals >= 0
        return {"slots": self.keys.shape[0], "keys": self.keys[used], "vals": self.vals[used]}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["slots"])
        _rehash(state["keys"], state["vals"], self.keys, self.vals)  # each (key, worker) into its slot again
        self.size[0] = len(state["keys"])

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """All ``(keys, workers)``, sorted by key."""
        used = self.vals >= 0
        order = np.argsort(self.keys[used], kind="stable")
        return self.keys[used][order], self.vals[used][order]


def run_growing(kernel, table: KeyTable, fps: np.ndarray, *args) -> np.ndarray:
    """Drive a routing kernel that stops (returning the next index) whenever ``table`` is half full."""
    out = np.empty(fps.shape[0], dtype=np.int64)
    done = 0
    while done < fps.shape[0]:
        done = kernel(fps, done, table.keys, table.vals, table.size, *args, out)
        if table.full():
            table.grow()
    return out


# -- PoTC ---------------------------------------------------------------------------------------

@numba.njit(cache=True)
def _route_potc(fps, start, keys, vals, size, workers, seed, loads, out):
    for i in range(start, fps.shape[0]):
        fp = fps[i]
        s = table_slot(keys, vals, fp)
        w = vals[s]
        if w < 0:  # first sight: the less loaded of the two choices, then remember it
            a, b = two_choices(fp, workers, seed)
            w = b if loads[b] < loads[a] else a
            keys[s], vals[s] = fp, w
            size[0] += 1
        loads[w] += 1.0
        out[i] = w
        if 2 * size[0] > keys.shape[0]:
            return i + 1
    return fps.shape[0]


def route_potc_reference(fps, workers: int, seed: int, table: dict, loads: np.ndarray) -> np.ndarray:
    """Plain-Python reference for the PoTC kernel (updates ``table`` and ``loads``)."""
    out = np.empty(len(fps), dtype=np.int64)
    for i, fp in enumerate(as_fps(fps)):
        if int(fp) not in table:
            a, b = distinct_choices(np.array([fp], dtype=np.uint64), workers, 2, seed)[0]
            table[int(fp)] = int(b if loads[b] < loads[a] else a)
        out[i] = table[int(fp)]
        loads[out[i]] += 1.0
    return out


@register
class PowerOfTwoChoices(TwoChoices):
    """Static PoTC with a per-source routing table (PKG paper, Sec. III-A and the baseline of Table II).

    A key's two candidates are :func:`skewbench.hashing.two_choices` (distinct when W ≥ 2);
    at its first message the less loaded one (by this source's count of messages sent, ties to
    the first choice) becomes the key's worker for good.  :meth:`candidates` is that worker
    once the key is in the table, else the two choices.

    >>> from skewbench.hashing import fingerprints
    >>> potc = PowerOfTwoChoices(workers=4, seed=1)
    >>> routes = potc.route_many(fingerprints(np.zeros(8, dtype=np.int64)))  # one hot key
    >>> len(set(routes.tolist())), potc.table_size()  # stays on one worker: no key splitting
    (1, 1)
    """

    name = "potc"

    def reset(self) -> None:
        self._loads = np.zeros(self.workers, dtype=np.float64)
        self._table = KeyTable()

    @property
    def loads(self) -> np.ndarray:
        """This source's load estimate per worker (messages it sent there)."""
        return self._loads

    def candidates(self, fp: int) -> np.ndarray:
        if self.workers == 1:
            return np.zeros(1, dtype=np.int64)
        w = self._table.get(fp)
        if w >= 0:
            return np.array([w], dtype=np.int64)
        return distinct_choices(np.array([fp], dtype=np.uint64), self.workers, 2, self.seed)[0]

    def route_many(self, fps, now=None) -> np.ndarray:
        fps = as_fps(fps)
        if self.workers == 1:  # one worker: nothing to choose or remember
            self._loads[0] += fps.shape[0]
            return np.zeros(fps.shape[0], dtype=np.int64)
        return run_growing(_route_potc, self._table, fps, self.workers, self.seed & 0xFFFFFFFF, self._loads)

    def table_size(self) -> int:
        return len(self._table)
