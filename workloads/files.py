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
  ``project/page``, spread uniformly at random over its hour.

Files are parsed by Arrow's multithreaded CSV reader into columns, never a Python string per
message: the key column is dictionary-encoded, so each distinct key becomes one label (sorted, as
``np.unique`` would give them) and is hashed once, by :attr:`Stream.key_fps`.  Text files whose
columns are separated by one tab (or one space) take that fast path; any other spacing is split
by Arrow's whitespace kernel, with exactly Python's ``str.splitlines``/``str.split`` semantics.
"""

from __future__ import annotations

import codecs
import glob
import gzip
import io
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from skewbench.stream import Stream
from skewbench.workloads.registry import WorkloadError, workload

try:  # optional parts of a Python build
    import bz2
except ImportError:  # pragma: no cover
    bz2 = None
try:
    import lzma
except ImportError:  # pragma: no cover
    lzma = None

FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet",
           ".txt": "text", ".log": "text"}
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".lzma": "xz", ".zst": "zstd", ".zstd": "zstd",
                ".lz4": "lz4"}
UNSUPPORTED = {".zip": "zip", ".7z": "7-Zip", ".rar": "RAR", ".z": "compress (.Z)", ".br": "brotli",
               ".sz": "snappy", ".tar": "tar"}
_ARROW_CODECS = ("zstd", "lz4")  # no stdlib module reads these; gzip/bz2/xz use Python's (which detect truncation)
_BLOCK = 1 << 23  # bytes per CSV block (Arrow default 1 MB: 8x more per-block dictionaries to unify)
_DICT = pa.dictionary(pa.int32(), pa.string())
# Every character Python's str.split() splits on (checked against Python in the tests).
_WHITESPACE = r"[\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
# Line breaks of str.splitlines() besides \n and \r, as UTF-8.
_OTHER_BREAKS = (b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e")
_TO_NEWLINE = bytes.maketrans(b"".join(_OTHER_BREAKS), b"\n" * len(_OTHER_BREAKS))
_NAT = np.iinfo(np.int64).min


def _existing(path: str) -> Path:
    if not path:
        raise WorkloadError("file: give path=FILE (and key=COLUMN), e.g. file:path=words.csv,key=word")
    file = Path(path).expanduser()
    if not file.is_file():
        raise WorkloadError(f"file: no such file {str(file)!r}")
    return file


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def detect(file: Path, fmt: str = "") -> tuple[str, str | None]:
    """``(format, compression)`` of a file from its suffixes: ``trace.tsv.gz`` → ``("tsv", "gzip")``."""
    suffix = file.suffix.lower()
    codec = COMPRESSIONS.get(suffix)
    inner = Path(file.stem).suffix.lower() if codec else suffix
    for part in (suffix, inner):
        if part in UNSUPPORTED:
            raise WorkloadError(f"file: {file.name} is a {UNSUPPORTED[part]} file, which file: cannot read; "
                                f"unpack it, or compress it with gzip, bzip2, xz, zstd or lz4")
    fmt = fmt or FORMATS.get(inner, "text")
    if fmt not in ("csv", "tsv", "parquet", "text"):
        raise WorkloadError(f"file: unknown format {fmt!r}; use csv, tsv, parquet or text")
    return fmt, codec


def _arrow_codec_available(codec: str) -> bool:
    return pa.Codec.is_available(codec)


def _opener(file: Path, codec: str):
    """A function opening ``file`` as a binary stream of its decompressed bytes."""
    python = {"gzip": gzip, "bz2": bz2, "xz": lzma}.get(codec)
    if python is not None:
        return lambda: python.open(file, "rb")
    if codec == "bz2" and _arrow_codec_available("bz2"):
        return lambda: pa.input_stream(str(file), compression="bz2")
    tool = {"gzip": "gzip", "bz2": "bzip2", "xz": "xz"}.get(codec, codec)
    lacks = f"this pyarrow has no {codec} codec" if codec in _ARROW_CODECS else f"this Python has no {'lzma' if codec == 'xz' else codec} module"
    if codec in _ARROW_CODECS and _arrow_codec_available(codec):
        return lambda: pa.input_stream(str(file), compression=codec)
    raise WorkloadError(f"file: cannot read {file.name}: {lacks}; decompress it first (e.g. `{tool} -d {file.name}`)")


_DAMAGED = (OSError, EOFError, zlib.error, pa.ArrowException, *((lzma.LZMAError,) if lzma else ()))


def decompress(file: Path, codec: str, lines: int | None = None) -> bytes:
    """The decompressed content of ``file`` (at least its first ``lines`` lines, if given).

    A damaged file, or a codec this Python or pyarrow lacks, is one WorkloadError line.
    """
    opener = _opener(file, codec)
    try:
        with opener() as handle:
            if lines is None:
                return handle.read_buffer().to_pybytes() if isinstance(handle, pa.NativeFile) else handle.read()
            return _read_lines(handle, lines)
    except _DAMAGED as exc:
        raise WorkloadError(f"file: cannot decompress {file.name} as {codec}: {_first_line(exc)}") from None


def _read_lines(handle, lines: int) -> bytes:
    """Bytes from ``handle`` until they hold ``lines`` newlines (or the end)."""
    parts, seen, size = [], 0, 1 << 16
    while seen < lines:
        part = handle.read(size)
        if not part:
            break
        parts.append(part)
        seen += part.count(b"\n")
        size = min(size * 2, 1 << 26)
    return b"".join(parts)


@dataclass
class _Columns:
    """What a reader found: the row count, every column's name (for messages), the requested columns."""

    file: Path
    rows: int
    names: list
    found: dict  # requested name -> pa.ChunkedArray

    def column(self, name: str, rows: int) -> pa.ChunkedArray:
        if name not in self.found:
            shown = ", ".join(map(str, self.names[:20]))
            raise WorkloadError(f"file: {self.file.name} has no column {name!r}; its columns: {shown}")
        return self.found[name].slice(0, rows)


