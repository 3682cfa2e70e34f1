"""A live run's response to its first migration, from a timeline whose numbers are known, and the report's
live-routing sections (scaleout, fang-live) drawn from such tables."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.bench.scaleout import COLUMNS, response


def timeline(per_worker: list[float], workers: list[int], p99=0.5, peak_at=None) -> pd.DataFrame:
    n = len(per_worker)
    duration = np.full(n, 2.0)
    latency_max = np.full(n, 1.0)
    if peak_at is not None:
        latency_max[peak_at] = 4.0
    version = np.r_[0, np.cumsum(np.diff(workers) != 0)]  # a new routing version with every change of W
    return pd.DataFrame({"batch": range(n), "workers": workers, "duration": duration,
                         "messages_done": np.array(per_worker) * duration * np.array(workers),
                         "latency_p99": p99, "latency_max": latency_max, "version": version, "plan_seconds": 0.0})


def test_scale_out_response_before_after_recovery_and_peak():
    # batch 0 warm-up; 10 workers carry 100/s each; W 11 from batch 3, state installed in batch 4.
    t = timeline([5, 100, 100, 40, 70, 95, 96, 97], [10, 10, 10, 11, 11, 11, 11, 11], peak_at=4)
    got = response(t, [{"first_batch": 3, "last_batch": 4, "plan_seconds": 0.01, "seconds": 4.5, "keys": 50,
                        "seen_keys": 200}])
    assert got == {"change_batch": 3, "moved_share": 0.25, "plan_s": 0.01, "migration_batches": 2, "migration_s": 4.5,
                   "per_worker_before": 100.0, "per_worker_after": 96.0,
                   "recovery_s": 3 * 2.0,  # batches 3, 4 and 5 (the first at >= 90 of the 100 before)
                   "latency_p99_before_s": 0.5, "latency_p99_migration_s": 0.5, "latency_peak_s": 4.0}


def test_a_run_that_never_recovers_or_never_migrated():
    t = timeline([5, 100, 100, 40, 70, 80], [10, 10, 10, 9, 9, 9])
    assert np.isnan(response(t, [{"first_batch": 3, "last_batch": 4, "plan_seconds": 0.0, "keys": 1}])["recovery_s"])
    steady = timeline([5, 100, 100, 90, 100, 80], [10] * 6)
    assert all(np.isnan(v) for v in response(steady, []).values()) and set(response(steady, [])) == set(COLUMNS)


def test_a_change_of_w_that_moved_no_state_is_measured_from_its_first_batch():
    """pkg scaling out: its partial state stays where it is, so the change lands with its first batch."""
    t = timeline([5, 100, 100, 70, 95, 96], [10, 10, 10, 11, 11, 11], peak_at=3)
    got = response(t, [])
    assert (got["change_batch"], got["moved_share"], got["migration_batches"], got["migration_s"]) == (3, 0.0, 1, 0.0)
    assert (got["per_worker_after"], got["recovery_s"], got["latency_peak_s"]) == (95.5, 2 * 2.0, 4.0)


def test_a_live_points_run_carries_its_routing_changes():
    from skewbench.bench.driver import config_of
    from skewbench.bench.studyfile import Point

    point = Point(study="s", app="wordcount", scheme="consistent", workers=10, sources=5, delay_ms=0.4,
                  workload="wp", messages=20000, batch_rows=2000, rate=0.0, aggregation_period=0, split="shuffle",
                  seed=0, schedule="4:11", migration="fluid", fluid_keys=100)
    config = config_of(point, Path("out"))
    assert config.live() == point.live and config.width() == 11
    assert config_of(replace(point, schedule="", migration="all-at-once", fluid_keys=0), Path("out")).live() is None


def test_the_report_section_measures_each_change_beside_the_papers(tmp_path):
    from skewbench.analysis.sections.live import scaleout_spark

    rows = []
    cases = [(s, m, f, "all-at-once") for s, m in (("kg", 0.9), ("consistent", 0.09), ("mixed", 0.01),
                                                     ("gedik-readj", 0.08), ("pkg", 0.0)) for f in (11, 9)]
    hold = [(*case, "hold", 0.5) for case in cases + [("kg", 0.9, 11, "fluid")]]
    ahead = [("kg", 0.9, 11, "fluid", "ahead", 0.4), ("kg", 0.9, 11, "all-at-once", "ahead", 0.7)]
    for scheme, moved, final, migration, handover, p99 in hold + ahead:
        run = f"{scheme}-{final}-{migration}-{handover}"
        t = timeline([5, 100, 100, 40, 70, 95, 96, 97], [10, 10, 10, final, final, final, final, final], p99=p99)
        (tmp_path / "runs" / run).mkdir(parents=True)
        t.to_parquet(tmp_path / "runs" / run / "timeline.parquet")
        measured = response(t, [{"first_batch": 3, "last_batch": 4, "plan_seconds": 0.01, "keys": moved * 1000,
                                 "seen_keys": 1000}])
        rows.append({"scheme": scheme, "workers": 10, "final_workers": final, "migration": migration,
                     "handover": handover,
                     "correct": True, "sim_exact": True, "migrated_keys": moved * 1000, "migrated_bytes": 1,
                     "dist_cost": 2.5 if scheme == "pkg" else 1.0, "run": run, **measured})
    pd.DataFrame(rows).to_csv(tmp_path / "scaleout.csv", index=False)
    text = "\n".join(scaleout_spark(tmp_path))
    assert "## Scale-out and scale-in on Spark" in text and "| out 10→11 | kg |" in text
    assert (tmp_path / "scaleout.png").stat().st_size > 0
    assert "kg (hash mod W) 9.9× the ideal, consistent hashing 0.99×" in text  # 0.9 / (1/11), 0.09 / (1/11)
    assert "Mixed recovers in 6.0 s, Readj recovers in 6.0 s" in text
    assert "Here, kg out 10→11: p99 during" in text and ": not lower (a moved key's rows" in text  # the same p99
    assert "Here, kg out 10→11, ahead: p99 during the migration (its batches' largest) fluid 0.40 s" in text
    assert "all at once 0.70 s over 2 (peak 1.00 s against 1.00 s; steady p99 0.70 s): lower (the state" in text
    assert "| out 10→11 | kg | fluid, ahead |" in text
    assert ("Partial state left where it is (pkg, in 10→9): no key moved; 2.50 counters per key at the end "
            "against kg's 1.00 after moving its keys.") in text
    assert scaleout_spark(tmp_path / "nothing") == []


def test_the_megaphone_section_compares_fluid_with_all_at_once_per_change_with_intervals(tmp_path):
    from skewbench.analysis.sections.live import megaphone_spark

    rows = []
    points = ((11, "all-at-once", 0, (1.4, 1.5, 1.6)), (11, "fluid", 20, (1.0, 1.1, 1.2)),
              (9, "all-at-once", 0, (1.4, 1.5, 1.6)), (9, "fluid", 40, (1.3, 1.5, 1.7)))
    for final, migration, fluid_keys, p99s in points:
        for seed, p99 in enumerate(p99s):
            run = f"{final}-{migration}-{fluid_keys}-{seed}"
            t = timeline([5, 100, 100, 40, 70, 95, 96, 97], [10, 10, 10, *[final] * 5], p99=p99)
            (tmp_path / "runs" / run).mkdir(parents=True)
            t.to_parquet(tmp_path / "runs" / run / "timeline.parquet")
            measured = response(t, [{"first_batch": 2, "last_batch": 4, "plan_seconds": 0.0, "keys": 900,
                                     "seen_keys": 1000}])
            rows.append({"scheme": "kg", "workload": "zipf:z=0.5,keys=4000000", "workers": 10,
                         "final_workers": final, "schedule": f"3:{final}",
                         "migration": migration, "fluid_keys": fluid_keys, "handover": "ahead", "correct": True,
                         "sim_exact": seed > 0, "migrations": 1, "migrated_keys": 900, "migrated_bytes": 2e7,
                         "run": run, **measured})
    pd.DataFrame(rows).to_csv(tmp_path / "megaphone.csv", index=False)
    text = "\n".join(megaphone_spark(tmp_path))
    assert "12 runs (12 gave the reference's answer, 8 routed exactly" in text
    assert "kg changes W at micro-batch 3;" in text
    assert "| out 10→11 | fluid, 20 keys | 900 | 20 | 3 |" in text and (tmp_path / "megaphone.png").stat().st_size
    assert "- out 10→11, fluid, 20 keys: p99 during the migration 1.1 [1, 1.2] s against all at once's " \
           "1.5 [1.4, 1.6] s — fluid better." in text
    assert "- in 10→9, fluid, 40 keys: p99 during the migration 1.5 [1.3, 1.7] s" in text
    assert "— not distinguishable." in text
    assert megaphone_spark(tmp_path / "nothing") == []
    bigger = [{**row, "workload": "zipf:z=0.5,keys=16000000"} for row in rows]  # a second state size
    skipped = {**bigger[-1], "final_workers": 10, "migrations": 0, "fluid_keys": 10, "run": "never"}
    pd.DataFrame([*rows, *bigger, skipped]).to_csv(tmp_path / "megaphone.csv", index=False)
    text = "\n".join(megaphone_spark(tmp_path))
    assert "| out 10→11, 4M keys | fluid, 20 keys |" in text and "| in 10→9, 16M keys | all at once |" in text
    assert "- in 10→9, 16M keys, fluid, 40 keys: p99 during the migration 1.5 [1.3, 1.7] s" in text
    assert "24 runs (" in text and "1 run did not migrate and is left out (in 10→9, 16M keys, fluid, 10 keys)" in text
    assert "10→10" not in text


def test_the_fang_live_section_draws_each_measure_against_f_with_fangs_observations(tmp_path):
    from skewbench.analysis.sections.live import fang_live

    rows = []
    for scheme, throughput, plan in (("mixed", 900, 0.005), ("gedik-readj", 700, 0.02), ("sg", 1000, np.nan)):
        for f in (0, 1):
            run = f"{scheme}-{f}"
            (tmp_path / "runs" / run).mkdir(parents=True)
            pd.DataFrame({"batch": range(5), "max_over_mean": [2.0, 1.5, 1.1, 1.07, 1.09]}).to_parquet(
                tmp_path / "runs" / run / "timeline.parquet")
            rows.append({"scheme": scheme, "workload": f"lzipf:z=0.85,keys=10000,f={f},workers=15", "run": run,
                         "correct": True, "sim_exact": True, "throughput": throughput - 100 * f,
                         "latency_p99": 1.0, "migrated_keys": 10 * f, "plan_median_s": plan})
    pd.DataFrame(rows).to_csv(tmp_path / "fang-live.csv", index=False)
    text = "\n".join(fang_live(tmp_path))
    assert "## Fang et al.'s Figs. 12–13 on Spark" in text and (tmp_path / "fang_live.png").stat().st_size > 0
    assert "here 0.005 s against 0.020 s per plan" in text
    assert "sg 950, mixed 850, readj 650 messages/s" in text
    assert "Mixed's balance per batch: 1.090" in text  # the median of batches 2-4


def test_live_routing_plans_with_the_schemes_parameters(tmp_path):
    from skewbench.bench.apps import make_app
    from skewbench.bench.spark.run import Config, publisher
    from skewbench.workloads import parse

    config = Config(app="wordcount", scheme="mixed", workers=4, sources=2, delay_ms=0, messages=4000, batch_rows=500,
                    rebalance_every=2, params="theta=0.3,table_max=7", out=str(tmp_path / "run"))
    stream = make_app("wordcount").prepare(parse("zipf:z=1.2,keys=400", messages=4000, seed=0))
    router = publisher(config, stream, tmp_path / "run").controller.current.router
    assert (router.theta, router.table_max) == (0.3, 7)


def test_the_fang_theta_section_puts_mixed_and_readj_on_one_theta_axis(tmp_path):
    from skewbench.analysis.sections.live import _theta, fang_theta

    assert [_theta(p, 10) for p in ("theta=0.02", "alpha=1.0897", "alpha=1.3687")] == [0.02, 0.08, 0.32]
    rows = [{"app": app, "scheme": scheme, "params": params, "workers": 10, "throughput": 1000 - 100 * i,
             "latency_p50": 1.0, "migrated_keys": 5, "plan_median_s": 0.01, "correct": True, "sim_exact": True}
            for app in ("wordcount", "selfjoin")
            for i, (scheme, params) in enumerate([("pkg", ""), ("mixed", "theta=0.02"), ("mixed", "theta=0.32"),
                                                  ("gedik-readj", "alpha=1.0223")])]
    pd.DataFrame(rows).to_csv(tmp_path / "fang-theta.csv", index=False)
    text = "\n".join(fang_theta(tmp_path))
    assert "## Fang et al.'s Fig. 14 on Spark" in text and (tmp_path / "fang_theta.png").stat().st_size > 0
    assert "| wordcount | mixed | 0.32 | 800 |" in text and "| selfjoin | pkg | nan | 1,000 |" in text


def test_the_folders_executors_read_are_absolute_for_a_relative_out(tmp_path, monkeypatch):
    """`make bench OUT=results/x` gives a relative folder; the executors, in their own working directories,
    must still find the routing versions and the routers (a live bench failed on version-000000.pickle)."""
    from skewbench.bench.spark.live import folder_of
    from skewbench.bench.spark.run import routers_folder

    monkeypatch.chdir(tmp_path)
    for path in (folder_of(Path("results/x/checkpoint")), routers_folder(Path("results/x"))):
        assert path.is_absolute() and path.is_dir() and path.is_relative_to(tmp_path)
