"""The contract of skewbench.scheme, checked for every registered scheme."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import skewbench.schemes  # noqa: F401  (registers every scheme)
from skewbench.hashing import fingerprints
from skewbench.scheme import MOVE_DTYPE, REGISTRY, Plan, Scheme, Stats, make_scheme
from skewbench.schemes.greedy import OnGreedy
from skewbench.schemes.shuffle_grouping import ShuffleGrouping
from skewbench.sources import prepare_scheme, source_of_each_message, source_routers
from skewbench.stream import Stream

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


@pytest.mark.parametrize("name", [n for n in NAMES if REGISTRY[n].stateless])
def test_a_stateless_scheme_routes_any_order_alike_and_changes_nothing(name):
    fps = skewed_fps()
    scheme = fresh(name, 7, fps)
    before = pickle.dumps(scheme)
    routes = scheme.route_many(fps, now_of(fps))
    assert pickle.dumps(scheme) == before  # routing changed no state
    backwards = scheme.route_many(fps[::-1], now_of(fps)[::-1])[::-1]
    np.testing.assert_array_equal(backwards, routes)


def test_the_hash_schemes_and_fitted_tables_are_stateless():
    assert {n for n in NAMES if REGISTRY[n].stateless} == {"kg", "consistent", "off-greedy"}


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


# -- where a key's state may live -----------------------------------------------------------------------

@pytest.mark.parametrize("workers", [1, 7])
@pytest.mark.parametrize("name", NAMES)
def test_holder_pairs_are_grouped_by_row_with_ascending_distinct_workers(name, workers):
    fps = skewed_fps(500)
    scheme = fresh(name, workers, fps)
    rows, held = scheme.holder_pairs(fps.view(np.int64))  # the Spark rows' int64 view of the fingerprints
    assert rows.dtype == held.dtype == np.int64
    np.testing.assert_array_equal(np.unique(rows), np.arange(len(fps)))  # every key has a holder
    assert np.all(np.diff(rows) >= 0) and held.min() >= 0 and held.max() < workers
    assert np.all(np.diff(held)[np.diff(rows) == 0] > 0)
    for i in (0, 17, 499):
        np.testing.assert_array_equal(scheme.holders(int(fps[i])), held[rows == i])
    assert [len(a) for a in scheme.holder_pairs(fps[:0])] == [0, 0]


def test_holders_of_each_kind():
    fp, w = int(skewed_fps()[0]), 6
    for name in ("pkg", "pkg-global", "pkg-probe", "potc"):  # each source picks either hash choice
        np.testing.assert_array_equal(make_scheme(name, w, seed=5).holders(fp),
                                      np.sort(make_scheme("pkg", w, seed=5).candidates(fp)))
    for name in ("sg", "dchoices", "wchoices", "dkg", "on-greedy"):
        assert make_scheme(name, w).holds_every_key()
        np.testing.assert_array_equal(make_scheme(name, w).holders(fp), np.arange(w))
    for name in ("kg", "consistent"):
        assert not make_scheme(name, w).holds_every_key()
        assert make_scheme(name, w).holders(fp).tolist() == make_scheme(name, w).candidates(fp).tolist()
    assert make_scheme("pkg", 1).holds_every_key() and make_scheme("pkg", 1).holders(fp).tolist() == [0]


def test_a_key_splitting_scheme_must_say_where_its_keys_live():
    class Splitter(ShuffleGrouping):
        state_everywhere = False
    with pytest.raises(NotImplementedError, match="override holder_pairs"):
        Splitter(4).holders(1)


def skewed_stream(n: int = 6000, seed: int = 0) -> Stream:
    """:func:`skewed_fps` as a stream (one message per second: DKG's promotion cycles run)."""
    return Stream("skewed", np.random.default_rng(seed).zipf(1.3, n) % 400)


def assert_routes_among_holders(proto: Scheme, stream: Stream, sources: int) -> None:
    """Route ``stream`` from ``sources`` sources the way the simulator does; every worker a key went
    to must be among its holders, asked of every source's router before and after routing."""
    routers = source_routers(proto, sources)
    source = source_of_each_message(stream, len(routers), "shuffle")
    keys, key_of = np.unique(stream.fps, return_inverse=True)

    def held(router):
        rows, workers = router.holder_pairs(keys)
        return rows * router.workers + workers

    before = [held(r) for r in routers]
    routed = np.empty(stream.messages, dtype=np.int64)
    for s, router in enumerate(routers):
        mine = np.flatnonzero(source == s)
        routed[mine] = key_of[mine] * proto.workers + router.route_many(stream.fps[mine], stream.clock[mine])
    for pairs in before + [held(r) for r in routers]:
        missing = np.setdiff1d(routed, pairs)
        assert not len(missing), (f"{proto.name}: key fp={int(keys[missing[0] // proto.workers])} routed to worker "
                                  f"{missing[0] % proto.workers}, which is not among its holders")


@pytest.mark.parametrize("workers", [2, 7])
@pytest.mark.parametrize("name", NAMES)
def test_routed_workers_are_among_the_holders_on_every_source(name, workers):
    """An app sends a key's reads to its holders: they must cover every worker any source stores it
    at, whichever source is asked and when (offline schemes fitted, adaptive ones planned once)."""
    stream = skewed_stream()
    assert_routes_among_holders(prepare_scheme(name, workers, stream, seed=3), stream, sources=3)


def test_the_holder_check_catches_a_scheme_that_answers_for_its_own_source_only():
    class Forgetful(OnGreedy):  # candidates are this source's table: the other sources place keys elsewhere
        state_everywhere = False
    with pytest.raises(AssertionError, match="not among its holders"):
        assert_routes_among_holders(Forgetful(7), skewed_stream(), sources=3)
