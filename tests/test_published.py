"""The transcribed published numbers load as numbers (PyYAML alone reads ``22.0e6`` as a string), and every
published entry flattens to a well-formed, citable record that matches the papers' text."""

import os
import re
from collections import Counter
from numbers import Real
from pathlib import Path

import pytest

from skewbench.analysis.published import (
    DIRECTIONS, FIELDS, KINDS, QUALIFIERS, SOURCES, counts, entries, published)

SEEDS = Path(os.environ.get("SKEWBENCH_SEEDS", "/work/shared/seeds"))
# README: a claim only the authors' code states (PStream's)
WHERE = re.compile(r"^(Table [\dIVX]+|Figs?\. \d+|Sec\. [\dIVX]|Theorem \d|Abstract|README)")
# Totals when the transcription was completed (issue 14): a lower count means entries were lost.
FLOOR = {"pkg": 118, "pkg_ext": 4, "gedik": 96, "fang": 62, "dkg": 94, "all": 374}


def test_table_one_and_table_two_are_numbers():
    pkg = published()["pkg"]
    assert pkg["datasets"]["WP"]["messages"] == 22.0e6
    for dataset in ("WP", "TW"):
        for values in pkg["table2_average_imbalance"][dataset].values():
            assert all(isinstance(v, Real) for v in values), values


def test_every_record_is_complete_and_uses_the_vocabulary():
    for record in entries():
        assert tuple(record) == FIELDS, record["id"]
        assert record["source"] in SOURCES and record["kind"] in KINDS, record
        assert record["text"] and isinstance(record["measurable"], bool), record
        assert record["qualifier"] in (*QUALIFIERS, None), record
        if record["kind"] == "claim":
            assert record["direction"] in DIRECTIONS and record["subject"], record
        if not record["measurable"]:
            assert record["why"], record
        elif record["kind"] == "value":
            assert isinstance(record["value"], Real), record
        if record["value_max"] is not None:
            assert record["qualifier"] == "range" and record["value_max"] > record["value"], record


def test_ids_are_unique_per_paper_and_named_after_their_origin():
    records = entries()
    repeated = [key for key, n in Counter((r["paper"], r["id"]) for r in records).items() if n > 1]
    assert not repeated
    listed = {(paper, e["id"]) for paper, body in published().items() for e in body.get("entries", [])}
    for record in records:
        new = (record["paper"], record["id"]) in listed
        assert re.fullmatch(r"[a-z0-9_]+" if new else r"[A-Za-z0-9_]+(\.[A-Za-z0-9_.\-]+)+", record["id"]), record


def test_every_where_names_a_table_figure_or_section():
    for record in entries():
        assert record["where"] and all(WHERE.match(part) for part in record["where"].split(", ")), record


def test_counts_add_up_and_nothing_was_deleted():
    totals = counts()
    for paper, floor in FLOOR.items():
        assert totals[paper]["entries"] >= floor, (paper, totals[paper])
    for total in totals.values():
        assert total["claims"] + total["values"] == total["entries"] >= total["measurable"]
    assert sum(totals[p]["entries"] for p in published()) == totals["all"]["entries"]


def _seed(paper: str) -> str:
    path = SEEDS / published()[paper]["seed"]
    if not path.exists():
        pytest.skip(f"papers not available at {SEEDS} (set SKEWBENCH_SEEDS)")
    return path.read_text()


def _row(text: str, first: str) -> list[float]:
    """The numbers of the seed's table row whose first tab-separated cell is ``first`` ("9,511" -> 9511)."""
    line = next(line for line in text.splitlines() if line.split("\t")[0].strip() == first)
    return [float(cell.replace(",", "")) for cell in line.split("\t")[1:] if cell.strip()]


def test_pkg_table_two_rows_match_the_paper():
    text, table = _seed("pkg"), published()["pkg"]["table2_average_imbalance"]
    for scheme in table["WP"]:
        assert _row(text, scheme) == table["WP"][scheme] + table["TW"][scheme], scheme


def test_dkg_tables_one_and_three_rows_match_the_paper():
    text, dkg = _seed("dkg"), published()["dkg"]
    for scheme, row in dkg["table3_twitter_election"].items():
        assert _row(text, scheme) == [row["latency_ms"], row["stddev"], row["dist_cost"], row["throughput_rps"]]
    for row in dkg["thresholds"]:
        assert _row(text, str(row["machines"])) == [row["ideal_pct"], row["threshold_pct"], row["max_machines"]]


def _printed(value: float) -> set[str]:
    """Ways a paper prints ``value``: 0.85, 24.47, 0.0001, 9,511, 5.9e5, 22M / 10 M, 10^6, and DKG's 8.000."""
    forms = {f"{value:g}", f"{value:.2f}", f"{value:.4f}", f"{value:,.0f}", f"{value:,.0f}".replace(",", ".")}
    mantissa, exponent = f"{value:.1e}".split("e")
    forms |= {f"{mantissa}e{int(exponent)}", f"10^{int(exponent)}"}
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            forms |= {f"{value / scale:g}{suffix}", f"{value / scale:g} {suffix}"}
    return forms


def test_every_table_number_is_printed_in_its_paper():
    for record in entries():
        if record["source"] == "table" and record["value"] is not None:
            assert any(form in _seed(record["paper"]) for form in _printed(record["value"])), record


@pytest.mark.parametrize("paper, entry, value, phrase", [
    ("pkg", "uniform_keys_imbalance_fraction", 0.156, "0.156m"),
    ("pkg", "memory_pkg_over_kg_pct", 30, "about 30% more memory"),
    ("pkg", "claims.jaccard", 0.47, "only 47% Jaccard"),
    ("pkg_ext", "headline.throughput_gain_pct", 175, "up to 175% in throughput"),
    ("gedik", "fig4_consistent_over_best_pct", 50, "up to 50% higher"),
    ("gedik", "fig6_uniform_over_readj_pct", 36, "up to 36% higher"),
    ("gedik", "fig8_uniform_hash_migration", 6.5, "($6.5 \\times - 7.5 \\times$ of the ideal)"),
    ("gedik", "results.readj_relative_migration_LLL", 1.34, "around 1.34 times the ideal"),
    ("fang", "fig14_mixed_over_pkg_latency_pct", 40, "response latency by 40%"),
    ("fang", "results.compact_representation_plan_s.discretized", 0.6, "(i.e., 0.6 second)"),
    ("dkg", "throughput_gain_over_pkg_above_80_pct", 93, "throughput up to 93%"),
    ("dkg", "latency_gain_over_pkg_at_30_pct", 7, "latency up to 7%"),
])
def test_prose_values_are_the_papers_words(paper, entry, value, phrase):
    record = next(r for r in entries() if r["paper"] == paper and r["id"] == entry)
    assert record["value"] == value
    assert phrase in _seed(paper)
