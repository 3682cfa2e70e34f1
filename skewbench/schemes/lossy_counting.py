"""Lossy counting over a sliding window, the frequency sketch of Gedik's splitter (Sec. 4.1.2).

*Lossy counting* (Manku & Motwani, VLDB 2002) cuts the stream into buckets of ``w = ⌈1/ε⌉``
messages.  An item enters memory with appearance count ``c = 1`` and error ``e = b − 1`` (``b`` the
current bucket, from 1); when bucket ``b`` closes, items with ``c + e ≤ b`` are evicted.  After
``n`` messages every item's true count lies in ``[c, c + e]`` with ``e ≤ εn``: ``c`` never
overestimates, so it is already the guaranteed ("count − error") estimate, and reporting items with
``c ≥ (δ − ε)·n`` misses no item of frequency ≥ δ.

*Sliding window* (Gedik, Fig. 2): three lossy counters are restarted in turn every ``window / 2``
messages; each lives ``1.5 · window`` messages and the oldest running one answers queries, so an
answer always covers between ``window`` and ``1.5 · window`` recent messages (fewer at start-up).
A counter takes its ε when it (re)starts, so :meth:`SlidingLossyCounter.retune` changes ε
without breaking any running counter's guarantee.

The three counters live in one ``(3, capacity)`` open-addressing table (linear probing; a zero
count marks an empty slot) that doubles when a row gets half full.
"""

from __future__ import annotations

import math

import numba
import numpy as np

COUNTERS = 3
_INITIAL_CAPACITY = 1024


def bucket_width(epsilon: float) -> int:
    """Messages per lossy-counting bucket, ``⌈1/ε⌉``."""
    if not 0 < epsilon <= 1:
        raise ValueError(f"epsilon must be in (0, 1], got {epsilon}")
    return math.ceil(1.0 / epsilon)


@numba.njit(inline="always")
def _home(fp, mask):
    return np.int64((fp ^ (fp >> np.uint64(29))) & np.uint64(mask))


@numba.njit(cache=True)
def _put(keys, counts, errors, fp, count, error):
    """Insert ``fp`` (absent) into one row of the table."""
    mask = keys.shape[0] - 1
    slot = _home(fp, mask)
    while counts[slot] != 0:
        slot = (slot + 1) & mask
    keys[slot], counts[slot], errors[slot] = fp, count, error


@numba.njit(cache=True)
def _rehash(keys, counts, errors, new_keys, new_counts, new_errors):
    for slot in range(keys.shape[0]):
        if counts[slot] != 0:
            _put(new_keys, new_counts, new_errors, keys[slot], counts[slot], errors[slot])


@numba.njit(cache=True)
def _evict(keys, counts, errors, bucket):
    """Close ``bucket``: keep items with ``c + e > bucket``; returns the new size."""
    live = np.flatnonzero(counts)
    keep = live[counts[live] + errors[live] > bucket]
    k, c, e = keys[keep], counts[keep], errors[keep]
    counts[:] = 0  # rebuild the row: linear probing has no cheap in-place delete
    for i in range(keep.shape[0]):
        _put(keys, counts, errors, k[i], c[i], e[i])
    return keep.shape[0]


