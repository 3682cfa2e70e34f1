import numpy as np
import pytest

from skewbench.hashing import fingerprints, murmur64
from skewbench.schemes.consistent import ConsistentHash, lookup, lookup_reference, ring

KEYS = fingerprints(np.arange(50_000))


def test_ring_has_vnodes_points_per_worker_and_keeps_them_when_workers_are_added():
    points, owners = ring(5, 40, seed=3)
    assert len(points) == 200 and np.bincount(owners).tolist() == [40] * 5
    assert (points[1:] >= points[:-1]).all()
    bigger_points, bigger_owners = ring(6, 40, seed=3)
    for w in range(5):  # a worker's points depend on (worker, replica, seed) only
        np.testing.assert_array_equal(np.sort(points[owners == w]), np.sort(bigger_points[bigger_owners == w]))


def test_route_is_the_owner_of_the_first_point_clockwise():
    scheme = ConsistentHash(4, seed=7, vnodes=3)
    points, owners = ring(4, 3, seed=7)
    positions = murmur64(KEYS[:500], 7)
    for pos, routed in zip(positions.tolist(), scheme.route_many(KEYS[:500]).tolist()):
        after = [(p, o) for p, o in zip(points.tolist(), owners.tolist()) if p >= pos]
        expected = min(after)[1] if after else owners[np.argmin(points)]  # wrap around past the top
        assert routed == expected


def test_kernel_equals_numpy_reference_with_and_without_a_table():
    points, owners = ring(9, 50, seed=2)
    rng = np.random.default_rng(0)
    fps = KEYS[rng.integers(0, len(KEYS), 20_000)]
    table_keys = np.sort(rng.choice(KEYS[:5000], 300, replace=False))
    table_workers = rng.integers(0, 9, 300)
    for tk, tw in [(table_keys, table_workers), (np.empty(0, np.uint64), np.empty(0, np.int64))]:
        np.testing.assert_array_equal(lookup(fps, tk, tw, points, owners, 2),
                                      lookup_reference(fps, tk, tw, points, owners, 2))
    routed = lookup(table_keys, table_keys, table_workers, points, owners, 2)
    np.testing.assert_array_equal(routed, table_workers)


@pytest.mark.parametrize("workers", [3, 10, 40])
def test_adding_a_worker_moves_only_its_fair_share_and_only_to_it(workers):
    before = ConsistentHash(workers, seed=1).route_many(KEYS)
    after = ConsistentHash(workers + 1, seed=1).route_many(KEYS)
    moved = before != after
    assert (after[moved] == workers).all()  # never between existing workers
    share = 1 / (workers + 1)
    assert abs(moved.mean() - share) < 0.25 * share
    # ... and key grouping (h mod W) would have moved most keys
    kg = [murmur64(KEYS, 1) % np.uint64(w) for w in (workers, workers + 1)]
    assert (kg[0] != kg[1]).mean() > 0.5


def test_keys_are_spread_evenly_with_many_vnodes():
    counts = np.bincount(ConsistentHash(10, seed=0).route_many(KEYS), minlength=10)
    assert counts.max() / counts.mean() < 1.1 and counts.min() / counts.mean() > 0.9


def test_candidates_is_the_route_and_one_worker_takes_everything():
    scheme = ConsistentHash(6, seed=4)
    assert [int(scheme.candidates(int(fp))[0]) for fp in KEYS[:50]] == scheme.route_many(KEYS[:50]).tolist()
    assert (ConsistentHash(1).route_many(KEYS[:100]) == 0).all()


def test_vnodes_must_be_positive():
    with pytest.raises(ValueError, match="vnodes"):
        ConsistentHash(3, vnodes=0)
