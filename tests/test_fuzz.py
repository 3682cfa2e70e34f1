"""Fuzzing what users give (hypothesis): every option of every ``skewbench`` command (read from its argparse
parser), every study-file field (from bench/studyfile.py's SCHEMA), every workload SPEC parameter and every
scheme parameter.  A malformed value — NaN, ±infinity, zero, negative, beyond its most, not a number, bytes
that are not UTF-8, empty or odd text — is refused with exit code 2 and one line on stderr, no traceback and
nothing written, before any work starts.

The commands run in this process (``skewbench.cli.main``), each from a cheap, valid command line with one value
made malformed.  Where a command would hand over to the cluster's Python or start the papers' simulations, a
tripwire fails the test instead: a value that slipped through never starts Spark or a long run.

Each option's classic bad values run every time (``test_*_classics``); hypothesis draws more.  ``make test``
draws few and the same ones each run; ``make fuzz`` (SKEWBENCH_FUZZ=1, tests/conftest.py) 20 times as many from a
fresh seed.
"""
from __future__ import annotations

import argparse
import functools
import gzip
import math
import os

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skewbench.schemes  # noqa: F401  (registers every scheme)
from skewbench import cli
from skewbench.bench import paper_study
from skewbench.bench.advise import KEPT_MODEL
from skewbench.bench.apps import APPS
from skewbench.bench.spark import engine, faults
from skewbench.bench.studyfile import SCHEMA
from skewbench.bounds import MAX_BATCHES, MAX_MESSAGES, Range
from skewbench.migration import parse_schedule
from skewbench.scheme import REGISTRY, _kinds, _signature
from skewbench.speeds import parse as parse_speeds
from skewbench.workloads import WorkloadError, available, parse
from skewbench.workloads.registry import bounds_of

EXAMPLES = 6 * (20 if os.environ.get("SKEWBENCH_FUZZ") == "1" else 1)
DRAWN = settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                               HealthCheck.too_slow, HealthCheck.filter_too_much])
SPEC = "zipf:z=1.2,keys=100"
# Not UTF-8: a byte in argv reaches Python as a surrogate (os.fsdecode), in a file as itself.
BYTE_ARG, BYTE_FILE = "caf\udce9", "café".encode("latin-1")


class Tripwire(AssertionError):
    """A malformed value got past the checks to where work starts."""


@pytest.fixture(autouse=True)
def tripwires(monkeypatch):
    def cluster(command, argv):
        raise Tripwire(f"`skewbench {command}` reached the cluster's Python with {argv}")

    def papers(*args, **kwargs):
        raise Tripwire("`skewbench study` started the papers' simulations")

    monkeypatch.setattr(cli, "_in_cluster_python", cluster)
    monkeypatch.setattr(paper_study, "run_experiment", papers)


def refused(capsys, tmp_path, argv: list[str]) -> str:
    """Run ``skewbench ARGV``; assert exit 2, one line on stderr and nothing written in ``tmp_path``; the line."""
    before = sorted(tmp_path.rglob("*"))
    code = cli.main(argv)
    _, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and "error: " in lines[0] and "Traceback" not in err, (argv, code, err)
    assert sorted(tmp_path.rglob("*")) == before, f"{argv} wrote files"
    return lines[0]


def parses(text: str, *casts) -> bool:
    try:
        for cast in casts:
            cast(text)
        return True
    except (ValueError, TypeError, OverflowError):
        return False


# -- malformed numbers, from a Range --------------------------------------------------------------------------

def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e18 else repr(float(value))


def outside_classics(range_: Range) -> list[str]:
    """The classic texts no number option of ``range_`` may take."""
    values = ["nan", "inf", "-inf", "", "abc", BYTE_ARG, "1" + "0" * 400, "--"]  # argparse once dropped "--opt=--"
    if range_.integer:
        values.append("1.5")
    if range_.low is not None:
        values += [_number(range_.low - 1), _number(range_.low - 0.5)] + ([_number(range_.low)] * range_.above)
    if range_.high is not None:
        values += [_number(range_.high + 1), _number(range_.high * 10)]
    return values


