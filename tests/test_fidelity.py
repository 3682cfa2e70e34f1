"""The fidelity table: recipes evaluated against a results folder, verdicts by tiers of |log(ours / paper)|
(agreement within 25 %), order claims by the 95 % interval of a difference, each naming the rule that decided
it, with the first recipe's result beside a changed one's."""
import json
import re
import textwrap

import pandas as pd
import pytest

from skewbench.analysis import fidelity
from skewbench.analysis.fidelity import (RecipeError, claim_holds, factor, recipes, tier, trend_holds,
                                         value_verdict, within_order)
from skewbench.analysis.published import entries

ENTRY = {"value": 100.0, "qualifier": "exact", "value_max": None}


def recipe_dir(tmp_path, text, paper="pkg", stamp=True):
    """A measures folder with ``text`` as ``<paper>.yaml``; ``stamp``: every recipe (and ``spark:`` twin) that
    measures gets the ``fixed:`` commit a recipe must name, so that each test shows only what it is about."""
    directory = tmp_path / "measures"
    directory.mkdir(parents=True, exist_ok=True)
    text = textwrap.dedent(text)
    if stamp:
        text = re.sub(r"^( *)(\S+:)( *#.*)?\n(?!\1 +not_measured)(?=\1 +(?:measure|subject|series|all|spark|first))",
                      lambda m: f"{m.group(0)}{m.group(1)}  fixed: abc1234\n", text, flags=re.M)
    (directory / f"{paper}.yaml").write_text(text)
    return directory


def results(tmp_path):
    """A folder with one simulation table (in study/, as kept inside a bench report) and one JSON."""
    folder = tmp_path / "results"
    (folder / "study").mkdir(parents=True)
    rows = [{"scheme": s, "workers": w, "seed": seed, "final_imbalance": base * w + seed}
            for s, base in [("pkg", 10), ("kg", 1000)] for w in (5, 10, 50) for seed in range(5)]
    pd.DataFrame(rows).to_csv(folder / "study" / "pkg_table2_wp.csv", index=False)
    (folder / "storm_vs_paper.json").write_text(json.dumps({"drop": {"0.4": 55.0}}))
    return folder


def table(tmp_path, text):
    return fidelity.fidelity(results(tmp_path), recipe_dir(tmp_path, text)).set_index("entry")


@pytest.mark.parametrize("ours, qualifier, neutral, verdict, rule", [
    (125, "exact", None, "agrees", "ratio"), (80, "exact", None, "agrees", "ratio"),
    (79, "exact", None, "differs", "ratio"), (126, "exact", None, "differs", "ratio"),
    (150, "exact", 0, "direction", "neutral side"), (-5, "exact", 0, "differs", "ratio"),
    (1e6, "at_least", None, "agrees", "bound"), (80, "at_least", None, "agrees", "bound"),
    (79, "at_least", None, "differs", "bound"), (1, "at_most", None, "agrees", "bound"),
    (130, "at_most", 0, "direction", "neutral side")])
def test_a_value_agrees_within_25_percent_else_direction_by_its_neutral_naming_the_rule(ours, qualifier, neutral,
                                                                                        verdict, rule):
    recipe = {} if neutral is None else {"neutral": neutral}
    assert value_verdict({**ENTRY, "qualifier": qualifier}, ours, recipe) == (verdict, rule)


@pytest.mark.parametrize("ours, qualifier, expected", [
    (100, "exact", "within 10 %"), (109, "exact", "within 10 %"), (91, "exact", "within 10 %"),
    (90, "exact", "within 25 %"), (125, "exact", "within 25 %"), (130, "exact", "within 50 %"),
    (66.7, "exact", "within 50 %"), (199, "exact", "within 2×"), (50, "exact", "within 2×"),
    (201, "exact", "beyond 2×"), (-5, "exact", "beyond 2×"), (float("nan"), "exact", "beyond 2×"),
    (1e6, "at_least", "within 10 %"), (60, "at_least", "within 2×"), (5, "at_most", "within 10 %")])
def test_every_number_gets_the_tier_of_its_log_distance(ours, qualifier, expected):
    assert tier(factor({**ENTRY, "qualifier": qualifier}, ours)) == expected


def test_a_range_and_a_zero_are_read_as_printed():
    ranged = {"value": 30, "value_max": 39, "qualifier": "range"}
    assert value_verdict(ranged, 48, {}) == ("agrees", "bound") and factor(ranged, 35) == 1.0
    assert value_verdict(ranged, 24.5, {}) == ("agrees", "bound")  # 25 % below the range's low end
    assert value_verdict(ranged, 50, {}) == ("differs", "bound") and factor(ranged, 78) == 2.0
    zero = {"value": 0, "value_max": None, "qualifier": "exact"}
    assert value_verdict(zero, 0.5, {"abs_tol": 1}) == ("agrees", "absolute tolerance")
    assert value_verdict(zero, 0.5, {}) == ("differs", "ratio") and tier(factor(zero, 0.5)) == "beyond 2×"


