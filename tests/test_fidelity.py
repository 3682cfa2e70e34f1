"""The fidelity table: recipes evaluated against a results folder, verdicts by the issue's rules, each naming
the rule that decided it."""
import json
import re
import textwrap

import pandas as pd
import pytest

from skewbench.analysis import fidelity
from skewbench.analysis.fidelity import RecipeError, claim_holds, recipes, trend_holds, value_verdict
from skewbench.analysis.published import entries

ENTRY = {"value": 100.0, "qualifier": "exact", "value_max": None}


def recipe_dir(tmp_path, text, paper="pkg"):
    directory = tmp_path / "measures"
    directory.mkdir(exist_ok=True)
    (directory / f"{paper}.yaml").write_text(textwrap.dedent(text))
    return directory


def results(tmp_path):
    """A folder with one simulation table (in study/, as kept inside a bench report) and one JSON."""
    folder = tmp_path / "results"
    (folder / "study").mkdir(parents=True)
    rows = [{"scheme": s, "workers": w, "seed": seed, "final_imbalance": base * w + seed}
            for s, base in [("pkg", 10), ("kg", 1000)] for w in (5, 10, 50) for seed in (0, 1, 2)]
    pd.DataFrame(rows).to_csv(folder / "study" / "pkg_table2_wp.csv", index=False)
    (folder / "storm_vs_paper.json").write_text(json.dumps({"drop": {"0.4": 55.0}}))
    return folder


def table(tmp_path, text):
    return fidelity.fidelity(results(tmp_path), recipe_dir(tmp_path, text)).set_index("entry")


@pytest.mark.parametrize("ours, qualifier, neutral, verdict, rule", [
    (150, "exact", None, "agrees", "ratio"), (50, "exact", None, "agrees", "ratio"),
    (49, "exact", None, "differs", "ratio"), (201, "exact", 0, "direction", "neutral side"),
    (-5, "exact", 0, "differs", "ratio"), (1e6, "at_least", None, "agrees", "bound"),
    (40, "at_least", None, "differs", "bound"), (1, "at_most", None, "agrees", "bound"),
    (250, "at_most", 0, "direction", "neutral side")])
def test_a_value_agrees_within_twice_else_direction_by_its_neutral_naming_the_rule(ours, qualifier, neutral,
                                                                                   verdict, rule):
    recipe = {} if neutral is None else {"neutral": neutral}
    assert value_verdict({**ENTRY, "qualifier": qualifier}, ours, recipe) == (verdict, rule)


def test_a_range_and_a_zero_are_read_as_printed():
    assert value_verdict({"value": 30, "value_max": 39, "qualifier": "range"}, 70, {}) == ("agrees", "bound")
    assert value_verdict({"value": 30, "value_max": 39, "qualifier": "range"}, 80, {}) == ("differs", "bound")
    zero = {"value": 0, "value_max": None, "qualifier": "exact"}
    assert value_verdict(zero, 0.5, {"abs_tol": 1}) == ("agrees", "absolute tolerance")
    assert value_verdict(zero, 0.5, {}) == ("differs", "ratio")


def test_an_absolute_tolerance_decides_only_where_the_ratio_fails():
    few = {"value": 2.9, "value_max": None, "qualifier": "exact"}  # a count of a few messages: 0.9 is as good
    assert value_verdict(few, 0.9, {"abs_tol": 22}) == ("agrees", "absolute tolerance")  # ratio 0.31
    assert value_verdict(few, 0.9, {}) == ("differs", "ratio")
    assert value_verdict(few, 2.0, {"abs_tol": 22}) == ("agrees", "ratio")  # within 2x: the ratio decides
    assert value_verdict(few, 30, {"abs_tol": 22}) == ("differs", "ratio")


