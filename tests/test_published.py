"""The transcribed published numbers load as numbers (PyYAML alone reads ``22.0e6`` as a string)."""

from numbers import Real

from skewbench.analysis.published import published


def test_table_one_and_table_two_are_numbers():
    pkg = published()["pkg"]
    assert pkg["datasets"]["WP"]["messages"] == 22.0e6
    for dataset in ("WP", "TW"):
        for values in pkg["table2_average_imbalance"][dataset].values():
            assert all(isinstance(v, Real) for v in values), values
