"""Open-loop schedules (bench/schedule.py): intended send times from the offered rate, steps and spikes,
and one clear message for a schedule that cannot be read."""
import numpy as np
import pytest

from skewbench.bench.schedule import ScheduleError, intended_times, mean_rate, parse_schedule


def test_a_constant_rate_spaces_messages_evenly_from_t0():
    assert parse_schedule("2000") == [(2000.0, np.inf)]
    np.testing.assert_allclose(intended_times(np.arange(4), 10.0, parse_schedule("2")), [10, 10.5, 11, 11.5])


def test_steps_change_the_rate_where_the_schedule_says():
    steps = parse_schedule("100@2,1000@1,100")  # 200 messages in 2 s, 1,000 in the next second, then 100/s
    times = intended_times(np.array([0, 199, 200, 700, 1200, 1300]), 0.0, steps)
    np.testing.assert_allclose(times, [0, 1.99, 2, 2.5, 3, 4])
    assert mean_rate(1300, steps) == pytest.approx(325)
    # a message's time does not depend on which others are asked about (a source asks for its own)
    np.testing.assert_allclose(intended_times(np.array([700]), 0.0, steps), [2.5])


def test_zero_is_everything_at_once():
    assert parse_schedule("0") == []
    np.testing.assert_allclose(intended_times(np.arange(3), 5.0, []), [5, 5, 5])
    assert mean_rate(100, []) == float("inf")


@pytest.mark.parametrize("text", ["", "x", "100@2", "100,200", "0@1,5", "-5@1,3", "100@0,5", "inf"])
def test_a_bad_schedule_says_how_one_is_written(text):
    with pytest.raises(ScheduleError, match="schedule"):
        parse_schedule(text)
