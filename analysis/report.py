"""Turn a results folder into ``report.md`` with figures, beside the papers' published numbers.

Reads only result files (``*.csv`` and their ``.meta.json``) and ``published.yaml``; every section
appears only when its experiment was run.  The sections live in :mod:`skewbench.analysis.sections`, one
module per paper or bench study.  ``python -m skewbench.analysis.report RESULTS_DIR``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import seaborn as sns  # noqa: E402

from skewbench.analysis.sections import (  # noqa: E402
    adaptive, advice, bench, dkg, emulation, engine, fang, faults, fidelity, gedik, heterogeneous, ingest, live, newer,
    pkg, storm)
from skewbench.analysis.sections.common import SMOKE_RUN, smoke_run  # noqa: E402


def provenance(folder: Path) -> list[str]:
    metas = sorted(folder.glob("*.meta.json"))
    if not metas:
        return []
    envs = {m.name.removesuffix(".meta.json"): json.loads(m.read_text())["environment"] for m in metas}
    by_commit: dict[str, list[str]] = {}
    for name, e in envs.items():  # a report folder may gather tables measured at different commits
        by_commit.setdefault(e["git_commit"], []).append(name)
    commits = "; ".join(f"`{c}` ({', '.join(names)})" for c, names in by_commit.items())
    env = next(iter(envs.values()))
    pkgs = ", ".join(f"{k} {v}" for k, v in env["packages"].items())
    return ["## Provenance", f"commit {commits}, Python {env['python']}, {pkgs}; "
            f"{env['machine']['cpus']} CPUs on {env['machine']['system']}. "
            "Every CSV has a `.meta.json` beside it with the exact configuration.", ""]


SECTIONS = (bench.failed_runs, fidelity.fidelity_section, bench.bench_results, pkg.table2, pkg.fig2, pkg.fig3,
            pkg.fig4, pkg.newer, dkg.dkg, gedik.sections, fang.sections, adaptive.adaptive, adaptive.scale_out,
            storm.storm, storm.offered, storm.aggregation, engine.levers, engine.efficiency, engine.centre,
            emulation.emulation, bench.dkg_spark, bench.fang_spark, bench.naivebayes_spark, live.scaleout_spark,
            live.megaphone_spark, live.fang_live, live.fang_theta, bench.sustainable_spark, ingest.ingest_spark,
            faults.faults_spark, newer.newer_sweep, newer.newer_schemes, newer.dalton_claim, newer.newer_sources,
            newer.newer_skew, newer.newer_claims, heterogeneous.heterogeneous_sim, heterogeneous.heterogeneous_spark,
            advice.advice_checked, provenance)
# A smoke run's report (sections.common.SMOKE_RUN) lists its runs and draws no conclusions from them.
SMOKE_SECTIONS = (bench.failed_runs, bench.smoke_runs, provenance)


def write_report(folder: Path) -> Path:
    """Write ``folder/report.md`` (and its PNG figures, ``fidelity.csv`` and the page built from them,
    ``index.html``) from the result files in ``folder`` (``ValueError`` for result files of a newer format)."""
    from skewbench.analysis.html import write_html

    from skewbench.bench.provenance import check_format

    check_format(folder)
    sns.set_theme(style="whitegrid", context="paper")
    smoke = smoke_run(folder)
    lines = [f"# skewbench report — {folder.name}", ""] + ([f"> **{SMOKE_RUN}**", ""] if smoke else [])
    for section in SMOKE_SECTIONS if smoke else SECTIONS:
        lines += section(folder)
    path = folder / "report.md"
    path.write_text("\n".join(lines) + "\n")
    write_html(folder)
    return path


if __name__ == "__main__":
    print(write_report(Path(sys.argv[1])))
