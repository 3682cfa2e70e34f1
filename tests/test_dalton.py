"""Dalton (Zapridou et al., PVLDB 2022): the kernel routes as its plain reference (exact counts and the
sketch's, through interval ends, table growth and a pickled router), hot keys spread while rare keys keep
kg's worker, the split cap grows, and bad parameters say what is wrong."""
import pickle

import numpy as np
import pytest

from skewbench.scheme import make_scheme
from skewbench.schemes.dalton import EXACT_KEYS, FIRST_CAP, SKETCHING, route_reference
from skewbench.workloads import parse


def routed_in_pieces(router, fps, seed=0):
    """``router`` over ``fps`` in uneven pieces, pickled and restored between two of them (as the Spark
    sources keep it between micro-batches)."""
    cuts = np.sort(np.random.default_rng(seed).choice(np.arange(1, len(fps)), 12, replace=False))
    routes = []
    for i, piece in enumerate(np.split(fps, cuts)):
        routes.append(router.route_many(piece))
        if i == 5:
            router = pickle.loads(pickle.dumps(router))
    return np.concatenate(routes), router


@pytest.mark.parametrize("spec,workers,slide,size,messages,sketching", [
    ("zipf:z=1.2,keys=500", 8, 200, 1000, 6000, False),
    ("zipf:z=2.0,keys=1000", 10, 100, 300, 5000, False),
    ("zipf:z=1.0,keys=30000", 50, 300, 1500, 20000, False),
    ("zipf:z=0.8,keys=400000", 30, 2000, 4000, 40000, True),  # past 10,000 distinct keys: the sketch counts
])
def test_the_kernel_routes_as_the_reference(spec, workers, slide, size, messages, sketching):
    fps = parse(spec, messages=messages, seed=1).fps
    routes, router = routed_in_pieces(make_scheme("dalton", workers, seed=3, slide=slide, size=size), fps)
    assert np.array_equal(routes, route_reference(make_scheme("dalton", workers, seed=3, slide=slide, size=size),
                                                  fps))
    assert router.hot_keys() > 0
    assert bool(router._c[SKETCHING]) == sketching and (len(np.unique(fps)) > EXACT_KEYS) == sketching


def test_hot_keys_spread_and_rare_keys_keep_kgs_worker():
    fps = parse("zipf:z=1.5,keys=5000", messages=60_000, seed=2).fps
    dalton = make_scheme("dalton", 10, seed=1).route_many(fps)
    kg = make_scheme("kg", 10, seed=1).route_many(fps)
    keys, inverse, counts = np.unique(fps, return_inverse=True, return_counts=True)
    hottest, rare = np.argmax(counts), counts[inverse] < 0.001 * len(fps)
    assert len(np.unique(dalton[inverse == hottest])) > FIRST_CAP  # p1 ≈ 38 % > 1/W: learned, spread, cap grew
    assert np.array_equal(dalton[rare], kg[rare])  # never hot: hashed
    assert dalton[:1000].tolist() == kg[:1000].tolist()  # nothing is hot in the first interval
    loads = np.bincount(dalton, minlength=10)
    assert loads.max() / loads.mean() < 0.5 * np.bincount(kg, minlength=10).max() / loads.mean()


def test_sources_learn_alone_with_the_same_seeded_draws():
    fps = parse("zipf:z=1.5,keys=500", messages=8000, seed=0).fps
    proto = make_scheme("dalton", 6, seed=4, slide=200, size=2000)
    twin = proto.spawn()
    assert np.array_equal(proto.route_many(fps), twin.route_many(fps))  # same messages, same seed: same routes
    assert not np.array_equal(make_scheme("dalton", 6, seed=5, slide=200, size=2000).route_many(fps),
                              make_scheme("dalton", 6, seed=4, slide=200, size=2000).route_many(fps))


@pytest.mark.parametrize("params,message", [({"slide": 0}, "slide must be >= 1"),
                                            ({"slide": 300, "size": 1000}, "size a multiple of it"),
                                            ({"epsilon": 1.5}, "epsilon must be in"),
                                            ({"alpha": 0}, "alpha in")])
def test_bad_parameters_say_what_is_wrong(params, message):
    with pytest.raises(ValueError, match=message):
        make_scheme("dalton", 4, **params)