def outside(range_: Range) -> st.SearchStrategy[str]:
    """Texts no number option of ``range_`` may take: not numbers, below, above, fractions for an integer."""
    parts = [st.sampled_from(outside_classics(range_)),
             st.text(max_size=20).filter(lambda s: not parses(s, float)),
             st.sampled_from(["nan", "NaN", "-nan", "inf", "-inf", "+inf", "Infinity", "1e400", "-1e400", " ", "1,2",
                              "0x10"])]
    if range_.low is not None:
        low = range_.low
        parts += [st.integers(max_value=math.ceil(low) - 1).map(str),
                  st.floats(max_value=low, exclude_max=not range_.above, allow_nan=False).map(repr)]
    if range_.high is not None:
        high = range_.high
        parts += [st.integers(min_value=math.floor(high) + 1).map(str),
                  st.floats(min_value=high, exclude_min=True, allow_nan=False).map(repr)]
    if range_.integer:
        inside = st.floats(range_.low, range_.high, allow_nan=False)
        parts.append(inside.filter(lambda v: not v.is_integer()).map(repr))
    return st.one_of(parts)


# -- the commands: a cheap valid command line each, and a generator for every option's values ------------------

def baseline(command: str, tmp) -> list[str]:
    """A valid command line that refuses nothing: what a fuzzed option is set in."""
    if not (tmp / "results").exists():
        (tmp / "tiny.yaml").write_text("name: t\napps: wordcount\nschemes: kg\nworkers: 2\nmessages: 1000\n")
        (tmp / "api.yaml").write_text("kind: api\nname: a\np1: [0.2]\nworkers: 2\nsources: 1\nkeys: 10\n")
        (tmp / "results").mkdir()
    run = ["--app", "wordcount", "--scheme", "pkg", "--workers", "2", "--workload", SPEC, "--messages", "1000",
           "--out", f"{tmp}/run"]
    return {
        "simulate": ["--workload", SPEC, "--schemes", "kg", "--workers", "2", "--messages", "200",
                     "--out", f"{tmp}/sim.csv"],
        "speed": ["--workload", SPEC, "--messages", "200", "--workers", "2", "--sources", "1", "--schemes", "kg",
                  "--repeat", "1"],
        "run": run, "profile": run,
        "bench": ["--out", f"{tmp}/bench", "--", f"{tmp}/tiny.yaml"],
        "predict": ["--engine-model", str(KEPT_MODEL), "--out", f"{tmp}/p.csv", "--", f"{tmp}/tiny.yaml"],
        "advise": ["--workload", SPEC, "--schemes", "kg", "--workers", "2", "--sources", "1", "--messages", "200",
                   "--batch-rows-per-worker", "50"],
        "api-bench": ["--out", f"{tmp}/api", "--", f"{tmp}/api.yaml"],
        "study": ["--out", f"{tmp}/study", "--only", "pkg_fig2", "--messages", "1000"],
        "report": ["--", f"{tmp}/results"],
        "transcription": ["--", f"{tmp}/texts"],
        "schemes": [], "workloads": [],
    }[command]


def with_value(command: str, action: argparse.Action, value: str, tmp) -> list[str]:
    """The baseline of ``command`` with ``action``'s value replaced by ``value`` (``--opt=value``, so that a
    value such as ``-inf`` is not taken for an option)."""
    argv = baseline(command, tmp)
    if not action.option_strings:  # the positional after "--"
        return [command, *argv[:argv.index("--") + 1], value]
    option = action.option_strings[0]
    if option in argv:
        at = argv.index(option)
        del argv[at:at + 2]
    return [command, f"{option}={value}", *argv]


def files(tmp) -> dict[str, str]:
    """Files no option may take: missing, a folder, not UTF-8, NaN inside, the wrong kind."""
    found = {"missing": f"{tmp}/bad/none", "folder": f"{tmp}/bad", "latin1": f"{tmp}/bad/latin1.yaml",
             "nan.json": f"{tmp}/bad/nan.json", "study-nan": f"{tmp}/bad/study-nan.yaml",
             "api-nan": f"{tmp}/bad/api-nan.yaml", "empty": f"{tmp}/bad/empty", "latin1-results": f"{tmp}/bad/r"}
    if (tmp / "bad").exists():
        return found
    (tmp / "bad").mkdir()
    (tmp / "bad" / "latin1.yaml").write_bytes(b"name: t\ndescription: " + BYTE_FILE + b"\n")
    (tmp / "bad" / "nan.json").write_text('{"intercept_s": NaN, "coef_s": {}, "per_copy_s": {}, "runs": 1, '
                                          '"serial": 1.0}')
    (tmp / "bad" / "study-nan.yaml").write_text("name: t\napps: wordcount\nschemes: kg\nworkers: 2\ndelay_ms: .nan\n")
    (tmp / "bad" / "api-nan.yaml").write_text("kind: api\nname: a\np1: [.nan]\n")
    (tmp / "bad" / "empty").write_text("")
    (tmp / "bad" / "r").mkdir()
    (tmp / "bad" / "r" / "results.csv").write_bytes(b"scheme,workers\n" + BYTE_FILE + b",2\n")
    return found