def test_an_absolute_tolerance_decides_only_where_the_ratio_fails():
    few = {"value": 2.9, "value_max": None, "qualifier": "exact"}  # a count of a few messages: 0.9 is as good
    assert value_verdict(few, 0.9, {"abs_tol": 22}) == ("agrees", "absolute tolerance")  # ratio 0.31
    assert value_verdict(few, 0.9, {}) == ("differs", "ratio")
    assert value_verdict(few, 2.5, {"abs_tol": 22}) == ("agrees", "ratio")  # within 25 %: the ratio decides
    assert value_verdict(few, 30, {"abs_tol": 22}) == ("differs", "ratio")


def test_claims_hold_as_their_direction_says():
    assert claim_holds("less", 1, 2, 0.1) and not claim_holds("less", 2, 2, 0.1)
    assert claim_holds("not_less", 0.95, 1, 0.1) and not claim_holds("not_less", 0.8, 1, 0.1)
    assert claim_holds("about_equal", 1.05, 1, 0.1) and not claim_holds("about_equal", 1.2, 1, 0.1)
    assert claim_holds("least", 1, [2, 3], 0) and not claim_holds("least", 2.5, [2, 3], 0)
    assert claim_holds("most", 4, [2, 3], 0) and claim_holds("low", 0.01, 0.05, 0)
    assert claim_holds("less", 1, [2, 3], 0) and not claim_holds("more", 2.5, [2, 3], 0)
    assert claim_holds("about_equal", 0, 0, 0.1) and not claim_holds("about_equal", 0.1, 0, 0.1)


def test_an_order_of_magnitude_is_within_ten_times_either_way():
    assert within_order(9.9, 1) and within_order(0.11, 1) and within_order(5, [1, 20])
    assert not within_order(10.1, 1) and not within_order(-2, 1) and not within_order(0.5, 0)


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
    assert (w50.our_value, w50.ratio, w50.verdict, w50.rule) == (502, 502 / 590000, "differs", "ratio")
    assert (w50.tier, w50.measured_on, w50.work, w50.runs) == ("beyond 2×", "simulator", "", 5)
    assert w50.caveat == w50.reason and w50.fixed == "abc1234"
    assert w50.reason.startswith("our stand-in") and w50.result_file == "study/pkg_table2_wp.csv"
    assert rows.loc["table2_average_imbalance.WP.PKG.W5"].our_value == 54  # max over seeds: 50 + 4
    assert rows.loc["claims.transition"].verdict == "agrees" and rows.loc["claims.transition"].our_value == 502 / 52
    assert rows.loc["claims.local_vs_global"].verdict == "differs"
    assert rows.loc["hashing_worst"].verdict == "agrees" and rows.loc["hashing_worst"].reason == ""  # 5 seeds apart
    assert rows.loc["claims.local_vs_global"].caveat.startswith("kg is a hundred")  # a note whatever the verdict
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
    assert rows.loc["claims.bound"].verdict == "differs" and rows.loc["claims.bound"].our_value == 5002
    assert rows.loc["hashing_worst"].verdict == "agrees"
    assert rows.loc["claims.bound"].rule == rows.loc["hashing_worst"].rule == "claim"  # every part: one claim


