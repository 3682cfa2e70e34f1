"""The main simulation job: the papers' experiments, side by side, then a report.

Each entry of :data:`STUDIES` is one experiment of a paper, written to ``OUT/<name>.csv`` with its
provenance; :mod:`skewbench.analysis.report` then turns the folder into ``OUT/report.md`` with
figures.  ``python -m skewbench.bench.paper_study --out DIR [--messages N] [--only NAME,...]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from skewbench.bench.study import ResultExists, Study, run_study

PKG_WORKERS = [5, 10, 50, 100]
NEWER = ["kg", "sg", "pkg", "dchoices", "wchoices", "dkg", "consistent"]
TABLE2 = ["kg", "potc", "on-greedy", "off-greedy", "pkg"]
DKG = ["kg", "sg", "pkg", "dkg"]
DKG_RATE = 5000  # tuples/s, about DKG's measured throughput (Table 3)
SEEDS = 3  # PKG's few hot keys make one hash seed a lottery: Table II and Fig. 2 report the median of 3


def studies(messages: int) -> dict[str, tuple[Study, bool]]:
    """Experiment name → (study, whether to keep the I(t) series)."""
    m = messages
    return {
        # PKG Table II: average imbalance of PKG vs. the baselines, one source.
        "pkg_table2_wp": (Study("wp", TABLE2, PKG_WORKERS, [1], m, repeat=SEEDS), False),
        "pkg_table2_tw": (Study("tw", TABLE2, PKG_WORKERS, [1], m, repeat=SEEDS), False),
        # PKG Fig. 2: hashing (H) vs. global (G) vs. local estimation (L_S) over datasets, W and S.
        **{f"pkg_fig2_{name}": (Study(spec, ["kg", "pkg-global", "pkg"], PKG_WORKERS, [5, 10, 20], m, repeat=SEEDS), False)
           for name, spec in [("wp", "wp"), ("tw", "tw"), ("ct", "ct"),
                              ("ln1", "lognormal:preset=LN1"), ("ln2", "lognormal:preset=LN2")]},
        # PKG Fig. 3: I(t) through time with S=5, and periodic probing (L5P1).
        "pkg_fig3": (Study("ct", ["kg", "pkg-global", "pkg", "pkg-probe"], [10, 50], [5], m), True),
        # PKG Fig. 4: skewed (by-key) vs. uniform split of a graph's edges to the sources.
        "pkg_fig4_key": (Study("graph", ["pkg"], PKG_WORKERS, [5, 10, 20], m, split="key"), False),
        "pkg_fig4_shuffle": (Study("graph", ["pkg"], PKG_WORKERS, [5, 10, 20], m, split="shuffle"), False),
        # Successors of PKG side by side on the same streams.
        "newer_wp": (Study("wp", NEWER, PKG_WORKERS, [5], m), False),
        "newer_ln1": (Study("lognormal:preset=LN1", NEWER, PKG_WORKERS, [5], m), False),
        # DKG Fig. 11: StdDev and DistCost as the share of the hottest country grows (5 sources, 10 workers),
        # and Table 3's 68% skew. At the paper's few thousand tuples/s, so its 15 s / 60 s promotion cycles turn.
        **{f"dkg_skew_{r:03d}": (Study(f"country:skew={r / 100},rate={DKG_RATE}", DKG, [10], [5], m), False)
           for r in [*range(0, 101, 10), 68]},
        # Gedik §5 and Fang §6: adaptive partitioning functions under a Zipf stream, rebalanced every interval.
        "adaptive_zipf": (Study("zipf:z=1.0,keys=100000", ["kg", "consistent", "gedik-scan", "gedik-redist",
                                                          "gedik-readj", "llfd", "mintable", "minmig", "mixed"],
                                [10, 40], [1], m), False),
        # Scale-out: one worker added half-way (Gedik grows N one channel at a time; Fang adds an instance).
        "scale_out": (Study("zipf:z=1.0,keys=100000", ["kg", "consistent", "gedik-readj", "mixed"], [10], [1], m,
                            schedule={m // 2: 11}), True),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="results folder (must not exist yet)")
    parser.add_argument("--messages", type=int, default=2_000_000, help="messages per stream (default 2M)")
    parser.add_argument("--only", help="comma-separated experiment names (default: all)")
    args = parser.parse_args(argv)
    chosen = studies(args.messages)
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