BAD_NAMES = ["", "a\0b", "x" * 256, "d/" + "y" * 300 + "/f"]


def _input_files(tmp, *more: str):
    bad = files(tmp)
    return BAD_NAMES + [bad[k] for k in ("missing", "latin1", "empty", *more)]


def _outputs(tmp):
    files(tmp)
    return BAD_NAMES + [f"{tmp}/bad"]  # a folder holding files: results are never overwritten


def _engine_models(tmp):
    bad = files(tmp)
    return BAD_NAMES + [bad[k] for k in ("missing", "folder", "latin1", "nan.json", "empty")]


def _bad(valid) -> callable:
    """A filter keeping the texts ``valid`` refuses (it raises)."""
    def keep(text: str) -> bool:
        try:
            valid(text)
        except Exception:  # noqa: BLE001 (any refusal: the command must turn it into one line)
            return True
        return False
    return keep


def _schedule_refused(workers: Range, most_at: int):
    """A check that raises for the schedules a command refuses before any run (W out of ``workers``...)."""
    from skewbench.bounds import check_schedule

    return lambda text: check_schedule(parse_schedule(text), workers, most_at)


def _slow_refused(text: str) -> None:
    if not text.strip():
        raise ValueError("simulate --slow '' names no slow worker")
    parse_speeds(text, 2)


def _faults_refused(text: str) -> None:
    struck = faults.parse_all(text)
    if struck and all(f.kind == "worker" for f in struck):
        return
    if struck:
        raise ValueError("a broker fault without the broker, a driver fault of a run that cannot resume")


def _schemes_refused(text: str) -> None:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names or not set(names) <= set(REGISTRY):
        raise ValueError


@functools.cache
def _experiment_names() -> frozenset:
    return frozenset(paper_study.experiments(None))


def _int_lists(range_: Range) -> st.SearchStrategy[str]:
    bad = outside(range_).filter(lambda s: s.strip() and "," not in s)  # one bad item, not a list
    return st.one_of(bad, st.tuples(st.integers(1, 9).map(str), bad).map(",".join), st.sampled_from(["", ",", ", ,"]))


def _experiments(text: str) -> None:
    names = [n for n in text.split(",") if n.strip()]
    if not names or not set(names) <= _experiment_names():
        raise ValueError


def _spark_master(text: str) -> None:
    if not (text.startswith("spark://") and text.removeprefix("spark://").partition(":")[0].strip()):
        raise ValueError


