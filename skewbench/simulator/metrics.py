"""Load-balance metrics (PKG §II, DKG Eq. 7–8), accumulated piece by piece of a routed stream.

The simulator routes a stream a piece at a time and never holds every message's worker, so each
metric keeps only what it needs: loads at the sample points (points × W), message counts per key
and one bit per (key, worker) pair — memory bounded by the key space, not the stream.
"""

from __future__ import annotations

import numba
import numpy as np

from skewbench.scheme import Stats


def cumulative_loads(routes: np.ndarray, points: np.ndarray, width: int) -> np.ndarray:
    """Messages each worker received up to each point: shape ``(len(points), width)``.

    ``points`` are increasing message counts (the load after the first ``p`` messages).
    """
    segment = np.searchsorted(points, np.arange(len(routes)), side="right")
    valid = segment < len(points)
    cells = np.bincount(segment[valid] * width + routes[valid], minlength=len(points) * width)
    return np.cumsum(cells.reshape(len(points), width), axis=0)


class LoadSeries:
    """Each worker's load after the first ``p`` messages, for each sample point ``p``, and the
    workers active then; fed the routes of consecutive pieces."""

    def __init__(self, points: np.ndarray, width: int):
        self.points = points
        self.loads = np.zeros((len(points), width), dtype=np.int64)
        self.active = np.zeros(len(points), dtype=np.int64)
        self.totals = np.zeros(width, dtype=np.int64)
        self.seen = 0

    def add(self, routes: np.ndarray, workers: int) -> None:
        """The next ``len(routes)`` messages went to ``routes`` while ``workers`` workers were active."""
        lo, hi = self.seen, self.seen + len(routes)
        first, last = np.searchsorted(self.points, [lo, hi], side="right")
        if last > first:
            self.loads[first:last] = self.totals + cumulative_loads(routes, self.points[first:last] - lo,
                                                                    len(self.totals))
            self.active[first:last] = workers
        self.totals += np.bincount(routes, minlength=len(self.totals))
        self.seen = hi


def imbalance(loads: np.ndarray, active: np.ndarray | int) -> np.ndarray:
    """I(t) = max_i L_i(t) − avg_i L_i(t) over the active workers, for each row of ``loads``."""
    loads = np.atleast_2d(loads).astype(np.float64)
    active = np.broadcast_to(np.asarray(active), (loads.shape[0],))
    mask = np.arange(loads.shape[1])[None, :] < active[:, None]
    live = np.where(mask, loads, np.nan)
    return np.nanmax(live, axis=1) - np.nanmean(live, axis=1)


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` zero-padded to at least ``size`` (doubling, so a key space found piece by piece
    is copied O(log) times)."""
    if len(array) >= size:
        return array
    bigger = np.zeros(max(size, 2 * len(array)), dtype=array.dtype)
    bigger[:len(array)] = array
    return bigger


@numba.njit(cache=True)
def _count_into(counts, ids):
    for k in ids:
        counts[k] += 1


class KeyCounts:
    """Messages per key id, over the pieces seen so far."""

    def __init__(self):
        self.counts = np.zeros(0, dtype=np.int64)

    def add(self, ids: np.ndarray, n_keys: int) -> None:
        """Count the keys of a piece whose ids lie in ``0 .. n_keys - 1``."""
        self.counts = _grown(self.counts, n_keys)
        _count_into(self.counts, ids)

    def seen(self) -> np.ndarray:
        """Ids of the keys seen, ascending."""
        return np.flatnonzero(self.counts)

    def stats(self, key_fps: np.ndarray, loads: np.ndarray, now: float) -> Stats:
        """What a controller sees of these messages, as :func:`~skewbench.sources.interval_stats`
        gives it: the keys seen (fingerprints ``key_fps`` by id) and their counts, in id order."""
        seen = self.seen()
        return Stats(keys=key_fps[seen], counts=self.counts[seen].astype(np.float64),
                     loads=np.asarray(loads, dtype=np.float64), now=now)


@numba.njit(cache=True)
def _mark_pairs(bits, ids, routes, width):
    """Set the bit of each (key, worker) cell; returns how many were not set before."""
    new = 0
    for i in range(len(ids)):
        cell = ids[i] * width + routes[i]
        byte, mask = cell >> 3, 1 << (cell & 7)
        if not bits[byte] & mask:
            bits[byte] |= mask
            new += 1
    return new


class Counters:
    """Distinct (worker, key) pairs — the state entries a word count would hold (PKG Q4 memory) —
    one bit per pair (key-major), so 31M keys × 100 workers take 390 MB."""

    def __init__(self, width: int):
        self.width, self.count = width, 0
        self.bits = np.zeros(0, dtype=np.uint8)

    def add(self, ids: np.ndarray, routes: np.ndarray, n_keys: int) -> None:
        """Mark the pairs of a piece whose ids lie in ``0 .. n_keys - 1``."""
        self.bits = _grown(self.bits, (n_keys * self.width + 7) // 8)
        self.count += _mark_pairs(self.bits, ids, routes, self.width)


def stddev_pct(loads: np.ndarray) -> float:
    """DKG's StdDev (Eq. 7): population standard deviation of the workers' shares of the load, in %.

    >>> stddev_pct([50, 50, 0, 0])  # shares 50, 50, 0, 0 %
    25.0
    """
    loads = np.asarray(loads, dtype=np.float64)
    total = loads.sum()
    return float(np.std(100.0 * loads / total)) if total > 0 else 0.0


class Measures:
    """Every metric of a run, fed one routed piece at a time: loads at the sample points
    (:class:`LoadSeries`), counters (:class:`Counters`) and messages per key (:class:`KeyCounts`)."""

    def __init__(self, points: np.ndarray, width: int):
        self.series, self.counters, self.keys = LoadSeries(points, width), Counters(width), KeyCounts()

    def add(self, ids: np.ndarray, routes: np.ndarray, n_keys: int, workers: int) -> None:
        """A piece's key ids (in ``0 .. n_keys - 1``) went to ``routes`` while ``workers`` were active."""
        self.series.add(routes, workers)
        self.counters.add(ids, routes, n_keys)
        self.keys.add(ids, n_keys)

    def imbalance(self) -> np.ndarray:
        """I(t) at each sample point."""
        return imbalance(self.series.loads, self.series.active)

    def row(self, messages: int) -> dict:
        """The run's summary columns (PKG Table I and §II, DKG Eq. 7–8)."""
        series, counts = self.series, self.keys.counts
        i_t, final = self.imbalance(), series.loads[-1][: series.active[-1]]
        distinct = int(np.count_nonzero(counts))
        return {"final_workers": int(series.active[-1]), "keys": distinct,
                "p1_pct": 100 * float(counts.max() / messages),
                "avg_imbalance": float(i_t.mean()), "imbalance_fraction": float(i_t.mean()) / messages,
                "final_imbalance": float(i_t[-1]), "max_over_mean": float(final.max() / final.mean()),
                "counters": self.counters.count, "dist_cost": self.counters.count / distinct,
                "load_stddev_pct": stddev_pct(final)}
