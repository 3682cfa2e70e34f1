import math
import pickle

import numpy as np
import pytest

from skewbench.hashing import fingerprints
from skewbench.scheme import MOVE_DTYPE, make_scheme
from skewbench.schemes import gedik as g
from skewbench.schemes.consistent import ConsistentHash
from skewbench.schemes.lossy_counting import SlidingLossyCounter, sliding_reference

ALGORITHMS = ("scan", "redist", "readj")


def zipf(messages: int, domain: int, z: float, seed: int = 0):
    """Domain fingerprints, their exact Zipf frequencies, and a sampled stream."""
    p = 1.0 / np.arange(1, domain + 1) ** z
    p /= p.sum()
    keys = fingerprints(np.arange(domain))
    return keys, p, keys[np.random.default_rng(seed).choice(domain, messages, p=p)]


@pytest.fixture(scope="module")
def zipf08():
    return zipf(300_000, 20_000, 0.8)


def grown(algorithm: str, fps, domain: int, upto: int, sigma: float = 0.1):
    """Gedik's protocol (Sec. 5.1): start at N = 1 and add one channel per adaptation."""
    scheme = make_scheme(f"gedik-{algorithm}", 1, seed=0, sigma=sigma, domain_size=domain, window=10**7)
    scheme.route_many(fps)
    for n in range(2, upto + 1):
        scheme.apply(scheme.rebalance(None, workers=n))
    return scheme


# -- formulas ----------------------------------------------------------------------------------

def test_theta_matches_eq_15_and_its_derivation():
    assert g.theta(1.2, 10) == pytest.approx(0.2 / (1 + 1.2 / 9))
    assert g.theta(2.0, 2) == pytest.approx(1 / 3)
    assert g.theta(1.5, 1) == 0.0
    for alpha in (1.1, 1.2, 2.0, 4.0):
        for n in (2, 3, 10, 100):
            # Worst spread allowed by max/min = α: one channel at α·x, the rest at x.
            loads = np.r_[alpha, np.ones(n - 1)]
            assert loads.max() / loads.mean() - 1 == pytest.approx(g.theta(alpha, n))


def test_delta_matches_eq_17():
    th = 0.2 / (1 + 1.2 / 9)
    assert g.frequency_threshold("LCL", 1.2, 10, 0.1, 10**6) == pytest.approx(0.1 * th / 10)
    assert g.frequency_threshold("LLL", 1.2, 10, 0.1, 10**6) == pytest.approx(0.1 * th / 10)
    assert g.frequency_threshold("LQL", 1.2, 10, 0.1, 10**6) == pytest.approx(math.sqrt(0.1 * th / (10**6 * 10)))
    assert g.frequency_threshold("CQC", 1.2, 10, 0.01, 10**4) == pytest.approx(math.sqrt(0.01 * th / (10**4 * 10)))
    assert g.frequency_threshold("CCC", 1.2, 10, 0.1, 10**6) == 1.0  # constant: nothing to track
    assert g.frequency_threshold("LCL", 1.2, 1, 0.1, 10**6) == 1.0  # one channel: nothing to balance


def test_quadratic_threshold_is_refined_from_the_items_found():
    th = g.theta(1.2, 2)
    freqs = np.array([0.5, 0.25])  # |D| = 4: the other two items share 0.25
    mean_load = (0.5**2 + 0.25**2 + 2 * 0.125**2) / 2
    assert g.refined_threshold(freqs, "CQC", 1.2, 2, 0.1, 4) == pytest.approx(math.sqrt(0.1 * th * mean_load))
    assert g.refined_threshold(freqs, "LQL", 1.2, 2, 0.1, 4) == pytest.approx(0.1 * th / 2)  # linear is lower


