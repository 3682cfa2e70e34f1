"""bench/api_bench.py without a cluster: the API study file, the stream it builds, the tables it writes.
(`skewbench api-bench` itself runs on a cluster in tests/spark/test_api.py.)"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skewbench.bench import api_bench
from skewbench.bench.api_bench import ApiBenchError, ApiStudy, load, stream, with_ratios, zipf_exponent

ROOT = Path(__file__).resolve().parents[1]


def test_the_shipped_api_study_loads_and_makes_the_claims_point():
    study = load(ROOT / "bench" / "studies" / "api.yaml")
    assert study.workers == 10 and any(p >= 0.2 for p in study.p1) and {"dchoices", "wchoices"} <= set(study.schemes)
    assert study.repeats >= 3  # the built-in sum's ratios are within run-to-run noise: their range must show
    assert len(study.runs()) == len(study.p1) * study.repeats * len(study.operators) * (1 + len(study.schemes))


@pytest.mark.parametrize("text, says", [
    ("name: x\napps: wordcount\n", "not an API study"),
    ("kind: api\nname: x\np1: [1.5]\n", "p1.0: 1.5 is greater than the maximum of 1"),
    ("kind: api\nname: x\np1: [0.2]\nschemes: [pkg-global]\n", "pkg-global cannot balance a Spark job"),
    ("kind: api\nname: x\np1: [0.2]\nworkerz: 3\n", "'workerz' was unexpected"),
    ("kind: api\nname: x\np1: [0.2]\noperators: [median]\n", "operators.0: 'median' is not one of"),
])
def test_a_bad_api_study_is_one_line_saying_what_is_wrong(tmp_path, text, says):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ApiBenchError) as error:
        load(path)
    assert says in str(error.value) and str(path) in str(error.value)


def test_the_cli_refuses_a_bad_study_before_asking_for_a_cluster(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("kind: api\nname: x\n")
    done = subprocess.run([sys.executable, "-m", "skewbench.cli", "api-bench", str(path), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "'p1' is a required property" in done.stderr
    assert not (tmp_path / "out").exists()


def test_the_cli_refuses_a_negative_warm_up_before_asking_for_a_cluster(tmp_path):
    study = ROOT / "bench" / "studies" / "api.yaml"
    done = subprocess.run([sys.executable, "-m", "skewbench.cli", "api-bench", str(study), "--out",
                           str(tmp_path / "out"), "--warm-up", "-1"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "--warm-up" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("p1", [0.05, 0.2, 0.5])
def test_the_stream_gives_its_hottest_key_the_share_asked(p1):
    study = ApiStudy(name="t", p1=[p1], keys=500, batch_rows=20_000, batches=3)
    rows = stream(study, p1, seed=0)
    assert len(rows) == 60_000 and rows["value"].between(1, 99).all()
    assert rows["key"].value_counts(normalize=True).iloc[0] == pytest.approx(p1, abs=0.01)
    assert stream(study, p1, seed=0).equals(rows) and not stream(study, p1, seed=1).equals(rows)  # seeded
    with pytest.raises(ApiBenchError, match="not skewed"):
        zipf_exponent(0.001, 500)


def test_the_files_are_s_per_batch_in_order(tmp_path):
    study = ApiStudy(name="t", p1=[0.3], sources=3, batch_rows=300, batches=2)
    rows = stream(study, 0.3, seed=0)
    api_bench.write_files(rows, tmp_path / "f", study)
    files = sorted((tmp_path / "f").iterdir(), key=lambda p: p.stat().st_mtime)
    assert len(files) == 6 and [p.name for p in files] == sorted(p.name for p in files)
    assert pd.concat([pd.read_parquet(p) for p in files], ignore_index=True).equals(rows)


def test_ratios_are_over_the_plain_run_of_the_same_operator_p1_and_seed():
    table = pd.DataFrame({"p1": [0.2] * 6, "seed": [0, 0, 0, 0, 1, 1],
                          "operator": ["python", "python", "sum", "sum", "python", "python"],
                          "way": ["plain", "pkg", "plain", "pkg", "plain", "pkg"],
                          "throughput_rows_per_s": [100.0, 250, 400, 360, 50, 150]})
    assert with_ratios(table)["over_plain"].tolist() == [1.0, 2.5, 1.0, 0.9, 1.0, 3.0]
    assert np.isnan(with_ratios(table[table["way"] == "pkg"])["over_plain"]).all()  # no plain run: no ratio


def test_the_summary_gives_medians_and_ranges_and_warns_when_repeats_disagree():
    runs = pd.DataFrame({"p1": 0.2, "seed": [0, 1, 2] * 4, "operator": ["python"] * 6 + ["sum"] * 6,
                         "way": (["plain"] * 3 + ["pkg"] * 3) * 2,
                         "throughput_rows_per_s": [100.0, 101, 99, 200, 180, 260, 400, 404, 396, 380, 400, 420],
                         "latency_p50_s": 1.0, "state_bytes": 10, "partials": 5, "correct": True})
    agg = api_bench.aggregate(with_ratios(runs)).set_index(["operator", "way"])
    assert agg.loc[("python", "pkg"), ["x plain", "x plain min", "x plain max"]].round(2).tolist() == [2.0, 1.78, 2.63]
    assert agg.loc[("python", "pkg"), "repeats"] == 3 and agg["correct"].all()
    text = api_bench.summary(with_ratios(runs))
    assert "python (medians of 3 repeats):" in text
    assert "warning: repeats disagree" in text and "python p1 = 0.2 pkg (20%)" in text  # 200, 180, 260
    assert "sum p1 = 0.2 pkg" not in text  # 380, 400, 420: 5 %
