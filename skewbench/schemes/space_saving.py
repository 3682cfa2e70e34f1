"""SpaceSaving (Metwally, Agrawal & El Abbadi, ICDT 2005): the heavy-hitter sketch of D-/W-Choices.

The sketch keeps ``capacity`` counters ``(key, count, error)``.  A tracked key's counter is
incremented; an untracked key takes over the counter with the smallest count ``c_min`` and starts
at ``count = c_min + 1, error = c_min``.  After ``n`` messages:

* ``count - error <= true count <= count`` for every tracked key (``count - error`` is the
  *guaranteed* count), and ``error <= c_min <= n / capacity``;
* every key with true count ``> c_min`` (so every key of frequency ``> 1 / capacity``) is tracked.

Nasir et al. (ICDE 2016, "When two choices are not enough") run one sketch per source and call a
key *head* when its frequency reaches θ.  A public simulator tested it as ``(count + error) / n``
— the error counted twice — so with 100 counters and θ = 1/(5W) every tracked key looks heavy
at W ≥ 20.  :meth:`SpaceSaving.heavy` uses the guaranteed ``count - error`` instead.

Layout (the paper's *Stream-Summary*, in arrays): counters of equal count hang in a doubly
linked bucket, buckets in a list sorted by count, so every update is O(1).  Within a bucket
counters are kept in the order they reached that count, and the evicted counter is the first one
of the smallest bucket — the key with the smallest ``(count, time its count last changed)``, which
makes the sketch deterministic and easy to replay (:func:`space_saving_reference`).  An
open-addressing index (linear probing, backward-shift deletion) maps a key to its counter.  The
numba functions take the arrays so other kernels (``choices.py``) can update a sketch inline.
"""

from __future__ import annotations

import numba
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
# rows of the counter array ``cnt`` (capacity columns) ...
C_COUNT, C_ERROR, C_BUCKET, C_PREV, C_NEXT, C_SLOT = range(6)
# ... of the bucket array ``bkt`` (capacity + 1 columns; row B_FREE is a stack of free buckets) ...
B_COUNT, B_HEAD, B_TAIL, B_PREV, B_NEXT, B_FREE = range(6)
# ... and of ``meta``: counters in use, messages seen, smallest bucket, free buckets
M_USED, M_N, M_MIN, M_FREE = range(4)


@numba.njit(inline="always")
def _home(fp, mask):
    # Fibonacci hashing: keys may be small integers in tests, so mix before masking.
    return np.int64(((fp * _GOLDEN) >> np.uint64(32)) & np.uint64(mask))


@numba.njit(cache=True)
def ss_find(index_keys, index_pos, fp):
    """Counter of ``fp``, or -1 when it is not tracked."""
    mask = index_keys.shape[0] - 1
    s = _home(fp, mask)
    while index_pos[s] >= 0:
        if index_keys[s] == fp:
            return index_pos[s]
        s = (s + 1) & mask
    return -1


@numba.njit(cache=True)
def _index_insert(index_keys, index_pos, cnt, fp, c):
    mask = index_keys.shape[0] - 1
    s = _home(fp, mask)
    while index_pos[s] >= 0:
        s = (s + 1) & mask
    index_keys[s], index_pos[s] = fp, c
    cnt[C_SLOT, c] = s


@numba.njit(cache=True)
def _index_delete(index_keys, index_pos, cnt, slot):
    """Backward-shift deletion: no tombstones, so probes stay short forever."""
    mask = index_keys.shape[0] - 1
    hole, j = slot, slot
    while True:
        j = (j + 1) & mask
        if index_pos[j] < 0:
            break
        home = _home(index_keys[j], mask)
        # The entry at j may fill the hole unless its home lies cyclically in (hole, j].
        if (hole < j and hole < home <= j) or (hole > j and (home > hole or home <= j)):
            continue
        index_keys[hole], index_pos[hole] = index_keys[j], index_pos[j]
        cnt[C_SLOT, index_pos[hole]] = hole
        hole = j
    index_pos[hole] = -1


@numba.njit(inline="always")
def _new_bucket(bkt, meta, count, prev, nxt):
    """Pop a free bucket holding ``count`` and link it between ``prev`` and ``nxt``."""
    meta[M_FREE] -= 1
    b = bkt[B_FREE, meta[M_FREE]]
    bkt[B_COUNT, b], bkt[B_HEAD, b], bkt[B_TAIL, b] = count, -1, -1
    bkt[B_PREV, b], bkt[B_NEXT, b] = prev, nxt
    if prev >= 0:
        bkt[B_NEXT, prev] = b
    else:
        meta[M_MIN] = b
    if nxt >= 0:
        bkt[B_PREV, nxt] = b
    return b