#: Classic bad values (a list) and a strategy of more, for every option that is not a number of a Range nor a
#: choice, by the option's dest (command-specific ones as "command.dest"); each takes the test's tmp folder.
TEXT = {
    "workload": lambda tmp: (["", " ", "nope", "zipf:z=nan", "zipf:keys=1e12", "zipf:z", "zipf:zz=1", "wp:keys=5",
                              BYTE_ARG, f"file:path={tmp}/bad/none", "pageviews:path="],
                             st.text(max_size=30).filter(lambda s: s.partition(":")[0].strip() not in available())),
    "schemes": lambda tmp: (["", ",", " , ", "nope", "kg,nope", BYTE_ARG],
                            st.text(max_size=20).filter(_bad(_schemes_refused))),
    "simulate.workers": lambda tmp: (["", ",", "0", "5,0", "nan", "five", "-1", "1e999", "99999999"],
                                     _int_lists(cli.SIMULATED_WORKERS)),
    "simulate.sources": lambda tmp: (["", "0", "nan", "2,-1", "10001"], _int_lists(cli.SIMULATED_WORKERS)),
    "advise.workers": lambda tmp: (["", "0", "nan", "10,1001", "inf"], _int_lists(cli.CLUSTER_WORKERS)),
    "simulate.schedule": lambda tmp: (["", "nan", "50:nan", "50:0", "50:100000", "-1:3", "50", "x:y", "50:3:4"],
                                      st.text(max_size=20).filter(_bad(_schedule_refused(
                                          cli.SIMULATED_WORKERS, MAX_MESSAGES)))),
    "schedule": lambda tmp: (["", "nan", "3:nan", "3:0", "3:100000", "-1:3", "3", "x:y", "2000000:3"],
                             st.text(max_size=20).filter(_bad(_schedule_refused(cli.CLUSTER_WORKERS, MAX_BATCHES)))),
    "param": lambda tmp: (["", "kg.x=nan", "nodot", "kg.=1", ".x=1", "kg.x", "pkg.x=1", "kg.x=1", f"kg.x={BYTE_ARG}"],
                          st.text(max_size=20)),
    "simulate.slow": lambda tmp: (["", "1@nan", "1@inf", "1@0", "0@0.5", "3@0.5", "x", "%@0.5", "nan%@0.5", "inf%@0.5",
                                   "-5%@0.5"],
                                  st.text(max_size=12).filter(_bad(_slow_refused))),
    "slow": lambda tmp: (["1@nan", "1@inf", "1@0", "0@0.5", "3@0.5", "x", "%@0.5", "1@1e999"],
                         st.text(min_size=1, max_size=12).filter(lambda s: s.strip() and _bad(
                             lambda t: parse_speeds(t, 2))(s))),
    "params": lambda tmp: (["x", "theta=nan", "=1", "a=inf", "x=1", f"x={BYTE_ARG}"],
                           st.text(max_size=20).filter(lambda s: any(p.strip() for p in s.split(",")))),
    "faults": lambda tmp: (["x", "worker@1.2.3+5", "worker@.+5", "worker@0+5", "worker@1+5", "worker@0.5+601",
                            "worker@nan+1", "broker@0.5+1", "worker@0.5+1,worker@0.5+1"],
                           st.text(max_size=20).filter(_bad(_faults_refused))),
    "levers": lambda tmp: (["", "x", "+", "default+x", BYTE_ARG],
                           st.text(max_size=20).filter(_bad(engine.parse))),
    "app": lambda tmp: (["", "sort", BYTE_ARG, "Wordcount"], st.text(max_size=12).filter(lambda s: s not in APPS)),
    "scheme": lambda tmp: (["", "nope", BYTE_ARG, "KG"], st.text(max_size=12).filter(lambda s: s not in REGISTRY)),
    "master": lambda tmp: (["", "local", "http://x:7077", "spark://", "spark://:7077", BYTE_ARG],
                           st.text(max_size=20).filter(_bad(_spark_master))),
    "only": lambda tmp: (["", ",", "nope", "pkg_fig2,nope", "-", "-x:", BYTE_ARG],
                         st.text(max_size=20).filter(_bad(_experiments))),
    "out": lambda tmp: (_outputs(tmp), st.sampled_from(_outputs(tmp))),
    "timeseries": lambda tmp: (_outputs(tmp), st.sampled_from(_outputs(tmp))),
    "engine_model": lambda tmp: (_engine_models(tmp), st.sampled_from(_engine_models(tmp))),
    "studies": lambda tmp: (_input_files(tmp, "folder", "study-nan"),
                            st.sampled_from(_input_files(tmp, "folder", "study-nan"))),
    "study": lambda tmp: (_input_files(tmp, "folder", "api-nan"),
                          st.sampled_from(_input_files(tmp, "folder", "api-nan"))),
    "folder": lambda tmp: (_input_files(tmp, "latin1-results"), st.sampled_from(_input_files(tmp, "latin1-results"))),
    # a folder without the papers' texts too (the baseline's, tmp/texts, holds none: it never runs)
    "texts": lambda tmp: (_input_files(tmp, "folder"), st.sampled_from(_input_files(tmp, "folder"))),
}


def value_options() -> list[tuple[str, argparse.Action]]:
    """Every (command, action) of the parser that takes a value."""
    found = []
    for command, parser in cli.build_parser()._subparsers._group_actions[0].choices.items():
        for action in parser._actions:
            if action.nargs != 0 and not isinstance(action, argparse._HelpAction):
                found.append((command, action))
    return found


OPTIONS = value_options()


