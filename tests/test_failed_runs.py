"""A failed run is a failure, without a cluster: how the driver counts each message copy once (live routing's
held rows too), how its watchdog fails a run that stopped, why a finished run failed, and that a bench rebuilt
from run folders keeps every failed run — incorrect, not simulator-exact, counted twice, lost — out of its
tables and in failed.csv, and exits 1."""
import json
import re
import textwrap
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from skewbench.bench.spark import faults
from skewbench.bench.spark.faults import FaultError, parse_all
from skewbench.bench.spark.latency import handled
from skewbench.bench.spark.run import Collector, Config, Copies, RunFailed, Watchdog, kept_of
from skewbench.bench.spark.summary import failures


def copies(worker, received, done):
    """A live worker's record of a batch: the messages it received, and those it handled."""
    return {"worker": worker, "received": handled(np.array(received), np.zeros(len(received))),
            "messages": handled(np.array(done), np.zeros(len(done)))}


def test_held_rows_handled_in_a_later_batch_are_no_duplicates():
    """Message 1 goes to workers 0 and 1; worker 1 holds it for its key's state and handles it a batch later."""
    ledger = Copies(messages=4)
    assert ledger.count([copies(0, [0, 1], [0, 1]), copies(1, [1], [])]) == 0
    assert ledger.count([copies(0, [2], [2]), copies(1, [3], [1, 3])]) == 0
    assert len(ledger.waiting) == 0


def test_a_message_received_again_or_a_copy_handled_twice_is_a_duplicate():
    ledger = Copies(messages=6)
    assert ledger.count([copies(0, [0, 1], [0, 1])]) == 0
    assert ledger.count([copies(0, [1, 2], [1, 2])]) == 1  # message 1 delivered in a second batch
    assert ledger.count([copies(0, [3], [3]), copies(1, [], [2])]) == 1  # worker 1 never got message 2
    assert ledger.count([copies(0, [4], [4]), copies(2, [5], [])]) == 0
    assert ledger.count([copies(2, [], [5])]) == 0  # held, then handled once
    assert ledger.count([copies(2, [], [5])]) == 1  # and once more: twice


def test_live_routing_counts_duplicates_per_copy(tmp_path):
    """The collector's count of what it keeps of each record: a copy held to the next batch is no duplicate under
    live routing (counted per message, the held copy's batch would look like a replay), a message sent again is."""
    live = Collector(tmp_path, messages=3, publisher=SimpleNamespace())
    for batch, records in enumerate([[copies(0, [0, 1], [0]), copies(1, [1], [1])],
                                     [copies(0, [2], [1, 2])],  # message 1's copy at worker 0, held, now
                                     [copies(0, [2], [2])]]):  # message 2 again
        for r in records:
            r["t_end"] = float(batch)
        live.count(batch, [kept_of(r | {"final": False, "state": None, "outputs": None}) for r in records],
                   pd.DataFrame())
    assert (live.done, live.duplicates) == (3, 1)


def test_a_message_handled_in_a_second_batch_is_a_duplicate_without_live_routing(tmp_path):
    plain = Collector(tmp_path, messages=3)
    for batch, done in enumerate([[0, 1], [1, 2]]):
        plain.count(batch, [{"worker": 0, "messages": handled(np.array(done), np.zeros(2)), "t_end": 1.0,
                             "final": False}], pd.DataFrame())
    assert (plain.done, plain.duplicates, plain.missing().tolist()) == (3, 1, [])


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    from skewbench.bench.spark import run

    clock = Clock()
    monkeypatch.setattr(run.time, "monotonic", clock)
    return clock


def collector_at(done: int, batches: int, missing=(), states=3):
    seen = np.ones(done + len(missing), bool)
    seen[list(missing)] = False
    return SimpleNamespace(done=done, batches=batches, last_batch=batches - 1, states=dict.fromkeys(range(states)),
                           missing=lambda: np.flatnonzero(~seen))


def test_the_watchdog_fails_a_run_whose_last_message_never_comes(clock):
    config = Config(app="wordcount", scheme="kg", workers=3, sources=2, delay_ms=0.05, messages=24_000,
                    batch_rows=2000)
    dog, injector = Watchdog(config, 24_000), SimpleNamespace(strikes=[])
    dog.check(collector_at(0, 0), injector)
    clock.now += 290  # the first batch may take START_S
    dog.check(collector_at(0, 0), injector)
    for batch in range(1, 13):  # a batch every 2 s, the last without message 12,345
        clock.now += 2
        dog.check(collector_at(2000 * batch - (batch == 12), batch, [12_345] if batch == 12 else []), injector)
    assert dog.limit() == 30.0  # 4 × 2 s is less than the floor
    clock.now += 29
    dog.check(collector_at(23_999, 12, [12_345]), injector)
    clock.now += 2
    with pytest.raises(RunFailed, match=r"^lost: no progress for 31 s after batch 11: 1 of 24,000 messages never "
                                        r"arrived \(message 12,345 first\)$"):
        dog.check(collector_at(23_999, 12, [12_345]), injector)


