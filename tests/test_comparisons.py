"""The shipped studies' plans and the bench's comparisons with the paper (the runs themselves need a
cluster: tests/spark)."""
from pathlib import Path

import pandas as pd

from skewbench.analysis.published import published
from skewbench.bench import comparisons as cb
from skewbench.bench.studyfile import load_all

STUDIES = Path(__file__).resolve().parents[1] / "bench" / "studies"


def storm_table(throughput: dict, counters: dict, rate: float = 0.0) -> pd.DataFrame:
    """Three repeats per point: the given throughput, a far outlier and a near one (median = given);
    latency is 1000 / throughput."""
    return pd.DataFrame([{"scheme": s, "delay_ms": d, "rate": rate, "seed": r, "throughput": t * f,
                          "latency_p50": 1000 / (t * f), "counters": counters[s], "correct": True}
                         for (s, d), t in throughput.items() for r, f in enumerate([1.0, 3.0, 0.99])])


def test_storm_comparison_reads_drops_and_counter_order():
    table = storm_table({("kg", 0.1): 1000, ("kg", 1.0): 400, ("pkg", 0.1): 1000, ("pkg", 1.0): 630,
                         ("sg", 0.1): 1000, ("sg", 1.0): 600}, {"kg": 10, "pkg": 12, "sg": 30})
    c = cb.compare_storm(table)
    assert c["throughput_drop_pct"] == {"kg": 60.0, "pkg": 37.0, "sg": 40.0}
    assert c["paper_throughput_drop_pct"] == {"kg": 60, "pkg": 37, "sg": 37}
    assert c["kg_drops_most"] and c["pkg_counters_between_kg_and_sg"] and c["all_correct"]
    assert c["runs_per_point"] == 3 and c["median_throughput"]["kg"] == {"0.1": 1000, "1.0": 400}
    assert c["kg_over_pkg_throughput"] == {"0.1": 1.0, "1.0": round(400 / 630, 3)}
    assert c["kg_over_pkg_latency_p50"] == {"0.1": 1.0, "1.0": round(630 / 400, 3)}
    assert c["paper_kg_over_pkg_latency_max"] == 1.45 and c["offered_rate"] == 0.0
    assert c["paper_counters"] == {"kg": 2.9e6, "pkg": 3.6e6, "sg": 7.2e6}
    assert c["paper_kg_over_pkg_at_largest_delay"] == 0.625  # PKG +60 %


def test_storm_comparison_says_when_the_shape_differs():
    table = storm_table({("kg", 0.1): 1000, ("kg", 1.0): 900, ("pkg", 0.1): 1000, ("pkg", 1.0): 500,
                         ("sg", 0.1): 1000, ("sg", 1.0): 500}, {"kg": 40, "pkg": 12, "sg": 30})
    c = cb.compare_storm(table)
    assert not c["kg_drops_most"] and not c["pkg_counters_between_kg_and_sg"]


def test_offered_study_takes_kgs_rate_at_the_papers_saturation_delay():
    storm, offered = load_all([STUDIES / "storm.yaml", STUDIES / "offered.yaml"])
    paper = published()["pkg"]["storm_deployment"]["kg_saturation_delay_ms"]
    assert offered.spec["offered_rate"] == {"study": "storm", "scheme": "kg", "delay_ms": paper}
    for profile in ("quick", "default", "full"):
        assert paper in {p.delay_ms for p in storm.points(profile) if p.scheme == "kg"}


def aggregation_table(pkg_factor: float = 1.1) -> pd.DataFrame:
    """Two seeds per point; pkg holds half of sg's counters and runs ``pkg_factor`` times as fast."""
    rows = [("kg", 0, 900.0, 100.0)] + [(s, t, 1000.0 * (pkg_factor if s == "pkg" else 1), (50 + 10 * t) * (1 if s == "pkg" else 2))
                                        for t in (0, 1, 2, 4) for s in ("pkg", "sg")]
    return pd.DataFrame([{"scheme": s, "period": t, "seed": seed, "delay_ms": 0.4, "throughput": x, "counters_mean": c,
                          "output_rows": 10 * c, "batch_median_s": 5.0, "correct": True}
                         for s, t, x, c in rows for seed in (0, 1)])