def _cannot(file: Path, fmt: str, exc: BaseException) -> WorkloadError:
    return WorkloadError(f"file: cannot read {file} as {fmt}: {_first_line(exc)}")


# ---- CSV / TSV ---------------------------------------------------------------------------------


def _csv(file: Path, source, fmt: str, wanted: list[str], limit: int | None) -> _Columns:
    parse = pa_csv.ParseOptions(delimiter="," if fmt == "csv" else "\t", newlines_in_values=True)
    read = pa_csv.ReadOptions(block_size=_BLOCK)
    try:
        with pa_csv.open_csv(source(), read_options=pa_csv.ReadOptions(), parse_options=parse) as probe:
            names = probe.schema.names
        present = [n for n in dict.fromkeys(wanted) if n in names] or names[:1]
        types = {n: (_DICT if n == wanted[0] else pa.string()) for n in present}
        convert = pa_csv.ConvertOptions(include_columns=present, column_types=types, strings_can_be_null=False)
        if limit is None:
            table = pa_csv.read_csv(source(), read_options=read, parse_options=parse, convert_options=convert)
        else:  # only the head: stop reading once it is in
            with pa_csv.open_csv(source(), read_options=read, parse_options=parse, convert_options=convert) as rows:
                batches = []
                for batch in rows:
                    batches.append(batch)
                    if sum(map(len, batches)) >= limit:
                        break
                table = pa.Table.from_batches(batches, schema=rows.schema)
    except pa.ArrowInvalid as exc:
        if "CSV parse error" not in str(exc):  # e.g. invalid UTF-8 in a column we read
            raise _cannot(file, fmt, exc) from None
        return _csv_ragged(file, source, fmt, wanted, limit)
    except _DAMAGED as exc:  # also a compressed file found damaged while reading its head
        raise _cannot(file, fmt, exc) from None
    return _Columns(file, table.num_rows, names, {n: table.column(n) for n in present if n in wanted})


def _csv_ragged(file: Path, source, fmt: str, wanted: list[str], limit: int | None) -> _Columns:
    """Rows with fewer fields than the header: pandas fills them with nulls (slow, but only for such files)."""
    try:
        frame = pd.read_csv(source(arrow=False), sep="," if fmt == "csv" else "\t", dtype=str, keep_default_na=False,
                            nrows=limit)
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise _cannot(file, fmt, exc) from None
    names = list(frame.columns)
    found = {n: pa.chunked_array([pa.array(frame[n].to_numpy(dtype=object), pa.string(), from_pandas=True)])
             for n in dict.fromkeys(wanted) if n in names}
    return _Columns(file, len(frame), names, found)


