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
    assert len(study.runs()) == len(study.p1) * len(study.operators) * (1 + len(study.schemes))


@pytest.mark.parametrize("text, says", [
    ("name: x\napps: wordcount\n", "not an API study"),
    ("kind: api\nname: x\np1: [1.5]\n", "p1.0: 1.5 is greater than the maximum of 1"),
    ("kind: api\nname: x\np1: [0.2]\nschemes: [mixed]\n", "mixed cannot balance a Spark job"),
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


@pytest.mark.parametrize("p1", [0.05, 0.2, 0.5])
def test_the_stream_gives_its_hottest_key_the_share_asked(p1):
    study = ApiStudy(name="t", p1=[p1], keys=500, batch_rows=20_000, batches=3)
    rows = stream(study, p1)
    assert len(rows) == 60_000 and rows["value"].between(1, 99).all()
    assert rows["key"].value_counts(normalize=True).iloc[0] == pytest.approx(p1, abs=0.01)
    assert stream(study, p1).equals(rows)  # seeded
    with pytest.raises(ApiBenchError, match="not skewed"):
        zipf_exponent(0.001, 500)


def test_the_files_are_s_per_batch_in_order(tmp_path):
    study = ApiStudy(name="t", p1=[0.3], sources=3, batch_rows=300, batches=2)
    rows = stream(study, 0.3)
    api_bench.write_files(rows, tmp_path / "f", study)
    files = sorted((tmp_path / "f").iterdir(), key=lambda p: p.stat().st_mtime)
    assert len(files) == 6 and [p.name for p in files] == sorted(p.name for p in files)
    assert pd.concat([pd.read_parquet(p) for p in files], ignore_index=True).equals(rows)


def test_ratios_are_over_the_plain_run_of_the_same_operator_and_p1():
    table = pd.DataFrame({"p1": [0.2] * 4, "operator": ["python", "python", "sum", "sum"],
                          "way": ["plain", "pkg", "plain", "pkg"], "throughput_rows_per_s": [100.0, 250, 400, 360]})
    assert with_ratios(table)["over_plain"].tolist() == [1.0, 2.5, 1.0, 0.9]
    assert np.isnan(with_ratios(table[table["way"] == "pkg"])["over_plain"]).all()  # no plain run: no ratio
