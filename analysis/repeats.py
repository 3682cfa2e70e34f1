"""Repeated runs of one point: a mean with a 95 % interval, and whether two points can be told apart.

A bench point run with several seeds gives a few numbers; their mean and its 95 % interval come from
seaborn's own bootstrap (``seaborn.algorithms.bootstrap``, percentile interval), so a table's interval
is the one its figure draws with ``errorbar=("ci", 95)``, seeded alike.  Two points whose intervals
overlap are *not distinguishable*: no winner is named between them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from seaborn.algorithms import bootstrap
from seaborn.utils import ci

BOOTSTRAPS = 1000  # seaborn's default for its error bars
SEED = 0
#: A figure's error bars over the seeds of each point: the mean and its 95 % bootstrap interval, seeded, so
#: that a redrawn report draws the same bars (a point of one run has none).
CI_BARS = {"errorbar": ("ci", 95), "n_boot": BOOTSTRAPS, "seed": SEED}


@dataclass(frozen=True)
class Interval:
    """The mean of ``n`` repeats and its 95 % bootstrap interval (``low == high == mean`` for one run)."""

    mean: float
    low: float
    high: float
    n: int

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high

    def __str__(self) -> str:
        if self.n < 2:
            return f"{self.mean:.3g} (1 run)"
        return f"{self.mean:.3g} [{self.low:.3g}, {self.high:.3g}]"


def interval(values) -> Interval:
    """:class:`Interval` of ``values`` (NaNs dropped)."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return Interval(np.nan, np.nan, np.nan, 0)
    mean = float(values.mean())
    if len(values) == 1:
        return Interval(mean, mean, mean, 1)
    low, high = ci(bootstrap(values, n_boot=BOOTSTRAPS, func="mean", seed=SEED), 95)
    return Interval(mean, float(low), float(high), len(values))


def compare(a: Interval, b: Interval, name_a: str, name_b: str, lower_is_better: bool = True) -> str:
    """Which of two points is better, or that they are not distinguishable (intervals overlap, or a single run)."""
    if min(a.n, b.n) < 2 or a.overlaps(b):
        return "not distinguishable"
    better = (a.mean < b.mean) == lower_is_better
    return f"{name_a if better else name_b} better"