def test_aggregation_comparison_per_period():
    c = cb.compare_aggregation(aggregation_table())
    assert list(c["periods"]) == ["0", "1", "2", "4"] and c["runs_per_point"] == 2
    assert c["periods"]["2"] == {"seconds": 10.0, "pkg_over_sg_throughput": 1.1, "pkg_over_sg_counters": 0.5,
                                 "pkg_over_kg_throughput": round(1100 / 900, 3)}
    assert c["pkg_beats_sg_at_every_period"] and c["paper"]["pkg_beats_kg_above_period_s"] == 30
    assert not cb.compare_aggregation(aggregation_table(pkg_factor=0.9))["pkg_beats_sg_at_every_period"]


def test_shipped_studies_plan_the_papers_runs():
    storm, aggregation, efficiency = load_all([STUDIES / f"{n}.yaml" for n in ("storm", "aggregation", "efficiency")])
    assert len(storm.points()) == 3 * 3 * 3  # three seeds by default, five in the full profile
    points = storm.points("full")
    assert len(points) == 3 * 3 * 5 and {(p.workers, p.sources, p.workload) for p in points} == {(9, 1, "wp")}
    assert all(p.messages == p.batch_rows * 4 == 9 * 4_000 * 4 for p in points)
    assert {p.seed for p in points} == set(range(5)) and len({p.name for p in points}) == len(points)
    assert [(p.workers, p.delay_ms) for p in efficiency.points("quick")] == [(10, 1.0)]  # the smoke run: once
    runs = aggregation.points("full")
    assert len(runs) == (1 + 2 * 4) * 3 and {p.delay_ms for p in runs} == {0.4}
    assert {(p.scheme, p.aggregation_period) for p in runs if p.scheme == "kg"} == {("kg", 0)}
    assert all(p.messages == 9 * p.batch_rows for p in runs)


def test_report_draws_the_bench_tables(tmp_path):
    """The bench's CSVs (as skewbench bench writes them per study) become report sections with figures."""
    from skewbench.analysis.report import write_report

    table = storm_table({("kg", 0.1): 1000, ("kg", 1.0): 400, ("pkg", 0.1): 1000, ("pkg", 1.0): 630,
                         ("sg", 0.1): 1000, ("sg", 1.0): 600}, {"kg": 10, "pkg": 12, "sg": 30})
    table.to_csv(tmp_path / "storm.csv", index=False)
    (tmp_path / "storm_vs_paper.json").write_text(__import__("json").dumps(cb.compare_storm(table)))
    offered = storm_table({("kg", 0.1): 900, ("kg", 1.0): 360, ("pkg", 0.1): 900, ("pkg", 1.0): 567,
                           ("sg", 0.1): 900, ("sg", 1.0): 540}, {"kg": 10, "pkg": 12, "sg": 30}, rate=900.0)
    offered.to_csv(tmp_path / "offered.csv", index=False)
    (tmp_path / "offered_vs_paper.json").write_text(__import__("json").dumps(cb.compare_storm(offered)))
    pd.DataFrame([{"workers": w, "delay_ms": d, "batch_rows": 10_000 * w, "throughput": t, "ideal": w * 1000.0,
                   "efficiency": t / (w * 1000.0), "overhead_median_s": 2.0 * w / 10, "batch_median_s": 12.0,
                   "before_workers_median_s": 1.0, "workers_spread_median_s": 0.1 * w, "after_workers_median_s": 0.5,
                   "run": f"efficiency-W{w}-delay{d}"}
                  for w, d, t in [(10, 1.0, 8000), (10, 0.0, 40000), (20, 1.0, 14000), (20, 0.0, 30000)]]
                 ).to_csv(tmp_path / "efficiency.csv", index=False)
    aggregation = aggregation_table()
    aggregation.to_csv(tmp_path / "aggregation.csv", index=False)
    (tmp_path / "aggregation_vs_paper.json").write_text(__import__("json").dumps(cb.compare_aggregation(aggregation)))
    report = write_report(tmp_path).read_text()
    assert "## PKG Storm experiment on Spark" in report and "## Engine efficiency" in report
    assert "## PKG Storm experiment 2 on Spark — aggregation period" in report
    assert "| 2 | 10 | 1.1 | 0.5 | 1.22 |" in report  # T, seconds, pkg/sg throughput and counters, pkg/kg
    assert "| 1 | 400 | 630 | 600 | 0.635 | 1.57 |" in report  # median throughput per delay, kg / pkg
    assert "9 workers, offered open loop" in report and "offered 900 messages/s;" in report
    assert "| kg | 60 | 60 | 10 | 2,900,000 |" in report
    assert "KG / PKG at 1.0 ms: 0.635 (paper 0.625)" in report
    assert "Efficiency ≥ 70 %: at W = 10, 20." in report
    assert "sustains without delay: W = 20 (capacity 30,000 ≥ 20,000 messages/s); efficiency there 70 %." in report
    for png in ("storm_throughput.png", "offered_throughput.png", "efficiency.png", "efficiency_overhead.png",
                "aggregation.png"):
        assert (tmp_path / png).stat().st_size > 1000 and f"({png})" in report


