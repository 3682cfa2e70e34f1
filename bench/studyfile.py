"""Study files: an experiment as a declarative YAML file (after openmessaging-benchmark's workloads).

A study names *factors* — lists of values — and how to combine them::

    name: tiny
    apps: [wordcount, selfjoin]          # wordcount | selfjoin | naivebayes
    schemes: [kg, pkg]
    workers: [4]
    sources: [1, 2]
    delay_ms: [0.2]
    workloads: ["zipf:z=1.2,keys=2000"]  # omitted: each app's default workload
    messages: 20000                       # per run (or `batches`: micro-batches per run)
    batch_rows: 4000                      # messages per micro-batch (or `batch_rows_per_worker`)
    repeats: 1                            # seeds 0..repeats-1
    design: cross                         # cross (full product) | around (one factor at a time)

Factors (a scalar means a one-element list): ``apps``, ``schemes``, ``workers``, ``sources``, ``delay_ms``,
``workloads``, ``rate`` (offered messages/s, open loop; 0 = as fast as it goes), ``aggregation_period`` (word
count's T), ``split`` (``shuffle`` | ``key``), ``levers`` (the engine's levers on: ``default``, ``none``,
``all`` or names joined by ``+``; :mod:`~skewbench.bench.spark.engine`), live routing's ``rebalance_every``
(an adaptive scheme plans every K micro-batches), ``schedule`` (``"BATCH:W,..."``: W changes while the stream
runs; ``""`` never), ``migration`` (``all-at-once`` | ``fluid``), ``fluid_keys`` and ``handover`` (``hold`` |
``ahead``) (:mod:`skewbench.migration`; the last three mean nothing, and are dropped, where routing never changes),
``params`` (the scheme's parameters, ``"theta=0.02,table_max=3000"``, for each scheme of its block),
``ingest`` (``engine``: the stream generated in Spark's source; ``locust``: sent by locust through the
cluster's broker, :mod:`~skewbench.bench.spark.ingest`), ``faults`` (``"worker@0.3+3"``: nodes killed during
the run, :mod:`~skewbench.bench.spark.faults`; no ``driver`` fault: a bench's runs share one driver),
``slow`` (a worker-speed profile, ``"1@0.5"``: one worker at half speed, :mod:`skewbench.speeds`),
``delay_mode`` (``spin``: the injected delay burnt on a core; ``sleep``: slept; ``auto``, the default: spin where
every worker has a core, :mod:`~skewbench.bench.spark.delay`),
``batch_rows`` / ``batch_rows_per_worker``.
``design: cross`` runs every combination; ``design: around`` runs the *centre* (the first value of every factor) and,
for each factor, its other values with every other factor at the centre (Montgomery's one-factor-at-a-time).
``cross_with: [schemes]`` crosses the named factors with the design of the others (every scheme at every point
of an ``around`` sweep). ``include`` adds points: each entry sets some factors (a list crosses its values with
the entry's other lists), the rest take the centre's values (and the ``cross_with`` factors all of theirs).
Every point runs with seeds ``0 .. repeats-1``.

Other keys: ``description``; ``offered_rate: {study: storm, scheme: kg, delay_ms: 0.4}`` — the rate is
that study's median measured throughput at that point, in the same bench folder (the study must run
in the same ``skewbench bench``); ``compare`` — the comparison with the paper computed from the
study's rows (``storm``, ``aggregation``, ``dkg``, ``naivebayes``); ``quick`` and ``full`` — keys replaced
in those profiles (``--quick``: a smoke run of minutes; ``--full``: a bigger cluster's sweep);
``engine`` — ``true`` marks no-delay calibration runs the engine model is fitted on;
``sustainable`` — ``true`` (or ``{seconds: S, runs: N}``: the stream offered per search run, and at most N
runs per search): after every point ran as fast as it goes (its peak), a search for its sustainable
throughput (:mod:`~skewbench.bench.sustainable`).

:func:`load` validates a file completely before anything runs: UTF-8 text, a JSON Schema for shapes and
ranges (``jsonschema``, which names the offending key; every number has a most, :mod:`skewbench.bounds`), no
NaN or infinity anywhere (which JSON Schema's ranges let through), then what needs the library (app, scheme and
workload names, a workload an app can read, word count's T, a schedule's W).  Every error is one
:class:`StudyError` line ``FILE: KEY: what is wrong``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import jsonschema
import yaml

from skewbench import bounds
from skewbench.bench.comparisons import COMPARISONS
from skewbench.bench.spark.delay import MODES as DELAY_MODES
from skewbench.bench.spark.engine import DEFAULT as LEVERS_DEFAULT, LeverError, canonical, parse as parse_levers
from skewbench.bench.spark.faults import FaultError, parse_all as parse_faults
from skewbench.bench.spark.ingest import PATHS as INGEST_PATHS
from skewbench.migration import HANDOVERS, STRATEGIES, parse_schedule
from skewbench.speeds import SpeedError, check as check_speeds

FACTORS = ("apps", "schemes", "workers", "sources", "delay_ms", "workloads", "rate", "aggregation_period",
           "split", "levers", "rebalance_every", "schedule", "migration", "fluid_keys", "handover", "params",
           "ingest", "faults", "slow", "delay_mode", "batch_rows", "batch_rows_per_worker")
MAX_WORKERS = bounds.MAX_CLUSTER_WORKERS
PROFILES = ("quick", "default", "full")
MAX_DELAY_MS = bounds.MAX_DELAY_MS


def _list_of(item: dict) -> dict:
    """A factor: one value or a non-empty list of distinct values."""
    return {"oneOf": [item, {"type": "array", "items": item, "minItems": 1, "uniqueItems": True}]}


_NAME = {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]*$"}
_COUNT = bounds.COUNT.schema()
_WORKERS = bounds.Range(1, MAX_WORKERS, integer=True)
_BATCHES = bounds.Range(0, bounds.MAX_BATCHES, integer=True)  # 0: never
_FACTOR_ITEMS = {
    "apps": {"type": "string"},
    "schemes": {"type": "string"},
    "workers": _WORKERS.schema(),
    "sources": _WORKERS.schema(),
    "delay_ms": bounds.Range(0, MAX_DELAY_MS).schema(),
    "workloads": {"type": "string", "minLength": 1},
    "rate": bounds.Range(0, bounds.MAX_RATE).schema(),
    "aggregation_period": _BATCHES.schema(),
    "split": {"enum": ["shuffle", "key"]},
    "levers": {"type": "string", "minLength": 1},
    "rebalance_every": _BATCHES.schema(),
    "schedule": {"type": "string"},
    "migration": {"enum": list(STRATEGIES)},
    "fluid_keys": bounds.Range(0, bounds.MAX_KEYS, integer=True).schema(),
    "handover": {"enum": list(HANDOVERS)},
    "params": {"type": "string"},
    "ingest": {"enum": list(INGEST_PATHS)},
    "faults": {"type": "string"},
    "slow": {"type": "string"},
    "delay_mode": {"enum": ["auto", *DELAY_MODES]},
    "batch_rows": _COUNT,
    "batch_rows_per_worker": _COUNT,
}
_SIZES = {"messages": _COUNT, "batches": bounds.Range(2, bounds.MAX_BATCHES, integer=True).schema(),
          "repeats": bounds.REPEATS.schema()}
_POINT = {"type": "object", "additionalProperties": False,
          "properties": {k: _list_of(_FACTOR_ITEMS[k]) for k in FACTORS}}
_SUSTAINABLE = {"oneOf": [{"type": "boolean"},
                          {"type": "object", "additionalProperties": False,
                           "properties": {"seconds": bounds.Range(2, 86_400).schema(),
                                          "runs": bounds.Range(1, 1000, integer=True).schema()}}]}
#: The study file's JSON Schema (shapes and ranges; names are checked against the registries after it).
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "apps", "schemes", "workers"],
    "properties": {
        "name": _NAME,
        "description": {"type": "string"},
        **{k: _list_of(v) for k, v in _FACTOR_ITEMS.items()},
        **_SIZES,
        "design": {"enum": ["cross", "around"]},
        "cross_with": {"type": "array", "items": {"enum": [f for f in FACTORS if not f.startswith("batch_rows")]},
                       "uniqueItems": True},
        "include": {"type": "array", "items": _POINT},
        "offered_rate": {"type": "object", "additionalProperties": False, "required": ["study", "scheme", "delay_ms"],
                         "properties": {"study": _NAME, "scheme": {"type": "string"},
                                        "delay_ms": _FACTOR_ITEMS["delay_ms"]}},
        "compare": {"enum": sorted(COMPARISONS)},
        "engine": {"type": "boolean"},
        "sustainable": _SUSTAINABLE,
        **{profile: {"type": "object", "additionalProperties": False,
                     "properties": {**{k: _list_of(v) for k, v in _FACTOR_ITEMS.items()}, **_SIZES,
                                    "design": {"enum": ["cross", "around"]},
                                    "include": {"type": "array", "items": _POINT}, "sustainable": _SUSTAINABLE}}
           for profile in ("quick", "full")},
    },
    "not": {"anyOf": [{"required": ["messages", "batches"]}, {"required": ["batch_rows", "batch_rows_per_worker"]}]},
}
DEFAULTS = {"sources": [1], "delay_ms": [0.0], "workloads": [None], "rate": [0.0], "aggregation_period": [0],
            "split": ["shuffle"], "levers": [LEVERS_DEFAULT], "rebalance_every": [0], "schedule": [""],
            "migration": ["all-at-once"], "fluid_keys": [0], "handover": ["hold"], "params": [""], "ingest": ["engine"],
            "faults": [""], "slow": [""], "delay_mode": ["auto"], "repeats": 1,
            "design": "cross",
            "batches": 5}
#: Factors added after benches were first kept: a saved plan without them resumes (``bench.driver``).
LATER_FACTORS = ("rebalance_every", "schedule", "migration", "fluid_keys", "handover", "params", "ingest", "faults",
                 "slow", "delay_mode")
#: Live routing's factors (:mod:`skewbench.migration`) at their static values.
STATIC = {"rebalance_every": 0, "schedule": "", "migration": "all-at-once", "fluid_keys": 0, "handover": "hold"}
#: The lever set of a study saved before levers existed (a kept bench's plan.json): Spark as configured.
LEVERS_BEFORE = "none"
#: Fields a point gained after runs were first named, at the values that mean "as before": there they stay
#: out of the name's digest, so a run made earlier keeps its name.
LATER_FIELDS = {"levers": LEVERS_BEFORE, **STATIC, "params": "", "ingest": "engine", "faults": "", "slow": "",
                "delay_mode": "auto"}


class StudyError(ValueError):
    """A bad study file: one line naming the file and the key, exit code 2."""


@dataclass(frozen=True)
class Point:
    """One run of the matrix: everything ``skewbench run`` needs except where to write."""

    study: str
    app: str
    scheme: str
    workers: int
    sources: int
    delay_ms: float
    workload: str
    messages: int
    batch_rows: int
    rate: float
    aggregation_period: int
    split: str
    seed: int
    levers: str = LEVERS_BEFORE  # the engine's levers (:mod:`~skewbench.bench.spark.engine`)
    rebalance_every: int = 0  # live routing (:class:`~skewbench.migration.Live`): plan every K micro-batches
    schedule: str = ""  # "BATCH:W,...": W changes at these micro-batches
    migration: str = "all-at-once"  # or "fluid"
    fluid_keys: int = 0  # fluid: the most keys moving out of or into one worker per batch
    handover: str = "hold"  # or "ahead": a key's state handed over at the end of the batch before
    params: str = ""  # the scheme's parameters, "NAME=VALUE,..." (skewbench.scheme.parse_params)
    ingest: str = "engine"  # or "locust": the stream through the cluster's broker (bench.spark.ingest)
    faults: str = ""  # "KIND@AT+DOWN,...": nodes killed during the run (bench.spark.faults)
    slow: str = ""  # a worker-speed profile, "1@0.5" (skewbench.speeds): "" every worker at full speed
    delay_mode: str = "auto"  # spin or sleep the injected delay; auto: spin where every worker has a core

    @property
    def name(self) -> str:
        """The run's folder name: readable, and unique through a digest of every field (``levers`` only when
        on, live routing's fields and the scheme's parameters only when set: :data:`LATER_FIELDS`)."""
        fields = asdict(self)
        for key, before in LATER_FIELDS.items():
            if fields[key] == before:
                del fields[key]
        digest = hashlib.sha1(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:8]
        return (f"{self.study}-{self.app}-{self.scheme}-W{self.workers}-S{self.sources}-d{self.delay_ms:g}"
                f"-s{self.seed}-{digest}")

    @property
    def live(self):
        """The run's :class:`~skewbench.migration.Live`, or None when its routing never changes."""
        from skewbench.bench.apps import make_app
        from skewbench.migration import Live

        return Live.of(self.batch_rows, self.rebalance_every, self.schedule, self.migration, self.fluid_keys,
                       self.handover, make_app(self.app).probes_read_final_state)


