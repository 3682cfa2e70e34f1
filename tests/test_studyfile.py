"""Study files: the issue's example works as written, designs expand as documented, and every bad file
fails with one line naming the file and the key (exit 2, nothing run)."""
import textwrap
from pathlib import Path

import pytest

from skewbench.bench.studyfile import StudyError, load, load_all
from skewbench.cli import main

STUDIES = Path(__file__).resolve().parents[1] / "bench" / "studies"
TINY = """\
name: tiny
apps: [wordcount, selfjoin]
schemes: [kg, pkg]
workers: [4]
sources: [1, 2]
delay_ms: [0.2]
workloads: ["zipf:z=1.2,keys=2000"]
messages: 20000
batch_rows: 4000
repeats: 1
design: cross
"""


def write(tmp_path: Path, text: str, name: str = "study.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_the_issues_example_works_as_written(tmp_path):
    points = load(write(tmp_path, TINY)).points()
    assert len(points) == 2 * 2 * 2
    assert {(p.app, p.scheme, p.sources) for p in points} == {(a, s, n) for a in ("wordcount", "selfjoin")
                                                             for s in ("kg", "pkg") for n in (1, 2)}
    assert {(p.workers, p.delay_ms, p.messages, p.batch_rows, p.seed) for p in points} == {(4, 0.2, 20000, 4000, 0)}
    assert len({p.name for p in points}) == len(points)
    assert load(STUDIES / "tiny.yaml").points() == load(write(tmp_path, TINY, "again.yaml")).points()


def test_around_varies_one_factor_at_a_time_and_include_adds_points(tmp_path):
    study = load(write(tmp_path, """\
        name: around
        apps: wordcount
        schemes: [pkg, kg, sg]
        workers: [10, 20, 50]
        sources: [5, 1]
        delay_ms: 0.4
        batch_rows_per_worker: 100
        batches: 4
        repeats: 2
        design: around
        include: [{schemes: kg, workers: 50}]
        """))
    combos = {(p.scheme, p.workers, p.sources) for p in study.points()}
    assert combos == {("pkg", 10, 5), ("kg", 10, 5), ("sg", 10, 5), ("pkg", 20, 5), ("pkg", 50, 5), ("pkg", 10, 1),
                      ("kg", 50, 5)}
    assert len(study.points()) == 2 * len(combos)
    assert all(p.batch_rows == 100 * p.workers and p.messages == 4 * p.batch_rows for p in study.points())
    assert {p.workload for p in study.points()} == {"wp"}  # the app's default


def test_an_include_entry_crosses_its_lists(tmp_path):
    study = load(write(tmp_path, TINY.replace("design: cross", "design: around") + """\
include: [{apps: [selfjoin, naivebayes], schemes: [kg, sg], workers: [4, 8], delay_ms: 0}]
"""))
    extra = {(p.app, p.scheme, p.workers) for p in study.points() if p.delay_ms == 0}
    assert extra == {(a, s, w) for a in ("selfjoin", "naivebayes") for s in ("kg", "sg") for w in (4, 8)}
    assert {p.sources for p in study.points() if p.delay_ms == 0} == {1}  # the rest at the centre


def test_cross_with_sweeps_every_scheme_around_the_centre(tmp_path):
    study = load(write(tmp_path, """\
        name: sweep
        apps: wordcount
        schemes: [pkg, dkg]
        workers: [10, 50]
        workloads: ["country:skew=0.68", "country:skew=0.9"]
        delay_ms: 1
        design: around
        cross_with: [schemes]
        """))
    combos = {(p.scheme, p.workers, p.workload[-4:]) for p in study.points()}
    assert combos == {(s, w, k) for s in ("pkg", "dkg") for w, k in ((10, "0.68"), (50, "0.68"), (10, "=0.9"))}
    assert len(study.points()) == len(combos)


def test_quick_replaces_keys_for_a_smoke_run(tmp_path):
    study = load(write(tmp_path, TINY + "quick: {schemes: kg, batch_rows: 1000, messages: 3000}\n"))
    quick = study.points("quick")
    assert {p.scheme for p in quick} == {"kg"} and {(p.messages, p.batch_rows) for p in quick} == {(3000, 1000)}
    assert len(study.points()) == 8  # the full plan is unchanged


def test_every_shipped_study_loads_and_fits_the_bench_cluster():
    paths = [p for p in sorted(STUDIES.glob("*.yaml")) if "kind: api" not in p.read_text()]  # api-bench's
    order = ["engine", "matrix", "storm", "offered", "aggregation", "efficiency"]
    studies = load_all([STUDIES / f"{n}.yaml" for n in order] + [p for p in paths if p.stem not in order])
    assert {s.name for s in studies} == {p.stem for p in paths}
    for study in studies:
        for profile in ("quick", "default", "full"):
            assert max(p.workers for p in study.points(profile)) <= 100  # make bench's 2 x 50 slots


def test_the_quick_profile_is_a_smoke_run_of_every_default_study():
    """make bench QUICK=1: every default study (the Makefile's STUDIES), app and a few schemes, few and small runs."""
    names = next(line for line in (STUDIES.parents[1] / "Makefile").read_text().splitlines()
                 if line.startswith("STUDIES")).split("?=")[1].split()
    studies = load_all([STUDIES / f"{n}.yaml" for n in names])
    points = {s.name: s.points("quick", rate=1000.0 if s.spec.get("offered_rate") else None) for s in studies}
    assert len(names) == 18 and all(points.values())  # every study at least once
    every = [p for ps in points.values() for p in ps]
    assert {p.app for p in every} == {"wordcount", "selfjoin", "naivebayes"} and len({p.scheme for p in every}) >= 5
    assert len(every) <= 30 and max(p.messages for p in every) <= 30_000
    search = next(s for s in studies if s.spec.get("sustainable")).profiled("quick")["sustainable"]
    assert search["runs"] <= 2 and search["seconds"] <= 5  # the sustainable search: two short runs


def test_default_profile_covers_every_app_scheme_w_and_s():
    import skewbench.schemes  # noqa: F401
    from skewbench.scheme import REGISTRY

    points = [p for s in load_all([STUDIES / "engine.yaml", STUDIES / "matrix.yaml"]) for p in s.points()]
    runnable = set(REGISTRY)  # the pipeline runs every scheme
    assert {p.app for p in points} == {"wordcount", "selfjoin", "naivebayes"}
    assert runnable - {"mixed-brute"} <= {p.scheme for p in points}
    assert {10, 20, 50, 100} <= {p.workers for p in points} and {1, 5, 10, 20} <= {p.sources for p in points}
    every = {(a, s, w) for a in ("selfjoin", "naivebayes") for s in runnable - {"mixed-brute"} for w in (10, 50)}
    assert every <= {(p.app, p.scheme, p.workers) for p in points}  # the issue's correctness cells
    whole = load(STUDIES / "matrix.yaml").points("full")  # the whole matrix, for the simulator or a big cluster
    cells = {(p.app, p.scheme, p.workers, p.sources, p.delay_ms, p.workload) for p in whole}
    assert len(cells) == len(whole) == 3 * len(runnable - {"mixed-brute"}) * 4 * 4 * 3 * 2


BAD = {
    "unknown key": (TINY + "colour: red\n", "study.yaml: colour: unknown key; known keys: "),
    "unknown app": (TINY.replace("selfjoin]", "sort]"), "study.yaml: apps: unknown app 'sort'"),
    "unknown scheme": (TINY.replace("[kg, pkg]", "[kg, nope]"), "study.yaml: schemes: unknown scheme 'nope'"),
    "W zero": (TINY.replace("workers: [4]", "workers: [0]"), "study.yaml: workers[0]: 0 is less than the minimum of 1"),
    "W too large": (TINY.replace("workers: [4]", "workers: [4, 5000]"), "study.yaml: workers[1]: 5000 is greater"),
    "W not a number": (TINY.replace("workers: [4]", "workers: [four]"), "study.yaml: workers[0]: 'four' is not of type"),
    "S zero": (TINY.replace("sources: [1, 2]", "sources: 0"), "study.yaml: sources: 0 is less than the minimum"),
    "negative delay": (TINY.replace("[0.2]", "[-1]"), "study.yaml: delay_ms[0]: -1 is less than the minimum of 0"),
    "huge delay": (TINY.replace("[0.2]", "[500]"), "study.yaml: delay_ms[0]: 500 is greater than the maximum of 100"),
    "workload": (TINY.replace("z=1.2", "z=banana"), "study.yaml: workloads: zipf:"),
    "unknown workload": (TINY.replace("zipf:", "zipfx:"), "study.yaml: workloads: unknown workload 'zipfx'"),
    "design": (TINY.replace("design: cross", "design: random"), "study.yaml: design: 'random' is not one of"),
    "cross_with": (TINY + "cross_with: [colour]\n", "study.yaml: cross_with[0]: 'colour' is not one of"),
    "missing key": (TINY.replace("workers: [4]\n", ""), "study.yaml: (top level): 'workers' is a required property"),
    "both sizes": (TINY + "batches: 3\n", "study.yaml: messages/batches, batch_rows/batch_rows_per_worker: give only"),
    "period": (TINY + "aggregation_period: [2]\n", "study.yaml: aggregation_period: applies to wordcount only"),
    "quick key": (TINY + "quick: {colour: red}\n", "study.yaml: quick.colour: unknown key"),
    "include scheme": (TINY + "include: [{schemes: [kg, nope]}]\n", "study.yaml: include[0].schemes: unknown scheme 'nope'"),
    "include app": (TINY + "include: [{apps: sort}]\n", "study.yaml: include[0].apps: unknown app 'sort'"),
    "quick scheme": (TINY + "quick: {schemes: nope}\n", "study.yaml: quick.schemes: unknown scheme 'nope'"),
    "full include workload": (TINY + "full: {include: [{workloads: 'zipf:z=x'}]}\n", "study.yaml: full.include[0].workloads:"),
    "not yaml": ("name: [tiny\n", "study.yaml: not valid YAML"),
    "schedule": (TINY + "schedule: '3:x'\n", "study.yaml: schedule: a schedule is BATCH:W pairs"),
    "schedule W": (TINY + "schedule: '3:0'\n", "study.yaml: schedule: W must be >= 1 in a schedule"),
    "rebalance a static scheme": (TINY.replace("[kg, pkg]", "[mixed, kg]") + "rebalance_every: 2\n",
                                  "study.yaml: rebalance_every: wordcount kg: scheme 'kg' cannot rebalance"),
    "negative interval": (TINY + "rebalance_every: -1\n", "study.yaml: rebalance_every: -1 is less than the minimum"),
    "migration": (TINY + "migration: lazy\n", "study.yaml: migration: 'lazy' is not one of"),
    "scheme parameter": (TINY.replace("[kg, pkg]", "consistent") + "params: ['vnodes=3', 'points=3']\n",
                         "study.yaml: params: scheme 'consistent': "),
    "parameter syntax": (TINY.replace("[kg, pkg]", "consistent") + "params: vnodes\n",
                         "study.yaml: params: scheme 'consistent': scheme parameters are NAME=VALUE pairs"),
    "live hash rebalancing": (TINY.replace("[kg, pkg]", "kg") + "full: {rebalance_every: 2}\n",
                              "study.yaml: rebalance_every: full profile, wordcount kg: scheme 'kg' cannot rebalance"),
    "not a mapping": ("- tiny\n", "study.yaml: a study file is a mapping"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_study_file_fails_in_one_line_naming_file_and_key(tmp_path, case, capsys):
    text, expected = BAD[case]
    path = write(tmp_path, text)
    with pytest.raises(StudyError) as caught:
        load(path)
    message = str(caught.value)
    assert expected in message and "\n" not in message and message.startswith(str(path))
    out = tmp_path / "out"
    assert main(["bench", str(path), "--out", str(out)]) == 2  # through the CLI: exit 2, nothing run
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and not out.exists()


def test_offered_rate_must_name_a_study_given_before(tmp_path):
    first = write(tmp_path, TINY, "a.yaml")
    second = write(tmp_path, TINY.replace("name: tiny", "name: other")
                   + "offered_rate: {study: tiny, scheme: kg, delay_ms: 0.2}\n", "b.yaml")
    assert [s.name for s in load_all([first, second])] == ["tiny", "other"]
    with pytest.raises(StudyError, match=r"b.yaml: offered_rate.study: study 'tiny' measures the rate"):
        load_all([second, first])
    with pytest.raises(StudyError, match=r"a.yaml: name: another study file is also named 'tiny'"):
        load_all([first, first])


def test_live_factors_name_their_runs_and_leave_static_names_as_they_were(tmp_path):
    """Live routing's factors cross like any other (how state moves only where routing changes); a static
    point's name is the one it had before they existed."""
    plain = TINY.replace("[kg, pkg]", "[consistent, mixed]").replace("sources: [1, 2]", "sources: 1")
    study = load(write(tmp_path, plain + "schedule: ['', '2:6']\nmigration: [all-at-once, fluid]\nfluid_keys: 50\n"))
    points = study.points()
    assert len(points) == 2 * 2 * (1 + 2) and len({p.name for p in points}) == len(points)
    static = [p for p in points if not p.schedule]
    assert all(p.live is None and p.migration == "all-at-once" and p.fluid_keys == 0 for p in static)
    assert {p.live.schedule[2] for p in points if p.schedule} == {6}
    before = {p.name for p in load(write(tmp_path, plain, "plain.yaml")).points()}
    assert {p.name for p in static} == before


def test_ingest_is_a_factor_and_the_bench_can_send_every_stream_through_the_broker(tmp_path):
    """``ingest: [engine, locust]`` crosses like any other factor (an engine run keeps its name from before);
    ``skewbench bench --ingest locust`` (Study.ingested) makes every run of a study, its includes and profiles
    locust's."""
    study = load(write(tmp_path, TINY + "ingest: [engine, locust]\nquick: {ingest: engine}\n"
                                        "include: [{schemes: sg, ingest: engine}]\n"))
    points = study.points()
    assert len(points) == 2 * 2 * 2 * 2 + 1 and {p.ingest for p in points} == {"engine", "locust"}
    before = {p.name for p in load(write(tmp_path, TINY, "plain.yaml")).points()}
    assert {p.name for p in points if p.ingest == "engine" and p.scheme != "sg"} == before
    through = study.ingested("locust")
    for profile in ("default", "quick"):
        assert {p.ingest for p in through.points(profile)} == {"locust"}, profile
    with pytest.raises(StudyError, match="ingest"):
        load(write(tmp_path, TINY + "ingest: kafka\n", "bad.yaml"))


def test_faults_are_a_factor_that_leaves_unfaulted_names_as_they_were(tmp_path):
    study = load(write(tmp_path, TINY + "faults: ['', 'worker@0.3+3']\n"))
    points = study.points()
    assert len(points) == 2 * 2 * 2 * 2 and {p.faults for p in points} == {"", "worker@0.3+3"}
    before = {p.name for p in load(write(tmp_path, TINY, "plain.yaml")).points()}
    assert {p.name for p in points if not p.faults} == before
    for faults, message in [("worker@2+1", "faults: fault 'worker@2\\+1': AT must be between 0 and 1"),
                            ("driver@0.5+1", "faults: no driver fault in a bench"),
                            ("broker@0.5+1", "faults: a broker fault needs ingest: locust")]:
        with pytest.raises(StudyError, match=f"bad.yaml: {message}"):
            load(write(tmp_path, TINY + f"faults: '{faults}'\n", "bad.yaml"))
    assert load(write(tmp_path, TINY + "faults: broker@0.5+1\ningest: locust\n", "broker.yaml")).points()


def test_missing_study_file(tmp_path):
    with pytest.raises(StudyError, match="nope.yaml: cannot read the study file"):
        load(tmp_path / "nope.yaml")


def test_a_bench_started_before_a_factor_existed_resumes(tmp_path):
    """A kept bench's plan.json lacks the factors added since (live routing, params): resuming it with
    today's study files, which load them at their defaults, is allowed; another study is still refused."""
    import json

    from skewbench.bench.driver import BenchError, _claim, _plan

    studies = load_all([STUDIES / "centre.yaml"])
    out = tmp_path / "bench"
    _claim(out, studies, "default", 0, False, None)
    plan = json.loads((out / "plan.json").read_text())
    for later in ("rebalance_every", "schedule", "migration", "fluid_keys", "params", "ingest"):
        del plan["studies"]["centre"][later]
    (out / "plan.json").write_text(json.dumps(plan))
    _claim(out, studies, "default", 0, True, None)
    plan["studies"]["centre"]["schemes"] = ["kg"]
    (out / "plan.json").write_text(json.dumps(plan))
    with pytest.raises(BenchError, match="studies differ"):
        _claim(out, studies, "default", 0, True, None)
    assert _plan(studies, "default", 0, None)["studies"]["centre"]["schedule"] == [""]
    (tmp_path / "tiny.yaml").write_text(TINY)  # sized by messages: its plan has no "batches" to fill in
    tiny = load_all([tmp_path / "tiny.yaml"])
    _claim(tmp_path / "tiny", tiny, "default", 0, False, None)
    _claim(tmp_path / "tiny", tiny, "default", 0, True, None)