def test_claims_hold_as_their_direction_says():
    assert claim_holds("less", 1, 2, 0.1) and not claim_holds("less", 2, 2, 0.1)
    assert claim_holds("not_less", 0.95, 1, 0.1) and not claim_holds("not_less", 0.8, 1, 0.1)
    assert claim_holds("about_equal", 1.05, 1, 0.1) and not claim_holds("about_equal", 1.2, 1, 0.1)
    assert claim_holds("least", 1, [2, 3], 0) and not claim_holds("least", 2.5, [2, 3], 0)
    assert claim_holds("most", 4, [2, 3], 0) and claim_holds("low", 0.01, 0.05, 0)
    assert claim_holds("less", 1, [2, 3], 0) and not claim_holds("more", 2.5, [2, 3], 0)
    assert claim_holds("about_equal", 0, 0, 0.1) and not claim_holds("about_equal", 0.1, 0, 0.1)


def test_trends_allow_a_small_step_back_but_need_the_end_beyond_the_start():
    assert trend_holds("increasing", pd.Series([1.0, 2.0, 1.9, 3.0]), 0.1)
    assert not trend_holds("increasing", pd.Series([1.0, 2.0, 1.0, 3.0]), 0.1)
    assert not trend_holds("increasing", pd.Series([1.0, 1.0]), 0.1)
    assert trend_holds("decreasing", pd.Series([3.0, 2.0, 1.0]), 0)
    assert trend_holds("flat", pd.Series([1.0, 1.05]), 0.1) and not trend_holds("flat", pd.Series([1.0, 2.0]), 0.1)


def test_a_results_folder_is_measured_by_the_recipes(tmp_path):
    rows = table(tmp_path, """
        table2_average_imbalance.WP.PKG.W50:
          measure: {table: pkg_table2_wp, rows: {scheme: pkg, workers: 50}, column: final_imbalance}
          reason: "our stand-in WP stream has fewer keys than the real one"
        table2_average_imbalance.WP.PKG.W5:
          measure: {table: pkg_table2_wp, rows: {scheme: pkg, workers: [5]}, column: final_imbalance, agg: max}
          reason: "a difference explained in a test"
        claims.transition:
          series: {table: pkg_table2_wp, rows: {scheme: pkg}, column: final_imbalance, over: workers}
        claims.local_vs_global:
          subject: {ratio: [{table: pkg_table2_wp, rows: {scheme: kg}, column: final_imbalance},
                            {table: pkg_table2_wp, rows: {scheme: pkg}, column: final_imbalance}]}
          than: {number: 10}
          reason: "kg is a hundred times pkg here, by construction of the fixture"
        hashing_worst:
          subject: {table: pkg_table2_wp, rows: {scheme: kg, workers: 10}, column: final_imbalance}
          than: [{table: pkg_table2_wp, rows: {scheme: pkg, workers: 10}, column: final_imbalance}]
        claims.probing:
          subject: {json: storm_vs_paper, key: drop.0.4}
          than: {table: nothing_here, column: x}
        claims.source_skew:
          not_measured: "needs the LiveJournal graph, which is not downloadable here"
        """)
    w50 = rows.loc["table2_average_imbalance.WP.PKG.W50"]
    assert (w50.our_value, w50.ratio, w50.verdict, w50.rule) == (501, 501 / 590000, "differs", "ratio")
    assert w50.reason.startswith("our stand-in") and w50.result_file == "study/pkg_table2_wp.csv"
    assert rows.loc["table2_average_imbalance.WP.PKG.W5"].our_value == 52  # max over seeds: 50 + 2
    assert rows.loc["claims.transition"].verdict == "agrees" and rows.loc["claims.transition"].our_value == 501 / 51
    assert rows.loc["claims.local_vs_global"].verdict == "differs"
    assert rows.loc["hashing_worst"].verdict == "agrees" and rows.loc["hashing_worst"].reason == ""
    probing = rows.loc["claims.probing"]
    assert probing.verdict == "not measured" and "nothing_here.csv is not in this folder nor in a results folder" in probing.reason
    assert probing.rule == "" and rows.loc["datasets.WP.messages"].rule == ""
    assert rows.loc["claims.source_skew"].reason == "needs the LiveJournal graph, which is not downloadable here"
    assert rows.loc["datasets.WP.messages"].verdict == "not measurable"
    assert rows.loc["claims.jaccard"].reason.startswith("no recipe")
    assert len(rows) == len(entries())


