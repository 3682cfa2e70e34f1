"""Dalton (Zapridou, Mytilinis, Ailamaki, "Dalton: Learned Partitioning for Distributed Data Streams", PVLDB
16(3), 2022, doi:10.14778/3570690.3570699): the hot keys are routed by a contextual bandit that learns, per
hot key, which workers keep the load even and the key on few workers; the other keys are hashed.

The rules, from the paper's description with the constants of the authors' Trident word count
(github.com/ezapridou/Dalton, 7eac352: read to understand, not copied):

* Time is this router's message count. An interval is ``slide`` messages (1,000), the window ``size``
  (60,000): the ``size // slide`` intervals before the current one, and the current one.
* Hot: a key whose count in the current interval exceeds the previous interval's messages / W (none in the
  first interval). Counts are exact until the router has seen 10,000 distinct keys, then read from a
  count-min sketch (width 40, depth 4) cleared every interval, as the code does. A key found hot stays hot
  until the end of the next interval; found hot again, longer.
* Not hot: kg's worker. Hot: ε-greedy (ε = 0.1) over the key's row of W values, all −2 at first: exploit
  the best worker, ties to kg's (so a key starts there and spreads by exploration); explore a random worker,
  or, once the key has reached the split cap, one of the workers it went to in the window.
* After every hot message: Q ← (1 − α)·Q + α·r, α = 0.1, r = −(0.5·(L − avg)/max(L, avg) + 0.5·kf/W):
  L the chosen worker's messages from this router in the window, avg their mean over the workers, kf the
  workers the key went to in the window. A key at the cap (2 at first) joins the capped keys; when they are
  70 % of the hot keys, the cap grows by one (up to W) and starts empty again.

Choices made here, where the paper leaves it open or the code differs from the paper:

* **Per source, no reducer.** Each source's router learns alone from its own messages. The authors' routers
  also merge their rows (weighted by their counts of the key) through an asynchronous reducer. Without it the
  routing stays a deterministic function of each source's messages, which the simulator and the Spark sources
  replay exactly. The seeded draws are alike on every source, as the code's ``Random(3)`` is.
* **Fragmentation.** A key's workers are recorded from when it becomes hot (its kg worker in the current
  interval included) until its row expires, and they leave the window with their interval. (The code forgets a
  bit by the key's index instead of the worker's, so there a key's kf never falls.)
* **Expiry.** A row is dropped once its key is no longer hot. The capped keys and the 70 % rule count live
  rows (the code also counts rows of keys that never came back).
* **Random draws** are seeded hashes of a counter, the same in the kernel and in :func:`route_reference`.
"""

from __future__ import annotations

import numba
import numpy as np

from skewbench.hashing import choice_hash, murmur64, table_slot
from skewbench.scheme import Scheme, as_fps, register

INITIAL_Q = -2.0
FIRST_CAP = 2  # workers a hot key may use at first
CAP_GROWS_AT = 0.7  # share of the hot keys at the cap that raises it
EXACT_KEYS = 10_000  # distinct keys counted exactly before the sketch takes over
SKETCH_DEPTH, SKETCH_WIDTH = 4, 40
DRAW_SALT, SKETCH_SALT = 101, 201  # hash salts of the random draws and the sketch's rows

# The router's counters, one int64 array (so that the kernel updates them in place).
TS, INTERVAL, TOTAL, THRESHOLD, CAP, CAPPED, LIVE, USED, DISTINCT, SKETCHING, DRAWS, WINDOW_TOTAL = range(12)
NO_THRESHOLD = -1  # the first interval: nothing is hot yet


@numba.njit(inline="always")
def _draw(c, seed):
    """The next seeded random 64 bits."""
    c[DRAWS] += 1
    return choice_hash(np.uint64(c[DRAWS]), seed, DRAW_SALT)


@numba.njit(inline="always")
def _fragments(last, row, interval, span, workers):
    """Workers the hot key of ``row`` went to in the window."""
    n = 0
    for j in range(workers):
        n += last[row, j] >= interval - span
    return n


