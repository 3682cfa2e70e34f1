"""The fidelity table: every published entry (``published.yaml``) beside our measurement of it.

``measures/<paper>.yaml`` holds one recipe per entry saying which result table, rows and column measure it
(the format: ``measures/README.md``); :func:`fidelity` evaluates them against a results folder and gives each
entry a verdict — ``agrees``, ``order of magnitude``, ``direction``, ``differs``, ``not distinguishable``,
``not measured`` or ``not measurable`` — with the rule that decided it (``RULES``), the reason for every
verdict that is not ``agrees``, and the recipe's own note (``caveat``) whatever the verdict.

A number is judged by how far ours lies from the paper's, ``|log(ours / paper)|``, in tiers (``TIERS``): it
agrees within 25 % (``PRIMARY``); the other tiers are counted, never called agreement.  A claim that names a
winner (less, more, least, most, a rising or falling trend) between points measured with seeds — Spark runs,
or simulations over hash seeds — is *not distinguishable* unless the 95 % interval of their difference
excludes zero (:func:`~skewbench.analysis.repeats.difference`) over enough seeds (``SEEDS_NEEDED``).

Each row says where its value was measured (``measured_on``: spark or simulator), how a Spark run's injected
delay was realised (``work``: :func:`~skewbench.bench.spark.engine.work_mode`), the commit its recipe was
fixed after (``fixed``) and, for a recipe changed after it was first measured, the first recipe's value and
verdict on the same results (``first_value``, ``first_verdict``, ``change``).
``python -m skewbench.analysis.fidelity DIR`` writes ``DIR/fidelity.csv`` and prints the totals.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import NamedTuple

import jsonschema
import pandas as pd
import yaml

from skewbench.analysis.published import _Loader, entries
from skewbench.analysis.repeats import difference
from skewbench.bench.spark.engine import latency_source, work_mode

MEASURES = Path(__file__).with_name("measures")
COLUMNS = ("paper", "entry", "where", "paper_value", "our_value", "ratio", "tier", "runs", "verdict", "rule",
           "measured_on", "work", "reason", "caveat", "fixed", "first_value", "first_verdict", "change",
           "result_file", "text", "spark_value", "spark_verdict", "spark_reason")
VERDICTS = ("agrees", "order of magnitude", "direction", "differs", "not distinguishable", "not measured",
            "not measurable")
MEASURED = ("agrees", "order of magnitude", "direction", "differs", "not distinguishable")
ORDERS = ("less", "least", "more", "most")  # claims that name a winner: repeats must tell it apart
AGGREGATES = ("median", "mean", "min", "max", "sum", "count")
COMPOSITES = {"ratio": lambda a, b: a / b, "gain_pct": lambda a, b: (a / b - 1) * 100,
              "drop_pct": lambda a, b: (1 - b / a) * 100, "difference": lambda a, b: a - b}
#: How far ours lies from the paper's number: the first tier whose factor bounds max(r, 1/r), r = ours / paper.
TIERS = (("within 10 %", 1.1), ("within 25 %", 1.25), ("within 50 %", 1.5), ("within 2×", 2.0),
         ("beyond 2×", math.inf))
PRIMARY = 1.25  # a number agrees within 25 %, either way on a log scale (ours / paper between 0.8 and 1.25)
ORDER_OF_MAGNITUDE = 10.0  # "similar" read off a log-scale figure: within 10x, a verdict of its own
#: Seeds behind each point before a winner is named between points: a Spark point needs two for an interval;
#: a simulated one five hash seeds (its variation is the hash functions' and the stream's draws).
SEEDS_NEEDED = {"spark": 2, "simulator": 5}
# What decided a measured verdict (fidelity.csv's `rule`), so that each verdict says why:
# a `differs` names the rule it failed, a `direction` is always `neutral side`, the unmeasured have none.
RULES = {
    "ratio": "ours within 25 % of the paper's value, either way (ours / paper between 0.8 and 1.25)",
    "bound": "the paper gives a bound (at least, at most, a range) and ours is on its side, or within 25 % of it",
    "absolute tolerance": "|ours − paper| within the recipe's abs_tol: the quantity's resolution, where a ratio "
                          "cannot judge (a few messages of millions, a value printed as 0.0001 %)",
    "claim": "a comparison the paper states (less, more, about equal within the recipe's tolerance, at most 2×, "
             "below a threshold), on every part it spans",
    "trend": "a series that increases, decreases or stays flat as the paper's does",
    "order of magnitude": "a similarity the paper reads off a log-scale figure: ours within 10× "
                          "(order of magnitude, counted apart, never as agreement)",
    "neutral side": "beyond 25 % but on the paper's side of the recipe's \"no effect\" value (direction)",
    "repeats": "the points an order is claimed between are measured with seeds, but the 95 % interval of their "
               "difference includes zero, or a point has too few seeds (Spark 2, simulator 5): no winner is named",
}
AGREEING_RULES = ("ratio", "bound", "absolute tolerance", "claim", "trend")


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
# A tolerance above 1 would let a claim agree beyond 2x: an order of magnitude is `within_order` instead.
_PART = {"type": "object", "additionalProperties": False,  # one comparison of a claim
         "properties": {"subject": {"$ref": "#/$defs/measure"}, "than": _THAN, "below": {"type": "number"},
                        "series": _SERIES, "tolerance": {"type": "number", "minimum": 0, "maximum": 1},
                        "within_order": {"const": True}},
         "oneOf": [{"required": ["subject"]}, {"required": ["series"]}]}
# A paper that reports "averages of N runs" (Gedik Sec. 5.1): each setting's runs (seeds) are first averaged
# into one point, as the paper's figures plot them, and a measure's `agg` then summarises those points.
_RUNS = {"type": "object", "required": ["agg", "setting"], "additionalProperties": False,
         "properties": {"agg": {"enum": list(AGGREGATES)},
                        "setting": {"type": "array", "minItems": 1, "items": {"type": "string"}}}}
_COMMIT = {"type": "string", "pattern": "^[0-9a-f]{7,40}$"}
# A recipe changed after it was first measured: the fields as first fixed (null: the field was absent;
# `_runs`: the file's), the commit that changed them and why; the first recipe is evaluated beside the new.
_FIRST = {"type": "object", "required": ["was", "changed", "why"], "additionalProperties": False,
          "properties": {"was": {"type": "object", "minProperties": 1}, "changed": _COMMIT,
                         "why": {"type": "string", "minLength": 20}}}
SCHEMA = {
    "$defs": {"measure": _MEASURE, "runs": _RUNS},
    "type": "object",
    "properties": {"_runs": _RUNS},
    "additionalProperties": {"oneOf": [
        {"type": "object", "required": ["not_measured"], "additionalProperties": False,
         "properties": {"not_measured": {"type": "string", "minLength": 10}}},
        {"type": "object", "minProperties": 1, "required": ["fixed"], "additionalProperties": False,
         "properties": {**_PART["properties"], "measure": {"$ref": "#/$defs/measure"},
                        "all": {"type": "array", "minItems": 2, "items": _PART}, "neutral": {"type": "number"},
                        "abs_tol": {"type": "number", "minimum": 0}, "reason": {"type": "string", "minLength": 10},
                        "spark": {"type": "object"}, "fixed": _COMMIT, "first": _FIRST},
         "oneOf": [{"required": ["measure"]}, {"required": ["subject"]}, {"required": ["series"]},
                   {"required": ["all"]}]}]},
}
RULE_FIELDS_IGNORED = ("reason", "fixed", "first", "spark")  # what a recipe may change without changing its rule


@cache
def recipes(directory: Path = MEASURES) -> dict[tuple[str, str], dict]:
    """(paper, entry id) → recipe, from every ``<paper>.yaml``; refuses unknown ids and bad shapes.  A recipe
    with ``first`` carries the first recipe, ready to evaluate, as ``first["recipe"]``."""
    known = {(e["paper"], e["id"]): e for e in entries()}
    found = {}
    for path in sorted(Path(directory).glob("*.yaml")):
        paper = path.stem
        body = yaml.load(path.read_text(), Loader=_Loader) or {}
        _check_fixed(path.name, body)
        try:
            jsonschema.validate(body, SCHEMA)
        except jsonschema.ValidationError as exc:
            where = "/".join(map(str, exc.absolute_path))
            raise RecipeError(f"{path.name}: {where}: {exc.message[:300]}") from None
        runs = body.pop("_runs", None)
        for entry_id, raw in body.items():
            if (paper, entry_id) not in known:
                raise RecipeError(f"{path.name}: {entry_id}: no such entry of {paper} in published.yaml")
            recipe = _with_runs(raw, runs) if runs else raw
            _check_fits(path.name, entry_id, recipe, known[paper, entry_id])
            if "spark" in recipe:  # the same entry measured again on the cluster's live studies: a recipe too
                try:
                    jsonschema.validate({entry_id: recipe["spark"]}, SCHEMA)
                except jsonschema.ValidationError as exc:
                    raise RecipeError(f"{path.name}: {entry_id}.spark: {exc.message[:300]}") from None
                _check_fits(path.name, f"{entry_id}.spark", recipe["spark"], known[paper, entry_id])
            if "first" in raw:
                first = _first_recipe(raw, runs)
                _check_fits(path.name, f"{entry_id}.first", first, known[paper, entry_id])
                recipe = {**recipe, "first": {**raw["first"], "recipe": first}}
            found[paper, entry_id] = recipe
    return found


def _check_fixed(file: str, body: dict) -> None:
    """Every recipe that measures (and its ``spark:`` twin) names the commit its rule was fixed after: the
    schema's own message for a missing field in a ``oneOf`` would not say which."""
    for entry_id, recipe in body.items():
        if entry_id == "_runs" or not isinstance(recipe, dict):
            continue
        for name, part in ((entry_id, recipe), (f"{entry_id}.spark", recipe.get("spark"))):
            if isinstance(part, dict) and "not_measured" not in part and "fixed" not in part:
                raise RecipeError(f"{file}: {name}: a recipe names the commit its rule was fixed after "
                                  f"(`fixed: <commit>`, analysis/measures/README.md)")


