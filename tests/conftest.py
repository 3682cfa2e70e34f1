import os
from pathlib import Path

import pytest
from hypothesis import settings

# The 2-core CI box is shared with numba compiles: judge correctness, not the speed of one example; and the
# same examples in every run (derandomize), so that a red main is a change's, never a new random draw's
# (explore more with --hypothesis-seed=N).
settings.register_profile("skewbench", deadline=None, max_examples=50, derandomize=True)
# `make fuzz` (SKEWBENCH_FUZZ=1): fresh draws from the seed it prints, 20 times as many; a failure prints its
# example and the blob that replays it (no example database in the checkout).
settings.register_profile("fuzz", deadline=None, max_examples=20 * 50, derandomize=False, database=None,
                          print_blob=True)
settings.load_profile("fuzz" if os.environ.get("SKEWBENCH_FUZZ") == "1" else "skewbench")

# SKEWBENCH_NO_SKIP=1 (CI sets it): a skipped test fails with its skip's reason, since a test that skips in
# CI proves nothing there. The one exception is the opt-in cloud tests (marker `cloud`): billed VMs that CI
# never creates, unless SKEWBENCH_CLOUD_TESTS=1 asks for them, when their skips fail too.
NO_SKIP = os.environ.get("SKEWBENCH_NO_SKIP") == "1"
# SKEWBENCH_SKIPS=FILE (make test sets it): a line per skip appended (skip or opt-in, its reason, the test),
# for the summary that ends make test (tests/skips.py).
SKIPS = os.environ.get("SKEWBENCH_SKIPS")


def _opted_out(item) -> bool:
    return item.get_closest_marker("cloud") is not None and os.environ.get("SKEWBENCH_CLOUD_TESTS") != "1"


def _reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2].removeprefix("Skipped: ") if isinstance(longrepr, tuple) else str(longrepr)


def _failed(report) -> None:
    report.longrepr = f"SKEWBENCH_NO_SKIP=1 and this test skipped: {_reason(report)}"
    report.outcome = "failed"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if NO_SKIP and report.skipped and not hasattr(report, "wasxfail") and not _opted_out(item):
        _failed(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    report = (yield).get_result()
    if NO_SKIP and report.skipped:  # a module that skips itself (pytest.skip(allow_module_level=True), importorskip)
        _failed(report)


def pytest_terminal_summary(terminalreporter, config):
    if not SKIPS or hasattr(config, "workerinput"):  # the controller writes, not pytest-xdist's workers
        return
    skipped = terminalreporter.stats.get("skipped", [])
    if skipped:
        with Path(SKIPS).open("a") as log:
            log.writelines(_listed(report) for report in skipped)


def _listed(report) -> str:
    kind = "opt-in" if "cloud" in report.keywords else "skip"
    return f"{kind}\t{_reason(report)}\t{report.nodeid}\n"
