"""The contract of skewbench.scheme, checked for every registered scheme."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import skewbench.schemes  # noqa: F401  (registers every scheme)
from skewbench.hashing import fingerprints
from skewbench.scheme import MOVE_DTYPE, REGISTRY, Plan, Stats, make_scheme

NAMES = sorted(REGISTRY)
WORKER_COUNTS = [1, 2, 7, 100]


def skewed_fps(n: int = 3000, seed: int = 0) -> np.ndarray:
    """A Zipf-ish stream: a few hot keys and a long tail, as fingerprints."""
    rng = np.random.default_rng(seed)
    return fingerprints(rng.zipf(1.3, n) % 400)


def fresh(name: str, workers: int, fps: np.ndarray, seed: int = 3):
    scheme = make_scheme(name, workers, seed=seed)
    if scheme.offline:
        keys, counts = np.unique(fps, return_counts=True)
        scheme.fit(Stats(keys=keys, counts=counts.astype(float), loads=np.zeros(workers)))
    return scheme


def now_of(fps: np.ndarray) -> np.ndarray:
    return np.arange(len(fps), dtype=np.float64) * 1e-3


def test_registry_has_the_issue_names():
    expected = {"kg", "sg", "pkg", "pkg-global", "pkg-probe", "potc", "on-greedy", "off-greedy", "consistent",
                "dchoices", "wchoices", "dkg", "gedik-scan", "gedik-redist", "gedik-readj", "llfd",
                "mintable", "minmig", "mixed"}
    assert expected <= set(REGISTRY), f"missing: {sorted(expected - set(REGISTRY))}"


def test_unknown_scheme_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown scheme 'nope'.*pkg"):
        make_scheme("nope", 4)


@pytest.mark.parametrize("name", NAMES)
def test_workers_must_be_positive(name):
    with pytest.raises(ValueError):
        make_scheme(name, 0)


@pytest.mark.parametrize("workers", WORKER_COUNTS)
@pytest.mark.parametrize("name", NAMES)
def test_route_many_equals_route_loop_and_stays_in_range(name, workers):
    fps = skewed_fps()
    batch = fresh(name, workers, fps).route_many(fps, now_of(fps))
    single = fresh(name, workers, fps)
    loop = np.array([single.route(int(fp), float(t)) for fp, t in zip(fps, now_of(fps))])
    assert batch.dtype.kind == "i" and batch.shape == fps.shape
    np.testing.assert_array_equal(batch, loop)
    assert batch.min() >= 0 and batch.max() < workers


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_routes_in_batches(name):
    fps = skewed_fps()
    whole = fresh(name, 7, fps).route_many(fps, now_of(fps))
    chunked = fresh(name, 7, fps)
    parts = [chunked.route_many(fps[i:i + 500], now_of(fps)[i:i + 500]) for i in range(0, len(fps), 500)]
    np.testing.assert_array_equal(whole, np.concatenate(parts))


@pytest.mark.parametrize("name", NAMES)
def test_routes_are_among_the_candidates(name):
    fps = skewed_fps(1500)
    scheme = fresh(name, 7, fps)
    for fp, t in zip(fps, now_of(fps)):
        before = scheme.candidates(int(fp))
        again = scheme.candidates(int(fp))
        np.testing.assert_array_equal(before, again)  # pure: asking does not change anything
        assert scheme.route(int(fp), float(t)) in set(before.tolist())


@pytest.mark.parametrize("name", NAMES)
def test_pickle_round_trip_keeps_state(name):
    fps = skewed_fps()
    scheme = fresh(name, 7, fps)
    scheme.route_many(fps[:1000], now_of(fps)[:1000])
    clone = pickle.loads(pickle.dumps(scheme))
    np.testing.assert_array_equal(clone.route_many(fps[1000:], now_of(fps)[1000:]),
                                  scheme.route_many(fps[1000:], now_of(fps)[1000:]))


@pytest.mark.parametrize("name", NAMES)
def test_spawn_starts_empty_with_same_parameters(name):
    fps = skewed_fps()
    used = fresh(name, 7, fps)
    used.route_many(fps, now_of(fps))
    twin = used.spawn()
    if used.offline:
        assert twin.offline
        return
    np.testing.assert_array_equal(twin.route_many(fps, now_of(fps)), fresh(name, 7, fps).route_many(fps, now_of(fps)))


@pytest.mark.parametrize("name", [n for n in NAMES if not REGISTRY[n].splits_keys])
def test_schemes_without_key_splitting_keep_each_key_on_one_worker(name):
    fps = skewed_fps()
    routes = fresh(name, 7, fps).route_many(fps, now_of(fps))
    per_key = {}
    for fp, w in zip(fps.tolist(), routes.tolist()):
        per_key.setdefault(fp, set()).add(w)
    if not REGISTRY[name].adaptive:
        assert all(len(ws) == 1 for ws in per_key.values())


@pytest.mark.parametrize("name", [n for n in NAMES if REGISTRY[n].adaptive])
def test_adaptive_plans_are_data_and_install_everywhere(name):
    fps = skewed_fps(5000)
    controller = fresh(name, 7, fps)
    routes = controller.route_many(fps, now_of(fps))
    keys, counts = np.unique(fps, return_counts=True)
    stats = Stats(keys=keys, counts=counts.astype(float), loads=np.bincount(routes, minlength=7).astype(float),
                  now=float(now_of(fps)[-1]))
    for workers in (None, 8):
        plan = controller.rebalance(stats, workers=workers)
        assert isinstance(plan, Plan)
        assert plan.table_keys.dtype == np.uint64 and len(plan.table_keys) == len(plan.table_workers)
        assert plan.moves.dtype == MOVE_DTYPE
        assert plan.workers == (workers or 7)
        assert plan.table_workers.size == 0 or plan.table_workers.max() < plan.workers
        follower = pickle.loads(pickle.dumps(fresh(name, 7, fps)))
        follower.apply(plan)
        controller.apply(plan)
        probe = fps[:500]
        np.testing.assert_array_equal(follower.route_many(probe, now_of(probe)), controller.route_many(probe, now_of(probe)))
        table = plan.table()
        routed = controller.route_many(plan.table_keys, np.zeros(len(plan.table_keys)))
        assert all(table[int(k)] == int(w) for k, w in zip(plan.table_keys, routed))
