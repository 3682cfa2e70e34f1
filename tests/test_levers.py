"""The engine's levers: lever sets, their settings, and the ``levers`` factor of study files.

Runs with each lever set are checked on Spark in ``tests/spark/test_run.py`` (same answers, ``.crc`` files
only without the levers) and measured in ``bench/studies/levers.yaml``.
"""
import json
from pathlib import Path

import pytest

from skewbench.bench.spark import engine
from skewbench.bench.studyfile import Point, Study, StudyError, from_spec, load

ROOT = Path(__file__).resolve().parents[1]
KEPT = ROOT / "reports" / "bench-20261126"  # the last kept bench made before levers existed


class RecordingConf:
    """What ``apply`` leaves in a session's runtime configuration."""

    def __init__(self, **settings):
        self.settings = dict(settings)

    def set(self, key, value):
        self.settings[key] = value

    def unset(self, key):
        self.settings.pop(key, None)


class Session:
    def __init__(self, **settings):
        self.conf = RecordingConf(**settings)


@pytest.mark.parametrize("spec,levers", [("none", ()), ("all", tuple(engine.LEVERS)),
                                         ("no-crc+fs-checkpoints", ("fs-checkpoints", "no-crc"))])
def test_a_lever_set_names_its_levers_in_one_order(spec, levers):
    assert engine.parse(spec) == levers
    assert engine.parse(engine.canonical(spec)) == levers


@pytest.mark.parametrize("spec", ["", "nope", "no-crc+nope", "all+no-crc", "+"])
def test_an_unknown_lever_says_which_levers_exist(spec):
    with pytest.raises(engine.LeverError, match="fs-checkpoints, no-crc, no-fork"):
        engine.parse(spec)


def test_no_fork_replaces_no_crc_file_system_and_both_turn_the_cache_off():
    both = engine.settings("no-crc+no-fork")
    assert both["fs.file.impl"] == engine.NIO_FS_CLASS
    assert both["fs.file.impl.disable.cache"] == "true"
    assert "fs.file.impl" not in engine.settings("fs-checkpoints+unload-on-commit")


def test_apply_switches_a_session_between_lever_sets():
    spark = Session(**{"spark.sql.shuffle.partitions": "4"})
    engine.apply(spark, "all")
    assert spark.conf.settings == {"spark.sql.shuffle.partitions": "4", **engine.settings("all")}
    engine.apply(spark, "fs-checkpoints")
    assert spark.conf.settings == {"spark.sql.shuffle.partitions": "4", **engine.settings("fs-checkpoints")}
    engine.apply(spark, "none")
    assert spark.conf.settings == {"spark.sql.shuffle.partitions": "4"}


def test_the_java_class_is_the_one_no_fork_names():
    source = engine.JAVA_SOURCE.read_text()
    package, name = engine.NIO_FS_CLASS.rsplit(".", 1)
    assert f"package {package};" in source and f"public class {name} extends RawLocalFileSystem" in source


def _spec(**changes) -> dict:
    return {"name": "t", "apps": "wordcount", "schemes": "kg", "workers": 2, "messages": 1000, **changes}


def test_studies_run_the_kept_levers_by_default_and_cross_lever_sets():
    assert {p.levers for p in from_spec(_spec(), Path("t.yaml")).points()} == {"+".join(engine.KEPT)}
    study = from_spec(_spec(levers=["none", "no-crc+fs-checkpoints"]), Path("t.yaml"))
    points = study.points()
    assert [p.levers for p in points] == ["none", "fs-checkpoints+no-crc"]
    assert len({p.name for p in points}) == 2


def test_a_bad_lever_in_a_study_names_the_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(_spec(quick={"levers": ["all", "turbo"]})))
    with pytest.raises(StudyError, match=r"bad.yaml: quick.levers: unknown lever 'turbo'"):
        load(path)


def test_studies_with_a_task_per_worker_run_last_in_a_bench():
    """A lever set without ``pack`` leaves an idle Python worker per task, which every later run would
    meet: such a study runs after all others, the sustainable searches included (bench.driver._run_plan)."""
    from skewbench.bench.driver import _crowds, _phases

    packed = from_spec(_spec(name="packed"), Path("p.yaml"))
    crowding = from_spec(_spec(name="crowding", levers=["default"], include=[{"levers": "none"}]), Path("c.yaml"))
    offered = from_spec(_spec(name="offered", offered_rate={"study": "packed", "scheme": "kg", "delay_ms": 0}),
                        Path("o.yaml"))
    assert not _crowds(packed) and _crowds(crowding) and not _crowds(offered)
    phases = _phases([crowding, packed, offered])
    assert [[s.name for s in phase] for phase in phases][1:] == [["packed"], ["offered"], ["crowding"]]


