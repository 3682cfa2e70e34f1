"""The HTML report a person reads: ``folder/index.html``, one self-contained page.

It reads only the result files in the folder (and in ``folder/study/``, a ``make study`` kept inside a
bench): the fidelity table (``fidelity.csv``, filterable, with totals), each study's sections rendered
from the ``report.md`` that :func:`skewbench.analysis.report.write_report` wrote (one section per heading,
figures referenced by relative path), repeats whose main metric spreads by more than 10 %, the
methodology, the environment summarised from the ``*.meta.json`` files, and caveats.
``python -m skewbench.analysis.html DIR``.

Jinja2 renders the page because it escapes every value from a result file by default; ``markdown``
(with its ``tables`` extension) renders ``report.md`` so that the page never re-derives its numbers.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import jinja2
import markdown
import pandas as pd
from markupsafe import Markup

from skewbench.analysis.fidelity import COLUMNS, RULES, VERDICTS, tiers, totals
from skewbench.analysis.sections.common import SMOKE_RUN, smoke_run

TEMPLATES = Path(__file__).with_name("templates")
SPREAD_LIMIT = 0.10  # repeats whose main metric spreads more than this ((max − min) / median) are flagged
# What identifies a configuration in a result table; rows equal on these and different in `seed` are repeats.
# A simulation table's string columns count too (a paper's own table may add some), except those naming one run.
BENCH_FACTORS = ("study", "app", "scheme", "workers", "sources", "delay_ms", "workload", "messages", "batches",
                 "batch_rows", "rate", "aggregation_period", "split", "period", "delay_mode")
SIM_FACTORS = ("experiment", "workload", "scheme", "workers", "final_workers", "sources", "split", "messages",
               "interval", "params")
NOT_FACTORS = {"seed", "run", "search_of", "why", "correct"}
# report.md's sections that this page has in full: the fidelity table first, provenance as Environment
SKIPPED_SECTIONS = ("Fidelity", "Provenance")


@dataclass
class Section:
    """One heading of report.md: ``level`` 2 or 3, ``body`` its rendered HTML."""

    id: str
    title: str
    level: int
    body: Markup


def write_html(folder: Path) -> Path:
    """Write ``folder/index.html`` from the result files in ``folder``; returns its path."""
    folder = Path(folder)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    tables = result_tables(folder)
    metas = meta_files(folder)
    smoke = SMOKE_RUN if smoke_run(folder) else None
    page = env.get_template("report.html.j2").render(
        title=f"skewbench report — {folder.name}", smoke=smoke, fidelity=None if smoke else fidelity(folder),
        studies=study_sections(folder),
        reports=[str(p.relative_to(folder)) for p in (folder / "report.md", folder / "study/report.md") if p.exists()],
        repeats=repeats(tables), methodology=methodology(folder, tables), environment=environment(metas),
        caveats=caveats(tables, metas))
    path = folder / "index.html"
    path.write_text(page)
    return path


# --- numbers -----------------------------------------------------------------------------------------

def fmt(value) -> str:
    """A cell: counts and rates in full, others to 3 significant digits, blanks as a dash."""
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return "—"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isinf(number):
        return "∞" if number > 0 else "−∞"
    return f"{number:,.0f}" if 1e3 <= abs(number) < 1e9 else f"{number:.3g}"


# --- the fidelity table ------------------------------------------------------------------------------

def fidelity(folder: Path) -> dict | None:
    """Rows, per-paper totals and tiers, the changed recipes and the rules of ``fidelity.csv``; None when the
    folder has none."""
    path = folder / "fidelity.csv"
    if not path.exists():
        return None
    # an older fidelity.csv lacks the newer columns (tier, measured_on, ...): they read as blanks
    table = pd.read_csv(path, dtype=str, keep_default_na=False).reindex(columns=list(COLUMNS), fill_value="")
    rows = [{"paper": r.paper, "entry": r.entry, "where": r.where, "paper_value": fmt(r.paper_value),
             "our_value": fmt(r.our_value), "ratio": fmt(r.ratio), "tier": r.tier, "runs": r.runs.removesuffix(".0"),
             "verdict": r.verdict, "rule": r.rule, "slug": slug(r.verdict), "measured_on": r.measured_on,
             "work": r.work, "reason": r.reason, "caveat": r.caveat if r.caveat != r.reason else "",
             "first": f"{r.first_verdict} ({fmt(r.first_value)})" if r.first_verdict else "", "change": r.change,
             "fixed": r.fixed, "files": _files(folder, r.result_file), "text": r.text}
            for r in table.itertuples()]
    rows.sort(key=lambda row: row["verdict"] == "not measurable")  # results first, setup values last (stable)
    counts, tiered = totals(table), tiers(table)
    return {"rows": rows, "papers": sorted(table["paper"].unique()), "verdicts": VERDICTS, "rules": RULES,
            "origins": sorted({r["measured_on"] for r in rows} - {""}),
            "totals_columns": [(c, _picks(c)) for c in counts.columns],
            "totals": [(p, list(map(int, v))) for p, v in counts.iterrows()],
            "tiers_columns": list(tiered.columns), "tiers": [(p, list(map(int, v))) for p, v in tiered.iterrows()],
            "changed": sum(1 for r in rows if r["change"]),
            "figure": "fidelity.png" if (folder / "fidelity.png").is_file() else None}


def _picks(column: str) -> tuple[str, str] | None:
    """The (verdict, rule) a totals column counts, for the filters its counts set: ``differs`` or
    ``agrees: ratio``; None for the others (entries, measured, …)."""
    verdict, _, rule = column.partition(": ")
    return (verdict, rule) if verdict in VERDICTS else None


def _files(folder: Path, names: str) -> list[tuple[str, bool]]:
    """The result files a row was read from, each with whether it is here to link to."""
    return [(name, (folder / name).is_file()) for name in (n.strip() for n in names.split(",")) if name]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


# --- the studies, from report.md ---------------------------------------------------------------------

def study_sections(folder: Path) -> list[Section]:
    """Every ``##``/``###`` section of ``report.md`` and of ``study/report.md``, rendered."""
    sections, seen = [], set()
    for base in ("", "study/"):
        path = folder / base / "report.md"
        if path.exists():
            sections += _split(path.read_text(), folder, base, seen)
    return sections


