"""``skewbench bench``: run study files on the Spark cluster, one tidy row per run, predictions beside.

``skewbench bench STUDY.yaml [STUDY.yaml ...] --out DIR [--resume] [--quick | --full] [--engine-model FILE]
[--warm-up-batches N] [--ingest engine|locust]``:

1. Loads and validates every study (:mod:`~skewbench.bench.studyfile`; ``--ingest locust`` sends every run's
   stream through the cluster's broker, :meth:`~skewbench.bench.studyfile.Study.ingested`) and checks the
   cluster has a task slot for every worker of the largest W, and a broker when a run needs one — before
   any run starts.
2. Runs every point in a seeded random order (so a slow drift of the machine does not line up with
   one factor), in three phases: engine calibration studies (``engine: true``), the others, then the
   studies whose offered rate another study measures (``offered_rate``).  One Spark application; a
   warm-up run of ``--warm-up-batches`` micro-batches first that is not reported.  Each run is a ``skewbench run``
   (:func:`skewbench.bench.spark.run.run`) kept in ``DIR/runs/<point name>``.  A bench without an
   engine study and without ``--engine-model`` first runs (or finds cached) the engine calibration
   its points need (:mod:`~skewbench.bench.calibration`), and says which model predicts it.
   A Ctrl-C stops it wherever it lands (:mod:`~skewbench.bench.interrupts`): exit 130, no run counted
   unless complete, ``--resume`` finishes it.
3. After every run: the simulator's prediction of the same point (:mod:`~skewbench.bench.prediction`,
   cached in ``DIR/sim/``), and ``DIR/results.csv.partial`` rebuilt from every complete run folder
   (at most once a minute: :data:`PARTIAL_EVERY_S`).
4. When all runs are done: ``DIR/results.csv`` (one row per passed run, :data:`COLUMNS` first) and a
   ``<study>.csv`` per study, each with provenance; ``DIR/failed.csv`` (:data:`FAILED_COLUMNS`): every failed
   run — an answer other than the reference's, other work per worker than the simulator's, a message
   counted twice, a message lost (:func:`run_failures`) — which enters no table, comparison, figure or
   fidelity row; ``DIR/engine_model.json`` (fitted on passed runs only); the paper comparisons the studies
   name (``<study>_vs_paper.json``, not for a study with a failed run); ``DIR/report.md``, its failed runs
   first.  ``skewbench bench`` then exits 1 when a run failed.

``skewbench report DIR --rebuild`` (:func:`rebuild`) derives the tables again from the run folders, with
this version's simulator, engine model and comparisons (e.g. after the model improved).

``--resume`` continues an interrupted bench (Ctrl-C, a crash, a reboot): the run folders are the
truth, so a finished run (complete, or failed with its reason) is never run twice and an interrupted one
(``.partial``) is run again;
``DIR/plan.json`` records the studies and options, and a resume with others is refused.
"""

from __future__ import annotations

import functools
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from skewbench.bench import scaleout, sustainable
from skewbench.bench.calibration import Calibration
from skewbench.bench.interrupts import deferred
from skewbench.bench.prediction import EngineModel, cached_work, predict
from skewbench.bench.progress import Progress
from skewbench.bench.provenance import FORMAT_VERSION
from skewbench.bench.spark.engine import DEFAULT as LEVERS_DEFAULT, canonical, uses
from skewbench.bench.spark.ingest import DELIVERIES
from skewbench.bench.studyfile import DEFAULTS, LATER_FACTORS, Point, Study, load_all
from skewbench.simulator.metrics import stddev_pct

#: The columns every results.csv starts with (the issue's minimum); more follow.
COLUMNS = ["study", "app", "scheme", "workers", "sources", "delay_ms", "workload", "seed", "correct", "throughput",
           "predicted_throughput", "latency_p50", "latency_p99", "max_over_mean", "counters", "engine_share"]
PARTS = ("before_workers", "workers_spread", "after_workers")


class BenchError(ValueError):
    """Bad input or environment: one line, exit code 2; nothing run, or (a full disk) the bench stopped
    between two runs, to be finished with ``--resume``."""


#: Free space a run must find on the results' disk before it starts.  A run writes up to 0.3 GB (its
#: outputs and checkpoint, removed once it is summarized) and Spark copies each run's stream into every
#: executor's application folder; a default bench that ran out of space died in the middle of a run.
MIN_FREE_BYTES = 2 * 1024**3
#: What a run leaves that the bench never reads again (the kept reports never had them).
SCRATCH = ("outputs", "checkpoint")


def bench(paths: list[str], out: Path, resume: bool = False, profile: str = "default", order_seed: int = 0,
          engine_model: Path | None = None, warm_up_batches: int | None = None, ingest: str | None = None,
          log=sys.stderr) -> Results:
    """Run the studies into ``out`` (see the module docstring); returns the tables of passed and failed runs.
    ``warm_up_batches``: the warm-up run's micro-batches (None: :data:`WARM_UP_BATCHES`); ``ingest``: every run's stream comes in so
    (``locust``: through the cluster's broker), whatever the study files say."""
    from skewbench.bench.spark.run import session

    warm_up = WARM_UP_BATCHES if warm_up_batches is None else warm_up_batches
    if warm_up < 0:
        raise BenchError(f"--warm-up-batches must be >= 0 (0: no warm-up), got {warm_up}")
    studies = [s.ingested(ingest) if ingest else s for s in load_all(paths)]
    given = given_model(engine_model, studies)
    url, slots = _cluster()
    if any(p.ingest == "locust" for s in studies for p in s.points(profile)):
        _check_broker()
    _check_faults({(p.faults, p.ingest) for s in studies for p in s.points(profile) if p.faults})
    _check_slots(max(p.live.widest(p.workers) if p.live else p.workers for s in studies for p in s.points(profile)),
                 url, slots)
    _claim(out, studies, profile, order_seed, resume, given)
    if _remaining(out, _phases(studies), profile) or _needs_calibration(out, studies):
        spark = session(url, "skewbench-bench")
        try:
            with deferred() as interrupts:
                _run_plan(spark, out, studies, profile, order_seed, slots, warm_up, interrupts, log)
        finally:
            spark.stop()
    else:  # a resumed bench whose runs are all complete (interrupted while it wrote its tables)
        print("every run is complete: writing the tables", file=log, flush=True)
    with deferred() as interrupts, interrupts.raising():
        return finish(out, studies, profile,
                      {"master": url, "slots": slots, "profile": profile, "order_seed": order_seed,
                       "warm_up_batches": warm_up})