def _first_recipe(raw: dict, runs: dict | None) -> dict:
    """The recipe as first fixed: ``raw`` with ``first.was`` put back (a null field was absent then)."""
    was = dict(raw["first"]["was"])
    runs = was.pop("_runs", runs)
    first = {k: v for k, v in raw.items() if k not in RULE_FIELDS_IGNORED}
    for field, value in was.items():
        first.pop(field, None) if value is None else first.__setitem__(field, value)
    return _with_runs(first, runs) if runs else first


def rule_of(recipe: dict) -> dict:
    """The part of a recipe that decides its verdict: everything but its notes, commits and ``spark:`` twin."""
    return {k: v for k, v in recipe.items() if k not in RULE_FIELDS_IGNORED}


def _with_runs(spec, runs: dict):
    """``spec`` with ``runs`` on every table it reads (a paper-wide ``_runs``; a measure's own wins)."""
    if isinstance(spec, list):
        return [_with_runs(part, runs) for part in spec]
    if not isinstance(spec, dict):
        return spec
    if "table" in spec:
        return {"runs": runs, **spec}
    return {key: _with_runs(value, runs) if key not in ("first", "spark") else value for key, value in spec.items()}


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
    if recipe.get("within_order") and (direction != "about_equal" or "tolerance" in recipe):
        raise RecipeError(f"{file}: {entry_id}: `within_order` is for about_equal claims, without a tolerance")


