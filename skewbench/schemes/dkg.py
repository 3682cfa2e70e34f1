"""Dynamic Key Grouping (Dalabasmaz & Can): hot-key detection in a key space + 2..n ring candidates.

O. Dalabasmaz and A. B. Can, "Dynamic Key Grouping: A Load Balancing Algorithm for Distributed
Stream Processing Engines".  Every source runs its own DKG (local load estimation, as PKG):

* **Key space** (Sec. 4.1.2–4.1.3, Fig. 6).  Each key has a *key item* with its exact count.  The
  items live in an unbounded *baby* space, a *teenage* space of 40 % and an *old* space of 10 % of
  the expected number of keys (100 → 10 / 40 / 50).  Every 15 s of stream time the best baby items
  are promoted to teenage space, every 60 s the best teenage items to old space (Algorithms 1–3),
  swapping with the worst items of the destination, which go back down.
* **Routing** (Sec. 4.3–4.6, Algorithms 4–6).  A key's candidates are a ring of consecutive workers
  starting at ``hash(key) % W`` (Eq. 5), 2 by default; the message goes to the candidate with the
  least local load.  After the warm-up (15 s), a key in old space whose least loaded candidate has
  a load share of at least ``L_s = L_i + sqrt(L_i)`` (Eq. 3–4, in percent, ``L_i = 100 / W``) gains
  the next ring worker if that one is less loaded (scale out, up to Table 1's maximum); while
  more than 2 candidates and at least 2 of them are below ``L_s``, the ring shrinks (scale down).

Deviations from the public Storm code, all deliberate: the baby space is never truncated, so no key
ever loses its count (the public code cut the sorted baby list to 50 items each cycle and re-created
the cut keys at count 1); no wall-clock GC of stale items (the paper gives no rule; it would lose
counts too); time is the stream's clock ``now``, never wall time.  Ties in Algorithm 3 do not swap
(Sec. 4.1.3 promotes "items with higher occurrence", as the public code does); equal counts are
ordered by first appearance so that every machine sorts alike.

The teenage promotion only ever needs the best ``teenage`` baby items, so the kernel keeps them in a
small heap (a *leaderboard*) instead of sorting every baby item every 15 s;
:func:`route_reference` is the plain version with full sorts that the tests compare against.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from skewbench.hashing import choice_hash, murmur64
from skewbench.scheme import Scheme, as_fps, register

BABY, TEEN, OLD = 0, 1, 2  # key spaces, in promotion order
# Slots of the int64 ``_meta`` array (scalars the kernel updates in place).
_NKEYS, _TOTAL, _NTEEN, _NOLD, _NHEAP, _TEEN_K, _OLD_K, _STARTED = range(8)
_META_SIZE = 8
_FIRST_KEYS = 256  # initial key capacity; doubles when full


# -- Table 1 -------------------------------------------------------------------------------------

def ideal_load_pct(workers: int) -> float:
    """L_i = 100 / m, the even share of one machine in percent (Eq. 3)."""
    return 100.0 / workers


def threshold_pct(workers: int) -> float:
    """L_s = L_i + sqrt(L_i), the scale-out threshold in percent (Eq. 4).

    >>> round(threshold_pct(10), 2)
    13.16
    """
    li = ideal_load_pct(workers)
    return li + math.sqrt(li)


def max_machines(workers: int) -> int:
    """Most machines one key may use: ``floor(100 / L_s) + 1``, at most ``workers`` (Table 1).

    The paper lists the values without a formula; this one reproduces all five rows (5 → 5,
    10 → 8, 20 → 14, 50 → 30, 100 → 51): the machines a key holding the whole stream needs to stay
    under the threshold, plus one.

    >>> [max_machines(m) for m in (5, 10, 20, 50, 100)]
    [5, 8, 14, 30, 51]
    """
    return min(int(workers), int(math.floor(100.0 / threshold_pct(workers))) + 1)


def table1(workers: int) -> tuple[float, float, int]:
    """One row of Table 1: (ideal load %, threshold load %, max machines per key)."""
    return ideal_load_pct(workers), threshold_pct(workers), max_machines(workers)


def space_sizes(expected_keys: int) -> tuple[int, int]:
    """(old, teenage) capacities: 10 % and 40 % of the expected distinct keys (Sec. 4.1.2)."""
    return int(expected_keys * 0.10), int(expected_keys * 0.40)


# -- the kernel: hash table of key items ----------------------------------------------------------
# One row of ``items`` per key item, so that a message touches one cache line for it (FP holds the
# fingerprint's bits as int64).  ``table`` rows are (fingerprint bits, row) pairs, row -1 = empty.
FP, HOME, COUNT, SPACE, WIDTH, HPOS = range(6)
_ITEM_COLS = 8  # padded to 64 bytes


@numba.njit(cache=True)
def _find(table, fp):
    """(row of ``fp`` or -1, table position where it is or would go): linear probing."""
    mask = table.shape[0] - 1
    bits = np.int64(fp)
    pos = np.int64(fp & np.uint64(mask))
    while True:
        if table[pos, 1] < 0 or table[pos, 0] == bits:
            return table[pos, 1], pos
        pos = (pos + 1) & mask


@numba.njit(cache=True)
def _rehash(table, items, nkeys):
    table[:, 1] = -1
    for s in range(nkeys):
        _, pos = _find(table, np.uint64(items[s, FP]))
        table[pos, 0] = items[s, FP]
        table[pos, 1] = s


# -- the kernel: baby leaderboard (a min-heap whose top is the *worst* of the best baby items) ------

@numba.njit(cache=True)
def _better(items, a, b):
    """Key item ``a`` ranks above ``b``: more occurrences, then earlier first appearance."""
    return items[a, COUNT] > items[b, COUNT] or (items[a, COUNT] == items[b, COUNT] and a < b)


@numba.njit(cache=True)
def _swap(heap, items, i, j):
    heap[i], heap[j] = heap[j], heap[i]
    items[heap[i], HPOS] = i
    items[heap[j], HPOS] = j


@numba.njit(cache=True)
def _sift_up(heap, items, i):
    while i > 0:
        parent = (i - 1) // 2
        if not _better(items, heap[parent], heap[i]):
            break
        _swap(heap, items, i, parent)
        i = parent


@numba.njit(cache=True)
def _sift_down(heap, items, i, size):
    while True:
        worst = i
        for child in (2 * i + 1, 2 * i + 2):
            if child < size and _better(items, heap[worst], heap[child]):
                worst = child
        if worst == i:
            return
        _swap(heap, items, i, worst)
        i = worst


@numba.njit(cache=True)
def _offer(s, meta, heap, items):
    """Keep the heap = the best ``len(heap)`` baby items after baby item ``s`` (not in it) improved.

    ``s`` may join without an eviction only if it beats every baby item outside the heap, which
    holds when there are none or when it beats the heap's worst (outsiders never beat that).
    """
    cap, size = heap.shape[0], meta[_NHEAP]
    if cap == 0:
        return
    outsiders = meta[_NKEYS] - meta[_NTEEN] - meta[_NOLD] - size - 1
    beats_worst = size > 0 and _better(items, s, heap[0])
    if size < cap and (outsiders == 0 or beats_worst):
        heap[size] = s
        items[s, HPOS] = size
        meta[_NHEAP] = size + 1
        _sift_up(heap, items, size)
    elif size == cap and beats_worst:
        items[heap[0], HPOS] = -1
        heap[0] = s
        items[s, HPOS] = 0
        _sift_down(heap, items, 0, size)


@numba.njit(cache=True)
def _rebuild_heap(meta, heap, items):
    """Full scan of the baby space for its best items (only when the heap ran short of them)."""
    for i in range(meta[_NHEAP]):
        items[heap[i], HPOS] = -1
    size = 0
    for s in range(meta[_NKEYS]):
        if items[s, SPACE] != BABY:
            continue
        if size < heap.shape[0]:
            heap[size] = s
            items[s, HPOS] = size
            _sift_up(heap, items, size)
            size += 1
        elif _better(items, s, heap[0]):
            items[heap[0], HPOS] = -1
            heap[0] = s
            items[s, HPOS] = 0
            _sift_down(heap, items, 0, size)
    meta[_NHEAP] = size


# -- the kernel: promotion cycles (Algorithms 1–3) -------------------------------------------------

@numba.njit(cache=True)
def _sorted_desc(rows, items):
    """Key items best first (count descending, first appearance ascending)."""
    order = np.empty(rows.shape[0], dtype=np.int64)
    for i in range(rows.shape[0]):
        order[i] = -items[rows[i], COUNT] * (np.int64(1) << 32) + rows[i]
    return rows[np.argsort(order)]


@numba.njit(cache=True)
def _promote(src, dst, cap, items):
    """Algorithm 3 on sorted lists: (#promoted from the head of src, #demoted from the tail of dst).

    Free destination slots are filled first; then the best source item swaps with the worst
    destination item while it has more occurrences.  At most ``cap`` steps in all.
    """
    p, j = 0, dst.shape[0] - 1
    for step in range(cap):
        if p >= src.shape[0]:
            break
        if step < cap - dst.shape[0]:
            p += 1
        elif items[src[p], COUNT] > items[dst[j], COUNT]:
            p += 1
            j -= 1
        else:
            break
    return p, dst.shape[0] - 1 - j


@numba.njit(cache=True)
def _settled(src, nsrc, dst, ndst, items):
    """Algorithm 3 would move nothing: the destination is full and its worst beats the best source."""
    if nsrc == 0:
        return True
    if ndst < dst.shape[0]:
        return False
    best, worst = src[0], dst[0]
    for i in range(1, nsrc):
        if _better(items, src[i], best):
            best = src[i]
    for i in range(1, ndst):
        if _better(items, worst, dst[i]):
            worst = dst[i]
    return items[best, COUNT] <= items[worst, COUNT]


@numba.njit(cache=True)
def _cycle_teen(meta, heap, items, teen):
    """promoteToTeenageSpace (Algorithm 1): best baby items ↔ worst teenage items."""
    if meta[_NHEAP] < heap.shape[0] and meta[_NKEYS] - meta[_NTEEN] - meta[_NOLD] > meta[_NHEAP]:
        _rebuild_heap(meta, heap, items)
    if _settled(heap, meta[_NHEAP], teen, meta[_NTEEN], items):
        return  # the common case, without sorting
    babies = _sorted_desc(heap[:meta[_NHEAP]].copy(), items)
    teens = _sorted_desc(teen[:meta[_NTEEN]].copy(), items)
    p, d = _promote(babies, teens, teen.shape[0], items)
    kept = teens.shape[0] - d
    teen[:kept] = teens[:kept]
    teen[kept:kept + p] = babies[:p]
    meta[_NTEEN] = kept + p
    for s in babies[:p]:
        items[s, SPACE] = TEEN
        items[s, HPOS] = -1
    # The rest of the leaderboard, worst first, is a valid min-heap as it stands.
    rest = babies[p:][::-1]
    meta[_NHEAP] = rest.shape[0]
    for i in range(rest.shape[0]):
        heap[i] = rest[i]
        items[rest[i], HPOS] = i
    for s in teens[kept:]:  # demoted, best first
        items[s, SPACE] = BABY
        _offer(s, meta, heap, items)


@numba.njit(cache=True)
def _cycle_old(meta, items, teen, old):
    """promoteToOldSpace (Algorithm 2): best teenage items ↔ worst old items."""
    if _settled(teen, meta[_NTEEN], old, meta[_NOLD], items):
        return
    teens = _sorted_desc(teen[:meta[_NTEEN]].copy(), items)
    olds = _sorted_desc(old[:meta[_NOLD]].copy(), items)
    p, d = _promote(teens, olds, old.shape[0], items)
    kept = olds.shape[0] - d
    old[:kept] = olds[:kept]
    old[kept:kept + p] = teens[:p]
    meta[_NOLD] = kept + p
    for s in teens[:p]:
        items[s, SPACE] = OLD
    staying = teens.shape[0] - p
    teen[:staying] = teens[p:]
    teen[staying:staying + d] = olds[kept:]
    meta[_NTEEN] = staying + d
    for s in olds[kept:]:
        items[s, SPACE] = TEEN


@numba.njit(cache=True)
def _run_cycles(t, clock, meta, heap, items, teen, old, teen_period, old_period):
    """Cycles due by stream time ``t``; boundaries passed without messages run once, old first."""
    if meta[_STARTED] == 0:
        clock[0] = t
        meta[_STARTED] = 1
    elapsed = t - clock[0]
    clock[1] = t
    if elapsed >= old_period * meta[_OLD_K]:
        _cycle_old(meta, items, teen, old)
        meta[_OLD_K] = np.int64(math.floor(elapsed / old_period)) + 1
    if elapsed >= teen_period * meta[_TEEN_K]:
        _cycle_teen(meta, heap, items, teen)
        meta[_TEEN_K] = np.int64(math.floor(elapsed / teen_period)) + 1
    return elapsed


# -- the kernel: routing (Algorithms 4–6) ---------------------------------------------------------

@numba.njit(cache=True)
def _choose(home, width, workers, loads, total, threshold, may_grow, max_width, base_width):
    """chooseBestTask: (worker, new ring width) for one message of a key.

    A load share is below the threshold when ``load < L_s · total / 100`` (one division per
    message instead of one per candidate); before the first message every share counts as 0.
    """
    limit = threshold * total / 100.0 if total > 0 else np.inf
    while True:
        best, nll, w = home, 0, home
        for _ in range(width):
            if loads[w] < limit:
                nll += 1
            if loads[w] < loads[best]:
                best = w
            w = w + 1 if w + 1 < workers else 0
        if may_grow and not loads[best] < limit and width < max_width:  # shouldScaleOut
            extra = (home + width) % workers
            if loads[extra] < loads[best]:
                return extra, width + 1
            return best, width
        if width > base_width and nll >= 2:  # shouldScaleDown, then choose again
            width -= 1
            continue
        return best, width


@numba.njit(cache=True)
def _route_kernel(fps, now, out, start, meta, clock, loads, table, items, heap, teen, old, workers, seed,
                  base_width, max_width, threshold, warm_up, teen_period, old_period):
    """Route ``fps[start:]``; returns where it stopped (== len(fps), or a new key needs room)."""
    for i in range(start, fps.shape[0]):
        fp = fps[i]
        s, pos = _find(table, fp)
        if s < 0 and (meta[_NKEYS] >= items.shape[0] or 2 * (meta[_NKEYS] + 1) > table.shape[0]):
            return i
        elapsed = _run_cycles(now[i], clock, meta, heap, items, teen, old, teen_period, old_period)
        if s < 0:
            s = meta[_NKEYS]
            meta[_NKEYS] = s + 1
            table[pos, 0] = np.int64(fp)
            table[pos, 1] = s
            items[s, FP] = np.int64(fp)
            items[s, HOME] = np.int64(choice_hash(fp, seed, 0) % np.uint64(workers))
            items[s, COUNT] = 0
            items[s, SPACE] = BABY
            items[s, WIDTH] = base_width
            items[s, HPOS] = -1
        may_grow = items[s, SPACE] == OLD and elapsed > warm_up
        w, items[s, WIDTH] = _choose(items[s, HOME], items[s, WIDTH], workers, loads, meta[_TOTAL], threshold,
                                     may_grow, max_width, base_width)
        loads[w] += 1
        meta[_TOTAL] += 1
        items[s, COUNT] += 1
        if items[s, SPACE] == BABY:
            if items[s, HPOS] >= 0:
                _sift_down(heap, items, items[s, HPOS], meta[_NHEAP])
            else:
                _offer(s, meta, heap, items)
        out[i] = w
    return fps.shape[0]


# -- the plain reference ---------------------------------------------------------------------------

def route_reference(fps, now, workers: int, seed: int = 0, expected_keys: int = 100,
                    teen_cycle_s: float = 15.0, old_cycle_s: float = 60.0, warm_up_s: float = 15.0,
                    base_width: int = 2, max_width: int | None = None, threshold: float | None = None):
    """Plain-Python DKG with full sorts of every space at every cycle (tests compare the kernel).

    Returns ``(routes, items)`` where ``items`` maps a fingerprint to ``[count, space, width]``.
    """
    old_cap, teen_cap = space_sizes(expected_keys)
    base = min(base_width, workers)
    cap = max(base, min(max_width or max_machines(workers), workers))
    thr = threshold_pct(workers) if threshold is None else threshold
    items: dict[int, list] = {}  # fp -> [count, space, width, first appearance, home]
    order: list[int] = []
    loads = [0] * workers
    rank = lambda fp: (-items[fp][0], items[fp][3])  # noqa: E731
    routes = np.empty(len(fps), dtype=np.int64)
    t0, teen_k, old_k = None, 1, 1
    for i, (fp, t) in enumerate(zip(np.asarray(fps).tolist(), np.asarray(now, dtype=float).tolist())):
        t0 = t if t0 is None else t0
        elapsed = t - t0
        if elapsed >= old_cycle_s * old_k:
            _promote_reference(items, order, TEEN, OLD, old_cap, rank)
            old_k = math.floor(elapsed / old_cycle_s) + 1
        if elapsed >= teen_cycle_s * teen_k:
            _promote_reference(items, order, BABY, TEEN, teen_cap, rank)
            teen_k = math.floor(elapsed / teen_cycle_s) + 1
        if fp not in items:
            items[fp] = [0, BABY, base, len(order), int(murmur64(np.array([fp], np.uint64), seed)[0] % workers)]
            order.append(fp)
        item = items[fp]
        best = _choose_reference(item, loads, thr, item[1] == OLD and elapsed > warm_up_s, cap, base)
        loads[best] += 1
        item[0] += 1
        routes[i] = best
    return routes, {fp: item[:3] for fp, item in items.items()}


def _choose_reference(item, loads, thr, may_grow, cap, base):
    """Algorithms 4–6 for one message; updates the item's width, returns the worker."""
    workers, total = len(loads), sum(loads)
    limit = thr * total / 100.0 if total > 0 else math.inf  # share < L_s  <=>  load < limit
    while True:
        ring = [(item[4] + j) % workers for j in range(item[2])]
        best = min(ring, key=lambda w: loads[w])  # first of the least loaded
        if may_grow and loads[best] >= limit and item[2] < cap:
            extra = (item[4] + item[2]) % workers
            if loads[extra] < loads[best]:
                best, item[2] = extra, item[2] + 1
            return best
        if item[2] > base and sum(loads[w] < limit for w in ring) >= 2:
            item[2] -= 1
            continue
        return best


def _promote_reference(items, order, lower, upper, cap, rank):
    """Algorithm 3 over fully sorted spaces (free slots first, then strict swaps)."""
    src = sorted((fp for fp in order if items[fp][1] == lower), key=rank)
    dst = sorted((fp for fp in order if items[fp][1] == upper), key=rank)
    promoted, demoted = [], []
    for step in range(cap):
        if len(promoted) == len(src):
            break
        if step < cap - len(dst):
            promoted.append(src[len(promoted)])
        elif items[src[len(promoted)]][0] > items[dst[-1 - len(demoted)]][0]:
            promoted.append(src[len(promoted)])
            demoted.append(dst[-1 - len(demoted)])
        else:
            break
    for fp in promoted:
        items[fp][1] = upper
    for fp in demoted:
        items[fp][1] = lower


# -- the scheme ------------------------------------------------------------------------------------

@register
class DynamicKeyGrouping(Scheme):
    """DKG: each source detects its hot keys and spreads them over a growing ring of workers.

    Parameters
    ----------
    workers : int
        W, the number of downstream workers.
    seed : int
        Seed of the hash that places a key's ring (Eq. 5).
    expected_keys : int
        The administrator's estimate of distinct keys; old / teenage spaces hold 10 % / 40 % of it
        (Sec. 4.1.2; the paper used 100).  The baby space is unbounded.
    teen_cycle_s, old_cycle_s : float
        Periods of the baby→teenage and teenage→old promotions in stream seconds (Sec. 4.1.3).
    warm_up_s : float
        Cold start: no scale-out before this much stream time (Algorithm 5).
    base_width : int
        Default ring width; 2 in the paper ("index and index + 1"), 1 makes cold keys pure key
        grouping.  Scale-down never goes below it.
    max_width : int, optional
        Most workers per key; default Table 1's ``floor(100 / L_s) + 1``.
    threshold : float, optional
        Scale-out threshold in percent of this source's messages; default ``L_s`` (Eq. 4).

    Notes
    -----
    Loads are this source's message counts per worker (local estimation, as PKG); :meth:`sync` is
    ignored.  ``route_many(fps)`` without ``now`` keeps the clock where it was.

    >>> from skewbench.hashing import fingerprints
    >>> dkg = DynamicKeyGrouping(workers=10)
    >>> hot = fingerprints(np.zeros(20_000, dtype=np.int64))  # one key, 100 messages per second
    >>> routes = dkg.route_many(hot, np.arange(20_000) / 100.0)
    >>> len(np.unique(routes[:6000])), len(np.unique(routes))  # 2 workers until old (60 s), then 8
    (2, 8)
    """

    name = "dkg"
    splits_keys = True
    state_everywhere = True  # each source grows and shrinks its own rings of hot keys

    def __init__(self, workers: int, seed: int = 0, expected_keys: int = 100, teen_cycle_s: float = 15.0,
                 old_cycle_s: float = 60.0, warm_up_s: float = 15.0, base_width: int = 2,
                 max_width: int | None = None, threshold: float | None = None):
        if int(base_width) < 1:
            raise ValueError(f"base_width must be >= 1, got {base_width}")
        if teen_cycle_s <= 0 or old_cycle_s <= 0:
            raise ValueError("cycle periods must be positive (stream seconds)")
        self.expected_keys = expected_keys
        self.teen_cycle_s = teen_cycle_s
        self.old_cycle_s = old_cycle_s
        self.warm_up_s = warm_up_s
        self.base_width = base_width
        self.max_width = max_width
        self.threshold = threshold
        super().__init__(workers, seed)

    # -- state -------------------------------------------------------------------------------------
    def reset(self) -> None:
        old_cap, teen_cap = space_sizes(self.expected_keys)
        self._base = min(int(self.base_width), self.workers)
        self._cap = max(self._base, min(int(self.max_width or max_machines(self.workers)), self.workers))
        self._threshold = float(threshold_pct(self.workers) if self.threshold is None else self.threshold)
        self._meta = np.zeros(_META_SIZE, dtype=np.int64)
        self._meta[_TEEN_K] = self._meta[_OLD_K] = 1
        self._clock = np.zeros(2, dtype=np.float64)  # [start, last seen]
        self._loads = np.zeros(self.workers, dtype=np.int64)
        self._teen = np.zeros(teen_cap, dtype=np.int64)
        self._old = np.zeros(old_cap, dtype=np.int64)
        self._heap = np.zeros(teen_cap, dtype=np.int64)
        self._table = np.zeros((2 * _FIRST_KEYS, 2), dtype=np.int64)
        self._table[:, 1] = -1
        self._items = np.zeros((_FIRST_KEYS, _ITEM_COLS), dtype=np.int64)

    def _grow(self) -> None:
        """Double the key capacity and the hash table (the kernel stopped for room)."""
        items = np.zeros((2 * self._items.shape[0], _ITEM_COLS), dtype=np.int64)
        items[:self._items.shape[0]] = self._items
        self._items = items
        self._table = np.zeros((2 * items.shape[0], 2), dtype=np.int64)
        _rehash(self._table, self._items, self._meta[_NKEYS])

    @property
    def loads(self) -> np.ndarray:
        """This source's load estimate per worker (messages it sent there)."""
        return self._loads

    def key_space(self) -> dict[str, np.ndarray]:
        """Every key item: ``fps``, ``counts``, ``space`` (0 baby, 1 teenage, 2 old), ``width``."""
        rows = self._items[:self._meta[_NKEYS]]
        return {"fps": rows[:, FP].view(np.uint64).copy(), "counts": rows[:, COUNT].copy(),
                "space": rows[:, SPACE].copy(), "width": rows[:, WIDTH].copy()}

    # -- routing -----------------------------------------------------------------------------------
    def _slot(self, fp: int) -> int:
        return int(_find(self._table, np.uint64(fp))[0])

    def candidates(self, fp: int) -> np.ndarray:
        """The ring the key may use now: its width, plus the next ring worker if it could scale out.

        Scale-out is open to old keys, and to teenage keys too because the next message's clock may
        promote them first (cycles move a key at most one space per message), so the set holds
        whatever the next message's clock brings.
        """
        home = int(murmur64(np.array([fp], dtype=np.uint64), self.seed)[0] % np.uint64(self.workers))
        s = self._slot(fp)
        width = self._base if s < 0 else int(self._items[s, WIDTH])
        if s >= 0 and self._items[s, SPACE] >= TEEN and width < self._cap:
            width += 1
        return (home + np.arange(width, dtype=np.int64)) % self.workers

    def route_many(self, fps, now=None) -> np.ndarray:
        fps = as_fps(fps)
        if now is None:
            now = np.full(fps.shape[0], self._clock[1])
        now = np.ascontiguousarray(np.broadcast_to(now, fps.shape), dtype=np.float64)
        out = np.empty(fps.shape[0], dtype=np.int64)
        done = 0
        while done < fps.shape[0]:
            done = _route_kernel(fps, now, out, done, self._meta, self._clock, self._loads, self._table,
                                 self._items, self._heap, self._teen, self._old, self.workers, self.seed, self._base,
                                 self._cap, self._threshold, float(self.warm_up_s), float(self.teen_cycle_s),
                                 float(self.old_cycle_s))
            if done < fps.shape[0]:
                self._grow()
        return out