def _run_plan(spark, out: Path, studies: list[Study], profile: str, order_seed: int, slots: int, warm_up: int,
              interrupts, log) -> None:
    """The warm-up, the engine calibration the bench still needs, every point not yet complete with the
    sustainable-throughput searches after the phases they need, and the studies that crowd the executors last."""
    phases = _phases(studies)
    calibration = _calibration(out, studies, profile, spark)
    todo = _remaining(out, phases, profile) + len(calibration.missing() if calibration else ())
    with Progress(todo + bool(warm_up)) as progress:
        if warm_up:
            progress.step("warm-up run (not reported)")
            _warm_up(spark, slots, warm_up)
        how = _calibrate(spark, out, calibration, progress, interrupts) if calibration else ""
        _announce_model(out, studies, how, log)

        def measure_all(phase: list[Study]) -> None:
            for point in _ordered(studies_points(phase, out, profile, studies), order_seed):
                if not _finished(out, point):
                    _measure(spark, out, point, studies, profile, interrupts, progress.step, _label(point))

        *phases, crowding = phases
        for phase in phases:  # (an offered study's points exist once the study it is offered from ran)
            measure_all(phase)
        with interrupts.raising():
            model = _model(out, studies, profile)  # the engine studies ran in the first phase
        for study in (s for s in studies if s.spec.get("sustainable")):
            for base in (p for p in study.points(profile) if _passed(out, p)):  # a failed peak starts no search
                while (point := _search(out, studies, profile, base, model)[1]) is not None:
                    _measure(spark, out, point, studies, profile, interrupts, progress.step,
                             _label(point) + f" (sustainable search of {base.name})")
        measure_all(crowding)  # last, as they leave idle Python workers behind (_crowds)


def _cluster() -> tuple[str, int]:
    from skewbench.bench.spark.run import Config, RunError, free_slots, master_status, master_url

    try:
        url = master_url(Config(app="wordcount", scheme="kg", workers=1, sources=1, delay_ms=0))
        return url, free_slots(master_status(url))
    except RunError as exc:
        raise BenchError(str(exc)) from None


def _check_slots(needed: int, url: str, slots: int) -> None:
    """:class:`BenchError` unless the cluster has a task slot for each of the widest point's ``needed`` workers."""
    if needed > slots:
        raise BenchError(f"W = {needed} needs {needed} task slots but the cluster at {url} has {slots} free: start "
                         f"it with more (make cluster-up WORKERS=2 CORES={-(-needed // 2)})")


def _check_broker() -> None:
    from skewbench.bench.broker import Broker, BrokerError
    from skewbench.bench.spark.run import conf_dir

    try:
        Broker.of(conf_dir()).client()
    except BrokerError as exc:
        raise BenchError(f"runs through the broker (ingest: locust): {exc}") from None


def _check_faults(faults: set[tuple[str, str]]) -> None:
    """The points' faults (spec, ingest) can be injected into this cluster (:func:`.faults.check`)."""
    from skewbench.bench.spark import faults as injected
    from skewbench.bench.spark.run import local_cluster_dir

    for spec, ingest in sorted(faults):
        try:
            injected.check(spec, ingest, local_cluster_dir())
        except injected.FaultError as exc:
            raise BenchError(f"faults: {exc}") from None


def _plan(studies: list[Study], profile: str, order_seed: int, given: EngineModel | None) -> dict:
    plan = {"format_version": FORMAT_VERSION, "profile": profile, "order_seed": order_seed,
            "studies": {s.name: s.spec for s in studies}}
    return plan | ({"engine_model": given.to_json()} if given else {})


def _claim(out: Path, studies: list[Study], profile: str, order_seed: int, resume: bool,
           given: EngineModel | None) -> None:
    """A new folder, or with ``resume`` one whose plan is this one (never two configurations in one)."""
    plan = json.loads(json.dumps(_plan(studies, profile, order_seed, given)))
    path = out / "plan.json"
    if not resume:
        if out.exists():
            raise BenchError(f"--out {out} exists; results are never overwritten: pick another folder, or "
                             f"--resume to finish an interrupted bench there")
        out.mkdir(parents=True)
        path.write_text(json.dumps(plan, indent=2) + "\n")
        if given:
            (out / "engine_model.json").write_text(json.dumps(given.to_json(), indent=2) + "\n")
        return
    if not path.exists():
        raise BenchError(f"--resume: {out} holds no bench (no plan.json); start one without --resume")
    old = _with_defaults(json.loads(path.read_text()))
    if old != plan:
        changed = sorted(k for k in set(old) | set(plan) if old.get(k) != plan.get(k))
        raise BenchError(f"--resume: {out} was started with other studies or options ({', '.join(changed)} differ); "
                         f"give the same study files and options, or another --out")
    if (out / "results.csv").exists():
        raise BenchError(f"--resume: {out} is complete (results.csv exists); nothing to do")


