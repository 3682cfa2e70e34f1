"""Fuzzing the broker path's edge (hypothesis) on the test cluster's Redis: whatever a topic holds — entries
lost, extra, re-numbered or deleted under the reader, fields missing, malformed, altered, huge or invalid
UTF-8, keys of the wrong type, empty streams, marks that are no numbers — the reader's side of
:mod:`skewbench.bench.broker` (``pages``, ``received``, ``passed``) gives back exactly the workload's messages
or raises one :class:`BrokerError` naming the stream; never another exception, never another answer.
(The Spark source reads through these three: tests/spark/broker_path.py.)"""
import functools
import itertools
import uuid

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skewbench.bench.apps.base import key_labels, make_app
from skewbench.bench.broker import (Broker, BrokerError, entry_id, forget, pages, passed, passed_key, publish,
                                    received, stream_key)
from skewbench.sources import source_of_each_message
from skewbench.workloads import parse

MESSAGES, S = 240, 3
APPS = ("wordcount", "selfjoin", "naivebayes")
RUN = uuid.uuid4().hex[:8]
TOPICS = itertools.count()
FIELDS = ("key", "fp", "t", "clock", "price", "doc", "label")


@pytest.fixture(scope="module")
def client(spark_cluster):
    client = Broker.of(spark_cluster).client()
    yield client
    forget(client, f"fuzz-{RUN}-*")


@functools.cache
def workload(app):
    return make_app(app).prepare(parse("zipf:z=1.2,keys=40", messages=MESSAGES, seed=0))


def new_topic() -> str:
    return f"fuzz-{RUN}-{next(TOPICS)}"


def published(client, app) -> str:
    """A new topic holding the whole stream of ``app``, as the producer writes it."""
    topic, stream, seqs = new_topic(), workload(app), np.arange(MESSAGES)
    source = source_of_each_message(stream, S, "shuffle")
    publish(client, topic, stream, make_app(app).payload_columns, seqs, source, seqs / 1e3, dict.fromkeys(range(S),
                                                                                                        MESSAGES))
    return topic


def expected(app, j, start, end):
    return start + np.flatnonzero(source_of_each_message(workload(app), S, "shuffle", start, end) == j)


def read(client, topic, app, j, start=0, end=MESSAGES, size=50):
    entries = [e for page in pages(client, topic, j, start, end, size) for e in page]
    return received(entries, workload(app), make_app(app).payload_columns, expected(app, j, start, end),
                    f"stream {stream_key(topic, j)}")


def assert_exact(got, app, seqs):
    """``got`` (what :func:`received` returned) is the workload's messages ``seqs``, field by field."""
    stream = workload(app)
    seq, key, fp, t_intended, clock, payload = got
    assert np.array_equal(seq, seqs)
    assert key.to_pylist() == key_labels(stream, stream.ids[seqs]).tolist()
    assert np.array_equal(fp, stream.fps.view(np.int64)[seqs]) and np.array_equal(clock, stream.clock[seqs])
    assert np.isfinite(t_intended).all() and len(t_intended) == len(seqs)
    assert payload.keys() == set(make_app(app).payload_columns)
    assert all(np.array_equal(v, stream.payload[c][seqs]) for c, v in payload.items())


def exact_or_refused(read_it, app, seqs, where) -> bool:
    """Reads; True when the answer was exact, False when refused with a BrokerError naming ``where``."""
    try:
        got = read_it()
    except BrokerError as error:
        assert str(error).startswith(where), error
        return False
    assert_exact(got, app, seqs)
    return True


@given(app=st.sampled_from(APPS), j=st.integers(0, S - 1), bounds=st.tuples(st.integers(0, MESSAGES),
                                                                             st.integers(0, MESSAGES)),
       size=st.integers(1, 60))
def test_any_range_reads_exactly_the_workloads_messages(client, app, j, bounds, size):
    start, end = min(bounds), max(bounds)  # start == end, and ranges without a message of j: empty
    topic = published(client, app)
    assert_exact(read(client, topic, app, j, start, end, size), app, expected(app, j, start, end))
    assert passed(client, topic, S) == MESSAGES
    forget(client, f"{topic}:*")


VALUES = st.one_of(st.binary(max_size=40), st.text(max_size=20).map(str.encode), st.just(b"\xff\xfe" * 3),
                   st.just(b"k" * 1_000_000), st.floats().map(lambda x: repr(x).encode()),
                   st.integers(-2**70, 2**70).map(lambda n: str(n).encode()), st.just(b""), st.just(b" 7 "))