@dataclass(frozen=True)
class Study:
    """A validated study file: its normalised contents (``spec``) and where it came from."""

    path: Path
    spec: dict

    @property
    def name(self) -> str:
        return self.spec["name"]

    def ingested(self, path: str) -> Study:
        """The study with every run's stream coming in by ``path`` (``skewbench bench --ingest``)."""
        spec = {**self.spec, "ingest": [path],
                **{key: [{k: v for k, v in e.items() if k != "ingest"} for e in self.spec[key]]
                   for key in ("include",) if key in self.spec},
                **{p: {k: v for k, v in self.spec[p].items() if k != "ingest"} for p in ("quick", "full")
                   if p in self.spec}}
        return Study(self.path, spec)

    def profiled(self, profile: str = "default") -> dict:
        """The study's keys in a :data:`PROFILES` profile: ``quick`` or ``full`` replace them with theirs."""
        changes = self.spec.get(profile, {}) if profile != "default" else {}
        spec = {**self.spec, **{k: _as_list(v) if k in FACTORS else v for k, v in changes.items()}}
        for one, other in (("batch_rows", "batch_rows_per_worker"), ("messages", "batches")):
            if one in changes:  # a size a profile sets replaces the other spelling of the same size
                spec.pop(other, None)
        return spec

    def points(self, profile: str = "default", rate: float | None = None) -> list[Point]:
        """Every run, seeds innermost, of a :data:`PROFILES` profile (:meth:`profiled`).  ``rate``: the
        calibrated offered rate (``offered_rate`` studies)."""
        spec = self.profiled(profile)
        sized = "batch_rows" if "batch_rows" in spec else "batch_rows_per_worker"
        factors = {k: spec[k] for k in FACTORS if k in spec and k not in ("batch_rows", "batch_rows_per_worker")}
        factors["size"] = spec[sized]
        combos = _design(factors, spec["design"], [_size_named(p, sized) for p in spec.get("include", [])],
                         spec.get("cross_with", []))
        points = [self._point(c, sized, spec, seed, rate) for c in combos for seed in range(spec["repeats"])]
        return list(dict.fromkeys(points))  # (a static point crossed with migration strategies is one point)

    def _point(self, c: dict, sized: str, spec: dict, seed: int, rate: float | None) -> Point:
        from skewbench.bench.apps import make_app

        rows = c["size"] * (c["workers"] if sized == "batch_rows_per_worker" else 1)
        messages = spec.get("messages") or rows * spec["batches"]
        return Point(study=self.name, app=c["apps"], scheme=c["schemes"], workers=c["workers"],
                     sources=c["sources"], delay_ms=float(c["delay_ms"]),
                     workload=c["workloads"] or make_app(c["apps"]).default_workload, messages=messages,
                     batch_rows=min(rows, messages), rate=float(rate if rate is not None else c["rate"]),
                     aggregation_period=c["aggregation_period"], split=c["split"], seed=seed,
                     levers=canonical(c.get("levers", LEVERS_BEFORE)), params=c.get("params", ""),
                     ingest=c.get("ingest", "engine"), faults=c.get("faults", ""), slow=c.get("slow", ""),
                     delay_mode=c.get("delay_mode", "auto"), **_live_factors(c))