def _with_defaults(plan: dict) -> dict:
    """A saved plan with the factors added since live routing (:data:`LATER_FACTORS`) at their defaults,
    as a study file loads with them today: a bench started before they existed resumes.  (Not levers: a
    plan without them ran Spark as configured.)"""
    later = {k: DEFAULTS[k] for k in LATER_FACTORS}
    return plan | {"studies": {name: {**later, **spec} for name, spec in plan["studies"].items()}}


def _engine_studies(studies: list[Study]) -> list[Study]:
    """The studies whose runs calibrate the engine model (``engine: true``)."""
    return [s for s in studies if s.spec.get("engine")]


def _phases(studies: list[Study]) -> list[list[Study]]:
    """Engine calibration first, then the rest, then studies offered another study's measured rate, and
    last (after the sustainable-throughput searches) the studies that crowd the executors with idle Python
    workers (:func:`_crowds`)."""
    engine = _engine_studies(studies)
    offered = [s for s in studies if s.spec.get("offered_rate")]
    crowding = [s for s in studies if _crowds(s) and s not in engine and s not in offered]
    return [engine, [s for s in studies if s not in engine + offered + crowding], offered, crowding]


def _crowds(study: Study) -> bool:
    """Whether a run of the study has a Spark task per worker (a lever set without ``pack``).  Each such
    task leaves an idle Python worker behind, which Spark keeps, and the runs after them were slower: sg
    at W = 100, 1 ms, spent 1.5-2.4 s of engine per batch after one run of levers ``none`` at W = 100,
    1.4-1.6 s with such runs last (docs/engine.md)."""
    given = [study.spec["levers"], *(extra.get("levers", []) for extra in study.spec.get("include", []))]
    lever_sets = [name for each in given for name in ([each] if isinstance(each, str) else each)]
    return any(not uses(levers, "packs") for levers in lever_sets)


def studies_points(phase: list[Study], out: Path, profile: str, studies: list[Study]) -> list[Point]:
    """The points of a phase's studies; an ``offered_rate`` study's rate is read from the runs done (of
    ``studies``)."""
    points = []
    for study in phase:
        source = study.spec.get("offered_rate")
        points += study.points(profile, rate=_measured_rate(out, source, studies, profile) if source else None)
    return points


def _measured_rate(out: Path, source: dict, studies: list[Study], profile: str) -> float:
    """The median throughput of the passed runs of ``source['study']`` at that scheme and delay."""
    measured = [p for s in studies if s.name == source["study"] for p in s.points(profile)
                if p.scheme == source["scheme"] and p.delay_ms == source["delay_ms"] and _passed(out, p)]
    if not measured:
        raise BenchError(f"offered_rate: no passed run of study {source['study']!r} with scheme {source['scheme']} "
                         f"at {source['delay_ms']} ms to take the rate from")
    return float(round(np.median([_summary(out, p)["throughput_msgs_per_s"] for p in measured])))


def _remaining(out: Path, phases: list[list[Study]], profile: str) -> int:
    """Runs still to do, at most (an offered study counts all its runs until its rate is measured, a
    sustainable-throughput search its most runs)."""
    studies = [s for phase in phases for s in phase]
    planned = sum(len(s.points(profile)) for phase in phases for s in phase)
    searches = sum(len(s.points(profile)) * _search_settings(s, profile)[1] for phase in phases for s in phase
                   if s.spec.get("sustainable"))
    return (planned + searches  # at most: a search usually stops earlier
            - sum(_finished(out, p) for phase in phases for p in studies_points_done(phase, out, profile, studies)))


def _search_settings(study: Study, profile: str) -> tuple[float, int]:
    """A sustainable study's stream seconds per search run and its most runs per search."""
    spec = study.profiled(profile)["sustainable"]
    spec = spec if isinstance(spec, dict) else {}
    return spec.get("seconds", sustainable.SECONDS), spec.get("runs", sustainable.MAX_RUNS)


def _search(out: Path, studies: list[Study], profile: str, base: Point,
            model: EngineModel | None) -> tuple[list[tuple[Point, bool | None, float]], Point | None]:
    """A sustainable-throughput search of ``base`` replayed from the runs done: each run with its verdict
    and backlog slope, and the next run (None when the search is over).  A failed run (:func:`_failures`)
    ends the search, its verdict None: nothing it measured can be trusted, and neither can a rate found
    without it.  It starts from the simulator's
    predicted capacity (the measured peak where no model predicts the point).  Through the broker it starts
    from the lower of the two: the prediction is the engine's alone, and locust and the broker, sharing
    the machine, carry about two thirds of it (the search steps up when its first rate is carried)."""
    seconds, max_runs = _search_settings(next(s for s in studies if s.name == base.study), profile)
    predicted = predict(base, cached_work(base, out / "sim"), model)["throughput"] if model is not None else np.nan
    peak = _summary(out, base)["throughput_msgs_per_s"]
    if not np.isfinite(predicted):  # no model, or one of other levers
        start = peak
    else:
        start = min(predicted, peak) if base.ingest == "locust" else predicted
    tried: list[tuple[Point, bool, float]] = []
    while (rate := sustainable.next_rate([(p.rate, ok) for p, ok, _ in tried], start, max_runs)) is not None:
        point = replace(base, rate=rate, messages=max(1000, int(rate * seconds)))
        if not _finished(out, point):
            return tried, point
        if _failures(out, point):
            return [*tried, (point, None, np.nan)], None
        tried.append((point, *run_verdict(out / "runs" / point.name, point.rate, point.messages)))
    return tried, None