@numba.njit(cache=True)
def _route(fps, start, stop, out, c, seed, workers, slide, span, epsilon, alpha,
           ckeys, cflag, cvals, sketch, dkeys, dused, qkeys, qflag, qexp, qrow, qlast, qcapped, ring, wload):
    """Route ``fps[start:stop]``, all in the current interval; returns where it stopped (before ``stop`` when
    the rows' or the distinct keys' table is half full: the caller grows it and calls again)."""
    slot_of_interval = c[INTERVAL] % ring.shape[0]
    for i in range(start, stop):
        if 2 * (c[USED] + 1) > qkeys.shape[0] or (c[DISTINCT] < EXACT_KEYS and 2 * (c[DISTINCT] + 1) > dkeys.shape[0]):
            return i
        fp = fps[i]
        if c[DISTINCT] < EXACT_KEYS:
            d = table_slot(dkeys, dused, fp)
            if dused[d] == 0:
                dused[d], dkeys[d] = 1, fp
                c[DISTINCT] += 1
        # Hot in this interval? (cflag: 0 unseen, 1 counted, 2 found hot)
        c[TOTAL] += 1
        k = table_slot(ckeys, cflag, fp)
        if cflag[k] == 0:
            cflag[k], ckeys[k], cvals[k] = 1, fp, 0
        cvals[k] += 1
        found = np.int64(0)  # 0: not hot now, 1: already hot, else: the expiry of a key that just became hot
        if cflag[k] == 2:
            found = 1
        else:
            frequency = cvals[k]
            if c[SKETCHING]:
                frequency = np.int64(1 << 62)
                for r in range(sketch.shape[0]):
                    b = np.int64(choice_hash(fp, seed, SKETCH_SALT + r) % np.uint64(sketch.shape[1]))
                    sketch[r, b] += 1
                    frequency = min(frequency, sketch[r, b])
            if c[THRESHOLD] != NO_THRESHOLD and frequency > c[THRESHOLD]:
                cflag[k] = 2
                found = (c[INTERVAL] + 2) * slide  # hot until the end of the next interval
        q = table_slot(qkeys, qflag, fp)
        live = qflag[q] == 1
        hot = live
        home = np.int64(choice_hash(fp, seed, 0) % np.uint64(workers))
        if found == 0 and live and c[TS] > qexp[q]:  # its time is over
            qflag[q], hot = 2, False
            c[LIVE] -= 1
            if qcapped[q]:
                qcapped[q] = 0
                c[CAPPED] -= 1
        elif found > 1:
            if not live:
                if qflag[q] == 0:
                    c[USED] += 1
                qflag[q], qkeys[q], qcapped[q] = 1, fp, 0
                c[LIVE] += 1
                for j in range(workers):
                    qrow[q, j], qlast[q, j] = INITIAL_Q, -(1 << 62)
                if cvals[k] > 1:  # its messages before, in this interval, went to its kg worker
                    qlast[q, home] = c[INTERVAL]
            qexp[q], hot = found, True
        w = home
        if hot:
            if (_draw(c, seed) >> np.uint64(11)) * (1.0 / 9007199254740992.0) < 1.0 - epsilon:
                best = qrow[q, home]
                for j in range(workers):
                    if qrow[q, j] > best:
                        best, w = qrow[q, j], j
            elif qcapped[q]:
                n = _fragments(qlast, q, c[INTERVAL], span, workers)
                if n == 0:
                    qcapped[q] = 0
                    c[CAPPED] -= 1
                    w = np.int64(_draw(c, seed) % np.uint64(workers))
                else:
                    pick = np.int64(_draw(c, seed) % np.uint64(n))
                    for j in range(workers):
                        if qlast[q, j] >= c[INTERVAL] - span:
                            if pick == 0:
                                w = j
                                break
                            pick -= 1
            else:
                w = np.int64(_draw(c, seed) % np.uint64(workers))
        ring[slot_of_interval, w] += 1
        wload[w] += 1
        c[WINDOW_TOTAL] += 1
        if hot:
            qlast[q, w] = c[INTERVAL]
            kf = _fragments(qlast, q, c[INTERVAL], span, workers)
            if kf == c[CAP] and not qcapped[q]:
                qcapped[q] = 1
                c[CAPPED] += 1
            mean = c[WINDOW_TOTAL] / workers
            load = float(wload[w])
            balance = (load - mean) / max(load, mean)
            if c[CAPPED] >= CAP_GROWS_AT * c[LIVE] and c[CAP] < workers:
                qcapped[:] = 0
                c[CAPPED] = 0
                c[CAP] += 1
            reward = -(0.5 * balance + 0.5 * kf / workers)
            qrow[q, w] = (1.0 - alpha) * qrow[q, w] + alpha * reward
        out[i] = w
        c[TS] += 1
    return stop


def _table(size: int, workers: int = 0):
    """Empty open-addressing arrays of ``size`` slots (a power of two): keys, flags and, with ``workers``, the
    rows' values, last intervals, expiries and capped flags."""
    keys, flags = np.zeros(size, dtype=np.uint64), np.zeros(size, dtype=np.int8)
    if not workers:
        return keys, flags
    return (keys, flags, np.zeros(size, dtype=np.int64), np.zeros((size, workers)),
            np.zeros((size, workers), dtype=np.int64), np.zeros(size, dtype=np.int8))


