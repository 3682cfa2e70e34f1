"""The HTML report (analysis/html.py): built from a small results folder and rendered in headless Chromium.

Debian's ``chromium`` and ``chromium-driver`` (``make browser``, a prerequisite of ``make test``) run the page
through Selenium, Selenium's own driver download switched off by naming both binaries.  The full-page
screenshot lands in the test's tmp folder and in /tmp/skewbench-report.png for a person to look at.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pandas as pd
import pytest
from markupsafe import escape

from skewbench.analysis import html

REPO = Path(__file__).resolve().parents[1]
KEPT = REPO / "reports" / "bench-20261127b"  # a bench with three seeds per point: repeats to compare
SCREENSHOT = Path("/tmp/skewbench-report.png")
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")

FIDELITY = [  # a realistic analysis/fidelity.py output, one row per verdict and then some
    ("dkg", "table3_twitter_election.PKG.stddev", "Table 3", 12.4, 12.1, 0.976, "agrees", "ratio", "",
     "study/{study}.csv"),
    ("pkg", "storm_throughput_gain_pct", "Sec. VI Q4, Fig. 5a", 60, 48.5, 0.81, "agrees", "ratio", "", "storm.csv"),
    ("pkg", "uniform_keys_imbalance_fraction", "Sec. V Q1", 0.156, 0.405, 2.6, "agrees", "bound", "",
     "study/{study}.csv"),
    ("pkg", "storm_kg_drop_pct", "Sec. VI Q4", 60, 86.8, 1.45, "direction", "neutral side",
     "the pipeline bounds the input only through the workers, not a spout", "storm.csv"),
    ("dkg", "table3_twitter_election.SG.dist_cost", "Table 3", 2.45, 10, 4.08, "differs", "ratio",
     "the stand-in has 204 frequent keys where the paper's trace has millions of rare ones", "dkg.csv"),
    ("gedik", "fig9_migration_cost", "Sec. 6, Fig. 9", None, None, None, "not measured", "",
     "no recipe in analysis/measures/gedik.yaml yet", ""),
    ("fang", "datasets.Stock.keys", "Sec. 6.1", 1036, None, None, "not measurable", "",
     "dataset description: an input (our stand-ins are built to match it), not a result", ""),
]


def fidelity_csv(folder: Path, study: str) -> None:
    rows = [(*row[:-1], row[-1].format(study=study)) for row in FIDELITY]
    pd.DataFrame(rows, columns=["paper", "entry", "where", "paper_value", "our_value", "ratio", "verdict", "rule",
                                "reason", "result_file"]).to_csv(folder / "fidelity.csv", index=False)


def build(folder: Path) -> Path:
    """A bench subset (PKG's Storm point, 3 seeds, one run's provenance) with a make study kept in study/."""
    from skewbench.analysis.report import write_report
    from skewbench.bench.study import Study, run_study

    folder.mkdir()
    for name in ("storm.csv", "storm.csv.meta.json", "storm_vs_paper.json"):
        shutil.copy(KEPT / name, folder / name)
    run = next((KEPT / "runs").glob("storm-*/run.meta.json"))
    (folder / "runs" / run.parent.name).mkdir(parents=True)
    shutil.copy(run, folder / "runs" / run.parent.name / run.name)
    write_report(folder)
    study = "pkg_fig2_zipf"  # a make study table the report draws (a figure), small: two seeds of 20k messages
    run_study(Study("zipf:z=1.0,keys=2000", ["kg", "pkg-global", "pkg"], [5, 10], [5], 20_000, repeat=2),
              folder / "study" / f"{study}.csv")
    write_report(folder / "study")
    fidelity_csv(folder, study)  # in place of the one write_report made: rows of every verdict
    return html.write_html(folder)


def browser():
    """Headless Chromium through Debian's chromedriver (skip only where it cannot be installed)."""
    if not (CHROMIUM and CHROMEDRIVER):
        if os.geteuid() != 0:
            pytest.skip("chromium and chromedriver are missing and only root can install them: "
                        "sudo apt-get install chromium chromium-driver (or sudo make browser)")
        pytest.fail("chromium and chromedriver are missing: run `make browser` (make test does)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1000", "--hide-scrollbars"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    index = build(tmp_path_factory.mktemp("html") / "report")
    driver = browser()
    try:
        driver.get(index.as_uri())
        yield driver, index
    finally:
        driver.quit()


def screenshot(driver, path: Path) -> None:
    """The whole page, not only the window (Chrome's DevTools protocol: capture beyond the viewport)."""
    width, height = driver.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                             "clip": {"x": 0, "y": 0, "width": width, "height": height,
                                                                      "scale": 1}})
    path.write_bytes(base64.b64decode(shot["data"]))


