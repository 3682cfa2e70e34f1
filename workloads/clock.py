"""A trace's time column as arrival times in seconds, checked to be non-decreasing.

Its own module: what a time means does not depend on the format it was read from.  Numbers are
seconds as they are; ISO-8601 timestamps are seconds since the first row (UTC when no zone is given).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from skewbench.workloads.columns import first_row
from skewbench.workloads.registry import WorkloadError

_NAT = np.iinfo(np.int64).min


def _nanoseconds(strings: pa.Array) -> np.ndarray:
    """ISO-8601 timestamps as int64 ns since the epoch (UTC; no zone means UTC); unparsable → ``_NAT``."""
    for target in (pa.timestamp("ns"), pa.timestamp("ns", tz="UTC")):
        try:
            stamps = pc.cast(strings, target)
        except pa.ArrowInvalid:
            continue
        return pc.fill_null(stamps.cast(pa.int64()), _NAT).to_numpy(zero_copy_only=False)
    objects = pd.Series(strings.to_numpy(zero_copy_only=False), dtype=object)
    with_zone = pd.to_datetime(objects, format="ISO8601", utc=True, errors="coerce")
    return with_zone.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]").view(np.int64)


def _numbers(strings: pa.Array) -> np.ndarray:
    try:
        return pc.cast(strings, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:  # what Arrow refuses pandas may still read (" 1"), as before
        objects = pd.Series(strings.to_numpy(zero_copy_only=False), dtype=object)
        return pd.to_numeric(objects, errors="coerce").to_numpy(dtype=np.float64)


def seconds(column: pa.ChunkedArray, file: Path) -> np.ndarray:
    """Arrival times in seconds: numbers as they are, timestamps relative to the first row; non-decreasing."""
    if pa.types.is_dictionary(column.type):
        column = pa.chunked_array([chunk.dictionary_decode() for chunk in column.chunks], column.type.value_type)
    kind = column.type
    what = "a number of seconds"
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        stamps = column.cast(pa.timestamp("ns", tz=getattr(kind, "tz", None)))
        times = _relative(pc.fill_null(stamps.cast(pa.int64()), _NAT).to_numpy())
    elif pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        times = column.cast(pa.float64()).to_numpy()
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        what = "a number of seconds or an ISO-8601 timestamp"
        head = column.slice(0, 1).combine_chunks()
        if not np.isnan(_numbers(head)).any() or (_nanoseconds(head) == _NAT).any():
            times = np.concatenate([_numbers(chunk) for chunk in column.chunks] or [np.zeros(0)])
        else:
            times = _relative(np.concatenate([_nanoseconds(chunk) for chunk in column.chunks]))
    else:
        raise WorkloadError(f"file: {file.name}: time column of type {kind} is neither numbers of seconds nor "
                            f"timestamps")
    bad = ~np.isfinite(times)  # also "inf": a time must be a moment
    if bad.any():
        row = first_row(bad)
        raise WorkloadError(f"file: {file.name} row {row}: time {column[row - 1].as_py()!r} is not {what}")
    steps = np.diff(times)
    if len(steps) and (steps < 0).any():
        raise WorkloadError(f"file: {file.name} row {first_row(steps < 0) + 1}: time goes backwards; "
                            f"sort the file by time")
    return times


def _relative(ns: np.ndarray) -> np.ndarray:
    """int64 ns since the epoch → float seconds since the first row (NaN where a value did not parse)."""
    bad = ns == _NAT
    times = (ns - ns[0]).astype(np.float64) / 1e9 if len(ns) and not bad[0] else np.zeros(len(ns))
    times[bad] = np.nan
    return times