def test_relative_imbalance_and_migration_by_hand():
    f = np.array([0.4, 0.3, 0.2, 0.1])
    balanced = np.array([0, 1, 1, 0])
    assert g.resource_imbalance(f, balanced, 2, "LCL", 1.2) == pytest.approx([1 / 1.2] * 3)
    skewed = np.array([0, 0, 0, 1])  # loads 0.9 / 0.1, counts 3 / 1
    assert g.resource_imbalance(f, skewed, 2, "LCL", 1.2) == pytest.approx([7.5, 2.5, 7.5])
    assert g.relative_imbalance(f, skewed, 2, "LCL", 1.2) == pytest.approx((7.5 * 2.5 * 7.5) ** (1 / 3))
    assert g.resource_imbalance(f, skewed, 2, "LQL", 1.2)[1] == pytest.approx((0.29 / 0.01) / 1.2)
    # half of the state moves to the new channel: exactly one fair share (Eq. 10, 12)
    assert g.relative_migration(f, np.zeros(4, int), balanced, 2, "LCL") == pytest.approx(1.0)
    assert g.relative_migration(f, np.zeros(4, int), balanced, 2, "CCL") == pytest.approx(2 / (4 / 2))
    assert np.isinf(g.relative_imbalance(f, np.zeros(4, int), 2))  # an empty channel


# -- lossy counting ----------------------------------------------------------------------------

def test_sliding_lossy_counter_equals_the_plain_reference():
    fps = fingerprints(np.random.default_rng(3).zipf(1.1, 30_000) % 3000)
    counter = SlidingLossyCounter(window=4000, epsilon=0.004)
    for lo, hi in [(0, 7), (7, 1000), (1000, 1001), (1001, 30_000)]:  # batch boundaries do not matter
        counter.update(fps[lo:hi])
    tables, seen = sliding_reference(fps, 4000, 0.004)
    for k in range(3):
        live = np.flatnonzero(counter._counts[k])
        got = {int(counter._keys[k, s]): (int(counter._counts[k, s]), int(counter._errors[k, s])) for s in live}
        assert got == tables[k] and counter._seen[k] == seen[k]


def test_lossy_counting_guarantees_against_exact_counts():
    eps, delta = 0.001, 0.004
    fps = fingerprints(np.random.default_rng(0).zipf(1.1, 60_000) % 20_000)
    counter = SlidingLossyCounter(window=10**7, epsilon=eps)  # one counter sees everything
    counter.update(fps)
    keys, counts, errors, n, _ = counter.entries()
    true_keys, true_counts = np.unique(fps, return_counts=True)
    truth = dict(zip(true_keys.tolist(), true_counts.tolist()))
    assert n == len(fps) and len(keys) < len(true_keys) / 4  # it does forget
    for key, c, e in zip(keys.tolist(), counts.tolist(), errors.tolist()):
        assert c <= truth[key] <= c + e and e <= eps * n  # never over, under by at most εn
    held = set(keys.tolist())
    assert all(c <= eps * n for key, c in truth.items() if key not in held)
    reported, _, _ = counter.frequent(delta)
    frequent = {key for key, c in truth.items() if c >= delta * n}
    assert frequent <= set(reported.tolist())  # no frequent item is missed
    assert all(truth[key] >= (delta - eps) * n for key in reported.tolist())


def test_the_answering_counter_covers_one_to_one_and_a_half_windows_and_forgets_old_items():
    window = 2000
    counter = SlidingLossyCounter(window=window, epsilon=0.01)
    rng = np.random.default_rng(1)
    tail = fingerprints(rng.integers(100, 10_000, 20 * window))
    hot_a, hot_b = fingerprints([1, 2])
    stream = tail.copy()
    stream[: 3 * window: 2] = hot_a  # a is hot first, then b
    stream[3 * window: 6 * window: 2] = hot_b
    for start in range(0, 6 * window, 250):
        counter.update(stream[start:start + 250])
        n = counter.entries()[3]
        assert n == start + 250 if start + 250 <= window else window <= n <= 1.5 * window
    keys, _, _ = counter.frequent(0.2)
    assert hot_b in keys.tolist() and hot_a not in keys.tolist()


def test_retune_applies_to_counters_started_later():
    counter = SlidingLossyCounter(window=1000, epsilon=0.01)
    counter.update(fingerprints(np.arange(100)))
    counter.retune(0.002)
    assert counter.entries()[4] == pytest.approx(0.01)
    counter.update(fingerprints(np.arange(3000)))
    assert counter.entries()[4] == pytest.approx(0.002)