def test_a_claim_over_several_points_holds_only_if_every_part_does(tmp_path):
    def kg_below_pkg_at(*workers):
        return "\n".join(f"    - subject: {{table: pkg_table2_wp, rows: {{scheme: kg, workers: {w}}}, "
                         f"column: final_imbalance}}\n      than: {{table: pkg_table2_wp, rows: {{scheme: pkg, "
                         f"workers: {w}}}, column: final_imbalance}}" for w in workers)

    rows = table(tmp_path, f"""
claims.bound:
  all:
{kg_below_pkg_at(5, 10)}
  reason: "the fixture's kg is a hundred times pkg"
hashing_worst:
  all:
    - subject: {{table: pkg_table2_wp, rows: {{scheme: kg}}, column: final_imbalance}}
      than: [{{table: pkg_table2_wp, rows: {{scheme: pkg}}, column: final_imbalance}}]
    - subject: {{table: pkg_table2_wp, rows: {{scheme: kg, workers: 50}}, column: final_imbalance}}
      than: [{{number: 100}}, {{number: 200}}]
""")
    assert rows.loc["claims.bound"].verdict == "differs" and rows.loc["claims.bound"].our_value == 5001
    assert rows.loc["hashing_worst"].verdict == "agrees"
    assert rows.loc["claims.bound"].rule == rows.loc["hashing_worst"].rule == "claim"  # every part: one claim


def test_each_rule_decides_its_rows_and_the_totals_split_agrees_by_rule(tmp_path):
    rows = table(tmp_path, """
        table2_average_imbalance.WP.PKG.W5:    # the paper's 0.8
          measure: {number: 1.2}
        table2_average_imbalance.WP.PKG.W10:   # the paper's 2.9, a few messages of millions: 0.9 is as good
          measure: {number: 0.9}
          abs_tol: 22
        uniform_keys_imbalance_fraction:       # at least 0.156
          measure: {number: 0.405}
        table2_average_imbalance.WP.PKG.W100:  # the paper's 8.0e5
          measure: {number: 1000}
          neutral: 0
          reason: "a direction explained in a test"
        table2_average_imbalance.WP.PKG.W50:   # the paper's 5.9e5
          measure: {number: -1}
          neutral: 0
          reason: "a difference explained in a test"
        claims.transition:
          series: {table: pkg_table2_wp, rows: {scheme: pkg}, column: final_imbalance, over: workers}
        local_robust_to_sources:               # flat, but the fixture's pkg grows with W
          series: {table: pkg_table2_wp, rows: {scheme: pkg}, column: final_imbalance, over: workers}
          reason: "a difference explained in a test"
        hashing_worst:
          subject: {table: pkg_table2_wp, rows: {scheme: kg}, column: final_imbalance}
          than: [{table: pkg_table2_wp, rows: {scheme: pkg}, column: final_imbalance}]
        claims.local_vs_global:
          subject: {number: 100}
          than: {number: 10}
          reason: "a difference explained in a test"
        claims.source_skew:
          not_measured: "needs the LiveJournal graph, which is not downloadable here"
        """)
    measured = rows[(rows.paper == "pkg") & rows.verdict.isin(["agrees", "direction", "differs"])]
    decided = dict(zip(measured.index, zip(measured.verdict, measured.rule)))
    assert decided == {
        "table2_average_imbalance.WP.PKG.W5": ("agrees", "ratio"),
        "table2_average_imbalance.WP.PKG.W10": ("agrees", "absolute tolerance"),
        "uniform_keys_imbalance_fraction": ("agrees", "bound"),
        "table2_average_imbalance.WP.PKG.W100": ("direction", "neutral side"),
        "table2_average_imbalance.WP.PKG.W50": ("differs", "ratio"),
        "claims.transition": ("agrees", "trend"),
        "local_robust_to_sources": ("differs", "trend"),
        "hashing_worst": ("agrees", "claim"),
        "claims.local_vs_global": ("differs", "claim")}
    assert rows.loc["claims.source_skew"].rule == ""
    counts = fidelity.totals(rows.reset_index())
    split = ["agrees: ratio", "agrees: bound", "agrees: absolute tolerance", "agrees: claim", "agrees: trend"]
    assert list(counts.columns) == ["entries", "measurable", "measured", "agrees", *split, "direction", "differs",
                                    "not distinguishable", "not measured", "not measurable"]
    pkg, every = counts.loc["pkg"], counts.loc["all"]
    assert pkg[split].tolist() == [1, 1, 1, 1, 1] and pkg["agrees"] == 5 == pkg[split].sum()
    assert (pkg["direction"], pkg["differs"], pkg["measured"]) == (1, 3, 9)
    assert (counts["agrees"] == counts[split].sum(axis=1)).all() and every["entries"] == len(entries())
    assert fidelity.summary(rows.reset_index()).startswith("9 of ")