def generator(command: str, action: argparse.Action, tmp) -> tuple[list[str], st.SearchStrategy[str]]:
    """The option's classic bad values and a strategy of more (KeyError: it has none)."""
    range_ = getattr(action.type, "range", None)
    if range_ is not None:
        return outside_classics(range_), outside(range_)
    if action.choices:
        choices = list(action.choices)
        return (["", "--", BYTE_ARG, choices[0].upper(), choices[0] + " "],
                st.text(max_size=12).filter(lambda s: s not in choices))
    key = f"{command}.{action.dest}" if f"{command}.{action.dest}" in TEXT else action.dest
    return TEXT[key](tmp)


def test_every_option_that_takes_a_value_has_a_generator(tmp_path):
    """A new option fails here until it is given a Range (``cli._number``), choices or an entry in TEXT."""
    missing = []
    for command, action in OPTIONS:
        try:
            generator(command, action, tmp_path)
        except KeyError:
            missing.append(f"{command} {action.option_strings or action.dest}")
    assert not missing, f"no generator for {missing}"
    unbounded = [f"{c} {a.option_strings}" for c, a in OPTIONS if getattr(a.type, "range", Range(0, 1)).high is None]
    assert not unbounded, f"number options without a most: {unbounded}"


IDS = [f"{c}{'.' + a.dest}" for c, a in OPTIONS]


@pytest.mark.parametrize("command, action", OPTIONS, ids=IDS)
def test_option_classics_are_refused_in_one_line(capsys, tmp_path, command, action):
    classics, _ = generator(command, action, tmp_path)
    for value in classics:
        refused(capsys, tmp_path, with_value(command, action, value, tmp_path))


@pytest.mark.parametrize("command, action", OPTIONS, ids=IDS)
@DRAWN
@given(data=st.data())
def test_drawn_option_values_are_refused_in_one_line(capsys, tmp_path, command, action, data):
    value = data.draw(generator(command, action, tmp_path)[1], label="value")
    refused(capsys, tmp_path, with_value(command, action, value, tmp_path))


@pytest.mark.parametrize("command", sorted({c for c, _ in OPTIONS} - {"report", "transcription"}))
def test_every_baseline_is_valid(capsys, tmp_path, command):
    """What makes a fuzzed command line refused is its one malformed value: the line it was set in runs (or
    reaches the tripwire).  (``report`` and ``transcription`` have no value besides the folder the fuzz replaces.)"""
    try:
        code = cli.main([command, *baseline(command, tmp_path)])
    except Tripwire:
        return
    assert code == 0, capsys.readouterr().err


# -- study files: every field of the schema ---------------------------------------------------------------------

BASE_STUDY = {"name": "t", "apps": "wordcount", "schemes": "kg", "workers": 2, "messages": 1000}
NAN, INF = float("nan"), float("inf")


def _item(schema: dict) -> dict:
    """A factor's item schema (a factor is one value or a list of them)."""
    return schema["oneOf"][0] if "oneOf" in schema and schema["oneOf"][0].get("type") != "boolean" else schema


def _numbers_outside(schema: dict) -> list:
    integer = schema["type"] == "integer"
    values = [NAN, INF, -INF, "abc", "1e999", True, None, [], {}]
    if integer:
        values.append(1.5)
    if "minimum" in schema:
        values += [schema["minimum"] - 1, schema["minimum"] - 0.5]
    if "exclusiveMinimum" in schema:
        values.append(schema["exclusiveMinimum"])
    if "maximum" in schema:
        values += [schema["maximum"] + 1, schema["maximum"] * 10, 10**30]
    return values


#: Malformed values of the fields whose schema cannot say what they hold (names the library knows, SPECs, ...).
STUDY_TEXT = {
    "apps": ["sort", "", 5], "schemes": ["nope", "", 5],
    "workloads": ["zipf:z=nan", "zipf:keys=1e12", "zipf:rate=inf", "nope", "", 5],
    "levers": ["x", "+", "", 5], "schedule": ["3:nan", "3:0", "3:100000", "-1:3", "x", 5],
    "params": ["x=nan", "x", "theta=inf", 5], "faults": ["worker@1.2.3+5", "x@0.5+1", "driver@0.5+1", "worker@0+1", 5],
    "slow": ["1@nan", "3@0.5", "x", 5], "description": [5, NAN, ["x"]],
    "offered_rate": [{"study": "x", "scheme": "kg", "delay_ms": NAN}, {"study": "x"}, 5],
    "sustainable": [{"seconds": NAN}, {"seconds": INF}, {"seconds": 1}, {"runs": 0}, {"x": 1}, "yes"],
    "cross_with": [["colour"], "apps", ["apps", "apps"], [NAN]],
    "include": [[{"delay_ms": NAN}], [{"workers": 0}], [{"colour": 1}], [{"workloads": "zipf:z=nan"}], {"a": 1}],
    "quick": [{"delay_ms": NAN}, {"workers": 0}, {"colour": 1}, {"rate": INF}, 5],
    "full": [{"delay_ms": NAN}, {"batches": 1}, {"include": [{"delay_ms": INF}]}, 5],
    "engine": [5, "maybe", NAN],
}


