import pickle
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skewbench.hashing import fingerprints
from skewbench.schemes.space_saving import SpaceSaving, space_saving_reference

streams = st.lists(st.integers(0, 40), min_size=1, max_size=400)
capacities = st.integers(1, 12)


def fed(fps, capacity, cut=None):
    sketch = SpaceSaving(capacity)
    cut = len(fps) // 2 if cut is None else cut
    sketch.update(np.array(fps[:cut], dtype=np.uint64))
    sketch.update(np.array(fps[cut:], dtype=np.uint64))
    return sketch


@given(streams, capacities)
def test_kernel_equals_reference(fps, capacity):
    keys, counts, errors = fed(fps, capacity).entries()
    got = {int(k): (int(c), int(e)) for k, c, e in zip(keys, counts, errors)}
    assert got == space_saving_reference(fps, capacity)


@given(streams, capacities)
def test_guarantees_against_exact_counts(fps, capacity):
    sketch, true = fed(fps, capacity), Counter(fps)
    n = len(fps)
    keys, counts, errors = sketch.entries()
    assert counts.sum() == n  # every message is in some counter
    low = sketch.min_count()
    assert low * capacity <= n
    for k, c, e in zip(keys.tolist(), counts.tolist(), errors.tolist()):
        assert c - e <= true[k] <= c  # count − error is guaranteed, count an overestimate
        assert e <= low
    tracked = set(keys.tolist())
    for k, t in true.items():
        if t > n / capacity:
            assert k in tracked  # every key with frequency > 1/capacity is tracked
        if k not in tracked:
            assert t <= low
        assert sketch.estimate(k) == ((0, 0) if k not in tracked else
                                      (int(counts[keys == k][0]), int(errors[keys == k][0])))


def test_index_survives_many_evictions_with_colliding_keys():
    rng = np.random.default_rng(0)
    fps = rng.integers(0, 5000, 30_000).astype(np.uint64) * np.uint64(1 << 40)  # low bits all equal
    sketch = fed(fps, 64)
    keys, counts, errors = sketch.entries()
    assert {int(k): (int(c), int(e)) for k, c, e in zip(keys, counts, errors)} == space_saving_reference(fps, 64)
    assert counts.sum() == len(fps)


def test_top_key_of_a_zipf_stream_and_pickle():
    fps = fingerprints(np.random.default_rng(1).zipf(1.5, 20_000))
    sketch = fed(fps, 100)
    keys, counts, errors = sketch.top(3)
    assert keys[0] == fingerprints([1])[0] and counts[0] >= counts[1] >= counts[2]
    clone = pickle.loads(pickle.dumps(sketch))
    sketch.update(fps[:5000])
    clone.update(fps[:5000])
    assert all((a == b).all() for a, b in zip(sketch.entries(), clone.entries()))


@pytest.mark.parametrize("workers", [20, 50])
def test_guaranteed_counts_find_no_heavy_keys_in_a_uniform_stream(workers):
    """DESIGN.md: counting the error twice (public simulator) flags almost every tracked key."""
    theta = 1 / (5 * workers)
    fps = fingerprints(np.random.default_rng(2).integers(0, 10_000, 100_000))
    sketch = fed(fps, 100)  # the public simulator's capacity
    heavy, _ = sketch.heavy(theta)
    assert len(heavy) == 0
    keys, counts, errors = sketch.entries()
    double_counted = (counts + errors) / sketch.n > theta
    assert double_counted.mean() > 0.9


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="capacity"):
        SpaceSaving(0)
