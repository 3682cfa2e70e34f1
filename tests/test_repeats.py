"""Repeats as 95 % bootstrap intervals, the t interval of a difference behind "not distinguishable", and the levers
section that uses them."""
import numpy as np
import pandas as pd
import pytest

from skewbench.analysis.repeats import compare, difference, interval


def test_an_interval_holds_its_mean_and_is_reproducible():
    runs = [1.0, 1.3, 1.1, 0.9]
    first = interval(runs)
    assert first.low <= first.mean <= first.high and first.n == 4 and first.mean == pytest.approx(1.075)
    assert interval(runs) == first  # seeded: the same interval every time
    assert first.low >= min(runs) and first.high <= max(runs)


def test_one_run_has_no_interval_and_nans_are_dropped():
    one = interval([2.0, np.nan])
    assert (one.mean, one.low, one.high, one.n) == (2.0, 2.0, 2.0, 1) and str(one) == "2 (1 run)"
    assert interval([]).n == 0


def test_a_winner_is_named_only_where_the_interval_of_the_difference_excludes_zero():
    fast, slow = [1.0, 1.1, 1.05], [2.0, 2.2, 2.1]
    assert compare(fast, slow, "a", "b") == "a better" and compare(slow, fast, "b", "a") == "a better"
    assert compare(fast, slow, "a", "b", lower_is_better=False) == "b better"
    assert compare(fast, [1.02, 1.2, 0.98], "a", "c") == "not distinguishable"
    assert compare(fast, [3.0], "a", "single") == "not distinguishable"  # one run proves nothing


def test_a_difference_is_paired_over_shared_seeds_else_welch_else_against_a_constant():
    a, b = pd.Series([10.0, 14.0, 18.0]), pd.Series([12.0, 16.0, 20.0])
    paired = difference(a, b)  # each seed 2 apart: certain, however the seeds spread
    assert (paired.method, paired.low, paired.high, paired.n) == ("paired t", -2.0, -2.0, 3) and paired.excludes_zero()
    welch = difference(a, b.set_axis([5, 6, 7]))  # other seeds: the spread counts
    assert welch.method == "Welch's t" and not welch.excludes_zero() and welch.mean == -2.0
    one = difference(pd.Series([1.2, 1.3, 1.4]), 1.0)
    assert one.method == "one-sample t" and one.excludes_zero() and one.low == pytest.approx(0.3 - 0.2484, abs=1e-3)
    assert not difference(pd.Series([5.0]), 1.0).excludes_zero()  # one seed: no interval


def test_the_levers_section_sets_each_lever_set_beside_none(tmp_path):
    from skewbench.analysis.sections.engine import levers

    rows = []
    for workers, none, on in ((20, 1.0, 0.5), (100, 4.2, 1.3)):
        for seed, noise in enumerate((0.0, 0.05, -0.05)):
            rows += [{"workers": workers, "levers": "none", "seed": seed, "overhead_median_s": none + noise,
                      "throughput": 1e4},
                     {"workers": workers, "levers": "fs-checkpoints+no-fork+pack", "seed": seed,
                      "overhead_median_s": on + noise, "throughput": 3e4},
                     {"workers": workers, "levers": "no-crc", "seed": seed, "overhead_median_s": none - noise,
                      "throughput": 1e4}]
    pd.DataFrame(rows).to_csv(tmp_path / "levers.csv", index=False)
    text = "\n".join(levers(tmp_path))
    assert (tmp_path / "levers.png").exists() and "![levers](levers.png)" in text
    assert text.count("| fs-checkpoints+no-fork+pack better |") == 2  # the default set, at both W
    assert text.count("| not distinguishable |") == 2  # no-crc's intervals overlap none's
    assert "none 40 ms" in text and "fs-checkpoints+no-fork+pack 10 ms" in text  # the slopes per worker
