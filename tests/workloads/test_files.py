"""User files: every format loads, and every kind of bad file fails with one clear message."""

import gzip

import numpy as np
import pandas as pd
import pytest

from skewbench.workloads import WorkloadError, parse


@pytest.fixture
def words(tmp_path):
    frame = pd.DataFrame({"t": [0.0, 0.5, 1.0, 1.0, 2.5], "word": ["a", "b", "a", "c", "a"]})
    return tmp_path, frame


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet"])
def test_table_formats_load_with_key_and_time(words, fmt):
    folder, frame = words
    path = folder / f"w.{fmt}"
    if fmt == "parquet":
        frame.to_parquet(path)
    else:
        frame.to_csv(path, sep="," if fmt == "csv" else "\t", index=False)
    stream = parse(f"file:path={path},key=word,time=t")
    assert list(stream.labels[stream.ids]) == ["a", "b", "a", "c", "a"]
    np.testing.assert_array_equal(stream.clock, frame.t)
    assert stream.p1 == pytest.approx(0.6) and stream.name.startswith("file:")


def test_plain_text_by_column_or_line_and_truncated(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("u1 GET /a\nu2 GET /b\nu1 POST /a\n")
    assert list(parse(f"file:path={path},key=2").labels) == ["/a", "/b"]
    by_line = parse(f"file:path={path},key=line", messages=2)
    assert by_line.messages == 2 and by_line.distinct_keys == 2


def test_same_key_same_fingerprint_as_generated_words(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("word\nthe\nof\n")
    from skewbench.hashing import fingerprint
    assert parse(f"file:path={path},key=word").fps[0] == fingerprint("the")


@pytest.mark.parametrize("content,spec,message", [
    (None, "key=word", "no such file"),
    ("word\nx\n", "key=wrd", "has no column 'wrd'; its columns: word"),
    ("word\nx\n\ny\n", "key=word", ""),  # blank lines are skipped by the CSV reader, fine
    ("word,n\nx,1\n,2\n", "key=word", "row 2 has an empty key"),
    ("word,t\nx,1\ny,0\n", "key=word,time=t", "row 2: time goes backwards; sort the file by time"),
    ("word,t\nx,1\ny,soon\n", "key=word,time=t", "row 2: time 'soon' is not a number"),
    ("word\n", "key=word", "has no rows"),
    ("word\nx\n", "key=word,format=xls", "unknown format 'xls'"),
])
def test_bad_files_fail_clearly(tmp_path, content, spec, message):
    path = tmp_path / "bad.csv"
    if content is not None:
        path.write_text(content)
    if not message:
        assert parse(f"file:path={path},{spec}").messages == 2
        return
    with pytest.raises(WorkloadError) as err:
        parse(f"file:path={path},{spec}")
    assert message in str(err.value)


def test_missing_path_says_how_to_give_one():
    with pytest.raises(WorkloadError, match="give path=FILE"):
        parse("file:key=word")


def _hour(path, lines):
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join(lines) + "\n")


def test_pageviews_expand_counts_in_time_order(tmp_path):
    _hour(tmp_path / "pagecounts-20080101-000000.gz", ["en Main_Page 5 100", "de Berlin 2 10"])
    _hour(tmp_path / "pagecounts-20080101-010000.gz", ["en Main_Page 1 100"])
    stream = parse(f"pageviews:path={tmp_path}/pagecounts-*.gz", seed=1)
    assert stream.messages == 8 and set(stream.labels) == {"en/Main_Page", "de/Berlin"}
    assert stream.p1 == pytest.approx(6 / 8)
    assert (np.diff(stream.clock) >= 0).all() and stream.clock[-1] >= 3600


def test_pageviews_malformed_line_is_named_or_skipped_on_request(tmp_path, capsys):
    _hour(tmp_path / "h.gz", ["en Main_Page 5 100", "en broken", "en X 1 1"])
    with pytest.raises(WorkloadError, match="h.gz line 2: expected 'project page count bytes'.*skip_bad=1"):
        parse(f"pageviews:path={tmp_path}/h.gz")
    assert parse(f"pageviews:path={tmp_path}/h.gz,skip_bad=1").messages == 6
    assert "skipped 1 malformed line" in capsys.readouterr().out


def test_pageviews_without_files_fails(tmp_path):
    with pytest.raises(WorkloadError, match="no file matches"):
        parse(f"pageviews:path={tmp_path}/none-*.gz")