# -- construction kernels against the plain references ------------------------------------------

def instance(seed: int, resources: str, n_items: int = 24, n_ch: int = 4):
    rng = np.random.default_rng(seed)
    freqs = np.sort(rng.pareto(1.2, n_items) + 0.05)[::-1]
    freqs /= 2 * freqs.sum()
    exps = g.resource_exponents(resources)
    balanced, counts = np.unique(exps[exps > 0], return_counts=True)
    loads_of = np.ascontiguousarray(freqs[None, :] ** balanced[:, None])
    beta_s = freqs ** exps[0]
    old = rng.integers(0, n_ch, n_items)
    return loads_of, counts / counts.sum(), beta_s, freqs, old, g.theta(1.2, n_ch), n_ch, 0.01, beta_s.sum() / n_ch


@pytest.mark.parametrize("resources", ["LCL", "LQL"])
@pytest.mark.parametrize("utility", range(len(g.UTILITIES)))
def test_scan_and_redist_kernels_equal_the_references(resources, utility):
    args = (*instance(utility, resources), utility)
    for kernel, pick_any in [(g._scan, False), (g._redist, True)]:
        fast, slow = np.empty(24, dtype=np.int64), np.empty(24, dtype=np.int64)
        kernel(*args, fast)
        g._greedy_reference(*args, slow, pick_any)
        np.testing.assert_array_equal(fast, slow)
        assert len(set(fast.tolist())) == 4  # every channel used


@pytest.mark.parametrize("resources", ["LCL", "LQL"])
@pytest.mark.parametrize("utility", range(len(g.UTILITIES)))
def test_readj_kernel_equals_the_reference(resources, utility):
    loads_of, weights, beta_s, freqs, old, th, n_ch, m0, mbar = instance(10 + utility, resources)
    start = np.where(np.arange(24) % 5 == 0, 0, old)  # not p_t everywhere (as after a shrink)
    fast, slow = start.copy(), start.copy()
    args = (loads_of, weights, beta_s, freqs, old, th, n_ch, m0, mbar, utility, 5)
    g._readj(*args, fast)
    g._readj_reference(*args, slow)
    np.testing.assert_array_equal(fast, slow)
    before = g._rho_reference(np.stack([np.bincount(start, w, n_ch) for w in loads_of]), loads_of.sum(1), weights, th)
    after = g._rho_reference(np.stack([np.bincount(fast, w, n_ch) for w in loads_of]), loads_of.sum(1), weights, th)
    assert after < before  # readjustments only ever lower the imbalance penalty


# -- the partitioning function -----------------------------------------------------------------

def test_all_three_keep_a_skewed_zipf_within_alpha_where_consistent_hashing_cannot(zipf08):
    keys, freqs, fps = zipf08
    for algorithm in ALGORITHMS:
        scheme = make_scheme(f"gedik-{algorithm}", 1, seed=0, domain_size=len(keys), window=10**7)
        scheme.route_many(fps)
        for n in range(2, 9):
            scheme.apply(scheme.rebalance(None, workers=n))
            b_n = g.resource_imbalance(freqs, scheme.route_many(keys), n, "LLL")[2]
            assert b_n <= 1.0, (algorithm, n, b_n)
        assert 0 < scheme.table_size() < 100  # compact: a few dozen of 20,000 items
    b_consistent = g.resource_imbalance(freqs, ConsistentHash(8, seed=0).route_many(keys), 8, "LLL")[2]
    assert b_consistent > 1.1


def growth(algorithm: str, seed: int, upto: int, resources: str = "LCL", domain: int = 100_000,
           messages: int = 500_000):
    """Sec. 5.1's protocol for one run: Zipf z = 1 over ``domain`` keys, N = 1 grown one channel at a
    time up to ``upto``; the relative migration m (Eq. 12) of each step and the relative imbalance b
    (Eq. 11) after it, both over the whole domain with its exact frequencies."""
    keys, freqs, fps = zipf(messages, domain, 1.0, seed)
    scheme = make_scheme(f"gedik-{algorithm}", 1, seed=seed, resources=resources, domain_size=domain,
                         window=10**9)
    scheme.route_many(fps)
    before, ms, bs = scheme._route(keys), [], []  # _route: looking up the domain must not feed the counter
    for n in range(2, upto + 1):
        scheme.apply(scheme.rebalance(None, workers=n))
        after = scheme._route(keys)
        ms.append(g.relative_migration(freqs, before, after, n, resources))
        bs.append(g.relative_imbalance(freqs, after, n, resources))
        before = after
    return np.array(ms), np.array(bs)