# --- reading results ----------------------------------------------------------------------------------

def results_folders(folder: Path, _seen: frozenset = frozenset()) -> list[Path]:
    """``folder`` and the results folders kept inside it, at any depth, in name order: ``study/`` (a ``make
    study``, with its ``tw-full/``), or another bench linked in (a symlink to a kept report); never a
    bench's ``runs/`` or the ``previous-*`` tables a rebuild set aside, nor a link back to a folder above."""
    seen = _seen | {folder.resolve()}
    inside = sorted(p for p in folder.iterdir() if p.is_dir() and p.name != "runs" and p.resolve() not in seen
                    and not p.name.startswith("previous-")) if folder.is_dir() else []
    return [folder, *(deeper for p in inside for deeper in results_folders(p, seen))]


class Read(NamedTuple):
    """What one evaluation read: the files, where each value was measured, and the Spark runs' work modes
    (with ``; latency computed`` where a latency column came from computed finish times)."""

    files: set[str]
    origins: set[str]
    works: set[str]


class Results:
    """The result tables of one folder and of the results folders kept inside it (:func:`results_folders`)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._places = results_folders(self.folder)
        self._tables: dict[str, tuple[pd.DataFrame, str]] = {}
        self._spark: set[str] = set()  # the tables a bench measured on Spark
        self._read: Read | None = None

    @contextmanager
    def reading(self):
        """Collect what the evaluations inside read (:class:`Read`)."""
        self._read = Read(set(), set(), set())
        try:
            yield self._read
        finally:
            self._read = None

    def _find(self, name: str, suffix: str) -> Path:
        for where in self._places:
            if (where / f"{name}{suffix}").is_file():
                return where / f"{name}{suffix}"
        raise Missing(f"{name}{suffix} is not in this folder nor in a results folder inside it")

    def table(self, name: str) -> tuple[pd.DataFrame, str]:
        if name not in self._tables:
            path = self._find(name, ".csv")
            table = pd.read_csv(path, low_memory=False)
            meta_path = path.with_name(path.name + ".meta.json")
            meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
            if meta.get("config", {}).get("master") or "sim_exact" in table:  # Spark runs, checked by the simulator
                self._spark.add(name)
                table = with_work(table, meta.get("environment", {}).get("machine", {}).get("cpus", 1))
            self._tables[name] = table, str(path.relative_to(self.folder))
        return self._tables[name]

    def origin(self, name: str) -> str:
        self.table(name)
        return "spark" if name in self._spark else "simulator"

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
        self._note(spec, table, file)
        if "runs" in spec and "seed" in table and not by_seed:
            setting = [c for c in spec["runs"]["setting"] if c in table]
            if spec.get("over") in table and spec["over"] not in setting:  # a series keeps its x
                setting.append(spec["over"])
            table = table.groupby(setting, dropna=False)[spec["column"]].agg(spec["runs"]["agg"]).reset_index()
        return table, file

    def _note(self, spec: dict, rows: pd.DataFrame, file: str) -> None:
        if self._read is None:
            return
        self._read.files.add(file)
        self._read.origins.add(self.origin(spec["table"]))
        if "work" in rows:
            latency = spec["column"].startswith("latency")
            self._read.works.update(f"{w}; latency computed" if latency and source == "computed" else w
                                    for w, source in zip(rows["work"], rows["latency_source"]))

    def measure(self, spec: dict) -> float:
        """One number."""
        if "number" in spec:
            return float(spec["number"])
        if "json" in spec:
            path = self._find(spec["json"], ".json")
            if self._read is not None:  # a bench's comparison with the paper, computed from its Spark runs
                self._read.files.add(str(path.relative_to(self.folder)))
                self._read.origins.add("spark" if (path.parent / "plan.json").is_file() else "simulator")
            return _walk(json.loads(path.read_text()), spec["key"], path.name)
        for name, combine in COMPOSITES.items():
            if name in spec:
                a, b = (self.measure(part) for part in spec[name])
                return combine(a, b) if b != 0 else math.nan
        rows, _ = self.rows(spec)
        return float(rows[spec["column"]].agg(spec.get("agg", "median")))

    def per_seed(self, spec: dict) -> pd.Series | float:
        """A measure once per seed (a Series indexed by seed) where it reads a table with seeds; elsewhere its
        one value (a number, a JSON key, a table without seeds)."""
        for name, combine in COMPOSITES.items():
            if name in spec:
                a, b = (self.per_seed(part) for part in spec[name])
                if isinstance(a, pd.Series) and isinstance(b, pd.Series):
                    a, b = a.align(b, join="inner")
                return combine(a, b.where(b != 0)) if isinstance(b, pd.Series) else (
                    combine(a, b) if b != 0 else math.nan)
        rows = self._seed_rows(spec)
        if rows is None:
            return self.measure(spec)
        return rows.groupby("seed")[spec["column"]].agg(spec.get("agg", "median"))

    def point_seeds(self, spec: dict) -> pd.DataFrame | None:
        """A series once per seed: one row per point of ``over``, one column per seed (else None)."""
        rows = self._seed_rows(spec)
        if rows is None:
            return None
        return rows.groupby([spec["over"], "seed"])[spec["column"]].agg(spec.get("agg", "median")).unstack()

    def _seed_rows(self, spec: dict) -> pd.DataFrame | None:
        """The rows of a table measure, every seed kept, where the table has a seed column."""
        if "table" not in spec:
            return None
        rows, _ = self.rows(spec, by_seed=True)
        if "seed" not in rows:
            return None
        if "runs" in spec:  # each seed's value over the settings, as the measure spans them
            setting = [c for c in spec["runs"]["setting"] if c in rows]
            rows = rows.groupby([*setting, "seed"], dropna=False)[spec["column"]].agg(
                spec["runs"]["agg"]).reset_index()
        return rows

    def series(self, spec: dict) -> pd.Series:
        rows, file = self.rows(spec)
        if spec["over"] not in rows:
            raise Missing(f"{file} has no column {spec['over']!r}")
        points = rows.groupby(spec["over"])[spec["column"]].agg(spec.get("agg", "median")).sort_index()
        if len(points) < 2:
            raise Missing(f"{file} has fewer than two values of {spec['over']} for {spec.get('rows', {})}")
        return points

    def origins(self, spec) -> set[str]:
        """Where the tables a spec reads were measured (``spark``, ``simulator``); empty for numbers."""
        if isinstance(spec, list):
            return set().union(*(self.origins(part) for part in spec))
        if not isinstance(spec, dict):
            return set()
        if "table" in spec:
            return {self.origin(spec["table"])}
        return set().union(*(self.origins(v) for k, v in spec.items() if k in (*COMPOSITES, "subject", "than")))


def with_work(table: pd.DataFrame, cores: int) -> pd.DataFrame:
    """A Spark table with each run's work mode (``work``) and whether its latencies were computed or observed
    (``latency_source``); where a run of an older version did not record them, they follow from its delay,
    delay mode, levers and W on the machine's cores."""
    if not {"delay_ms", "workers"} <= set(table):
        return table
    modes = table.get("delay_mode", pd.Series("sleep", index=table.index)).fillna("sleep")
    levers = table.get("levers", pd.Series("none", index=table.index)).fillna("none")
    work = pd.Series([work_mode(d, m, lv, int(w), cores) for d, m, lv, w in
                      zip(table["delay_ms"], modes, levers, table["workers"])], index=table.index)
    work = table["work"].fillna(work) if "work" in table else work
    source = pd.Series([latency_source(w, lv) for w, lv in zip(work, levers)], index=table.index)
    return table.assign(work=work, latency_source=table["latency_source"].fillna(source)
                        if "latency_source" in table else source)


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

