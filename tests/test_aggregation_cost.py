"""Katsipoulakis et al.'s partitioners (CM, LM, AM, cAM): the kernel routes as its plain reference, each
policy trades tuples against distinct keys as the paper's objective says, and cAM is PoTC but for ties."""
import numpy as np
import pytest

from skewbench.hashing import fingerprints
from skewbench.scheme import make_scheme
from skewbench.schemes.aggregation_cost import AM, CAM, CM, LM, route_reference

POLICIES = {"cm": CM, "lm": LM, "am": AM, "cam": CAM}


def zipf_fps(n=20_000, z=1.3, keys=2000, seed=0):
    rng = np.random.default_rng(seed)
    return fingerprints(rng.zipf(z, n) % keys)


@pytest.mark.parametrize("workers", [1, 2, 7, 100])
@pytest.mark.parametrize("name", sorted(POLICIES))
def test_the_kernel_routes_as_the_reference(name, workers):
    fps = zipf_fps()
    scheme = make_scheme(name, workers, seed=5)
    routes = np.concatenate([scheme.route_many(part) for part in np.array_split(fps, 3)])  # the table grows
    held, counts, cards = {}, np.zeros(workers), np.zeros(workers)
    assert np.array_equal(routes, route_reference(fps, workers, 5, POLICIES[name], held, counts, cards))
    assert np.array_equal(scheme.loads, counts) and np.array_equal(scheme.cardinalities, cards)
    assert cards.sum() == sum(len(w) for w in held.values())  # a (key, worker) pair counts once


def imbalance(values):
    return values.max() / values.mean()


def test_cardinality_first_balances_keys_and_count_first_balances_tuples():
    """CM and AM even the distinct keys per worker and leave the tuples uneven; cAM evens the tuples its
    keys' first messages see and leaves the keys uneven; LM, which weighs both, has neither extreme."""
    fps = zipf_fps(60_000, z=1.1, keys=20_000)
    routed = {name: make_scheme(name, 10, seed=1) for name in POLICIES}
    for scheme in routed.values():
        scheme.route_many(fps)
    keys = {name: imbalance(s.cardinalities) for name, s in routed.items()}
    tuples = {name: imbalance(s.loads) for name, s in routed.items()}
    assert max(keys["cm"], keys["am"]) < 1.01 < keys["lm"] < keys["cam"]
    assert max(tuples["lm"], tuples["cam"]) < min(tuples["cm"], tuples["am"])


def test_affinity_keeps_a_key_where_the_source_first_sent_it():
    fps = zipf_fps()
    for name in ("am", "cam"):
        routes = make_scheme(name, 8, seed=2).route_many(fps)
        per_key = {}
        for fp, w in zip(fps.tolist(), routes.tolist()):
            assert per_key.setdefault(fp, w) == w, name


def test_cam_is_potc_but_for_ties():
    """Both fix a key on the choice with fewer tuples at its first message; PoTC sends a tie to the first
    choice, cAM (the authors' code) to the second."""
    fps = zipf_fps(10)
    cam, potc = make_scheme("cam", 10, seed=4), make_scheme("potc", 10, seed=4)
    first = fps[:1]
    a, b = cam.candidates(int(first[0]))
    assert cam.route_many(first)[0] == b and potc.route_many(first)[0] == a  # all loads 0: a tie
