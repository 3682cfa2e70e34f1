"""Dynamic Key Grouping (Dalabasmaz & Can): Table 1, the key space, the ring, and the paper's metrics."""

import pickle

import numpy as np
import pytest

from skewbench.hashing import fingerprints
from skewbench.scheme import make_scheme
from skewbench.schemes import dkg
from skewbench.schemes.dkg import BABY, OLD, TEEN, DynamicKeyGrouping, route_reference

# Table 1 of the paper: machines -> (ideal load %, threshold load %, max machines per key).
TABLE1 = {5: (20.00, 24.47, 5), 10: (10.00, 13.16, 8), 20: (5.00, 7.24, 14), 50: (2.00, 3.41, 30),
          100: (1.00, 2.00, 51)}


def zipf_stream(n, keys, z=1.3, rate=100.0, seed=1):
    """Fingerprints of a Zipf-ish stream and its clock (``rate`` messages per stream second)."""
    ids = np.random.default_rng(seed).zipf(z, n) % keys
    return fingerprints(ids.astype(np.int64)), np.arange(n) / rate


def country_skew(n, r_pct, seed=0):
    """DKG's synthetic country sets: 204 keys, r % of the messages on one, the rest uniform."""
    rng = np.random.default_rng(seed)
    ids = np.where(rng.random(n) < r_pct / 100.0, 0, rng.integers(1, 204, n))
    return ids, fingerprints(ids.astype(np.int64))


def space_of(scheme, fp):
    ks = scheme.key_space()
    return int(ks["space"][ks["fps"] == np.uint64(fp)][0])


def stddev_of_shares(loads):
    """The paper's StdDev (Eq. 7): population std-dev of the per-worker load shares in percent."""
    return float(np.std(100.0 * loads / loads.sum()))


def dist_cost(ids, routes):
    """The paper's DistCost (Eq. 8): distinct (worker, key) pairs / distinct keys."""
    return len(np.unique(ids * 1000 + routes)) / len(np.unique(ids))


# -- Table 1 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("machines", sorted(TABLE1))
def test_thresholds_equal_table1(machines):
    ideal, threshold, most = dkg.table1(machines)
    assert (round(ideal, 2), round(threshold, 2), most) == TABLE1[machines]
    scheme = DynamicKeyGrouping(machines)
    assert scheme._threshold == pytest.approx(threshold) and scheme._cap == most


def test_space_sizes_are_10_and_40_percent_of_expected_keys():
    assert dkg.space_sizes(100) == (10, 40)
    scheme = DynamicKeyGrouping(10)
    assert (scheme._old.shape[0], scheme._teen.shape[0]) == (10, 40)


# -- kernel == reference --------------------------------------------------------------------------

@pytest.mark.parametrize("workers, params", [(10, {}), (100, {}), (7, {"base_width": 1}),
                                             (10, {"expected_keys": 20, "teen_cycle_s": 2.0, "old_cycle_s": 7.0}),
                                             (20, {"warm_up_s": 100.0, "max_width": 4})])
def test_kernel_equals_plain_reference(workers, params):
    fps, now = zipf_stream(40_000, 3000)
    scheme = DynamicKeyGrouping(workers, seed=5, **params)
    routes = np.concatenate([scheme.route_many(fps[i:i + 7000], now[i:i + 7000]) for i in range(0, len(fps), 7000)])
    expected, items = route_reference(fps, now, workers, seed=5, **params)
    np.testing.assert_array_equal(routes, expected)
    ks = scheme.key_space()
    got = {int(f): [int(c), int(s), int(w)] for f, c, s, w in zip(ks["fps"], ks["counts"], ks["space"], ks["width"])}
    assert got == items
    assert (ks["space"] == OLD).sum() == 10 * params.get("expected_keys", 100) // 100


