import pickle

import numpy as np
import pytest

from skewbench.hashing import distinct_choices, fingerprints
from skewbench.scheme import make_scheme
from skewbench.schemes.choices import DChoices, WChoices, choices_needed, route_reference
from skewbench.simulator import simulate
from skewbench.stream import Stream

ZIPF = fingerprints(np.random.default_rng(0).zipf(1.5, 4000) % 300)


def conditions_hold(freqs, workers, d, eps=1e-3):
    """The two D-Choices conditions, written out independently of the module."""
    f = np.asarray(freqs, dtype=float)
    p_head, p_top, p_tail, h = f.sum(), f.max(), 1 - f.sum(), len(f)
    b_top = d / workers
    b_head = 1 - (1 - b_top) ** h
    return (p_head + p_tail * b_head**2 <= b_head + eps
            and p_top + (p_head - p_top) * b_top**d + p_tail * b_top**2 <= b_top + eps)


# -- how many choices ---------------------------------------------------------------------------

def test_choices_needed_by_hand():
    # one key of frequency 0.2 over 10 workers: d = 2 covers 0.2 < 0.2 + 0.8·0.04; d = 3 fits
    assert choices_needed([0.2], 10) == 3
    assert not conditions_hold([0.2], 10, 2) and conditions_hold([0.2], 10, 3)
    # a single key with half the stream and a thin tail: p + (1 − p)b² ≤ b needs b = 1
    assert choices_needed([0.5], 10) == 10
    assert choices_needed([], 10) == 2
    assert choices_needed([0.9], 2) == 2 and choices_needed([0.9], 1) == 1


@pytest.mark.parametrize("seed", range(20))
def test_choices_needed_is_the_smallest_d_meeting_both_conditions(seed):
    rng = np.random.default_rng(seed)
    workers = int(rng.integers(3, 120))
    head = np.sort(rng.dirichlet(np.ones(int(rng.integers(1, 8)))) * rng.uniform(0.05, 0.95))[::-1]
    d = choices_needed(head, workers)
    start = max(2, int(np.ceil(head[0] * workers - 1e-9)))
    assert d >= min(start, workers)
    if d < workers:
        assert conditions_hold(head, workers, d)
    assert not any(conditions_hold(head, workers, x) for x in range(start, d))


def test_more_skew_needs_more_choices():
    ds = [choices_needed([p1, 0.05], 50) for p1 in (0.06, 0.1, 0.2, 0.3, 0.4)]
    assert ds == sorted(ds) and ds[0] < ds[-1]


# -- routing ------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [DChoices, WChoices])
def test_kernel_equals_reference(cls):
    scheme = cls(10, seed=3, theta=0.05, capacity=30, refresh=50, warmup=20)
    got = np.concatenate([scheme.route_many(ZIPF[i:i + 900]) for i in range(0, len(ZIPF), 900)])
    ref = route_reference(ZIPF, 10, 3, cls.all_workers, 0.05, 20, 50, 1e-3, 0, 30)
    np.testing.assert_array_equal(got, ref)
    assert len(scheme.head()) > 0  # the test exercised head routing


def test_kernel_equals_reference_with_fixed_d():
    scheme = DChoices(12, seed=1, theta=0.02, capacity=200, d=5)
    ref = route_reference(ZIPF, 12, 1, False, 0.02, 50, 1000, 1e-3, 5, 200)
    np.testing.assert_array_equal(scheme.route_many(ZIPF), ref)
    assert scheme.head_choices == 5


def test_head_keys_use_exactly_their_d_choices_and_tail_keys_two():
    ids = np.random.default_rng(1).zipf(1.4, 60_000)
    fps = fingerprints(ids)
    scheme = DChoices(40, seed=2)
    routes = scheme.route_many(fps)
    d = scheme.head_choices
    assert 2 < d < 40
    top = fps[ids == 1][0]
    its_d = set(distinct_choices(np.array([top]), 40, d, 2)[0].tolist())
    assert set(routes[-20_000:][ids[-20_000:] == 1].tolist()) == its_d
    assert set(scheme.candidates(int(top)).tolist()) == its_d
    rare = fingerprints([10**7])[0]
    assert set(scheme.candidates(int(rare)).tolist()) == set(distinct_choices(np.array([rare]), 40, 2, 2)[0].tolist())
    assert WChoices(40, seed=2).spawn().candidates(int(top)).size == 2  # nothing is head before warm-up


@pytest.mark.parametrize("workers", [20, 50])
@pytest.mark.parametrize("name", ["dchoices", "wchoices"])
def test_uniform_stream_has_no_head_so_routes_equal_pkg(name, workers):
    fps = fingerprints(np.random.default_rng(2).integers(0, 10_000, 100_000))
    # Even with the public simulator's 100 counters; d = 5 so a head key would route differently.
    scheme = make_scheme(name, workers, seed=4, capacity=100, **({"d": 5} if name == "dchoices" else {}))
    np.testing.assert_array_equal(scheme.route_many(fps), make_scheme("pkg", workers, seed=4).route_many(fps))
    assert len(scheme.head()) == 0


def test_pickled_copy_routes_identically_mid_stream():
    scheme = DChoices(16, seed=7)
    fps = fingerprints(np.random.default_rng(3).zipf(1.3, 30_000))
    scheme.route_many(fps[:20_000])
    clone = pickle.loads(pickle.dumps(scheme))
    np.testing.assert_array_equal(clone.route_many(fps[20_000:]), scheme.route_many(fps[20_000:]))


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="theta"):
        DChoices(5, theta=0)
    with pytest.raises(ValueError, match="refresh"):
        WChoices(5, refresh=0)


# -- the paper's claim --------------------------------------------------------------------------

def test_more_choices_beat_pkg_on_zipf_2_at_50_workers():
    """ICDE 2016: with p₁ ≫ 2/W, PKG's two workers of the top key saturate; D-C and W-C do not."""
    stream = Stream("zipf2.0", np.random.default_rng(5).zipf(2.0, 200_000) % 100_000)
    rows = {name: simulate(stream, name, workers=50, sources=5).row for name in ("pkg", "dchoices", "wchoices")}
    pkg = rows["pkg"]["avg_imbalance"]
    assert rows["dchoices"]["avg_imbalance"] < 0.05 * pkg
    assert rows["wchoices"]["avg_imbalance"] < 0.05 * pkg
    assert rows["dchoices"]["counters"] <= rows["wchoices"]["counters"]  # fewer replicas of the head


def test_kernel_equals_reference_when_the_head_drifts_and_the_choice_cache_is_emptied():
    rng = np.random.default_rng(6)
    blocks, hot = [], []
    for b in range(8):  # doubling blocks, each with 5 new hot keys holding 3/4 of it
        size, keys = 200 * 2**b, np.arange(5) + 5 * b
        blocks.append(np.where(rng.random(size) < 0.75, rng.choice(keys, size), rng.integers(1000, 5000, size)))
        hot.append(keys)
    ids = np.concatenate(blocks)
    fps = fingerprints(ids)
    scheme = DChoices(30, seed=2, theta=0.05, capacity=100, refresh=100, warmup=20)
    routes = scheme.route_many(fps)
    spread = [len(np.unique(routes[ids == k])) for k in np.concatenate(hot)]
    assert min(spread) > 2  # all 40 hot keys went through the 64-slot cache, emptied at 32 entries
    assert scheme._cache_size[0] < 40
    np.testing.assert_array_equal(routes, route_reference(fps, 30, 2, False, 0.05, 20, 100, 1e-3, 0, 100))
