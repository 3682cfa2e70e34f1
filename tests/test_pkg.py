import numpy as np
import pytest

from skewbench.hashing import distinct_choices, fingerprints
from skewbench.schemes.pkg import PartialKeyGrouping, _route_two_choices, _route_two_choices_reference


def test_kernel_equals_numpy_reference():
    fps = fingerprints(np.random.default_rng(1).zipf(1.5, 20_000) % 2000)
    loads_a, loads_b = np.zeros(13), np.zeros(13)
    out = np.empty(len(fps), dtype=np.int64)
    _route_two_choices(fps, 13, 4, loads_a, out)
    np.testing.assert_array_equal(out, _route_two_choices_reference(fps, 13, 4, loads_b))
    np.testing.assert_array_equal(loads_a, loads_b)


@pytest.mark.parametrize("workers", [2, 3, 10, 100])
def test_two_choices_are_distinct_for_every_key(workers):
    # Storm 1.x's PKG took h1 % W and h2 % W independently: 1/W of keys got a single worker.
    scheme = PartialKeyGrouping(workers, seed=5)
    fps = fingerprints(np.arange(20_000))
    assert all(len(set(scheme.candidates(int(fp)).tolist())) == 2 for fp in fps[:2000])
    assert (distinct_choices(fps, workers, 2, 5)[:, 0] != distinct_choices(fps, workers, 2, 5)[:, 1]).all()


def test_first_choice_is_key_grouping():
    from skewbench.schemes.key_grouping import KeyGrouping

    fps = fingerprints(np.arange(1000))
    np.testing.assert_array_equal(KeyGrouping(10, seed=3).route_many(fps), distinct_choices(fps, 10, 2, 3)[:, 0])


def test_local_estimates_sum_to_the_true_loads():
    fps = fingerprints(np.random.default_rng(2).zipf(1.4, 30_000) % 500)
    sources = [PartialKeyGrouping(8, seed=1).spawn() for _ in range(3)]
    routes = np.concatenate([src.route_many(fps[s::3]) for s, src in enumerate(sources)])
    merged = sources[0].merge(sources[1]).merge(sources[2])
    np.testing.assert_array_equal(merged.loads, np.bincount(routes, minlength=8))


def test_one_hot_key_is_split_evenly_over_its_two_workers():
    scheme = PartialKeyGrouping(10, seed=0)
    routes = scheme.route_many(fingerprints(np.zeros(1001, dtype=np.int64)))
    counts = np.bincount(routes, minlength=10)
    assert sorted(counts[counts > 0].tolist()) == [500, 501]