def study_values(field: str) -> list:
    """Malformed values of a study file's field (KeyError: none known)."""
    schema = _item(SCHEMA["properties"][field])
    if field in STUDY_TEXT:
        values = STUDY_TEXT[field]
    elif schema.get("type") in ("integer", "number"):
        values = _numbers_outside(schema)
    elif "enum" in schema:
        values = ["nope", "", 5, NAN]
    elif "pattern" in schema:
        values = ["Bad Name", "", "-x", 5]
    else:
        raise KeyError(field)
    factor = "oneOf" in SCHEMA["properties"][field]
    return values + ([[], [values[0], values[0]]] if factor else [])


def study_file(tmp, field: str, value) -> str:
    spec = dict(BASE_STUDY)
    if field == "batches":
        spec.pop("messages")
    spec[field] = value
    path = tmp / "fuzzed.yaml"
    path.write_text(yaml.safe_dump(spec, allow_unicode=True))
    return str(path)


def test_every_study_field_has_a_generator():
    """A new field of the study file's schema fails here until study_values knows what it may not hold."""
    missing = []
    for field in SCHEMA["properties"]:
        try:
            study_values(field)
        except KeyError:
            missing.append(field)
    assert not missing, f"no malformed values for study-file fields {missing}"


@pytest.mark.parametrize("field", sorted(SCHEMA["properties"]))
def test_malformed_study_fields_are_refused_naming_file_and_key(capsys, tmp_path, field):
    (tmp_path / "in").mkdir()
    for value in study_values(field):
        path = study_file(tmp_path / "in", field, value)
        line = refused(capsys, tmp_path, ["bench", path, "--out", f"{tmp_path}/bench"])
        assert f"{path}: " in line and (field in line or "messages/batches" in line), (field, value, line)


@pytest.mark.parametrize("field", sorted(k for k, v in SCHEMA["properties"].items()
                                         if "string" in str(v) or k in STUDY_TEXT))
def test_study_fields_with_bytes_that_are_not_utf8_are_refused(capsys, tmp_path, field):
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / "bytes.yaml"
    path.write_bytes(yaml.safe_dump(BASE_STUDY).encode() + f"{field}: x".encode() + BYTE_FILE + b"\n")
    line = refused(capsys, tmp_path, ["bench", str(path), "--out", f"{tmp_path}/bench"])
    assert f"{path}: not UTF-8 text" in line


STUDY_FIELDS = st.sampled_from(sorted(SCHEMA["properties"]))
SCALARS = st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8)
YAML_VALUES = SCALARS | st.lists(SCALARS, max_size=3) | st.dictionaries(st.text(max_size=6), SCALARS, max_size=3)


@DRAWN
@given(field=STUDY_FIELDS, data=st.data())
def test_drawn_study_fields_load_or_are_refused_in_one_line(capsys, tmp_path, field, data):
    """Any YAML value in any field: the study is refused in one line naming the file, or it is valid (then the
    bench stops at the tripwire before the cluster, which this test counts as a valid study)."""
    value = data.draw(st.one_of(st.sampled_from(study_values(field)), YAML_VALUES), label="value")
    (tmp_path / "in").mkdir(exist_ok=True)
    path = study_file(tmp_path / "in", field, value)
    try:
        code = cli.main(["bench", path, "--out", f"{tmp_path}/bench-{field}"])
    except Tripwire:
        return  # a valid study: refused nothing, started nothing
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and f"{path}: " in err and "Traceback" not in err, (value, err)


# -- workload SPEC parameters ---------------------------------------------------------------------------------