def test_levers_do_not_change_where_messages_go():
    from skewbench.bench.prediction import routed

    point = from_spec(_spec(), Path("t.yaml")).points()[0]
    off = Point(**{**point.__dict__, "levers": "none"})
    assert routed(point) == routed(off)


@pytest.mark.skipif(not (KEPT / "plan.json").exists(), reason="the kept bench is not in this checkout")
def test_runs_made_before_levers_keep_their_names():
    """A kept bench's plan has no levers: its points are Spark as configured, named as when they ran."""
    plan = json.loads((KEPT / "plan.json").read_text())
    points = [p for spec in plan["studies"].values() if not spec.get("offered_rate")  # (rates measured in the bench)
              for p in Study(KEPT / "plan.json", spec).points(plan["profile"])]
    assert points and {p.levers for p in points} == {"none"}
    assert all((KEPT / "runs" / p.name).is_dir() for p in points)


@pytest.mark.parametrize("spec,mode,tasks", [("default", "sleep", 2), ("pack", "sleep", 2), ("default", "spin", 100),
                                             ("fs-checkpoints+no-fork", "sleep", 100), ("none", "sleep", 100)])
def test_pack_puts_sleeping_workers_in_a_task_per_core(spec, mode, tasks):
    assert engine.worker_tasks(spec, 100, 2, mode) == tasks
    assert engine.worker_tasks(spec, 1, 2, mode) == 1  # never more tasks than workers


def test_a_packed_worker_sleeps_until_its_tasks_start_plus_its_own_work():
    """Sharing a task, a worker ends its delay when it would have on a slot of its own, or at once if the
    workers before it took longer; the seconds it reports count from the task's start."""
    import time

    from skewbench.bench.spark.delay import burn

    began = time.perf_counter()
    on_time = burn(10, 0.01, "sleep", since=began - 0.05)  # 0.1 s of work, of which 0.05 s already passed
    assert on_time >= 0.1 and time.perf_counter() - began >= 0.05 - 1e-3
    began = time.perf_counter()
    late = burn(10, 0.01, "sleep", since=began - 0.5)  # its 0.1 s ended long ago: no sleep
    assert late >= 0.5 and time.perf_counter() - began < 0.3


class Counting:
    """The least an app does for :func:`work_batch`: it keeps how many rows it handled."""

    def process(self, state, rows):
        return state + len(rows), None

    def state_entries(self, state):
        return 1


def test_a_deferred_worker_handles_its_rows_at_once_and_owes_its_sleep_to_the_tasks_closing_group():
    """defer-sleep: the worker's record says its work ends at the task's start plus its delay and handling,
    the closing group sleeps until then, and a worker that comes after the closing group sleeps itself."""
    import time

    import pandas as pd

    from skewbench.bench.spark.workers import close, work_batch

    rows = lambda n: pd.DataFrame({"seq": range(n), "role": "store", "t_intended": 0.0})  # noqa: E731
    clock = {"since": time.perf_counter(), "defers": True, "until": 0.0, "closed": False}
    state, record = work_batch(Counting(), 0, rows(10), 0.02, "sleep", 0, 0, clock)
    assert state == 10 and not clock["closed"]
    assert time.perf_counter() < clock["since"] + 0.2 <= clock["until"]  # 0.2 s of delay owed, none slept
    assert record["delay_actual"] >= 0.2 - 1e-6 and record["t_end"] > time.time()  # float rounding of since + 0.2
    close(clock)
    assert clock["closed"] and time.perf_counter() >= clock["until"]
    work_batch(Counting(), 0, rows(20), 0.02, "sleep", 1, 0, clock)  # after its task's closing group
    assert time.perf_counter() >= clock["since"] + 0.4


@pytest.mark.parametrize("spec,tasks,closers", [("all", 2, 2), ("pack+defer-sleep", 2, 2), ("pack", 2, 0),
                                                ("defer-sleep", 100, 0), ("all", 100, 0)])
def test_a_closing_group_per_task_only_when_deferred_workers_share_tasks(spec, tasks, closers):
    assert engine.closers(spec, 100, tasks) == closers