@numba.njit(inline="always")
def _append(cnt, bkt, c, b):
    """Hang counter ``c`` at the tail of bucket ``b``."""
    tail = bkt[B_TAIL, b]
    cnt[C_BUCKET, c], cnt[C_PREV, c], cnt[C_NEXT, c] = b, tail, -1
    if tail >= 0:
        cnt[C_NEXT, tail] = c
    else:
        bkt[B_HEAD, b] = c
    bkt[B_TAIL, b] = c


@numba.njit(inline="always")
def _detach(cnt, bkt, meta, c):
    """Unhang counter ``c``; an emptied bucket is unlinked and freed."""
    b, prev, nxt = cnt[C_BUCKET, c], cnt[C_PREV, c], cnt[C_NEXT, c]
    if prev >= 0:
        cnt[C_NEXT, prev] = nxt
    else:
        bkt[B_HEAD, b] = nxt
    if nxt >= 0:
        cnt[C_PREV, nxt] = prev
    else:
        bkt[B_TAIL, b] = prev
    if bkt[B_HEAD, b] < 0:
        before, after = bkt[B_PREV, b], bkt[B_NEXT, b]
        if before >= 0:
            bkt[B_NEXT, before] = after
        else:
            meta[M_MIN] = after
        if after >= 0:
            bkt[B_PREV, after] = before
        bkt[B_FREE, meta[M_FREE]] = b
        meta[M_FREE] += 1


@numba.njit(inline="always")
def _bump(cnt, bkt, meta, c):
    """``count += 1``: move ``c`` to the tail of the next bucket (made if missing)."""
    b = cnt[C_BUCKET, c]
    count = cnt[C_COUNT, c] + 1
    nxt = bkt[B_NEXT, b]
    if bkt[B_HEAD, b] == c and bkt[B_TAIL, b] == c and (nxt < 0 or bkt[B_COUNT, nxt] != count):
        bkt[B_COUNT, b] = count  # alone in its bucket (typical of a heavy key): relabel the bucket
        cnt[C_COUNT, c] = count
        return
    if nxt < 0 or bkt[B_COUNT, nxt] != count:
        nxt = _new_bucket(bkt, meta, count, b, nxt)  # at most capacity + 1 buckets at once
    _detach(cnt, bkt, meta, c)
    _append(cnt, bkt, c, nxt)
    cnt[C_COUNT, c] = count


@numba.njit(cache=True)
def ss_offer(keys, cnt, bkt, index_keys, index_pos, meta, fp):
    """Count one message of ``fp`` (O(1))."""
    ss_offer_at(keys, cnt, bkt, index_keys, index_pos, meta, fp, ss_find(index_keys, index_pos, fp))


@numba.njit(cache=True)
def ss_offer_at(keys, cnt, bkt, index_keys, index_pos, meta, fp, c):
    """:func:`ss_offer` when the caller already looked up ``fp``'s counter ``c`` (-1: untracked)."""
    meta[M_N] += 1
    if c >= 0:
        _bump(cnt, bkt, meta, c)
        return
    if meta[M_USED] < keys.shape[0]:  # a free counter, with count 1: the new smallest bucket
        c = meta[M_USED]
        meta[M_USED] += 1
        keys[c], cnt[C_COUNT, c], cnt[C_ERROR, c] = fp, 1, 0
        b = meta[M_MIN]
        if b < 0 or bkt[B_COUNT, b] != 1:
            b = _new_bucket(bkt, meta, 1, -1, b)
        _append(cnt, bkt, c, b)
        _index_insert(index_keys, index_pos, cnt, fp, c)
        return
    # Take over the oldest counter of the smallest bucket: its count bounds fp's past occurrences.
    c = bkt[B_HEAD, meta[M_MIN]]
    _index_delete(index_keys, index_pos, cnt, cnt[C_SLOT, c])
    keys[c], cnt[C_ERROR, c] = fp, cnt[C_COUNT, c]
    _index_insert(index_keys, index_pos, cnt, fp, c)
    _bump(cnt, bkt, meta, c)


@numba.njit(cache=True)
def _offer_many(keys, cnt, bkt, index_keys, index_pos, meta, fps):
    for i in range(fps.shape[0]):
        ss_offer(keys, cnt, bkt, index_keys, index_pos, meta, fps[i])


