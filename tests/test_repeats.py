"""Repeats as 95 % bootstrap intervals, the "not distinguishable" verdict, and the levers section that uses them."""
import numpy as np
import pandas as pd
import pytest

from skewbench.analysis.repeats import compare, interval


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


def test_overlapping_intervals_name_no_winner():
    fast, slow = interval([1.0, 1.1, 1.05]), interval([2.0, 2.2, 2.1])
    assert compare(fast, slow, "a", "b") == "a better" and compare(slow, fast, "b", "a") == "a better"
    assert compare(fast, slow, "a", "b", lower_is_better=False) == "b better"
    assert compare(fast, interval([1.02, 1.2, 0.98]), "a", "c") == "not distinguishable"
    assert compare(fast, interval([3.0]), "a", "single") == "not distinguishable"  # one run proves nothing


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
