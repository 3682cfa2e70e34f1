"""Load-balance metrics computed from a routed stream (PKG §II, DKG Eq. 7–8)."""

from __future__ import annotations

import numpy as np

# Above this many (key, worker) cells, count distinct pairs by sorting instead of a bitmap.
_BITMAP_CELLS = 200_000_000


def cumulative_loads(routes: np.ndarray, points: np.ndarray, width: int) -> np.ndarray:
    """Messages each worker received up to each point: shape ``(len(points), width)``.

    ``points`` are increasing message counts (the load after the first ``p`` messages).
    """
    segment = np.searchsorted(points, np.arange(len(routes)), side="right")
    valid = segment < len(points)
    cells = np.bincount(segment[valid] * width + routes[valid], minlength=len(points) * width)
    return np.cumsum(cells.reshape(len(points), width), axis=0)


def imbalance(loads: np.ndarray, active: np.ndarray | int) -> np.ndarray:
    """I(t) = max_i L_i(t) − avg_i L_i(t) over the active workers, for each row of ``loads``."""
    loads = np.atleast_2d(loads).astype(np.float64)
    active = np.broadcast_to(np.asarray(active), (loads.shape[0],))
    mask = np.arange(loads.shape[1])[None, :] < active[:, None]
    live = np.where(mask, loads, np.nan)
    return np.nanmax(live, axis=1) - np.nanmean(live, axis=1)


def counters(ids: np.ndarray, routes: np.ndarray, width: int) -> int:
    """Distinct (worker, key) pairs: the state entries a word count would hold (PKG Q4 memory)."""
    n_keys = int(ids.max()) + 1 if len(ids) else 0
    if n_keys * width <= _BITMAP_CELLS:
        seen = np.zeros(n_keys * width, dtype=bool)
        seen[ids * width + routes] = True
        return int(np.count_nonzero(seen))
    return int(np.unique(ids.astype(np.int64) * width + routes).size)


def stddev_pct(loads: np.ndarray) -> float:
    """DKG's StdDev (Eq. 7): population standard deviation of the workers' shares of the load, in %.

    >>> stddev_pct([50, 50, 0, 0])  # shares 50, 50, 0, 0 %
    25.0
    """
    loads = np.asarray(loads, dtype=np.float64)
    total = loads.sum()
    return float(np.std(100.0 * loads / total)) if total > 0 else 0.0
