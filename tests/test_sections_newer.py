"""The newer-schemes report section (analysis/sections/newer.py) and Katsipoulakis et al.'s recipes, from an
aggregation-cost table whose throughputs are given, so the verdicts are known."""

import matplotlib
import pandas as pd

matplotlib.use("Agg")

from skewbench.analysis.sections.newer import newer_schemes  # noqa: E402


def test_the_section_sets_the_claims_beside_the_measured_throughputs(tmp_path):
    rows = [{"workload": workload, "scheme": scheme, "seed": seed, "throughput": rate + seed, "output_rows": 1000,
             "counters_mean": 100, "max_over_mean": 1.0, "sim_exact": True}
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


def test_the_dalton_section_names_the_best_rival_per_point_and_whether_they_can_be_told_apart(tmp_path):
    """Dalton beats the best rival (wchoices) clearly at every point but z = 1.0, W = 10, where their seeds
    overlap; the claim then fails there, and the ratio at z = 2.0, W = 50 is 1.99 (inside 1.3-6.7)."""
    from skewbench.analysis.sections.newer import dalton_claim

    rates = {"dalton": 20_000, "pstream": 15_000, "pkg": 5_000, "dchoices": 9_000, "wchoices": 10_000}
    rows = [{"workload": f"zipf:z={z},keys=100000", "workers": w, "scheme": scheme, "seed": seed, "delay_ms": 0.4,
             "sources": 5, "max_over_mean": 1.0, "sim_exact": True,
             "throughput": (10_000 if (z, w, scheme) == ("1.0", 10, "dalton") else rate) + 100 * seed}
            for z in ("1.0", "1.5", "2.0") for w in (10, 50) for seed in range(3) for scheme, rate in rates.items()]
    pd.DataFrame(rows).to_csv(tmp_path / "dalton.csv", index=False)
    text = "\n".join(dalton_claim(tmp_path))
    assert "## Newer schemes: Dalton" in text and (tmp_path / "dalton.png").stat().st_size > 1000
    points = [line for line in text.splitlines() if line.startswith("| 1 |") or line.startswith("| 1.5 |")
              or line.startswith("| 2 |")]
    assert len(points) == 6 and all("| wchoices |" in line for line in points)
    assert sum("| not distinguishable |" in line for line in points) == 1
    assert sum("| dalton better |" in line for line in points) == 5
    claim = next(line for line in text.splitlines() if line.startswith("| higher_throughput_than_existing |"))
    value = next(line for line in text.splitlines() if line.startswith("| throughput_ratio_over_existing |"))
    assert "| differs | claim |" in claim
    assert "| 20,100 [20,000, 20,200] | wchoices | 10,100 [10,000, 10,200] | 1.99 | dalton better |" in text
    assert "| pstream / best rival |" in text and sum(line.endswith("| 1.5 |") for line in points) == 6
    assert "| 1.99 | agrees | bound |" in value  # 20,100 over 10,100
    assert dalton_claim(tmp_path / "nothing") == []


def test_the_sweep_section_draws_every_scheme_over_the_streams(tmp_path):
    """`make study`'s sweep_* tables (here two streams at 20,000 messages) give the sweep's figure and table."""
    from skewbench.analysis.sections.newer import newer_sweep
    from skewbench.bench import paper_study
    from skewbench.bench.papers.newer import NEWER, RIVALS

    out = tmp_path / "study"
    assert paper_study.main(["--out", str(out), "--messages", "20000", "--only", "sweep_z15,sweep_wp"]) == 0
    text = "\n".join(newer_sweep(out))
    assert "## Newer schemes in the simulator" in text and (out / "sweep.png").stat().st_size > 1000
    rows = {line.split(" | ")[0].strip("| ") for line in text.splitlines() if line.startswith("| ")}
    assert set(NEWER + RIVALS) <= rows
    assert "## Successors side by side" not in (out / "report.md").read_text()  # not PKG's newer_* tables
    assert newer_sweep(tmp_path / "nothing") == []


def test_the_sources_section_gives_each_schemes_rate_per_w_and_s_and_what_more_sources_cost(tmp_path):
    from skewbench.analysis.sections.newer import newer_sources

    rows = [{"workload": "zipf:z=1.0,keys=100000", "delay_ms": 0.4, "workers": w, "sources": s, "scheme": scheme,
             "seed": 0, "throughput": rate * w / s ** (scheme == "pstream"), "predicted_throughput": rate * w * 1.1}
            for w in (10, 50) for s in (1, 5, 10) for scheme, rate in (("pstream", 2000.0), ("kg", 1000.0))]
    pd.DataFrame(rows).to_csv(tmp_path / "newer-sources.csv", index=False)
    text = "\n".join(newer_sources(tmp_path))
    assert "## Newer schemes on Spark as the sources grow" in text and "within 10.0% (median)" in text
    assert (tmp_path / "newer_sources.png").stat().st_size > 1000
    # pstream's rate falls as 1/S: a tenth at S = 10
    assert "| pstream | 20,000 | 4,000 | 2,000 | 100,000 | 20,000 | 10,000 | 0.1 | 0.1 |" in text
    assert "| kg | 10,000 | 10,000 | 10,000 | 50,000 | 50,000 | 50,000 | 1 | 1 |" in text
    assert newer_sources(tmp_path / "nothing") == []
    from skewbench.analysis.sections.pkg import newer as pkg_successors

    assert pkg_successors(tmp_path) == []  # PKG's newer_* tables are not the newer-* studies


def test_the_claims_section_sets_pstream_and_cg_beside_kg_with_the_recipes_verdicts(tmp_path):
    """pstream carries 2x kg's rate (the README's 2.3x: within 25 %, agrees) at half its latency (64 %: 49.8 is
    beyond 25 %, on the paper's side of no effect: direction); cg told the slow worker's capacity has a quarter of
    kg's latency (3.44x: agrees), on equal workers the same as kg."""
    from skewbench.analysis.sections.newer import newer_claims

    rates = {("pstream", ""): (2000, 1.0), ("cg", ""): (1000, 2.0), ("kg", ""): (1000, 2.0),
             ("cg", "1@0.5"): (1000, 1.0), ("kg", "1@0.5"): (500, 4.0)}
    rows = [{"workload": "zipf:z=1.0,keys=100000", "delay_ms": 0.4, "sources": 5, "workers": w, "scheme": scheme,
             "slow": slow, "params": "capacity=1@0.5" if scheme == "cg" and slow else "", "seed": seed,
             "throughput": rate * w + seed, "batch_median_s": latency + seed / 100, "latency_p50": 1.0,
             "sim_exact": True}
            for (scheme, slow), (rate, latency) in rates.items() for w in (10, 50) for seed in range(3)]
    pd.DataFrame(rows).to_csv(tmp_path / "newer-claims.csv", index=False)
    text = "\n".join(newer_claims(tmp_path))
    assert "## Newer schemes: PStream's" in text
    lines = text.splitlines()
    assert sum(line.startswith("| pstream | equal |") and "| pstream better |" in line for line in lines) == 2
    assert sum(line.startswith("| cg | equal |") and "| not distinguishable |" in line for line in lines) == 2
    told = next(line for line in lines if line.startswith("| cg (capacity told) | 1@0.5 | 10 |"))
    assert "| 3.97 | cg better | 1 | 3 |" in told  # kg's batch over cg's (4.01 over 1.01), the median message's
    verdicts = {"throughput_over_storm": "| 2 | agrees |", "latency_reduction_over_storm": "| 49.8 | direction |",
                "latency_over_kg": "| 3.97 | agrees |"}
    for entry, verdict in verdicts.items():
        assert verdict in next(line for line in lines if line.startswith(f"| {entry} |")), entry
    assert newer_claims(tmp_path / "nothing") == []