def _split(text: str, folder: Path, base: str, seen: set) -> list[Section]:
    parts = re.split(r"^(#{2,3}) +(.+)$", text, flags=re.M)  # [preamble, hashes, title, body, ...]
    sections = []
    for hashes, title, body in zip(parts[1::3], parts[2::3], parts[3::3]):
        if title.strip().startswith(SKIPPED_SECTIONS):
            continue
        sections.append(Section(_unique("s-" + slug(title)[:60], seen), title.strip(), len(hashes),
                                Markup(_render(body, folder, base))))
    return sections


def _unique(name: str, seen: set) -> str:
    candidate, n = name, 1
    while candidate in seen:
        n += 1
        candidate = f"{name}-{n}"
    seen.add(candidate)
    return candidate


def _render(body: str, folder: Path, base: str) -> str:
    """Markdown to HTML; figures link to their full-size file (or say they are missing), tables scroll."""
    html = markdown.markdown(body, extensions=["tables"])

    def figure(match: re.Match) -> str:
        src = base + match.group(2)
        if not (folder / src).is_file():
            return f'<p class="missing">Figure {src} is not in this folder.</p>'
        return f'<a class="figure" href="{src}">{match.group(1)}{src}{match.group(3)}</a>'

    html = re.sub(r'(<img[^>]*src=")([^"]+)("[^>]*>)', figure, html)
    number = r"<td>([-−+]?[\d,.]+(?:e[-+]?\d+)?( ?%| s)?|—)</td>"
    html = re.sub(number, r'<td class="n">\1</td>', html)  # numbers align right, as in the page's own tables
    return html.replace("<table>", '<div class="scroll"><table>').replace("</table>", "</table></div>")


# --- result tables and repeats -----------------------------------------------------------------------

