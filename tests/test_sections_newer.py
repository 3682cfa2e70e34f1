"""The newer-schemes report section (analysis/sections/newer.py) and Katsipoulakis et al.'s recipes, from an
aggregation-cost table whose throughputs are given, so the verdicts are known."""

import matplotlib
import pandas as pd

matplotlib.use("Agg")

from skewbench.analysis.sections.newer import newer_schemes  # noqa: E402


def test_the_section_sets_the_claims_beside_the_measured_throughputs(tmp_path):
    rows = [{"workload": workload, "scheme": scheme, "seed": seed, "throughput": rate + seed, "output_rows": 1000,
             "counters_mean": 100, "max_over_mean": 1.0}
            for workload in ("wp", "zipf:z=1.4,keys=100000") for seed in range(3)
            for scheme, rate in (("cm", 30_000), ("am", 10_000), ("pkg", 20_000), ("wchoices", 15_000))]
    pd.DataFrame(rows).to_csv(tmp_path / "aggregation-cost.csv", index=False)
    text = "\n".join(newer_schemes(tmp_path))
    assert "## Newer schemes" in text and (tmp_path / "aggregation_cost.png").stat().st_size > 1000
    claim = next(line for line in text.splitlines() if line.startswith("| better_than_state_of_the_art |"))
    value = next(line for line in text.splitlines() if line.startswith("| order_of_magnitude_over_state_of_the_art"))
    assert "| 30,001 | agrees |" in claim  # cm's median over pkg's: the claim holds here
    assert "| 1.5 | direction |" in value  # not 10x, but on its side of "no effect" (1)
    assert newer_schemes(tmp_path / "nothing") == []