def test_readj_migrates_more_than_redist_and_balances_better_as_channels_are_added():
    """Sec. 5.3 (Fig. 3, LLL at N = 10): readj reaches "around 1.34 times the ideal [migration] ...
    compared to 1.23 for redist and scan", with the lowest imbalance (1.2 against 1.32); Fig. 6:
    redist's migration stays "almost flat ... around 1.15" while readj's grows with N.

    Readj trades migration for balance because Algorithm 4 keeps readjusting while any move or
    swap lowers ρ and uses the utility only to choose among them (g starts at −∞).  When readj
    also required a utility drop (the code before issue 14), U^APM = ρ + γ stopped it as soon as
    the next readjustment's γ cost β_s(f)/m̄ exceeded its ρ gain: at |D| = 10⁶, σ = 0.1, 5 runs,
    LLL at N = 10 it moved 0.88 of the ideal against redist's 1.25 and balanced worst (b 1.39
    against 1.29), the reverse of the paper on both counts.  Run as Algorithm 4 says, readj moves
    1.22 at N = 10, a tie with redist there (per run −0.25 … +0.19), and more as N grows (LCL,
    3 runs: 1.45 against 1.03 on average over N = 25 … 32), balancing as well or better
    (N = 10: 1.289 both for LLL, 3.82 against 3.94 for LQL; N = 32 LCL: 1.98 against 2.07).

    Here |D| = 10⁵, 5·10⁵ messages, LCL, N = 2 → 16, runs 0–4: readj's summed migration is 1.11 ×
    redist's (runs 0–9: 1.07; old code: 0.78) and its summed imbalance 0.996 × (runs 0–9: 0.993;
    old code: 1.053).
    """
    migration, imbalance = {"readj": 0.0, "redist": 0.0}, {"readj": 0.0, "redist": 0.0}
    for seed in range(5):
        for algorithm in migration:
            ms, bs = growth(algorithm, seed, 16)
            migration[algorithm] += ms.sum()
            imbalance[algorithm] += bs.sum()
    assert migration["readj"] > 1.03 * migration["redist"], migration
    assert imbalance["readj"] < imbalance["redist"], imbalance


