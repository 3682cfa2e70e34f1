"""The heterogeneous-workers report sections (analysis/sections/heterogeneous.py): the simulator's from a real
small study, the cluster's from a bench table whose throughputs are given, so the shares are known."""

import matplotlib
import pandas as pd

matplotlib.use("Agg")

from skewbench.analysis.sections.heterogeneous import heterogeneous_sim, heterogeneous_spark  # noqa: E402
from skewbench.bench.papers.newer import told  # noqa: E402
from skewbench.bench.study import Study, run_study  # noqa: E402


def test_the_simulators_section_tables_every_schemes_share_and_draws_it(tmp_path):
    run_study(Study("zipf:z=0.8,keys=5000", ["sg", "pkg-global"], [10], [2], 20_000, slow=["", "1@0.5"]),
              tmp_path / "hetero_small.csv")
    told(tmp_path / "hetero_told.csv", 20_000)
    lines = "\n".join(heterogeneous_sim(tmp_path))
    assert "## Heterogeneous workers in the simulator" in lines and "(heterogeneous_sim.png)" in lines
    assert (tmp_path / "heterogeneous_sim.png").stat().st_size > 1000
    share = lambda scheme: float(next(l for l in lines.splitlines() if l.startswith(f"| {scheme} |")).split("|")[2])
    assert share("sg") == 0.5 and 0.85 < share("pkg-global") < 0.96
    assert 0.85 < share("cg (capacity told)") < 0.96  # told the slow worker, it splits in proportion to speed


def test_the_clusters_section_pairs_each_slow_run_with_its_run_on_equal_workers(tmp_path):
    base = {"study": "heterogeneous", "app": "wordcount", "workers": 10, "sources": 5, "delay_ms": 0.4,
            "workload": "wp", "messages": 200_000, "seed": 0}
    rows = [{**base, "scheme": "sg", "slow": "", "params": "", "throughput": 20_000, "predicted_throughput": 22_000},
            {**base, "scheme": "sg", "slow": "1@0.5", "params": "", "throughput": 11_000,
             "predicted_throughput": 11_000},
            {**base, "scheme": "cg", "slow": "", "params": "", "throughput": 18_000, "predicted_throughput": 20_000},
            {**base, "scheme": "cg", "slow": "1@0.5", "params": "capacity=1@0.5", "throughput": 17_100,
             "predicted_throughput": 19_000}]
    other = {**base, "study": "newer-claims", "scheme": "sg"}  # another study's sg: its own row, not a median
    rows += [{**other, "slow": "", "params": "", "throughput": 10_000, "predicted_throughput": 10_000},
             {**other, "slow": "1@0.5", "params": "", "throughput": 9_000, "predicted_throughput": 9_000}]
    pd.DataFrame(rows).to_csv(tmp_path / "results.csv", index=False)
    lines = "\n".join(heterogeneous_spark(tmp_path)).splitlines()
    table = next(line for line in lines if line.startswith("| study | workers | scheme |"))
    assert "measured share" in table and (tmp_path / "heterogeneous.png").exists()
    cells = {tuple(c.strip() for c in line.split("|")[1:4]): line.split("|") for line in lines
             if line.startswith("| ") and "|---" not in line}
    assert cells[("heterogeneous", "10", "sg")][7].strip() == "0.55"
    assert cells[("heterogeneous", "10", "sg")][8].strip() == "0.5"
    assert cells[("heterogeneous", "10", "cg (capacity told)")][7].strip() == "0.95"
    assert cells[("newer-claims", "10", "sg")][7].strip() == "0.9"
    pd.DataFrame(rows).assign(slow="").to_csv(tmp_path / "results.csv", index=False)
    assert heterogeneous_spark(tmp_path) == []  # no slow run: no section
