"""Load feedback (bench/spark/feedback.py): the driver's loads per batch, and the simulator's prediction of
pkg-probe and pkg-global on the cluster, where every source is told the true loads before each batch."""
from dataclasses import replace

import numpy as np
import pytest

import skewbench.schemes  # noqa: F401  (registers them)
from skewbench.bench.prediction import simulate_point
from skewbench.bench.spark.feedback import LoadFeed, loads_before, needs_loads
from skewbench.bench.studyfile import Point
from skewbench.scheme import make_scheme


def point(scheme: str, batch_rows: int = 1000) -> Point:
    return Point(study="t", app="wordcount", scheme=scheme, workers=6, sources=3, delay_ms=0.0,
                 workload="zipf:z=1.2,keys=500", messages=6000, batch_rows=batch_rows, rate=0.0,
                 aggregation_period=0, split="shuffle", seed=0)


def test_the_loads_of_a_batch_are_written_once_and_add_up(tmp_path):
    feed = LoadFeed(tmp_path, np.ones(3))
    feed.after_batch(0, np.array([0, 2, 2]), np.array([5, 1, 2]))
    feed.after_batch(0, np.array([0, 2, 2]), np.array([5, 1, 2]))  # the same batch again: counted once
    feed.after_batch(1, np.array([1]), np.array([4]))
    assert loads_before(str(tmp_path), 1).tolist() == [5, 0, 3]
    assert loads_before(str(tmp_path), 2).tolist() == [5, 4, 3]
    with pytest.raises(ValueError, match="first micro-batch"):
        loads_before(str(tmp_path), 0)


def test_only_schemes_told_the_loads_need_them():
    assert needs_loads(make_scheme("pkg-probe", 4)) and needs_loads(make_scheme("pkg-global", 4))
    assert not needs_loads(make_scheme("pkg", 4)) and not needs_loads(make_scheme("mixed", 4))


def test_the_true_loads_change_where_pkg_sends_messages():
    """Every source learns the others' loads before each batch: the first batch routes as pkg's own
    estimates do (nothing is known yet), the later ones do not; and pkg-global on the cluster is pkg-probe
    probing every batch."""
    probe, own = simulate_point(point("pkg-probe")), simulate_point(point("pkg"))
    assert probe.store.sum() == own.store.sum() == 6000
    assert np.array_equal(probe.store[0], own.store[0]) and not np.array_equal(probe.store[1:], own.store[1:])
    assert np.array_equal(simulate_point(point("pkg-global")).store, probe.store)
    assert not np.array_equal(simulate_point(point("pkg-probe", batch_rows=6000)).store, probe.store)


def test_while_w_changes_every_source_is_still_told_the_loads():
    """Live routing, W 6 → 8 at batch 3: until then pkg-probe routes as without a change; after it each
    source's fresh router is told the loads so far, so it fills the two empty workers, which pkg's own
    estimates, started afresh, know nothing of."""
    probe, pkg = (simulate_point(replace(point(s), schedule="3:8")) for s in ("pkg-probe", "pkg"))
    assert probe.workers.tolist() == [6, 6, 6, 8, 8, 8]
    assert np.array_equal(probe.store[:3, :6], simulate_point(point("pkg-probe")).store[:3])
    assert probe.store[3:, 6:].sum() > 1.5 * pkg.store[3:, 6:].sum()


def test_a_router_rebuilt_from_the_stream_routes_on_as_the_kept_one_once_synced():
    rng = np.random.default_rng(0)
    first, second = rng.integers(0, 200, 300).astype(np.uint64), rng.integers(0, 200, 300).astype(np.uint64)
    kept, rebuilt = make_scheme("pkg-probe", 5), make_scheme("pkg-probe", 5)
    kept.route_many(first)
    rebuilt.route_many(first[::2])  # another history, e.g. rebuilt after a replay
    loads = np.array([70.0, 50.0, 60.0, 65.0, 55.0])
    kept.sync(loads)
    rebuilt.sync(loads)
    assert np.array_equal(kept.route_many(second), rebuilt.route_many(second))