def test_each_rule_decides_its_rows_and_the_totals_split_agrees_by_rule(tmp_path):
    rows = table(tmp_path, """
        table2_average_imbalance.WP.PKG.W5:    # the paper's 0.8
          measure: {number: 0.9}
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
    assert list(counts.columns) == ["entries", "measurable", "measured", "agrees", *split, "order of magnitude",
                                    "direction", "differs", "not distinguishable", "not measured", "not measurable"]
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


def spark_results(tmp_path, kg_by_seed, pkg_by_seed, spark=True, seeded=True):
    """A bench table of throughput per seed (its meta names the master: Spark measured it), or with ``spark``
    False a simulation's (``seeded`` False: without a seed column, as an exact quantity's)."""
    folder = tmp_path / "results"
    folder.mkdir(parents=True)
    rows = [{"scheme": scheme, "workers": w, "seed": seed, "throughput": value * w}
            for scheme, values in [("kg", kg_by_seed), ("pkg", pkg_by_seed)] for seed, value in enumerate(values)
            for w in (10, 20)]
    table = pd.DataFrame(rows)
    (table if seeded else table.drop(columns="seed")).to_csv(folder / "storm.csv", index=False)
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


def test_an_order_between_spark_points_needs_the_interval_of_their_difference_apart_from_zero(tmp_path):
    measures = recipe_dir(tmp_path, ORDER)
    apart = fidelity.fidelity(spark_results(tmp_path / "a", [10, 11, 12], [20, 21, 22]), measures).set_index("entry")
    assert apart.loc["claims.bound"].verdict == "agrees" and apart.loc["claims.bound"].runs == 3
    assert apart.loc["claims.local_vs_global"].verdict == apart.loc["claims.transition"].verdict == "agrees"
    value = apart.loc["table2_average_imbalance.WP.PKG.W5"]
    assert value.runs == 3 and value.measured_on == "spark"  # a value: its seeds counted, the tiers decide

    # the means say kg < pkg, and each seed's pkg is 20 higher but one's: paired over the seeds, no winner
    blurred = fidelity.fidelity(spark_results(tmp_path / "b", [10, 14, 18], [16, 12, 20]), measures).set_index("entry")
    row = blurred.loc["claims.bound"]
    assert (row.verdict, row.rule, row.runs) == ("not distinguishable", "repeats", 3)
    assert row.reason.startswith("the 95 % interval of the difference includes 0: -20 [") and "paired t" in row.reason
    assert blurred.loc["claims.transition"].verdict == "agrees"  # W = 20 doubles every seed: apart
    assert fidelity.totals(blurred.reset_index()).loc["pkg", "not distinguishable"] == 2
    assert "2 not distinguishable" in fidelity.summary(blurred.reset_index())

    # the same means, each seed 20 apart: paired, the difference is certain even over 3 seeds
    steady = fidelity.fidelity(spark_results(tmp_path / "c", [10, 14, 18], [12, 16, 20]), measures).set_index("entry")
    assert steady.loc["claims.bound"].verdict == "agrees"


def test_one_spark_run_names_no_winner_nor_do_few_simulated_seeds_but_an_exact_simulation_does(tmp_path):
    measures = recipe_dir(tmp_path, ORDER)
    once = fidelity.fidelity(spark_results(tmp_path / "a", [10], [20]), measures).set_index("entry")
    assert once.loc["claims.bound"].verdict == "not distinguishable" and once.loc["claims.bound"].runs == 1
    assert once.loc["claims.bound"].reason.startswith("1 Spark run behind a point, 2 needed")
    assert once.loc["claims.transition"].verdict == "not distinguishable"
    few = fidelity.fidelity(spark_results(tmp_path / "b", [10, 11, 12], [20, 21, 22], spark=False),
                            measures).set_index("entry")
    assert few.loc["claims.bound"].reason.startswith("3 simulated seeds behind a point, 5 needed")
    assert few.loc["claims.bound"].measured_on == "simulator"
    five = fidelity.fidelity(spark_results(tmp_path / "c", [10, 11, 12, 13, 14], [20, 21, 22, 23, 24], spark=False),
                             measures).set_index("entry")
    assert five.loc["claims.bound"].verdict == "agrees" and five.loc["claims.bound"].runs == 5
    exact = fidelity.fidelity(spark_results(tmp_path / "d", [10], [20], spark=False, seeded=False),
                              measures).set_index("entry")
    assert exact.loc["claims.bound"].verdict == "agrees" and pd.isna(exact.loc["claims.bound"].runs)


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
              spark:
                measure: {number: 1}
              subject: {table: pkg_table2_wp, rows: {scheme: kg, workers: 10}, column: final_imbalance}
              than: [{table: pkg_table2_wp, rows: {scheme: pkg, workers: 10}, column: final_imbalance}]
            """))


def test_an_empty_string_in_rows_matches_an_empty_cell(tmp_path):
    """``slow: ""`` picks the runs on equal workers, whose cell the CSV leaves empty."""
    pd.DataFrame({"scheme": ["kg", "kg", "cg"], "slow": ["", "1@0.5", ""], "throughput": [10.0, 4.0, 30.0]}).to_csv(
        tmp_path / "t.csv", index=False)
    results = fidelity.Results(tmp_path)
    assert results.measure({"table": "t", "rows": {"scheme": "kg", "slow": ""}, "column": "throughput"}) == 10.0
    assert results.measure({"table": "t", "rows": {"slow": "1@0.5"}, "column": "throughput"}) == 4.0
    assert results.measure({"table": "t", "rows": {"slow": ["", "1@0.5"], "scheme": "kg"}, "column": "throughput",
                            "agg": "sum"}) == 14.0


