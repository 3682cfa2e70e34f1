"""``skewbench`` command line: simulations, Spark runs and benches, reports, speed, schemes and workloads.

Exit codes: 0 success, 1 a run failed, 2 bad usage or input (unknown scheme, bad SPEC, W < 1 ...),
130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


class UsageError(ValueError):
    """Bad input from the user: reported in one line, exit code 2."""


def _int_list(text: str, what: str, minimum: int = 1) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--{what} takes comma-separated integers like 5,10,50, got {text!r}") from None
    if not values or min(values) < minimum:
        raise UsageError(f"--{what} values must be >= {minimum}, got {text!r}")
    return values


def _scheme_params(items: list[str]) -> dict[str, dict]:
    from skewbench.scheme import param_value

    params: dict[str, dict] = {}
    for item in items:
        scheme, dot, rest = item.partition(".")
        key, eq, value = rest.partition("=")
        if not (dot and eq and key):
            raise UsageError(f"--param takes SCHEME.NAME=VALUE (e.g. dchoices.theta=0.01), got {item!r}")
        params.setdefault(scheme, {})[key] = param_value(value)
    return params


def _schedule(text: str | None) -> dict[int, int]:
    from skewbench.migration import parse_schedule

    try:
        return parse_schedule(text, at="MESSAGE") if text else {}
    except ValueError as error:
        raise UsageError(f"--schedule: {error}") from None


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

    schemes = [s for s in args.schemes.split(",") if s]
    params = _scheme_params(args.param)
    _check_schemes(schemes, params)
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

    schemes = [s for s in args.schemes.split(",") if s] if args.schemes else sorted(REGISTRY)
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

    config = Config(**{k: getattr(args, k) for k in RUN_OPTIONS})
    try:  # what needs no Spark is checked here, before any re-exec
        check(config, need_cluster=False)
    except RunError as exc:
        raise UsageError(str(exc)) from None
    _in_cluster_python(command, [part for k in RUN_OPTIONS if getattr(args, k) is not None
                                 for part in (f"--{k.replace('_', '-')}", str(getattr(args, k)))])
    return config


def cmd_run(args) -> int:
    config = _checked_run_config("run", args)
    from skewbench.bench.spark.faults import parse_all
    from skewbench.bench.spark.run import RunError, run, supervised

    driver_faults = any(f.kind == "driver" for f in parse_all(config.faults))
    try:
        summary = supervised(config) if driver_faults else run(config)
    except RunError as exc:
        raise UsageError(str(exc)) from None
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
    if summary["duplicates"] is not None:  # live routing hands held rows over a later batch: not counted so
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
    return 0 if summary["correct"] and not summary["duplicates"] else EXIT_FAILED


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
    _in_cluster_python("bench", [*args.studies, "--out", str(args.out), "--order-seed", str(args.order_seed)]
                       + ["--resume"] * args.resume + [f"--{args.profile}"] * (args.profile != "default")
                       + (["--engine-model", str(args.engine_model)] if args.engine_model else [])
                       + (["--warm-up-batches", str(args.warm_up_batches)] if args.warm_up_batches is not None else [])
                       + (["--ingest", args.ingest] if args.ingest else []))
    from skewbench.bench.spark.run import RunError

    try:
        table = bench(args.studies, args.out, resume=args.resume, profile=args.profile, order_seed=args.order_seed,
                      engine_model=args.engine_model, warm_up_batches=args.warm_up_batches, ingest=args.ingest)
    except (BenchError, RunError) as exc:
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        print("skewbench: interrupted; finish with the same command and --resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    wrong = table[~table["correct"].astype(bool)]
    late = int((table["ingest_valid"] == False).sum())  # noqa: E712 (NaN: no broker in the run)
    print(f"{len(table)} runs, {len(wrong)} incorrect; wrote {args.out / 'results.csv'} and {args.out / 'report.md'}"
          + (f"; {late} runs through the broker NOT VALID (the broker got less than the offered rate, "
             f"column ingest_valid)" if late else ""))
    return EXIT_FAILED if len(wrong) else 0


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
        load(args.study)
    except ApiBenchError as exc:
        raise UsageError(str(exc)) from None
    if args.out.exists():
        raise UsageError(f"{args.out} already exists; choose another --out (results are never overwritten)")
    _in_cluster_python("api-bench", [args.study, "--out", str(args.out)])
    try:
        table = api_bench(args.study, args.out)
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

    workers = _int_list(args.workers, "workers")
    if args.calibrate and args.engine_model:
        raise UsageError("give --calibrate (fit the engine model on this cluster) or --engine-model FILE, not both")
    model_path = args.engine_model or advise.KEPT_MODEL
    model = None if args.calibrate else _engine_model(model_path)
    schemes = args.schemes.split(",") if args.schemes else sorted(set(REGISTRY) - advise.LEFT_OUT)
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
        return EngineModel.read(path)
    except ValueError as exc:
        raise UsageError(f"{exc}: give a bench's engine_model.json") from None


def _calibrated(args, study):
    """``advise --calibrate``: the engine model of the cluster of SPARK_CONF_DIR (in .venv-cluster's Python)."""
    _in_cluster_python("advise", ["--workload", args.workload, "--app", args.app, "--workers", args.workers,
                                  "--sources", str(args.sources), "--delay-ms", str(args.delay_ms),
                                  "--messages", str(args.messages), "--seed", str(args.seed),
                                  "--batch-rows-per-worker", str(args.batch_rows_per_worker), "--calibrate"]
                       + (["--schemes", args.schemes] if args.schemes else [])
                       + (["--out", str(args.out)] if args.out else []))
    from skewbench.bench.driver import BenchError, cluster_model
    from skewbench.bench.spark.run import RunError

    try:
        return cluster_model([study])
    except (BenchError, RunError) as exc:
        raise UsageError(str(exc)) from None


def cmd_study(args) -> int:
    from skewbench.bench.paper_study import main as paper_study

    return paper_study(["--out", str(args.out)] + (["--messages", str(args.messages)] if args.messages else [])
                       + (["--only", args.only] if args.only else []) + (["--long"] if args.long else []))


def cmd_report(args) -> int:
    from skewbench.analysis.report import write_report

    if not args.folder.is_dir():
        raise UsageError(f"{args.folder} is not a results folder")
    if not args.rebuild:
        try:
            report = write_report(args.folder)
            print(f"wrote {report}, {report.with_name('fidelity.csv')} and {report.with_name('index.html')}")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        return 0
    from skewbench.bench.driver import BenchError, rebuild

    try:
        table = rebuild(args.folder)  # writes the report too
    except BenchError as exc:
        raise UsageError(str(exc)) from None
    print(f"rebuilt {len(table)} runs; wrote {args.folder / 'results.csv'} and {args.folder / 'report.md'}")
    return 0


def cmd_schemes(args) -> int:
    from skewbench.scheme import REGISTRY
    import skewbench.schemes  # noqa: F401

    for name, cls in sorted(REGISTRY.items()):
        summary = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())  # first paragraph
        params = ",".join(f"{k}={v}" for k, v in _keywords(cls).items())
        print(f"{name:14} {summary}" + (f"\n{'':14} parameters: {params}" if params else ""))
    return 0


