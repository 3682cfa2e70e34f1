"""Heterogeneous workers (skewbench.speeds): profiles as written, their errors, and what the simulator, the
prediction and a study make of them."""

import numpy as np
import pandas as pd
import pytest

from skewbench.speeds import SpeedError, parse, time_over_ideal
from skewbench.stream import Stream


@pytest.mark.parametrize("profile,workers,expected", [
    ("", 3, [1, 1, 1]),
    ("1@0.5", 4, [0.5, 1, 1, 1]),
    ("20%@0.5", 10, [0.5, 0.5] + [1] * 8),
    ("20%@0.5", 3, [0.5, 1, 1]),  # at least one worker
    ("2@0.5, 1@0.8", 4, [0.5, 0.5, 0.8, 1]),
    ("1@2", 2, [2, 1]),  # a faster worker too
])
def test_a_profile_gives_every_worker_its_speed(profile, workers, expected):
    assert parse(profile, workers).tolist() == expected


@pytest.mark.parametrize("profile,message", [
    ("0.5", "write COUNT@SPEED"), ("one@0.5", "write COUNT@SPEED"), ("1@half", "write COUNT@SPEED"),
    ("0@0.5", "count must be >= 1"), ("1@0", "speed within 0.01..100"), ("5@0.5", "names 5 slow workers, but there "
                                                                                  "are only 4"),
])
def test_a_bad_profile_says_what_is_wrong(profile, message):
    with pytest.raises(SpeedError, match=message):
        parse(profile, 4)


def test_time_over_ideal_weighs_each_load_by_its_workers_speed():
    speeds = parse("1@0.5", 4)
    assert time_over_ideal(np.array([10, 10, 10, 10]), np.ones(4)) == 1.0
    assert time_over_ideal(np.array([10, 10, 10, 10]), speeds) == pytest.approx(20 / (40 / 3.5))
    assert time_over_ideal(np.array([5, 10, 10, 10]), speeds) == pytest.approx(1.0)  # in proportion to speed


@pytest.fixture(scope="module")
def stream():
    return Stream("uniform", np.random.default_rng(3).integers(0, 5_000, 40_000))  # no key dominates a worker


def test_schemes_blind_to_speed_wait_for_the_slow_worker_and_load_feedback_does_not(stream):
    """Shuffle grouping and PKG balance the messages they send, so worker 0 at half speed halves their
    throughput; pkg-global, told the workers' busy time, sends it less and keeps near Σ speed / W."""
    from skewbench.bench.study import with_speed_share
    from skewbench.simulator import simulate

    rows = [simulate(stream, scheme, 8, 2, seed=1, slow=slow).row for scheme in ("sg", "pkg", "pkg-global")
            for slow in ("", "1@0.5")]
    table = with_speed_share(pd.DataFrame(rows)).set_index(["scheme", "slow"])
    assert table.loc[("sg", "1@0.5"), "speed_share"] == pytest.approx(0.5)
    assert table.loc[("pkg", "1@0.5"), "speed_share"] < 0.55
    assert table.loc[("pkg-global", "1@0.5"), "speed_share"] > 0.85  # 7.5 / 8 = 0.94 at best
    assert table["speed_share"].isna().sum() == 3  # the equal rows have none
    # Speeds change nothing where nothing is told the loads: the same routes
    assert table.loc[("pkg", ""), "max_over_mean"] == table.loc[("pkg", "1@0.5"), "max_over_mean"]


def test_a_slow_run_is_paired_with_its_equal_twin_and_a_told_scheme_with_itself_untold():
    from skewbench.speeds import beside_equal_twin

    table = pd.DataFrame({"scheme": ["cg", "cg", "cg", "pkg", "pkg"],
                          "slow": ["", "1@0.5", "1@0.5", "1@0.5", ""],
                          "params": ["", "", "capacity=1@0.5,v=2", "", "d=3"],
                          "throughput": [10.0, 6.0, 9.0, 5.0, 8.0]}, index=[7, 8, 9, 10, 11])
    paired = beside_equal_twin(table, ["scheme", "params"], ["throughput"])
    assert list(paired.index) == [8, 9, 10]  # the slow rows, their own index and parameters kept
    assert list(paired["params"]) == ["", "capacity=1@0.5,v=2", ""]
    assert paired.loc[8, "throughput_equal"] == 10.0
    assert np.isnan(paired.loc[9, "throughput_equal"])  # cg told with v=2 had no untold twin with v=2
    assert np.isnan(paired.loc[10, "throughput_equal"])  # pkg's equal run had other parameters
    table.loc[0] = ["cg", "", "v=2", 12.0]
    assert beside_equal_twin(table, ["scheme", "params"], ["throughput"]).loc[9, "throughput_equal"] == 12.0


def test_the_prediction_divides_the_slow_workers_delay_by_its_speed():
    from skewbench.bench.prediction import EngineModel, Work, predict
    from skewbench.bench.studyfile import Point

    point = Point(study="t", app="wordcount", scheme="sg", workers=2, sources=1, delay_ms=1.0, workload="wp",
                  messages=4000, batch_rows=1000, rate=0.0, aggregation_period=0, split="shuffle", seed=0)
    work = Work(np.full((4, 2), 500), np.zeros((4, 2), dtype=np.int64))
    model = EngineModel(0.0, {}, {}, 1, serial=1.0)
    equal, slow = (predict(p, work, model) for p in (point, Point(**{**point.__dict__, "slow": "1@0.5"})))
    assert equal["busiest_s"] == pytest.approx(0.5) and slow["busiest_s"] == pytest.approx(1.0)
    assert slow["throughput"] == pytest.approx(equal["throughput"] / 2)


def test_a_study_file_checks_its_profiles_and_names_runs_as_before(tmp_path):
    from skewbench.bench.studyfile import StudyError, load

    text = "name: s\napps: wordcount\nschemes: pkg\nworkers: [4, 2]\nmessages: 1000\n"
    (tmp_path / "good.yaml").write_text(text + 'slow: ["", "1@0.5"]\n')
    points = load(tmp_path / "good.yaml").points()
    assert {p.slow for p in points} == {"", "1@0.5"} and len(points) == 4
    (tmp_path / "plain.yaml").write_text(text)
    assert {p.name for p in load(tmp_path / "plain.yaml").points()} <= {p.name for p in points}  # "" as before
    (tmp_path / "bad.yaml").write_text(text + 'slow: "3@0.5"\n')
    with pytest.raises(StudyError, match=r"bad.yaml: slow: W = 2: speed profile '3@0.5' names 3 slow workers"):
        load(tmp_path / "bad.yaml")


def test_simulate_refuses_a_profile_for_more_workers_than_a_run_has(tmp_path, capsys):
    from skewbench.cli import main

    out = tmp_path / "x.csv"
    assert main(["simulate", "--workload", "wp", "--messages", "1000", "--schemes", "pkg", "--workers", "8,4",
                 "--slow", "5@0.5", "--out", str(out)]) == 2
    assert "--slow, W = 4: speed profile '5@0.5' names 5 slow workers" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written, not even a partial table