def test_a_paper_that_averages_its_runs_is_compared_on_each_settings_mean(tmp_path):
    """``_runs`` (Gedik: "averages of 5 runs"): the seeds of a setting become their mean, then ``agg`` spans
    the settings; a measure's own ``runs`` wins."""
    folder = tmp_path / "results"
    folder.mkdir()
    pd.DataFrame([{"scheme": "pkg", "workers": w, "seed": seed, "final_imbalance": w + extra}
                  for w in (5, 10) for seed, extra in enumerate((0, 0, 9))]).to_csv(folder / "pkg_table2_wp.csv",
                                                                                     index=False)
    measures = recipe_dir(tmp_path, """
        _runs: {agg: mean, setting: [scheme, workers, z]}
        table2_average_imbalance.WP.PKG.W5:
          measure: {table: pkg_table2_wp, rows: {scheme: pkg}, column: final_imbalance}
          reason: "pooled over both settings in this test"
        table2_average_imbalance.WP.PKG.W10:
          measure: {table: pkg_table2_wp, rows: {scheme: pkg}, column: final_imbalance, agg: max,
                    runs: {agg: median, setting: [workers]}}
          reason: "pooled over both settings in this test"
        """)
    rows = fidelity.fidelity(folder, measures).set_index("entry")
    assert rows.loc["table2_average_imbalance.WP.PKG.W5"].our_value == 10.5  # the means 8 and 13 (all rows: 10)
    assert rows.loc["table2_average_imbalance.WP.PKG.W10"].our_value == 10  # the medians 5 and 10 (all rows: 19)


def spark_results(tmp_path, kg_by_seed, pkg_by_seed, spark=True):
    """A bench table of throughput per seed (its meta names the master: Spark measured it)."""
    folder = tmp_path / "results"
    folder.mkdir(parents=True)
    rows = [{"scheme": scheme, "workers": w, "seed": seed, "throughput": value * w}
            for scheme, values in [("kg", kg_by_seed), ("pkg", pkg_by_seed)] for seed, value in enumerate(values)
            for w in (10, 20)]
    pd.DataFrame(rows).to_csv(folder / "storm.csv", index=False)
    config = {"master": "spark://10.77.0.2:7077"} if spark else {"study": "storm"}
    (folder / "storm.csv.meta.json").write_text(json.dumps({"format_version": 1, "config": config}))
    return folder


ORDER = """
    claims.bound:                      # kg less than pkg
      subject: {table: storm, rows: {scheme: kg, workers: 10}, column: throughput}
      than: {table: storm, rows: {scheme: pkg, workers: 10}, column: throughput}
      reason: "a difference explained in a test"
    claims.transition:                 # increasing in W, every seed
      series: {table: storm, rows: {scheme: kg}, column: throughput, over: workers}
    claims.local_vs_global:            # less: a ratio of Spark points, per seed, against a number
      subject: {ratio: [{table: storm, rows: {scheme: kg}, column: throughput},
                        {table: storm, rows: {scheme: pkg}, column: throughput}]}
      than: {number: 1}
    table2_average_imbalance.WP.PKG.W5:
      measure: {table: storm, rows: {scheme: pkg, workers: 10}, column: throughput}
      reason: "a value explained in a test"
    """


