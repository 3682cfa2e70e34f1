"""The emulation section: each way of realising the delay against the most real one at its point, from a table
whose numbers are given, so the errors are known."""

import matplotlib
import pandas as pd

matplotlib.use("Agg")

from skewbench.analysis.sections.emulation import emulation, errors  # noqa: E402


def table(tmp_path):
    rows = []
    for workload in ("zipf:z=0,keys=100", "zipf:z=1.4,keys=100"):
        for workers, modes in ((2, {"spin": 1.0, "sleep": 2.0}), (10, {"sleep": 1.0, "emulated": 1.1})):
            for work, speed in modes.items():
                for seed in range(3):
                    rows.append({"workload": workload, "workers": workers, "work": work, "seed": seed,
                                 "throughput": 1000 * speed + seed, "batch_median_s": 2 / speed,
                                 "busiest_median_s": 1.5 / speed, "overhead_median_s": 0.5 / speed,
                                 "latency_p50": 1.0 / speed, "latency_p99": 1.8 / speed, "sim_exact": True})
    pd.DataFrame(rows).to_csv(tmp_path / "emulation.csv", index=False)
    return pd.DataFrame(rows)


def test_each_way_is_measured_against_spin_where_it_ran_else_sleep(tmp_path):
    got = errors(table(tmp_path)).set_index(["stream", "W", "work"])
    sleep = got.loc[("balanced (z = 0)", 2, "sleep")]
    assert sleep["reference"] == "spin" and round(sleep["error msgs/s"], 3) == round(2001 / 1001 - 1, 3)
    assert sleep["error batch s"] == -0.5 and sleep["vs reference (msgs/s)"] == "sleep better"
    emulated = got.loc[("skewed (z = 1.4)", 10, "emulated")]
    assert emulated["reference"] == "sleep" and round(emulated["error p99 s"], 4) == round(1 / 1.1 - 1, 4)
    assert got.loc[("skewed (z = 1.4)", 10, "sleep"), "error msgs/s"] == 0


def test_the_section_draws_the_ways_and_says_their_largest_errors(tmp_path):
    table(tmp_path)
    text = "\n".join(emulation(tmp_path))
    assert "## How the workers' delay is realised" in text and (tmp_path / "emulation.png").stat().st_size > 1000
    assert "sleep against spin (W = 2): msgs/s +99.9 %, batch s -50.0 %" in text
    assert "emulated against sleep (W = 10): msgs/s +10.0 %" in text
    assert emulation(tmp_path / "nothing") == []
