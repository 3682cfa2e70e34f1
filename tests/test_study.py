"""The main job end to end on short streams: studies → CSVs with provenance → report.md with figures."""

import json

import pandas as pd

from skewbench.bench import paper_study
from skewbench.bench.papers import experiments

ONLY = "pkg_table2,pkg_fig2,pkg_fig3,dkg_skew_080,scale_out"  # callables (pkg_*) and grids (Study)


def test_paper_study_writes_results_and_a_report(tmp_path, capsys):
    out = tmp_path / "study"
    assert paper_study.main(["--out", str(out), "--messages", "20000", "--only", ONLY]) == 0
    for name in ONLY.split(","):
        table = pd.read_csv(out / f"{name}.csv")
        experiment = experiments(20_000)[name]
        if isinstance(experiment, tuple):  # a grid: one row per cell
            assert len(table) == len(experiment[0].grid())
        assert (table.messages <= 20_000).all()
        meta = json.loads((out / f"{name}.csv.meta.json").read_text())
        assert meta["environment"]["git_commit"]
    report = (out / "report.md").read_text()
    for heading in ("PKG Table II", "PKG Fig. 2", "PKG Fig. 3", "DKG", "Scale-out", "Provenance"):
        assert heading in report
    for png in ("pkg_fig2.png", "pkg_fig3.png", "scale_out.png"):
        assert (out / png).stat().st_size > 1000 and f"({png})" in report
    assert "[1/" in capsys.readouterr().err  # progress: which run of how many


def test_paper_study_refuses_a_folder_that_holds_results(tmp_path, capsys):
    (tmp_path / "old.csv").write_text("x\n1\n")
    assert paper_study.main(["--out", str(tmp_path), "--only", "pkg_fig2"]) == 2
    assert "already holds results" in capsys.readouterr().err
    assert (tmp_path / "old.csv").read_text() == "x\n1\n"


def test_unknown_experiment_is_named(tmp_path, capsys):
    assert paper_study.main(["--out", str(tmp_path / "x"), "--only", "fig99"]) == 2
    assert "unknown experiments ['fig99']" in capsys.readouterr().err


def test_an_experiment_that_writes_its_own_table_first_gets_the_folder(tmp_path):
    out = tmp_path / "new" / "study"  # dkg_fig11 writes its table itself, and runs first here
    assert paper_study.main(["--out", str(out), "--messages", "2000", "--only", "dkg_fig11"]) == 0
    table = pd.read_csv(out / "dkg_fig11.csv")
    assert sorted(table.seed.unique()) == list(range(5))