def test_an_order_between_spark_points_needs_intervals_apart(tmp_path):
    measures = recipe_dir(tmp_path, ORDER)
    apart = fidelity.fidelity(spark_results(tmp_path / "a", [10, 11, 12], [20, 21, 22]), measures).set_index("entry")
    assert apart.loc["claims.bound"].verdict == "agrees" and apart.loc["claims.bound"].runs == 3
    assert apart.loc["claims.local_vs_global"].verdict == apart.loc["claims.transition"].verdict == "agrees"
    assert apart.loc["table2_average_imbalance.WP.PKG.W5"].runs == 3  # a value: its seeds counted, 2x decides

    blurred = fidelity.fidelity(spark_results(tmp_path / "b", [10, 14, 18], [12, 16, 20]), measures).set_index("entry")
    row = blurred.loc["claims.bound"]  # the means say kg < pkg, but their intervals overlap
    assert (row.verdict, row.rule, row.runs) == ("not distinguishable", "repeats", 3)
    assert row.reason.startswith("95 % intervals over the seeds overlap: 140 [") and " vs 160 [" in row.reason
    assert blurred.loc["claims.transition"].verdict == "agrees"  # W = 20 doubles every seed: apart
    assert fidelity.totals(blurred.reset_index()).loc["pkg", "not distinguishable"] == 1
    assert "1 not distinguishable over the seeds" in fidelity.summary(blurred.reset_index())


def test_one_spark_run_names_no_winner_but_one_simulation_does(tmp_path):
    measures = recipe_dir(tmp_path, ORDER)
    once = fidelity.fidelity(spark_results(tmp_path / "a", [10], [20]), measures).set_index("entry")
    assert once.loc["claims.bound"].verdict == "not distinguishable" and once.loc["claims.bound"].runs == 1
    assert "one Spark run per point" in once.loc["claims.bound"].reason
    assert once.loc["claims.transition"].verdict == "not distinguishable"
    simulated = fidelity.fidelity(spark_results(tmp_path / "b", [10], [20], spark=False), measures).set_index("entry")
    assert simulated.loc["claims.bound"].verdict == "agrees" and pd.isna(simulated.loc["claims.bound"].runs)


def test_a_verdict_without_its_reason_says_so(tmp_path):
    rows = table(tmp_path, """
        table2_average_imbalance.WP.PKG.W50:
          measure: {table: pkg_table2_wp, rows: {scheme: pkg, workers: 50}, column: final_imbalance}
        """)
    assert rows.loc["table2_average_imbalance.WP.PKG.W50"].reason == "no reason recorded in analysis/measures/pkg.yaml"


@pytest.mark.parametrize("text, message", [
    ("nope:\n  not_measured: 'a reason long enough'\n", "nope: no such entry of pkg"),
    ("claims.transition:\n  measure: {number: 1}\n", "a claim (increasing) needs `series`"),
    ("claims.bound:\n  subject: {number: 1}\n", "direction less needs `than`"),
    ("claims.bound:\n  subject: {table: t}\n  than: {number: 1}\n", "claims.bound"),
    ("claims.bound:\n  not_measured: short\n", "claims.bound"),
    ("claims.bound:\n  subject: {number: 1}\n  than: {number: 2}\n  because: x\n", "claims.bound"),
])
def test_a_bad_recipe_file_is_refused_naming_the_entry(tmp_path, text, message):
    with pytest.raises(RecipeError, match=re.escape(message)):
        recipes(recipe_dir(tmp_path, text))


def test_the_shipped_recipes_are_well_formed():
    papers = {"pkg", "pkg_ext", "gedik", "fang", "dkg", "katsipoulakis", "dalton", "pstream", "cg"}
    assert all(key[0] in papers for key in recipes())


def test_the_cli_writes_the_table_and_totals(tmp_path, capsys):
    folder = results(tmp_path)
    assert fidelity.main([str(folder)]) == 0
    out = capsys.readouterr().out
    assert "measurable entries measured" in out and (folder / "fidelity.csv").is_file()
    assert fidelity.main([str(tmp_path / "missing")]) == 2