class SpaceSaving:
    """A SpaceSaving sketch over 64-bit fingerprints.

    Parameters
    ----------
    capacity : int
        Number of counters k; counts are overestimated by at most n / k.

    >>> from skewbench.hashing import fingerprints
    >>> sketch = SpaceSaving(capacity=50)
    >>> sketch.update(fingerprints(np.random.default_rng(0).zipf(1.5, 10_000)))
    >>> keys, counts, errors = sketch.top(1)
    >>> bool(keys[0] == fingerprints([1])[0]), bool(counts[0] - errors[0] > 0.3 * sketch.n)
    (True, True)
    """

    def __init__(self, capacity: int):
        if int(capacity) < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self.reset()

    def reset(self) -> None:
        k = self.capacity
        self._keys = np.zeros(k, dtype=np.uint64)
        self._cnt = np.full((6, k), -1, dtype=np.int64)
        self._bkt = np.full((6, k + 1), -1, dtype=np.int64)
        self._bkt[B_FREE] = np.arange(k + 1)
        size = 1 << int(np.ceil(np.log2(4 * k)))  # load factor <= 1/4: short probes
        self._index_keys = np.zeros(size, dtype=np.uint64)
        self._index_pos = np.full(size, -1, dtype=np.int64)
        self._meta = np.array([0, 0, -1, k + 1], dtype=np.int64)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The state arrays in the argument order of :func:`ss_offer` (for other kernels)."""
        return self._keys, self._cnt, self._bkt, self._index_keys, self._index_pos, self._meta

    @property
    def n(self) -> int:
        """Messages counted so far."""
        return int(self._meta[M_N])

    def __len__(self) -> int:
        return int(self._meta[M_USED])

    def update(self, fps: np.ndarray) -> None:
        """Count a batch of messages (fingerprints, in arrival order)."""
        _offer_many(*self.arrays(), np.ascontiguousarray(fps, dtype=np.uint64))

    def estimate(self, fp: int) -> tuple[int, int]:
        """``(count, error)`` of one key; ``(0, 0)`` if untracked (its true count is then ≤ :meth:`min_count`)."""
        c = ss_find(self._index_keys, self._index_pos, np.uint64(fp))
        return (0, 0) if c < 0 else (int(self._cnt[C_COUNT, c]), int(self._cnt[C_ERROR, c]))

    def min_count(self) -> int:
        """Smallest count when all counters are in use (else 0): an upper bound on any untracked key."""
        return int(self._bkt[B_COUNT, self._meta[M_MIN]]) if len(self) == self.capacity else 0

    def entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every tracked ``keys, counts, errors``, sorted by key."""
        used = len(self)
        order = np.argsort(self._keys[:used], kind="stable")
        return self._keys[:used][order], self._cnt[C_COUNT, :used][order], self._cnt[C_ERROR, :used][order]

    def top(self, k: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``k`` largest counters, by decreasing count (ties by key)."""
        keys, counts, errors = self.entries()
        order = np.lexsort((keys, -counts))[:k]
        return keys[order], counts[order], errors[order]

    def heavy(self, theta: float) -> tuple[np.ndarray, np.ndarray]:
        """Keys whose *guaranteed* count ``count - error`` is ≥ θ·n, with those counts (decreasing)."""
        keys, counts, errors = self.entries()
        sure = counts - errors
        hit = (sure >= theta * self.n) & (sure > 0)
        order = np.lexsort((keys[hit], -sure[hit]))
        return keys[hit][order], sure[hit][order]


class ReferenceSketch:
    """Plain-Python SpaceSaving with the kernel's eviction rule (tests compare the two).

    The evicted counter is the one with the smallest ``(count, index of the message that last
    changed its count)``.
    """

    def __init__(self, capacity: int):
        self.capacity, self.n = capacity, 0
        self.table: dict[int, list[int]] = {}  # key -> [count, error, stamp]

    def offer(self, fp: int) -> None:
        table, t = self.table, self.n
        self.n += 1
        if fp in table:
            table[fp][0] += 1
            table[fp][2] = t
        elif len(table) < self.capacity:
            table[fp] = [1, 0, t]
        else:
            victim = min(table, key=lambda key: (table[key][0], table[key][2]))
            low = table.pop(victim)[0]
            table[fp] = [low + 1, low, t]

    def get(self, fp: int) -> tuple[int, int]:
        """``(count, error)``, ``(0, 0)`` if untracked."""
        count, error, _ = self.table.get(fp, (0, 0, 0))
        return count, error

    def entries(self) -> dict[int, tuple[int, int]]:
        return {key: (count, error) for key, (count, error, _) in self.table.items()}


def space_saving_reference(fps, capacity: int) -> dict[int, tuple[int, int]]:
    """``{key: (count, error)}`` of a :class:`ReferenceSketch` fed ``fps``."""
    sketch = ReferenceSketch(capacity)
    for fp in fps:
        sketch.offer(int(fp))
    return sketch.entries()
