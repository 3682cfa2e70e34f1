"""Every recipe's ``fixed:`` commit is honest: the rule it decides by (metric, rows, tolerance: everything but
its notes) is the same in every commit after that one and in the working tree, so a rule changed after it was
measured cannot pass without a new ``fixed`` and, where it had been measured, a ``first:`` block."""
import subprocess
from pathlib import Path

import pytest
import yaml

from skewbench.analysis.fidelity import MEASURES, rule_of
from skewbench.analysis.published import _Loader

ROOT = Path(__file__).resolve().parents[1]


def git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr.strip()} (the test needs the repository's history)"
    return done.stdout


def rules(text: str) -> dict[str, dict]:
    """(entry, or entry.spark) → the rule, the file's ``_runs`` included, of every recipe that measures."""
    body = yaml.load(text, Loader=_Loader) or {}
    runs = body.pop("_runs", None)
    found = {}
    for entry, recipe in body.items():
        if "not_measured" in recipe:
            continue
        found[entry] = {**rule_of(recipe), "_runs": runs}
        if "spark" in recipe:
            found[f"{entry}.spark"] = rule_of(recipe["spark"])
    return found


def fixed_of(text: str) -> dict[str, str]:
    body = yaml.load(text, Loader=_Loader) or {}
    body.pop("_runs", None)
    stamps = {}
    for entry, recipe in body.items():
        if "not_measured" not in recipe:
            stamps[entry] = recipe["fixed"]
            if "spark" in recipe:
                stamps[f"{entry}.spark"] = recipe["spark"]["fixed"]
    return stamps


@pytest.mark.parametrize("path", sorted(MEASURES.glob("*.yaml")), ids=lambda p: p.name)
def test_no_rule_changed_after_the_commit_it_names(path):
    relative = path.relative_to(ROOT).as_posix()
    text = path.read_text()
    now, stamps = rules(text), fixed_of(text)
    later: dict[str, dict[str, dict]] = {}  # commit → rules, each commit read once
    for name, commit in stamps.items():
        git("cat-file", "-e", f"{commit}^{{commit}}")
        for after in git("log", "--format=%h", f"{commit}..HEAD", "--", relative).split():
            if after not in later:
                later[after] = rules(git("show", f"{after}:{relative}"))
            then = later[after].get(name)
            assert then is None or then == now[name], (
                f"{path.name}: {name}: its rule is not the one of {after}, a commit after the one it names (fixed: {commit}): "
                f"name the commit the new rule was written on, and keep the first one in `first:`")


def test_every_change_names_a_commit_of_this_repository():
    for path in sorted(MEASURES.glob("*.yaml")):
        body = yaml.load(path.read_text(), Loader=_Loader) or {}
        for entry, recipe in body.items():
            if isinstance(recipe, dict) and "first" in recipe:
                git("cat-file", "-e", f"{recipe['first']['changed']}^{{commit}}")