def test_tables_are_found_at_any_depth_but_never_in_runs_previous_or_a_link_back(tmp_path):
    folder = tmp_path / "bench"
    for inner in ("runs/r1", "previous-x", "study/tw-full"):
        (folder / inner).mkdir(parents=True)
    (folder / "study" / "up").symlink_to(folder)  # a link back must not loop
    (folder / "linked").symlink_to(tmp_path / "kept")
    (tmp_path / "kept").mkdir()
    assert fidelity.results_folders(folder) == [folder, folder / "linked", folder / "study", folder / "study/tw-full"]


def test_an_entry_is_measured_again_on_the_cluster_where_its_recipe_says_how(tmp_path):
    """A recipe's `spark:` measures the same entry on the cluster's live studies: its value, verdict and reason
    beside the main ones, blank where the folder has not the table; the summary counts them apart."""
    folder = results(tmp_path)
    measures = recipe_dir(tmp_path, """
        claims.local_vs_global:
          spark:
            subject: {table: scaleout, rows: {scheme: kg}, column: moved_share}
            than: {number: 0.05}
            reason: "the fixture's kg moves a tenth of the keys"
          subject: {table: pkg_table2_wp, rows: {scheme: kg}, column: final_imbalance}
          than: {number: 10}
        hashing_worst:
          spark:
            subject: {table: no_such_study, column: x}
            than: {number: 1}
          subject: {table: pkg_table2_wp, rows: {scheme: kg, workers: 10}, column: final_imbalance}
          than: [{table: pkg_table2_wp, rows: {scheme: pkg, workers: 10}, column: final_imbalance}]
        """)
    pd.DataFrame({"scheme": ["kg", "consistent"], "moved_share": [0.1, 0.09]}).to_csv(folder / "scaleout.csv",
                                                                                    index=False)
    table = fidelity.fidelity(folder, measures)
    rows = table.set_index("entry")
    claim = rows.loc["claims.local_vs_global"]
    assert claim.our_value > 10 and claim.spark_value == 0.1 and claim.spark_verdict == "differs"
    assert claim.spark_reason == "the fixture's kg moves a tenth of the keys"
    assert rows.loc["hashing_worst"].spark_verdict == "" and pd.isna(rows.loc["hashing_worst"].spark_value)
    assert "; 1 also measured on the cluster's live studies (`spark_verdict`), 0 of them agreeing" in (
        fidelity.summary(table))
    (tmp_path / "bad").mkdir()
    with pytest.raises(RecipeError, match=r"pkg.yaml: hashing_worst.spark: a claim \(most\) needs `subject`"):
        recipes.__wrapped__(recipe_dir(tmp_path / "bad", """
            hashing_worst:
              spark: {measure: {number: 1}}
              subject: {table: pkg_table2_wp, rows: {scheme: kg, workers: 10}, column: final_imbalance}
              than: [{table: pkg_table2_wp, rows: {scheme: pkg, workers: 10}, column: final_imbalance}]
            """))


def test_an_empty_string_in_rows_matches_an_empty_cell(tmp_path):
    """``slow: ""`` picks the runs on equal workers, whose cell the CSV leaves empty."""
    pd.DataFrame({"scheme": ["kg", "kg", "cg"], "slow": ["", "1@0.5", ""], "throughput": [10.0, 4.0, 30.0]}).to_csv(
        tmp_path / "t.csv", index=False)
    results = fidelity.Results(tmp_path)
    assert results.measure({"table": "t", "rows": {"scheme": "kg", "slow": ""}, "column": "throughput"})[0] == 10.0
    assert results.measure({"table": "t", "rows": {"slow": "1@0.5"}, "column": "throughput"})[0] == 4.0
    assert results.measure({"table": "t", "rows": {"slow": ["", "1@0.5"], "scheme": "kg"}, "column": "throughput",
                            "agg": "sum"})[0] == 14.0
