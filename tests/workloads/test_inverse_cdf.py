"""The guide-table inverse CDF gives exactly numpy's binary search (the streams must not change)."""

import numpy as np
import pytest

from skewbench.workloads.inverse_cdf import InverseCdf
from skewbench.workloads.synthetic import zipf_cdf


def reference(cdf: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    return np.minimum(np.searchsorted(cdf, uniform, side="right"), len(cdf) - 1)


def hard_draws(cdf: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """Uniform draws plus every CDF value, its float neighbours, slice edges j/K and 1⁻."""
    keys = len(cdf)
    edges = np.arange(keys) / keys
    special = np.concatenate([cdf, np.nextafter(cdf, 0), np.nextafter(cdf, 1), edges, np.nextafter(edges, 0),
                              np.nextafter(edges, 1), [0.0, np.nextafter(1.0, 0)]])
    special = special[(special >= 0) & (special < 1)]
    return np.concatenate([np.random.default_rng(seed).random(n), special])


@pytest.mark.parametrize("cdf", [
    zipf_cdf(1.0, 1), zipf_cdf(0.0, 7), zipf_cdf(1.2, 1000), zipf_cdf(0.6, 100_000),
    np.cumsum([0.25, 0.0, 0.0, 0.5, 0.0, 0.25]),  # keys that can never be drawn: flat steps
    np.cumsum(np.r_[np.full(10, 0.1 - 1e-17), 0.0]) / np.sum(np.r_[np.full(10, 0.1 - 1e-17), 0.0]),
])
def test_ranks_equal_numpys_binary_search_with_and_without_the_guide(cdf):
    uniform = hard_draws(cdf, 50_000)
    guided = InverseCdf(cdf)
    np.testing.assert_array_equal(guided(uniform), reference(cdf, uniform))
    few = InverseCdf(cdf)
    small = uniform[: max(1, len(cdf) // 32)]
    np.testing.assert_array_equal(few(small), reference(cdf, small))
