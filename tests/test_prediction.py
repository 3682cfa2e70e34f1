"""The simulator's prediction of a Spark run: the work per worker and batch is exactly what the pipeline
routes and fans out, the engine model recovers a known cost line, and the throughput formula."""
import numpy as np
import pandas as pd
import pytest

from skewbench.bench.apps import make_app
from skewbench.bench.apps.local import run_in_process
from skewbench.bench.prediction import EngineModel, Work, predict, simulate_point
from skewbench.bench.spark.routing import prepare
from skewbench.bench.studyfile import Point
from skewbench.workloads import parse


def point(app="wordcount", scheme="pkg", **kw) -> Point:
    base = dict(study="t", app=app, scheme=scheme, workers=5, sources=3, delay_ms=0.5,
                workload="zipf:z=1.2,keys=300", messages=4000, batch_rows=1000, rate=0.0, aggregation_period=0,
                split="shuffle", seed=1)
    return Point(**{**base, **kw})


@pytest.mark.parametrize("app", ["wordcount", "selfjoin", "naivebayes"])
@pytest.mark.parametrize("scheme", ["kg", "pkg", "sg", "dkg", "mintable"])
def test_simulated_work_equals_the_in_process_pipeline(app, scheme):
    p = point(app, scheme)
    work = simulate_point(p)
    assert work.store.shape == (4, 5)
    stream = make_app(app).prepare(parse(p.workload, messages=p.messages, seed=p.seed))
    proto = prepare(scheme, p.workers, p.sources, stream, p.seed)[0]
    local = run_in_process(make_app(app), stream, proto, p.workers, p.sources, p.batch_rows, seed=p.seed)
    assert work.store.sum(0).tolist() == local.stores.tolist()
    assert work.probe.sum(0).tolist() == local.probes.tolist()
    assert work.store.sum() == (p.messages if app != "naivebayes" else local.stores.sum())


def calibration(intercept=0.5, per_w=0.05, per_s=0.02, per_row=1e-6) -> pd.DataFrame:
    rows = [{"app": "wordcount", "delay_ms": 0.0, "workers": w, "sources": s, "copies": b,
             "overhead_median_s": intercept + per_w * w + per_s * s + per_row * b, "busy_per_copy_s": 2e-6}
            for w, s, b in [(10, 1, 20000), (20, 1, 40000), (50, 1, 100000), (10, 5, 20000), (10, 20, 20000),
                            (10, 1, 100000)]]
    return pd.DataFrame(rows)


def test_engine_model_recovers_a_known_cost_line():
    model = EngineModel.fit(calibration())
    assert model.runs == 6 and model.intercept == pytest.approx(0.5)
    assert model.coef == pytest.approx({"workers": 0.05, "sources": 0.02, "copies": 1e-6})
    assert model.cost(100, 10, 200_000) == pytest.approx(0.5 + 5 + 0.2 + 0.2) and model.serial == 1.0
    assert model.copy_seconds("wordcount") == 2e-6 and model.copy_seconds("selfjoin") == 2e-6
    fixed_s = EngineModel.fit(calibration().query("sources == 1"))
    assert set(fixed_s.coef) == {"workers", "copies"}  # a term the runs do not vary is not fitted
    assert EngineModel.fit(calibration().assign(delay_ms=1.0, busiest_median_s=1.0)) is None  # no no-delay run
    falling = calibration().assign(overhead_median_s=lambda r: 2.0 + 0.05 * r["workers"] - 1e-5 * r["copies"])
    assert "copies" not in EngineModel.fit(falling).coef  # a cost falling with the batch is not extrapolated
    collinear = EngineModel.fit(calibration().iloc[:3])  # copies = 2000 W: W alone explains both
    assert set(collinear.coef) == {"workers"} and collinear.coef["workers"] == pytest.approx(0.05 + 2000e-6)