def test_efficiency_verdict_names_the_largest_w_the_engine_carries():
    from skewbench.analysis.sections.engine import efficiency_verdict

    table = pd.DataFrame({"workers": [10, 20, 50], "ideal": [1e4, 2e4, 5e4], "efficiency": [0.8, 0.72, 0.5],
                          "no-delay throughput": [4.2e4, 4.4e4, 4.5e4]})
    verdict = efficiency_verdict(table)
    assert verdict.startswith("Efficiency ≥ 70 %: at W = 10, 20.")
    assert "without delay: W = 20 (capacity 44,000 ≥ 20,000 messages/s); efficiency there 72 %." in verdict
    beyond = efficiency_verdict(table.assign(**{"no-delay throughput": 5e3, "efficiency": 0.3}))
    assert beyond == "Efficiency ≥ 70 %: at no W measured. The engine sustains the ideal rate at no W measured."


def dkg_table() -> pd.DataFrame:
    """The dkg study's points (default profile) with throughput = 1000 / the scheme's busiest share."""
    study = load_all([STUDIES / "dkg.yaml"])[0]
    share = {"sg": lambda r: 0.1, "kg": lambda r: max(r, 0.1), "pkg": lambda r: max(r / 2, 0.1),
             "dkg": lambda r: max(r / 4, 0.1)}
    rows = []
    for p in study.points():
        r = cb._skew(p.workload)
        rows.append({"scheme": p.scheme, "workload": p.workload, "workers": p.workers, "sources": p.sources,
                     "seed": p.seed, "throughput": 1000 / share[p.scheme](r) * (1 + 0.01 * (p.workers == 50)),
                     "latency_p50": 1.0, "elapsed_s": 10.0, "load_stddev_pct": 5.0, "dist_cost": 1.5,
                     "max_over_mean": 10 * share[p.scheme](r),
                     "correct": True})
    return pd.DataFrame(rows)


def test_dkg_comparison_reads_table3_and_the_claims():
    c = cb.compare_dkg(dkg_table())
    assert c["dkg_over_pkg_throughput_by_skew"] == {"0.0": 1.0, "0.2": 1.0, "0.3": 1.5, "0.68": 2.0, "0.8": 2.0,
                                                    "1.0": 2.0}
    assert c["high_skew"]["min_dkg_over_pkg"] == 2.0 and c["low_skew"]["max_abs_dkg_over_pkg_minus_1"] == 0.0
    assert c["low_skew"]["dkg_over_pkg_at_30pct"] == 1.5
    assert c["busiest_over_mean_by_skew"]["pkg"] == {"0.0": 1.0, "0.2": 1.0, "0.3": 1.5, "0.68": 3.4, "0.8": 4.0,
                                                    "1.0": 5.0}
    assert c["table3"]["dkg"]["throughput_over_kg"] == 4.0 and c["table3"]["dkg"]["paper_throughput_over_kg"] == 3.37
    assert c["table3"]["sg"]["paper_dist_cost"] == 2.4491
    assert c["workers_throughput_spread_at_68pct"]["kg"] == 0.01  # W = 50 runs 1 % faster
    assert c["sources_throughput_spread_at_68pct"]["kg"] == 0.0