def factor(entry: dict, ours: float) -> float:
    """How far ours lies from the paper's value, as a factor >= 1: max(r, 1/r) of r = ours / paper, or of ours
    against the nearer end of a range; 1 on a bound's side; infinite where no ratio exists (a paper's 0
    against another value, opposite signs)."""
    paper, qualifier, top = entry["value"], entry["qualifier"], entry["value_max"]
    ranged = qualifier == "range" and top is not None
    if ours == paper or (qualifier == "at_least" and ours >= paper) or (qualifier == "at_most" and ours <= paper) \
            or (ranged and paper <= ours <= top):
        return 1.0
    ratios = [ours / end for end in ([paper, top] if ranged else [paper]) if end != 0 and ours / end > 0]
    return min((max(r, 1 / r) for r in ratios), default=math.inf)  # NaN: no ratio, infinitely far


def tier(distance: float) -> str:
    """The first of :data:`TIERS` whose factor bounds ``distance`` (:func:`factor`)."""
    return next(name for name, bound in TIERS if distance <= bound * (1 + 1e-12))


def value_verdict(entry: dict, ours: float, recipe: dict) -> tuple[str, str]:
    """The verdict and the rule that decided it: agrees within 25 % (``ratio``, or ``bound`` for a bound or
    range), else by the recipe's ``abs_tol`` (absolute tolerance); else direction when ours is on the paper's
    side of the recipe's neutral value (neutral side); else differs by the 25 % test."""
    paper = entry["value"]
    rule = "bound" if entry["qualifier"] in ("at_least", "at_most") or (
        entry["qualifier"] == "range" and entry["value_max"] is not None) else "ratio"
    if factor(entry, ours) <= PRIMARY * (1 + 1e-12):
        return "agrees", rule
    if abs(ours - paper) <= recipe.get("abs_tol", 0):  # equal up to what the quantity can resolve
        return "agrees", "absolute tolerance"
    neutral = recipe.get("neutral")
    if neutral is not None and (ours - neutral) * (paper - neutral) > 0:
        return "direction", "neutral side"
    return "differs", rule


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


