"""Sustainable throughput: the backlog verdict on constructed batch tables, and the search's steps."""
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.bench import sustainable as sus


def batches(rate: float, served: float, n: int = 12, length: float = 1.0, t0: float = 100.0) -> pd.DataFrame:
    """Batches of ``length`` s processing ``min(rate, served)`` messages/s of an offered ``rate``."""
    per = min(rate, served) * length
    return pd.DataFrame({"batch": np.arange(n), "started": t0 + length * np.arange(n), "duration": length,
                         "messages": np.full(n, per), "first_arrival": t0 + length * np.arange(n)})


def test_a_rate_the_system_carries_is_sustainable_and_one_it_cannot_is_not():
    ok, slope = sus.verdict(batches(1000, 1200), 1000, messages=20_000)
    assert ok and abs(slope) < 1
    ok, slope = sus.verdict(batches(1000, 900), 1000, messages=20_000)
    assert not ok and abs(slope - 100) < 1  # 100 messages/s more each second
    assert sus.verdict(batches(1000, 995), 1000, messages=20_000)[0]  # 0.5 % of the rate: within the limit


def test_search_brackets_then_bisects_and_stops():
    capacity = 1234.0
    tried = []
    while (rate := sus.next_rate(tried, start=1000)) is not None:
        tried.append((rate, rate <= capacity))
    assert tried[0] == (1000.0, True) and tried[1] == (1300.0, False)
    assert len(tried) <= sus.MAX_RUNS
    found = sus.sustainable_rate(tried)
    assert found <= capacity and found >= capacity / (1 + sus.PRECISION) ** 2
    assert sus.next_rate([(500.0, False)], start=500) == round(500 / sus.STEP)
    assert sus.sustainable_rate([(500.0, False)]) == 0.0


def test_a_study_caps_its_search_and_a_profile_may_set_both():
    from skewbench.bench.driver import _search_settings
    from skewbench.bench.studyfile import load

    tried = [(1000.0, True)]
    assert sus.next_rate(tried, start=1000, max_runs=1) is None and sus.next_rate(tried, start=1000) == 1300
    study = load(Path(__file__).resolve().parents[1] / "bench" / "studies" / "sustainable.yaml")
    assert _search_settings(study, "default") == (10, 3)  # {seconds: 10, runs: 3}: three seeds in two hours
    assert _search_settings(study, "full") == (sus.SECONDS, sus.MAX_RUNS)  # `sustainable: true`
    assert _search_settings(study, "quick") == (3, 2)  # the smoke run's quick: {sustainable: {seconds: 3, runs: 2}}


def received(rate: float, n: int = 12, t0: float = 100.0, every: float = 0.05) -> pd.DataFrame:
    """A broker's delivery log: ``rate`` messages/s delivered in chunks every ``every`` seconds from ``t0``."""
    at = t0 + every * np.arange(1, int(n / every) + 1)
    return pd.DataFrame({"at": at, "messages": np.full(len(at), rate * every), "t": at})


def test_through_the_broker_the_backlog_is_the_consumers_lag_behind_what_it_received():
    log = received(1000)
    assert sus.verdict(batches(1000, 1200), 1000, 20_000, log)[0]
    ok, slope = sus.verdict(batches(1000, 900), 1000, 20_000, log)
    assert not ok and abs(slope - 100) < 5
    # A generator that delivered only 800/s: the consumer kept up with it (no lag), though the schedule's
    # backlog grows — the broker's log tells the system's verdict from the generator's shortfall.
    late = received(800)
    assert sus.verdict(batches(800, 900), 1000, 20_000, late)[0]
    assert not sus.verdict(batches(800, 900), 1000, 20_000)[0]


def test_a_search_run_through_a_generator_that_missed_its_rate_is_never_sustainable(tmp_path):
    import json

    from skewbench.bench.driver import run_verdict

    batches(800, 900).to_parquet(tmp_path / "batches.parquet")
    (tmp_path / "locust").mkdir()
    received(800).to_parquet(tmp_path / "locust" / "deliveries.parquet")
    for valid in (True, False):
        (tmp_path / "summary.json").write_text(json.dumps({"ingest": {"path": "locust", "valid": valid}}))
        assert run_verdict(tmp_path, 1000.0, 20_000)[0] == valid
