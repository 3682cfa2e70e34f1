"""The fidelity table: every published entry (``published.yaml``) beside our measurement of it.

``measures/<paper>.yaml`` holds one recipe per entry saying which result table, rows and column measure it
(the format: ``measures/README.md``); :func:`fidelity` evaluates them against a results folder and gives each
entry a verdict — ``agrees``, ``direction``, ``differs``, ``not distinguishable``, ``not measured`` or ``not
measurable`` — with the rule that decided it (``RULES``) and the reason for every verdict that is not ``agrees``.
A value read from a bench's Spark runs carries the number of seeds behind it (``runs``); an order a paper
claims between Spark points (less, more, least, most, a trend) is *not distinguishable* when the points' 95 %
intervals over the seeds overlap or a point has one run (:mod:`~skewbench.analysis.repeats`).
``python -m skewbench.analysis.fidelity DIR`` writes ``DIR/fidelity.csv`` and prints the totals.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from functools import cache
from pathlib import Path
from typing import NamedTuple

import jsonschema
import pandas as pd
import yaml

from skewbench.analysis.published import _Loader, entries
from skewbench.analysis.repeats import Interval, interval

MEASURES = Path(__file__).with_name("measures")
COLUMNS = ("paper", "entry", "where", "paper_value", "our_value", "ratio", "runs", "verdict", "rule", "reason",
           "result_file", "text", "spark_value", "spark_verdict", "spark_reason")
VERDICTS = ("agrees", "direction", "differs", "not distinguishable", "not measured", "not measurable")
MEASURED = ("agrees", "direction", "differs", "not distinguishable")
ORDERS = ("less", "least", "more", "most")  # claims that name a winner: Spark repeats must tell it apart
AGGREGATES = ("median", "mean", "min", "max", "sum", "count")
COMPOSITES = {"ratio": lambda a, b: a / b, "gain_pct": lambda a, b: (a / b - 1) * 100,
              "drop_pct": lambda a, b: (1 - b / a) * 100, "difference": lambda a, b: a - b}
WITHIN = 2.0  # a value agrees when ours is within 2x of the paper's (the issue's definition)
# What decided a measured verdict (fidelity.csv's `rule`), so that an `agrees` at ratio 0.31 or 142 says why:
# a `differs` names the rule it failed, a `direction` is always `neutral side`, the unmeasured have none.
RULES = {
    "ratio": f"ours within {WITHIN:g}× of the paper's value, either way",
    "bound": f"the paper gives a bound (at least, at most, a range) and ours is on its side, within {WITHIN:g}×",
    "absolute tolerance": "|ours − paper| within the recipe's abs_tol: the quantity's resolution, where a ratio "
                          "cannot judge (a few messages of millions, a value printed as 0.0001 %)",
    "claim": "a comparison the paper states (less, more, about equal, below a threshold), on every part it spans",
    "trend": "a series that increases, decreases or stays flat as the paper's does",
    "neutral side": f"beyond {WITHIN:g}× but on the paper's side of the recipe's \"no effect\" value (direction)",
    "repeats": "the Spark points an order is claimed between have overlapping 95 % intervals over their seeds, "
               "or one run each: no winner can be named (not distinguishable)",
}
AGREEING_RULES = tuple(rule for rule in RULES if rule not in ("neutral side", "repeats"))


class RecipeError(ValueError):
    """A recipe file is malformed or names an entry that does not exist: a developer's error."""


class Missing(LookupError):
    """What a recipe reads is not in this results folder: the entry is not measured here."""


# --- recipes ------------------------------------------------------------------------------------------

_MEASURE = {"oneOf": [
    {"type": "object", "required": ["table", "column"], "additionalProperties": False,
     "properties": {"table": {"type": "string"}, "column": {"type": "string"}, "rows": {"type": "object"},
                    "agg": {"enum": list(AGGREGATES)}, "runs": {"$ref": "#/$defs/runs"}}},
    {"type": "object", "required": ["json", "key"], "additionalProperties": False,
     "properties": {"json": {"type": "string"}, "key": {"type": "string"}}},
    {"type": "object", "required": ["number"], "additionalProperties": False,
     "properties": {"number": {"type": "number"}}},
    *({"type": "object", "required": [name], "additionalProperties": False,
       "properties": {name: {"type": "array", "minItems": 2, "maxItems": 2, "items": {"$ref": "#/$defs/measure"}}}}
      for name in COMPOSITES)]}