def within_order(subject: float, than) -> bool:
    """``subject`` within 10x of ``than`` (of each, for a list), either way."""
    if isinstance(than, list):
        return all(within_order(subject, t) for t in than)
    return subject == than or (than != 0 and subject / than > 0
                               and max(subject / than, than / subject) <= ORDER_OF_MAGNITUDE)


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
    """One row of the table: the entry by its recipe; by the recipe as first fixed, where it was changed after
    it was first measured (``first_value``, ``first_verdict``, ``change``); and, where the recipe has a
    ``spark`` one that this folder can read, by that too (``spark_value``, ``spark_verdict``, ``spark_reason``:
    the cluster's live studies)."""
    row = _evaluated(entry, recipe, results)
    recipe = recipe or {}
    first = recipe.get("first")
    then = _evaluated(entry, first["recipe"], results) if first else None
    row |= {"first_value": then["our_value"] if then else None, "first_verdict": then["verdict"] if then else "",
            "change": f"{first['changed']}: {first['why']}" if first else ""}
    spark = recipe.get("spark")
    again = _evaluated(entry, spark, results) if spark else None
    if again is None or again["verdict"] == "not measured":
        return {**row, "spark_value": None, "spark_verdict": "", "spark_reason": ""}
    return {**row, "spark_value": again["our_value"], "spark_verdict": again["verdict"],
            "spark_reason": again["reason"]}


