"""``skewbench transcription TEXTS_DIR``: ``published.yaml`` checked against the papers' texts.

The texts (one per paper, named by its ``seed``) are not in the repository. Three kinds of check:

* every number a table gives (``source: table``) is printed in its paper, in a form a number of its
  precision is printed in: 9.32 as ``9.32`` (never ``9``), 22e6 as ``22M``, ``22 M``, ``22,000,000`` or
  ``2.2e7``, 5.9e5 as ``5.9e5``; a form counts only as a whole number of the text, not inside ``19.32``,
  ``9.321`` or ``5.9e5`` (whose mantissa is no 5.9);
* the rows of PKG's Table II and DKG's Tables 1 and 3, cell by cell, in the table's order;
* prose values in the papers' own words: the phrase is in the paper and prints the entry's value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from skewbench.analysis.published import entries, published

# (thousands, decimal) separators a paper prints; DKG prints both "9,511" and "8.000" (8000), "2.4491" and "1,5".
ENGLISH = (",", ".")
SEPARATORS = {"dkg": (ENGLISH, (".", ","))}
SUFFIXES = ((9, "G"), (6, "M"), (3, "k"))
PADDED = 4  # a float may be printed with trailing zeros up to this many decimals (DKG's 1.0000)

# (paper, entry, value, the paper's words)
PHRASES = [
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
]


class TranscriptionError(ValueError):
    """Bad input (no such folder, a paper's text missing): one line, exit code 2."""


@dataclass(frozen=True)
class Check:
    paper: str
    what: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.paper:8} {self.what}: {self.detail}"


def read_texts(folder: Path) -> dict[str, str]:
    """Each paper's text by paper name (papers whose seed is ``none`` have none)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TranscriptionError(f"{folder} is not a folder of the papers' texts")
    seeds = {paper: body["seed"] for paper, body in published().items() if body["seed"] != "none"}
    missing = sorted(name for name in seeds.values() if not (folder / name).is_file())
    if missing:
        raise TranscriptionError(f"{folder} lacks {', '.join(missing)} (the texts named by published.yaml's seed:)")
    try:
        return {paper: (folder / name).read_text() for paper, name in seeds.items()}
    except (OSError, UnicodeDecodeError) as error:
        raise TranscriptionError(f"{folder}: a text cannot be read as UTF-8 text ({error})") from None


def _places(number: Decimal) -> int:
    return max(0, -number.normalize().as_tuple().exponent)


def _fixed(number: Decimal, places: int, separators: tuple[str, str], grouped: bool) -> str:
    text = f"{number:{',' if grouped else ''}.{places}f}"
    return text.translate(str.maketrans(",.", "".join(separators)))


def printed(value: int | float, paper: str = "") -> set[str]:
    """The forms ``value`` is printed in, at its own precision (trailing zeros aside; an int has no decimals)."""
    exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    own = _places(exact)
    decimals = range(own, max(own, PADDED) + 1) if isinstance(value, float) else (0,)
    forms = set()
    for separators in SEPARATORS.get(paper, (ENGLISH,)):
        forms |= {_fixed(exact, places, separators, grouped) for places in decimals for grouped in (False, True)}
        for power, suffix in SUFFIXES:
            if exact >= 10 ** power:
                scaled = _fixed(exact.scaleb(-power), _places(exact.scaleb(-power)), separators, False)
                forms |= {f"{scaled}{suffix}", f"{scaled} {suffix}"}
    exponent = exact.adjusted()
    if exact and exponent:
        mantissa = exact.scaleb(-exponent)
        places = _places(mantissa)
        forms |= {f"{_fixed(mantissa, p, ENGLISH, False)}e{exponent}" for p in range(places, max(places, 2) + 1)}
        if mantissa == 1:
            forms |= {f"10^{exponent}", f"10^{{{exponent}}}"}
    return forms


def occurs(form: str, text: str) -> bool:
    """``form`` is a whole number of ``text``: no digit, separator or exponent joins it to another (a comma
    between a list's items, as in Fang's "[0,…,0.85,…,1.0]", does not)."""
    pattern = rf"(?<!\d)(?<!\d[.,])(?<!\de)(?<!\de[-+]){re.escape(form)}(?!\d|[.,]\d|e[-+]?\d)"
    return re.search(pattern, text) is not None


def _value_check(record: dict, text: str) -> Check:
    forms = printed(record["value"], record["paper"])
    seen = sorted(form for form in forms if occurs(form, text))
    detail = (f"{record['value']!r} printed as {', '.join(seen)}" if seen
              else f"{record['value']!r} is not printed as any of {', '.join(sorted(forms))}")
    return Check(record["paper"], f"{record['where']} {record['id']}", bool(seen), detail)


def _row(paper: str, text: str, first: str, values: list) -> Check:
    """The table row whose first tab-separated cell is ``first`` prints ``values``, cell by cell."""
    rows = [line.split("\t") for line in text.splitlines() if line.split("\t")[0].strip() == first]
    cells = [cell.strip() for cell in rows[0][1:] if cell.strip()] if rows else []
    ok = len(cells) == len(values) and all(cell in printed(v, paper) for cell, v in zip(cells, values))
    shown = " | ".join(cells) if rows else "no such row"
    return Check(paper, f"row {first!r}", ok, f"{shown}" + ("" if ok else f" (published.yaml: {values})"))


def _rows(texts: dict[str, str]) -> list[Check]:
    table, dkg = published()["pkg"]["table2_average_imbalance"], published()["dkg"]
    checks = [_row("pkg", texts["pkg"], scheme, table["WP"][scheme] + table["TW"][scheme]) for scheme in table["WP"]]
    checks += [_row("dkg", texts["dkg"], scheme, [row["latency_ms"], row["stddev"], row["dist_cost"],
                                                  row["throughput_rps"]])
               for scheme, row in dkg["table3_twitter_election"].items()]
    return checks + [_row("dkg", texts["dkg"], str(row["machines"]),
                          [row["ideal_pct"], row["threshold_pct"], row["max_machines"]]) for row in dkg["thresholds"]]


def _phrase(texts: dict[str, str], paper: str, entry: str, value, phrase: str) -> Check:
    record = next((r for r in entries() if r["paper"] == paper and r["id"] == entry), None)
    problems = []
    if record is None or record["value"] != value:
        problems.append(f"published.yaml has {record and record['value']!r}, not {value!r}")
    forms = printed(value, paper)
    if record is not None and record["unit"] == "fraction":  # 0.47 printed as "47%"
        forms |= {f"{form}%" for form in printed(float(Decimal(repr(value)) * 100), paper)}
    if not any(occurs(form, phrase) for form in forms):
        problems.append("the phrase does not print the value")
    if phrase not in texts[paper]:
        problems.append("the phrase is not in the paper")
    return Check(paper, f"phrase {entry}", not problems, "; ".join(problems) or f"{phrase!r}")


def checks(texts: dict[str, str]) -> list[Check]:
    """Every check, in order: the table numbers, the table rows, the phrases."""
    values = [_value_check(r, texts[r["paper"]]) for r in entries()
              if r["source"] == "table" and r["value"] is not None]
    return values + _rows(texts) + [_phrase(texts, *phrase) for phrase in PHRASES]


def main(folder: Path, out=print) -> int:
    """Print one line per check and a total; 0 when every check matches, 1 when one does not."""
    found = checks(read_texts(folder))
    for check in found:
        out(check.line())
    failed = sum(not check.ok for check in found)
    out(f"{len(found)} checks of published.yaml against {folder}: {len(found) - failed} match, {failed} not found")
    return 1 if failed else 0