def run_verdict(folder: Path, rate: float, messages: int) -> tuple[bool, float]:
    """A search run's verdict (sustainable, backlog slope): through the broker, by the consumer's lag behind
    what the broker received — and never sustainable when the generator missed the offered rate."""
    batches = pd.read_parquet(folder / "batches.parquet")
    received = folder / "locust" / DELIVERIES
    if not received.exists():
        return sustainable.verdict(batches, rate, messages)
    ok, slope = sustainable.verdict(batches, rate, messages, pd.read_parquet(received))
    valid = json.loads((folder / "summary.json").read_text())["ingest"]["valid"]
    return ok and valid, slope


def _model(out: Path, studies: list[Study], profile: str) -> EngineModel | None:
    """The engine model fitted on the engine studies' passed runs; without one, the bench's own
    ``engine_model.json`` (``--engine-model`` or the calibration); None while there is none yet."""
    engine = _engine_studies(studies)
    if not engine:
        path = out / "engine_model.json"
        return EngineModel.read(path) if path.exists() else None
    rows = [run_row(p, out / "runs" / p.name) for s in engine for p in s.points(profile) if _passed(out, p)]
    model = EngineModel.fit(pd.DataFrame(rows)) if rows else None
    if model is not None:
        model.source = f"the engine studies' {len(rows)} runs ({', '.join(s.name for s in engine)})"
    return model


def given_model(path: Path | None, studies: list[Study]) -> EngineModel | None:
    """``--engine-model FILE``, checked: a readable model, and no engine study in the bench to fit another."""
    if path is None:
        return None
    engine = [s.name for s in _engine_studies(studies)]
    if engine:
        raise BenchError(f"--engine-model {path}: the engine study {engine[0]!r} calibrates this bench itself; "
                         f"leave out one of them")
    try:
        model = EngineModel.read(path)
    except ValueError as exc:
        raise BenchError(str(exc)) from None
    model.source = f"--engine-model {path} ({model.source or 'fitted by an earlier bench'})"
    return model


def _needs_calibration(out: Path, studies: list[Study]) -> bool:
    """No engine study fits the bench's model and it has none in ``out`` yet."""
    return not _engine_studies(studies) and not (out / "engine_model.json").exists()


def _calibration(out: Path, studies: list[Study], profile: str, spark) -> Calibration | None:
    """The calibration this bench still needs (:func:`_needs_calibration`), or None."""
    return _calibration_for(studies, profile, spark) if _needs_calibration(out, studies) else None


def _calibration_for(studies: list[Study], profile: str, spark) -> Calibration:
    """The calibration of ``studies``' points on the cluster of ``spark``, cached or not yet run."""
    from skewbench.bench.spark.run import machine_cores, master_status

    status = master_status(spark.sparkContext.master)
    return Calibration.for_bench(studies, profile, status=status, machine_cores=machine_cores(status),
                                 executor_memory=spark.sparkContext.getConf().get("spark.executor.memory", None),
                                 spark_version=spark.version)


def _calibrate(spark, out: Path | None, calibration: Calibration, progress, interrupts) -> str:
    """Run what the cached calibration lacks, fit it, and make it this bench's ``engine_model.json`` (with an
    ``out``); says whether it ran or came from the cache."""
    ran = calibration.missing()
    runs = calibration.folder / "runs"
    for point in ran:
        progress.step(_label(point))
        _run(spark, runs, point, interrupts)
    with interrupts.raising():
        sim = calibration.folder / "sim"
        failed = {} if calibration.model_path.exists() else {
            p: reasons for p in calibration.points if (reasons := run_failures(p, runs / p.name, sim))}
        if failed:
            return _calibrated_without(out, calibration, failed)
        if not calibration.model_path.exists():
            calibration.save(pd.DataFrame([run_row(p, runs / p.name) for p in calibration.points]))
        if out is not None:
            shutil.copyfile(calibration.model_path, out / "engine_model.json")
    return "calibrated the engine now, and cached it" if ran else "the cached calibration (same cluster, code, design)"


def _calibrated_without(out: Path | None, calibration: Calibration, failed: dict[Point, tuple[str, ...]]) -> str:
    """A calibration some of whose runs failed: they leave the cache (the next calibration runs them again) for
    the bench's ``runs/`` and failed.csv (:data:`CALIBRATION_FAILED`), and the model fitted on the others
    predicts this bench alone, uncached.  :class:`~.run.RunFailed` when none passed, or with no bench (``out``
    None: ``skewbench advise --calibrate``)."""
    from skewbench.bench.spark.run import RunFailed

    runs = calibration.folder / "runs"
    said = "; ".join(f"{p.name}: {'; '.join(reasons)}" for p, reasons in failed.items())
    if out is not None:
        rows = [failed_row(p, reasons) for p, reasons in failed.items()]
        (out / CALIBRATION_FAILED).write_text(json.dumps(rows, indent=1) + "\n")
    for point in failed:
        if out is None:
            shutil.rmtree(runs / point.name)
        else:
            (out / "runs").mkdir(exist_ok=True)
            shutil.move(runs / point.name, out / "runs" / point.name)
    passed = [p for p in calibration.points if p not in failed]
    if out is None or not passed:
        raise RunFailed(f"{len(failed)} of {len(calibration.points)} engine-calibration runs failed: {said}")
    model = EngineModel.fit(pd.DataFrame([run_row(p, runs / p.name) for p in passed]))
    model.source = (f"calibration {calibration.folder} ({len(passed)} of its {len(calibration.points)} runs, not "
                    f"cached: {len(failed)} failed)")
    (out / "engine_model.json").write_text(json.dumps(model.to_json(), indent=2) + "\n")
    return f"calibrated the engine now; {len(failed)} of its runs failed (failed.csv)"