def _power_of_two(n: int) -> int:
    return 1 << max(4, int(n - 1).bit_length())


@register
class Dalton(Scheme):
    """Dalton: hot keys routed by an ε-greedy contextual bandit per key (a row of W values learned from a
    reward for balance and for few workers per key), the rest by kg; per source, seeded.

    >>> from skewbench.hashing import fingerprints
    >>> stream = np.repeat(fingerprints(np.arange(50)), 200)[np.random.default_rng(0).permutation(10_000)]
    >>> hot = np.concatenate([np.repeat(fingerprints(np.arange(1)), 5_000), stream])  # one key half the messages
    >>> routes = Dalton(8, slide=500, size=5_000).route_many(hot)
    >>> int((np.bincount(routes[:5_000], minlength=8) > 0).sum()) > 1  # the hot key spread beyond kg's worker
    True
    """

    name = "dalton"
    splits_keys = True
    state_everywhere = True  # a hot key may go to any worker, and its workers change over time

    def __init__(self, workers: int, seed: int = 0, slide: int = 1000, size: int = 60_000, epsilon: float = 0.1,
                 alpha: float = 0.1):
        if int(slide) < 1 or int(size) < int(slide) or int(size) % int(slide):
            raise ValueError(f"slide must be >= 1 and size a multiple of it, got slide={slide}, size={size}")
        if not (0 <= float(epsilon) <= 1 and 0 < float(alpha) <= 1):
            raise ValueError(f"epsilon must be in [0, 1] and alpha in (0, 1], got {epsilon}, {alpha}")
        self.slide, self.size, self.epsilon, self.alpha = int(slide), int(size), float(epsilon), float(alpha)
        super().__init__(workers, seed)

    def reset(self) -> None:
        self._c = np.zeros(12, dtype=np.int64)
        self._c[THRESHOLD], self._c[CAP] = NO_THRESHOLD, FIRST_CAP
        self._counts = (*_table(_power_of_two(2 * self.slide)), np.zeros(_power_of_two(2 * self.slide), np.int64))
        self._sketch = np.zeros((SKETCH_DEPTH, SKETCH_WIDTH), dtype=np.int64)
        self._distinct = _table(16)
        self._rows = _table(16, self.workers)
        self._ring = np.zeros((self.size // self.slide + 1, self.workers), dtype=np.int64)
        self._window = np.zeros(self.workers, dtype=np.int64)

    def candidates(self, fp: int) -> np.ndarray:
        return np.arange(self.workers, dtype=np.int64)

    def hot_keys(self) -> int:
        """Keys with a live row now (learned routes)."""
        return int(self._c[LIVE])

    def route_many(self, fps, now=None) -> np.ndarray:
        fps = as_fps(fps)
        out = np.empty(fps.shape[0], dtype=np.int64)
        i = 0
        while i < fps.shape[0]:
            if self._c[TS] == (self._c[INTERVAL] + 1) * self.slide:
                self._next_interval()
            stop = min(fps.shape[0], i + int((self._c[INTERVAL] + 1) * self.slide - self._c[TS]))
            i = _route(fps, i, stop, out, self._c, self.seed & 0xFFFFFFFF, self.workers, self.slide,
                       self.size // self.slide, self.epsilon, self.alpha, *self._counts, self._sketch,
                       *self._distinct, *self._rows, self._ring, self._window)
            if i < stop:
                self._grow()
        return out

    def _next_interval(self) -> None:
        """The end of an interval: a new threshold, counts afresh, the window's oldest interval out."""
        c = self._c
        c[THRESHOLD], c[TOTAL] = c[TOTAL] // self.workers, 0
        self._counts[1][:] = 0
        self._sketch[:] = 0
        c[SKETCHING] = c[DISTINCT] >= EXACT_KEYS
        if c[SKETCHING] and len(self._distinct[0]) > 1:
            self._distinct = _table(1)  # the sketch counts from now on: no need to know them
        c[INTERVAL] += 1
        oldest = self._ring[c[INTERVAL] % len(self._ring)]
        self._window -= oldest
        c[WINDOW_TOTAL] -= oldest.sum()
        oldest[:] = 0
        self._compact(len(self._rows[0]), keep=c[TS])

    def _grow(self) -> None:
        c = self._c
        if c[DISTINCT] < EXACT_KEYS and 2 * (c[DISTINCT] + 1) > len(self._distinct[0]):
            keys, flags = self._distinct
            self._distinct = _table(2 * len(keys))
            for fp in keys[flags == 1]:
                d = table_slot(self._distinct[0], self._distinct[1], fp)
                self._distinct[0][d], self._distinct[1][d] = fp, 1
        if 2 * (c[USED] + 1) > len(self._rows[0]):
            self._compact(_power_of_two(4 * (c[LIVE] + 1)), keep=-1)

    def _compact(self, size: int, keep: int) -> None:
        """The rows again in ``size`` slots, without the dropped ones and those expired before ``keep``."""
        keys, flags, expiry, values, last, capped = self._rows
        alive = (flags == 1) & (expiry >= keep)
        self._c[CAPPED] = int(capped[alive].sum())
        self._c[LIVE] = self._c[USED] = int(alive.sum())
        if size == len(keys) and not (flags != 0)[~alive].any():
            return  # nothing to drop
        self._rows = rows = _table(size, self.workers)
        for r in np.flatnonzero(alive):
            q = table_slot(rows[0], rows[1], keys[r])
            rows[0][q], rows[1][q], rows[2][q], rows[5][q] = keys[r], 1, expiry[r], capped[r]
            rows[3][q], rows[4][q] = values[r], last[r]


def route_reference(router: Dalton, fps) -> np.ndarray:
    """Plain-Python reference for the kernel: the rules of the module docstring over dicts, from a fresh
    ``router``'s parameters (the tests compare the two)."""
    workers, slide, span = router.workers, router.slide, router.size // router.slide
    seed = router.seed & 0xFFFFFFFF
    draws = 0

    def draw() -> int:
        nonlocal draws
        draws += 1
        return int(murmur64(np.array([draws], dtype=np.uint64), seed + DRAW_SALT)[0])

    counts, hot_now, threshold, total, interval = {}, set(), None, 0, 0
    rows, distinct, cap, capped = {}, set(), FIRST_CAP, set()
    sketch = np.zeros((SKETCH_DEPTH, SKETCH_WIDTH), dtype=np.int64)
    windows = [np.zeros(workers, dtype=np.int64) for _ in range(span + 1)]  # per interval, the last span + 1
    out = []
    sketching = False
    for ts, fp in enumerate(int(f) for f in as_fps(fps)):
        if ts and ts % slide == 0:  # the interval ends
            threshold, total, interval = total // workers, 0, interval + 1
            sketching = len(distinct) >= EXACT_KEYS
            counts, hot_now = {}, set()
            sketch[:] = 0
            windows = windows[1:] + [np.zeros(workers, dtype=np.int64)]
            for key in [k for k, r in rows.items() if r["expiry"] < ts]:
                del rows[key]
                capped.discard(key)
        if len(distinct) < EXACT_KEYS:
            distinct.add(fp)
        total += 1
        counts[fp] = counts.get(fp, 0) + 1
        found = 0
        if fp in hot_now:
            found = 1
        else:
            frequency = counts[fp]
            if sketching:
                cells = [int(murmur64(np.array([fp], dtype=np.uint64), seed + SKETCH_SALT + r)[0] % SKETCH_WIDTH)
                         for r in range(SKETCH_DEPTH)]
                for r, b in enumerate(cells):
                    sketch[r, b] += 1
                frequency = min(sketch[r, b] for r, b in enumerate(cells))
            if threshold is not None and frequency > threshold:
                hot_now.add(fp)
                found = (interval + 2) * slide
        home = int(murmur64(np.array([fp], dtype=np.uint64), seed)[0] % workers)
        row = rows.get(fp)
        if found == 0 and row is not None and ts > row["expiry"]:
            del rows[fp]
            capped.discard(fp)
            row = None
        elif found > 1:
            if row is None:
                row = rows[fp] = {"q": np.full(workers, INITIAL_Q), "last": np.full(workers, -(1 << 62))}
                if counts[fp] > 1:
                    row["last"][home] = interval
            row["expiry"] = found
        w = home
        if row is not None:
            spread = [j for j in range(workers) if row["last"][j] >= interval - span]
            if (draw() >> 11) / 2.0 ** 53 < 1.0 - router.epsilon:
                w = max(range(workers), key=lambda j: (row["q"][j], j == home, -j))
            elif fp in capped and not spread:
                capped.discard(fp)
                w = draw() % workers
            elif fp in capped:
                w = spread[draw() % len(spread)]
            else:
                w = draw() % workers
        windows[-1][w] += 1
        if row is not None:
            row["last"][w] = interval
            kf = sum(row["last"] >= interval - span)
            if kf == cap:
                capped.add(fp)
            load, mean = sum(win[w] for win in windows), sum(win.sum() for win in windows) / workers
            if len(capped) >= CAP_GROWS_AT * len(rows) and cap < workers:
                capped, cap = set(), cap + 1
            reward = -(0.5 * (load - mean) / max(load, mean) + 0.5 * kf / workers)
            row["q"][w] = (1 - router.alpha) * row["q"][w] + router.alpha * reward
        out.append(w)
    return np.array(out, dtype=np.int64)