def test_counts_are_never_lost_when_baby_space_floods():
    # The public code cut the baby list to 50 items every cycle and re-created the cut keys at 1.
    rng = np.random.default_rng(3)
    early = np.full(300, 7)  # a key that shows up early, then goes quiet while 2000 new keys flood in
    flood = rng.integers(100, 2100, 20_000)
    late = rng.choice([7, 8], 2000)
    ids = np.concatenate([early, flood, late]).astype(np.int64)
    fps, now = fingerprints(ids), np.arange(len(ids)) / 50.0
    scheme = DynamicKeyGrouping(10)
    scheme.route_many(fps, now)
    ks = scheme.key_space()
    keys, counts = np.unique(fps, return_counts=True)
    order = np.argsort(ks["fps"])
    np.testing.assert_array_equal(ks["fps"][order], keys)
    np.testing.assert_array_equal(ks["counts"][order], counts)
    assert space_of(scheme, fingerprints(np.array([7]))[0]) == OLD  # kept its 300 + ~1000 all along
    assert (ks["space"] == BABY).sum() > 50  # the baby space has no bound


# -- the key space and the ring -------------------------------------------------------------------

def test_rising_key_is_promoted_baby_teen_old_and_its_ring_grows():
    workers, hot = 10, fingerprints(np.array([999]))[0]
    rng = np.random.default_rng(0)
    background = fingerprints(rng.integers(0, 200, 40_000))
    scheme = DynamicKeyGrouping(workers)
    scheme.route_many(background[:2000], np.arange(2000) / 100.0)  # 0–20 s: the key is unknown
    assert scheme.candidates(int(hot)).size == 2
    fps = np.where(rng.random(20_000) < 0.6, hot, background[2000:22_000])  # from 20 s on: 60 % share
    now = 20.0 + np.arange(20_000) / 100.0
    seen, widths = [], []
    for lo in range(0, 20_000, 100):  # one stream second per batch
        routes = scheme.route_many(fps[lo:lo + 100], now[lo:lo + 100])
        seen.append(space_of(scheme, hot))
        widths.append(len(np.unique(routes[fps[lo:lo + 100] == hot])))
    seen = np.array(seen)
    # 20 s: baby; first teen cycle after that (30 s) → teenage; next old cycle (60 s) → old.
    assert seen[0] == BABY and seen[12] == TEEN and (seen[:10] == BABY).all()
    assert (seen[10:39] == TEEN).all() and (seen[41:] == OLD).all()
    assert max(widths[:40]) <= 2 and max(widths[41:]) > 2
    home = scheme.candidates(int(hot))[0]
    ring = scheme.candidates(int(hot))
    np.testing.assert_array_equal(ring, (home + np.arange(len(ring))) % workers)  # consecutive
    routes = scheme.route_many(np.full(5000, hot), 220.0 + np.arange(5000) / 100.0)
    assert 2 < len(np.unique(routes)) <= dkg.max_machines(workers)  # Table 1's limit, 8 of 10
    assert set(routes.tolist()) <= set(((home + np.arange(8)) % workers).tolist())


def test_no_scale_out_before_warm_up():
    hot = fingerprints(np.zeros(6000, dtype=np.int64))
    scheme = DynamicKeyGrouping(10, teen_cycle_s=1.0, old_cycle_s=2.0, warm_up_s=40.0)
    routes = scheme.route_many(hot, np.arange(6000) / 100.0)  # old from 2 s on
    assert len(np.unique(routes[:4000])) == 2 and len(np.unique(routes)) > 2


def test_cold_keys_stay_on_their_ring():
    # Only old keys may scale out; with expected_keys=10 the old space holds just the hot key.
    ids, fps = country_skew(60_000, 80)
    now = np.arange(len(ids)) / 200.0
    for base in (2, 1):
        scheme = DynamicKeyGrouping(10, base_width=base, expected_keys=10)
        routes = scheme.route_many(fps, now)
        for key in range(1, 204):
            used = set(routes[ids == key].tolist())
            home = scheme.candidates(int(fps[ids == key][0]))[0]  # (teenage keys list one more: see candidates)
            assert used <= set(((home + np.arange(base)) % 10).tolist())
        if base == 1:  # pure key grouping for cold keys: the ring's one worker is h(key) mod W
            kg = make_scheme("kg", 10)
            cold = ids != 0
            np.testing.assert_array_equal(routes[cold], kg.route_many(fps[cold]))


