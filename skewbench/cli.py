"""``skewbench`` command line: simulations, Spark runs and benches, reports, speed, schemes and workloads.

Exit codes: 0 success, 1 a run failed, 2 bad usage or input (unknown scheme, bad SPEC, W < 1, NaN, a count
beyond its limit ...), 130 interrupted.  Bad input is one line on stderr, ``skewbench: error: ...``, before any
work starts.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from skewbench import bounds
from skewbench.bounds import BoundsError, Range

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130
SIMULATED_WORKERS = Range(1, bounds.MAX_WORKERS, integer=True)
CLUSTER_WORKERS = Range(1, bounds.MAX_CLUSTER_WORKERS, integer=True)
DELAY_MS = Range(0, bounds.MAX_DELAY_MS)
BATCHES = Range(0, bounds.MAX_BATCHES, integer=True)  # 0: never (aggregation, rebalancing, warm-up)
GENERATED = Range(1, bounds.MAX_MESSAGES, integer=True)  # messages of a stream generated piece by piece


class UsageError(ValueError):
    """Bad input from the user: reported in one line, exit code 2."""


class Failed(RuntimeError):
    """A command that ran and failed (not the user's input): reported in one line, exit code 1."""


class _Parser(argparse.ArgumentParser):
    """argparse, its refusals in one line (argparse prints the usage too) and exit code 2."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"skewbench: error: {_one_line(message.removeprefix('argument '))} "
                              f"(`{self.prog} --help` lists the options)\n")

    def _get_values(self, action, arg_strings):
        if action.nargs is None and arg_strings == ["--"]:  # `--opt=--`: argparse would make it [], unchecked
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)


def _number(range_: Range):
    """An argparse type: the option's value as a number of ``range_`` (:mod:`skewbench.bounds`)."""

    def parse(text: str):
        try:
            return range_.parse(text)
        except BoundsError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.range = range_  # what the fuzz tests read to generate values outside it
    return parse


def _text(text: str) -> str:
    """An argparse type: a name, a SPEC or a list that must not be empty (empty would mean "the default")."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _file_name(text: str) -> str:
    """An argparse type: a path the system can take (not empty, no NUL byte, no name longer than 255 bytes)."""
    if not text or "\0" in text:
        raise argparse.ArgumentTypeError(f"must be a file or folder name, got {bounds.echo(text)}")
    long = [part for part in text.split("/") if len(os.fsencode(part)) > 255]
    if long:
        raise argparse.ArgumentTypeError(f"a name in the path is longer than 255 bytes: {bounds.echo(long[0])}")
    return text


def _path(text: str) -> Path:
    return Path(_file_name(text))


def _int_list(text: str, what: str, range_: Range = SIMULATED_WORKERS) -> list[int]:
    values = [v for v in text.split(",") if v.strip()]
    try:
        if not values:
            raise BoundsError
        values = [Range(integer=True).parse(v) for v in values]
    except BoundsError:
        raise UsageError(f"--{what} takes comma-separated integers like 5,10,50, got {bounds.echo(text)}") from None
    try:
        return [range_.check(v) for v in values]
    except BoundsError as exc:
        raise UsageError(f"--{what} values {exc}") from None


def _names(text: str | None, what: str) -> list[str] | None:
    """A comma-separated list of names (None when the option was not given); refused when it names none."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError(f"--{what} names none: give comma-separated names, or leave it out for the default")
    return names


def _scheme_params(items: list[str]) -> dict[str, dict]:
    from skewbench.scheme import param_value

    params: dict[str, dict] = {}
    for item in items:
        scheme, dot, rest = item.partition(".")
        key, eq, value = rest.partition("=")
        if not (dot and eq and key):
            raise UsageError(f"--param takes SCHEME.NAME=VALUE (e.g. dchoices.theta=0.01), got {bounds.echo(item)}")
        try:
            params.setdefault(scheme, {})[key] = param_value(value)
        except ValueError as exc:
            raise UsageError(f"--param {scheme}.{key} {exc}") from None
    return params


def _schedule(text: str | None, at: str = "MESSAGE", workers: Range = SIMULATED_WORKERS) -> dict[int, int]:
    """``--schedule`` (None: not given) as ``{at: W}``, every W in ``workers``; AT a message, or a micro-batch."""
    from skewbench.migration import parse_schedule

    if text is None:
        return {}
    try:
        schedule = parse_schedule(text, at=at)
        bounds.check_schedule(schedule, workers, bounds.MAX_MESSAGES if at == "MESSAGE" else bounds.MAX_BATCHES)
    except ValueError as error:
        raise UsageError(f"--schedule: {error}") from None
    return schedule


def _check_schemes(names: list[str], params: dict[str, dict]) -> None:
    from skewbench.scheme import make_scheme

    for scheme in set(params) - set(names):
        raise UsageError(f"--param names scheme {scheme!r}, which is not in --schemes")
    for name in names:
        try:
            make_scheme(name, 2, **params.get(name, {}))
        except TypeError as exc:
            raise UsageError(f"bad parameter for scheme {name!r}: {exc}") from None
        except ValueError as exc:
            raise UsageError(str(exc)) from None


def cmd_simulate(args) -> int:
    from skewbench.bench.study import Study, run_study
    from skewbench.speeds import SpeedError, check as check_speeds
    from skewbench.workloads import parse

    schemes = _names(args.schemes, "schemes")
    params = _scheme_params(args.param)
    _check_schemes(schemes, params)
    if args.seed + args.repeat - 1 > bounds.MAX_SEED:
        raise UsageError(f"--seed + --repeat - 1 is the last seed, at most {bounds.MAX_SEED:,}")
    if "" in (s.strip() for s in args.slow):
        raise UsageError("--slow '' names no slow worker: give COUNT@SPEED, e.g. 1@0.5 (every cell also runs on "
                         "equal workers)")
    study = Study(workload=args.workload, schemes=schemes, workers=_int_list(args.workers, "workers"),
                  sources=_int_list(args.sources, "sources"), messages=args.messages, seed=args.seed,
                  repeat=args.repeat, split=args.split, interval=args.interval,
                  schedule=_schedule(args.schedule), params=params, slow=["", *args.slow])
    parse(study.workload, messages=min(args.messages or 1000, 1000), seed=args.seed)  # fail fast on a bad SPEC
    try:
        check_speeds(args.slow, study.workers)
    except SpeedError as exc:
        raise UsageError(f"--slow, {exc}") from None
    table = run_study(study, Path(args.out), Path(args.timeseries) if args.timeseries else None, force=args.force)
    columns = ["scheme", "workers", "sources", "avg_imbalance", "imbalance_fraction", "max_over_mean", "counters",
               *(["slow", "time_over_ideal", "speed_share"] if args.slow else [])]
    print(table[columns].to_string(index=False))
    print(f"wrote {args.out}")
    return 0


def cmd_speed(args) -> int:
    if args.trace:
        from skewbench.bench.trace_speed import main as trace_speed

        return trace_speed(["--lines", str(args.trace_lines), "--seed", str(args.seed)])
    from skewbench.bench.provenance import write_metadata
    import skewbench.schemes  # noqa: F401  (registers every scheme)
    from skewbench.bench.study import claim
    from skewbench.scheme import REGISTRY
    from skewbench.workloads import parse

    schemes = _names(args.schemes, "schemes") or sorted(REGISTRY)
    _check_schemes(schemes, {})
    if args.out:
        claim(Path(args.out), args.force)
    stream = parse(args.workload, messages=args.messages, seed=args.seed)
    print(f"{stream.messages:,} messages of {args.workload}, W={args.workers}, S={args.sources}, one core")
    from skewbench.bench.speed import measure

    table = measure(stream, schemes, workers=args.workers, sources=args.sources, repeat=args.repeat, seed=args.seed)
    print(table[["scheme", "msgs_per_s", "ratio_to_kg", "plan_seconds", "paper_plan"]].to_string(index=False))
    if args.out:
        table.to_csv(args.out, index=False)
        write_metadata(Path(args.out), vars(args))
        print(f"wrote {args.out}")
    return 0


RUN_OPTIONS = ("app", "scheme", "workers", "sources", "delay_ms", "workload", "messages", "rate", "batch_rows",
               "master", "seed", "split", "delay_mode", "aggregation_period", "levers", "out", "rebalance_every",
               "schedule", "migration", "fluid_keys", "handover", "params", "ingest", "faults", "slow")


def _in_cluster_python(command: str, argv: list[str]) -> None:
    """Re-run ``skewbench COMMAND ARGV`` with .venv-cluster's Python (which has PySpark) unless this one has it."""
    import os

    try:
        import pyspark  # noqa: F401
        return
    except ImportError:
        pass
    from skewbench.bench.spark.run import CLUSTER_PYTHON

    if not CLUSTER_PYTHON.exists():
        raise UsageError(f"PySpark is not installed here and {CLUSTER_PYTHON} is missing: run `make cluster-up` "
                         f"(it builds .venv-cluster), then run this command again")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(str(CLUSTER_PYTHON), [str(CLUSTER_PYTHON), "-m", "skewbench.cli", command, *argv])


def _checked_run_config(command: str, args):
    """The run options as a Config, checked where no Spark is needed, then (re-executing this command in
    .venv-cluster where PySpark is missing) ready for the driver."""
    from skewbench.bench.spark.run import Config, RunError, check

    _check_run_args(args)
    config = Config(**{k: getattr(args, k) for k in RUN_OPTIONS})
    try:  # what needs no Spark is checked here, before any re-exec
        check(config, need_cluster=False)
    except RunError as exc:
        raise UsageError(str(exc)) from None
    _in_cluster_python(command, [f"--{k.replace('_', '-')}={getattr(args, k)}" for k in RUN_OPTIONS
                                 if getattr(args, k) is not None])  # --opt=VALUE: a value may begin with "-"
    return config


def _check_run_args(args) -> None:
    """What the run's own checks let through, or check only once the cluster is asked for: the scheme's
    parameters (NaN), a schedule's W beyond the cluster's, a broker fault without the broker, a master that is
    not a standalone master's URL."""
    from skewbench.scheme import parse_params

    try:
        parse_params(args.params)
    except ValueError as exc:
        raise UsageError(f"--params: {exc}") from None
    _schedule(args.schedule, at="BATCH", workers=CLUSTER_WORKERS)
    _check_faults(args.faults, args.ingest)
    _check_master(args.master)


def _check_faults(text: str, ingest: str) -> None:
    from skewbench.bench.spark import faults

    try:
        struck = faults.parse_all(text)
    except faults.FaultError as exc:
        raise UsageError(f"--faults: {exc}") from None
    if any(f.kind == "broker" for f in struck) and ingest != "locust":
        raise UsageError("--faults: a broker fault needs --ingest locust: the generated stream never reads the broker")


def _check_master(url: str | None) -> None:
    host = (url or "").removeprefix("spark://").partition(":")[0]
    if url is not None and not (url.startswith("spark://") and host.strip()):
        raise UsageError(f"--master takes a standalone master's URL, spark://HOST:7077, got {bounds.echo(url)}")


def cmd_run(args) -> int:
    config = _checked_run_config("run", args)
    from skewbench.bench.spark.faults import parse_all
    from skewbench.bench.spark.run import RunError, RunFailed, run, supervised
    from skewbench.bench.spark.summary import failures

    driver_faults = any(f.kind == "driver" for f in parse_all(config.faults))
    try:
        summary = supervised(config) if driver_faults else run(config)
    except RunError as exc:
        raise UsageError(str(exc)) from None
    except RunFailed as exc:
        print(f"skewbench: the run failed: {exc}; see {args.out}.partial", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        state = "it had completed" if Path(args.out).exists() else f"{args.out}.partial is marked INCOMPLETE"
        print(f"skewbench: interrupted; {state}", file=sys.stderr)
        return EXIT_INTERRUPTED
    lat = summary["latency_seconds"]
    print(f"{summary['app']} {summary['scheme']} W={summary['workers']} S={summary['sources']}: "
          f"correct={summary['correct']}  {summary['throughput_msgs_per_s']:,.0f} msgs/s after warm-up  "
          f"latency p50 {lat['p50']:.3f} s p99 {lat['p99']:.3f} s  overhead/batch "
          f"{summary['overhead_seconds']['median']:.2f} s  max/mean {summary['imbalance_max_over_mean']:.3f}  "
          f"delay {summary['delay_mode']} error {summary['delay']['error'] or 0:+.2%}")
    ingest = summary["ingest"]
    if ingest["path"] == "locust":
        offered = (f"offered {ingest['offered_rate']:,.0f}/s, lateness p99 {ingest['lag_p99'] * 1000:.1f} ms"
                   if ingest["offered_rate"] else "all at once")
        print(f"ingest: locust sent {ingest['messages']:,} messages to the broker at {ingest['achieved_rate']:,.0f}/s "
              f"({offered})" + ("" if ingest["valid"] else " — NOT VALID: fewer messages than the stream's, or the "
                                "achieved rate missed the offered one by more than 2 %"))
    print(f"exactly once: {summary['messages']:,} messages in, {summary['messages_counted']:,} counted, "
          f"{summary['duplicates']:,} duplicates")
    for fault in summary.get("faults", []):
        recovered = "not before the run ended" if fault["recovery_s"] is None else f"in {fault['recovery_s']:.1f} s"
        print(f"fault {fault['fault']}: {fault['node']} killed ({fault['processes_killed']} processes), down "
              f"{fault['down_s']:.1f} s; the batches were back at their pace {recovered}")
    if "migrations" in summary:
        print(f"live routing: {summary['versions']} routing versions, {summary['migrations']} migrations moved "
              f"{summary['migrated_keys']:,} keys, W at the end {summary['final_workers']}, at most "
              f"{summary['held_max']:,} rows waiting for their state")
    print(f"wrote {args.out}")
    if reasons := failures(summary):
        print(f"skewbench: the run failed: {'; '.join(reasons)}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def cmd_profile(args) -> int:
    config = _checked_run_config("profile", args)
    from skewbench.bench.spark.profile import profile
    from skewbench.bench.spark.run import RunError

    try:
        threads, execs, batches = profile(config, sys.stderr)
    except (RunError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        print(f"skewbench: interrupted; {args.out}/run.partial is marked INCOMPLETE", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"CPU of the steady batches ({batches}), by role and thread, largest first:")
    print(threads.head(15).to_string(index=False, formatters={"share": "{:.1%}".format}))
    print("programs exec'd during the run: " + ("perf cannot trace here" if execs is None else
          ", ".join(f"{name} {count}" for name, count in execs.head(8).items()) or "none"))
    print(f"wrote {args.out}")
    return 0


def cmd_bench(args) -> int:
    from skewbench.bench.driver import BenchError, bench, given_model
    from skewbench.bench.studyfile import StudyError, load_all

    try:  # bad study files or engine models fail here, before a cluster is asked for
        given_model(args.engine_model, load_all(args.studies))
    except (StudyError, BenchError) as exc:
        raise UsageError(str(exc)) from None
    if args.engine_model:
        _engine_model(args.engine_model)  # no NaN in it
    _check_bench_out(args.out, args.resume)
    _in_cluster_python("bench", [f"--out={args.out}", f"--order-seed={args.order_seed}"]
                       + ["--resume"] * args.resume + [f"--{args.profile}"] * (args.profile != "default")
                       + ([f"--engine-model={args.engine_model}"] if args.engine_model else [])
                       + ([f"--warm-up-batches={args.warm_up_batches}"] if args.warm_up_batches is not None else [])
                       + ([f"--ingest={args.ingest}"] if args.ingest else []) + ["--", *args.studies])
    from skewbench.bench.spark.run import RunError, RunFailed

    try:
        table, failed, _ = bench(args.studies, args.out, resume=args.resume, profile=args.profile,
                                 order_seed=args.order_seed, engine_model=args.engine_model,
                                 warm_up_batches=args.warm_up_batches, ingest=args.ingest)
    except (BenchError, RunError) as exc:
        raise UsageError(str(exc)) from None
    except RunFailed as exc:  # the engine calibration, with no run left to fit it on
        print(f"skewbench: the bench failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("skewbench: interrupted; finish with the same command and --resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    late = int((table["ingest_valid"] == False).sum()) if len(table) else 0  # noqa: E712 (NaN: no broker in the run)
    print(f"{len(table)} runs passed; wrote {args.out / 'results.csv'} and {args.out / 'report.md'}"
          + (f"; {late} runs through the broker NOT VALID (the broker got less than the offered rate, "
             f"column ingest_valid)" if late else ""))
    return _failed_runs(failed, args.out)


def _failed_runs(failed, out: Path) -> int:
    """A bench's exit code: 1 with one line when some run failed (failed.csv), else 0."""
    if failed.empty:
        return 0
    print(f"skewbench: {len(failed)} runs failed (incorrect, not simulator-exact, counted twice or lost), kept out "
          f"of every table: see {out / 'failed.csv'}", file=sys.stderr)
    return EXIT_FAILED


def _check_bench_out(out: Path, resume: bool) -> None:
    """The bench's own refusals of ``--out`` (bench.driver), made before the cluster's Python starts."""
    if not resume and out.exists():
        raise UsageError(f"--out {out} exists; results are never overwritten: pick another folder, or --resume to "
                         f"finish an interrupted bench there")
    if resume and not (out / "plan.json").exists():
        raise UsageError(f"--resume: {out} holds no bench (no plan.json); start one without --resume")


def cmd_predict(args) -> int:
    from skewbench.bench.prediction import predict_points
    from skewbench.bench.progress import Progress
    from skewbench.bench.provenance import write_metadata
    from skewbench.bench.study import claim
    from skewbench.bench.studyfile import StudyError, load_all

    try:
        studies = load_all(args.studies)
    except StudyError as exc:
        raise UsageError(str(exc)) from None
    model = _engine_model(args.engine_model)
    claim(args.out, args.force)
    points = [p for s in studies for p in s.points(args.profile)]
    with Progress(len(points)) as progress:
        table = predict_points(points, model, progress)
    table.to_csv(args.out, index=False)
    write_metadata(args.out, {"studies": {s.name: s.spec for s in studies}, "profile": args.profile,
                              "engine_model": model.to_json()})
    print(table[["study", "app", "scheme", "workers", "sources", "delay_ms", "predicted_throughput"]]
          .to_string(index=False, float_format=lambda v: f"{v:,.0f}"))
    print(f"wrote {args.out}")
    return 0


def cmd_api_bench(args) -> int:
    from skewbench.bench.api_bench import ApiBenchError, api_bench, load, summary

    try:
        study = load(args.study)
    except ApiBenchError as exc:
        raise UsageError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{args.study}: not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8") from None
    _finite(vars(study), args.study)
    if args.out.exists():
        raise UsageError(f"{args.out} already exists; choose another --out (results are never overwritten)")
    _in_cluster_python("api-bench", [f"--out={args.out}", f"--warm-up={args.warm_up}", "--", args.study])
    try:
        table = api_bench(args.study, args.out, warm_up=args.warm_up)
    except ApiBenchError as exc:
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        print(f"skewbench: interrupted; {args.out} is incomplete (no results.csv)", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(summary(table))
    print(f"wrote {args.out / 'results.csv'} and {args.out / 'api.png'}")
    return 0 if table["correct"].all() else EXIT_FAILED


def cmd_advise(args) -> int:
    import skewbench.schemes  # noqa: F401  (registers every scheme)
    from skewbench.bench import advise
    from skewbench.bench.progress import Progress
    from skewbench.bench.studyfile import StudyError
    from skewbench.scheme import REGISTRY

    workers = _int_list(args.workers, "workers", CLUSTER_WORKERS)
    if args.calibrate and args.engine_model:
        raise UsageError("give --calibrate (fit the engine model on this cluster) or --engine-model FILE, not both")
    model_path = args.engine_model or advise.KEPT_MODEL
    model = None if args.calibrate else _engine_model(model_path)
    schemes = _names(args.schemes, "schemes") or sorted(set(REGISTRY) - advise.LEFT_OUT)
    try:
        study = advise.study(args.workload, args.app, workers, args.sources, args.delay_ms, args.messages,
                             args.batch_rows_per_worker, model.levers if model else "", schemes)
    except StudyError as exc:
        raise UsageError(str(exc).removeprefix("advise: ")) from None
    if args.out is not None and args.out.exists():
        raise UsageError(f"{args.out} already exists; choose another --out (results are never overwritten)")
    if args.calibrate:
        model, model_path = _calibrated(args, study)
    points = advise.points(study, args.seed)
    with Progress(len(points)) as progress:
        table = advise.advise(points, model, progress)
    picks = advise.recommend(table, advise.hottest_share(points[0]))
    print(advise.summary(table, picks, f"app {args.app}, S = {args.sources}, {args.delay_ms:g} ms per message, "
                                       f"{args.workload}"))
    print(f"engine model: {model_path} ({model.source or 'no source recorded'})")
    if not (args.engine_model or args.calibrate):
        print("  the kept bench's model, fitted on the machine that ran it; machines of one kind differ 2-3x in the "
              "engine's cost per batch: add --calibrate to fit one on your cluster (SPARK_CONF_DIR), or pass a "
              "bench's engine_model.json with --engine-model")
    if args.out is not None:
        config = {**{k: str(v) for k, v in vars(args).items() if k != "func"}, "engine_model": str(model_path),
                  "model": model.to_json(), "reasons": picks.to_dict("records")}
        advise.write(args.out, table, picks, config)
        print(f"wrote {args.out / 'advice.csv'} and {args.out / 'advice.png'}")
    return 0


def _engine_model(path: Path):
    from skewbench.bench.prediction import EngineModel

    try:
        model = EngineModel.read(path)
    except ValueError as exc:
        raise UsageError(f"{exc}: give a bench's engine_model.json") from None
    _finite(model.to_json(), path)
    return model


def _finite(doc: dict, path) -> None:
    """Refuse a NaN or infinity anywhere in what a file the command read holds (JSON and YAML both write them)."""
    found = bounds.non_finite(doc)
    if found:
        key = ".".join(map(str, found[0])) or "(top level)"
        raise UsageError(f"{path}: {key}: must be a finite number, got {found[1]}")


def _calibrated(args, study):
    """``advise --calibrate``: the engine model of the cluster of SPARK_CONF_DIR (in .venv-cluster's Python)."""
    _in_cluster_python("advise", [f"--workload={args.workload}", "--app", args.app, f"--workers={args.workers}",
                                  "--sources", str(args.sources), "--delay-ms", str(args.delay_ms),
                                  "--messages", str(args.messages), "--seed", str(args.seed),
                                  "--batch-rows-per-worker", str(args.batch_rows_per_worker), "--calibrate"]
                       + ([f"--schemes={args.schemes}"] if args.schemes else [])
                       + ([f"--out={args.out}"] if args.out else []))
    from skewbench.bench.driver import BenchError, cluster_model
    from skewbench.bench.spark.run import RunError, RunFailed

    try:
        return cluster_model([study])
    except (BenchError, RunError) as exc:
        raise UsageError(str(exc)) from None
    except RunFailed as exc:  # no calibration run passed: no model to advise with
        raise Failed(f"the engine calibration failed: {exc}") from None


def cmd_study(args) -> int:
    from skewbench.bench.paper_study import main as paper_study

    _names(args.only, "only")
    return paper_study([f"--out={args.out}"] + ([f"--messages={args.messages}"] if args.messages else [])
                       + ([f"--only={args.only}"] if args.only else []) + (["--long"] if args.long else []))


def cmd_report(args) -> int:
    from skewbench.analysis.report import write_report

    if not args.folder.is_dir():
        raise UsageError(f"{args.folder} is not a results folder")
    _check_text_files(args.folder)
    if not args.rebuild:
        try:
            report = write_report(args.folder)
            print(f"wrote {report}, {report.with_name('fidelity.csv')} and {report.with_name('index.html')}")
        except UnicodeDecodeError as exc:
            raise UsageError(_not_text(args.folder, exc)) from None
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        return 0
    from skewbench.bench.driver import BenchError, rebuild

    try:
        table, failed, _ = rebuild(args.folder)  # writes the report too
    except UnicodeDecodeError as exc:
        raise UsageError(_not_text(args.folder, exc)) from None
    except BenchError as exc:
        raise UsageError(str(exc)) from None
    print(f"rebuilt {len(table)} passed runs; wrote {args.folder / 'results.csv'} and {args.folder / 'report.md'}")
    return _failed_runs(failed, args.folder)


def cmd_transcription(args) -> int:
    from skewbench.analysis.transcription import TranscriptionError, main as transcription

    try:
        return transcription(args.texts)  # 1 (EXIT_FAILED) when a value is not found
    except TranscriptionError as exc:
        raise UsageError(str(exc)) from None


def _check_text_files(folder: Path) -> None:
    """The folder's tables and JSON files are UTF-8 text: checked before the report writes any of its files."""
    for path in sorted([*folder.glob("*.csv"), *folder.glob("*.json")]):
        try:
            path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}), so no report") from None
        except OSError as exc:
            raise UsageError(f"{path}: cannot read it: {exc.strerror}") from None


def _not_text(folder: Path, exc: UnicodeDecodeError) -> str:
    return f"{folder}: a result file in it is not UTF-8 text ({exc.reason} at byte {exc.start}), so no report"


def cmd_schemes(args) -> int:
    from skewbench.scheme import REGISTRY, parameters
    import skewbench.schemes  # noqa: F401

    for name, cls in sorted(REGISTRY.items()):
        summary = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())  # first paragraph
        params = ",".join(f"{k}={v}" for k, v in parameters(cls).items())
        print(f"{name:14} {summary}" + (f"\n{'':14} parameters: {params}" if params else ""))
    return 0


def cmd_workloads(args) -> int:
    from skewbench.workloads import available

    for name, (doc, params) in sorted(available().items()):
        shown = ",".join(f"{k}={v}" for k, v in params.items())
        print(f"{name:10} {doc}" + (f"\n{'':10} {name}:{shown}" if shown else ""))
    return 0


def add_run_options(run) -> None:
    """The options of `skewbench run` (and of `skewbench profile`, which makes one)."""
    run.add_argument("--app", required=True, type=_text, help="wordcount, selfjoin or naivebayes")
    run.add_argument("--scheme", required=True, type=_text, help="see `skewbench schemes`")
    run.add_argument("--workers", type=_number(CLUSTER_WORKERS), required=True, metavar="W",
                     help="worker slots (Spark partitions)")
    run.add_argument("--sources", type=_number(CLUSTER_WORKERS), default=1, metavar="S",
                     help="source partitions, 1..1000 and at most --messages (default 1)")
    run.add_argument("--delay-ms", type=_number(DELAY_MS), default=0.0, metavar="D",
                     help="injected work per message copy")
    run.add_argument("--workload", type=_text, metavar="SPEC", help="default: the app's (wp, ticks:..., docs:...)")
    run.add_argument("--messages", type=_number(bounds.COUNT), default=50_000, metavar="N",
                     help="stream length (default 50000)")
    run.add_argument("--rate", type=_number(Range(0, bounds.MAX_RATE)), default=0.0, metavar="R",
                     help="offered messages/s, open loop (default 0: all available at once)")
    run.add_argument("--batch-rows", type=_number(bounds.COUNT), metavar="N",
                     help="most messages per micro-batch (default N/10); with live routing or load feedback "
                          "exactly N, also at a --rate")
    run.add_argument("--master", type=_text, metavar="URL",
                     help="spark://HOST:7077 (default: spark.master of SPARK_CONF_DIR)")
    run.add_argument("--seed", type=_number(bounds.SEED), default=0, help="seed of the workload and the hash functions")
    run.add_argument("--split", choices=("shuffle", "key"), default="shuffle", help="how messages reach sources")
    run.add_argument("--delay-mode", choices=("spin", "sleep"),
                     help="spin (CPU busy loop) or sleep; default spin when W <= real cores, else sleep")
    run.add_argument("--aggregation-period", type=_number(BATCHES), default=0, metavar="T",
                     help="wordcount: a worker sends its partial counts every T of its micro-batches and drops "
                          "them (default 0: it keeps every counter and sends each batch's counts)")
    run.add_argument("--levers", type=_text, default="default", metavar="SET",
                     help="the engine's levers on: default (those measured to help), none (Spark as configured), "
                          "all, or names joined by + (fs-checkpoints, no-crc, no-fork, pack, defer-sleep, "
                          "unload-on-commit; see docs/engine.md)")
    run.add_argument("--rebalance-every", type=_number(BATCHES), default=0, metavar="K",
                     help="live routing: an adaptive scheme plans every K micro-batches and the keys' state moves "
                          "(default 0: one table for the whole run; docs/migration.md)")
    run.add_argument("--schedule", type=_text, metavar="BATCH:W,...",
                     help="live routing: the number of workers changes at these micro-batches, e.g. 3:6,9:4")
    # skewbench.migration's STRATEGIES and HANDOVERS (tests/test_cli.py keeps them equal): importing it here
    # would cost every command numba's 0.2 s
    run.add_argument("--migration", choices=("all-at-once", "fluid"), default="all-at-once",
                     help="how a plan's keys move: in one micro-batch, or a few per worker and batch (--fluid-keys)")
    run.add_argument("--fluid-keys", type=_number(Range(0, bounds.MAX_KEYS, integer=True)), default=0, metavar="N",
                     help="fluid migration: the most keys moving out of or into one worker per micro-batch")
    run.add_argument("--handover", choices=("hold", "ahead"), default="hold",
                     help="when a moving key's state is handed over: in the new routing's first micro-batch, its "
                          "rows held a batch until the state arrives (hold), or at the end of the batch before, so "
                          "nothing waits (ahead)")
    run.add_argument("--params", default="", metavar="NAME=VALUE,...",
                     help="the scheme's parameters, e.g. theta=0.02,table_max=3000 (`skewbench schemes` lists them)")
    run.add_argument("--ingest", choices=("engine", "locust"), default="engine",
                     help="where the stream comes from: generated in Spark's source (engine), or sent by locust "
                          "to the cluster's broker at --rate (0: all at once) and read from there (a cluster up "
                          "with BROKER=1)")
    run.add_argument("--faults", default="", metavar="KIND@AT+DOWN,...",
                     help="nodes of the local cluster killed during the run: worker@0.4+5 kills the last worker "
                          "node when 40%% of the messages are done and starts it again 5 s later; broker@... the "
                          "broker (with --ingest locust); driver@... the driver, restarted from the checkpoints")
    run.add_argument("--slow", default="", metavar="COUNT@SPEED,...",
                     help="heterogeneous workers: 1@0.5 runs worker 0 at half speed (its injected delay doubled), "
                          "20%%@0.5 one worker in five (default: every worker at full speed; docs/heterogeneous.md)")
    run.add_argument("--out", required=True, type=_file_name, metavar="DIR", help="result folder (must not exist)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="skewbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = sub.add_parser("simulate", help="route a workload with each scheme, W and S; one CSV row per run",
                         description="Exact simulation study: one CSV row per (scheme, workers, sources, seed).")
    sim.add_argument("--workload", required=True, type=_text, metavar="SPEC",
                     help="e.g. zipf:z=1.0,keys=100000, lognormal:preset=LN1, wp, file:path=x.csv,key=word "
                          "(see `skewbench workloads`)")
    sim.add_argument("--schemes", required=True, metavar="LIST", help="comma-separated, see `skewbench schemes`")
    sim.add_argument("--workers", required=True, metavar="LIST", help="worker counts W, e.g. 5,10,50,100")
    sim.add_argument("--sources", default="1", metavar="LIST", help="source counts S (default 1)")
    sim.add_argument("--messages", type=_number(GENERATED), metavar="N",
                     help="stream length (default: the workload's)")
    sim.add_argument("--seed", type=_number(bounds.SEED), default=0,
                     help="seed of the workload and the hash functions (default 0)")
    sim.add_argument("--repeat", type=_number(bounds.REPEATS), default=1, metavar="R",
                     help="runs with seeds seed..seed+R-1")
    sim.add_argument("--split", choices=("shuffle", "key"), default="shuffle",
                     help="how messages reach the sources: round-robin (default) or by key (PKG Q3)")
    sim.add_argument("--interval", type=_number(GENERATED), metavar="N",
                     help="messages between controller steps: probing, rebalancing (default n/100)")
    sim.add_argument("--schedule", type=_text, metavar="AT:W,...", help="change W during the run, e.g. 500000:11")
    sim.add_argument("--param", action="append", default=[], metavar="SCHEME.NAME=VALUE",
                     help="a scheme parameter, repeatable (e.g. gedik-readj.alpha=1.5)")
    sim.add_argument("--slow", action="append", default=[], metavar="COUNT@SPEED,...",
                     help="also run with these workers slow, repeatable (1@0.5: worker 0 at half speed); the rows "
                          "gain time_over_ideal and speed_share (docs/heterogeneous.md)")
    sim.add_argument("--out", required=True, type=_file_name, metavar="FILE.csv",
                     help="summary table (refuses to overwrite)")
    sim.add_argument("--timeseries", type=_file_name, metavar="FILE.csv", help="also write I(t) for every run")
    sim.add_argument("--force", action="store_true", help="replace existing output files")
    sim.set_defaults(func=cmd_simulate)

    speed = sub.add_parser("speed", help="routing rate of every scheme and its ratio to key grouping",
                           description="Messages routed per second on one core, each scheme beside key grouping "
                                       "in the same run (median of --repeat runs after a warm-up).")
    speed.add_argument("--workload", type=_text, default="zipf:z=1.0,keys=1000000", metavar="SPEC")
    speed.add_argument("--messages", type=_number(bounds.COUNT), default=10_000_000, metavar="N")
    speed.add_argument("--workers", type=_number(SIMULATED_WORKERS), default=100, metavar="W")
    speed.add_argument("--sources", type=_number(SIMULATED_WORKERS), default=5, metavar="S")
    speed.add_argument("--schemes", metavar="LIST", help="default: every registered scheme")
    speed.add_argument("--repeat", type=_number(bounds.REPEATS), default=3)
    speed.add_argument("--seed", type=_number(bounds.SEED), default=0)
    speed.add_argument("--out", type=_file_name, metavar="FILE.csv")
    speed.add_argument("--trace", action="store_true",
                       help="instead: write a text trace (ts<TAB>key, Zipf 1.0 over 1M keys) and time loading it and "
                            "a whole `skewbench simulate` of it, beside the Java SLBSimulator's 22 s")
    speed.add_argument("--trace-lines", type=_number(bounds.COUNT), default=10_000_000, metavar="N",
                       help="the trace's lines")
    speed.add_argument("--force", action="store_true", help="replace an existing --out")
    speed.set_defaults(func=cmd_speed)

    run = sub.add_parser("run", help="one Spark Structured Streaming run of an app with a scheme, checked and measured",
                         description="Spark pipeline: S sources -> routing stage (one scheme per source) -> W worker "
                                     "slots (app state, injected delay) -> results checked against a single-process "
                                     "reference. Runs the driver with .venv-cluster/bin/python (re-executes itself "
                                     "there) on the cluster of SPARK_CONF_DIR (default .cluster/loadgen/conf).")
    add_run_options(run)
    run.set_defaults(func=cmd_run)

    profile = sub.add_parser("profile", help="one `skewbench run` with the CPU of every Spark thread and the programs "
                                             "it forks (local cluster)",
                             description="Makes one run into OUT/run on the local cluster and writes OUT/threads.csv "
                                         "(CPU seconds of the steady batches per role and thread of the driver, "
                                         "executors and Python workers) and, where perf may trace, OUT/execs.csv "
                                         "(programs exec'd). Same options as `skewbench run`.")
    add_run_options(profile)
    profile.set_defaults(func=cmd_profile)

    bench = sub.add_parser("bench", help="run study files on the Spark cluster: one row per run, predictions beside",
                           description="Run every point of the study files (bench/studies/*.yaml) on the cluster "
                                       "of SPARK_CONF_DIR in a seeded random order, each checked against the "
                                       "single-process reference and predicted by the simulator; writes "
                                       "DIR/results.csv, one CSV per study, comparisons with the papers and "
                                       "DIR/report.md.")
    bench.add_argument("studies", nargs="+", type=_file_name, metavar="STUDY.yaml",
                       help="study files (schema: bench/studyfile.py)")
    bench.add_argument("--out", required=True, type=_path, metavar="DIR", help="results folder (must not exist)")
    bench.add_argument("--resume", action="store_true",
                       help="finish an interrupted bench in DIR: complete runs are kept, the rest run")
    size = bench.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="profile", action="store_const", const="quick", default="default",
                      help="each study's quick: settings (a smoke run of minutes)")
    size.add_argument("--full", dest="profile", action="store_const", const="full",
                      help="each study's full: settings (more seeds and points: for a bigger cluster, CLOUD=aws)")
    bench.add_argument("--order-seed", type=_number(bounds.SEED), default=0, metavar="N",
                       help="seed of the run order (default 0)")
    bench.add_argument("--engine-model", type=_path, metavar="FILE",
                       help="predict with this engine_model.json (an earlier bench's) instead of calibrating; "
                            "without it and without an engine study, the bench calibrates the engine itself "
                            "(a short calibration, cached per cluster shape and code in .cache/engine/)")
    bench.add_argument("--warm-up-batches", type=_number(BATCHES), metavar="N",
                       help="micro-batches of the unreported run that first warms the JVMs up (default: enough for "
                            "their JIT compilers; fewer leave the first measured runs' engine cost high; 0: none)")
    bench.add_argument("--ingest", choices=("engine", "locust"),
                       help="every run's stream comes in so, whatever the study files say: locust sends it through "
                            "the cluster's broker (a cluster up with BROKER=1)")
    bench.set_defaults(func=cmd_bench)

    predict = sub.add_parser("predict", help="the simulator's prediction of every point of study files (no Spark)",
                             description="Route every point's stream as the Spark pipeline would and predict its "
                                         "throughput with an engine model a bench fitted (engine_model.json): the "
                                         "whole matrix in minutes, Spark measuring a selection.")
    predict.add_argument("studies", nargs="+", type=_file_name, metavar="STUDY.yaml")
    predict.add_argument("--engine-model", required=True, type=_path, metavar="FILE",
                         help="a bench's engine_model.json")
    predict.add_argument("--out", required=True, type=_path, metavar="FILE.csv", help="one row per point")
    predict.add_argument("--full", dest="profile", action="store_const", const="full", default="default",
                         help="each study's full: settings")
    predict.add_argument("--force", action="store_true", help="replace an existing --out")
    predict.set_defaults(func=cmd_predict)

    adv = sub.add_parser("advise", help="which scheme for your stream on your cluster: every scheme predicted, "
                                        "one recommended with its reason",
                         description="Route your stream through every scheme as the Spark pipeline would and predict "
                                     "each on the cluster with an engine model (skewbench.bench.advise).")
    adv.add_argument("--workload", required=True, type=_text, metavar="SPEC",
                     help="your trace (file:path=trace.csv,key=user) or any SPEC (`skewbench workloads`)")
    adv.add_argument("--app", default="wordcount", choices=("wordcount", "selfjoin", "naivebayes"))
    adv.add_argument("--workers", default="10", metavar="W[,W...]", help="worker counts (default 10)")
    adv.add_argument("--sources", type=_number(CLUSTER_WORKERS), default=5, metavar="S",
                     help="sources routing in parallel (default 5)")
    adv.add_argument("--delay-ms", type=_number(DELAY_MS), default=0.4, metavar="D",
                     help="CPU cost per message (default 0.4)")
    adv.add_argument("--messages", type=_number(bounds.COUNT), default=200_000, metavar="N",
                     help="messages of the stream routed (default 200,000; a trace's first N)")
    adv.add_argument("--batch-rows-per-worker", type=_number(bounds.COUNT), default=2000, metavar="N",
                     help="micro-batch size per worker (default 2000)")
    adv.add_argument("--schemes", metavar="NAME,...", help="only these schemes (default: every one)")
    adv.add_argument("--seed", type=_number(bounds.SEED), default=0)
    adv.add_argument("--engine-model", type=_path, metavar="FILE",
                     help="an engine_model.json fitted on your cluster (default: the kept bench's)")
    adv.add_argument("--calibrate", action="store_true",
                     help="fit the engine model on the cluster of SPARK_CONF_DIR first (a few short runs; cached, so "
                          "a second call on the same cluster and code reuses it)")
    adv.add_argument("--out", type=_path, metavar="DIR", help="write advice.csv and advice.png here (must not exist)")
    adv.set_defaults(func=cmd_advise)

    api = sub.add_parser("api-bench", help="skewbench.spark in a Structured Streaming job on the cluster: plain "
                                          "Spark vs balanced, per p1 (an API study file)",
                         description="Run an API study (bench/studies/api.yaml: kind api) on the cluster of "
                                     "SPARK_CONF_DIR: a per-key Python stateful operator and Spark's built-in sum, "
                                     "each plain and through skewbench.spark.Balancer with each scheme; writes "
                                     "DIR/results.csv (throughput, batch latency, state, correct) and DIR/api.png.")
    api.add_argument("study", type=_file_name, metavar="STUDY.yaml",
                     help="an API study file (schema: bench/api_bench.py)")
    api.add_argument("--out", required=True, type=_path, metavar="DIR", help="results folder (must not exist)")
    api.add_argument("--warm-up", type=_number(BATCHES), default=1, metavar="N",
                     help="unreported runs first, warming the JVMs' JIT and the Python workers up (default 1; 0: "
                          "none, the first runs then measure slow)")
    api.set_defaults(func=cmd_api_bench)

    study = sub.add_parser("study", help="the papers' simulations side by side (no cluster), then a report",
                           description="Every simulation experiment of the papers (skewbench.bench.paper_study) "
                                       "into DIR, then DIR/report.md.")
    study.add_argument("--out", required=True, type=_path, metavar="DIR", help="results folder (must not exist)")
    study.add_argument("--messages", type=_number(GENERATED), metavar="N",
                       help="cap every stream at N (default: the papers' sizes)")
    study.add_argument("--only", metavar="NAMES", help="comma-separated experiment names (default: all but the long)")
    study.add_argument("--long", action="store_true", help="only the long experiments (TW at 1.2G messages: hours)")
    study.set_defaults(func=cmd_study)

    report = sub.add_parser("report", help="(re)write DIR/report.md from the result files in DIR")
    report.add_argument("folder", type=_path, metavar="DIR")
    report.add_argument("--rebuild", action="store_true",
                        help="a bench folder: derive its tables again from the run folders with this version's "
                             "simulator, engine model and comparisons (the old ones move to DIR/previous-<time>/)")
    report.set_defaults(func=cmd_report)

    texts = sub.add_parser("transcription", help="check analysis/published.yaml against the papers' texts",
                           description="Every table number of analysis/published.yaml as its paper prints it, the "
                                       "rows of PKG's Table II and DKG's Tables 1 and 3, and prose values in the "
                                       "papers' words: one line per check and a total (exit 1: a value not found).")
    texts.add_argument("texts", type=_path, metavar="TEXTS_DIR",
                       help="the papers' texts, named as published.yaml's seed: (000_958fa462007d1cdf.txt ...)")
    texts.set_defaults(func=cmd_transcription)

    sub.add_parser("schemes", help="list the partitioning schemes").set_defaults(func=cmd_schemes)
    sub.add_parser("workloads", help="list workload SPECs and their parameters").set_defaults(func=cmd_workloads)
    return parser


def _one_line(message: str) -> str:
    """A message as one line that any stderr can print: its lines joined, undecodable bytes of the user's
    arguments (surrogates) escaped."""
    return " ".join(message.split("\n")).encode("utf-8", "backslashreplace").decode("utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help (0) or a refusal (2), already printed
        return exit_.code
    from skewbench.bench.study import ResultExists
    from skewbench.workloads import WorkloadError

    try:
        return args.func(args)
    except (UsageError, WorkloadError, ResultExists) as exc:
        print(f"skewbench: error: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except Failed as exc:
        print(f"skewbench: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("skewbench: interrupted; nothing was written as complete", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
