"""What every section shares: reading result tables, saving figures, Markdown tables."""

from __future__ import annotations

import json
import numbers
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd


def load(folder: Path, prefix: str) -> pd.DataFrame | None:
    files = sorted(p for p in folder.glob(f"{prefix}*.csv") if not p.name.endswith(".timeseries.csv"))
    return pd.concat([pd.read_csv(p).assign(experiment=p.stem) for p in files], ignore_index=True) if files else None


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
    return pd.read_csv(path) if path.exists() else None


def comparison(folder: Path, name: str) -> dict:
    path = folder / f"{name}_vs_paper.json"
    return json.loads(path.read_text()) if path.exists() else {}