def _live_factors(c: dict) -> dict:
    """A combination's live-routing factors; how state migrates means nothing when routing never changes."""
    factors = {k: c.get(k, static) for k, static in STATIC.items()}
    if not (factors["rebalance_every"] or factors["schedule"]):
        factors.update(migration=STATIC["migration"], fluid_keys=STATIC["fluid_keys"], handover=STATIC["handover"])
    return factors


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def _size_named(point: dict, sized: str) -> dict:
    """An ``include`` entry's factors as lists, its batch size under the factor name ``size``."""
    point = {k: _as_list(v) for k, v in point.items()}
    if sized in point:
        point["size"] = point.pop(sized)
    return point


def _design(factors: dict[str, list], design: str, include: list[dict], crossed: list[str] = ()) -> list[dict]:
    """The factor combinations: ``cross`` or ``around`` the centre (times every combination of the
    ``crossed`` factors), then ``include``; no duplicates."""
    centre = {k: v[0] for k, v in factors.items()}
    rest = {k: v for k, v in factors.items() if k not in crossed}
    if design == "cross":
        combos = [dict(zip(factors, values)) for values in itertools.product(*factors.values())]
    else:
        sweep = [{}] + [{k: v} for k, values in rest.items() for v in values[1:]]
        combos = [{**centre, **dict(zip(crossed, values)), **change} for change in sweep
                  for values in itertools.product(*(factors[k] for k in crossed))]
    for entry in include:  # its lists cross; crossed factors the entry leaves open take all their values
        given = {**{k: factors[k] for k in crossed if k not in entry}, **entry}
        combos += [{**centre, **dict(zip(given, values))} for values in itertools.product(*given.values())]
    unique = {json.dumps(c, sort_keys=True): c for c in combos}
    return list(unique.values())


