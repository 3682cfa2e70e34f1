"""Consistent Grouping (Nasir et al. 2017): the kernel routes as its plain reference, a hot key spills over
its chain of virtual workers to every worker, and a worker told at half capacity gets half the load."""
import numpy as np
import pytest

from skewbench.hashing import fingerprints
from skewbench.scheme import make_scheme
from skewbench.schemes.consistent_grouping import route_reference, virtual_owners
from skewbench.speeds import SpeedError


def zipf_fps(n=20_000, z=1.3, keys=2000, seed=0):
    return fingerprints(np.random.default_rng(seed).zipf(z, n) % keys)


@pytest.mark.parametrize("workers,capacity", [(1, ""), (2, ""), (7, "2@0.5"), (30, "20%@0.25")])
def test_the_kernel_routes_as_the_reference(workers, capacity):
    fps = zipf_fps(6_000)
    scheme = make_scheme("cg", workers, seed=5, virtual=20, capacity=capacity)
    routes = np.concatenate([scheme.route_many(part) for part in np.array_split(fps, 3)])
    owners = virtual_owners(workers, 20, capacity, 5)
    assert np.array_equal(routes, route_reference(fps, owners, np.zeros(len(owners)), 1.01, 5))


def test_virtual_workers_follow_capacity():
    owners = virtual_owners(4, 100, "1@0.5+1@2", seed=0)
    assert np.bincount(owners).tolist() == [50, 200, 100, 100]
    assert not np.array_equal(owners, np.sort(owners))  # spread over the hash range, not in blocks


def test_a_hot_key_spills_to_every_worker_and_capacity_halves_the_slow_workers_share():
    fps = zipf_fps(60_000, z=1.1, keys=20_000)
    equal = np.bincount(make_scheme("cg", 10, seed=1).route_many(fps), minlength=10)
    told = np.bincount(make_scheme("cg", 10, seed=1, capacity="1@0.5").route_many(fps), minlength=10)
    assert equal.max() / equal.mean() < 1.05  # the hottest key (p1 ≈ 9 % > 1/W) spread too
    assert told[0] / told[1:].mean() == pytest.approx(0.5, abs=0.05)
    hot = np.repeat(fps[:1], 5_000)
    assert (np.bincount(make_scheme("cg", 10, seed=1).route_many(hot), minlength=10) > 0).all()


@pytest.mark.parametrize("params,message", [({"virtual": 0}, "virtual must be >= 1"),
                                            ({"spill": 0.9}, "spill >= 1"),
                                            ({"capacity": "9@0.5"}, "names 9 slow workers")])
def test_bad_parameters_say_what_is_wrong(params, message):
    with pytest.raises((ValueError, SpeedError), match=message):
        make_scheme("cg", 4, **params)