# ---- Parquet -------------------------------------------------------------------------------------


def _parquet(file: Path, source, wanted: list[str], limit: int | None) -> _Columns:
    try:
        parquet = pq.ParquetFile(source())
        names = [n for n in parquet.schema_arrow.names if not re.fullmatch(r"__index_level_\d+__", n)]
        present = [n for n in dict.fromkeys(wanted) if n in names] or names[:1]
        if limit is None or limit >= parquet.metadata.num_rows:
            table = parquet.read(columns=present)
        else:
            batches = []
            for batch in parquet.iter_batches(batch_size=min(limit, 1 << 16), columns=present):
                batches.append(batch)
                if sum(map(len, batches)) >= limit:
                    break
            table = pa.Table.from_batches(batches)
    except (pa.ArrowException, OSError) as exc:
        raise _cannot(file, "parquet", exc) from None
    return _Columns(file, table.num_rows, names, {n: table.column(n) for n in present if n in wanted})


# ---- plain text ----------------------------------------------------------------------------------


def _text_bytes(file: Path, data: bytes) -> bytes:
    """UTF-8 checked, BOM dropped and every line break of ``str.splitlines`` turned into ``\\n``."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    if b"\r" in data:  # as Python's universal newlines: \r\n and \r end a line
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if any(br in data for br in _OTHER_BREAKS):
        data = data.translate(_TO_NEWLINE)
    if b"\x85" in data:
        data = data.replace(b"\xc2\x85", b"\n")
    if b"\xa8" in data or b"\xa9" in data:
        data = data.replace(b"\xe2\x80\xa8", b"\n").replace(b"\xe2\x80\xa9", b"\n")
    whole = pa.Array.from_buffers(pa.large_binary(), 1, [None, pa.py_buffer(np.array([0, len(data)], np.int64)),
                                                          pa.py_buffer(data)])
    try:
        whole.cast(pa.large_string())
    except pa.ArrowInvalid:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _cannot(file, "text", exc) from None
        raise  # pragma: no cover - Arrow and Python disagree on UTF-8
    return data


def _lines(data: bytes) -> pa.LargeStringArray:
    """One string per line, each with its trailing ``\\n`` (a file's last line may lack it)."""
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1
    if data and not data.endswith(b"\n"):
        ends = np.append(ends, len(data))
    offsets = np.concatenate([np.zeros(1, np.int64), ends.astype(np.int64)])
    return pa.Array.from_buffers(pa.large_string(), len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _column_index(name: str) -> int | None:
    return int(name) if name.isdigit() else None


def _clean(values: pa.Array | pa.ChunkedArray) -> bool:
    """No value is empty or holds whitespace, so it is exactly one ``str.split()`` token."""
    if len(values) == 0:
        return True
    bad = pc.or_(pc.equal(pc.binary_length(values), 0), pc.match_substring_regex(values, _WHITESPACE))
    return not pc.any(bad).as_py()


def _text_delimited(file: Path, data: bytes, wanted: list[str]) -> _Columns | None:
    """Fast path: columns separated by exactly one tab (or one space), every wanted field one token.

    ``None`` when the file is not like that; :func:`_text_split` then splits it exactly.
    """
    first = data[:data.find(b"\n")] if b"\n" in data else data
    delimiter = "\t" if b"\t" in first else " "
    indexes = [_column_index(n) for n in wanted]
    if not data or None in indexes:
        return None
    last = max(indexes)
    sample = data[:1 << 16].decode("utf-8", errors="replace").split("\n")[:-1] or [first.decode("utf-8", "replace")]
    if any(line.split(delimiter)[:last + 1] != line.split()[:last + 1] for line in sample):
        return None  # the first lines already show other spacing: don't parse the whole file twice
    names = [f"f{i}" for i in range(last + 1)]
    time_only = {f"f{indexes[1]}"} - {f"f{indexes[0]}"} if len(indexes) > 1 else set()
    types = {n: (pa.string() if n in time_only else _DICT) for n in names}
    try:
        table = pa_csv.read_csv(
            pa.BufferReader(pa.py_buffer(data)),
            read_options=pa_csv.ReadOptions(autogenerate_column_names=True, block_size=_BLOCK),
            parse_options=pa_csv.ParseOptions(delimiter=delimiter, quote_char=False, ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(include_columns=names, column_types=types,
                                                  strings_can_be_null=False))
    except (pa.ArrowInvalid, KeyError):  # ragged rows, blank lines, fewer columns than wanted
        return None
    table = table.unify_dictionaries()  # one dictionary per column: check each distinct value once
    columns = {name: table.column(name) for name in names}
    for name, column in columns.items():
        if name in time_only:
            try:
                numbers = pa.chunked_array([pc.cast(chunk, pa.float64()) for chunk in column.chunks], pa.float64())
            except pa.ArrowInvalid:
                numbers = None
            if numbers is not None and not numbers.null_count and not pc.any(pc.is_nan(numbers)).as_py():
                columns[name] = numbers  # every value a number, so one token each (Arrow refuses blanks)
            elif not _clean(column):
                return None
        elif column.num_chunks and not _clean(column.chunk(0).dictionary):
            return None
    found = {n: columns[f"f{i}"] for n, i in zip(wanted, indexes)}
    return _Columns(file, table.num_rows, list(range(len(table.schema))), found)


def _token(lists: pa.Array, counts: np.ndarray, index: int) -> pa.ChunkedArray:
    """Token ``index`` of every line (null where the line has fewer tokens)."""
    has = counts > index
    values = pc.list_flatten(pc.list_slice(lists, index, index + 1))
    if has.all():
        return pa.chunked_array([values])
    positions = np.cumsum(has) - 1
    return pa.chunked_array([values.take(pa.array(positions, mask=~has))])


def _text_split(file: Path, data: bytes, key: str, wanted: list[str]) -> _Columns:
    """Every line, or its whitespace-separated tokens: ``str.splitlines()`` and ``str.split()`` in Arrow."""
    lines = _lines(data)
    if key == "line":
        return _Columns(file, len(lines), ["line"], {"line": pa.chunked_array([pc.utf8_rtrim(lines, "\n")])})
    trimmed = pc.utf8_trim_whitespace(lines)
    blank = pc.equal(pc.binary_length(trimmed), 0)  # no token (Arrow would give one empty token)
    lists = pc.utf8_split_whitespace(pc.if_else(blank, pa.scalar(None, trimmed.type), trimmed))
    counts = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
    width = int(counts.max()) if len(counts) else 0
    found = {n: _token(lists, counts, int(n)) for n in wanted if n.isdigit() and int(n) < width}
    return _Columns(file, len(lines), list(range(width)), found)


def _head(data: bytes, lines: int) -> bytes:
    """The first ``lines`` lines of ``data`` (all of it if it has fewer)."""
    start, window = 0, 1 << 20
    while start < len(data):
        chunk = np.frombuffer(data, dtype=np.uint8, count=min(window, len(data) - start), offset=start)
        ends = np.flatnonzero(chunk == 10)
        if len(ends) >= lines:
            return data[:start + int(ends[lines - 1]) + 1]
        lines -= len(ends)
        start += len(chunk)
        window *= 2
    return data


def _text(file: Path, data: bytes, key: str, wanted: list[str], limit: int | None) -> _Columns:
    if limit is not None:  # whole lines only (a head read may end inside a character); more breaks may follow
        data = _head(_text_bytes(file, _head(data, limit)), limit)
    else:
        data = _text_bytes(file, data)
    if key != "line":
        fast = _text_delimited(file, data, wanted)
        if fast is not None:
            return fast
    return _text_split(file, data, key, wanted)


# ---- columns to ids, labels and seconds ----------------------------------------------------------


def _first_row(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0]) + 1


def _dictionary(column: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """``(index of each row, dictionary)`` of a column, one dictionary for every chunk."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    shared = {(chunk.dictionary.offset, len(chunk.dictionary), *(b.address for b in chunk.dictionary.buffers() if b))
              for chunk in column.chunks}
    if len(shared) > 1:
        column = pa.table({"k": column}).unify_dictionaries().column("k")
    if column.num_chunks == 0:
        return np.zeros(0, np.int64), pa.array([], column.type.value_type)
    indices = [chunk.indices.to_numpy(zero_copy_only=False) for chunk in column.chunks]
    return np.concatenate(indices).astype(np.int64, copy=False), column.chunk(0).dictionary


def key_ids(column: pa.ChunkedArray, file: Path, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Dense ids (the rank of the key among the distinct keys, sorted) and the distinct keys as ``str``."""
    empty_key = f"file: {file.name} row {{}} has an empty key in column {key!r}"
    if column.null_count:
        raise WorkloadError(empty_key.format(_first_row(pc.is_null(column).to_numpy(zero_copy_only=False))))
    indices, values = _dictionary(column)
    if pa.types.is_floating(values.type) and pc.any(pc.is_nan(values)).as_py():
        raise WorkloadError(empty_key.format(_first_row(pc.is_nan(values).to_numpy(zero_copy_only=False)[indices])))
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        # As before: the key is the text pandas prints for it ("5", "1.5", "True", "2013-01-01 10:00:00").
        values = pa.array(values.to_pandas().astype(str).to_numpy(dtype=object), pa.string())
    empty = pc.equal(pc.binary_length(values), 0).to_numpy(zero_copy_only=False)
    if empty.any() and empty[indices].any():
        raise WorkloadError(empty_key.format(_first_row(empty[indices])))
    used = np.bincount(indices, minlength=len(values)) > 0
    if not used.all():
        indices = (np.cumsum(used) - 1)[indices]
        values = values.filter(pa.array(used))
    order = pc.sort_indices(values).to_numpy()
    ordered = values.take(pa.array(order))
    new = np.ones(len(ordered), dtype=bool)
    if len(ordered) > 1:
        new[1:] = pc.not_equal(ordered.slice(1), ordered.slice(0, len(ordered) - 1)).to_numpy(zero_copy_only=False)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.cumsum(new) - 1
    labels = ordered.filter(pa.array(new)).to_numpy(zero_copy_only=False)
    return rank[indices], labels


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
    bad = np.isnan(times)
    if bad.any():
        row = _first_row(bad)
        raise WorkloadError(f"file: {file.name} row {row}: time {column[row - 1].as_py()!r} is not {what}")
    steps = np.diff(times)
    if len(steps) and (steps < 0).any():
        raise WorkloadError(f"file: {file.name} row {_first_row(steps < 0) + 1}: time goes backwards; "
                            f"sort the file by time")
    return times


def _relative(ns: np.ndarray) -> np.ndarray:
    """int64 ns since the epoch → float seconds since the first row (NaN where a value did not parse)."""
    bad = ns == _NAT
    times = (ns - ns[0]).astype(np.float64) / 1e9 if len(ns) and not bad[0] else np.zeros(len(ns))
    times[bad] = np.nan
    return times


def read_columns(file: Path, fmt: str, codec: str | None, key: str, time: str, limit: int | None = None) -> _Columns:
    """Parse ``file`` (its first ``limit`` rows at least) and return its key column (and time column)."""
    wanted = [key, time] if time else [key]
    if fmt == "text":
        try:
            if codec:
                data = decompress(file, codec, limit)
            else:
                with open(file, "rb") as handle:
                    data = handle.read() if limit is None else _read_lines(handle, limit)
        except OSError as exc:
            raise _cannot(file, fmt, exc) from None
        return _text(file, data, key, wanted, limit)
    if codec is None:
        source = lambda arrow=True: str(file)  # noqa: E731
    elif limit is not None and fmt != "parquet":  # decompress only as far as the reader reads
        opener = _opener(file, codec)
        source = lambda arrow=True: opener() if arrow else io.BytesIO(decompress(file, codec))  # noqa: E731
    else:
        data = decompress(file, codec)
        buffer = pa.py_buffer(data)
        source = lambda arrow=True: pa.BufferReader(buffer) if arrow else io.BytesIO(data)  # noqa: E731
    if fmt == "parquet":
        return _parquet(file, source, wanted, limit)
    return _csv(file, source, fmt, wanted, limit)


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