def _evaluated(entry: dict, recipe: dict | None, results: Results) -> dict:
    row = {"paper": entry["paper"], "entry": entry["id"], "where": entry["where"],
           "paper_value": entry["value"] if entry["value"] is not None else _number(entry["than"]),
           "our_value": None, "ratio": None, "tier": "", "runs": None, "verdict": "not measured", "rule": "",
           "measured_on": "", "work": "", "reason": "", "caveat": (recipe or {}).get("reason", ""),
           "fixed": (recipe or {}).get("fixed", ""), "result_file": "", "text": entry["text"]}
    if not entry["measurable"]:
        return {**row, "verdict": "not measurable", "reason": entry["why"] or "a setup value, not a result"}
    if recipe is None:
        return {**row, "reason": f"no recipe in analysis/measures/{entry['paper']}.yaml yet"}
    if "not_measured" in recipe:
        return {**row, "reason": recipe["not_measured"]}
    try:
        with results.reading() as read:
            got = _measured(entry, recipe, results)
    except Missing as exc:
        return {**row, "reason": f"not in these results: {exc}"}
    paper = row["paper_value"]
    ratio = got.ours / paper if isinstance(paper, (int, float)) and paper and not math.isnan(got.ours) else None
    reason = got.note or ("" if got.verdict == "agrees" else recipe.get(
        "reason", f"no reason recorded in analysis/measures/{entry['paper']}.yaml"))
    return {**row, "our_value": got.ours, "ratio": ratio,
            "tier": tier(factor(entry, got.ours)) if entry["kind"] == "value" else "", "runs": got.runs,
            "verdict": got.verdict, "rule": got.rule, "measured_on": "+".join(sorted(read.origins)),
            "work": "+".join(sorted(read.works)), "reason": reason, "result_file": ", ".join(sorted(read.files))}