def _fail(path: Path, key: str, message: str) -> StudyError:
    return StudyError(f"{path}: {key}: {message}")


def _key(parts) -> str:
    """``quick.workers[1]`` for the path ``("quick", "workers", 1)``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def _schema_error(path: Path, error: jsonschema.ValidationError) -> StudyError:
    if error.validator == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(known))
        return _fail(path, _key([*error.absolute_path, extra[0]]), f"unknown key; known keys: {', '.join(known)}")
    if error.validator == "not":
        return _fail(path, "messages/batches, batch_rows/batch_rows_per_worker", "give only one of each pair")
    key = _key(error.absolute_path) or "(top level)"
    if error.validator == "oneOf" and error.context:  # say what the item (not the list) got wrong
        error = jsonschema.exceptions.best_match(error.context)
    return _fail(path, key, error.message)


def _check_names(path: Path, spec: dict) -> None:
    """What the schema cannot know: registered apps and schemes, workloads that parse and suit the apps
    (in the study's own factors, its ``include`` entries and its profiles, each named in the error)."""
    blocks = {"": {}, **{f"include[{i}].": e for i, e in enumerate(spec.get("include", []))}}
    for profile in ("quick", "full"):
        changes = spec.get(profile, {})
        blocks[f"{profile}."] = {k: v for k, v in changes.items() if k != "include"}
        blocks.update({f"{profile}.include[{i}].": {**changes, **e} for i, e in enumerate(changes.get("include", []))})
    for prefix, block in blocks.items():
        _check_block(path, {**spec, **{k: _as_list(v) for k, v in block.items()}}, prefix)


def _check_block(path: Path, spec: dict, prefix: str) -> None:
    import skewbench.schemes  # noqa: F401  (registers every scheme)
    from skewbench.bench.apps import APPS, make_app
    from skewbench.scheme import REGISTRY, make_scheme, parse_params
    from skewbench.workloads import WorkloadError, parse

    for app in spec["apps"]:
        if app not in APPS:
            raise _fail(path, prefix + "apps", f"unknown app {app!r}; known apps: {', '.join(sorted(APPS))}")
    for scheme in spec["schemes"]:
        if scheme not in REGISTRY:
            raise _fail(path, prefix + "schemes", f"unknown scheme {scheme!r}; see `skewbench schemes`")
    for params in spec["params"]:  # a block's parameters are for each of its schemes
        for scheme in spec["schemes"]:
            try:
                make_scheme(scheme, 2, **parse_params(params))
            except (TypeError, ValueError) as exc:
                raise _fail(path, prefix + "params", f"scheme {scheme!r}: {exc}") from None
    for schedule in filter(None, spec["schedule"]):
        try:
            bounds.check_schedule(parse_schedule(schedule), _WORKERS, bounds.MAX_BATCHES)
        except ValueError as exc:
            raise _fail(path, prefix + "schedule", str(exc)) from None
    for levers in spec["levers"]:
        try:
            parse_levers(levers)
        except LeverError as exc:
            raise _fail(path, prefix + "levers", str(exc)) from None
    for faults in spec["faults"]:
        try:
            struck = parse_faults(faults)
        except FaultError as exc:
            raise _fail(path, prefix + "faults", str(exc)) from None
        if any(f.kind == "driver" for f in struck):
            raise _fail(path, prefix + "faults", "no driver fault in a bench, whose runs share one driver: use "
                                                 "`skewbench run --faults driver@...`")
        if any(f.kind == "broker" for f in struck) and spec["ingest"] != ["locust"]:
            raise _fail(path, prefix + "faults", "a broker fault needs ingest: locust (and only it)")
    try:
        check_speeds(spec["slow"], spec["workers"])
    except SpeedError as exc:
        raise _fail(path, prefix + "slow", str(exc)) from None
    if any(spec["aggregation_period"]) and set(spec["apps"]) != {"wordcount"}:
        raise _fail(path, prefix + "aggregation_period", "applies to wordcount only")
    for spec_text in (w for w in spec["workloads"] if w):
        for app in spec["apps"]:
            try:
                make_app(app).check(make_app(app).prepare(parse(spec_text, messages=1000, seed=0)))
            except (WorkloadError, ValueError) as exc:
                raise _fail(path, prefix + "workloads", str(exc)) from None


def _check_live(study: Study) -> None:
    """Live routing's factors, point by point in every profile: what ``skewbench run`` would refuse."""
    from skewbench.bench.driver import config_of
    from skewbench.bench.spark.run import check_live
    from skewbench.scheme import make_scheme, parse_params

    spec = study.spec
    blocks = [spec, *spec.get("include", []), *(spec.get(p, {}) for p in ("quick", "full")),
              *(entry for p in ("quick", "full") for entry in spec.get(p, {}).get("include", []))]
    if all(_as_list(block.get(k, static)) == [static] for block in blocks for k, static in STATIC.items()):
        return  # routing never changes in this study
    offered = 1.0 if "offered_rate" in spec else None  # a calibrated rate: open loop, > 0
    for profile in ("default", "quick", "full"):
        for point in study.points(profile, rate=offered):
            if all(getattr(point, k) == static for k, static in STATIC.items()):
                continue
            try:
                check_live(config_of(point, Path()), make_scheme(point.scheme, point.workers, seed=point.seed,
                                                                 **parse_params(point.params)))
            except ValueError as exc:
                key = "rebalance_every" if point.rebalance_every else "schedule"
                where = f"{profile} profile, " if profile != "default" else ""
                raise _fail(study.path, key, f"{where}{point.app} {point.scheme}: {exc}") from None


def load(path: str | Path) -> Study:
    """Read and validate one study file (:class:`StudyError` on the first problem)."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StudyError(f"{path}: cannot read the study file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise StudyError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8") from None
    except yaml.YAMLError as exc:
        raise StudyError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    return from_spec(doc, path)


def from_spec(doc, path: Path) -> Study:
    """A study from its parsed contents (a study file's, or one a program designs), validated as :func:`load`
    does; ``path`` names it in errors."""
    if not isinstance(doc, dict):
        raise StudyError(f"{path}: a study file is a mapping of keys (name, apps, schemes, workers, ...)")
    if doc.get("kind") == "api":
        raise StudyError(f"{path}: an API study (kind: api), of skewbench.spark in a user's job: run it with "
                         f"`skewbench api-bench {path}`")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(SCHEMA).iter_errors(doc))
    if error is not None:
        raise _schema_error(path, error)
    found = bounds.non_finite(doc)  # JSON Schema's ranges let NaN through
    if found:
        raise _fail(path, _key(found[0]), f"must be a finite number, got {found[1]}")
    spec = {**DEFAULTS, **doc}
    spec = {k: _as_list(v) if k in FACTORS else v for k, v in spec.items()}
    if "batch_rows" not in spec and "batch_rows_per_worker" not in spec:
        spec["batch_rows"] = [max(1, spec.get("messages", 50_000) // 10)]
    if "messages" in spec:
        spec.pop("batches")
    _check_names(path, spec)
    study = Study(path, spec)
    _check_live(study)
    return study


def load_all(paths: list[str | Path]) -> list[Study]:
    """Several study files: names unique, ``offered_rate`` naming a study loaded before it."""
    studies: list[Study] = []
    for path in paths:
        study = load(path)
        if any(s.name == study.name for s in studies):
            raise _fail(study.path, "name", f"another study file is also named {study.name!r}")
        source = study.spec.get("offered_rate")
        if source and not any(s.name == source["study"] for s in studies):
            raise _fail(study.path, "offered_rate.study",
                        f"study {source['study']!r} measures the rate: give its file before this one")
        studies.append(study)
    return studies
