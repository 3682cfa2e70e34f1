"""Gedik's Sec. 5 protocol (bench/papers/gedik.py) against the scheme's own routing and metrics."""

import numpy as np
import pandas as pd
import pytest

from skewbench.bench.papers import gedik as G
from skewbench.scheme import Plan
from skewbench.schemes import gedik as g

SETTING = {**G.DEFAULTS, "domain": 3000, "resources": "LLL"}


@pytest.fixture(scope="module")
def rows():
    return pd.DataFrame(G.growth(SETTING, 0, 6, {2, 6}, 30_000))


@pytest.mark.parametrize("name", G.ALGORITHMS)
def test_growth_measures_what_the_scheme_routes(rows, name):
    """The fast path (cached ring + explicit table) gives the b and m of the scheme's own lookups."""
    keys, freqs = G.domain_keys(3000)[0], G.zipf_frequencies(3000, 1.0)
    scheme = G.make(name, 6, SETTING, 0)
    scheme.counter.update(G.sample(3000, 1.0, 30_000, 0))
    scheme.apply(Plan(G._NONE_KEYS, G._NONE_WORKERS, workers=1))
    before = scheme._route(keys)  # _route: looking the domain up must not feed the counter
    for n in range(2, 7):
        scheme.apply(scheme.rebalance(None, workers=n))
        after = scheme._route(keys)
        if n in (2, 6):
            row = rows[(rows.scheme == name) & (rows.workers == n)].iloc[0]
            assert row.relative_imbalance == pytest.approx(g.relative_imbalance(freqs, after, n, "LLL"))
            assert row.relative_migration == pytest.approx(g.relative_migration(freqs, before, after, n, "LLL"))
            assert row.explicit_items == scheme.table_size() > 0
        before = after


def test_hash_baselines_move_as_expected(rows):
    last = rows[rows.workers == 6].set_index("scheme")
    assert last.loc["kg", "relative_migration"] == pytest.approx(5, rel=0.25)  # mod N moves (N-1)/N of it
    assert last.loc["consistent", "relative_migration"] < 2  # about one new channel's share
    assert (rows.lossy_items[rows.scheme.isin(G.ALGORITHMS)] > 0).all()


def test_onset_is_where_the_imbalance_crosses_the_ideal_line():
    """Fig. 4's "first to start violating": b crosses 1 between two swept skews, and where in that step it
    does orders the schemes (the swept skews alone would tie a and c at 0.8)."""
    table = pd.DataFrame({"resources": "LCL", "scheme": ["a"] * 3 + ["b"] * 3 + ["c"] * 3 + ["d"] * 3, "seed": 0,
                          "z": [0.5, 0.8, 1.0] * 4,
                          "relative_imbalance": [0.9, 1.1, 1.3, 0.9, 0.95, 0.99, 0.9, 1.02, 1.3, 1.01, 1.1, 1.2]})
    onsets = G.onset(table).set_index("scheme")["onset_z"]
    assert onsets["a"] == pytest.approx(0.65)  # halfway from 0.9 to 1.1
    assert onsets["c"] == pytest.approx(0.5 + 0.3 * 0.1 / 0.12)  # later in the same step than a
    assert np.isinf(onsets["b"])  # never over the line
    assert onsets["d"] == 0.5  # over the line from the lowest skew swept


def test_experiment_names_are_callables_or_studies():
    for name, experiment in G.experiments(1000).items():
        assert callable(experiment) or name == "adaptive_zipf"