def test_a_changed_recipe_is_measured_by_its_first_rule_too(tmp_path):
    """``first:`` puts back the fields as first fixed (null: absent then); both verdicts on the same results."""
    rows = table(tmp_path, """
        claims.transition:
          series: {table: pkg_table2_wp, rows: {scheme: kg}, column: final_imbalance, over: workers}
          tolerance: 0.5
          first: {was: {tolerance: null, series: {table: pkg_table2_wp, rows: {scheme: pkg}, column: final_imbalance,
                                                 over: workers}}, changed: abc1234, why: "a change explained in a test"}
        table2_average_imbalance.WP.PKG.W10:   # the paper's 2.9; ours 102
          measure: {table: pkg_table2_wp, rows: {scheme: pkg, workers: 10}, column: final_imbalance}
          abs_tol: 200
          first: {was: {abs_tol: null}, changed: abc1234, why: "a tolerance added in a test, after the first result"}
        """)
    transition = rows.loc["claims.transition"]
    assert transition.verdict == "agrees" and transition.first_verdict == "agrees"
    assert transition.first_value == 502 / 52 and transition.our_value == 50002 / 5002
    cell = rows.loc["table2_average_imbalance.WP.PKG.W10"]
    assert (cell.verdict, cell.first_verdict, cell.first_value) == ("agrees", "differs", 102)
    assert cell.change == "abc1234: a tolerance added in a test, after the first result"
    assert list(fidelity.changes(rows.reset_index()).entry) == ["table2_average_imbalance.WP.PKG.W10",
                                                                  "claims.transition"]
    assert rows.loc["table2_average_imbalance.WP.PKG.W5"].first_verdict == ""


def test_an_order_of_magnitude_is_a_verdict_of_its_own_and_a_wider_tolerance_is_refused(tmp_path):
    rows = table(tmp_path, """
        claims.source_skew:    # about_equal
          subject: {table: pkg_table2_wp, rows: {scheme: kg, workers: 5}, column: final_imbalance}
          than: {table: pkg_table2_wp, rows: {scheme: pkg, workers: 50}, column: final_imbalance}
          within_order: true
        """)
    assert (rows.loc["claims.source_skew"].verdict, rows.loc["claims.source_skew"].rule) == ("order of magnitude",) * 2
    counts = fidelity.totals(rows.reset_index()).loc["pkg"]
    assert counts["order of magnitude"] == 1 and counts["agrees"] == 0
    for n, (text, message) in enumerate((("claims.source_skew:\n  subject: {number: 1}\n  than: {number: 2}\n  tolerance: 9\n",
                           "9 is greater than the maximum of 1"),
                          ("claims.source_skew:\n  subject: {number: 1}\n  than: {number: 2}\n", "a recipe names the commit its rule was fixed after"),
                          ("claims.bound:\n  subject: {number: 1}\n  than: {number: 2}\n  within_order: true\n",
                           "`within_order` is for about_equal claims"))):
        with pytest.raises(RecipeError, match=re.escape(message)):
            recipes.__wrapped__(recipe_dir(tmp_path / str(n), text, stamp="fixed" not in message))


def test_a_spark_row_names_how_its_delay_was_realised(tmp_path):
    """Older benches wrote no `work` column: it follows from the delay, delay mode, levers and W on the
    machine's cores; a latency read from emulated runs whose sleep was deferred says it was computed."""
    folder = tmp_path / "results"
    folder.mkdir()
    pd.DataFrame([{"scheme": "pkg", "workers": w, "seed": 0, "delay_ms": d, "delay_mode": m, "levers": lv,
                   "throughput": 100.0, "latency_p50": 1.0}
                  for w, d, m, lv in ((10, 0.4, "sleep", "fs-checkpoints+no-crc+pack+defer-sleep"),
                                      (2, 0.4, "spin", "fs-checkpoints+no-crc+pack+defer-sleep"),
                                      (20, 0.4, "sleep", "none"), (50, 0.0, "sleep", "none"))]).to_csv(
        folder / "storm.csv", index=False)
    (folder / "storm.csv.meta.json").write_text(json.dumps({"config": {"master": "spark://x:7077"},
                                                            "environment": {"machine": {"cpus": 2}}}))
    results = fidelity.Results(folder)
    assert list(results.table("storm")[0]["work"]) == ["emulated", "spin", "sleep", "none"]
    with results.reading() as read:
        results.measure({"table": "storm", "rows": {"workers": 10}, "column": "latency_p50"})
        results.measure({"table": "storm", "rows": {"workers": [2, 20]}, "column": "throughput"})
    assert read.works == {"emulated; latency computed", "spin", "sleep"} and read.origins == {"spark"}
