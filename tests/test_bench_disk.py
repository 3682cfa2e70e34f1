"""A bench stops between two runs, with one line saying what to do, when the results' disk is nearly full
(a default bench once died in the middle of a run with "No space left on device")."""

import shutil
from collections import namedtuple

import pytest

from skewbench.bench import driver

Usage = namedtuple("Usage", "total used free")


def test_a_nearly_full_disk_stops_the_bench_before_the_next_run(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(100 * 2**30, 99 * 2**30, 2**30 // 2))
    with pytest.raises(driver.BenchError, match=r"only 0\.5 GB free .* finish it with --resume"):
        driver.check_disk(tmp_path)


def test_a_disk_with_room_lets_it_run(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(100 * 2**30, 90 * 2**30, 10 * 2**30))
    driver.check_disk(tmp_path)