def workload_files(tmp) -> dict[str, str]:
    if (tmp / "w").exists():
        return {"csv": f"{tmp}/w/t.csv", "pv": f"{tmp}/w/pv-0.txt"}
    (tmp / "w").mkdir()
    (tmp / "w" / "t.csv").write_text("word,t\na,0\nb,1\n")
    (tmp / "w" / "latin1.txt").write_bytes(b"a\n" + BYTE_FILE + b"\n")
    (tmp / "w" / "pv-0.txt").write_text("en A 3 10\n")
    (tmp / "w" / "pv-latin1.txt").write_bytes(b"en " + BYTE_FILE + b" 3 10\n")
    (tmp / "w" / "pv-huge.txt").write_text("en A 1000000000000 10\n")
    return {"csv": f"{tmp}/w/t.csv", "pv": f"{tmp}/w/pv-0.txt"}


#: Malformed text parameters (by workload.parameter), and the valid parameters the SPEC needs besides.
WORKLOAD_TEXT = {
    "file.path": ["", "/no/such.csv", "{tmp}/w", "{tmp}/w/latin1.txt"], "file.key": ["nope", "99", ""],
    "file.format": ["xls", "nan", BYTE_ARG], "file.time": ["nope", "word"],
    "pageviews.path": ["", "/no/such-*.gz", "{tmp}/w/pv-latin1.txt", "{tmp}/w/pv-huge.txt"],
    "lognormal.preset": ["LN3", "", BYTE_ARG], "graph.preset": ["lj2", "", BYTE_ARG],
    "wordfreq.lang": ["xx", "", BYTE_ARG], "wordfreq.wordlist": ["huge", ""], "docs.lang": ["xx", ""],
}
NEEDS = {"file": "path={csv},key=word", "pageviews": "path={pv}"}


def workload_values(name: str, param: str) -> list[str]:
    """Malformed values of a workload's parameter (KeyError: none known)."""
    default = available()[name][1][param]
    if isinstance(default, bool):
        return ["maybe", "2", "", "nan", BYTE_ARG]
    if isinstance(default, (int, float)):
        return outside_classics(bounds_of(name)[param])
    return WORKLOAD_TEXT[f"{name}.{param}"]


WORKLOAD_PARAMS = [(name, param) for name, (_, params) in sorted(available().items()) for param in params]


def test_every_workload_parameter_has_a_generator():
    missing = []
    for name, param in WORKLOAD_PARAMS:
        try:
            workload_values(name, param)
        except KeyError:
            missing.append(f"{name}.{param}")
    assert not missing, f"no malformed values for workload parameters {missing}"


def spec_with(tmp, name: str, param: str, value: str) -> str:
    needs = {k: v for k, _, v in (p.partition("=") for p in NEEDS.get(name, "").split(",") if p) if k != param}
    given = {**needs, param: value}
    return f"{name}:" + ",".join(f"{k}={v}" for k, v in given.items()).format(tmp=tmp, **workload_files(tmp))


@pytest.mark.parametrize("name, param", WORKLOAD_PARAMS, ids=[f"{n}.{p}" for n, p in WORKLOAD_PARAMS])
def test_malformed_workload_parameters_are_refused_in_one_line(capsys, tmp_path, name, param):
    for value in workload_values(name, param):
        spec = spec_with(tmp_path, name, param, value)
        line = refused(capsys, tmp_path, ["simulate", "--workload", spec, "--schemes", "kg", "--workers", "2",
                                          "--messages", "200", "--out", f"{tmp_path}/sim.csv"])
        assert name in line, (spec, line)


@pytest.mark.parametrize("name", sorted(available()))
def test_an_unknown_workload_parameter_is_refused(capsys, tmp_path, name):
    line = refused(capsys, tmp_path, ["simulate", "--workload", f"{name}:colour=red", "--schemes", "kg", "--workers",
                                      "2", "--out", f"{tmp_path}/sim.csv"])
    assert f"{name}: unknown parameter 'colour'" in line


NUMERIC_PARAMS = [(n, p) for n, p in WORKLOAD_PARAMS if p in bounds_of(n)]