def result_tables(folder: Path) -> dict[str, pd.DataFrame]:
    """Every result CSV of the folder and of ``study/`` by relative name (time series and fidelity.csv
    are not results of one run each); ``results.csv`` last, since a bench's study tables repeat its rows."""
    paths = sorted(list(folder.glob("*.csv")) + list(folder.glob("study/*.csv")), key=lambda p: p.name == "results.csv")
    tables = {}
    for path in paths:
        if path.name.endswith(".timeseries.csv") or path.name == "fidelity.csv":
            continue
        try:
            tables[str(path.relative_to(folder))] = pd.read_csv(path)
        except (ValueError, UnicodeDecodeError):  # not a tidy table (pandas' parser errors are ValueErrors)
            continue
    return tables


def kind(table: pd.DataFrame) -> str | None:
    """``bench`` (a Spark run per row), ``simulation`` or None (neither: not checked for repeats)."""
    return "bench" if "throughput" in table else "simulation" if "avg_imbalance" in table else None


def factors(table: pd.DataFrame) -> list[str]:
    """The columns that identify a configuration (driver.py writes bench tables: its columns are known)."""
    if kind(table) == "bench":
        return [c for c in table.columns if c in BENCH_FACTORS]
    def strings(c: str) -> bool:
        return table[c].dtype == object and table[c].dropna().map(lambda v: isinstance(v, str)).all()
    return [c for c in table.columns if (c in SIM_FACTORS or strings(c)) and c not in NOT_FACTORS]