def test_dkg_comparison_of_a_low_skew_study_without_table3s_point():
    table = dkg_table()
    low = table[table["workload"].str.contains(r"skew=0(?:\.[0-3])?,") & (table["workers"] == 10)
                & (table["sources"] == 5)]
    c = cb.compare_dkg(low)
    assert set(c["dkg_over_pkg_throughput_by_skew"]) == {"0.0", "0.2", "0.3"} and "table3" not in c
    assert "workers_throughput_spread_at_68pct" not in c


def test_naivebayes_comparison_counts_probes_per_query_word():
    rows = [{"scheme": s, "workers": w, "messages": 1000, "stored": 900, "probes": 100 * f, "throughput": 5.0,
             "correct": True} for s, f in (("kg", 1), ("pkg", 2), ("sg", 10)) for w in (10,)]
    c = cb.compare_naivebayes(pd.DataFrame(rows))
    assert c["points"]["pkg W=10"] == {"probes_per_query": 2.0, "theory": 2, "throughput": 5}
    assert c["probes_equal_theory"]
    assert not cb.compare_naivebayes(pd.DataFrame(rows).assign(probes=150))["probes_equal_theory"]


def test_report_draws_the_new_studies(tmp_path):
    import json

    from skewbench.analysis.report import write_report

    dkg = dkg_table()
    dkg.to_csv(tmp_path / "dkg.csv", index=False)
    (tmp_path / "dkg_vs_paper.json").write_text(json.dumps(cb.compare_dkg(dkg)))
    bayes = pd.DataFrame([{"scheme": s, "workers": w, "messages": 1000, "stored": 900, "probes": 100 * f(w),
                           "throughput": 5000.0 / f(w), "correct": True}
                          for s, f in (("kg", lambda w: 1), ("pkg", lambda w: 2), ("sg", lambda w: w))
                          for w in (10, 20)])
    bayes.to_csv(tmp_path / "naivebayes.csv", index=False)
    (tmp_path / "naivebayes_vs_paper.json").write_text(json.dumps(cb.compare_naivebayes(bayes)))
    pd.DataFrame([{"app": a, "scheme": s, "throughput": t, "latency_p50": 1.0, "max_over_mean": 1.2}
                  for a in ("selfjoin", "wordcount") for s, t in (("mixed", 900), ("kg", 500))]
                 ).to_csv(tmp_path / "fang.csv", index=False)
    report = write_report(tmp_path).read_text()
    assert "## DKG's Storm experiments on Spark" in report and "| dkg | 4 | 3.37 |" in report
    assert "at most 0.0, at 30 % DKG / PKG is 1.5 (paper: DKG +8 % at 30 %)" in report
    assert "| 0.3 | 1 | 3 | 1.5 | 1 |" in report  # busiest over mean: dkg kg pkg sg at 30 %
    assert "## Naive Bayes on Spark" in report and "at every point: True." in report
    assert "## Fang et al.'s table schemes on Spark" in report
    for png in ("dkg_skew.png", "naivebayes.png", "fang.png"):
        assert (tmp_path / png).stat().st_size > 1000 and f"({png})" in report


def test_report_shows_every_scheme_app_and_w_of_the_matrix(tmp_path):
    from skewbench.analysis.report import write_report

    rows = [{"study": "matrix", "app": a, "scheme": s, "workers": w, "sources": 5, "delay_ms": d,
             "throughput": 1000.0 * w, "correct": not (s == "kg" and w == 50 and d == 0), "sim_exact": True,
             "predicted_throughput": 1000.0 * w, "engine_study": False, "prediction_error": 0.01 * w,
             "overhead_median_s": 1.0, "predicted_overhead_s": 1.0, "busiest_median_s": 1.0, "predicted_busiest_s": 1.0}
            for a in ("selfjoin", "naivebayes") for s in ("kg", "pkg") for w in (10, 50) for d in (0, 0.4)]
    pd.DataFrame(rows).to_csv(tmp_path / "results.csv", index=False)
    report = write_report(tmp_path).read_text()
    assert "### Every scheme × app × W without delay — 6 of 8 correct" in report
    assert "| kg | ✓ 10,000/s | ✗ wrong answer 50,000/s | ✓ 10,000/s | ✗ wrong answer 50,000/s |" in report
    assert "| pkg | 30,000 | 30,000 |" in report  # delayed points: median throughput per scheme and app
    for png in ("prediction.png", "prediction_error.png", "matrix.png"):  # and the errors' ECDF, the centre
        assert (tmp_path / png).stat().st_size > 1000 and f"({png})" in report


