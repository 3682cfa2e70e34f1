"""Fang et al.'s simulated experiments (bench/papers/fang.py): the fluctuating workload and the run loop."""

import numpy as np
import pytest

from skewbench.bench.papers import fang
from skewbench.schemes.gedik import theta


@pytest.mark.parametrize("f", [0.5, 1.0, 2.0])
def test_fluctuation_reaches_f_times_mean_load(f):
    gen = fang.Fluctuation(2_000, 0.85, f, 10, seed=1)
    before = np.bincount(gen.home, weights=gen.probabilities(), minlength=10)
    assert gen.fluctuate() > 0
    after = np.bincount(gen.home, weights=gen.probabilities(), minlength=10)
    assert np.abs(after - before).sum() >= f / 10  # Σ|ΔL| ≥ f · L̄ (L̄ = 1/W of the total)
    assert np.allclose(np.sort(gen.probabilities()), np.sort(gen.zipf))  # swaps keep the Zipf law


def test_no_fluctuation_keeps_the_distribution():
    gen = fang.Fluctuation(1_000, 0.85, 0.0, 5, seed=0)
    first, second = gen.snapshots(2, 100_000)
    assert np.corrcoef(first, second)[0, 1] > 0.99


def test_run_measures_migration_and_balance():
    gen = fang.Fluctuation(2_000, 0.85, 1.0, 8, seed=0)
    snaps = gen.snapshots(4, 50_000)
    kg = fang.run("kg", 8, snaps, gen.fps)
    mixed = fang.run("mixed", 8, snaps, gen.fps, {"theta": 0.08, "table_max": 500})
    assert (kg.migration_pct == 0).all() and mixed.triggered.any()
    assert 0 < mixed.migration_pct.max() <= 100
    assert mixed.max_over_mean.iloc[1:].mean() < kg.max_over_mean.iloc[1:].mean()  # Mixed rebalances


def test_scale_out_adds_an_instance():
    gen = fang.Fluctuation(2_000, 0.85, 0.0, 8, seed=0)
    series = fang.run("mixed", 8, gen.snapshots(3, 50_000), gen.fps, {"theta": 0.08}, schedule={0: 9})
    assert series.workers.tolist() == [8, 9, 9] and bool(series.triggered.iloc[0])


def test_alpha_for_inverts_gedik_eq15():
    assert theta(fang.alpha_for(0.08, 15), 15) == pytest.approx(0.08)


def test_plan_sample_error_is_zero_on_the_original_key_space():
    gen = fang.Fluctuation(2_000, 0.85, 1.0, 8, seed=0)
    counts = gen.snapshots(1, 50_000)[0]
    router = fang.make_scheme("mixed", 8, theta=0.08)
    seen = counts > 0
    _, problem = router.problem(fang.Stats(gen.fps[seen], counts[seen].astype(float), np.zeros(8)))
    original, coarse = fang._plan_sample(problem, None), fang._plan_sample(problem, 6)
    assert original["error_pct"] == 0 and original["records"] == seen.sum()
    assert coarse["records"] < original["records"] and coarse["error_pct"] > 0


def test_readj_sigmas_keep_the_threshold_affordable():
    assert fang.sigmas(0.08) == (0.05, 0.1, 0.25)
    assert all(s * 0.02 >= 0.004 - 1e-12 for s in fang.sigmas(0.02))


def test_planned_bottleneck_is_the_plans_balance_on_the_interval_it_was_made_from():
    gen = fang.Fluctuation(2_000, 0.85, 2.0, 8, seed=0)
    snaps = gen.snapshots(4, 200_000)
    mixed = fang.run("mixed", 8, snaps, gen.fps, {"theta": 0.08, "table_max": 2_000})
    assert (mixed.planned_bottleneck >= 1 / 1.08 - 1e-9).all()  # LLFD meets θmax on the counts it planned from
    assert (mixed.bottleneck.iloc[1:] < mixed.planned_bottleneck.iloc[:-1].to_numpy()).any()  # the lag costs
    assert fang.run("kg", 8, snaps, gen.fps).planned_bottleneck.isna().all()