def repeat_groups(table: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration run with several seeds: its label, seeds, median, min, max and spread of
    the main metric (throughput for bench tables, avg_imbalance for simulations)."""
    metric = "throughput" if kind(table) == "bench" else "avg_imbalance"
    keys = factors(table)
    varying = _informative(table, keys)
    rows = []
    for values, part in table.groupby(keys, dropna=False, sort=False) if keys else []:
        if part["seed"].nunique() < 2:
            continue
        got = part[metric].astype(float)
        median, spread = got.median(), got.max() - got.min()
        rows.append({"config": " · ".join(f"{c}={fmt(v)}" for c, v in zip(keys, values) if c in varying) or "—",
                     "key": (metric,) + tuple(map(str, values)), "metric": metric, "seeds": len(part),
                     "median": median, "min": got.min(), "max": got.max(),
                     "spread": spread / abs(median) if median else (0.0 if spread == 0 else math.inf)})
    return pd.DataFrame(rows)


def _informative(table: pd.DataFrame, keys: list[str]) -> list[str]:
    """The factors a label needs: those that vary in the table and do not repeat an earlier one
    (``final_workers`` equals ``workers`` without a scale-out)."""
    kept: list[str] = []
    for c in keys:
        if table[c].nunique(dropna=False) > 1 and not any(table[c].equals(table[k]) for k in kept):
            kept.append(c)
    return kept


def repeats(tables: dict[str, pd.DataFrame]) -> dict:
    """Groups of repeats per table, and those that disagree (spread > 10 %), each listed once even when
    ``results.csv`` repeats a study table's rows."""
    groups: dict[tuple, dict] = {}
    checked = {}
    for name, table in tables.items():
        if "seed" not in table or kind(table) is None:
            continue
        found = repeat_groups(table)
        checked[name] = len(found)
        for row in found.to_dict("records"):
            groups.setdefault(row["key"], {**row, "tables": []})["tables"].append(name)
    flagged = sorted((g for g in groups.values() if g["spread"] > SPREAD_LIMIT), key=lambda g: -g["spread"])
    return {"checked": checked, "groups": len(groups), "limit": SPREAD_LIMIT,
            "flagged": [{**g, "median": fmt(g["median"]), "range": f"{fmt(g['min'])} – {fmt(g['max'])}",
                         "spread_pct": fmt(100 * g["spread"])} for g in flagged]}


# --- methodology -------------------------------------------------------------------------------------

def methodology(folder: Path, tables: dict[str, pd.DataFrame]) -> dict:
    """Which parts apply (bench, simulation) and the numbers the text quotes from the results."""
    kinds = {kind(t) for t in tables.values()}
    runs = tables.get("results.csv")
    if runs is None:
        benches = [t for t in tables.values() if kind(t) == "bench"]
        runs = pd.concat(benches, ignore_index=True) if benches else None
    overhead = []
    if runs is not None and {"overhead_median_s", "workers"} <= set(runs.columns):
        by_w = runs.groupby("workers")["overhead_median_s"].median().dropna()
        overhead = [(int(w), f"{s:.2f}") for w, s in by_w.items()]
    plan = _json(folder / "plan.json")
    return {"bench": "bench" in kinds, "simulation": "simulation" in kinds, "overhead": overhead,
            "order_seed": plan.get("order_seed"), "engine_model": (folder / "engine_model.json").exists()}


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


# --- environment and provenance ----------------------------------------------------------------------

def meta_files(folder: Path) -> dict[str, dict]:
    """Every ``*.meta.json`` of the folder, of ``study/`` and of each run folder, by relative name."""
    paths = [*folder.glob("*.meta.json"), *folder.glob("study/*.meta.json"), *folder.glob("runs/*/run.meta.json")]
    return {str(p.relative_to(folder)): m for p in sorted(paths) if (m := _json(p))}


def environment(metas: dict[str, dict]) -> dict | None:
    """Versions, commits, machines, commands and cluster shape, each value once with what it covers."""
    if not metas:
        return None
    envs = {name: m.get("environment", {}) for name, m in metas.items()}
    commits = _by(envs, lambda e: e.get("git_commit"))
    packages = defaultdict(set)
    for e in envs.values():
        for name, version in e.get("packages", {}).items():
            packages[name].add(version)
    created = sorted(e["created_utc"] for e in envs.values() if e.get("created_utc"))
    return {"files": len(metas),
            "commits": commits,
            "python": ", ".join(sorted({e.get("python", "?") for e in envs.values()})),
            "packages": [(n, ", ".join(sorted(v))) for n, v in sorted(packages.items())],
            "machines": _by(envs, lambda e: _machine(e.get("machine", {}))),
            "created": (created[0], created[-1]) if created else None,
            "commands": _by(envs, lambda e: _command(e.get("command", []))),
            "cluster": _by(metas, lambda m: _cluster(m.get("config", {}))),
            "spark": ", ".join(sorted({str(m["config"]["spark_version"]) for m in metas.values()
                                       if isinstance(m.get("config"), dict) and m["config"].get("spark_version")}))}


def _by(items: dict[str, dict], describe) -> list[tuple[str, str]]:
    """(value, which files have it) for each distinct description; run folders are counted, not listed."""
    names = defaultdict(list)
    for name, item in items.items():
        value = describe(item)
        if value:
            names[value].append(name)
    tables = {n for n in items if not n.startswith("runs/")}
    return [(value, _covers(found, tables)) for value, found in names.items()]


def _covers(names: list[str], every_table: set[str]) -> str:
    runs = [n for n in names if n.startswith("runs/")]
    tables = [n.removesuffix(".meta.json") for n in names if not n.startswith("runs/")]
    if len(tables) > 2 and set(names) >= every_table:
        tables = [f"all {len(tables)} tables"]
    return ", ".join(tables + ([f"{len(runs)} run folder{'s' * (len(runs) > 1)}"] if runs else []))


def _machine(m: dict) -> str:
    return f"{m['host']}: {m['cpus']} CPUs, {m['system']}" if {"host", "cpus", "system"} <= m.keys() else ""


def _command(argv: list[str]) -> str:
    """``skewbench …`` for the CLI (its path is a clone's, not worth showing), else the command as run."""
    if not argv:
        return ""
    program = Path(argv[0])
    name = ("skewbench" if program.name == "cli.py" else f"python -m {program.parent.name}"
            if program.name == "__main__.py" else program.name)
    words = [name, *argv[1:]]
    text = " ".join(words)
    return text if len(text) <= 160 else text[:157] + "…"


def _cluster(config: dict) -> str:
    """A run folder's cluster: master, workers × cores and memory (a bench's results, its task slots)."""
    if not isinstance(config, dict):
        return ""
    cluster = config.get("cluster")
    if isinstance(cluster, dict) and cluster.get("workers"):
        nodes = ", ".join(f"{w['host']} ({w['cores']} slots, {w['memory'] / 1024:g} GiB)" for w in cluster["workers"])
        return f"{cluster.get('url', '?')}: {len(cluster['workers'])} workers — {nodes}"
    if "slots" in config and "master" in config:
        return f"{config['master']}: {config['slots']} task slots"
    return ""


# --- caveats -----------------------------------------------------------------------------------------

def caveats(tables: dict[str, pd.DataFrame], metas: dict[str, dict]) -> list[Markup]:
    """What a reader must keep in mind, each only where the results here call for it (HTML: values from
    the result files go in through ``Markup.format``, which escapes them)."""
    notes = []
    bench = [t for t in tables.values() if kind(t) == "bench"]
    notes += _cluster_caveats(metas) if bench else []
    if bench:
        notes.append("Spark runs micro-batches: a batch lasts the engine's cost plus the busiest worker's time, "
                     "where Storm (the papers' engine) overlaps the two per tuple; compare ratios between schemes "
                     "rather than absolute throughputs.")
        schemes = set(pd.concat([t["scheme"] for t in bench if "scheme" in t]).unique())
        if schemes & {"gedik-scan", "gedik-redist", "gedik-readj", "llfd", "mintable", "minmig", "mixed"}:
            notes.append("Adaptive schemes (Gedik, Fang) run on Spark with one table fitted on the first 10 % of the "
                         "stream: no live migration yet.")
        seeds = max((t["seed"].nunique() for t in bench if "seed" in t), default=0)
        if seeds <= 1:
            notes.append("Every Spark point here ran with one seed: run-to-run variation is not measured, so a "
                         "difference of a few per cent between schemes may be noise.")
    workloads = set().union(*(set(t["workload"].astype(str)) for t in tables.values() if "workload" in t))
    if workloads & {"wp", "tw", "ct"} or any(w.startswith(("lognormal", "country")) for w in workloads):
        notes.append("The papers' data sets are stood in for: WP, TW and CT are synthetic streams with the traces' "
                     "key counts and hottest-key shares (p1), LN1/LN2 and the country sets are regenerated from the "
                     "papers' parameters; real traces can be loaded from files (<code>file:</code>, "
                     "<code>pageviews:</code>).")
    commits = {m.get("environment", {}).get("git_commit") for m in metas.values()} - {None}
    if len(commits) > 1:
        notes.append(Markup("The results were made at {} commits (see Environment): tables rebuilt later may use a "
                            "newer simulator or engine model than the runs.").format(len(commits)))
    if any(str(c).endswith("-dirty") for c in commits):
        notes.append("Some results were made from a working tree with uncommitted changes (<code>-dirty</code>).")
    return [Markup(n) for n in notes]


def _cluster_caveats(metas: dict[str, dict]) -> list[Markup]:
    """Task slots beyond the cores: the injected delay is slept, not spun, and the engine shares the cores."""
    for m in metas.values():
        config, machine = m.get("config", {}), m.get("environment", {}).get("machine", {})
        cluster = config.get("cluster") if isinstance(config, dict) else None
        if isinstance(cluster, dict) and cluster.get("cores", 0) > machine.get("cpus", math.inf):
            text = Markup("The cluster had {} task slots and the driver's machine {} CPUs (the local cluster of "
                          "<code>make bench</code> runs every node on that one machine); the injected delay was "
                          "<code>{}</code> — slept wall time lets slots outnumber cores — so throughputs measure this "
                          "set-up, not the papers' clusters.")
            return [text.format(cluster["cores"], machine["cpus"], config.get("delay_mode", "?"))]
    return []


if __name__ == "__main__":
    print(write_html(Path(sys.argv[1])))
