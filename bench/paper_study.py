"""The main simulation job: the papers' experiments, side by side, then a report.

Each experiment of a paper (:mod:`skewbench.bench.papers`, one module per paper) is written to ``OUT/<name>.csv`` with its
provenance; :mod:`skewbench.analysis.report` then turns the folder into ``OUT/report.md`` with
figures.  ``python -m skewbench.bench.paper_study --out DIR [--messages N] [--only NAME,...]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from skewbench.bench.papers import experiments
from skewbench.bench.study import ResultExists, run_study


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="results folder (must not exist yet)")
    parser.add_argument("--messages", type=int, help="cap every stream at N messages (default: the papers' sizes)")
    parser.add_argument("--only", help="comma-separated experiment names (default: all)")
    args = parser.parse_args(argv)
    chosen = experiments(args.messages)
    if args.only:
        unknown = set(args.only.split(",")) - set(chosen)
        if unknown:
            print(f"error: unknown experiments {sorted(unknown)}; known: {', '.join(chosen)}", file=sys.stderr)
            return 2
        chosen = {k: v for k, v in chosen.items() if k in args.only.split(",")}
    if args.out.exists() and any(args.out.iterdir()):
        print(f"error: {args.out} already holds results; choose a new --out", file=sys.stderr)
        return 2
    began = time.monotonic()
    try:
        for i, (name, (study, keep_series)) in enumerate(chosen.items(), 1):
            print(f"== experiment {i}/{len(chosen)}: {name}", file=sys.stderr)
            series = args.out / f"{name}.timeseries.csv" if keep_series else None
            run_study(study, args.out / f"{name}.csv", series)
    except ResultExists as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from skewbench.analysis.report import write_report

    report = write_report(args.out)
    print(f"done in {time.monotonic() - began:.0f} s; report: {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
