"""The measurements bench/papers/pkg.py adds for the PKG fidelity table (fast: small streams)."""

import numpy as np
import pandas as pd
import pytest

from skewbench.bench.papers import LONG, pkg
from skewbench.simulator import simulate


def test_agreement_share_and_jaccard():
    share, jaccard = pkg.agreement(np.array([0, 1, 2, 3]), np.array([0, 1, 3, 2]))
    assert share == 0.5 and jaccard == pytest.approx(1 / 3)  # |A ∩ B| = 2, |A ∪ B| = 6


def test_coverage_is_one_minus_e_squared():
    """Sec. IV-A: the two choices of n uniform keys cover about 1 - 1/e^2 = 0.865 of the n bins."""
    assert pkg.coverage(400, 400, seed=0) == pytest.approx(1 - np.exp(-2), abs=0.03)


def test_uniform_keys_overpopulate_bins():
    """Sec. IV-A: n uniform keys on n bins leave PKG an imbalance of at least ~0.156 m/n."""
    stream = pkg.uniform(100, 200_000, seed=0)
    i_m = simulate(stream, "pkg", 100, 1, seed=0).row["final_imbalance"]
    assert i_m / (200_000 / 100) > 0.156 / 2


def test_compare_puts_techniques_side_by_side():
    table = pd.DataFrame({"workload": ["wp"] * 4, "workers": [5] * 4, "scheme": ["kg", "kg", "pkg", "pkg"],
                          "seed": [0, 1, 0, 1], "final_imbalance": [10.0, 30.0, 1.0, 3.0]})
    cmp = pkg.compare(table, "final_imbalance", ["workload", "workers"], lambda r: r.scheme)
    assert cmp.loc[0, "kg"] == 20 and cmp.loc[0, "pkg"] == 2


def test_experiments_names_and_full_tw_prefix():
    names = set(pkg.experiments(1000))
    assert {"pkg_table2", "pkg_fig2", "pkg_fig3", "pkg_fig4", "pkg_jaccard", "pkg_theorem", "pkg_copies"} <= names
    assert [n for n in names if n.startswith(LONG)] == [f"{LONG}pkg_table2"]


def test_table2_writes_the_comparison(tmp_path):
    out = tmp_path / "pkg_table2.csv"
    pkg.table2(out, messages=20_000, datasets=("wp",))
    cmp = pd.read_csv(tmp_path / "pkg_cmp_table2.csv")
    assert len(cmp) == len(pkg.WORKERS) and (cmp.kg_over_max_other > 1).all()
    assert not list(tmp_path.glob(".*part*"))  # the per-grid parts are gone
