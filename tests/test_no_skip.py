"""tests/conftest.py's rule for skips, on a small suite of its own run by pytest: with SKEWBENCH_NO_SKIP=1
(CI) every skip fails with its reason, but an opt-in cloud test's; SKEWBENCH_SKIPS=FILE lists the skips."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = '''\
import pytest


@pytest.fixture
def widget():
    pytest.skip("no widget here")


def test_skips_in_its_body():
    pytest.skip("the body gave up")


def test_skips_in_its_fixture(widget):
    pass


@pytest.mark.skipif(True, reason="a condition said so")
def test_skipped_by_a_mark():
    pass


@pytest.mark.cloud
def test_in_the_cloud():
    pytest.skip("opt-in: set SKEWBENCH_CLOUD_TESTS=1")


def test_runs():
    pass
'''


def suite(tmp_path: Path, *options: str, **env) -> tuple[int, str]:
    """Run SUITE under a copy of tests/conftest.py."""
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    cloud: opt-in\n")
    (tmp_path / "test_suite.py").write_text(SUITE)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SKEWBENCH_")}
    done = subprocess.run([sys.executable, "-m", "pytest", *options, "-p", "no:cacheprovider", "-rA", "test_suite.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**clean, **env})
    return done.returncode, done.stdout + done.stderr


def test_without_the_variable_skips_are_skips_and_are_listed(tmp_path):
    # with pytest-xdist: listed once, by its controller
    code, out = suite(tmp_path, "-n", "2", SKEWBENCH_SKIPS=str(tmp_path / "skips.txt"))
    assert code == 0 and "1 passed, 4 skipped" in out, out
    listed = sorted((tmp_path / "skips.txt").read_text().splitlines())
    assert listed == ["opt-in\topt-in: set SKEWBENCH_CLOUD_TESTS=1\ttest_suite.py::test_in_the_cloud",
                      "skip\ta condition said so\ttest_suite.py::test_skipped_by_a_mark",
                      "skip\tno widget here\ttest_suite.py::test_skips_in_its_fixture",
                      "skip\tthe body gave up\ttest_suite.py::test_skips_in_its_body"]
    summary = [sys.executable, str(ROOT / "tests" / "skips.py"), "end", str(tmp_path / "skips.txt")]
    done = subprocess.run(summary, capture_output=True, text=True, env={})
    assert done.returncode == 0 and "make test: 3 tests SKIPPED: this run proves less than CI's" in done.stdout
    assert "      1  no widget here\n" in done.stdout and "(1 opt-in cloud test not asked for" in done.stdout
    assert subprocess.run(summary, capture_output=True, env={"SKEWBENCH_NO_SKIP": "1"}).returncode == 1


def test_with_no_skip_every_skip_fails_with_its_reason_but_the_opt_in_cloud_ones(tmp_path):
    code, out = suite(tmp_path, SKEWBENCH_NO_SKIP="1")
    assert code == 1 and "1 failed, 1 passed, 1 skipped, 2 errors" in out, out
    for reason in ("the body gave up", "no widget here", "a condition said so"):
        assert f"SKEWBENCH_NO_SKIP=1 and this test skipped: {reason}" in out, out
    assert "SKIPPED [1] test_suite.py" in out and "opt-in: set SKEWBENCH_CLOUD_TESTS=1" in out
    code, out = suite(tmp_path, SKEWBENCH_NO_SKIP="1", SKEWBENCH_CLOUD_TESTS="1")  # asked for: the cloud's fail too
    assert code == 1 and "2 failed, 1 passed, 2 errors" in out, out


def test_with_no_skip_a_module_that_skips_itself_fails(tmp_path):
    (tmp_path / "test_gone.py").write_text('import pytest\n\npytest.skip("no module here", allow_module_level=True)\n')
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SKEWBENCH_")}
    run = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_gone.py"]
    skipped = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=clean)
    assert skipped.returncode == 5 and "1 skipped" in skipped.stdout, skipped.stdout  # 5: no test ran
    failed = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={**clean, "SKEWBENCH_NO_SKIP": "1"})
    assert failed.returncode == 2 and "SKEWBENCH_NO_SKIP=1 and this test skipped: no module here" in failed.stdout, \
        failed.stdout
