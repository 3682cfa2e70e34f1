"""Consistent hashing with virtual nodes (Karger et al. 1997; Gedik, Sec. 4.1.1).

Every worker owns ``vnodes`` points ("replicas") on a 64-bit ring; a key goes to the owner of the
first point clockwise of the key's own ring position.  The points of worker *w* depend only on
``(w, replica, seed)``, never on W, so growing the ring from W to W + 1 workers only adds points:
the keys that move are exactly those now closest to a new point, about 1/(W + 1) of them, and
they all move *to* the new worker (Gedik, footnote 1).

Ring positions are the scheme's hashes (:mod:`skewbench.hashing`): a key sits at
``h_0(fp)``; replica *r* of worker *w* at ``h_1(w · 2³² + r)``.
"""

from __future__ import annotations

import numba
import numpy as np

from skewbench.hashing import choice_hash, murmur64
from skewbench.scheme import Scheme, as_fps, register


def ring(workers: int, vnodes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The ring of ``workers · vnodes`` points: sorted ``uint64`` positions and their owners.

    >>> points, owners = ring(3, 4, seed=0)
    >>> bool((np.diff(points.astype(np.float64)) >= 0).all()), np.bincount(owners).tolist()
    (True, [4, 4, 4])
    """
    owner = np.repeat(np.arange(workers, dtype=np.int64), vnodes)
    replica = np.tile(np.arange(vnodes, dtype=np.uint64), workers)
    points = murmur64((owner.astype(np.uint64) << np.uint64(32)) | replica, seed + 1)
    order = np.lexsort((owner, points))  # ties (never seen in practice) broken by owner: deterministic
    return points[order], owner[order]


@numba.njit(cache=True)
def _lookup(fps, table_keys, table_workers, points, owners, seed, out):
    """Explicit table first (sorted keys, binary search), then the ring (Gedik, Algorithm 1)."""
    n_table, n_points = table_keys.shape[0], points.shape[0]
    for i in range(fps.shape[0]):
        fp = fps[i]
        t = np.searchsorted(table_keys, fp) if n_table else 0
        if t < n_table and table_keys[t] == fp:
            out[i] = table_workers[t]
            continue
        p = np.searchsorted(points, choice_hash(fp, seed, 0))
        out[i] = owners[p if p < n_points else 0]  # past the last point: wrap around


def lookup(fps, table_keys, table_workers, points, owners, seed) -> np.ndarray:
    """Worker of each fingerprint under an explicit table (sorted keys) backed by a ring."""
    fps = as_fps(fps)
    out = np.empty(fps.shape[0], dtype=np.int64)
    _lookup(fps, table_keys, table_workers, points, owners, seed & 0xFFFFFFFF, out)
    return out


def lookup_reference(fps, table_keys, table_workers, points, owners, seed) -> np.ndarray:
    """Plain-numpy reference for :func:`lookup` (tests compare the two)."""
    fps = as_fps(fps)
    where = np.searchsorted(points, murmur64(fps, seed)) % len(points)
    out = owners[where]
    if len(table_keys):
        t = np.minimum(np.searchsorted(table_keys, fps), len(table_keys) - 1)
        hit = table_keys[t] == fps
        out[hit] = table_workers[t[hit]]
    return out


@register
class ConsistentHash(Scheme):
    """Consistent hashing: balanced key *counts*, minimal movement when W changes.

    ``vnodes`` replicas per worker (Gedik used 1000, Sec. 5.5); the share of keys a worker gets
    deviates from 1/W by about 1/sqrt(vnodes).  Stateless, so every source routes alike.

    >>> from skewbench.hashing import fingerprints
    >>> keys = fingerprints(np.arange(20_000))
    >>> before = ConsistentHash(9, seed=1).route_many(keys)
    >>> after = ConsistentHash(10, seed=1).route_many(keys)
    >>> moved = before != after
    >>> bool((after[moved] == 9).all()), bool(0.07 < moved.mean() < 0.13)  # only to the new one, ~1/10
    (True, True)
    """

    name = "consistent"
    stateless = True

    def __init__(self, workers: int, seed: int = 0, vnodes: int = 1000):
        if int(vnodes) < 1:
            raise ValueError(f"vnodes must be >= 1, got {vnodes}")
        self.vnodes = int(vnodes)
        super().__init__(workers, seed)

    def reset(self) -> None:
        self._points, self._owners = ring(self.workers, self.vnodes, self.seed)
        self._no_table = np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)

    def candidates(self, fp: int) -> np.ndarray:
        return self.route_many(np.array([fp], dtype=np.uint64))

    def route_many(self, fps, now=None) -> np.ndarray:
        return lookup(fps, *self._no_table, self._points, self._owners, self.seed)
