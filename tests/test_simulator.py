import time

import numpy as np
import pytest

from skewbench.scheme import REGISTRY
from skewbench.schemes.key_grouping import KeyGrouping
from skewbench.schemes.pkg import PartialKeyGrouping
from skewbench.simulator import engine, metrics, simulate
from skewbench.stream import Stream

REQUIRED = {"workload", "scheme", "workers", "sources", "messages", "avg_imbalance", "imbalance_fraction",
            "max_over_mean", "counters", "dist_cost", "load_stddev_pct"}


@pytest.fixture(scope="module")
def stream():
    return Stream("zipf-test", np.random.default_rng(7).zipf(1.6, 40_000) % 3000)


def test_load_series_fed_in_pieces_matches_brute_force():
    rng = np.random.default_rng(0)
    routes = rng.integers(0, 4, 1000)
    points = np.array([10, 250, 251, 999, 1000])
    series = metrics.LoadSeries(points, 4)
    for lo, hi in [(0, 5), (5, 250), (250, 251), (251, 700), (700, 1000)]:
        series.add(routes[lo:hi], workers=4)
    want = np.array([np.bincount(routes[:p], minlength=4) for p in points])
    np.testing.assert_array_equal(series.loads, want)
    np.testing.assert_array_equal(series.totals, np.bincount(routes, minlength=4))
    np.testing.assert_allclose(metrics.imbalance(want, 4), want.max(1) - want.mean(1))
    np.testing.assert_allclose(metrics.imbalance(want, 2), want[:, :2].max(1) - want[:, :2].mean(1))


def test_counters_count_distinct_worker_key_pairs_across_pieces_and_a_growing_key_space():
    rng = np.random.default_rng(1)
    ids, routes = rng.integers(0, 3000, 20_000), rng.integers(0, 7, 20_000)
    counters = metrics.Counters(width=7)
    for lo in range(0, 20_000, 3_000):  # the key space found so far grows piece by piece
        counters.add(ids[lo:lo + 3_000], routes[lo:lo + 3_000], n_keys=int(ids[:lo + 3_000].max()) + 1)
    assert counters.count == len(set(zip(ids.tolist(), routes.tolist())))
    small = metrics.Counters(width=4)
    small.add(np.array([0, 0, 1, 1, 1, 2]), np.array([0, 1, 1, 1, 0, 3]), n_keys=3)
    assert small.count == len({(0, 0), (0, 1), (1, 1), (1, 0), (2, 3)})


def test_row_has_the_issue_columns_and_consistent_values(stream):
    row = simulate(stream, "kg", workers=6, sources=3).row
    assert REQUIRED <= set(row)
    assert row["messages"] == len(stream) and row["dist_cost"] == pytest.approx(1.0)
    assert row["imbalance_fraction"] == pytest.approx(row["avg_imbalance"] / len(stream))


def test_local_sources_route_exactly_their_own_round_robin_share(stream):
    result = simulate(stream, "pkg", workers=9, sources=4, interval=777)
    for s in range(4):
        alone = PartialKeyGrouping(9).route_many(stream.fps[s::4])
        np.testing.assert_array_equal(result.routes[s::4], alone)


def test_global_oracle_is_one_router_over_the_whole_stream(stream):
    result = simulate(stream, "pkg-global", workers=9, sources=5)
    np.testing.assert_array_equal(result.routes, PartialKeyGrouping(9).route_many(stream.fps))


class SlowStart(KeyGrouping):
    """Key grouping whose first call in a process takes 0.5 s more, as a numba kernel's compilation does."""

    name = "slow-start"
    compiled = False

    def route_many(self, fps, now=None):
        if not SlowStart.compiled:
            time.sleep(0.5)
            SlowStart.compiled = True
        return super().route_many(fps, now)


def test_compiling_a_schemes_kernels_is_not_counted_in_its_routing_rate(stream, monkeypatch):
    monkeypatch.setitem(REGISTRY, SlowStart.name, SlowStart)
    monkeypatch.setattr(SlowStart, "compiled", False)
    result = simulate(stream, SlowStart.name, workers=6, sources=3)
    assert SlowStart.compiled and result.row["route_seconds"] < 0.5
    np.testing.assert_array_equal(result.routes, simulate(stream, "kg", workers=6, sources=3).routes)


@pytest.mark.parametrize("name", ["pkg", "pkg-global", "potc", "off-greedy", "dkg", "llfd", "gedik-scan"])
def test_warming_up_changes_no_result(stream, name, monkeypatch):
    warm = simulate(stream, name, workers=7, sources=3, interval=5000)
    monkeypatch.setattr(engine, "_warm_up", lambda router, stream: None)
    cold = simulate(stream, name, workers=7, sources=3, interval=5000)
    np.testing.assert_array_equal(warm.routes, cold.routes)
    assert warm.row["migrated_keys"] == cold.row["migrated_keys"] and warm.row["plans"] == cold.row["plans"]


def test_probing_resets_local_estimates_to_true_loads(stream):
    local = simulate(stream, "pkg", workers=9, sources=5, interval=500).routes
    probed = simulate(stream, "pkg-probe", workers=9, sources=5, interval=500).routes
    np.testing.assert_array_equal(local[:500], probed[:500])  # same until the first probe
    assert (local != probed).any()


def test_shuffle_grouping_is_perfectly_balanced_and_pkg_beats_hashing(stream):
    rows = {s: simulate(stream, s, workers=8, sources=2).row for s in ("sg", "kg", "pkg")}
    assert rows["sg"]["final_imbalance"] <= 1
    assert rows["pkg"]["avg_imbalance"] < rows["kg"]["avg_imbalance"] / 5
    assert rows["kg"]["counters"] <= rows["pkg"]["counters"] <= rows["sg"]["counters"]


def test_adding_a_worker_remaps_most_keys_under_hashing_but_few_under_consistent_hashing(stream):
    seen = len(np.unique(stream.ids[:20_000]))  # keys with state when the worker joins
    kg = simulate(stream, "kg", workers=10, schedule={20_000: 11}).row
    ring = simulate(stream, "consistent", workers=10, schedule={20_000: 11}).row
    assert kg["final_workers"] == 11
    assert kg["migrated_keys"] > 0.8 * seen  # h mod 10 == h mod 11 for only ~1 key in 11
    assert kg["migrated_keys"] <= seen
    assert ring["migrated_keys"] < 0.25 * kg["migrated_keys"]


def test_bad_shapes_are_refused(stream):
    for kwargs in ({"workers": 0}, {"workers": 3, "sources": 0}):
        with pytest.raises(ValueError):
            simulate(stream, "kg", **kwargs)
    with pytest.raises(ValueError, match="unknown source split"):
        simulate(stream, "kg", workers=3, split="diagonal")


def test_stddev_is_dkgs_eq7_over_load_shares():
    assert metrics.stddev_pct(np.full(10, 7.0)) == 0.0
    assert metrics.stddev_pct(np.r_[100.0, np.zeros(9)]) == pytest.approx(30.0)  # std of 100, 0 x 9 (%)
    assert metrics.stddev_pct([2, 2]) == metrics.stddev_pct([2000, 2000])  # shares, not counts
