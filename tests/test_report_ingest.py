"""The report's section on runs through the broker (analysis/sections/ingest.py): each run beside its
generated twin, the counts compared, the invalid ones counted, the intervals over seeds."""
import pandas as pd

from skewbench.analysis.sections.ingest import POINT, ingest_spark


def rows(ingest, seed, throughput, **extra):
    point = dict.fromkeys(POINT, "")
    point |= {"study": "ingest", "app": "wordcount", "scheme": "pkg", "workers": 10, "rate": 8000, "seed": seed,
              "messages": 1000, "delay_ms": 0.4}
    return point | {"ingest": ingest, "correct": True, "throughput": throughput, "latency_p99": 1.0,
                    "sim_exact": True, "achieved_rate": 8000.0 if ingest == "locust" else None,
                    "generator_lag_p99_s": 0.002 if ingest == "locust" else None,
                    "ingest_valid": True if ingest == "locust" else None} | extra


def test_the_section_pairs_each_run_with_its_twin_and_counts_what_differs(tmp_path):
    table = pd.DataFrame([rows("engine", s, 7900 + s) for s in range(3)]
                         + [rows("locust", 0, 7950), rows("locust", 1, 7960, sim_exact=False),
                            rows("locust", 2, 7000, ingest_valid=False)])
    table.to_csv(tmp_path / "results.csv", index=False)
    text = "\n".join(ingest_spark(tmp_path))
    assert "3 runs had their stream sent by locust" in text and "2 counted every worker's messages" in text
    assert "1 are not valid" in text and "3 pairs" in text and (tmp_path / "ingest.png").exists()
    assert "| ingest | wordcount | pkg | 10 | 8,000 |" in text


def test_no_section_without_runs_through_the_broker_and_no_table_without_twins(tmp_path):
    pd.DataFrame([rows("engine", 0, 100)]).to_csv(tmp_path / "results.csv", index=False)
    assert ingest_spark(tmp_path) == []
    pd.DataFrame([rows("locust", 0, 100)]).to_csv(tmp_path / "results.csv", index=False)
    assert "has a generated twin" in "\n".join(ingest_spark(tmp_path))