def test_the_watchdog_waits_longer_after_a_long_batch_or_a_strike(clock):
    config = Config(app="wordcount", scheme="kg", workers=3, sources=2, delay_ms=0.0, messages=6000, batch_rows=1000,
                    rate=100)
    dog, injector = Watchdog(config, 6000), SimpleNamespace(strikes=[])
    assert dog.limit() == 300 + 4 * 10  # the first batch's 1,000 messages take 10 s to arrive at 100/s
    dog.check(collector_at(0, 0), injector)
    clock.now += 50
    dog.check(collector_at(1000, 1), injector)
    clock.now += 12  # a slow batch
    dog.check(collector_at(2000, 2), injector)
    assert dog.limit() == 4 * 12
    clock.now += 40
    injector.strikes.append(SimpleNamespace(restarted_at=None))  # a node killed: its own progress
    dog.check(collector_at(2000, 2), injector)
    clock.now += 40
    dog.check(collector_at(2000, 2), injector)
    clock.now += 9
    with pytest.raises(RunFailed, match=r"^stalled: no progress for 49 s after batch 1: every message arrived, but "):
        dog.check(collector_at(2000, 2, states=1), injector)


def test_a_stalled_query_fails_before_its_first_batch(clock):
    config = Config(app="wordcount", scheme="kg", workers=2, sources=1, delay_ms=1, messages=100, batch_rows=100)
    dog, injector = Watchdog(config, 100), SimpleNamespace(strikes=[])
    dog.check(collector_at(0, 0), injector)
    clock.now += 300 + 4 * 0.1 + 1
    with pytest.raises(RunFailed, match=r"^stalled: no progress for 301 s and no batch ran \(0 of 100 messages"):
        dog.check(collector_at(0, 0), injector)


def test_a_finished_run_fails_for_each_thing_wrong():
    summary = {"correct": False, "duplicates": 2, "worker_messages": [5, 1204, 7], "worker_probes": [0, 0, 0]}
    simulated = (np.array([5, 1203, 7]), np.zeros(3, int))
    assert failures(summary, simulated) == ["incorrect answer", "not simulator-exact: worker 1 stored 1,204 vs "
                                            "simulated 1,203", "2 messages counted twice"]
    exact = {**summary, "correct": True, "duplicates": 0, "worker_probes": [1, 2, 3]}
    assert failures(exact, (np.array([5, 1204, 7]), np.array([1, 2, 3]))) == []
    assert failures(exact, (np.array([5, 1204, 7]), np.array([0, 2, 4]))) == [
        "not simulator-exact: worker 0 probed 1 vs simulated 0 (and 1 more workers)"]
    assert failures({**exact, "duplicates": None}) == []  # a summary from before live runs were counted


def test_source_faults_name_a_message_and_need_no_node():
    assert [f.name for f in parse_all("duplicate@0.5,lose@0.25")] == ["lose@0.25", "duplicate@0.5"]
    assert faults.source_options("lose@0.25,lose@0.75,duplicate@0.5", 24_000) == {"lose": "6000,18000",
                                                                                  "duplicate": "12000"}
    assert faults.check("lose@0.5,duplicate@0.6", "engine", None)  # no local cluster needed
    with pytest.raises(FaultError, match="a source fault .* without DOWN"):
        parse_all("lose@0.5+2")
    with pytest.raises(FaultError, match="a node fault is KIND@AT"):
        parse_all("worker@0.5")


STUDY = """\
name: tiny
apps: wordcount
schemes: [kg, pkg]
workers: 3
sources: 2
delay_ms: 0.1
workloads: ["zipf:z=1.2,keys=200"]
messages: 2000
batch_rows: 1000
repeats: 3
"""


