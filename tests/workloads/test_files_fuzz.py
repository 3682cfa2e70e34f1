"""Fuzzing the file loaders (hypothesis): whatever bytes a user's file holds, ``file:`` and ``pageviews:`` load a
stream that says what the file says, or fail with one WorkloadError — never another exception."""
import csv
import gzip

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skewbench.workloads import WorkloadError, parse

SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".csv.gz", ".gz", ".zst", ".bz2")
SPECS = ("key=word", "key=0", "key=1", "key=line", "key=word,time=t", "key=0,time=1")
TEMP = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # one file per example, overwritten


def loads_or_refuses(spec: str):
    """The stream ``spec`` names, or None when it was refused with a WorkloadError."""
    try:
        stream = parse(spec)
    except WorkloadError as error:
        assert str(error) and "\n" not in str(error).strip(), error
        return None
    assert stream.messages >= 1 and len(stream.ids) == stream.messages
    assert stream.ids.min() >= 0 and stream.ids.max() < len(stream.labels)
    assert np.all(np.diff(stream.clock) >= 0)
    return stream


@TEMP
@given(content=st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)),
       suffix=st.sampled_from(SUFFIXES), spec=st.sampled_from(SPECS))
def test_any_bytes_load_or_are_refused_clearly(tmp_path, content, suffix, spec):
    path = tmp_path / f"trace{suffix}"
    path.write_bytes(content)
    loads_or_refuses(f"file:path={path},{spec}")


ROWS = st.lists(st.tuples(st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12),
                          st.floats(0, 1e6, allow_nan=False)), min_size=1, max_size=40)


@TEMP
@given(rows=ROWS, gz=st.booleans())
def test_a_valid_csv_loads_exactly_its_keys_and_times(tmp_path, rows, gz):
    """Keys of any text (quotes, commas, newlines, blanks, "NA", non-ASCII) and sorted times come back as written."""
    rows = sorted(rows, key=lambda r: r[1])
    path = tmp_path / ("trace.csv.gz" if gz else "trace.csv")
    with (gzip.open(path, "wt", newline="") if gz else open(path, "w", newline="")) as handle:
        writer = csv.writer(handle)
        writer.writerow(["word", "t"])
        writer.writerows((k, repr(t)) for k, t in rows)
    stream = parse(f"file:path={path},key=word,time=t")
    assert list(np.asarray(stream.labels)[stream.ids]) == [k for k, _ in rows]
    assert np.array_equal(stream.clock, [t for _, t in rows])


# Any text a file can hold: no surrogates (Cs), which no UTF-8 file encodes (naming categories drops
# hypothesis's default exclusion of them).
FIELD = st.text(st.characters(exclude_categories=("Zs", "Cc", "Zl", "Zp", "Cs")), min_size=1, max_size=10)
LINES = st.lists(st.one_of(
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\r\n"), max_size=40),
    st.tuples(FIELD, FIELD, st.one_of(st.integers(0, 30).map(str), st.sampled_from(("²", "٣", "-1", "1.5"))),
              FIELD).map(" ".join)), max_size=20)


def views_in(line: str) -> int | None:
    """The views a well-formed line counts ("project page count bytes", count in ASCII digits), else None."""
    fields = line.split()
    ok = len(fields) == 4 and fields[2].isascii() and fields[2].isdigit()
    return int(fields[2]) if ok else None


@TEMP
@given(lines=LINES, skip_bad=st.booleans())
def test_pageview_lines_load_exactly_or_are_refused_with_the_line(tmp_path, lines, skip_bad):
    path = tmp_path / "pageviews-20080101-000000.gz"
    text = "\n".join(lines)
    path.write_bytes(gzip.compress(text.encode()))
    views = [views_in(line) for line in text.removesuffix("\n").split("\n") if text]  # the file's lines
    bad = [n for n, v in enumerate(views, 1) if v is None]
    try:
        stream = parse(f"pageviews:path={path}{',skip_bad=1' if skip_bad else ''}")
    except WorkloadError as error:
        if bad and not skip_bad:
            assert f"line {bad[0]}: expected 'project page count bytes'" in str(error)
        else:
            assert "hold no page views" in str(error) and not sum(v or 0 for v in views)
    else:
        assert (skip_bad or not bad) and stream.messages == sum(v or 0 for v in views) > 0
