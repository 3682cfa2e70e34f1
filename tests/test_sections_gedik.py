"""The Gedik report section (analysis/sections/gedik.py) on small gedik_* tables made by the real experiments."""

import re
import shutil

import matplotlib
import pandas as pd
import pytest
from skewbench.analysis.sections import gedik as section
from skewbench.bench.papers import gedik as G

matplotlib.use("Agg")  # files only, no display

D = 2000  # a small Zipf domain: every experiment of bench/papers/gedik.py in seconds
SETTINGS = {
    "gedik_resources": ([{"resources": r, "domain": D} for r in ("CCL", "LCL", "LLL", "LQL")], 4, {4}),
    "gedik_skew": ([{"resources": r, "z": z, "domain": D} for r in ("LCL", "LLL") for z in (0.2, 0.6, 1.0)]
                   + [{"resources": "LQL", "z": z, "domain": D} for z in (0.25, 0.5)], 4, {4}),
    # σ ≥ 0.05: at lower σ a 2000-item domain tracks hundreds of items and readj (cubic) takes seconds
    "gedik_sigma": ([{"resources": r, "sigma": s, "domain": D} for r in ("LCL", "LQL") for s in (0.05, 0.1, 1.0)]
                    + [{"resources": "LLL", "sigma": s, "domain": D, "schemes": ("gedik-scan",)} for s in (0.05, 0.1)],
                    4, {4}),
    "gedik_channels": ([{"domain": D}], 6, set(range(2, 7))),
    "gedik_utility": ([{"resources": r, "utility": u, "domain": D, "schemes": ("gedik-redist", "gedik-readj")}
                       for r in ("LCL", "LQL") for u in ("A", "APM", "ATM")], 4, {4}),
    "gedik_domain": ([{"domain": d} for d in (1000, D)], 4, {4}),
}
HEADINGS = ["Gedik Fig. 3 ", "Gedik Fig. 4 ", "Gedik Fig. 5 ", "Gedik Fig. 6 ", "Gedik Fig. 7 ", "Gedik Fig. 8 ",
            "Gedik Figs. 9-11 ", "Gedik Figs. 12-14 "]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """Every gedik_* table (and gedik_skew_onset) from the experiments' own code, 2 runs, N ≤ 6."""
    folder = tmp_path_factory.mktemp("gedik_tables")
    for name, (settings, upto, record) in SETTINGS.items():
        derived = ("onset", G.onset) if name == "gedik_skew" else None
        G.sweep(settings, upto, record, 5_000, runs=2, derived=derived)(folder / f"{name}.csv")
    return folder


@pytest.fixture(scope="module")
def rendered(tables, tmp_path_factory):
    """The whole section built once from a copy of the tables: (folder, lines)."""
    folder = shutil.copytree(tables, tmp_path_factory.mktemp("gedik_section") / "all")
    return folder, section.sections(folder)


def headings(lines):
    return [line.removeprefix("## ") for line in lines if line.startswith("## ")]


def images(lines):
    return [m for line in lines for m in re.findall(r"!\[[^]]*\]\(([^)]+)\)", line)]


def test_every_figure_group_with_nonempty_pngs(rendered):
    folder, lines = rendered
    assert [next(h for h in headings(lines) if h.startswith(p)) for p in HEADINGS]  # each present...
    assert len(headings(lines)) == len(HEADINGS)  # ...once
    pngs = images(lines)
    assert len(pngs) == len(HEADINGS)
    for name in pngs:
        data = (folder / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5_000


def test_published_values_sit_beside_ours(rendered):
    """Fig. 3's LLL numbers from Sec. 5.3 appear in its table, beside the median of our rows."""
    folder, lines = rendered
    fig3 = "\n".join(lines).split("## Gedik Fig. 3")[1].split("## ")[0]
    row = next(line for line in fig3.splitlines() if "results.readj_relative_imbalance_LLL" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    data = pd.read_csv(folder / "gedik_resources.csv")
    ours = data[(data.scheme == "gedik-readj") & (data.resources == "LLL")].relative_imbalance.median()
    assert cells[1:3] == ["≈ 1.2", f"{ours:.3g}"]


def test_onset_table_is_the_median_skew_over_the_line(rendered):
    folder, lines = rendered
    onset = pd.read_csv(folder / "gedik_skew_onset.csv")
    expected = onset[(onset.scheme == "kg") & (onset.resources == "LQL")].onset_z.median()
    row = next(line for line in "\n".join(lines).splitlines() if line.startswith("| LQL |"))
    assert row.split("|")[2].strip() == f"{expected:.3g}"


def test_only_the_figures_whose_tables_are_there(tables, tmp_path):
    (tmp_path / "one").mkdir()
    shutil.copy(tables / "gedik_channels.csv", tmp_path / "one")
    found = headings(section.sections(tmp_path / "one"))
    assert [h.split(" —")[0] for h in found] == ["Gedik Fig. 6", "Gedik Figs. 9-11", "Gedik Figs. 12-14"]


def test_no_gedik_tables_no_section(tmp_path):
    pd.DataFrame({"scheme": ["kg"], "workers": [2]}).to_csv(tmp_path / "pkg_fig2.csv", index=False)
    pd.DataFrame({"onset_z": [0.5]}).to_csv(tmp_path / "gedik_skew_onset.csv", index=False)  # derived alone
    assert section.sections(tmp_path) == []
    assert not list(tmp_path.glob("*.png"))