@pytest.mark.parametrize("resources", ["LCL", "LQL"])
@pytest.mark.parametrize("utility", range(1, len(g.UTILITIES)))
def test_readj_stops_only_when_no_move_or_swap_lowers_the_imbalance(resources, utility):
    """Algorithm 4 ends when no readjustment lowers ρ, whatever it costs in migration: a new,
    empty channel is filled until no single move or swap improves the balance."""
    loads_of, weights, beta_s, freqs, _, th, n_ch, m0, mbar = instance(20 + utility, resources)
    old = np.random.default_rng(utility).integers(0, n_ch - 1, len(freqs))  # the last channel is new
    assign = old.copy()
    g._readj(loads_of, weights, beta_s, freqs, old, th, n_ch, m0, mbar, utility, 10**6, assign)

    def rho(a):
        return g._rho_reference(np.stack([np.bincount(a, w, n_ch) for w in loads_of]), loads_of.sum(1), weights, th)

    final = rho(assign)
    for d1 in range(len(assign)):
        for j in range(n_ch):
            trial = assign.copy()
            trial[d1] = j
            assert rho(trial) >= final - 1e-12
        for d2 in range(d1 + 1, len(assign)):
            trial = assign.copy()
            trial[d1], trial[d2] = assign[d2], assign[d1]
            assert rho(trial) >= final - 1e-12
    assert g.relative_migration(freqs, old, assign, n_ch) > 0  # it did move items onto the new channel


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_construction_is_deterministic_and_pickles(algorithm, zipf08):
    keys, _, fps = zipf08
    one = grown(algorithm, fps[:50_000], len(keys), 5)
    two = pickle.loads(pickle.dumps(grown(algorithm, fps[:50_000], len(keys), 5)))
    p1, p2 = one.rebalance(None, workers=6), two.rebalance(None, workers=6)
    np.testing.assert_array_equal(p1.table_keys, p2.table_keys)
    np.testing.assert_array_equal(p1.table_workers, p2.table_workers)
    np.testing.assert_array_equal(p1.moves, p2.moves)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_growing_plan_moves_exactly_the_keys_that_change_channel(algorithm, zipf08):
    keys, _, fps = zipf08
    scheme = grown(algorithm, fps[:50_000], len(keys), 4)
    old_table = set(scheme._table_keys.tolist())
    before = scheme.route_many(keys)
    plan = scheme.rebalance(None, workers=5)
    assert plan.moves.dtype == MOVE_DTYPE and plan.workers == 5 and plan.build_seconds > 0
    scheme.apply(plan)
    after = scheme.route_many(keys)
    in_table = np.isin(keys, plan.table_keys)
    np.testing.assert_array_equal(after[in_table],
                                  plan.table_workers[np.searchsorted(plan.table_keys, keys[in_table])])
    changed = {int(k): (int(s), int(d)) for k, s, d in zip(keys[before != after], before[before != after],
                                                            after[before != after])}
    planned = {int(k): (int(s), int(d)) for k, s, d in plan.moves}
    assert set(planned) <= set(changed)  # no spurious moves ...
    assert all(changed[k] == planned[k] for k in planned)
    tracked = old_table | set(plan.table_keys.tolist())
    assert {k for k in changed if k in tracked} <= set(planned)  # ... and every tracked key's move is planned
    assert all(dst == 4 for k, (_, dst) in changed.items() if k not in tracked)  # the ring only feeds the new one


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_shrinking_and_one_channel(algorithm, zipf08):
    keys, _, fps = zipf08
    scheme = grown(algorithm, fps[:50_000], len(keys), 5)
    scheme.apply(scheme.rebalance(None, workers=3))
    assert scheme.workers == 3 and scheme.route_many(keys).max() == 2
    scheme.apply(scheme.rebalance(None, workers=1))
    assert scheme.table_size() == 0 and (scheme.route_many(keys) == 0).all()


def test_tracked_items_include_every_item_above_delta(zipf08):
    keys, _, fps = zipf08
    scheme = make_scheme("gedik-scan", 10, seed=0, domain_size=len(keys), window=10**7)
    scheme.route_many(fps)
    tracked, est = scheme.tracked()
    true_keys, true_counts = np.unique(fps, return_counts=True)
    delta = g.frequency_threshold("LCL", 1.2, 10, 0.1, len(keys))
    assert set(true_keys[true_counts >= delta * len(fps)].tolist()) <= set(tracked.tolist())
    assert (np.diff(est) <= 0).all()  # most frequent first


def test_quadratic_resources_track_fewer_items_after_refinement(zipf08):
    keys, _, fps = zipf08
    scheme = make_scheme("gedik-scan", 10, seed=0, resources="LQL", domain_size=len(keys), window=10**7)
    scheme.route_many(fps)
    _, counts, _, n, eps = scheme.counter.entries()
    raw = g.frequency_threshold("LQL", 1.2, 10, 0.1, len(keys))
    assert 0 < len(scheme.tracked()[0]) < np.count_nonzero(counts / n >= raw - eps) / 2


@pytest.mark.parametrize("params, match", [({"alpha": 1.0}, "alpha"), ({"sigma": 0.0}, "sigma"),
                                           ({"utility": "XYZ"}, "utility"), ({"resources": "LXL"}, "resources"),
                                           ({"eps_ratio": 1.5}, "eps_ratio")])
def test_bad_parameters_say_what_is_wrong(params, match):
    with pytest.raises(ValueError, match=match):
        make_scheme("gedik-readj", 4, **params)
