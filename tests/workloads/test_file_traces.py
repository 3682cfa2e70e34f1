"""Real traces as users have them: compressed, timestamped, and loaded by the columnar fast path.

Every check compares the loader with a plain Python parse of the same file (the semantics the
loader had before it was columnar), so the fast path cannot drift from them.
"""

import bz2
import gzip
import lzma
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from skewbench.stream import Stream
from skewbench.workloads import WorkloadError, columns, compressed, parse

CODECS = ["gzip", "bz2", "xz", "zstd", "lz4"]
SUFFIX = {"gzip": ".gz", "bz2": ".bz2", "xz": ".xz", "zstd": ".zst", "lz4": ".lz4"}


def compress(path, codec):
    """``path`` + the codec's suffix, holding ``path``'s bytes compressed (as the usual tools write them)."""
    data = path.read_bytes()
    out = path.with_name(path.name + SUFFIX[codec])
    if codec in ("zstd", "lz4"):
        if not pa.Codec.is_available(codec):
            pytest.skip(f"this pyarrow has no {codec} codec")
        with pa.CompressedOutputStream(str(out), codec) as sink:
            sink.write(data)
    else:
        out.write_bytes({"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[codec](data))
    return out


def same_stream(a, b):
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.fps, b.fps)
    np.testing.assert_array_equal(a.clock, b.clock)


def one_line_error(spec):
    with pytest.raises(WorkloadError) as err:
        parse(spec)
    message = str(err.value)
    assert "\n" not in message and message.startswith("file: ")
    return message


def reference_text(path, key, time=None):
    """The text format by hand: ``str.splitlines``, ``str.split``, ``np.unique``, ``float``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [line.split() for line in lines]
    keys = lines if key == "line" else [row[int(key)] for row in rows]
    labels, ids = np.unique(np.array(keys, dtype=object), return_inverse=True)
    times = None if time is None else np.array([float(row[int(time)]) for row in rows])
    return ids, labels, times


def random_trace(rng, lines, keys=300):
    """(times, keys) of a skewed random trace whose keys include non-ASCII ones."""
    vocabulary = np.array([f"k{i}" for i in range(keys - 4)] + ["ключ", "é", "日本", "a-b_c.d/e"], dtype=object)
    weights = 1.0 / np.arange(1, keys + 1)
    chosen = vocabulary[rng.choice(keys, size=lines, p=weights / weights.sum())]
    times = np.round(np.cumsum(rng.random(lines)), 3)
    return times, chosen


# ---- compression -------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("fmt", ["txt", "tsv", "csv"])
def test_every_codec_gives_the_stream_of_the_plain_file(tmp_path, codec, fmt):
    times, keys = random_trace(np.random.default_rng(1), 500)
    path = tmp_path / f"trace.{fmt}"
    if fmt == "txt":
        path.write_text("".join(f"{t}\t{k}\n" for t, k in zip(times, keys)), encoding="utf-8")
        columns = "key=1,time=0"
    else:
        pd.DataFrame({"t": times, "word": keys}).to_csv(path, sep="," if fmt == "csv" else "\t", index=False)
        columns = "key=word,time=t"
    plain = parse(f"file:path={path},{columns}")
    packed = parse(f"file:path={compress(path, codec)},{columns}")
    same_stream(plain, packed)
    assert plain.messages == 500 and list(plain.labels[plain.ids]) == list(keys)


@pytest.mark.parametrize("name,expected", [
    ("trace.tsv.gz", ("tsv", "gzip")), ("trace.txt.zst", ("text", "zstd")), ("trace.gz", ("text", "gzip")),
    ("t.CSV.BZ2", ("csv", "bz2")), ("t.parquet", ("parquet", None)), ("log.xz", ("text", "xz")),
    ("t.csv.lz4", ("csv", "lz4")), ("trace", ("text", None)), ("t.tab.lzma", ("tsv", "xz")),
])
def test_format_is_the_suffix_before_the_compression_suffix(tmp_path, name, expected):
    assert compressed.detect(tmp_path / name) == expected
    assert compressed.detect(tmp_path / name, "csv")[0] == "csv"  # format= wins


def test_compressed_parquet_reads(tmp_path):
    path = tmp_path / "w.parquet"
    pd.DataFrame({"word": ["a", "b", "a"]}).to_parquet(path)
    assert list(parse(f"file:path={compress(path, 'gzip')},key=word").ids) == [0, 1, 0]


@pytest.mark.parametrize("codec", CODECS)
def test_garbled_or_truncated_compressed_file_fails_in_one_line(tmp_path, codec):
    (tmp_path / "t.txt").write_bytes(bytes(range(256)) * 400)
    good = compress(tmp_path / "t.txt", codec)
    cut = tmp_path / f"cut.txt{SUFFIX[codec]}"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    garbled = tmp_path / f"garbled.txt{SUFFIX[codec]}"
    garbled.write_bytes(b"this is not compressed at all\n" * 10)
    for path in (cut, garbled):
        assert f"cannot decompress {path.name} as {codec}" in one_line_error(f"file:path={path},key=line")


def test_codec_missing_from_pyarrow_says_so(tmp_path, monkeypatch):
    path = tmp_path / "t.txt.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd")
    monkeypatch.setattr(compressed, "_arrow_codec_available", lambda codec: False)
    message = one_line_error(f"file:path={path},key=line")
    assert "this pyarrow has no zstd codec" in message and "zstd -d t.txt.zst" in message


def test_python_without_lzma_says_so(tmp_path, monkeypatch):
    (tmp_path / "t.txt").write_text("a\n")
    path = compress(tmp_path / "t.txt", "xz")
    monkeypatch.setattr(compressed, "lzma", None)
    message = one_line_error(f"file:path={path},key=line")
    assert "this Python has no lzma module" in message and "xz -d t.txt.xz" in message


@pytest.mark.parametrize("name", ["t.zip", "t.csv.7z", "t.tar.gz"])
def test_archives_are_refused_by_name(tmp_path, name):
    (tmp_path / name).write_bytes(b"PK\x03\x04")
    assert "which file: cannot read" in one_line_error(f"file:path={tmp_path / name},key=line")


def test_compressed_binary_is_a_utf8_error(tmp_path):
    path = tmp_path / "t.txt.gz"
    path.write_bytes(gzip.compress(b"ok\n\xff\xfe\n"))
    assert "as text: 'utf-8' codec can't decode byte 0xff" in one_line_error(f"file:path={path},key=line")


# ---- time columns -----------------------------------------------------------------------------


@pytest.mark.parametrize("stamps", [
    ["2013-01-01T10:00:00Z", "2013-01-01T10:00:01.5Z", "2013-01-01T10:00:01.5Z", "2013-01-01T11:00:00Z"],
    ["2013-01-01T10:00:00", "2013-01-01T10:00:01.5", "2013-01-01T10:00:01.500", "2013-01-01T11:00:00"],
    ["2013-01-01 10:00:00", "2013-01-01 10:00:01.5", "2013-01-01 10:00:01.5", "2013-01-01 11:00:00"],
    ["2013-01-01T11:00:00+01:00", "2013-01-01T10:00:01.5Z", "2013-01-01 10:00:01.500000", "2013-01-01T11:00Z"],
])
def test_iso_timestamps_are_seconds_since_the_first_message(tmp_path, stamps):
    path = tmp_path / "t.csv"
    pd.DataFrame({"when": stamps, "word": list("abac")}).to_csv(path, index=False)
    stream = parse(f"file:path={path},key=word,time=when")
    np.testing.assert_array_equal(stream.clock, [0.0, 1.5, 1.5, 3600.0])


def test_iso_timestamps_in_a_text_file_and_nanoseconds(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("2013-01-01T10:00:00.000000001Z a\n2013-01-01T10:00:00.25Z b\n")
    np.testing.assert_allclose(parse(f"file:path={path},key=1,time=0").clock, [0.0, 0.25 - 1e-9], rtol=0, atol=1e-12)


def test_numeric_seconds_are_kept_as_they_are(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("1357034400.5\ta\n1357034401\tb\n1357034401\ta\n")
    np.testing.assert_array_equal(parse(f"file:path={path},key=1,time=0").clock, [1357034400.5, 1357034401, 1357034401])


def test_parquet_timestamp_and_date_columns(tmp_path):
    path = tmp_path / "t.parquet"
    stamps = pd.to_datetime(["2013-01-01 10:00:00.0", "2013-01-01 10:00:02.5"], format="ISO8601")
    pd.DataFrame({"word": ["a", "b"], "at": stamps, "day": stamps.date}).to_parquet(path)
    np.testing.assert_array_equal(parse(f"file:path={path},key=word,time=at").clock, [0.0, 2.5])
    np.testing.assert_array_equal(parse(f"file:path={path},key=word,time=day").clock, [0.0, 0.0])


@pytest.mark.parametrize("fmt", ["csv", "txt"])
def test_timestamps_going_backwards_fail_clearly(tmp_path, fmt):
    path = tmp_path / f"t.{fmt}"
    sep = "," if fmt == "csv" else "\t"
    header = f"t{sep}word\n" if fmt == "csv" else ""
    path.write_text(header + "".join(f"{t}{sep}{k}\n" for t, k in [
        ("2013-01-01T10:00:00Z", "a"), ("2013-01-01T10:00:05Z", "b"), ("2013-01-01T10:00:04.999Z", "c")]))
    columns = "key=word,time=t" if fmt == "csv" else "key=1,time=0"
    assert "row 3: time goes backwards; sort the file by time" in one_line_error(f"file:path={path},{columns}")


@pytest.mark.parametrize("values,row,shown", [
    (["2013-01-01T10:00:00Z", "soon"], 2, "'soon'"),
    (["2013-01-01T10:00:00Z", "2013-13-01T10:00:00Z"], 2, "'2013-13-01T10:00:00Z'"),
    (["1.5", "2013-01-01T10:00:00Z"], 2, "'2013-01-01T10:00:00Z'"),
    (["later", "1"], 1, "'later'"),
    (["1", "nan"], 2, "'nan'"),
])
def test_unreadable_times_name_the_row(tmp_path, values, row, shown):
    path = tmp_path / "t.csv"
    path.write_text("t,word\n" + "".join(f"{v},x\n" for v in values))
    message = one_line_error(f"file:path={path},key=word,time=t")
    assert f"row {row}: time {shown} is not a number of seconds or an ISO-8601 timestamp" in message


def test_missing_time_token_in_a_text_row(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("a 1\nb\n")
    assert "row 2: time None is not" in one_line_error(f"file:path={path},key=0,time=1")


# ---- the fast path against a plain Python parse --------------------------------------------------


def test_tab_separated_trace_takes_the_fast_path_and_matches_python(tmp_path, monkeypatch):
    times, keys = random_trace(np.random.default_rng(7), 5000)
    path = tmp_path / "trace.txt"
    path.write_text("".join(f"{t}\t{k}\n" for t, k in zip(times, keys)), encoding="utf-8")
    monkeypatch.setattr(columns, "_text_split", lambda *a: pytest.fail("took the slow path"))
    stream = parse(f"file:path={path},key=1,time=0")
    ids, labels, clock = reference_text(path, "1", "0")
    np.testing.assert_array_equal(stream.ids, ids)
    np.testing.assert_array_equal(stream.labels, labels)
    np.testing.assert_array_equal(stream.clock, clock)
    np.testing.assert_array_equal(stream.fps, Stream("x", ids, labels).fps)


SPACES = ["\t", " ", "  ", " \t ", "\u3000", "\xa0", "\x1f", "\u2003"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_any_whitespace_matches_python_split(tmp_path, seed):
    rng = np.random.default_rng(seed)
    times, keys = random_trace(rng, 3000)
    pick = lambda: SPACES[rng.integers(len(SPACES))]  # noqa: E731
    lines = [f"{pick() if rng.random() < 0.2 else ''}{t}{pick()}{k}{pick() + 'x' if rng.random() < 0.3 else ''}"
             f"{pick() if rng.random() < 0.2 else ''}" for t, k in zip(times, keys)]
    ends = ["\n", "\r\n", "\r", "\x0c", "\u2028", "\x85"]
    path = tmp_path / "trace.txt"
    path.write_bytes("".join(line + ends[rng.integers(len(ends))] for line in lines).encode("utf-8"))
    for key, time in [("1", "0"), ("line", None), ("0", None)]:
        stream = parse(f"file:path={path},key={key}" + (f",time={time}" if time else ""))
        ids, labels, clock = reference_text(path, key, time)
        np.testing.assert_array_equal(stream.ids, ids)
        np.testing.assert_array_equal(stream.labels, labels)
        if time:
            np.testing.assert_array_equal(stream.clock, clock)


@pytest.mark.parametrize("delimiter", ["\t", " "])
def test_single_delimiter_with_ragged_or_spaced_rows_still_matches_python(tmp_path, delimiter):
    path = tmp_path / "t.txt"
    d = delimiter
    path.write_text(f"1{d}a{d}x\n2{d}b\n3{d}c d{d}y\n4{d}{d}e\n5{d}f{d}\n")
    for key in ("0", "1"):
        ids, labels, _ = reference_text(path, key)
        stream = parse(f"file:path={path},key={key}")
        assert list(stream.labels[stream.ids]) == list(labels[ids])


def test_csv_matches_pandas_with_quotes_newlines_and_unicode(tmp_path):
    rng = np.random.default_rng(3)
    times, keys = random_trace(rng, 2000)
    keys = np.where(rng.random(len(keys)) < 0.1, "quoted, \"with\"\nnewline", keys)
    path = tmp_path / "t.csv"
    pd.DataFrame({"t": times, "word": keys, "other": rng.integers(0, 9, len(keys))}).to_csv(path, index=False)
    stream = parse(f"file:path={path},key=word,time=t")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    labels, ids = np.unique(frame["word"].to_numpy(dtype=object), return_inverse=True)
    np.testing.assert_array_equal(stream.ids, ids)
    np.testing.assert_array_equal(stream.labels, labels)
    np.testing.assert_array_equal(stream.clock, frame["t"].astype(float))


def test_python_whitespace_is_what_the_fast_path_rejects():
    chars = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000]
    python = {c for c in chars if len(f"a{c}b".split()) == 2}
    arrow = pc.match_substring_regex(pa.array(chars), columns._WHITESPACE).to_numpy(zero_copy_only=False)
    assert {c for c, hit in zip(chars, arrow) if hit} == python


# ---- text-format details ---------------------------------------------------------------------------


def test_text_line_breaks_bom_and_blank_lines(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("\ufeffa 1\r\nb 2\x0cc 3\n".encode())
    assert list(parse(f"file:path={path},key=0").labels) == ["a", "b", "c"]
    path.write_text("a\n\nb\n")
    assert "row 2 has an empty key in column '0'" in one_line_error(f"file:path={path},key=0")
    assert "row 2 has an empty key in column 'line'" in one_line_error(f"file:path={path},key=line")
    assert parse(f"file:path={path},key=line", messages=1).messages == 1


def test_text_missing_column_lists_the_columns(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("a\tb\nc\td\te\n")
    assert "has no column '3'; its columns: 0, 1, 2" in one_line_error(f"file:path={path},key=3")
    assert "has no column 'word'; its columns: 0, 1, 2" in one_line_error(f"file:path={path},key=word")
    assert "has no column '0'; its columns: line" in one_line_error(f"file:path={path},key=line,time=0")


def test_csv_rows_shorter_than_the_header_still_load(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("word,n\nx,1\ny\n")
    assert list(parse(f"file:path={path},key=word").labels) == ["x", "y"]
    path.write_text("n,word\n1,x\n2\n")
    assert "row 2 has an empty key" in one_line_error(f"file:path={path},key=word")


def test_parquet_non_string_keys_are_their_text(tmp_path):
    path = tmp_path / "t.parquet"
    pd.DataFrame({"k": [5, 12, 5, 3]}).to_parquet(path)
    stream = parse(f"file:path={path},key=k")
    assert list(stream.labels) == ["12", "3", "5"] and list(stream.ids) == [2, 0, 2, 1]
    from skewbench.hashing import fingerprint
    assert stream.fps[0] == fingerprint("5")


def test_truncation_ignores_bad_rows_beyond_it(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("1\ta\n2\tb\n1\t\n")
    assert parse(f"file:path={path},key=1,time=0", messages=2).messages == 2
    assert "row 3" in one_line_error(f"file:path={path},key=1,time=0")


@pytest.mark.parametrize("fmt,codec", [("csv", None), ("tsv", None), ("txt", None), ("parquet", None),
                                       ("csv", "gzip"), ("txt", "xz"), ("tsv", "zstd"), ("parquet", "bz2")])
def test_messages_reads_just_the_head_and_gives_the_same_rows(tmp_path, fmt, codec):
    times, keys = random_trace(np.random.default_rng(5), 4000)
    frame = pd.DataFrame({"t": times, "word": keys})
    path = tmp_path / f"t.{fmt}"
    if fmt == "parquet":
        frame.to_parquet(path, row_group_size=1000)
    elif fmt == "txt":
        path.write_text("".join(f"{t} {k}\n" for t, k in zip(times, keys)) + "bad line that is never reached\n")
    else:
        frame.to_csv(path, sep="\t" if fmt == "tsv" else ",", index=False)
    path = compress(path, codec) if codec else path
    columns = "key=1,time=0" if fmt == "txt" else "key=word,time=t"
    for n in (1, 999, 2500, 4000):
        head = parse(f"file:path={path},{columns}", messages=n)
        assert head.messages == n and list(head.labels[head.ids]) == list(keys[:n])
        np.testing.assert_array_equal(head.clock, times[:n])


@pytest.mark.parametrize("fmt", ["txt", "csv"])
def test_truncated_file_fails_in_one_line_when_reading_a_head_too(tmp_path, fmt):
    path = tmp_path / f"t.{fmt}"
    path.write_text("t,word\n" + "".join(f"{i},k{i % 7}\n" for i in range(50000)))
    packed = compress(path, "gzip")
    packed.write_bytes(packed.read_bytes()[:-100])
    for messages in (None, 10 ** 6):
        with pytest.raises(WorkloadError) as err:
            parse(f"file:path={packed},key=word", messages=messages)
        assert "\n" not in str(err.value) and "Compressed file ended" in str(err.value)


@pytest.mark.parametrize("codec", [None, "gzip"])
def test_head_read_ending_inside_a_character_is_fine(tmp_path, codec):
    line = "é" * 100 + "\n"
    prefix = next(p for p in range(4) if len(("a" * p + line * 2000).encode()[:1 << 16].decode(errors="ignore")
                                                 .encode()) != 1 << 16)
    path = tmp_path / "t.txt"
    path.write_text("a" * prefix + line * 2000, encoding="utf-8")
    path = compress(path, codec) if codec else path
    assert parse(f"file:path={path},key=line", messages=100).messages == 100
