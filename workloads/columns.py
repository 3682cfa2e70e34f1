"""A trace file's key (and time) column, parsed by pyarrow, and the key column as dense ids.

Its own module: parsing CSV, TSV, Parquet and text into columns is one job, whatever the workload.

Files are parsed by Arrow's multithreaded CSV reader into columns, never a Python string per
message: the key column is dictionary-encoded, so each distinct key becomes one label (sorted, as
``np.unique`` would give them) and is hashed once, by :attr:`Stream.key_fps`.  Text files whose
columns are separated by one tab (or one space) take that fast path; any other spacing is split
by Arrow's whitespace kernel, with exactly Python's ``str.splitlines``/``str.split`` semantics.
"""

from __future__ import annotations

import codecs
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from skewbench.workloads.compressed import DAMAGED, decompress, first_line, opener, read_lines
from skewbench.workloads.registry import WorkloadError

_BLOCK = 1 << 23  # bytes per CSV block (Arrow default 1 MB: 8x more per-block dictionaries to unify)
_DICT = pa.dictionary(pa.int32(), pa.string())
# Every character Python's str.split() splits on (checked against Python in the tests).
_WHITESPACE = r"[\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
# Line breaks of str.splitlines() besides \n and \r, as UTF-8.
_OTHER_BREAKS = (b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e")
_TO_NEWLINE = bytes.maketrans(b"".join(_OTHER_BREAKS), b"\n" * len(_OTHER_BREAKS))


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
    return WorkloadError(f"file: cannot read {file} as {fmt}: {first_line(exc)}")


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
    except DAMAGED as exc:  # also a compressed file found damaged while reading its head
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


# ---- any format ----------------------------------------------------------------------------------


def read_columns(file: Path, fmt: str, codec: str | None, key: str, time: str, limit: int | None = None) -> _Columns:
    """Parse ``file`` (its first ``limit`` rows at least) and return its key column (and time column)."""
    wanted = [key, time] if time else [key]
    if fmt == "text":
        try:
            if codec:
                data = decompress(file, codec, limit)
            else:
                with open(file, "rb") as handle:
                    data = handle.read() if limit is None else read_lines(handle, limit)
        except OSError as exc:
            raise _cannot(file, fmt, exc) from None
        return _text(file, data, key, wanted, limit)
    if codec is None:
        source = lambda arrow=True: str(file)  # noqa: E731
    elif limit is not None and fmt != "parquet":  # decompress only as far as the reader reads
        open_file = opener(file, codec)
        source = lambda arrow=True: open_file() if arrow else io.BytesIO(decompress(file, codec))  # noqa: E731
    else:
        data = decompress(file, codec)
        buffer = pa.py_buffer(data)
        source = lambda arrow=True: pa.BufferReader(buffer) if arrow else io.BytesIO(data)  # noqa: E731
    if fmt == "parquet":
        return _parquet(file, source, wanted, limit)
    return _csv(file, source, fmt, wanted, limit)


# ---- the key column to ids and labels ------------------------------------------------------------


def first_row(mask: np.ndarray) -> int:
    """The 1-based row of the first ``True``, as messages number rows."""
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
        raise WorkloadError(empty_key.format(first_row(pc.is_null(column).to_numpy(zero_copy_only=False))))
    indices, values = _dictionary(column)
    if pa.types.is_floating(values.type) and pc.any(pc.is_nan(values)).as_py():
        raise WorkloadError(empty_key.format(first_row(pc.is_nan(values).to_numpy(zero_copy_only=False)[indices])))
    if pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type):
        try:  # keys are text: bytes that are not UTF-8 would need a lossy decode
            values = values.cast(pa.string())
        except pa.ArrowInvalid:
            raise WorkloadError(f"file: {file.name} column {key!r} holds bytes that are not UTF-8 text; keys are "
                                f"text") from None
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        # As before: the key is the text pandas prints for it ("5", "1.5", "True", "2013-01-01 10:00:00").
        values = pa.array(values.to_pandas().astype(str).to_numpy(dtype=object), pa.string())
    empty = pc.equal(pc.binary_length(values), 0).to_numpy(zero_copy_only=False)
    if empty.any() and empty[indices].any():
        raise WorkloadError(empty_key.format(first_row(empty[indices])))
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