@pytest.mark.slow
def test_page_loads_without_console_errors(page):
    driver, _ = page
    assert driver.title.startswith("skewbench report")
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


@pytest.mark.slow
def test_every_image_loads(page):
    driver, _ = page
    images = driver.execute_script(
        "return Array.from(document.images, i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
    sources = {src for src, *_ in images}
    assert "storm_throughput.png" in sources and any(s.startswith("study/") for s in sources)
    assert all(done and width > 0 for _, done, width in images), images


@pytest.mark.slow
def test_every_internal_link_resolves(page):
    driver, index = page
    links = driver.execute_script(
        "return Array.from(document.querySelectorAll('a[href]'), a => a.getAttribute('href'))")
    sections = driver.execute_script("return Array.from(document.querySelectorAll('main section[id]'), s => s.id)")
    anchors = [h[1:] for h in links if h.startswith("#")]
    files = [h for h in links if not h.startswith("#") and not urlsplit(h).scheme]
    missing = [a for a in anchors if not driver.execute_script("return !!document.getElementById(arguments[0])", a)]
    assert missing == []
    assert [f for f in files if not (index.parent / unquote(urlsplit(f).path)).is_file()] == []
    assert set(sections) <= set(anchors), "every section is in the contents bar"
    assert "storm.csv" in files and any(f.startswith("study/") for f in files)  # fidelity rows link result files


@pytest.mark.slow
def test_filters_show_only_the_chosen_rows(page):
    from selenium.webdriver.support.ui import Select

    driver, _ = page
    visible = "return Array.from(document.querySelectorAll('#fidelity-rows tr'))" \
              ".filter(r => r.offsetParent !== null).map(r => [r.dataset.paper, r.dataset.verdict])"
    assert len(driver.execute_script(visible)) == len(FIDELITY)
    Select(driver.find_element("id", "filter-verdict")).select_by_value("agrees")
    rows = driver.execute_script(visible)
    assert len(rows) == 3 and {v for _, v in rows} == {"agrees"}
    Select(driver.find_element("id", "filter-paper")).select_by_value("gedik")
    assert driver.execute_script(visible) == []
    Select(driver.find_element("id", "filter-verdict")).select_by_value("")
    assert driver.execute_script(visible) == [["gedik", "not measured"]]
    assert driver.find_element("id", "filter-count").text == f"1 of {len(FIDELITY)} entries"
    driver.find_element("css selector", "tr.all button[data-verdict='differs']").click()  # a total picks its rows
    assert driver.execute_script(visible) == [["dkg", "differs"]]
    driver.find_element("css selector", "tr.all button[data-rule='bound']").click()  # a split total: its rule's rows
    assert driver.execute_script(visible) == [["pkg", "agrees"]]
    assert Select(driver.find_element("id", "filter-rule")).first_selected_option.text == "bound"
    Select(driver.find_element("id", "filter-verdict")).select_by_value("")
    Select(driver.find_element("id", "filter-rule")).select_by_value("ratio")
    assert sorted(driver.execute_script(visible)) == [["dkg", "agrees"], ["dkg", "differs"], ["pkg", "agrees"]]
    Select(driver.find_element("id", "filter-rule")).select_by_value("")


@pytest.mark.slow
def test_full_page_screenshot(page, tmp_path):
    driver, index = page
    screenshot(driver, index.parent / "index.png")
    shutil.copy(index.parent / "index.png", SCREENSHOT)
    assert SCREENSHOT.stat().st_size > 50_000


# --- the parts, without a browser --------------------------------------------------------------------

def test_repeats_flag_spreads_over_ten_percent():
    table = pd.DataFrame({"scheme": ["kg"] * 3 + ["pkg"] * 3, "workers": 9, "seed": [0, 1, 2] * 2,
                          "throughput": [100, 104, 98, 100, 130, 90], "run": list("abcdef")})
    found = html.repeats({"storm.csv": table, "results.csv": table})
    assert found["groups"] == 2 and found["checked"] == {"storm.csv": 2, "results.csv": 2}
    [flag] = found["flagged"]  # listed once though both tables hold it
    assert flag["config"] == "scheme=pkg" and flag["tables"] == ["storm.csv", "results.csv"]
    assert flag["spread_pct"] == "40" and flag["median"] == "100"


def test_the_legend_explains_every_rule_and_each_row_shows_its_own(tmp_path):
    from skewbench.analysis.fidelity import RULES

    fidelity_csv(tmp_path, "study")
    page = html.write_html(tmp_path).read_text()
    legend = page[page.index('<dl class="rules">'):page.index("</dl>")]
    for rule, meaning in RULES.items():
        assert f'<dt class="rule">{rule}</dt><dd>{escape(meaning)}</dd>' in legend
    assert len(RULES) == 8 and "within 25 %" in RULES["ratio"]
    rows = re.findall(r'<tr class="v-[^"]+" data-paper="[^"]*" data-verdict="([^"]*)" data-rule="([^"]*)" data-origin="[^"]*">', page)
    assert rows == [(row[6], row[7]) for row in FIDELITY]  # the filters' data
    assert re.findall(r'<td class="rule">([^<]*)</td>', page) == [row[7] for row in FIDELITY]  # what a reader sees
    assert '<th class="split">agrees: bound</th>' in page and 'data-verdict="agrees" data-rule="bound">1<' in page


def test_a_folder_without_fidelity_says_how_to_make_it(tmp_path):
    (tmp_path / "report.md").write_text("# r\n\n## A\n\n![gone](gone.png)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    page = html.write_html(tmp_path).read_text()
    assert "python -m skewbench.analysis.fidelity DIR" in page
    assert "Figure gone.png is not in this folder" in page and '<div class="scroll"><table>' in page
    assert 'href="#s-a"' in page and 'id="s-a"' in page


def test_a_smoke_run_says_so_on_top_and_draws_no_conclusions(tmp_path):
    """A quick-profile bench (plan.json) lists its runs under the smoke-run note: no fidelity table, no paper."""
    from skewbench.analysis.report import write_report
    from skewbench.analysis.sections.common import SMOKE_RUN

    folder = tmp_path / "smoke"
    folder.mkdir()
    for name in ("results.csv", "results.csv.meta.json", "storm.csv", "storm.csv.meta.json"):
        shutil.copy(KEPT / name, folder / name)
    (folder / "plan.json").write_text('{"profile": "quick"}')
    text = write_report(folder).read_text()
    assert text.splitlines()[2] == f"> **{SMOKE_RUN}**"  # right under the title
    assert "## Every run of the smoke run" in text and "623 runs in 12 studies" in text
    assert "Fidelity" not in text and "PKG Storm" not in text and not (folder / "fidelity.csv").exists()
    page = (folder / "index.html").read_text()
    assert 'id="smoke"' in page and "a smoke run draws no conclusions" in page and '<table id="fidelity-table"' not in page
    (folder / "plan.json").write_text('{"profile": "default"}')
    assert "PKG Storm" in write_report(folder).read_text()  # the same tables, measured: every section
