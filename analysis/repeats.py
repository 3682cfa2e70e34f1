"""Repeated runs of one point: a mean with a 95 % interval, and whether two points can be told apart.

A bench point run with several seeds gives a few numbers; their mean and its 95 % interval come from
seaborn's own bootstrap (``seaborn.algorithms.bootstrap``, percentile interval), so a table's interval
is the one its figure draws with ``errorbar=("ci", 95)``, seeded alike.

A winner between two points is named only when the 95 % interval of their *difference* excludes zero
(:func:`difference`, Student's t as pyperf's significance test): paired over the seeds both ran (the same
stream, so the stream's share of the variation cancels), Welch's otherwise, one-sample against a
constant.  Otherwise the two are *not distinguishable*.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from seaborn.algorithms import bootstrap
from seaborn.utils import ci

BOOTSTRAPS = 1000  # seaborn's default for its error bars
SEED = 0
LEVEL = 0.95
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

    def __str__(self) -> str:
        if self.n < 2:
            return f"{self.mean:.3g} (1 run)"
        return f"{self.mean:.3g} [{self.low:.3g}, {self.high:.3g}]"


def interval(values) -> Interval:
    """:class:`Interval` of ``values`` (NaNs dropped)."""
    values = _finite(values)
    if len(values) == 0:
        return Interval(np.nan, np.nan, np.nan, 0)
    mean = float(values.mean())
    if len(values) == 1:
        return Interval(mean, mean, mean, 1)
    low, high = ci(bootstrap(values, n_boot=BOOTSTRAPS, func="mean", seed=SEED), 95)
    return Interval(mean, float(low), float(high), len(values))


@dataclass(frozen=True)
class Difference:
    """The mean of a − b and its 95 % t interval; ``n`` the fewer seeds of the two sides, ``method`` the test
    (NaN bounds where a side has fewer than two seeds: no interval)."""

    mean: float
    low: float
    high: float
    n: int
    method: str

    def excludes_zero(self) -> bool:
        return bool(self.low > 0 or self.high < 0)

    def __str__(self) -> str:
        return f"{self.mean:.4g} [{self.low:.4g}, {self.high:.4g}] ({self.method}, {self.n} seeds)"


def difference(a, b) -> Difference:
    """a − b, each a Series of values by seed or a plain number (a constant, without variation): paired t
    when both sides ran the same seeds, Welch's t when not, one-sample t against a constant."""
    if not isinstance(b, pd.Series):
        return _mean_interval(_seeds(a) - float(b), "one-sample t")
    if not isinstance(a, pd.Series):
        return _mean_interval(float(a) - _seeds(b), "one-sample t")
    a, b = _seeds(a), _seeds(b)
    if len(a) >= 2 and set(a.index) == set(b.index):
        return _mean_interval(a - b[a.index], "paired t")
    return _welch(a, b)


def _seeds(side) -> pd.Series:
    if not isinstance(side, pd.Series):
        raise ValueError("a difference needs at least one side with seeds")
    return side.dropna().astype(float)


def _finite(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values[~np.isnan(values)]


def _mean_interval(d: pd.Series, method: str) -> Difference:
    n, mean = len(d), float(d.mean()) if len(d) else np.nan
    if n < 2:
        return Difference(mean, np.nan, np.nan, n, method)
    half = stats.t.ppf((1 + LEVEL) / 2, n - 1) * float(d.std(ddof=1)) / np.sqrt(n)
    return Difference(mean, mean - half, mean + half, n, method)


def _welch(a: pd.Series, b: pd.Series) -> Difference:
    n, mean = min(len(a), len(b)), float(a.mean() - b.mean())
    if n < 2:
        return Difference(mean, np.nan, np.nan, n, "Welch's t")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if va + vb == 0:
        return Difference(mean, mean, mean, n, "Welch's t")
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = stats.t.ppf((1 + LEVEL) / 2, df) * np.sqrt(va + vb)
    return Difference(mean, mean - half, mean + half, n, "Welch's t")


def compare(a, b, name_a: str, name_b: str, lower_is_better: bool = True) -> str:
    """Which of two points (their runs' values) is better, or that they are not distinguishable: the 95 %
    interval of their difference (Welch's t) includes zero, or a point has a single run."""
    gap = _welch(pd.Series(_finite(a)), pd.Series(_finite(b)))  # rows of two points: not paired by seed
    if not gap.excludes_zero():
        return "not distinguishable"
    better = (gap.mean < 0) == lower_is_better
    return f"{name_a if better else name_b} better"