def cluster_model(studies: list[Study], log=sys.stderr) -> tuple[EngineModel, Path]:
    """The engine model of the cluster of ``SPARK_CONF_DIR`` for ``studies``' points (``skewbench advise
    --calibrate``): the calibration a bench of the same points would run, from the cache when this cluster, code
    and design have one, else run now (after a warm-up run) and cached; with where it is kept."""
    from skewbench.bench.spark.run import session

    url, slots = _cluster()
    _check_slots(max(p.workers for s in studies for p in s.points()), url, slots)
    spark = session(url, "skewbench-calibration")
    try:
        calibration = _calibration_for(studies, "default", spark)
        missing = len(calibration.missing())
        with deferred() as interrupts, Progress(missing + bool(missing)) as progress:
            if missing:
                progress.step("warm-up run (not reported)")
                _warm_up(spark, slots, WARM_UP_BATCHES)
            how = _calibrate(spark, None, calibration, progress, interrupts)
    finally:
        spark.stop()
    print(f"engine model: {how}", file=log, flush=True)
    return EngineModel.read(calibration.model_path), calibration.model_path


def _announce_model(out: Path, studies: list[Study], how: str, log) -> None:
    """Say which engine model predicts this bench's runs."""
    engine = [s.name for s in _engine_studies(studies)]
    source = (f"the runs of the engine study {', '.join(engine)}, fitted once they are done" if engine
              else EngineModel.read(out / "engine_model.json").source)
    print(f"engine model: {how + ': ' if how else ''}{source}", file=log, flush=True)


def _ordered(points: list[Point], seed: int) -> list[Point]:
    return [points[i] for i in np.random.default_rng(seed).permutation(len(points))]


def _complete(out: Path, point: Point) -> bool:
    """Whether the point ran to its end (its ``summary.json``), passed or not."""
    return (out / "runs" / point.name / "summary.json").exists()


def _finished(out: Path, point: Point) -> bool:
    """Whether the point ran: to its end, or until it failed without one (its :data:`~.run.FAILED`)."""
    from skewbench.bench.spark.run import FAILED

    return _complete(out, point) or (out / "runs" / point.name / FAILED).exists()


def _passed(out: Path, point: Point) -> bool:
    """Whether the point ran and passed: its numbers may be reported."""
    return _finished(out, point) and not _failures(out, point)


def _failures(out: Path, point: Point) -> tuple[str, ...]:
    """Why a finished point's run failed (none when it passed): :func:`run_failures` on its folder."""
    return run_failures(point, out / "runs" / point.name, out / "sim")


@functools.cache  # a finished run folder never changes, and the tables are rebuilt after every run
def run_failures(point: Point, folder: Path, sim: Path) -> tuple[str, ...]:
    """Why the finished run of ``point`` in ``folder`` failed, one line each (none when it passed): what its
    driver said (:data:`~.run.FAILED`: lost messages), else an answer other than the reference's, a worker
    whose work differs from the simulator's (simulated into ``sim``), messages counted twice
    (:func:`~.summary.failures`)."""
    from skewbench.bench.spark.run import FAILED
    from skewbench.bench.spark.summary import failures

    if (folder / FAILED).exists():
        return tuple(json.loads((folder / FAILED).read_text())["reasons"])
    work = cached_work(point, sim)
    return tuple(failures(json.loads((folder / "summary.json").read_text()), (work.store.sum(0), work.probe.sum(0))))


def _summary(out: Path, point: Point) -> dict:
    return json.loads((out / "runs" / point.name / "summary.json").read_text())


def _label(point: Point) -> str:
    rate = f", offered {point.rate:,.0f}/s" if point.rate else ""
    levers = f", levers {point.levers}" if point.levers != canonical(LEVERS_DEFAULT) else ""
    more = "".join([f", {point.params}" if point.params else "",
                    f", rebalance every {point.rebalance_every}" if point.rebalance_every else "",
                    f", schedule {point.schedule}" if point.schedule else "",
                    f", {point.migration} migration" if point.live and point.migration != "all-at-once" else "",
                    f", hand-over {point.handover}" if point.live and point.handover != "hold" else "",
                    f", faults {point.faults}" if point.faults else "",
                    f", slow {point.slow}" if point.slow else "",
                    f", delay {point.delay_mode}" if point.delay_mode != "auto" else ""])
    return (f"{point.study}: {point.app} {point.scheme} W={point.workers} S={point.sources} delay {point.delay_ms} ms "
            f"{point.workload} seed {point.seed}, {point.messages:,} messages{rate}{levers}{more}")


def config_of(point: Point, folder: Path):
    from skewbench.bench.spark.run import Config

    return Config(app=point.app, scheme=point.scheme, workers=point.workers, sources=point.sources,
                  delay_ms=point.delay_ms, workload=point.workload, messages=point.messages, rate=point.rate,
                  batch_rows=point.batch_rows, seed=point.seed, split=point.split,
                  aggregation_period=point.aggregation_period, levers=point.levers, out=str(folder),
                  rebalance_every=point.rebalance_every, schedule=point.schedule, migration=point.migration,
                  fluid_keys=point.fluid_keys, handover=point.handover, params=point.params, ingest=point.ingest,
                  faults=point.faults, slow=point.slow,
                  delay_mode=None if point.delay_mode == "auto" else point.delay_mode)


WARM_UP_BATCHES = 40  # 5 left the next runs' engine cost per batch 0.4-0.5 s above the rest's (JIT, at W = 10)


