"""DKG's simulation experiments (bench/papers/dkg.py): names, sizes and the skew-sweep table."""
import pandas as pd

from skewbench.bench.papers import dkg
from skewbench.bench.study import Study, run_study


def test_quick_runs_cap_every_stream_and_full_runs_use_the_papers_sizes():
    quick, full = dkg.experiments(1000), dkg.experiments(None)
    assert {f"dkg_skew_{r:03d}" for r in dkg.SKEWS} | {"dkg_fig11", "dkg_fig12", "dkg_fig13"} <= set(full)
    assert all(study.messages == 1000 for study, _ in (e for e in quick.values() if not callable(e)))
    assert full["dkg_fig12"][0].messages == 5_320_000 and full["dkg_skew_068"][0].messages == 10_000_000
    assert full["dkg_real_ticker"][0].messages == 1_500_000 and full["dkg_real_bylang"][0].messages == dkg.CAP


def test_skew_sweep_is_one_table_with_the_skew_in_percent(tmp_path, monkeypatch):
    monkeypatch.setattr(dkg, "SKEWS", [0, 100])
    path = tmp_path / "dkg_fig11.csv"
    dkg.skew_sweep(20_000, repeat=1)(path)
    table = pd.read_csv(path).set_index(["skew", "scheme"])
    assert sorted(table.index.get_level_values("skew").unique()) == [0, 100]
    # Eq. 7 at r = 100 %, W = 10: KG puts all on one worker (StdDev 30 %), PKG on two (20 %), SG on none.
    assert table.loc[(100, "kg"), "load_stddev_pct"] == 30.0
    assert table.loc[(100, "pkg"), "load_stddev_pct"] == 20.0
    assert table.loc[(100, "sg"), "load_stddev_pct"] == 0.0
    assert (path.parent / "dkg_fig11.csv.meta.json").exists()


def test_the_election_stand_in_has_two_thirds_on_its_hottest_key(tmp_path):
    row = run_study(Study(dkg.ELECTION, ["kg"], [10], [5], 50_000), tmp_path / "t.csv").iloc[0]
    assert 66 < row["p1_pct"] < 70  # Table 2: twitter-election, 68 %
