"""What every section shares: reading result tables, saving figures, Markdown tables."""

from __future__ import annotations

import json
import numbers
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from skewbench.analysis.fidelity import fidelity, with_work
from skewbench.analysis.published import entries


BAND = ("pi", 100)  # a figure's band around the seeds' median: their whole spread (no bootstrap: 5 seeds)
SMOKE_RUN = ("A smoke run (make bench QUICK=1, skewbench bench --quick): every study, app and a few schemes "
             "once, on small batches, to check that everything runs and gives the single-process reference's "
             "answer. Its numbers are not measurements (too few and too small runs) and it draws no conclusions: "
             "no comparison with the papers, no fidelity table. make bench measures.")


def smoke_run(folder: Path) -> bool:
    """Whether ``folder`` is a bench run with the quick profile (its ``plan.json`` says so)."""
    plan = folder / "plan.json"
    return plan.is_file() and json.loads(plan.read_text()).get("profile") == "quick"


def load(folder: Path, prefix: str) -> pd.DataFrame | None:
    files = sorted(p for p in folder.glob(f"{prefix}*.csv") if not p.name.endswith(".timeseries.csv"))
    return pd.concat([_read(p).assign(experiment=p.stem) for p in files], ignore_index=True) if files else None


def _read(path: Path) -> pd.DataFrame:
    """A result table; a bench's Spark runs (checked against the simulator: ``sim_exact``) with their work
    mode and latency source (:func:`~skewbench.analysis.fidelity.with_work`)."""
    table = pd.read_csv(path)
    if "sim_exact" not in table:
        return table
    meta = path.with_name(path.name + ".meta.json")
    environment = json.loads(meta.read_text()).get("environment", {}) if meta.is_file() else {}
    return with_work(table, environment.get("machine", {}).get("cpus", 1))


def latency(label: str, rows: pd.DataFrame) -> str:
    """A latency's label, saying where the runs behind it computed it rather than observed it."""
    sources = set(rows.get("latency_source", pd.Series(dtype=str)).dropna())
    if sources == {"computed"}:
        return f"{label} (computed)"
    return f"{label} (computed for emulated runs)" if "computed" in sources else label


def with_latency_labels(table: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """``table`` (a summary of ``rows``) with each latency column labelled by :func:`latency`."""
    return table.rename(columns={c: latency(c, rows) for c in table.columns if str(c).startswith("latency")})


def figure(folder: Path, name: str, grid) -> str:
    path = folder / f"{name}.png"
    grid.savefig(path, dpi=110, bbox_inches="tight")
    plt.close("all")
    return f"![{name}]({path.name})"


def floored(data: pd.DataFrame, column: str = "imbalance_fraction", n: str = "messages") -> pd.DataFrame:
    """Log axes cannot show 0: a perfectly balanced run is drawn at half a message (0.5 / n)."""
    return data.assign(**{column: data[column].clip(lower=0.5 / data[n])})


def markdown(table: pd.DataFrame) -> str:
    header = "| " + " | ".join(map(str, table.columns)) + " |"
    rule = "|" + "---|" * len(table.columns)
    def cell(v) -> str:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            return str(v)
        return f"{v:,.0f}" if 1e3 <= abs(v) < 1e9 else f"{v:.3g}"  # rates and counts in full
    return "\n".join([header, rule] + ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.values])


def study_table(folder: Path, name: str) -> pd.DataFrame | None:
    path = folder / f"{name}.csv"
    return _read(path) if path.exists() else None


def comparison(folder: Path, name: str) -> dict:
    path = folder / f"{name}_vs_paper.json"
    return json.loads(path.read_text()) if path.exists() else {}


# --- the paper's numbers for one figure beside ours (the fidelity table's rows) ---------------------------

_SIGN = {"at_least": "≥ ", "at_most": "≤ ", "up_to": "up to ", "about": "≈ "}


def beside(folder: Path, paper: str) -> pd.DataFrame:
    """The paper's entries with our value, verdict and the rule that decided it
    (``analysis/measures/<paper>.yaml`` evaluated on ``folder``), indexed by entry id."""
    ours = fidelity(folder).query("paper == @paper").set_index("entry")
    theirs = pd.DataFrame([e for e in entries() if e["paper"] == paper]).set_index("id")
    return theirs[["kind", "value", "value_max", "qualifier", "unit", "direction"]].join(
        ours[["our_value", "verdict", "rule"]])


def published_table(rows: pd.DataFrame, paper: str) -> list[str]:
    """Markdown lines: the published numbers and claims ``rows`` (of :func:`beside`) beside ours."""
    rows = rows[rows.verdict != "not measurable"]
    if rows.empty:
        return []
    table = pd.DataFrame({"published entry": rows.index, "paper": [_paper_cell(r) for r in rows.itertuples()],
                          "ours": [number(v) for v in rows.our_value], "verdict": rows.verdict.values,
                          "rule": rows.rule.values})
    return [f"The paper beside ours (our value of a claim is its subject, or a trend's last / first point; "
            f"`analysis/measures/{paper}.yaml` says what each reads, `fidelity.csv` why a verdict is not "
            "`agrees`):", "", markdown(table), ""]


def _paper_cell(row) -> str:
    if row.kind == "claim":
        return f"claim ({row.direction})"
    unit = "" if row.unit in ("ratio", None) or pd.isna(row.unit) else f" {row.unit}"
    if row.qualifier == "range":
        return f"{number(row.value)}–{number(row.value_max)}{unit}"
    return f"{_SIGN.get(row.qualifier, '')}{number(row.value)}{unit}"


def number(value) -> str:
    """A published or measured number: counts in full, others to 3 significant digits, a dash for none."""
    if value is None or pd.isna(value):
        return "–"
    return f"{value:,.0f}" if 1e3 <= abs(value) < 1e9 else f"{value:.3g}"