def _warm_up(spark, slots: int, batches: int) -> None:
    """A run first, so that no measured run pays the JVMs' and Python workers' warm-up: small batches, many of
    them, for the JIT compilers to finish with the per-batch and per-task paths of the driver and executors."""
    from skewbench.bench.spark.run import run

    with tempfile.TemporaryDirectory(prefix="skewbench-warmup-") as tmp:
        w = min(10, slots)
        warm = Point(study="warmup", app="wordcount", scheme="pkg", workers=w, sources=min(5, w), delay_ms=0.1,
                     workload="wp", messages=batches * 500 * w, batch_rows=500 * w, rate=0.0,
                     aggregation_period=0, split="shuffle", seed=0, levers=canonical(LEVERS_DEFAULT))
        run(config_of(warm, Path(tmp) / "run"), spark=spark)


def _run(spark, runs: Path, point: Point, interrupts) -> None:
    """One point on Spark into ``runs/<point>`` (an interrupted earlier attempt is removed first); a Ctrl-C
    before or during it stops the bench, and the run counts only once complete.  A run that fails without
    finishing (:class:`~.run.RunFailed`: a message lost) is kept as finished, with its reason in
    :data:`~.run.FAILED`, and the bench goes on."""
    from skewbench.bench.spark.run import RunFailed, run

    interrupts.check()
    folder = runs / point.name
    partial = folder.with_name(folder.name + ".partial")
    if partial.exists():  # marked INCOMPLETE by the interrupted run: not a result
        shutil.rmtree(partial)
    runs.mkdir(parents=True, exist_ok=True)
    check_disk(runs)
    try:
        run(config_of(point, folder), spark=spark)
    except RunFailed as failure:
        print(f"the run failed: {failure}", file=sys.stderr, flush=True)
        (partial / "INCOMPLETE").unlink()
        partial.rename(folder)
    for scratch in SCRATCH:
        shutil.rmtree(folder / scratch, ignore_errors=True)


def check_disk(folder: Path, need: int = MIN_FREE_BYTES) -> None:
    """:class:`BenchError` unless ``folder``'s disk has ``need`` bytes free (before a run, not in it)."""
    free = shutil.disk_usage(folder).free
    if free < need:
        raise BenchError(f"only {free / 1024**3:.1f} GB free on the disk of {folder} (a run needs "
                         f"{need / 1024**3:.0f} GB): the bench stopped before its next run; free space (old results/ "
                         f"folders, finished Spark applications' folders in .cluster/*/work/) and finish it with "
                         f"--resume (make bench RESUME=1 OUT=...)")


def _measure(spark, out: Path, point: Point, studies: list[Study], profile: str, interrupts, step,
             label: str) -> None:
    """A point of the bench: its run, its simulation and the partial results table with it (no Spark in
    those two: a Ctrl-C stops them at once)."""
    step(label)
    _run(spark, out / "runs", point, interrupts)
    with interrupts.raising():
        cached_work(point, out / "sim")
        _write_partial(out, studies, profile)


#: Seconds between two rebuilds of ``results.csv.partial`` (rebuilt after every run, it took 0.8 s a run by
#: the end of a 613-run bench).
PARTIAL_EVERY_S = 60.0
_partial_written: dict[Path, float] = {}


def _write_partial(out: Path, studies: list[Study], profile: str) -> None:
    """``results.csv.partial`` from every complete run, once there is none or the last is a minute old."""
    path = out / "results.csv.partial"
    last = _partial_written.get(path)
    if path.exists() and last is not None and time.monotonic() - last < PARTIAL_EVERY_S:
        return
    _results(out, studies, profile).table.to_csv(path, index=False)
    _partial_written[path] = time.monotonic()


# -- the results table ------------------------------------------------------------------------------------

def run_row(point: Point, folder: Path) -> dict:
    """One results row from a complete run folder (``summary.json``, ``metrics/``)."""
    return dict(_run_row(point, folder))


@functools.cache  # a complete run folder never changes, and the table is rebuilt after every run
def _run_row(point: Point, folder: Path) -> dict:
    s = json.loads((folder / "summary.json").read_text())
    overhead, batch = s["overhead_seconds"], s["batch_seconds_median"]
    ideal = point.workers / (point.delay_ms / 1000) if point.delay_ms > 0 else float("nan")
    return {**asdict(point), "correct": s["correct"],
            "throughput": s["throughput_msgs_per_s"], "latency_p50": s["latency_seconds"]["p50"],
            "latency_p95": s["latency_seconds"]["p95"], "latency_p99": s["latency_seconds"]["p99"],
            "max_over_mean": s["imbalance_max_over_mean"], "load_stddev_pct": stddev_pct(s["worker_messages"]),
            "counters": s["counters"], "elapsed_s": s["elapsed_seconds"], "stored": sum(s["worker_messages"]),
            "probes": sum(s["worker_probes"]),
            "counters_mean": s["counters_mean"], "output_rows": s["output_rows"],
            "engine_share": overhead["median"] / batch if batch else float("nan"),
            "overhead_median_s": overhead["median"],
            **{f"{part}_median_s": overhead[f"{part}_median"] for part in PARTS},
            "batch_median_s": batch, "busiest_median_s": _steady_median(folder, "max_worker_busy"),
            "copies": _steady_median(folder, "copies"),
            "busy_per_copy_s": _busy_per_copy(folder) if point.delay_ms == 0 else np.nan,
            "ideal": ideal, "efficiency": s["throughput_msgs_per_s"] / ideal, "period": point.aggregation_period,
            "delay_mode": s["delay_mode"], "delay_error": s["delay"]["error"],
            **{key: s[key] for key in ("work", "latency_source") if key in s},  # runs of older versions: derived
            "worker_messages": s["worker_messages"], "worker_probes": s["worker_probes"],
            "versions": s.get("versions", 1), "final_workers": s.get("final_workers", point.workers),
            **{key: s.get(key, 0) for key in ("migrations", "migrated_keys", "migrated_bytes")},
            "plan_median_s": float(np.median([m["plan_seconds"] for m in s["migration_list"]]))
            if s.get("migration_list") else np.nan, **_response(folder, s), **_ingest_row(s), **_faults_row(s),
            "run": folder.name}


