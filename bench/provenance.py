"""What every result file records about where it came from: versions, commit, machine, command, config."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

PACKAGES = ("skewbench", "numpy", "numba", "pandas", "mmh3", "wordfreq", "pyspark")
#: The result files' format (pyperf style): a reader refuses a newer one instead of guessing at columns.
#: Raise it when a column changes meaning or disappears.
FORMAT_VERSION = 1


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def git_commit() -> str | None:
    """The checkout's commit, with ``-dirty`` when it has uncommitted changes (None outside git)."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def environment() -> dict:
    """Versions, commit and machine shape, as recorded with every result."""
    return {
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "packages": {p: v for p in PACKAGES if (v := _version(p))},
        "machine": {"host": platform.node(), "system": platform.platform(), "cpus": os.cpu_count()},
        "command": sys.argv,
    }


def write_metadata(result_path: Path, config: dict) -> Path:
    """Write ``<result>.meta.json`` beside a result file: the environment plus the run's config."""
    meta_path = result_path.with_name(result_path.name + ".meta.json")
    meta_path.write_text(json.dumps({"format_version": FORMAT_VERSION, "environment": environment(), "config": config},
                                    indent=2, default=str) + "\n")
    return meta_path


def check_format(folder: Path) -> None:
    """Refuse a folder holding result files of a newer format than this version reads (``ValueError``,
    one line); files from before formats were numbered are format 1."""
    for meta_path in sorted(folder.glob("*.meta.json")):
        version = json.loads(meta_path.read_text()).get("format_version", 1)
        if version > FORMAT_VERSION:
            raise ValueError(f"{meta_path}: result format {version} is newer than this skewbench reads "
                             f"({FORMAT_VERSION}): update skewbench to report it")
