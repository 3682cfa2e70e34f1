"""Streams from the user's own files, validated so that a bad file fails with one clear message.

* ``file:path=trace.csv,key=word`` — CSV, TSV, Parquet or plain text (whitespace-separated
  columns, ``key`` a 0-based column number, or ``line`` for the whole line), plain or compressed
  (``.gz``, ``.bz2``, ``.xz``/``.lzma``, ``.zst``, ``.lz4``; the format is read from the suffix
  before the compression suffix, ``trace.tsv.gz`` is TSV, ``trace.gz`` text).  The optional
  ``time`` column holds numbers of seconds (kept as they are) or ISO-8601 timestamps such as
  ``2013-01-01T10:00:00Z`` or ``2013-01-01 10:00:00.25`` (seconds since the first message; a
  timestamp without a zone is read as UTC); either way it must be non-decreasing.
* ``pageviews:path=pageviews-20080101-*.gz`` — Wikipedia page-view dumps (``project page count
  bytes`` per line, one file per hour, gzip or plain): each line becomes ``count`` messages of key
  ``project/page``, spread uniformly at random over its hour.  Keys are text: a line that is not
  UTF-8 is malformed.  Only the hours the first ``messages`` views fall in are expanded, and they may
  hold at most :data:`~skewbench.bounds.MAX_IN_MEMORY` views.

This module keeps only the workloads a SPEC names; the ``file:`` workload reads its columns with
:mod:`~skewbench.workloads.columns` and its times with :mod:`~skewbench.workloads.clock`.
"""

from __future__ import annotations

import glob
import gzip
from pathlib import Path

import numpy as np

from skewbench.bounds import MAX_IN_MEMORY
from skewbench.stream import Stream
from skewbench.workloads.clock import seconds
from skewbench.workloads.columns import key_ids, read_columns
from skewbench.workloads.compressed import detect
from skewbench.workloads.registry import WorkloadError, workload


def _existing(path: str) -> Path:
    if not path:
        raise WorkloadError("file: give path=FILE (and key=COLUMN), e.g. file:path=words.csv,key=word")
    file = Path(path).expanduser()
    if not file.is_file():
        raise WorkloadError(f"file: no such file {str(file)!r}")
    return file


@workload("file")
def from_file(messages: int | None = None, seed: int = 0, *, path: str = "", key: str = "key",
              format: str = "", time: str = "") -> Stream:
    """Your own trace: CSV/TSV/Parquet/text (.gz/.bz2/.xz/.zst too) with a key column (NAME, 0-based number or line)."""
    file = _existing(path)
    fmt, codec = detect(file, format.lower())
    table = read_columns(file, fmt, codec, key, time, messages)
    rows = table.rows if messages is None else min(table.rows, messages)
    if rows == 0:
        raise WorkloadError(f"file: {file} has no rows")
    ids, labels = key_ids(table.column(key, rows), file, key)
    times = seconds(table.column(time, rows), file) if time else None
    return Stream("file", ids, labels, times=times)


def _pageview_lines(file: Path):
    """``(number, line)`` of every line; bytes that are not UTF-8 kept as surrogates (:func:`_utf8`)."""
    opener = gzip.open if file.suffix == ".gz" else open
    try:
        with opener(file, "rt", encoding="utf-8", errors="surrogateescape") as handle:
            yield from enumerate(handle, 1)
    except (OSError, EOFError) as exc:
        raise WorkloadError(f"pageviews: cannot read {file}: {exc}") from None


def _utf8(line: str) -> bool:
    """Whether the line was UTF-8 in the file (no byte of it decoded to a surrogate)."""
    if line.isascii():
        return True
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_hour(file: Path, skip_bad: bool) -> tuple[list[str], list[int], int]:
    keys, counts, bad = [], [], 0
    for number, line in _pageview_lines(file):
        fields = line.split()
        text = _utf8(line)
        if text and len(fields) == 4 and fields[2].isascii() and fields[2].isdigit():  # not "²" (int() refuses)
            keys.append(f"{fields[0]}/{fields[1]}")
            counts.append(int(fields[2]))
        elif not skip_bad:
            what = ("expected 'project page count bytes', got " + repr(line.strip()[:80]) if text else
                    "not UTF-8 text (a page's key must be text)")
            raise WorkloadError(f"pageviews: {file.name} line {number}: {what} (skip_bad=1 skips such lines)")
        else:
            bad += 1
    return keys, counts, bad


def _hours_needed(per_hour: list[int], messages: int | None) -> int:
    """How many hours, from the first, hold the first ``messages`` views (later views all come later)."""
    if messages is None:
        return len(per_hour)
    total = 0
    for hour, views in enumerate(per_hour, 1):
        total += views
        if total >= messages:
            return hour
    return len(per_hour)


def _views(line_ids: np.ndarray, counts: list[int], hours: list[int], files: int, messages: int | None,
           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each view's key id and time, in time order: those of the hours that hold the first ``messages``, refused
    above :data:`~skewbench.bounds.MAX_IN_MEMORY` before any is expanded."""
    per_hour = [0] * files
    for hour, count in zip(hours, counts):
        per_hour[hour] += count
    needed = _hours_needed(per_hour, messages)
    if sum(per_hour[:needed]) > MAX_IN_MEMORY:
        raise WorkloadError(f"pageviews: the first {needed} hour(s) hold {sum(per_hour[:needed]):,} views, more than "
                            f"the {MAX_IN_MEMORY:,} expanded in memory at most (fewer messages expand fewer hours)")
    lines = sum(1 for h in hours if h < needed)  # the lines of those hours come first
    ids = np.repeat(line_ids[:lines], counts[:lines])
    times = (np.repeat(np.array(hours[:lines], dtype=np.float64), counts[:lines]) + rng.random(len(ids))) * 3600.0
    order = np.argsort(times, kind="stable")[:messages]
    return ids[order].astype(np.int64), times[order]


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
    if sum(counts) == 0:
        raise WorkloadError(f"pageviews: {len(files)} file(s) hold no page views")
    if skipped:
        print(f"pageviews: skipped {skipped} malformed line(s)")
    labels, line_ids = np.unique(np.array(keys, dtype=object), return_inverse=True)
    ids, times = _views(line_ids, counts, hours, len(files), messages, rng)
    return Stream("pageviews", ids, labels, times=times)