HARMS = st.one_of(
    st.tuples(st.just("lose"), st.integers(0, 79)),
    st.tuples(st.just("extra"), st.integers(0, MESSAGES - 1)),
    st.tuples(st.just("renumber"), st.integers(0, 79), st.integers(1, 3)),
    st.tuples(st.just("drop field"), st.integers(0, 79), st.sampled_from(FIELDS)),
    st.tuples(st.just("set field"), st.integers(0, 79), st.sampled_from((*FIELDS, "other")), VALUES),
    st.tuples(st.just("not a stream"), VALUES),
    st.tuples(st.just("no stream")))


def corrupted(client, app, harm) -> str:
    """A new topic whose stream 0 is the producer's with ``harm`` done to it."""
    clean, topic = published(client, app), new_topic()
    entries = [(i.decode(), dict(f)) for i, f in client.xrange(stream_key(clean, 0))]
    kind, at = harm[0], harm[1] if len(harm) > 1 else 0
    if kind == "lose":
        del entries[at % len(entries)]
    elif kind == "extra" and at % S:  # another source's message in stream 0
        entries.append((entry_id(at), dict(client.xrange(stream_key(clean, at % S), entry_id(at), entry_id(at))[0][1])))
    elif kind == "renumber":
        i, f = entries.pop(at % len(entries))
        entries.append((f"{harm[2]}-{i.split('-')[1]}", f))
    elif kind == "drop field":
        entries[at % len(entries)][1].pop(harm[2].encode(), None)
    elif kind == "set field":
        entries[at % len(entries)][1][harm[2].encode()] = harm[3]
    entries.sort(key=lambda e: tuple(map(int, e[0].split("-"))))
    if kind == "not a stream":
        client.set(stream_key(topic, 0), harm[1])
    elif kind != "no stream":
        pipe = client.pipeline(transaction=True)
        for i, f in entries:
            pipe.xadd(stream_key(topic, 0), f or {"nothing": ""}, id=i)
        pipe.execute()
    forget(client, f"{clean}:*")
    return topic


@given(app=st.sampled_from(APPS), harm=HARMS)
def test_a_damaged_stream_reads_exactly_or_is_refused_with_where(client, app, harm):
    topic = corrupted(client, app, harm)
    exact = exact_or_refused(lambda: read(client, topic, app, 0), app, expected(app, 0, 0, MESSAGES),
                             f"stream {stream_key(topic, 0)}")
    verdict = refused_when(app, harm)
    assert verdict is None or exact != verdict, harm
    forget(client, f"{topic}:*")


def refused_when(app, harm) -> bool | None:
    """Whether ``harm`` changes what stream 0 says (None: it depends on how the new value reads — a number may
    be written another way)."""
    kind = harm[0]
    if kind == "extra":
        return harm[1] % S != 0  # a message of stream 0 already there: the broker refused it, nothing changed
    if kind in ("drop field", "set field") and harm[2] not in workload_fields(app):
        return False  # a field the reader does not read
    return None if kind == "set field" else True


def workload_fields(app):
    return ("key", "fp", "t", "clock", *make_app(app).payload_columns)


@given(app=st.sampled_from(APPS), size=st.integers(1, 30), first=st.integers(1, 5), cut=st.integers(0, MESSAGES),
       trim=st.booleans())
def test_entries_deleted_under_the_reader_are_refused_unless_already_read(client, app, size, first, cut, trim):
    """The reader takes ``first`` pages; then entries go (those from message ``cut`` on, or — ``trim`` — those
    below it, as a commit of another reader would); then it reads on."""
    topic = published(client, app)
    key, reading = stream_key(topic, 0), pages(client, topic, 0, 0, MESSAGES, size)
    entries = [e for _, page in zip(range(first), reading) for e in page]
    last_read = int(entries[-1][0].decode().split("-")[1]) - 1 if entries else -1
    if trim:
        client.xtrim(key, minid=entry_id(cut), approximate=False)
        gone = [s for s in expected(app, 0, 0, cut) if s > last_read]
    else:
        gone = [s for s in expected(app, 0, cut, MESSAGES) if s > last_read]
        if gone:
            client.xdel(key, *map(entry_id, gone))
    entries += [e for page in reading for e in page]
    exact = exact_or_refused(lambda: received(entries, workload(app), make_app(app).payload_columns,
                                              expected(app, 0, 0, MESSAGES), f"stream {key}"),
                             app, expected(app, 0, 0, MESSAGES), f"stream {key}")
    assert exact == (not gone), (last_read, gone[:3])
    forget(client, f"{topic}:*")


@given(marks=st.lists(st.one_of(st.none(), VALUES), min_size=S, max_size=S))
def test_marks_are_message_counts_or_a_clear_error(client, marks):
    topic = new_topic()
    for j, mark in enumerate(marks):
        if mark is not None:
            client.set(passed_key(topic, j), mark)
    try:
        got = passed(client, topic, S)
    except BrokerError as error:
        assert f"topic {topic!r}" in str(error)
    else:
        assert got == min(int(m or 0) for m in marks)
    forget(client, f"{topic}:*")
