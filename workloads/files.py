"""Streams from the user's own files, validated so that a bad file fails with one clear message.

* ``file:path=trace.csv,key=word`` — CSV, TSV, Parquet or plain text (whitespace-separated
  columns, ``key`` a 0-based column number, or ``line`` for the whole line); optional ``time`` column
  in seconds, which must be non-decreasing.
* ``pageviews:path=pageviews-20080101-*.gz`` — Wikipedia page-view dumps (``project page count
  bytes`` per line, one file per hour, gzip or plain): each line becomes ``count`` messages of key
  ``project/page``, spread uniformly at random over its hour.
"""

from __future__ import annotations

import glob
import gzip
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.stream import Stream
from skewbench.workloads.registry import WorkloadError, workload

FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet"}


def _existing(path: str) -> Path:
    if not path:
        raise WorkloadError("file: give path=FILE (and key=COLUMN), e.g. file:path=words.csv,key=word")
    file = Path(path).expanduser()
    if not file.is_file():
        raise WorkloadError(f"file: no such file {str(file)!r}")
    return file


def _table(file: Path, fmt: str, key: str) -> pd.DataFrame:
    fmt = fmt or FORMATS.get(file.suffix.lower(), "text")
    try:
        if fmt == "parquet":
            return pd.read_parquet(file)
        if fmt in ("csv", "tsv"):
            return pd.read_csv(file, sep="," if fmt == "csv" else "\t", dtype=str, keep_default_na=False)
        if fmt == "text":
            lines = pd.Series(file.read_text(encoding="utf-8").splitlines(), dtype=object)
            return pd.DataFrame({"line": lines}) if key == "line" else lines.str.split(expand=True)
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise WorkloadError(f"file: cannot read {file} as {fmt}: {str(exc).splitlines()[0]}") from None
    raise WorkloadError(f"file: unknown format {fmt!r}; use csv, tsv, parquet or text")


def _column(table: pd.DataFrame, name: str, file: Path) -> pd.Series:
    if name in table.columns:
        return table[name]
    if name.isdigit() and int(name) in table.columns:
        return table[int(name)]
    shown = ", ".join(map(str, table.columns[:20]))
    raise WorkloadError(f"file: {file.name} has no column {name!r}; its columns: {shown}")


def _times(column: pd.Series, file: Path) -> np.ndarray:
    times = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    if np.isnan(times).any():
        row = int(np.flatnonzero(np.isnan(times))[0])
        raise WorkloadError(f"file: {file.name} row {row + 1}: time {column.iloc[row]!r} is not a number of seconds")
    if len(times) > 1 and (np.diff(times) < 0).any():
        row = int(np.flatnonzero(np.diff(times) < 0)[0]) + 1
        raise WorkloadError(f"file: {file.name} row {row + 1}: time goes backwards; sort the file by time")
    return times


@workload("file")
def from_file(messages: int | None = None, seed: int = 0, *, path: str = "", key: str = "key",
              format: str = "", time: str = "") -> Stream:
    """Your own trace: CSV/TSV/Parquet/text with a key column (key=NAME or 0-based number, or key=line)."""
    file = _existing(path)
    table = _table(file, format.lower(), key)
    if messages is not None:
        table = table.iloc[:messages]
    if table.empty:
        raise WorkloadError(f"file: {file} has no rows")
    keys = _column(table, key, file)
    missing = keys.isna() | (keys.astype(str).str.len() == 0)
    if missing.any():
        row = int(np.flatnonzero(missing.to_numpy())[0])
        raise WorkloadError(f"file: {file.name} row {row + 1} has an empty key in column {key!r}")
    labels, ids = np.unique(keys.astype(str).to_numpy(dtype=object), return_inverse=True)
    times = _times(_column(table, time, file), file) if time else None
    return Stream("file", ids.astype(np.int64), labels, times=times)


def _pageview_lines(file: Path):
    opener = gzip.open if file.suffix == ".gz" else open
    try:
        with opener(file, "rt", encoding="utf-8", errors="replace") as handle:
            yield from enumerate(handle, 1)
    except (OSError, EOFError) as exc:
        raise WorkloadError(f"pageviews: cannot read {file}: {exc}") from None


def _read_hour(file: Path, skip_bad: bool) -> tuple[list[str], list[int], int]:
    keys, counts, bad = [], [], 0
    for number, line in _pageview_lines(file):
        fields = line.split()
        if len(fields) == 4 and fields[2].isdigit():
            keys.append(f"{fields[0]}/{fields[1]}")
            counts.append(int(fields[2]))
        elif not skip_bad:
            raise WorkloadError(f"pageviews: {file.name} line {number}: expected 'project page count bytes', "
                                f"got {line.strip()[:80]!r} (skip_bad=1 skips such lines)")
        else:
            bad += 1
    return keys, counts, bad


@workload("pageviews")
def pageviews(messages: int | None = None, seed: int = 0, *, path: str = "", skip_bad: bool = False) -> Stream:
    """Wikipedia page-view dumps (one file per hour, glob allowed): each view is one message keyed project/page."""
    files = sorted(Path(p) for p in glob.glob(str(Path(path).expanduser()))) if path else []
    if not files:
        raise WorkloadError(f"pageviews: no file matches path={path!r}")
    rng = np.random.default_rng(seed)
    keys, counts, hours, skipped = [], [], [], 0
    for hour, file in enumerate(files):
        k, c, bad = _read_hour(file, skip_bad)
        keys += k
        counts += c
        hours += [hour] * len(k)
        skipped += bad
    if not keys:
        raise WorkloadError(f"pageviews: {len(files)} file(s) hold no page views")
    if skipped:
        print(f"pageviews: skipped {skipped} malformed line(s)")
    labels, line_ids = np.unique(np.array(keys, dtype=object), return_inverse=True)
    ids = np.repeat(line_ids, counts)
    times = (np.repeat(np.array(hours, dtype=np.float64), counts) + rng.random(len(ids))) * 3600.0
    order = np.argsort(times, kind="stable")[:messages]
    return Stream("pageviews", ids[order].astype(np.int64), labels, times=times[order])
