import pytest
from hypothesis import settings

# The 2-core CI box is shared with numba compiles: judge correctness, not the speed of one example; and the
# same examples in every run (derandomize), so that a red main is a change's, never a new random draw's
# (explore more with --hypothesis-seed=N).
settings.register_profile("skewbench", deadline=None, max_examples=50, derandomize=True)
settings.load_profile("skewbench")


def pytest_collection_modifyitems(items):
    """`make test` runs the cluster part on two xdist workers with ``--dist loadgroup``: the pipeline's tests
    one at a time on their shared cluster (tests/spark/conftest.py), the infrastructure's meanwhile on the
    clusters they bring up themselves (tests/infra)."""
    for item in items:
        folder = item.path.relative_to(item.config.rootpath).parts[1:2]
        if folder in (("spark",), ("infra",)):
            item.add_marker(pytest.mark.xdist_group(folder[0]))
