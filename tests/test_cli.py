import json
import subprocess
import sys

import pandas as pd
import pytest

from skewbench.cli import main

SIM = ["simulate", "--workload", "zipf:z=1.2,keys=2000", "--messages", "20000"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_simulate_writes_one_row_per_cell_with_provenance(tmp_path, capsys):
    out = tmp_path / "r.csv"
    code, stdout, _ = run(capsys, *SIM, "--schemes", "kg,pkg", "--workers", "5,10", "--sources", "1,3",
                          "--repeat", "2", "--out", str(out))
    assert code == 0 and "wrote" in stdout
    table = pd.read_csv(out)
    assert len(table) == 2 * 2 * 2 * 2
    assert set(table.seed) == {0, 1} and set(table.scheme) == {"kg", "pkg"}
    meta = json.loads(out.with_name("r.csv.meta.json").read_text())
    assert meta["config"]["study"]["workers"] == [5, 10]
    assert "numpy" in meta["environment"]["packages"]
    assert not out.with_name("r.csv.partial").exists()


def test_existing_results_are_not_overwritten(tmp_path, capsys):
    out = tmp_path / "r.csv"
    out.write_text("precious\n")
    code, _, err = run(capsys, *SIM, "--schemes", "kg", "--workers", "5", "--out", str(out))
    assert code == 2 and "already exists" in err and "--force" in err
    assert out.read_text() == "precious\n"


@pytest.mark.parametrize("args,message", [
    (["--schemes", "kg,nope", "--workers", "5"], "unknown scheme 'nope'"),
    (["--schemes", "kg", "--workers", "0"], "--workers values must be an integer in 1..10,000, got 0"),
    (["--schemes", "kg", "--workers", "5", "--sources", "0"], "--sources values must be an integer in 1..10,000, got 0"),
    (["--schemes", "kg", "--workers", "five"], "comma-separated integers"),
    (["--schemes", "kg", "--workers", "5", "--param", "kg.bogus=1"], "bad parameter for scheme 'kg'"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    out = tmp_path / "r.csv"
    code, _, err = run(capsys, *SIM, *args, "--out", str(out))
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_bad_workload_spec_is_exit_2(tmp_path, capsys):
    code, _, err = run(capsys, "simulate", "--workload", "zipf:z=banana", "--schemes", "kg", "--workers", "5",
                       "--out", str(tmp_path / "r.csv"))
    assert code == 2 and err.startswith("skewbench: error:") and len(err.strip().splitlines()) == 1


def test_installed_entry_point_lists_every_scheme():
    done = subprocess.run([sys.executable, "-m", "skewbench.cli", "schemes"], capture_output=True, text=True)
    assert done.returncode == 0
    names = {line.split()[0] for line in done.stdout.splitlines()}
    assert {"kg", "pkg", "dkg", "mixed", "gedik-readj", "wchoices"} <= names


def test_speed_measures_every_scheme_by_default(tmp_path):
    """In a fresh process (nothing imported yet), the default scheme list is the whole registry."""
    out = tmp_path / "speed.csv"
    done = subprocess.run([sys.executable, "-m", "skewbench.cli", "speed", "--messages", "20000", "--workers", "10",
                           "--repeat", "1", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    import skewbench.schemes  # noqa: F401
    from skewbench.scheme import REGISTRY

    assert set(pd.read_csv(out).scheme) == set(REGISTRY)


def test_the_run_commands_migration_choices_are_the_controllers():
    from skewbench.cli import build_parser
    from skewbench.migration import HANDOVERS, STRATEGIES

    run = build_parser()._subparsers._group_actions[0].choices["run"]
    choices = {a.dest: tuple(a.choices) for a in run._actions if a.choices}
    assert choices["migration"] == STRATEGIES and choices["handover"] == HANDOVERS