def _faults_row(summary: dict) -> dict:
    """Each message counted once (``duplicates``; NaN where not counted: live routing), and with ``faults``
    how many struck and the longest recovery (inf: one never got back to its pace; NaN: no fault)."""
    recoveries = [np.inf if f["recovery_s"] is None else f["recovery_s"] for f in summary.get("faults", [])]
    duplicates = summary.get("duplicates")
    return {"duplicates": np.nan if duplicates is None else duplicates, "faults_struck": len(recoveries),
            "recovery_s": max(recoveries, default=np.nan)}


def _ingest_row(summary: dict) -> dict:
    """Through the broker: the rate it received by its clock, the generator's lateness, and whether the run
    kept to its offered rate (``ingest_valid``; NaN for the stream generated in Spark's source)."""
    ingest = summary.get("ingest", {})
    if ingest.get("path") != "locust":
        return {"achieved_rate": np.nan, "generator_lag_p99_s": np.nan, "ingest_valid": np.nan}
    return {"achieved_rate": ingest["achieved_rate"], "generator_lag_p99_s": ingest["lag_p99"],
            "ingest_valid": ingest["valid"]}


def _response(folder: Path, summary: dict) -> dict:
    """A live run's response to its first migration (:mod:`~skewbench.bench.scaleout`); NaN for the others."""
    timeline = folder / "timeline.parquet"
    if not timeline.exists():
        return dict.fromkeys(scaleout.COLUMNS, np.nan)
    return scaleout.response(pd.read_parquet(timeline), summary.get("migration_list", []))


def _steady_median(folder: Path, column: str) -> float:
    """A column of ``batches.parquet`` (e.g. the busiest worker's busy seconds), median over the batches
    after the first."""
    batches = pd.read_parquet(folder / "batches.parquet")
    steady = batches[batches["batch"] > batches["batch"].min()]
    return float((steady if len(steady) else batches)[column].median())


def _busy_per_copy(folder: Path) -> float:
    """A worker's busy seconds per message copy over the batches after the first (no-delay runs: the
    app's own processing cost)."""
    metrics = pd.concat([pd.read_parquet(p) for p in sorted((folder / "metrics").glob("*.parquet"))])
    steady = metrics[metrics["batch"] > metrics["batch"].min()]
    copies = (steady["stored"] + steady["probed"]).sum()
    return float(steady["busy_seconds"].sum() / copies) if copies else float("nan")


def _with_predictions(rows: pd.DataFrame, points: dict[str, Point], sim: Path,
                      model: EngineModel | None) -> tuple[pd.DataFrame, dict | None]:
    """The simulator's prediction of every run (``model``: fitted on the engine studies' runs) and
    ``sim_exact``: the simulated stores and probes per worker equal Spark's."""
    predicted, exact, keys = [], [], []
    for name, stored, probed in zip(rows["run"], rows["worker_messages"], rows["worker_probes"]):
        work = cached_work(points[name], sim)
        predicted.append(predict(points[name], work, model) if model else {})
        exact.append(work.store.sum(0).tolist() == list(stored) and work.probe.sum(0).tolist() == list(probed))
        keys.append(work.keys)
    guess = pd.DataFrame(predicted, index=rows.index, columns=["throughput", "overhead_s", "busiest_s"])
    rows = rows.assign(predicted_throughput=guess["throughput"], predicted_overhead_s=guess["overhead_s"],
                       predicted_busiest_s=guess["busiest_s"], sim_exact=exact, keys=keys)
    rows["dist_cost"] = rows["counters"] / rows["keys"]
    rows["prediction_error"] = rows["predicted_throughput"] / rows["throughput"] - 1
    return rows, (model.to_json() if model else None)


class Results(NamedTuple):
    """A bench's tables: ``table`` every passed run (results.csv), ``failed`` every failed one (failed.csv:
    :data:`FAILED_COLUMNS`), ``model`` the engine model that predicted them (JSON)."""

    table: pd.DataFrame
    failed: pd.DataFrame
    model: dict | None


#: failed.csv's columns: the run, its study, the point's factors, and why it failed ("; " between reasons).
FAILED_COLUMNS = ["run", "study", *(f for f in Point.__dataclass_fields__ if f != "study"), "search_of", "reasons"]
#: The calibration runs of this bench that failed (rows of failed.csv), kept beside its engine_model.json.
CALIBRATION_FAILED = "calibration-failed.json"


def _results(out: Path, studies: list[Study], profile: str) -> Results:
    """Every finished run of the plan (sustainable-throughput searches included, with their verdicts):
    the passed ones as one table, predictions beside, and the failed ones with their reasons — with the runs
    of a search that failed, and the bench's failed calibration runs."""
    engine = {s.name for s in _engine_studies(studies)}
    points = {p.name: p for phase in _phases(studies) for p in studies_points_done(phase, out, profile, studies)}
    passed = [p for p in points.values() if _passed(out, p)]
    failed = [failed_row(p, _failures(out, p)) for p in points.values() if _finished(out, p) and _failures(out, p)]
    rows = [run_row(p, out / "runs" / p.name) for p in passed]
    model = _model(out, studies, profile)
    for study in (s for s in studies if s.spec.get("sustainable")):
        for base in (p for p in study.points(profile) if _passed(out, p)):
            tried = _search(out, studies, profile, base, model)[0]
            if any(ok is None for _, ok, _ in tried):
                failed += _failed_search(out, base, tried)
                continue
            for point, ok, slope in tried:
                points[point.name] = point
                rows.append(run_row(point, out / "runs" / point.name) | {"search_of": base.name, "sustainable": ok,
                                                                          "backlog_slope": slope})
    calibration = out / CALIBRATION_FAILED
    failed += json.loads(calibration.read_text()) if calibration.exists() else []
    failed = pd.DataFrame(failed, columns=FAILED_COLUMNS)
    if not rows:
        return Results(pd.DataFrame(columns=COLUMNS), failed, None)
    table = pd.DataFrame(rows)
    table["engine_study"] = table["study"].isin(engine)
    table, model = _with_predictions(table, points, out / "sim", model)
    table = table.drop(columns=["worker_messages", "worker_probes"])
    return Results(table[COLUMNS + [c for c in table.columns if c not in COLUMNS]], failed, model)


