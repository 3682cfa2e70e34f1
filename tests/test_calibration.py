"""The engine calibration of a bench without an engine study: designed from the bench's own points, cached
under a key that changes with the cluster's shape, the code and the design; ``--engine-model`` checked
before any cluster is asked for."""
import json
import textwrap

import pandas as pd
import pytest

from skewbench.bench import calibration
from skewbench.bench.calibration import Calibration, design
from skewbench.bench.prediction import EngineModel
from skewbench.bench.studyfile import load
from skewbench.cli import main

TINY = """\
name: tiny
apps: [wordcount, selfjoin]
schemes: [kg, pkg]
workers: [4, 8]
sources: [1, 2]
delay_ms: [0.2, 0.6]
workloads: ["zipf:z=1.2,keys=2000"]
messages: 20000
batch_rows: 4000
"""
STATUS = {"workers": [{"cores": 2, "memory": 1024, "state": "ALIVE"}, {"cores": 2, "memory": 1024, "state": "ALIVE"},
                      {"cores": 2, "memory": 1024, "state": "DEAD"}]}
SHAPE = dict(status=STATUS, executor_memory="512m", machine_cores=2, spark_version="4.3.0")


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return load(path)


def test_the_design_spans_the_bench_points_one_factor_at_a_time(tiny):
    study = design([tiny], "default")
    points = study.points()
    assert {p.scheme for p in points} == {"sg"} and study.spec["engine"] is True
    assert {p.delay_ms for p in points} == {0.0, 0.4}  # no delay, and the median of the bench's delays
    centre = [p for p in points if (p.app, p.workers, p.sources, p.batch_rows) == ("wordcount", 4, 1, 2000)]
    assert len(centre) == 2  # the smallest point, without and with delay
    # around the centre: selfjoin, W = 8, S = 2 and the bigger batch, each at both delays; a batch per worker
    # is the bench's smallest or largest (4000 rows at W = 4 or 8: 500 and 1000 per worker)
    assert len(points) == 2 * 5 and {-(-p.batch_rows // p.workers) for p in points} == {500, 1000}
    assert {(p.app, p.workers, p.sources, p.batch_rows) for p in points} == {
        ("wordcount", 4, 1, 2000), ("selfjoin", 4, 1, 2000), ("wordcount", 8, 1, 4000), ("wordcount", 4, 2, 2000),
        ("wordcount", 4, 1, 4000)}
    assert all(p.messages == calibration.BATCHES * p.batch_rows for p in points)


def test_the_cache_key_changes_with_shape_code_and_design(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("SKEWBENCH_CACHE", str(tmp_path / "cache"))
    first = Calibration.for_bench([tiny], "default", **SHAPE)
    assert first.folder.parent == tmp_path / "cache" / "engine"
    assert json.loads((first.folder / "key.json").read_text())["cluster"]["workers"] == [
        {"slots": 2, "memory_mib": 1024}] * 2  # the ALIVE workers only
    assert Calibration.for_bench([tiny], "default", **SHAPE).folder == first.folder  # same bench: reused
    for change in ({"machine_cores": 4}, {"executor_memory": "4g"}, {"spark_version": "4.2.0"},
                   {"status": {"workers": STATUS["workers"][:1]}}):
        assert Calibration.for_bench([tiny], "default", **{**SHAPE, **change}).folder != first.folder, change
    other = tiny.path.with_name("other.yaml")
    other.write_text(TINY.replace("workers: [4, 8]", "workers: [4, 16]"))
    assert Calibration.for_bench([load(other)], "default", **SHAPE).folder != first.folder
    monkeypatch.setattr(calibration, "code_digest", lambda: "another-version")
    assert Calibration.for_bench([tiny], "default", **SHAPE).folder != first.folder


def test_a_calibration_is_missing_runs_until_its_model_is_saved(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("SKEWBENCH_CACHE", str(tmp_path / "cache"))
    cal = Calibration.for_bench([tiny], "default", **SHAPE)
    assert cal.missing() == cal.points
    done = cal.folder / "runs" / cal.points[0].name
    done.mkdir(parents=True)
    (done / "summary.json").write_text("{}")
    assert cal.missing() == cal.points[1:]
    rows = pd.DataFrame([{"app": "wordcount", "delay_ms": 0.0, "workers": w, "sources": 1, "copies": 4000,
                          "overhead_median_s": 0.3 + 0.04 * w, "busy_per_copy_s": 3e-6} for w in (4, 8)])
    model = cal.save(rows)
    assert cal.missing() == [] and EngineModel.read(cal.model_path).coef == pytest.approx({"workers": 0.04})
    assert str(cal.folder) in model.source and "workers 4–8" in model.source


def test_a_bad_engine_model_or_one_beside_an_engine_study_is_refused_before_any_cluster(tiny, tmp_path, capsys):
    bad = tmp_path / "model.json"
    bad.write_text('{"intercept_s": 1}')
    engine = tmp_path / "engine.yaml"
    engine.write_text(textwrap.dedent(TINY.replace("name: tiny", "name: cal\nengine: true")))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(EngineModel(0.3, {"workers": 0.04}, {"wordcount": 3e-6}, 4).to_json()))
    out = tmp_path / "out"
    for args, message in (([str(tiny.path), "--engine-model", str(tmp_path / "none.json")], "cannot read"),
                          ([str(tiny.path), "--engine-model", str(bad)], "not an engine model"),
                          ([str(engine), str(tiny.path), "--engine-model", str(good)], "calibrates this bench")):
        assert main(["bench", *args, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
