"""Partial Key Grouping (Nasir et al., ICDE 2015): key splitting + two choices + local load estimation."""

from __future__ import annotations

import numba
import numpy as np

from skewbench.hashing import distinct_choices, two_choices
from skewbench.scheme import TwoChoices, as_fps, register


@numba.njit(cache=True)
def _route_two_choices(fps, workers, seed, loads, out):
    for i in range(fps.shape[0]):
        a, b = two_choices(fps[i], workers, seed)
        w = b if loads[b] < loads[a] else a  # ties go to the first choice
        loads[w] += 1.0
        out[i] = w


def _route_two_choices_reference(fps, workers, seed, loads):
    """Plain-numpy reference for the kernel (tests compare the two)."""
    choices = distinct_choices(fps, workers, 2, seed)
    out = np.empty(len(fps), dtype=np.int64)
    for i, (a, b) in enumerate(choices):
        out[i] = b if loads[b] < loads[a] else a
        loads[out[i]] += 1.0
    return out


@register
class PartialKeyGrouping(TwoChoices):
    """PKG with *local* load estimation (the paper's *L*): each source balances its own load vector.

    Every key has two distinct candidate workers (:func:`skewbench.hashing.two_choices`; with
    W = 1 both are worker 0); a message goes to the candidate this source has sent fewer messages
    to.  Summing the sources' vectors (:meth:`merge`) gives the true loads (Sec. III-B).

    >>> from skewbench.hashing import fingerprints
    >>> pkg = PartialKeyGrouping(workers=4, seed=1)
    >>> routes = pkg.route_many(fingerprints(np.zeros(8, dtype=np.int64)))  # one hot key
    >>> sorted(np.bincount(routes).tolist())[-2:]  # split evenly over its two workers
    [4, 4]
    """

    name = "pkg"
    splits_keys = True

    def reset(self) -> None:
        self._loads = np.zeros(self.workers, dtype=np.float64)

    @property
    def loads(self) -> np.ndarray:
        """This source's load estimate per worker (messages it sent there)."""
        return self._loads

    def route_many(self, fps, now=None) -> np.ndarray:
        fps = as_fps(fps)
        if self.workers == 1:
            self._loads[0] += fps.shape[0]
            return np.zeros(fps.shape[0], dtype=np.int64)
        out = np.empty(fps.shape[0], dtype=np.int64)
        _route_two_choices(fps, self.workers, self.seed, self._loads, out)
        return out

    def merge(self, other: PartialKeyGrouping) -> PartialKeyGrouping:
        merged = self.spawn()
        merged._loads = self._loads + other._loads
        return merged


@register
class PartialKeyGroupingGlobal(PartialKeyGrouping):
    """PKG with a global load oracle (the paper's *G*): every source sees the true worker loads.

    Modelled as one router over all sources' messages in arrival order (``coupling = "global"``),
    which is exactly what a perfect oracle gives.  Where the sources cannot share one object (Spark's
    source tasks), each keeps its own estimates and :meth:`sync` sets them to the true loads once per
    micro-batch (:mod:`skewbench.bench.spark.feedback`).
    """

    name = "pkg-global"
    coupling = "global"

    def sync(self, loads: np.ndarray) -> None:
        """Set the load estimates to the true per-worker loads ``loads``."""
        self._loads = np.asarray(loads, dtype=np.float64).copy()


@register
class PartialKeyGroupingProbe(PartialKeyGrouping):
    """PKG with local estimation and periodic probing (the paper's *LP*, e.g. L5P1).

    A driver calls :meth:`sync` with the workers' true loads every probing period; the local
    estimate vector is then set to them (Sec. V Q2).
    """

    name = "pkg-probe"
    sync = PartialKeyGroupingGlobal.sync