class Measured(NamedTuple):
    """Our value, its verdict, the rule that decided it, the fewest seeds behind a value read from a table
    with seeds (None: none) and, for ``not distinguishable``, the interval that says so."""

    ours: float
    verdict: str
    rule: str
    runs: int | None = None
    note: str = ""


def _measured(entry: dict, recipe: dict, results: Results) -> Measured:
    direction, tolerance = entry["direction"], recipe.get("tolerance")
    tolerance = 0.1 if tolerance is None else tolerance
    if "all" in recipe and "measure" not in recipe:  # a claim over several points or quantities: every part
        parts = [_measured(entry, part, results) for part in recipe["all"]]
        verdicts = {part.verdict for part in parts}
        verdict = next(v for v in ("differs", "not distinguishable", "order of magnitude", "agrees") if v in verdicts)
        rule = {"not distinguishable": "repeats", "order of magnitude": "order of magnitude"}.get(verdict, "claim")
        return Measured(parts[0].ours, verdict, rule, _fewest(part.runs for part in parts),
                        "; ".join(part.note for part in parts if part.note))
    if "measure" in recipe:
        ours = results.measure(recipe["measure"])
        if math.isnan(ours):
            raise Missing("the measure divides by zero")
        return Measured(ours, *value_verdict(entry, ours, recipe), _runs(results.per_seed(recipe["measure"])))
    if "series" in recipe:
        points = results.series(recipe["series"])
        first = float(points.iloc[0])
        ours = float(points.iloc[-1]) / first if first else math.inf
        seeds = results.point_seeds(recipe["series"])
        runs = None if seeds is None else int(seeds.notna().sum(axis=1).min())
        if seeds is not None and direction != "flat":
            why = _no_winner(seeds.iloc[0], [seeds.iloc[-1]], {results.origin(recipe["series"]["table"])})
            if why:
                return Measured(ours, "not distinguishable", "repeats", runs, why)
        return Measured(ours, *_judged(trend_holds(direction, points, tolerance), "trend"), runs)
    subject = results.measure(recipe["subject"])
    thans = [] if direction == "low" else recipe["than"] if isinstance(recipe["than"], list) else [recipe["than"]]
    measured = [results.measure(spec) for spec in thans]
    than = recipe["below"] if direction == "low" else measured if isinstance(recipe["than"], list) else measured[0]
    repeats = [results.per_seed(spec) for spec in [recipe["subject"], *thans]]
    runs = _fewest(_runs(r) for r in repeats)
    if direction in ORDERS:
        why = _no_winner(repeats[0], repeats[1:], results.origins([recipe["subject"], *thans]))
        if why:
            return Measured(subject, "not distinguishable", "repeats", runs, why)
    if recipe.get("within_order"):
        holds = within_order(subject, than)
        return Measured(subject, "order of magnitude" if holds else "differs", "order of magnitude", runs)
    return Measured(subject, *_judged(claim_holds(direction, subject, than, tolerance), "claim"), runs)


def _runs(repeats) -> int | None:
    """Seeds behind a value (None for a value read from no table with seeds)."""
    return int(repeats.notna().sum()) if isinstance(repeats, pd.Series) else None


def _fewest(runs) -> int | None:
    known = [n for n in runs if n is not None]
    return min(known) if known else None