def test_ring_shrinks_back_when_the_key_cools_down():
    hot = fingerprints(np.array([0]))[0]
    scheme = DynamicKeyGrouping(10)
    scheme.route_many(np.full(20_000, hot), np.arange(20_000) / 100.0)  # 200 s at 100 %
    assert scheme.key_space()["width"][0] > 2 or len(scheme.candidates(int(hot))) > 2
    rng = np.random.default_rng(1)
    others = fingerprints(rng.integers(1, 1000, 200_000))
    scheme.route_many(others, 200.0 + np.arange(200_000) / 100.0)
    scheme.route(int(hot), 2300.0)  # its candidates are now all far below L_s
    assert scheme.key_space()["width"][0] == 2


def test_candidates_cover_routes_across_promotion_cycles():
    rng = np.random.default_rng(2)
    fps = fingerprints(np.where(rng.random(9000) < 0.7, 0, rng.integers(1, 300, 9000)))
    scheme = DynamicKeyGrouping(7, teen_cycle_s=3.0, old_cycle_s=9.0, warm_up_s=5.0)
    for fp, t in zip(fps.tolist(), (np.arange(9000) / 300.0).tolist()):
        before = scheme.candidates(fp)
        np.testing.assert_array_equal(before, scheme.candidates(fp))
        assert scheme.route(fp, t) in set(before.tolist())
    assert len(scheme.candidates(int(fps[fps == fingerprints(np.array([0]))[0]][0]))) > 2


def test_pickled_copy_continues_identically_after_cycles():
    fps, now = zipf_stream(30_000, 5000)
    scheme = DynamicKeyGrouping(10)
    scheme.route_many(fps[:20_000], now[:20_000])
    clone = pickle.loads(pickle.dumps(scheme))
    np.testing.assert_array_equal(clone.route_many(fps[20_000:], now[20_000:]),
                                  scheme.route_many(fps[20_000:], now[20_000:]))


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError):
        DynamicKeyGrouping(10, base_width=0)
    with pytest.raises(ValueError):
        DynamicKeyGrouping(10, teen_cycle_s=0)


# -- the paper's metrics on its country-skew workload -----------------------------------------------

def route_sources(name, fps, now, workers=10, sources=5):
    """Round-robin the stream over ``sources`` spouts, each with its own router (as the paper's 5)."""
    proto = make_scheme(name, workers)
    routes = np.empty(len(fps), dtype=np.int64)
    for s, router in enumerate([proto] + [proto.spawn() for _ in range(sources - 1)]):
        routes[s::sources] = router.route_many(fps[s::sources], now[s::sources])
    return routes


@pytest.mark.parametrize("r_pct", [50, 80])
def test_country_skew_stddev_far_below_kg_and_pkg_with_small_dist_cost(r_pct):
    ids, fps = country_skew(300_000, r_pct)
    now = np.arange(len(ids)) / 1000.0  # 300 s of stream
    result = {}
    for name in ("kg", "pkg", "dkg", "sg"):
        routes = route_sources(name, fps, now)
        result[name] = (stddev_of_shares(np.bincount(routes, minlength=10)), dist_cost(ids, routes))
    assert result["dkg"][0] < 0.5 * result["pkg"][0] and result["dkg"][0] < 0.3 * result["kg"][0]
    assert result["dkg"][0] < 6.0
    # Cold keys on their two ring workers; the hot key and the old keys whose ring overlaps it spread
    # further (paper: DKG's DistCost a little above PKG's); far below SG's 10.
    assert result["dkg"][1] <= 2.5 and result["sg"][1] > 9.0
