"""The main simulation job: the papers' experiments, side by side, then a report.

Each experiment of a paper (:mod:`skewbench.bench.papers`, one module per paper) is written to ``OUT/<name>.csv`` with its
provenance; :mod:`skewbench.analysis.report` then turns the folder into ``OUT/report.md`` with
figures.  ``python -m skewbench.bench.paper_study --out DIR [--messages N] [--only NAME,...]``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

from skewbench.bench.papers import LONG, experiments
from skewbench.bench.study import ResultExists, run_study


def run_experiment(experiment, out: Path, name: str) -> None:
    """A (Study, keep the I(t) series) pair, or a measurement no grid of simulations expresses: a callable
    that writes ``out/<name>.csv`` itself (with :func:`skewbench.bench.provenance.write_metadata`)."""
    if callable(experiment):
        experiment(out / f"{name}.csv")
        return
    study, keep_series = experiment
    run_study(study, out / f"{name}.csv", out / f"{name}.timeseries.csv" if keep_series else None)


def peak_gib() -> float:
    """This process's peak resident memory (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="results folder (must not exist yet)")
    parser.add_argument("--messages", type=int, help="cap every stream at N messages (default: the papers' sizes)")
    parser.add_argument("--only", help="comma-separated experiment names (default: all but the long ones)")
    parser.add_argument("--long", action="store_true", help=f"only the long experiments ({LONG}*: hours)")
    args = parser.parse_args(argv)
    every = experiments(args.messages)
    chosen = {k: v for k, v in every.items() if k.startswith(LONG) == args.long}
    if args.only:
        unknown = set(args.only.split(",")) - set(every)
        if unknown:
            print(f"error: unknown experiments {sorted(unknown)}; known: {', '.join(every)}", file=sys.stderr)
            return 2
        chosen = {k: v for k, v in every.items() if k in args.only.split(",")}
    if args.out.exists() and any(args.out.iterdir()):
        print(f"error: {args.out} already holds results; choose a new --out", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)  # an experiment that writes its own table needs the folder
    began = time.monotonic()
    try:
        for i, (name, experiment) in enumerate(chosen.items(), 1):
            print(f"== experiment {i}/{len(chosen)}: {name} (at {time.monotonic() - began:.0f} s)", file=sys.stderr)
            run_experiment(experiment, args.out, name)
            print(f"   peak memory so far {peak_gib():.2f} GiB", file=sys.stderr)
    except ResultExists as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from skewbench.analysis.report import write_report

    report = write_report(args.out)
    print(f"done in {time.monotonic() - began:.0f} s, peak memory {peak_gib():.2f} GiB; report: {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