@DRAWN
@given(which=st.sampled_from(NUMERIC_PARAMS), data=st.data())
def test_drawn_workload_numbers_are_refused_in_one_line(capsys, tmp_path, which, data):
    name, param = which
    value = data.draw(outside(bounds_of(name)[param]).filter(lambda s: "," not in s and "=" not in s), label="value")
    refused(capsys, tmp_path, ["simulate", "--workload", f"{name}:{param}={value}", "--schemes", "kg",
                               "--workers", "2", "--messages", "200", "--out", f"{tmp_path}/sim.csv"])


# -- scheme parameters ----------------------------------------------------------------------------------------

SCHEME_PARAMS = [(name, param) for name, cls in sorted(REGISTRY.items()) for param in _signature(cls)]


def scheme_values(name: str, param: str) -> list[str]:
    """Values of the wrong kind for a scheme's parameter, and numbers that are not finite."""
    kinds = _kinds(_signature(REGISTRY[name])[param].annotation)
    values = ["nan", "-inf"]
    if kinds & {int, float}:
        values += ["banana", BYTE_ARG]
    if kinds & {int, float} == {int}:
        values.append("1.5")
    if kinds & {int, float, str} == {str}:
        values += ["1.5", "7"]
    return values


@pytest.mark.parametrize("name, param", SCHEME_PARAMS, ids=[f"{n}.{p}" for n, p in SCHEME_PARAMS])
def test_scheme_parameters_of_the_wrong_kind_are_refused_in_one_line(capsys, tmp_path, name, param):
    for value in scheme_values(name, param):
        line = refused(capsys, tmp_path, ["simulate", "--workload", SPEC, "--schemes", name, "--workers", "2",
                                          "--messages", "200", f"--param={name}.{param}={value}",
                                          "--out", f"{tmp_path}/sim.csv"])
        assert param in line, (name, param, value, line)


@DRAWN
@given(which=st.sampled_from([(n, p) for n, p in SCHEME_PARAMS
                              if _kinds(_signature(REGISTRY[n])[p].annotation) & {int, float}]), data=st.data())
def test_drawn_text_for_numeric_scheme_parameters_is_refused(capsys, tmp_path, which, data):
    name, param = which
    value = data.draw(st.text(max_size=12).filter(lambda s: not parses(s.strip(), float) and "," not in s),
                      label="value")
    refused(capsys, tmp_path, ["simulate", "--workload", SPEC, "--schemes", name, "--workers", "2",
                               f"--param={name}.{param}={value}", "--out", f"{tmp_path}/sim.csv"])


# -- trace files: bytes that are not UTF-8 are refused, never merged by a lossy decode --------------------------

def page_view_keys(data: bytes) -> set[str] | None:
    """The keys a page-view file holds, read as Python's text mode reads lines; None when a line is not UTF-8 or
    not ``project page count bytes``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    keys = set()
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")[:-1]:
        fields = line.split()
        if not (len(fields) == 4 and fields[2].isascii() and fields[2].isdigit()):
            return None
        keys.add(f"{fields[0]}/{fields[1]}")
    return keys


@DRAWN
@given(pages=st.lists(st.binary(min_size=1, max_size=12).filter(lambda b: b"\n" not in b), min_size=1, max_size=8))
def test_page_view_keys_are_kept_exactly_or_the_file_is_refused(tmp_path, pages):
    """Bytes that are not UTF-8 are refused with the line, never decoded lossily into keys that two pages share."""
    data = b"".join(b"en " + page + b" 1 1\n" for page in pages)
    path = tmp_path / "pv-0.gz"
    path.write_bytes(gzip.compress(data))
    expected = page_view_keys(data)
    try:
        stream = parse(f"pageviews:path={path}")
    except WorkloadError as error:
        assert expected is None and "\n" not in str(error) and str(error).startswith("pageviews: "), error
        return
    assert expected is not None and set(stream.labels) == expected


@DRAWN
@given(keys=st.lists(st.binary(max_size=6), min_size=1, max_size=8))
def test_parquet_binary_keys_are_kept_exactly_or_the_file_is_refused(tmp_path, keys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "keys.parquet"
    pq.write_table(pa.table({"k": pa.array(keys, pa.binary())}), path)
    try:
        texts = [k.decode("utf-8") for k in keys]
    except UnicodeDecodeError:
        texts = None
    try:
        stream = parse(f"file:path={path},key=k")
    except WorkloadError as error:
        assert (texts is None or "" in texts) and "\n" not in str(error), error
        return
    assert texts is not None and list(stream.labels[stream.ids]) == texts