def failed_row(point: Point, reasons: tuple[str, ...], search_of: str = "") -> dict:
    """A row of failed.csv (:data:`FAILED_COLUMNS`)."""
    return {"run": point.name, **asdict(point), "search_of": search_of or None, "reasons": "; ".join(reasons)}


def _failed_search(out: Path, base: Point, tried: list[tuple[Point, bool | None, float]]) -> list[dict]:
    """Every run of a sustainable search that failed at a run: that run with its reasons, the others with the
    search's (the rate it would have found rests on the failed run)."""
    broken = next(p for p, ok, _ in tried if ok is None)
    return [failed_row(p, _failures(out, p) if ok is None else
                       (f"its sustainable-throughput search failed at run {broken.name}",), base.name)
            for p, ok, _ in tried]


def studies_points_done(phase: list[Study], out: Path, profile: str, studies: list[Study]) -> list[Point]:
    """:func:`studies_points`, where an offered study whose rate is not measured yet has none."""
    try:
        return studies_points(phase, out, profile, studies)
    except BenchError:
        return studies_points([s for s in phase if not s.spec.get("offered_rate")], out, profile, studies)


def finish(out: Path, studies: list[Study], profile: str, context: dict) -> Results:
    """Write the final tables, the engine model, the comparisons and the report (see the module docstring).
    Only passed runs enter a table, and so a comparison, figure or fidelity row; the failed ones go to
    ``failed.csv`` with their reasons, and a study with a failed run gets no comparison (its points are not
    all measured)."""
    from skewbench.analysis.report import write_report
    from skewbench.bench import comparisons
    from skewbench.bench.provenance import write_metadata

    results = _results(out, studies, profile)
    table, failed = results.table, results.failed
    meta = {**context, "studies": {s.name: s.spec for s in studies}}
    for study in studies:
        part = table[table["study"] == study.name]
        if part.empty:  # a rebuilt interrupted bench, or every run failed
            continue
        part.to_csv(out / f"{study.name}.csv", index=False)
        write_metadata(out / f"{study.name}.csv", {**meta, "study": study.name})
        compare = study.spec.get("compare") if profile != "quick" else None  # a smoke run concludes nothing
        done = all(_passed(out, p) for p in studies_points_done([study], out, profile, studies))
        if compare and done:  # (an interrupted bench, rebuilt, compares only its finished studies)
            result = comparisons.COMPARISONS[compare](part)
            (out / f"{study.name}_vs_paper.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "engine_model.json").write_text(json.dumps(results.model, indent=2) + "\n")
    failed.to_csv(out / "failed.csv", index=False)
    write_metadata(out / "failed.csv", meta)
    try:  # results.csv says the bench is complete: it stays only once the report is written too
        table.to_csv(out / "results.csv", index=False)
        write_metadata(out / "results.csv", meta)
        write_report(out)
    except BaseException:
        (out / "results.csv").unlink(missing_ok=True)
        raise
    (out / "results.csv.partial").unlink(missing_ok=True)
    return results


def rebuild(out: Path) -> Results:
    """:func:`finish` again from ``out``'s run folders (see the module docstring); the files it would
    replace move to ``out/previous-<UTC time>-<random>/`` first, so no result is lost."""
    plan_path = out / "plan.json"
    if not plan_path.is_file():
        raise BenchError(f"{out} holds no bench (no plan.json): --rebuild reads the run folders of a skewbench bench")
    plan = json.loads(plan_path.read_text())
    if plan.get("format_version") != FORMAT_VERSION:
        raise BenchError(f"{plan_path}: format_version {plan.get('format_version')} is not {FORMAT_VERSION}, "
                         f"the one this version writes: rebuild it with the skewbench that ran it")
    studies = [Study(plan_path, spec) for spec in plan["studies"].values()]
    missing = [p.name for s in studies for p in s.points(plan["profile"]) if _complete(out, p)
               and not (out / "runs" / p.name / "batches.parquet").exists()]
    if missing:
        raise BenchError(f"{out}/runs/{missing[0]} has no batches.parquet ({len(missing)} runs alike): a kept "
                         f"report without its run files cannot be rebuilt")
    meta = out / "results.csv.meta.json"
    context = json.loads(meta.read_text())["config"] if meta.exists() else {}
    context = {k: v for k, v in context.items() if k in ("master", "slots")}
    inputs = {"plan.json"} | (set() if _engine_studies(studies) else {"engine_model.json", CALIBRATION_FAILED})  # a
    # model given or calibrated, and the calibration runs it is not fitted on
    derived = [f for f in out.iterdir() if f.is_file() and f.name not in inputs]
    previous = Path(tempfile.mkdtemp(prefix=f"previous-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-", dir=out))
    for f in derived:
        f.rename(previous / f.name)
    return finish(out, studies, plan["profile"],
                  {**context, "profile": plan["profile"], "order_seed": plan["order_seed"], "rebuilt": True})