@numba.njit(cache=True)
def _update(fps, start, keys, counts, errors, seen, size, width, clock, stagger, next_width):
    """Feed ``fps[start:]`` to the three counters; stops early (returns the next index) when a row
    is half full so the caller can grow the table."""
    capacity = keys.shape[1]
    mask = capacity - 1
    for i in range(start, fps.shape[0]):
        fp = fps[i]
        for k in range(COUNTERS):
            age = clock[0] - k * stagger
            if age < 0:
                continue  # counter k starts after k half-windows (Fig. 2)
            if age % (COUNTERS * stagger) == 0:  # lifetime over: restart empty
                counts[k, :] = 0
                seen[k], size[k], width[k] = 0, 0, next_width
            seen[k] += 1
            slot = _home(fp, mask)
            while counts[k, slot] != 0 and keys[k, slot] != fp:
                slot = (slot + 1) & mask
            if counts[k, slot] != 0:
                counts[k, slot] += 1
            else:
                keys[k, slot], counts[k, slot] = fp, 1
                errors[k, slot] = (seen[k] - 1) // width[k]  # current bucket − 1
                size[k] += 1
            if seen[k] % width[k] == 0:
                size[k] = _evict(keys[k], counts[k], errors[k], seen[k] // width[k])
        clock[0] += 1
        if 2 * size.max() > capacity:
            return i + 1
    return fps.shape[0]


class SlidingLossyCounter:
    """Three tumbling lossy counters emulating a sliding window of ``window`` messages.

    Parameters
    ----------
    window : int
        The sliding window W, in messages (answers cover W to 1.5 W messages).
    epsilon : float
        Error bound of lossy counting; counts are low by at most ``epsilon · n``.

    >>> from skewbench.hashing import fingerprints
    >>> counter = SlidingLossyCounter(window=10_000, epsilon=0.01)
    >>> counter.update(fingerprints(np.random.default_rng(0).zipf(1.5, 5_000)))
    >>> keys, counts, n = counter.frequent(0.05)
    >>> n, keys[0] == fingerprints([1])[0], bool(counts[0] > 0.3 * n)
    (5000, np.True_, True)
    """

    def __init__(self, window: int, epsilon: float):
        if int(window) < 2:
            raise ValueError(f"window must be >= 2 messages, got {window}")
        self.window = int(window)
        self.epsilon = float(epsilon)
        self.reset()

    def reset(self) -> None:
        self._stagger = self.window // 2
        self._keys = np.zeros((COUNTERS, _INITIAL_CAPACITY), dtype=np.uint64)
        self._counts = np.zeros((COUNTERS, _INITIAL_CAPACITY), dtype=np.int64)
        self._errors = np.zeros((COUNTERS, _INITIAL_CAPACITY), dtype=np.int64)
        self._seen = np.zeros(COUNTERS, dtype=np.int64)  # messages since each counter's start
        self._size = np.zeros(COUNTERS, dtype=np.int64)
        self._next_width = bucket_width(self.epsilon)
        self._width = np.full(COUNTERS, self._next_width, dtype=np.int64)
        self._clock = np.zeros(1, dtype=np.int64)

    def retune(self, epsilon: float) -> None:
        """Use ``epsilon`` for counters (re)started from now on."""
        self._next_width = bucket_width(epsilon)

    def update(self, fps: np.ndarray) -> None:
        """Count a batch of messages (fingerprints, in arrival order)."""
        fps = np.ascontiguousarray(fps, dtype=np.uint64)
        done = 0
        while done < fps.shape[0]:
            done = _update(fps, done, self._keys, self._counts, self._errors, self._seen, self._size,
                           self._width, self._clock, self._stagger, self._next_width)
            if 2 * self._size.max() > self._keys.shape[1]:
                self._grow()

    def _grow(self) -> None:
        keys = np.zeros((COUNTERS, 2 * self._keys.shape[1]), dtype=np.uint64)
        counts, errors = np.zeros(keys.shape, dtype=np.int64), np.zeros(keys.shape, dtype=np.int64)
        for k in range(COUNTERS):
            _rehash(self._keys[k], self._counts[k], self._errors[k], keys[k], counts[k], errors[k])
        self._keys, self._counts, self._errors = keys, counts, errors

    @property
    def active(self) -> int:
        """The counter that answers queries: the oldest running one."""
        return int(np.argmax(self._seen))

    def entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, float]:
        """Every item in the active counter, sorted by key: ``keys, counts, errors, n, ε``."""
        k = self.active
        live = np.flatnonzero(self._counts[k])
        order = np.argsort(self._keys[k, live], kind="stable")
        slots = live[order]
        return (self._keys[k, slots], self._counts[k, slots], self._errors[k, slots], int(self._seen[k]),
                1.0 / self._width[k])

    def frequent(self, threshold: float) -> tuple[np.ndarray, np.ndarray, int]:
        """Items reported for frequency ``threshold`` (``c ≥ (threshold − ε)·n``), most frequent first.

        Returns ``keys, counts, n``; ties in count are ordered by key.
        """
        keys, counts, _, n, eps = self.entries()
        hit = counts >= (threshold - eps) * n
        keys, counts = keys[hit], counts[hit]
        order = np.lexsort((keys, -counts))
        return keys[order], counts[order], n

    def __len__(self) -> int:
        """Items held by the active counter."""
        return int(self._size[self.active])


def sliding_reference(fps, window: int, epsilon: float) -> tuple[list[dict], list[int]]:
    """Plain-Python reference: the three counters as ``{key: (count, error)}`` dicts and their n."""
    stagger, width = window // 2, bucket_width(epsilon)
    tables, seen = [{} for _ in range(COUNTERS)], [0] * COUNTERS
    for clock, fp in enumerate(int(x) for x in fps):
        for k in range(COUNTERS):
            age = clock - k * stagger
            if age < 0:
                continue
            if age % (COUNTERS * stagger) == 0:
                tables[k], seen[k] = {}, 0
            seen[k] += 1
            bucket = (seen[k] - 1) // width + 1
            count, error = tables[k].get(fp, (0, bucket - 1))
            tables[k][fp] = (count + 1, error)
            if seen[k] % width == 0:
                tables[k] = {key: ce for key, ce in tables[k].items() if sum(ce) > bucket}
    return tables, seen
