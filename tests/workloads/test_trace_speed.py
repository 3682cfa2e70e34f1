"""The trace-speed benchmark: its trace is what it claims, and it measures end to end (no timing asserted)."""

import numpy as np
import pytest

from skewbench.bench import trace_speed
from skewbench.workloads import parse


def test_trace_is_seeded_tab_separated_zipf_with_increasing_times(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_speed, "_CHUNK", 7_000)  # several chunks, continuing one clock
    a, b, c = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    trace_speed.write_trace(a, 20_000, seed=3, keys=5_000)
    trace_speed.write_trace(b, 20_000, seed=3, keys=5_000)
    trace_speed.write_trace(c, 20_000, seed=4, keys=5_000)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    lines = a.read_text().splitlines()
    assert len(lines) == 20_000 and all(len(line.split("\t")) == 2 for line in lines)
    stream = parse(f"file:path={a},key=1,time=0")
    assert stream.messages == 20_000 and stream.distinct_keys <= 5_000
    assert (np.diff(stream.clock) >= 0).all() and stream.clock[-1] > 0
    ranked = np.sort(stream.key_counts)[::-1]
    assert ranked[0] / ranked[9] == pytest.approx(10, rel=0.35)  # Zipf 1.0: the 10th key is ~10x rarer


@pytest.mark.slow
def test_measure_runs_the_loader_and_a_whole_simulate(tmp_path, capsys):
    kept = tmp_path / "kept.txt"
    assert trace_speed.main(["--lines", "3000", "--keep", str(kept)]) == 0
    out = capsys.readouterr().out
    assert "3,000 lines" in out and "Java SLBSimulator" in out and "22.00 s" in out and kept.exists()
    figures = trace_speed.measure(2000, seed=1)
    assert figures["lines"] == 2000 and figures["simulate_s"] > 0 and figures["load_s"] > 0
    assert figures["simulate_over_java"] == pytest.approx(figures["simulate_s"] / 22.0)
