"""The report's section on runs with faults (analysis/sections/faults.py): the runs that stayed exact counted,
each strike's recovery in a table, each run's batches over time with its faults marked."""
import json

import pandas as pd

from skewbench.analysis.sections.faults import faults_spark


def kept_run(folder, run, strikes, starts):
    """A run folder as the bench keeps it: summary.json with its strikes, batches.parquet."""
    (folder / "runs" / run).mkdir(parents=True)
    (folder / "runs" / run / "summary.json").write_text(json.dumps({"faults": strikes}))
    pd.DataFrame({"batch": range(len(starts)), "started": starts, "duration": [1.0] * len(starts)}).to_parquet(
        folder / "runs" / run / "batches.parquet")


def strike(fault, killed_at, recovery_s):
    return {"fault": fault, "node": fault.split("@")[0] + ("2" if fault.startswith("worker") else ""),
            "killed_at": killed_at, "processes_killed": 4, "down_s": 3.0, "recovery_s": recovery_s}


def test_each_strike_is_tabled_and_marked_on_its_runs_timeline(tmp_path):
    kept_run(tmp_path, "a", [strike("worker@0.3+3", 102.5, 6.5)], [100.0, 101, 102, 103, 108, 109])
    kept_run(tmp_path, "b", [strike("broker@0.3+3", 52.0, None)], [50.0, 51, 52, 53])
    pd.DataFrame({"run": ["a", "b", "c"], "scheme": ["pkg", "kg", "pkg"], "faults_struck": [1, 1, 0],
                  "duplicates": [0, 0, 0], "correct": [True, False, True]}).to_csv(tmp_path / "results.csv",
                                                                                  index=False)
    text = "\n".join(faults_spark(tmp_path))
    assert "2 runs had nodes killed while they ran; 1 still gave the reference's answer" in text
    assert "| a | pkg | worker@0.3+3 | worker2 | 4 | 3 | 6.5 |" in text
    assert "| b | kg | broker@0.3+3 | broker | 4 | 3 | not before the end |" in text
    assert (tmp_path / "faults.png").exists()


def test_no_section_without_faults(tmp_path):
    assert faults_spark(tmp_path) == []
    pd.DataFrame({"run": ["a"], "throughput": [1.0]}).to_csv(tmp_path / "results.csv", index=False)
    assert faults_spark(tmp_path) == []