_SERIES = {"type": "object", "required": ["table", "column", "over"], "additionalProperties": False,
           "properties": {"table": {"type": "string"}, "column": {"type": "string"}, "over": {"type": "string"},
                          "rows": {"type": "object"}, "agg": {"enum": list(AGGREGATES)},
                          "runs": {"$ref": "#/$defs/runs"}}}
_THAN = {"oneOf": [{"$ref": "#/$defs/measure"}, {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/measure"}}]}
_PART = {"type": "object", "additionalProperties": False,  # one comparison of a claim
         "properties": {"subject": {"$ref": "#/$defs/measure"}, "than": _THAN, "below": {"type": "number"},
                        "series": _SERIES, "tolerance": {"type": "number", "minimum": 0}},
         "oneOf": [{"required": ["subject"]}, {"required": ["series"]}]}
# A paper that reports "averages of N runs" (Gedik Sec. 5.1): each setting's runs (seeds) are first averaged
# into one point, as the paper's figures plot them, and a measure's `agg` then summarises those points.
_RUNS = {"type": "object", "required": ["agg", "setting"], "additionalProperties": False,
         "properties": {"agg": {"enum": list(AGGREGATES)},
                        "setting": {"type": "array", "minItems": 1, "items": {"type": "string"}}}}
SCHEMA = {
    "$defs": {"measure": _MEASURE, "runs": _RUNS},
    "type": "object",
    "properties": {"_runs": _RUNS},
    "additionalProperties": {"oneOf": [
        {"type": "object", "required": ["not_measured"], "additionalProperties": False,
         "properties": {"not_measured": {"type": "string", "minLength": 10}}},
        {"type": "object", "minProperties": 1, "additionalProperties": False,
         "properties": {**_PART["properties"], "measure": {"$ref": "#/$defs/measure"},
                        "all": {"type": "array", "minItems": 2, "items": _PART}, "neutral": {"type": "number"},
                        "abs_tol": {"type": "number", "minimum": 0}, "reason": {"type": "string", "minLength": 10},
                        "spark": {"type": "object"}},
         "oneOf": [{"required": ["measure"]}, {"required": ["subject"]}, {"required": ["series"]},
                   {"required": ["all"]}]}]},
}


@cache
def recipes(directory: Path = MEASURES) -> dict[tuple[str, str], dict]:
    """(paper, entry id) → recipe, from every ``<paper>.yaml``; refuses unknown ids and bad shapes."""
    known = {(e["paper"], e["id"]): e for e in entries()}
    found = {}
    for path in sorted(Path(directory).glob("*.yaml")):
        paper = path.stem
        body = yaml.load(path.read_text(), Loader=_Loader) or {}
        try:
            jsonschema.validate(body, SCHEMA)
        except jsonschema.ValidationError as exc:
            where = "/".join(map(str, exc.absolute_path))
            raise RecipeError(f"{path.name}: {where}: {exc.message[:300]}") from None
        runs = body.pop("_runs", None)
        for entry_id, recipe in body.items():
            if runs:
                recipe = _with_runs(recipe, runs)
            if (paper, entry_id) not in known:
                raise RecipeError(f"{path.name}: {entry_id}: no such entry of {paper} in published.yaml")
            _check_fits(path.name, entry_id, recipe, known[paper, entry_id])
            if "spark" in recipe:  # the same entry measured again on the cluster's live studies: a recipe too
                try:
                    jsonschema.validate({entry_id: recipe["spark"]}, SCHEMA)
                except jsonschema.ValidationError as exc:
                    raise RecipeError(f"{path.name}: {entry_id}.spark: {exc.message[:300]}") from None
                _check_fits(path.name, f"{entry_id}.spark", recipe["spark"], known[paper, entry_id])
            found[paper, entry_id] = recipe
    return found


def _with_runs(spec, runs: dict):
    """``spec`` with ``runs`` on every table it reads (a paper-wide ``_runs``; a measure's own wins)."""
    if isinstance(spec, list):
        return [_with_runs(part, runs) for part in spec]
    if not isinstance(spec, dict):
        return spec
    if "table" in spec:
        return {"runs": runs, **spec}
    return {key: _with_runs(value, runs) for key, value in spec.items()}


def _check_fits(file: str, entry_id: str, recipe: dict, entry: dict) -> None:
    """A value entry takes `measure`; a claim takes what its direction compares (in each part of `all`)."""
    if "not_measured" in recipe:
        return
    if "all" in recipe and entry["kind"] == "claim":
        for part in recipe["all"]:
            _check_fits(file, entry_id, part, entry)
        return
    direction = entry["direction"]
    needs = ("measure" if entry["kind"] == "value" else "series" if direction in ("increasing", "decreasing", "flat")
             else "subject")
    if needs not in recipe:
        raise RecipeError(f"{file}: {entry_id}: a {entry['kind']} ({direction or 'value'}) needs `{needs}`")
    if needs == "subject" and ("below" in recipe) != (direction == "low"):
        raise RecipeError(f"{file}: {entry_id}: `below` goes with direction low, `than` with the others")
    if needs == "subject" and direction != "low" and "than" not in recipe:
        raise RecipeError(f"{file}: {entry_id}: direction {direction} needs `than`")


# --- reading results ----------------------------------------------------------------------------------

def results_folders(folder: Path, _seen: frozenset = frozenset()) -> list[Path]:
    """``folder`` and the results folders kept inside it, at any depth, in name order: ``study/`` (a ``make
    study``, with its ``tw-full/``), or another bench linked in (a symlink to a kept report); never a
    bench's ``runs/`` or the ``previous-*`` tables a rebuild set aside, nor a link back to a folder above."""
    seen = _seen | {folder.resolve()}
    inside = sorted(p for p in folder.iterdir() if p.is_dir() and p.name != "runs" and p.resolve() not in seen
                    and not p.name.startswith("previous-")) if folder.is_dir() else []
    return [folder, *(deeper for p in inside for deeper in results_folders(p, seen))]


class Results:
    """The result tables of one folder and of the results folders kept inside it (:func:`results_folders`)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._places = results_folders(self.folder)
        self._tables: dict[str, tuple[pd.DataFrame, str]] = {}
        self._spark: set[str] = set()  # the tables a bench measured on Spark (its meta names the master)

    def _find(self, name: str, suffix: str) -> Path:
        for where in self._places:
            if (where / f"{name}{suffix}").is_file():
                return where / f"{name}{suffix}"
        raise Missing(f"{name}{suffix} is not in this folder nor in a results folder inside it")

    def table(self, name: str) -> tuple[pd.DataFrame, str]:
        if name not in self._tables:
            path = self._find(name, ".csv")
            self._tables[name] = pd.read_csv(path, low_memory=False), str(path.relative_to(self.folder))
            meta = path.with_name(path.name + ".meta.json")
            if meta.is_file() and json.loads(meta.read_text()).get("config", {}).get("master"):
                self._spark.add(name)
        return self._tables[name]

    def rows(self, spec: dict, by_seed: bool = False) -> tuple[pd.DataFrame, str]:
        """The rows a measure reads; a paper's ``runs`` averages each setting's seeds unless ``by_seed``."""
        table, file = self.table(spec["table"])
        for column, wanted in {**spec.get("rows", {}), "": None}.items():
            if column and column not in table:
                raise Missing(f"{file} has no column {column!r}")
            if column:
                values = wanted if isinstance(wanted, list) else [wanted]
                cells = table[column].fillna("") if "" in values else table[column]  # "": an empty cell
                table = table[cells.isin(values)]
        if spec["column"] not in table:
            raise Missing(f"{file} has no column {spec['column']!r}")
        if table.empty:
            raise Missing(f"no row of {file} has {spec.get('rows', {})}")
        if "runs" in spec and "seed" in table and not by_seed:
            setting = [c for c in spec["runs"]["setting"] if c in table]
            if spec.get("over") in table and spec["over"] not in setting:  # a series keeps its x
                setting.append(spec["over"])
            table = table.groupby(setting, dropna=False)[spec["column"]].agg(spec["runs"]["agg"]).reset_index()
        return table, file

    def measure(self, spec: dict) -> tuple[float, set[str]]:
        """One number and the files it came from."""
        if "number" in spec:
            return float(spec["number"]), set()
        if "json" in spec:
            path = self._find(spec["json"], ".json")
            return _walk(json.loads(path.read_text()), spec["key"], path.name), {str(path.relative_to(self.folder))}
        for name, combine in COMPOSITES.items():
            if name in spec:
                (a, fa), (b, fb) = (self.measure(part) for part in spec[name])
                return (combine(a, b) if b != 0 else math.nan), fa | fb
        rows, file = self.rows(spec)
        return float(rows[spec["column"]].agg(spec.get("agg", "median"))), {file}

    def per_seed(self, spec: dict) -> pd.Series | float:
        """A measure once per seed (a Series indexed by seed) where it reads a bench's Spark runs; elsewhere
        its one value (a simulation is exact for its seeds, a number or a JSON key has none)."""
        for name, combine in COMPOSITES.items():
            if name in spec:
                a, b = (self.per_seed(part) for part in spec[name])
                if isinstance(a, pd.Series) and isinstance(b, pd.Series):
                    a, b = a.align(b, join="inner")
                return combine(a, b.where(b != 0)) if isinstance(b, pd.Series) else (
                    combine(a, b) if b != 0 else math.nan)
        rows = self._spark_rows(spec)
        if rows is None:
            return self.measure(spec)[0]
        return rows.groupby("seed")[spec["column"]].agg(spec.get("agg", "median"))

    def point_seeds(self, spec: dict) -> pd.DataFrame | None:
        """A Spark series once per seed: one row per point of ``over``, one column per seed (else None)."""
        rows = self._spark_rows(spec)
        if rows is None:
            return None
        return rows.groupby([spec["over"], "seed"])[spec["column"]].agg(spec.get("agg", "median")).unstack()

    def _spark_rows(self, spec: dict) -> pd.DataFrame | None:
        """The rows of a table measure, every seed kept, if a bench measured them on Spark."""
        if "table" not in spec:
            return None
        self.table(spec["table"])  # read once: notes whether Spark measured it
        if spec["table"] not in self._spark:
            return None
        rows, _ = self.rows(spec, by_seed=True)
        return rows if "seed" in rows else None

    def series(self, spec: dict) -> tuple[pd.Series, set[str]]:
        rows, file = self.rows(spec)
        if spec["over"] not in rows:
            raise Missing(f"{file} has no column {spec['over']!r}")
        points = rows.groupby(spec["over"])[spec["column"]].agg(spec.get("agg", "median")).sort_index()
        if len(points) < 2:
            raise Missing(f"{file} has fewer than two values of {spec['over']} for {spec.get('rows', {})}")
        return points, {file}


def _walk(data, key: str, name: str) -> float:
    """Follow a dotted key path; a key may itself hold dots (``dkg_over_pkg.0.68``): take the longest match."""
    parts = key.split(".")
    while parts:
        for n in range(len(parts), 0, -1):
            if isinstance(data, dict) and ".".join(parts[:n]) in data:
                data, parts = data[".".join(parts[:n])], parts[n:]
                break
        else:
            raise Missing(f"{name} has no {key!r}")
    if not isinstance(data, (int, float)):
        raise Missing(f"{name}: {key!r} is not a number")
    return float(data)


# --- verdicts -----------------------------------------------------------------------------------------

def value_verdict(entry: dict, ours: float, recipe: dict) -> tuple[str, str]:
    """The verdict and the rule that decided it: agrees by the 2x test the qualifier calls for (ratio or bound),
    else by the recipe's ``abs_tol`` (absolute tolerance); else direction when ours is on the paper's side of
    the recipe's neutral value (neutral side); else differs by the 2x test."""
    paper = entry["value"]
    rule, close = _within_twice(entry, ours)
    if close:
        return "agrees", rule
    if abs(ours - paper) <= recipe.get("abs_tol", 0):  # equal up to what the quantity can resolve
        return "agrees", "absolute tolerance"
    neutral = recipe.get("neutral")
    if neutral is not None and (ours - neutral) * (paper - neutral) > 0:
        return "direction", "neutral side"
    return "differs", rule


def _within_twice(entry: dict, ours: float) -> tuple[str, bool]:
    """The 2x test the qualifier calls for and whether ours passes it: ``bound`` on the bound's side (at_least:
    not below half; at_most: not above twice; range: within [value / 2, value_max · 2]), else ``ratio`` within
    2x either way.  A paper's 0 has no ratio: only an absolute tolerance can match it."""
    paper, qualifier = entry["value"], entry["qualifier"]
    ratio = ours / paper if paper else math.nan  # NaN fails every comparison below
    if qualifier == "at_least":
        return "bound", ratio >= 1 / WITHIN
    if qualifier == "at_most":
        return "bound", ratio <= WITHIN
    if qualifier == "range" and entry["value_max"] is not None:
        return "bound", paper != 0 and paper / WITHIN <= ours <= entry["value_max"] * WITHIN
    return "ratio", 1 / WITHIN <= ratio <= WITHIN


def claim_holds(direction: str, subject: float, than, tolerance: float) -> bool:
    """Whether ``subject`` stands to ``than`` (a number, or a list: to each of them) as the paper says."""
    if isinstance(than, list):
        return all(claim_holds(direction, subject, t, tolerance) for t in than)
    if direction in ("less", "least"):
        return subject < than
    if direction in ("more", "most"):
        return subject > than
    if direction == "not_less":
        return subject >= than * (1 - tolerance)
    if direction == "about_equal":
        return abs(subject / than - 1) <= tolerance if than else subject == 0
    if direction == "low":
        return subject <= than
    raise RecipeError(f"direction {direction!r} is not one a subject can be compared by")


def trend_holds(direction: str, points: pd.Series, tolerance: float) -> bool:
    """increasing / decreasing: no step against the trend beyond ``tolerance`` of the level, and the last
    point beyond the first; flat: the spread within ``tolerance`` of the median."""
    values = points.to_numpy(dtype=float)
    scale = max(abs(float(pd.Series(values).median())), 1e-12)
    if direction == "flat":
        return (values.max() - values.min()) / scale <= tolerance
    sign = 1 if direction == "increasing" else -1
    steps = sign * (values[1:] - values[:-1])
    return bool((steps >= -tolerance * abs(values[:-1])).all() and sign * (values[-1] - values[0]) > 0)


def evaluate(entry: dict, recipe: dict | None, results: Results) -> dict:
    """One row of the table: the entry by its recipe and, where the recipe has a ``spark`` one that this folder
    can read, by that too (``spark_value``, ``spark_verdict``, ``spark_reason``: the cluster's live studies)."""
    row = _evaluated(entry, recipe, results)
    spark = (recipe or {}).get("spark")
    again = _evaluated(entry, spark, results) if spark else None
    if again is None or again["verdict"] == "not measured":
        return {**row, "spark_value": None, "spark_verdict": "", "spark_reason": ""}
    return {**row, "spark_value": again["our_value"], "spark_verdict": again["verdict"],
            "spark_reason": again["reason"]}


def _evaluated(entry: dict, recipe: dict | None, results: Results) -> dict:
    row = {"paper": entry["paper"], "entry": entry["id"], "where": entry["where"],
           "paper_value": entry["value"] if entry["value"] is not None else _number(entry["than"]),
           "our_value": None, "ratio": None, "runs": None, "verdict": "not measured", "rule": "", "reason": "",
           "result_file": "", "text": entry["text"]}
    if not entry["measurable"]:
        return {**row, "verdict": "not measurable", "reason": entry["why"] or "a setup value, not a result"}
    if recipe is None:
        return {**row, "reason": f"no recipe in analysis/measures/{entry['paper']}.yaml yet"}
    if "not_measured" in recipe:
        return {**row, "reason": recipe["not_measured"]}
    try:
        got = _measured(entry, recipe, results)
    except Missing as exc:
        return {**row, "reason": f"not in these results: {exc}"}
    paper = row["paper_value"]
    ratio = got.ours / paper if isinstance(paper, (int, float)) and paper and not math.isnan(got.ours) else None
    reason = got.note or ("" if got.verdict == "agrees" else recipe.get(
        "reason", f"no reason recorded in analysis/measures/{entry['paper']}.yaml"))
    return {**row, "our_value": got.ours, "ratio": ratio, "runs": got.runs, "verdict": got.verdict,
            "rule": got.rule, "reason": reason, "result_file": ", ".join(sorted(got.files))}


class Measured(NamedTuple):
    """Our value, its verdict, the rule that decided it, the files it was read from, the fewest seeds behind
    a Spark value it read (None: no Spark value) and, for ``not distinguishable``, the intervals that say so."""

    ours: float
    verdict: str
    rule: str
    files: set[str]
    runs: int | None = None
    note: str = ""


def _measured(entry: dict, recipe: dict, results: Results) -> Measured:
    direction, tolerance = entry["direction"], recipe.get("tolerance")
    tolerance = 0.1 if tolerance is None else tolerance
    if "all" in recipe and "measure" not in recipe:  # a claim over several points or quantities: every part
        parts = [_measured(entry, part, results) for part in recipe["all"]]
        verdicts = {part.verdict for part in parts}
        verdict = next(v for v in ("differs", "not distinguishable", "agrees") if v in verdicts)
        return Measured(parts[0].ours, verdict, "repeats" if verdict == "not distinguishable" else "claim",
                        set().union(*(part.files for part in parts)), _fewest(part.runs for part in parts),
                        "; ".join(part.note for part in parts if part.note))
    if "measure" in recipe:
        ours, files = results.measure(recipe["measure"])
        if math.isnan(ours):
            raise Missing("the measure divides by zero")
        return Measured(ours, *value_verdict(entry, ours, recipe), files, _runs(results.per_seed(recipe["measure"])))
    if "series" in recipe:
        points, files = results.series(recipe["series"])
        first = float(points.iloc[0])
        ours = float(points.iloc[-1]) / first if first else math.inf
        seeds = results.point_seeds(recipe["series"])
        runs = None if seeds is None else int(seeds.notna().sum(axis=1).min())
        why = "" if seeds is None or direction == "flat" else _why_no_winner(seeds.iloc[0], [seeds.iloc[-1]])
        if why:
            return Measured(ours, "not distinguishable", "repeats", files, runs, why)
        return Measured(ours, *_judged(trend_holds(direction, points, tolerance), "trend"), files, runs)
    subject, files = results.measure(recipe["subject"])
    thans = [] if direction == "low" else recipe["than"] if isinstance(recipe["than"], list) else [recipe["than"]]
    measured = [results.measure(spec) for spec in thans]
    files = files.union(*(f for _, f in measured))
    if direction == "low":
        than = recipe["below"]
    else:
        than = [v for v, _ in measured] if isinstance(recipe["than"], list) else measured[0][0]
    repeats = [results.per_seed(spec) for spec in [recipe["subject"], *thans]]
    runs = _fewest(_runs(r) for r in repeats)
    why = _why_no_winner(repeats[0], repeats[1:]) if direction in ORDERS else ""
    if why:
        return Measured(subject, "not distinguishable", "repeats", files, runs, why)
    return Measured(subject, *_judged(claim_holds(direction, subject, than, tolerance), "claim"), files, runs)


def _runs(repeats) -> int | None:
    """Seeds behind a Spark value (None for a value that is not Spark's)."""
    return int(repeats.notna().sum()) if isinstance(repeats, pd.Series) else None


def _fewest(runs) -> int | None:
    known = [n for n in runs if n is not None]
    return min(known) if known else None


def _why_no_winner(subject, others: list) -> str:
    """Why no order can be named between a Spark point (values per seed) and others (one run, or
    overlapping 95 % intervals over the seeds); "" when every pair is apart or no Spark value is involved
    (a number or a simulation is a point without interval, ``n`` = 0)."""
    spans = [interval(p) if isinstance(p, pd.Series) else Interval(float(p), float(p), float(p), 0)
             for p in (subject, *others)]
    if all(span.n == 0 for span in spans):
        return ""
    first, rest = spans[0], spans[1:]
    if any(0 < span.n < 2 for span in spans):
        return f"one Spark run per point ({', '.join(map(_shown, spans))}): run the study with 3 seeds or more"
    if any(first.overlaps(other) for other in rest):
        return f"95 % intervals over the seeds overlap: {' vs '.join(map(_shown, spans))}"
    return ""


def _shown(span: Interval) -> str:
    return f"{span.mean:.4g}" if span.n == 0 else str(span)


def _judged(holds: bool, rule: str) -> tuple[str, str]:
    """A claim's or a trend's verdict: it agrees when it holds, else differs; ``rule`` decides either way."""
    return ("agrees" if holds else "differs"), rule


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# --- the table ----------------------------------------------------------------------------------------

def fidelity(folder: Path, measures: Path = MEASURES) -> pd.DataFrame:
    """One row per published entry (``COLUMNS``), in published.yaml's order."""
    results, known = Results(folder), recipes(Path(measures))
    return pd.DataFrame([evaluate(e, known.get((e["paper"], e["id"])), results) for e in entries()],
                        columns=list(COLUMNS)).astype({"runs": "Int64"})


def totals(table: pd.DataFrame) -> pd.DataFrame:
    """Per paper and overall: entries, measurable, measured and each verdict's count, ``agrees`` split by the
    rule that decided it (``agrees: ratio``, …) right after it."""
    counts = pd.crosstab(table["paper"], table["verdict"]).reindex(columns=list(VERDICTS), fill_value=0)
    agreeing = table[table["verdict"] == "agrees"]
    by_rule = pd.crosstab(agreeing["paper"], agreeing["rule"]).reindex(
        index=counts.index, columns=list(AGREEING_RULES), fill_value=0)
    for at, rule in enumerate(AGREEING_RULES, start=list(VERDICTS).index("agrees") + 1):
        counts.insert(at, f"agrees: {rule}", by_rule[rule])
    counts.loc["all"] = counts.sum()
    counts.insert(0, "entries", counts[list(VERDICTS)].sum(axis=1))
    counts.insert(1, "measurable", counts["entries"] - counts["not measurable"])
    counts.insert(2, "measured", counts[list(MEASURED)].sum(axis=1))
    return counts


def write_fidelity(folder: Path) -> Path:
    path = Path(folder) / "fidelity.csv"
    fidelity(folder).to_csv(path, index=False)
    return path


def summary(table: pd.DataFrame) -> str:
    """One line: measured share of the measurable, and agreeing share of the measured (and of the entries
    measured again on the cluster's live studies)."""
    all_ = totals(table).loc["all"]
    measured, measurable = int(all_["measured"]), int(all_["measurable"])
    good, blurred = int(all_["agrees"] + all_["direction"]), int(all_["not distinguishable"])
    again = table["spark_verdict"].astype("string").fillna("") if "spark_verdict" in table else pd.Series(dtype=str)
    spark = int(again.isin(MEASURED).sum())
    return (f"{measured} of {measurable} measurable entries measured ({measured / max(measurable, 1):.0%}); "
            f"{good} of them agree or agree in direction ({good / max(measured, 1):.0%})"
            + (f", {blurred} not distinguishable over the seeds" if blurred else "")
            + (f"; {spark} also measured on the cluster's live studies (`spark_verdict`), "
               f"{int(again.isin(('agrees', 'direction')).sum())} of them agreeing" if spark else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write DIR/fidelity.csv: every published entry beside ours.")
    parser.add_argument("folder", type=Path, help="a results folder (make bench / make study output)")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"error: {args.folder} is not a results folder", file=sys.stderr)
        return 2
    try:
        path = write_fidelity(args.folder)
    except RecipeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    table = pd.read_csv(path)
    print(totals(table).to_string())
    print(summary(table))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