def kept_run(folder, point, stored, probed, correct=True, duplicates=0):
    """A run folder as a bench keeps it (summary.json and batches.parquet) with these per-worker counts."""
    folder.mkdir(parents=True)
    summary = {"correct": correct, "duplicates": duplicates, "throughput_msgs_per_s": 1000.0,
               "latency_seconds": {"p50": 0.1, "p95": 0.2, "p99": 0.3}, "imbalance_max_over_mean": 1.2,
               "worker_messages": stored, "worker_probes": probed, "counters": 10, "elapsed_seconds": 5.0,
               "counters_mean": 8.0, "output_rows": 10,
               "overhead_seconds": {"median": 0.5, **{f"{p}_median": 0.1 for p in
                                                      ("before_workers", "workers_spread", "after_workers")}},
               "batch_seconds_median": 1.0, "delay_mode": "sleep", "delay": {"error": 0.01},
               "messages": point.messages, "messages_counted": point.messages}
    (folder / "summary.json").write_text(json.dumps(summary))
    pd.DataFrame({"batch": [0, 1], "max_worker_busy": [0.5, 0.5], "copies": [1000, 1000]}).to_parquet(
        folder / "batches.parquet")


def test_a_rebuilt_bench_keeps_every_failed_run_out_of_its_tables(tmp_path, capsys):
    """Six runs: two pass; one's answer is wrong, one did other work than simulated, one counted messages
    twice, one lost a message (its driver's watchdog said so): results.csv and tiny.csv hold the two, failed.csv
    and the report's first section the four with their reasons, and the rebuild exits 1."""
    from skewbench.bench.driver import _plan
    from skewbench.bench.prediction import cached_work
    from skewbench.bench.studyfile import load_all
    from skewbench.cli import main

    (tmp_path / "tiny.yaml").write_text(textwrap.dedent(STUDY))
    studies = load_all([str(tmp_path / "tiny.yaml")])
    out = tmp_path / "bench"
    out.mkdir()
    (out / "plan.json").write_text(json.dumps(_plan(studies, "default", 0, None)))
    at = {(p.scheme, p.seed): p for p in studies[0].points()}
    assert len(at) == 6
    wrong, inexact, twice, lost = at["kg", 1], at["pkg", 0], at["pkg", 1], at["kg", 2]
    for point in at.values():
        if point is lost:
            continue
        work = cached_work(point, out / "sim")
        stored, probed = work.store.sum(0).tolist(), work.probe.sum(0).tolist()
        if point is inexact:
            stored[2] += 1
        kept_run(out / "runs" / point.name, point, stored, probed, correct=point is not wrong,
                 duplicates=2 if point is twice else 0)
    (out / "runs" / lost.name).mkdir()
    (out / "runs" / lost.name / "failed.json").write_text(json.dumps({"reasons": [
        "lost: no progress for 30 s after batch 1: 1 of 2,000 messages never arrived (message 1,000 first)"]}))
    assert main(["report", str(out), "--rebuild"]) == 1
    assert f"4 runs failed (incorrect, not simulator-exact, counted twice or lost), kept out of every table: see " \
           f"{out / 'failed.csv'}" in capsys.readouterr().err
    results, tiny = pd.read_csv(out / "results.csv"), pd.read_csv(out / "tiny.csv")
    assert sorted(results["run"]) == sorted(tiny["run"]) == sorted([at["kg", 0].name, at["pkg", 2].name])
    assert results["correct"].all() and results["sim_exact"].all() and (results["duplicates"] == 0).all()
    failed = pd.read_csv(out / "failed.csv").set_index("run")
    simulated = int(cached_work(inexact, out / "sim").store.sum(0)[2])
    assert failed["reasons"].to_dict() == {
        inexact.name: f"not simulator-exact: worker 2 stored {simulated + 1:,} vs simulated {simulated:,}",
        wrong.name: "incorrect answer", twice.name: "2 messages counted twice",
        lost.name: "lost: no progress for 30 s after batch 1: 1 of 2,000 messages never arrived (message 1,000 first)"}
    assert failed.loc[lost.name, ["study", "scheme", "workers", "seed"]].tolist() == ["tiny", "kg", 3, 2]
    report = (out / "report.md").read_text()
    assert report.index("## ⚠ 4 runs failed") < report.index("## Every run of the bench")
    assert "2 runs in 1 studies in the tables" in report and "4 more runs failed (above)" in report
    assert "| not simulator-exact: worker 2 stored" in report


