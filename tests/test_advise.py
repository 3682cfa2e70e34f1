"""``skewbench advise`` (skewbench.bench.advise): every scheme predicted on the user's own trace, one recommended
with its reason, the engine model named; bad input refused in one line."""

import json
import re

import numpy as np
import pandas as pd
import pytest

from skewbench.cli import main

SCHEMES = "kg,pkg,wchoices,sg"


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """A trace no one tuned for: 40 % of the messages on one user, the rest over 3,000 (p1 = 40 % > 2/W at W = 10)."""
    rng = np.random.default_rng(5)
    keys = np.where(rng.random(30_000) < 0.4, "hot", np.char.add("u", rng.integers(0, 3000, 30_000).astype(str)))
    path = tmp_path_factory.mktemp("trace") / "clicks.csv"
    pd.DataFrame({"user": keys, "page": 1}).to_csv(path, index=False)
    return path


def advise(capsys, *argv):
    code = main(["advise", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_it_recommends_a_scheme_that_spreads_the_hot_key_and_says_why(tmp_path, capsys, trace):
    code, out, err = advise(capsys, "--workload", f"file:path={trace},key=user", "--workers", "4,10", "--schemes",
                            SCHEMES, "--messages", "30000", "--batch-rows-per-worker", "500", "--out",
                            str(tmp_path / "advice"))
    assert code == 0, err
    assert "[8/8] sg W=10" in err  # progress, run i of n
    picks = dict(line.removeprefix("recommended at W = ").split(": ", 1) for line in out.splitlines()
                 if line.startswith("recommended at"))
    # sg is as fast, but holds every key on every worker: W-Choices is as fast with the least state
    assert re.match(r"wchoices — p1 = 40\.\d% > 2/W = 20\.0%: two choices cannot spread the hottest key", picks["10"])
    assert re.search(r"p1 = 40\.\d% > 1/W = 25\.0%: the hottest key alone overloads", picks["4"])  # 2/W = 50 %
    assert "reports/bench-20261127b/engine_model.json" in out and "fit one on your cluster" in out
    table = pd.read_csv(tmp_path / "advice" / "advice.csv")
    assert len(table) == 8 and table["recommended"].sum() == 2
    at10 = table[table.workers == 10].set_index("scheme")
    assert at10.loc["wchoices", "msgs/s"] > 1.5 * at10.loc["kg", "msgs/s"]  # kg leaves the hot key on one worker
    assert at10.loc["kg", "counters per key"] == 1.0 and at10.loc["sg", "counters per key"] > 2
    assert (tmp_path / "advice" / "advice.png").stat().st_size > 5000
    meta = json.loads((tmp_path / "advice" / "advice.csv.meta.json").read_text())
    assert meta["config"]["model"]["source"] and len(meta["config"]["reasons"]) == 2


def test_it_names_the_engine_model_it_was_given(tmp_path, capsys, trace):
    model = json.loads(open("reports/bench-dalton-20261129/engine_model.json").read())
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(model))
    code, out, _ = advise(capsys, "--workload", f"file:path={trace},key=user", "--schemes", "kg,pkg",
                          "--messages", "5000", "--engine-model", str(path))
    assert code == 0 and f"engine model: {path} (calibration" in out and "fit one on your cluster" not in out


@pytest.mark.parametrize("argv, message", [
    (["--workload", "zipf:z=1.0,keys=100", "--schemes", "kg,nope"], "unknown scheme 'nope'"),
    (["--workload", "zipf:z=1.0,keys=100", "--workers", "0"], "--workers values must be an integer in 1..1,000, got 0"),
    (["--workload", "zipf:nonsense=1"], "nonsense"),
    (["--workload", "file:path=/no/such/trace.csv"], "/no/such/trace.csv"),
    (["--workload", "zipf:z=1.0,keys=100", "--engine-model", "/no/model.json"], "cannot read the engine model"),
])
def test_bad_input_gets_one_line_and_exit_code_2(capsys, argv, message):
    code, out, err = advise(capsys, *argv, "--messages", "2000")
    assert code == 2 and message in err and err.count("\n") == 1 and "recommended" not in out


def test_results_are_never_overwritten(tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    code, _, err = advise(capsys, "--workload", "zipf:z=1.0,keys=100", "--schemes", "kg", "--messages", "2000",
                          "--out", str(tmp_path / "taken"))
    assert code == 2 and "already exists" in err


def test_a_tie_goes_to_the_least_state_then_the_fastest():
    from skewbench.bench.advise import recommend

    table = pd.DataFrame({"workers": 10, "scheme": ["sg", "pkg", "wchoices", "kg"],
                          "msgs/s": [100.0, 99.0, 98.5, 50.0], "busiest / mean": [1.0, 1.0, 1.0, 2.0],
                          "counters per key": [9.0, 1.10, 1.12, 1.0], "probes per message": 0.0})
    pick = recommend(table, p1=0.05).iloc[0]
    assert pick["scheme"] == "pkg"  # sg is fastest but holds 9 counters per key; wchoices' 1.12 ties pkg's 1.10
    assert pick["reason"].startswith("p1 = 5.0% <= 1/W = 10.0%: no key alone overloads a worker (kg's busiest")
    assert "pkg is predicted 99 msgs/s (1.98x kg's)" in pick["reason"]
    assert "the least state of the 3 schemes within 2%" in pick["reason"]


def test_an_offline_scheme_is_a_bound_in_the_table_not_a_recommendation():
    import skewbench.schemes  # noqa: F401  (registers off-greedy)
    from skewbench.bench.advise import recommend

    table = pd.DataFrame({"workers": 10, "scheme": ["off-greedy", "pkg", "kg"], "msgs/s": [100.0, 99.0, 50.0],
                          "busiest / mean": [1.0, 1.0, 2.0], "counters per key": [1.0, 1.1, 1.0],
                          "probes per message": 0.0})
    assert recommend(table, p1=0.05).iloc[0]["scheme"] == "pkg"  # off-greedy fits on the whole stream first


def test_calibrate_and_a_given_model_are_refused_together(capsys):
    code, _, err = advise(capsys, "--workload", "zipf:z=1.0,keys=100", "--calibrate", "--engine-model", "m.json")
    assert code == 2 and "not both" in err


def test_adaptive_schemes_show_what_their_plans_cost_and_others_a_dash(tmp_path, capsys, trace):
    code, out, err = advise(capsys, "--workload", f"file:path={trace},key=user", "--schemes", "kg,mixed,llfd",
                            "--messages", "20000", "--out", str(tmp_path / "advice"))
    assert code == 0, err
    assert "plan ms" in out and "moved share per plan" in out
    table = pd.read_csv(tmp_path / "advice" / "advice.csv").set_index("scheme")
    assert table.loc[["mixed", "llfd"], "table entries"].gt(0).all() and table.loc["kg"].isna()["plan ms"]
    assert table.loc[["mixed", "llfd"], "plan ms"].gt(0).all()
    assert table.loc[["mixed", "llfd"], "moved share per plan"].between(0, 1).all()
    kg_row = next(line for line in out.splitlines() if line.split()[:1] == ["kg"])
    assert kg_row.split()[-4:] == ["-", "-", "-", "-"]


def test_no_plan_columns_without_an_adaptive_scheme(capsys, trace):
    code, out, _ = advise(capsys, "--workload", f"file:path={trace},key=user", "--schemes", "kg,pkg",
                          "--messages", "5000")
    assert code == 0 and "plan ms" not in out


def test_an_adaptive_pick_says_what_its_plans_cost():
    from skewbench.bench.advise import recommend

    table = pd.DataFrame({"workers": 10, "scheme": ["mixed", "kg"], "msgs/s": [100.0, 50.0],
                          "busiest / mean": [1.0, 2.0], "counters per key": [1.0, 1.0], "probes per message": 0.0,
                          "plan ms": [12.0, np.nan], "table entries": [250, np.nan],
                          "keys moved per plan": [65, np.nan], "moved share per plan": [0.006, np.nan]})
    reason = recommend(table, p1=0.05).iloc[0]["reason"]
    assert "its plan, 250 table entries, took 12 ms and the next moved 65 keys (0.6% of the messages' state)" in reason


def test_a_calibration_that_failed_is_one_line_and_exit_1(capsys, monkeypatch):
    """advise --calibrate whose calibration runs all failed (driver.cluster_model raises RunFailed): the
    reason in one line, no traceback, exit code 1 (the cluster is not the user's input)."""
    import skewbench.bench.driver as driver
    import skewbench.cli as cli
    from skewbench.bench.spark.run import RunFailed

    def failing(studies):
        raise RunFailed("1 of 1 engine-calibration runs failed: engine-W10: incorrect answer")

    monkeypatch.setattr(cli, "_in_cluster_python", lambda command, argv: None)  # PySpark here or not
    monkeypatch.setattr(driver, "cluster_model", failing)
    code, out, err = advise(capsys, "--workload", "zipf:z=1.0,keys=100", "--calibrate", "--messages", "2000")
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("skewbench: the engine calibration failed: 1 of 1") and "incorrect answer" in err