def _no_winner(subject, others: list, origins: set[str]) -> str:
    """Why no order can be named between a point (values per seed, or one number) and others: a point with
    too few seeds for where it was measured (``SEEDS_NEEDED``, the strictest of ``origins``), or a 95 %
    interval of a difference that includes zero; "" when every pair is apart or no side has seeds (numbers,
    tables without seeds: exact)."""
    sides = [subject, *others]
    seeded = [side for side in sides if isinstance(side, pd.Series)]
    if not seeded:
        return ""
    needed = max(SEEDS_NEEDED[o] for o in origins or {"simulator"})
    fewest = min(int(side.notna().sum()) for side in seeded)
    if fewest < needed:
        where = "Spark run" if needed == SEEDS_NEEDED["spark"] else "simulated seed"
        return (f"{fewest} {where}{'s' if fewest != 1 else ''} behind a point, {needed} needed to name a winner: "
                f"run it with {needed} seeds or more")
    for other in others:
        gap = difference(subject, other)
        if not gap.excludes_zero() and gap.high > gap.low:  # an interval of no width is a difference known exactly
            return f"the 95 % interval of the difference includes 0: {gap}"
    return ""


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


def given(column: pd.Series) -> pd.Series:
    """Which cells of a text column hold something (a column read back with no text at all is float NaN)."""
    return column.astype("string").fillna("") != ""


def measured_numbers(table: pd.DataFrame) -> pd.DataFrame:
    """The measured value entries: those with a tier."""
    return table[given(table["tier"]) & table["verdict"].isin(MEASURED)]


def tiers(table: pd.DataFrame) -> pd.DataFrame:
    """Per paper and overall, the measured numbers (value entries) and how many lie within each tier, counted
    cumulatively (within 25 % includes within 10 %), and beyond 2×."""
    numbers = measured_numbers(table)
    names = [name for name, _ in TIERS]
    counts = pd.crosstab(numbers["paper"], numbers["tier"]).reindex(columns=names, fill_value=0)
    counts.loc["all"] = counts.sum()
    cumulative = counts[names[:-1]].cumsum(axis=1)
    cumulative.insert(0, "numbers", counts.sum(axis=1))
    cumulative["beyond 2×"] = counts["beyond 2×"]
    return cumulative


def changes(table: pd.DataFrame) -> pd.DataFrame:
    """Every recipe changed after it was first measured: the first recipe's value and verdict beside the
    current one's, and why it changed."""
    changed = table[given(table["change"])]
    return changed[["paper", "entry", "first_value", "first_verdict", "our_value", "verdict", "change"]]


def write_fidelity(folder: Path) -> Path:
    path = Path(folder) / "fidelity.csv"
    fidelity(folder).to_csv(path, index=False)
    return path


def summary(table: pd.DataFrame) -> str:
    """One line: the measured share of the measurable, the agreeing share of the measured, the numbers' tiers,
    and what is counted apart (order of magnitude, direction, not distinguishable, the live studies)."""
    all_ = totals(table).loc["all"]
    measured, measurable = int(all_["measured"]), int(all_["measurable"])
    good = int(all_["agrees"])
    numbers = tiers(table).loc["all"] if given(table["tier"]).any() else None
    apart = [f"{int(all_[v])} {v}" for v in ("order of magnitude", "direction", "not distinguishable") if all_[v]]
    again = table["spark_verdict"].astype("string").fillna("") if "spark_verdict" in table else pd.Series(dtype=str)
    spark = int(again.isin(MEASURED).sum())
    line = (f"{measured} of {measurable} measurable entries measured ({measured / max(measurable, 1):.0%}); "
            f"{good} of them agree ({good / max(measured, 1):.0%})")
    if numbers is not None:
        line += (f"; of {int(numbers['numbers'])} numbers, {int(numbers['within 10 %'])} within 10 %, "
                 f"{int(numbers['within 25 %'])} within 25 %, {int(numbers['within 50 %'])} within 50 %, "
                 f"{int(numbers['within 2×'])} within 2×")
    if apart:
        line += f"; counted apart: {', '.join(apart)}"
    if spark:
        line += (f"; {spark} also measured on the cluster's live studies (`spark_verdict`), "
                 f"{int((again == 'agrees').sum())} of them agreeing")
    return line


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
    print(tiers(table).to_string())
    print(summary(table))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