def _keywords(cls) -> dict:
    """A scheme's parameters with their defaults: its constructor's keywords beyond W and the seed (those a
    subclass passes on with ``**params`` from its parents')."""
    import inspect

    found = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        signature = inspect.signature(klass.__init__).parameters.values()
        found |= {p.name: p.default for p in signature if p.default is not inspect.Parameter.empty
                  and p.name not in ("seed", *found)}
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature):
            break
    return found


def cmd_workloads(args) -> int:
    from skewbench.workloads import available

    for name, (doc, params) in sorted(available().items()):
        shown = ",".join(f"{k}={v}" for k, v in params.items())
        print(f"{name:10} {doc}" + (f"\n{'':10} {name}:{shown}" if shown else ""))
    return 0


def add_run_options(run) -> None:
    """The options of `skewbench run` (and of `skewbench profile`, which makes one)."""
    run.add_argument("--app", required=True, help="wordcount, selfjoin or naivebayes")
    run.add_argument("--scheme", required=True, help="see `skewbench schemes`")
    run.add_argument("--workers", type=int, required=True, metavar="W", help="worker slots (Spark partitions)")
    run.add_argument("--sources", type=int, default=1, metavar="S", help="source partitions, 1..W (default 1)")
    run.add_argument("--delay-ms", type=float, default=0.0, metavar="D", help="injected work per message copy")
    run.add_argument("--workload", metavar="SPEC", help="default: the app's (wp, ticks:..., docs:...)")
    run.add_argument("--messages", type=int, default=50_000, metavar="N", help="stream length (default 50000)")
    run.add_argument("--rate", type=float, default=0.0, metavar="R",
                     help="offered messages/s, open loop (default 0: all available at once)")
    run.add_argument("--batch-rows", type=int, metavar="N",
                     help="most messages per micro-batch (default N/10); with live routing or load feedback "
                          "exactly N, also at a --rate")
    run.add_argument("--master", metavar="URL", help="spark://HOST:7077 (default: spark.master of SPARK_CONF_DIR)")
    run.add_argument("--seed", type=int, default=0, help="seed of the workload and the hash functions")
    run.add_argument("--split", choices=("shuffle", "key"), default="shuffle", help="how messages reach sources")
    run.add_argument("--delay-mode", choices=("spin", "sleep"),
                     help="spin (CPU busy loop) or sleep; default spin when W <= real cores, else sleep")
    run.add_argument("--aggregation-period", type=int, default=0, metavar="T",
                     help="wordcount: a worker sends its partial counts every T of its micro-batches and drops "
                          "them (default 0: it keeps every counter and sends each batch's counts)")
    run.add_argument("--levers", default="default", metavar="SET",
                     help="the engine's levers on: default (those measured to help), none (Spark as configured), "
                          "all, or names joined by + (fs-checkpoints, no-crc, no-fork, pack, defer-sleep, "
                          "unload-on-commit; see docs/engine.md)")
    run.add_argument("--rebalance-every", type=int, default=0, metavar="K",
                     help="live routing: an adaptive scheme plans every K micro-batches and the keys' state moves "
                          "(default 0: one table for the whole run; docs/migration.md)")
    run.add_argument("--schedule", metavar="BATCH:W,...",
                     help="live routing: the number of workers changes at these micro-batches, e.g. 3:6,9:4")
    # skewbench.migration's STRATEGIES and HANDOVERS (tests/test_cli.py keeps them equal): importing it here
    # would cost every command numba's 0.2 s
    run.add_argument("--migration", choices=("all-at-once", "fluid"), default="all-at-once",
                     help="how a plan's keys move: in one micro-batch, or a few per worker and batch (--fluid-keys)")
    run.add_argument("--fluid-keys", type=int, default=0, metavar="N",
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
    run.add_argument("--out", required=True, metavar="DIR", help="result folder (must not exist)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="skewbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = sub.add_parser("simulate", help="route a workload with each scheme, W and S; one CSV row per run",
                         description="Exact simulation study: one CSV row per (scheme, workers, sources, seed).")
    sim.add_argument("--workload", required=True, metavar="SPEC",
                     help="e.g. zipf:z=1.0,keys=100000, lognormal:preset=LN1, wp, file:path=x.csv,key=word "
                          "(see `skewbench workloads`)")
    sim.add_argument("--schemes", required=True, metavar="LIST", help="comma-separated, see `skewbench schemes`")
    sim.add_argument("--workers", required=True, metavar="LIST", help="worker counts W, e.g. 5,10,50,100")
    sim.add_argument("--sources", default="1", metavar="LIST", help="source counts S (default 1)")
    sim.add_argument("--messages", type=int, metavar="N", help="stream length (default: the workload's)")
    sim.add_argument("--seed", type=int, default=0, help="seed of the workload and the hash functions (default 0)")
    sim.add_argument("--repeat", type=int, default=1, metavar="R", help="runs with seeds seed..seed+R-1")
    sim.add_argument("--split", choices=("shuffle", "key"), default="shuffle",
                     help="how messages reach the sources: round-robin (default) or by key (PKG Q3)")
    sim.add_argument("--interval", type=int, metavar="N",
                     help="messages between controller steps: probing, rebalancing (default n/100)")
    sim.add_argument("--schedule", metavar="AT:W,...", help="change W during the run, e.g. 500000:11")
    sim.add_argument("--param", action="append", default=[], metavar="SCHEME.NAME=VALUE",
                     help="a scheme parameter, repeatable (e.g. gedik-readj.alpha=1.5)")
    sim.add_argument("--slow", action="append", default=[], metavar="COUNT@SPEED,...",
                     help="also run with these workers slow, repeatable (1@0.5: worker 0 at half speed); the rows "
                          "gain time_over_ideal and speed_share (docs/heterogeneous.md)")
    sim.add_argument("--out", required=True, metavar="FILE.csv", help="summary table (refuses to overwrite)")
    sim.add_argument("--timeseries", metavar="FILE.csv", help="also write I(t) for every run")
    sim.add_argument("--force", action="store_true", help="replace existing output files")
    sim.set_defaults(func=cmd_simulate)

    speed = sub.add_parser("speed", help="routing rate of every scheme and its ratio to key grouping",
                           description="Messages routed per second on one core, each scheme beside key grouping "
                                       "in the same run (median of --repeat runs after a warm-up).")
    speed.add_argument("--workload", default="zipf:z=1.0,keys=1000000", metavar="SPEC")
    speed.add_argument("--messages", type=int, default=10_000_000, metavar="N")
    speed.add_argument("--workers", type=int, default=100, metavar="W")
    speed.add_argument("--sources", type=int, default=5, metavar="S")
    speed.add_argument("--schemes", metavar="LIST", help="default: every registered scheme")
    speed.add_argument("--repeat", type=int, default=3)
    speed.add_argument("--seed", type=int, default=0)
    speed.add_argument("--out", metavar="FILE.csv")
    speed.add_argument("--trace", action="store_true",
                       help="instead: write a text trace (ts<TAB>key, Zipf 1.0 over 1M keys) and time loading it and "
                            "a whole `skewbench simulate` of it, beside the Java SLBSimulator's 22 s")
    speed.add_argument("--trace-lines", type=int, default=10_000_000, metavar="N", help="the trace's lines")
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
    bench.add_argument("studies", nargs="+", metavar="STUDY.yaml", help="study files (schema: bench/studyfile.py)")
    bench.add_argument("--out", required=True, type=Path, metavar="DIR", help="results folder (must not exist)")
    bench.add_argument("--resume", action="store_true",
                       help="finish an interrupted bench in DIR: complete runs are kept, the rest run")
    size = bench.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="profile", action="store_const", const="quick", default="default",
                      help="each study's quick: settings (a smoke run of minutes)")
    size.add_argument("--full", dest="profile", action="store_const", const="full",
                      help="each study's full: settings (more seeds and points: for a bigger cluster, CLOUD=aws)")
    bench.add_argument("--order-seed", type=int, default=0, metavar="N", help="seed of the run order (default 0)")
    bench.add_argument("--engine-model", type=Path, metavar="FILE",
                       help="predict with this engine_model.json (an earlier bench's) instead of calibrating; "
                            "without it and without an engine study, the bench calibrates the engine itself "
                            "(a short calibration, cached per cluster shape and code in .cache/engine/)")
    bench.add_argument("--warm-up-batches", type=int, metavar="N",
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
    predict.add_argument("studies", nargs="+", metavar="STUDY.yaml")
    predict.add_argument("--engine-model", required=True, type=Path, metavar="FILE",
                         help="a bench's engine_model.json")
    predict.add_argument("--out", required=True, type=Path, metavar="FILE.csv", help="one row per point")
    predict.add_argument("--full", dest="profile", action="store_const", const="full", default="default",
                         help="each study's full: settings")
    predict.add_argument("--force", action="store_true", help="replace an existing --out")
    predict.set_defaults(func=cmd_predict)

    adv = sub.add_parser("advise", help="which scheme for your stream on your cluster: every scheme predicted, "
                                        "one recommended with its reason",
                         description="Route your stream through every scheme as the Spark pipeline would and predict "
                                     "each on the cluster with an engine model (skewbench.bench.advise).")
    adv.add_argument("--workload", required=True, metavar="SPEC",
                     help="your trace (file:path=trace.csv,key=user) or any SPEC (`skewbench workloads`)")
    adv.add_argument("--app", default="wordcount", choices=("wordcount", "selfjoin", "naivebayes"))
    adv.add_argument("--workers", default="10", metavar="W[,W...]", help="worker counts (default 10)")
    adv.add_argument("--sources", type=int, default=5, metavar="S", help="sources routing in parallel (default 5)")
    adv.add_argument("--delay-ms", type=float, default=0.4, metavar="D", help="CPU cost per message (default 0.4)")
    adv.add_argument("--messages", type=int, default=200_000, metavar="N",
                     help="messages of the stream routed (default 200,000; a trace's first N)")
    adv.add_argument("--batch-rows-per-worker", type=int, default=2000, metavar="N",
                     help="micro-batch size per worker (default 2000)")
    adv.add_argument("--schemes", default="", metavar="NAME,...", help="only these schemes (default: every one)")
    adv.add_argument("--seed", type=int, default=0)
    adv.add_argument("--engine-model", type=Path, metavar="FILE",
                     help="an engine_model.json fitted on your cluster (default: the kept bench's)")
    adv.add_argument("--calibrate", action="store_true",
                     help="fit the engine model on the cluster of SPARK_CONF_DIR first (a few short runs; cached, so "
                          "a second call on the same cluster and code reuses it)")
    adv.add_argument("--out", type=Path, metavar="DIR", help="write advice.csv and advice.png here (must not exist)")
    adv.set_defaults(func=cmd_advise)

    api = sub.add_parser("api-bench", help="skewbench.spark in a Structured Streaming job on the cluster: plain "
                                          "Spark vs balanced, per p1 (an API study file)",
                         description="Run an API study (bench/studies/api.yaml: kind api) on the cluster of "
                                     "SPARK_CONF_DIR: a per-key Python stateful operator and Spark's built-in sum, "
                                     "each plain and through skewbench.spark.Balancer with each scheme; writes "
                                     "DIR/results.csv (throughput, batch latency, state, correct) and DIR/api.png.")
    api.add_argument("study", metavar="STUDY.yaml", help="an API study file (schema: bench/api_bench.py)")
    api.add_argument("--out", required=True, type=Path, metavar="DIR", help="results folder (must not exist)")
    api.set_defaults(func=cmd_api_bench)

    study = sub.add_parser("study", help="the papers' simulations side by side (no cluster), then a report",
                           description="Every simulation experiment of the papers (skewbench.bench.paper_study) "
                                       "into DIR, then DIR/report.md.")
    study.add_argument("--out", required=True, type=Path, metavar="DIR", help="results folder (must not exist)")
    study.add_argument("--messages", type=int, metavar="N", help="cap every stream at N (default: the papers' sizes)")
    study.add_argument("--only", metavar="NAMES", help="comma-separated experiment names (default: all but the long)")
    study.add_argument("--long", action="store_true", help="only the long experiments (TW at 1.2G messages: hours)")
    study.set_defaults(func=cmd_study)

    report = sub.add_parser("report", help="(re)write DIR/report.md from the result files in DIR")
    report.add_argument("folder", type=Path, metavar="DIR")
    report.add_argument("--rebuild", action="store_true",
                        help="a bench folder: derive its tables again from the run folders with this version's "
                             "simulator, engine model and comparisons (the old ones move to DIR/previous-<time>/)")
    report.set_defaults(func=cmd_report)

    sub.add_parser("schemes", help="list the partitioning schemes").set_defaults(func=cmd_schemes)
    sub.add_parser("workloads", help="list workload SPECs and their parameters").set_defaults(func=cmd_workloads)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from skewbench.bench.study import ResultExists
    from skewbench.workloads import WorkloadError

    try:
        return args.func(args)
    except (UsageError, WorkloadError, ResultExists) as exc:
        print(f"skewbench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("skewbench: interrupted; nothing was written as complete", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