def test_the_matrix_centre_is_drawn_from_the_centre_study_with_its_seeds(tmp_path):
    from skewbench.analysis.report import write_report
    from skewbench.analysis.sections.bench import matrix_centre

    point = {"app": "wordcount", "workers": 10, "sources": 5, "delay_ms": 0.4, "correct": True, "sim_exact": True,
             "engine_study": False, "predicted_throughput": 100.0, "prediction_error": 0.0, "overhead_median_s": 1.0,
             "predicted_overhead_s": 1.0, "busiest_median_s": 1.0, "predicted_busiest_s": 1.0}
    matrix = pd.DataFrame([{**point, "study": "matrix", "scheme": s, "seed": 0, "throughput": 90.0}
                           for s in ("kg", "pkg")] + [{**point, "study": "matrix", "scheme": "kg", "seed": 0,
                                                       "workers": 20, "throughput": 50.0}])
    centre = pd.DataFrame([{**point, "study": "centre", "scheme": s, "seed": seed, "throughput": 100.0 + seed,
                            "engine_share": share, "batch_rows": 125000, "max_over_mean": 1.0,
                            "before_workers_median_s": 0.3, "after_workers_median_s": 0.1}
                           for s, share in (("kg", 0.05), ("sg", 0.15)) for seed in range(3)])
    rows, title = matrix_centre(matrix, centre)
    assert len(rows) == 6 and title == "wordcount, W = 10, S = 5, 0.4 ms per message (centre study, 3 seeds)"
    rows, title = matrix_centre(matrix, centre.iloc[:0])
    assert list(rows["scheme"]) == ["kg", "pkg"] and title.endswith("0.4 ms per message")

    pd.concat([matrix, centre]).to_csv(tmp_path / "results.csv", index=False)
    centre.to_csv(tmp_path / "centre.csv", index=False)
    report = write_report(tmp_path).read_text()
    assert "## The engine's share of a batch at the matrix centre — every scheme" in report
    assert "Mean engine share ≤ 10 % for 1 of 2 schemes; above it: sg 0.150." in report
    assert "| kg | 3 | 0.05 [0.05, 0.05] | 101 [100, 102] |" in report and (tmp_path / "centre.png").is_file()


def test_report_refuses_result_files_of_a_newer_format(tmp_path, capsys):
    import json

    from skewbench.bench.provenance import FORMAT_VERSION, write_metadata
    from skewbench.cli import main

    pd.DataFrame([{"scheme": "kg", "throughput": 1.0}]).to_csv(tmp_path / "storm.csv", index=False)
    meta = write_metadata(tmp_path / "storm.csv", {"study": "storm"})
    assert json.loads(meta.read_text())["format_version"] == FORMAT_VERSION
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "format_version": FORMAT_VERSION + 1}))
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"result format {FORMAT_VERSION + 1} is newer than this skewbench reads" in err and err.count("\n") == 1
    assert not (tmp_path / "report.md").exists()


def test_kgs_saturation_delay_is_where_it_stops_carrying_what_sg_carries():
    throughput = {("kg", 0.1): 1000, ("kg", 0.4): 900, ("kg", 1.0): 400, ("pkg", 0.1): 1000, ("pkg", 1.0): 600,
                  ("sg", 0.1): 1000, ("sg", 0.4): 1000, ("sg", 1.0): 600}
    c = cb.compare_storm(storm_table(throughput, {"kg": 10, "pkg": 12, "sg": 30}, rate=1000))
    assert c["kg_saturation_delay_ms"] == 0.25  # KG / SG: 1.0 at 0.1 ms, 0.9 at 0.4 ms: 0.95 half-way
    assert c["paper_kg_saturation_delay_ms"] == 0.4 and c["median_throughput"]["kg"]["0.4"] == 900
    assert "0.4" not in c["kg_over_pkg_throughput"]  # pkg did not run there
    never = {**throughput, ("kg", 0.4): 1000, ("kg", 1.0): 600}
    assert cb.compare_storm(storm_table(never, {"kg": 10, "pkg": 12, "sg": 30}))["kg_saturation_delay_ms"] is None