def test_serial_share_is_fitted_on_delayed_runs():
    rows = calibration()
    delayed = pd.DataFrame([{**rows.iloc[0], "delay_ms": 0.5, "busiest_median_s": b,
                             "overhead_median_s": 0.3 * e + max(0.7 * e - b, 0)}
                            for b, e in [(0.2, 1.04), (0.6, 1.04), (3.0, 1.04)]])  # cost 1.04 s at that point
    model = EngineModel.fit(pd.concat([rows.iloc[:6], delayed]))
    assert model.serial == pytest.approx(0.3) and model.runs == 9
    assert model.batch_seconds(1.5, 0.2) == pytest.approx(1.5) and model.batch_seconds(1.5, 3.0) == pytest.approx(3.45)
    assert EngineModel.from_json(model.to_json()) == model


def test_predicted_throughput_is_messages_over_engine_plus_busiest_worker():
    model = EngineModel(intercept=1.0, coef={}, per_copy={"wordcount": 0.0}, runs=1)
    work = Work(np.array([[9, 1], [6, 4], [3, 7]]), np.zeros((3, 2), dtype=np.int64))  # 3 batches of 10
    p = point(workers=2, sources=1, delay_ms=100.0, messages=30, batch_rows=10)
    got = predict(p, work, model)  # warm-up batch excluded: (1 + 0.6) + (1 + 0.7) seconds for 20 messages
    assert got["throughput"] == pytest.approx(20 / 3.3) and got["busiest_s"] == pytest.approx(0.65)
    assert predict(point(workers=2, sources=1, delay_ms=100.0, messages=30, batch_rows=10, rate=2.0), work,
                   model)["throughput"] == 2.0  # offered below capacity: the rate



@pytest.mark.parametrize("app", ["wordcount", "selfjoin", "naivebayes"])
@pytest.mark.parametrize(("scheme", "live"), [("consistent", {"schedule": "1:7,3:4"}),
                                              ("mixed", {"rebalance_every": 1}),
                                              ("kg", {"schedule": "1:6", "migration": "fluid", "fluid_keys": 40})])
def test_live_work_equals_the_in_process_pipeline_with_each_batchs_width(app, scheme, live):
    """Live routing: the simulated copies are the in-process pipeline's (which moves the keys' state as
    Spark does), over the widest W, and each batch's active W is that of the version in force."""
    from skewbench.migration import parse_schedule

    p = point(app, scheme, messages=6000, **live)
    work = simulate_point(p)
    schedule = parse_schedule(live["schedule"]) if "schedule" in live else {}
    assert work.store.shape == (6, max([5, *schedule.values()]))
    stream = parse(p.workload, messages=p.messages, seed=p.seed)
    local = run_in_process(make_app(app), stream, scheme, p.workers, p.sources, p.batch_rows, seed=p.seed,
                           rebalance_every=p.rebalance_every, schedule=schedule, migration=p.migration,
                           fluid_keys=p.fluid_keys)
    assert len(local.versions) > 1
    assert work.store.sum(0).tolist() == local.stores.tolist()
    assert work.probe.sum(0).tolist() == local.probes.tolist()
    in_force = [max((v for v in local.versions if v.first_batch <= b), key=lambda v: v.number) for b in range(6)]
    assert work.workers.tolist() == [v.workers for v in in_force]
    assert Work.from_json(work.to_json()).workers.tolist() == work.workers.tolist()
    assert predict(p, work, EngineModel(0.5, {"workers": 0.05}, {app: 1e-6}, runs=1))["throughput"] > 0


def test_a_schemes_parameters_route_as_in_process():
    p = point("selfjoin", "consistent", params="vnodes=3", workload="ticks:symbols=300")
    work = simulate_point(p)
    stream = make_app("selfjoin").prepare(parse(p.workload, messages=p.messages, seed=p.seed))
    proto = prepare("consistent", p.workers, p.sources, stream, p.seed, "vnodes=3")[0]
    local = run_in_process(make_app("selfjoin"), stream, proto, p.workers, p.sources, p.batch_rows, seed=p.seed)
    assert work.store.sum(0).tolist() == local.stores.tolist()
    assert work.store.sum(0).tolist() != simulate_point(point("selfjoin", "consistent",
                                                              workload="ticks:symbols=300")).store.sum(0).tolist()