def test_a_calibration_run_that_failed_is_neither_fitted_on_nor_cached(tmp_path, monkeypatch):
    """The engine calibration of the study above (sg, without delay and at 0.1 ms): one run's answer was wrong.
    The model is fitted on the other and predicts this bench alone; the failed run leaves the cache for the
    bench's runs/ and failed.csv, so the next bench's calibration runs it again."""
    from skewbench.bench.calibration import Calibration, design
    from skewbench.bench.driver import CALIBRATION_FAILED, _calibrated_without, run_failures
    from skewbench.bench.prediction import cached_work
    from skewbench.bench.studyfile import load_all

    (tmp_path / "tiny.yaml").write_text(textwrap.dedent(STUDY))
    calibration = Calibration(design(load_all([str(tmp_path / "tiny.yaml")]), "default"), tmp_path / "cache")
    bare, delayed = sorted(calibration.points, key=lambda p: p.delay_ms)
    for point in (bare, delayed):
        folder = calibration.folder / "runs" / point.name
        work = cached_work(point, calibration.folder / "sim")
        kept_run(folder, point, work.store.sum(0).tolist(), work.probe.sum(0).tolist(), correct=point is bare)
        (folder / "metrics").mkdir()
        pd.DataFrame({"batch": [0, 1], "stored": [500, 500], "probed": [0, 0], "busy_seconds": [0.01, 0.01]}).to_parquet(
            folder / "metrics" / "batch-000000.parquet")
    failed = {p: r for p in (bare, delayed) if (r := run_failures(p, calibration.folder / "runs" / p.name,
                                                                   calibration.folder / "sim"))}
    assert failed == {delayed: ("incorrect answer",)}
    out = tmp_path / "bench"
    out.mkdir()
    assert "1 of its runs failed" in _calibrated_without(out, calibration, failed)
    assert not calibration.model_path.exists() and calibration.missing() == [delayed]
    model = json.loads((out / "engine_model.json").read_text())
    assert "1 of its 2 runs, not cached: 1 failed" in model["source"]
    assert [r["run"] for r in json.loads((out / CALIBRATION_FAILED).read_text())] == [delayed.name]
    assert (out / "runs" / delayed.name / "summary.json").exists()
    said = f"1 of 2 engine-calibration runs failed: {bare.name}: lost: no progress"
    with pytest.raises(RunFailed, match=f"^{re.escape(said)}$"):  # advise --calibrate: no bench to keep it in
        _calibrated_without(None, calibration, {bare: ("lost: no progress",)})
    assert not (calibration.folder / "runs" / bare.name).exists()  # the next calibration runs it again


def test_a_sustainable_search_that_failed_reports_no_rate(tmp_path):
    """The peak passed, the search's first run passed, its second lost a message: neither search run
    is in the tables (the rate the search would find rests on the failed run), both are in failed.csv."""
    from skewbench.bench.driver import _plan, _results, _search
    from skewbench.bench.prediction import cached_work
    from skewbench.bench.studyfile import load_all

    study = STUDY.replace("schemes: [kg, pkg]", "schemes: kg").replace("repeats: 3", "sustainable: {seconds: 2}")
    (tmp_path / "tiny.yaml").write_text(textwrap.dedent(study))
    studies = load_all([str(tmp_path / "tiny.yaml")])
    out = tmp_path / "bench"
    out.mkdir()
    (out / "plan.json").write_text(json.dumps(_plan(studies, "default", 0, None)))

    def ran(point):
        work = cached_work(point, out / "sim")
        kept_run(out / "runs" / point.name, point, work.store.sum(0).tolist(), work.probe.sum(0).tolist())
        pd.DataFrame({"batch": [0, 1, 2], "started": [0.0, 1, 2], "duration": [1.0] * 3, "messages": [1000] * 3,
                      "first_arrival": [0.0, 0.5, 1.5], "max_worker_busy": [0.5] * 3, "copies": [1000] * 3}).to_parquet(
            out / "runs" / point.name / "batches.parquet")

    (base,) = studies[0].points()
    ran(base)
    first = _search(out, studies, "default", base, None)[1]
    ran(first)
    lost = _search(out, studies, "default", base, None)[1]
    (out / "runs" / lost.name).mkdir()
    (out / "runs" / lost.name / "failed.json").write_text(json.dumps({"reasons": ["lost: no progress"]}))
    assert _search(out, studies, "default", base, None)[1] is None  # the search is over
    results = _results(out, studies, "default")
    assert results.table["run"].tolist() == [base.name]
    failed = results.failed.set_index("run")
    assert failed["reasons"].to_dict() == {
        first.name: f"its sustainable-throughput search failed at run {lost.name}", lost.name: "lost: no progress"}
    assert (failed["search_of"] == base.name).all()
