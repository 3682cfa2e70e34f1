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


def test_sustainable_searches_through_the_broker_stand_beside_the_in_engine_ones(tmp_path):
    from skewbench.analysis.sections.bench import sustainable_spark

    point = {"study": "sustainable-broker", "app": "wordcount", "scheme": "pkg", "workers": 9, "sources": 1,
             "delay_ms": 0.4}
    table = []
    for ingest, peak, good in [("engine", 20_000, 15_000), ("locust", 19_000, 12_000)]:
        table.append(point | {"run": f"peak-{ingest}", "ingest": ingest, "throughput": peak, "search_of": None})
        table += [point | {"run": f"{ingest}-{rate}", "ingest": ingest, "rate": rate, "sustainable": rate <= good,
                           "throughput": min(rate, good), "search_of": f"peak-{ingest}"}
                  for rate in (good, good * 1.3)]
    pd.DataFrame(table).to_csv(tmp_path / "results.csv", index=False)
    text = "\n".join(sustainable_spark(tmp_path))
    assert "consumer's lag behind what the broker received" in text and (tmp_path / "sustainable.png").exists()
    assert "| sustainable-broker | wordcount | pkg | engine | 9 | 1 | 0.4 | 20,000 | 15,000 |" in text
    assert "| sustainable-broker | wordcount | pkg | locust | 9 | 1 | 0.4 | 19,000 | 12,000 |" in text
