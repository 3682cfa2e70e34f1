"""PStream (Chen, Zhang, Jin, IEEE TC 2021): the kernel routes as its plain reference (through synopsis rebuilds
and a pickled router), hot keys go round robin over every worker while rare keys keep kg's worker, a key
leaves the hot set once its counts decay, and bad parameters say what is wrong."""
import pickle

import numpy as np
import pytest

from skewbench.hashing import fingerprints
from skewbench.scheme import make_scheme
from skewbench.schemes.pstream import route_reference
from skewbench.workloads import parse


@pytest.mark.parametrize("spec,workers,messages,params", [
    ("zipf:z=1.2,keys=500", 8, 20_000, {}),
    ("zipf:z=1.0,keys=50000", 20, 60_000, {"r": 3, "decay": 0.05}),  # many samples: the synopsis is rebuilt
    ("zipf:z=2.0,keys=1000", 10, 30_000, {"decay": 1.0}),
])
def test_the_kernel_routes_as_the_reference(spec, workers, messages, params):
    fps = parse(spec, messages=messages, seed=1).fps
    router, routes = make_scheme("pstream", workers, seed=3, **params), []
    for i, piece in enumerate(np.array_split(fps, 7)):
        routes.append(router.route_many(piece))
        if i == 3:
            router = pickle.loads(pickle.dumps(router))
    assert np.array_equal(np.concatenate(routes), route_reference(make_scheme("pstream", workers, seed=3, **params),
                                                                  fps))
    assert router.hot_keys() > 0


def test_hot_keys_go_round_robin_and_rare_keys_keep_kgs_worker():
    fps = parse("zipf:z=1.5,keys=5000", messages=100_000, seed=2).fps
    routes = make_scheme("pstream", 10, seed=1).route_many(fps)
    kg = make_scheme("kg", 10, seed=1).route_many(fps)
    keys, inverse, counts = np.unique(fps, return_inverse=True, return_counts=True)
    assert len(np.unique(routes[inverse == np.argmax(counts)])) == 10  # the hottest key reaches every worker
    rare = counts[inverse] <= 2  # sampled at most twice (1 in 64): never two levels
    assert rare.sum() > 1000 and np.array_equal(routes[rare], kg[rare])
    loads = np.bincount(routes, minlength=10)
    assert loads.max() / loads.mean() < 1.2 < np.bincount(kg, minlength=10).max() / loads.mean()


def test_a_key_that_cools_down_leaves_the_hot_set():
    hot, cold = fingerprints(np.arange(2))
    router = make_scheme("pstream", 4, seed=0, decay=0.2)
    router.route_many(np.full(5_000, hot))
    assert router.hot_keys() == 1
    router.route_many(np.full(20_000, cold))  # the other key's samples decay the first's levels to nothing
    keys, flags, _, flagged_hot = router._synopsis
    assert hot not in keys[(flags == 1) & (flagged_hot == 1)] and cold in keys[flagged_hot == 1]


@pytest.mark.parametrize("params", [{"r": 0}, {"r": 8, "levels": 8}, {"levels": 40}, {"decay": 1.5}])
def test_bad_parameters_say_what_is_wrong(params):
    with pytest.raises(ValueError, match="need 1 <= r < levels <= 31 and 0 <= decay <= 1"):
        make_scheme("pstream", 4, **params)
