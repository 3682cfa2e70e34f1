"""The one check of users' numbers (skewbench.bounds): finite, of its kind, within its range, else one line."""
import math

import pytest

from skewbench.bounds import BoundsError, Range, check_schedule, non_finite

COUNT = Range(1, 1000, integer=True)


@pytest.mark.parametrize("text, value", [("5", 5), (" 5 ", 5), ("1_000", 1000), ("1e3", 1000), ("+7", 7),
                                         ("1000.0", 1000)])
def test_an_integer_is_read_as_written(text, value):
    assert COUNT.parse(text) == value and isinstance(COUNT.parse(text), int)


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e999", "0", "-1", "1001", "1.5", "", "five", "0x10",
                                  "1" * 5000, "caf\udce9"])
def test_anything_else_is_refused_saying_what_it_may_be(text):
    with pytest.raises(BoundsError) as error:
        COUNT.parse(text)
    message = str(error.value)
    assert message.startswith("must be an integer in 1..1,000, got ") and len(message) < 120


def test_a_range_with_its_low_end_excluded_and_an_unbounded_one():
    assert str(Range(0, 1, above=True)) == "a number > 0 and <= 1" and str(Range()) == "a finite number"
    with pytest.raises(BoundsError, match="got 0"):
        Range(0, 1, above=True).check(0)
    assert Range().check(-1e300) == -1e300
    for value in (math.nan, math.inf, True, "1", None):
        with pytest.raises(BoundsError):
            Range().check(value)


def test_a_huge_integer_is_out_of_range_not_an_overflow():
    with pytest.raises(BoundsError):
        COUNT.check(10**400)


def test_the_schema_says_the_same_range():
    assert Range(0, 100).schema() == {"type": "number", "minimum": 0, "maximum": 100}
    assert Range(0, 1, above=True, integer=True).schema() == {"type": "integer", "exclusiveMinimum": 0, "maximum": 1}


def test_nan_and_infinity_are_found_anywhere_in_a_document():
    assert non_finite({"a": [1, {"b": math.nan}]}) == (("a", 1, "b"), pytest.approx(math.nan, nan_ok=True))
    assert non_finite({"a": [1.5, "nan", {"b": None}]}) is None
    assert non_finite([math.inf])[0] == (0,)


def test_a_schedule_names_the_pair_out_of_range():
    check_schedule({3: 6, 9: 4}, COUNT, most_at=10)
    with pytest.raises(BoundsError, match="^3:1001: W must be an integer in 1..1,000, got 1001$"):
        check_schedule({3: 1001}, COUNT)
    with pytest.raises(BoundsError, match="^11:4: AT must be an integer in 0..10"):
        check_schedule({11: 4}, COUNT, most_at=10)
