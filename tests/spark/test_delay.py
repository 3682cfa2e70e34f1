"""The injected delay, without Spark: the total spent per batch is within 5 % of the intended total."""
import time

import pytest

from skewbench.bench.spark.delay import burn, default_mode


@pytest.mark.parametrize("mode", ["spin", "sleep"])
@pytest.mark.parametrize("count,delay", [(500, 0.0001), (100, 0.001), (20, 0.005)])
def test_total_within_five_percent(mode, count, delay):
    intended = count * delay
    wall = time.perf_counter()
    spent = burn(count, delay, mode)
    wall = time.perf_counter() - wall
    assert abs(spent / intended - 1) <= 0.05, (mode, spent, intended)
    if mode == "spin":  # CPU time: the wall clock can only be longer (another process may hold the core)
        assert wall >= spent * 0.99
    else:
        assert abs(wall / intended - 1) <= 0.05


def test_sleep_wakes_once_per_batch_not_per_message(monkeypatch):
    """Many sleeping slots share two cores: a wake-up per message would cost them CPU they lack."""
    calls = []
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda seconds: (calls.append(seconds), real_sleep(seconds)))
    assert burn(1000, 0.0002, "sleep") >= 0.2
    assert 1 <= len(calls) <= 3, calls


def test_nothing_to_burn_and_bad_mode():
    assert burn(0, 0.001, "spin") == 0.0 and burn(10, 0.0, "sleep") == 0.0
    with pytest.raises(ValueError, match="unknown delay mode"):
        burn(1, 0.001, "nap")


def test_default_mode_spins_only_with_a_core_per_slot():
    assert default_mode(slots=2, cores=2) == "spin"
    assert default_mode(slots=10, cores=2) == "sleep"
