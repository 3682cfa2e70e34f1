"""The "skewbench" PySpark streaming data source: a workload stream offered open loop by S sources,
each routing its messages with its scheme (:mod:`~skewbench.bench.spark.routing`).

Options (strings, as Spark passes them): ``workload`` (SPEC), ``messages``, ``seed``, ``sources`` (S),
``split`` (``shuffle`` | ``key``, as :func:`skewbench.sources.source_of_each_message`),
``rate`` (messages/s offered; 0 = everything at once), ``max_rows_per_trigger`` (0 = no limit),
``app``, ``scheme`` and ``workers`` (W); ``closers`` (C, default 0): source 0 adds an empty bundle for
each of the worker ids W .. W + C - 1 to every batch, the closing groups of the ``defer-sleep`` lever
(:func:`~skewbench.bench.spark.workers.close`); ``stream_file``: the name under which the driver shared the
stream with the executors (:func:`stream_of`); ``versions``: live routing's folder
(:mod:`~skewbench.bench.spark.live`) — the offsets then also carry the batch's index and routing version,
every source routes with that version, and source 0 adds the workers' control bundles; ``loads``: load
feedback's folder (:mod:`~skewbench.bench.spark.feedback`); ``lose`` and ``duplicate``: the messages the source
faults strike (comma-separated seqs, :mod:`~skewbench.bench.spark.faults`) — a lost message's copies are
dropped after routing, a duplicated one is sent again in the next micro-batch, whose offset names it
(``again``), so that a replay sends it again too.  With either of ``versions`` and ``loads``, the micro-batches are
``max_rows_per_trigger`` messages each, also at an open-loop ``rate`` (a batch waits for its last message):
routing then depends on where batches end, and so they end at the same messages in every run and in the
simulator.

Offsets are ``{"offset": n, "t0": start, "at": offered}`` over the global message index ``n``:
``t0`` is the query start (fixed by the first offset), ``at`` the time :meth:`latestOffset` made the
batch available.  A message's intended arrival time is ``t0 + seq / rate``; :meth:`latestOffset` never
offers a message before that time, so a stalled pipeline builds a backlog instead of slowing the
input (open loop, no coordinated omission).  With ``rate = 0`` every message is available at once and
its intended time is the ``at`` of the batch that first offered it.  Partition *j* reads source *j*'s
messages with ``start <= seq < end``; the stream is the one the driver shared (memory-mapped
files, :mod:`~skewbench.bench.spark.shared`) or else regenerated deterministically from (workload,
messages, seed), so a replay from the offsets in the checkpoint reads — and routes — exactly the
same rows.

What Spark moves is one *bundle* per (source, worker) and micro-batch (:data:`BUNDLE_SCHEMA`): the
copies of that source's messages for that worker (:meth:`App.fan_out`), as an Arrow IPC stream of
rows ``seq`` (int64), ``key`` (string: the key's label), ``fp`` (int64: the uint64 fingerprint
viewed as int64), ``t_intended`` (double, epoch seconds), the app's payload columns and ``role``
(``store`` | ``probe`` | ``flush``, dictionary-encoded); :func:`unbundle` turns bundles into the rows
an app sees (:func:`~skewbench.bench.apps.base.copy_rows`).  After the last message source 0 adds
one ``flush`` row per worker (``seq`` = messages), which makes every worker emit its final state.

Spark still shuffles every bundle to its worker's partition and the worker stage reads every
message; what bundling saves is Spark's per-row cost (row conversion, shuffle records, JVM↔Python
transfer): on 2 cores a batch of 100,000 messages took 1.7 s instead of 2.5 s at W = 2 and 2.8 s
instead of 3.6 s at W = 9.  The source builds the bundles from the stream's columns directly, in
worker order, with no per-message Python object and no pandas frame of the copies: at W = 100 its
read of 3M messages was the one task every batch waited for.

:meth:`SkewbenchStreamReader.messages` is where a source's messages come from; the "skewbench-broker" source
(:mod:`~skewbench.bench.spark.broker_source`) reads them from the cluster's broker instead, and the rest is
this module's.

Spark plans each streaming query's batches (``initialOffset``, ``latestOffset``, ``partitions``) in a
Python process of its own, started afresh per query: this module imports at the top only what planning
needs, which that process has already loaded, and what ``read`` needs (pandas, the apps, the routers)
where it is used — importing them cost each run 0.5 s before its first batch.
"""

from __future__ import annotations

import time
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

if TYPE_CHECKING:
    import pandas as pd

#: What Spark sees: one row per (source, worker) and micro-batch, the message copies inside as Arrow IPC.
BUNDLE_SCHEMA = "worker int, source int, bundle binary"
BUNDLE_ARROW = pa.schema([("worker", pa.int32()), ("source", pa.int32()), ("bundle", pa.binary())])
#: A copy's role, as the codes of the dictionary-encoded ``role`` column.
ROLES = ("store", "probe", "flush")  # not an Arrow array here: building one imports pandas
STORE, PROBE, FLUSH = range(3)


@lru_cache(maxsize=1)  # one run at a time: an old run's stream would only take memory
def stream_of(workload: str, messages: int, seed: int, shared: str = ""):
    """The workload's stream, once per process: mapped from the files the driver shared with every
    executor (``shared``, :mod:`~skewbench.bench.spark.shared`: a source task may land on any Python
    worker, where generating a stream of millions of messages costs seconds per batch), else generated."""
    if shared:
        from skewbench.bench.spark.shared import fetched

        return fetched(shared)
    from skewbench.workloads import parse

    return parse(workload, messages=messages, seed=seed)


@lru_cache(maxsize=1)
def labels_of(stream) -> pa.StringArray:
    """Each key's label as the ``key`` column carries it, indexed by key id (:func:`key_labels`)."""
    from skewbench.bench.apps.base import key_labels

    if isinstance(stream.labels, pa.Array):  # a shared stream: already the text, mapped
        return stream.labels
    return pa.array(key_labels(stream), pa.string())


def message_schema(stream, payload: tuple[str, ...]) -> pa.Schema:
    """The columns of a bundle's rows (module docstring); ``ValueError`` for a missing payload column."""
    missing = [c for c in payload if c not in stream.payload]
    if missing:
        raise ValueError(f"workload {stream.name!r} has no payload column(s) {', '.join(missing)}")
    return pa.schema([("seq", pa.int64()), ("key", pa.string()), ("fp", pa.int64()), ("t_intended", pa.float64()),
                      *[(c, pa.from_numpy_dtype(stream.payload[c].dtype)) for c in payload],
                      ("role", pa.dictionary(pa.int8(), pa.string()))])


class Messages(NamedTuple):
    """One source's messages of a micro-batch (or copies of them), in ``seq`` order: what it routes."""

    seq: np.ndarray  # int64
    key: pa.StringArray  # the key's label
    fp: np.ndarray  # int64: the uint64 fingerprint viewed as int64
    t_intended: np.ndarray  # float64, epoch seconds
    clock: np.ndarray  # the stream clock, which time-aware schemes route by
    payload: dict  # the app's payload columns

    def take(self, rows: np.ndarray) -> Messages:
        return Messages(self.seq[rows], self.key.take(rows), self.fp[rows], self.t_intended[rows], self.clock[rows],
                        {c: v[rows] for c, v in self.payload.items()})

    def then(self, more: Messages) -> Messages:
        return Messages(np.r_[self.seq, more.seq], pa.concat_arrays([self.key, more.key]), np.r_[self.fp, more.fp],
                        np.r_[self.t_intended, more.t_intended], np.r_[self.clock, more.clock],
                        {c: np.r_[v, more.payload[c]] for c, v in self.payload.items()})


class SourcePartition(InputPartition):
    """Source ``source``'s messages with ``start <= seq < end``; ``t0``/``at`` fix intended times.  With
    live routing, ``batch`` is the micro-batch's index and ``version`` the routing version it routes with,
    ``since`` that version's first message, ``first`` whether the batch is that version's first, ``announced``
    the version announced for the next batch when the hand-over is ahead (:mod:`~skewbench.bench.spark.live`);
    ``again``: messages of earlier batches the source sends again (the ``duplicate`` fault)."""

    def __init__(self, source: int, start: int, end: int, t0: float, at: float, batch: int = 0, version: int = 0,
                 first: bool = False, announced: int | None = None, since: int = 0, again: tuple[int, ...] = ()):
        self.source, self.start, self.end, self.t0, self.at = source, start, end, t0, at
        self.batch, self.version, self.first, self.announced = batch, version, first, announced
        self.since = since
        self.again = again  # the duplicate fault's messages of earlier batches, sent again with this one


class Options:
    """The data source's options, parsed once."""

    def __init__(self, options: dict):
        self.workload = options["workload"]
        self.messages = int(options["messages"])
        self.seed = int(options.get("seed", 0))
        self.sources = int(options.get("sources", 1))
        self.split = options.get("split", "shuffle")
        self.rate = float(options.get("rate", 0))
        self.max_rows = int(options.get("max_rows_per_trigger", 0))
        self.app_name = options["app"]
        self.scheme = options["scheme"]
        self.workers = int(options["workers"])
        self.closers = int(options.get("closers", 0))
        self.stream_file = options.get("stream_file", "")
        self.routers = options.get("routers", "")  # the folder where every executor keeps the routers
        self.versions = options.get("versions", "")  # live routing: the folder of the routing versions
        self.params = options.get("params", "")  # the scheme's parameters ("theta=0.02,...")
        self.loads = options.get("loads", "")  # load feedback: the folder of the true loads per batch
        self.lose = _seqs(options.get("lose", ""))  # the source faults' messages (bench.spark.faults)
        self.duplicate = _seqs(options.get("duplicate", ""))

    @cached_property
    def app(self):
        from skewbench.bench.apps import make_app

        return make_app(self.app_name)

    @property
    def payload(self) -> tuple[str, ...]:
        return self.app.payload_columns

    @property
    def run(self) -> tuple:
        from skewbench.bench.spark import routing

        return routing.run_of(self.scheme, self.workers, self.sources, self.seed, self.workload, self.messages,
                              self.split, self.params)

    def stream(self):
        return self.app.prepare(stream_of(self.workload, self.messages, self.seed, self.stream_file))


class SkewbenchStreamReader(DataSourceStreamReader):
    def __init__(self, options: Options):
        self.o = options

    def initialOffset(self) -> dict:
        now = time.time()
        versions = {"batch": 0, "version": 0, "since": 0} if self.o.versions else {}
        return {"offset": 0, "t0": now, "at": now, **versions,
                **({"batch": 0} if self.o.loads else {})}

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.o.max_rows) if self.o.max_rows > 0 else ReadAllAvailable()

    def available(self, t0: float, now: float) -> int:
        """Messages whose intended arrival time has come (all of them when rate = 0)."""
        if self.o.rate <= 0:
            return self.o.messages
        return min(self.o.messages, int(np.floor((now - t0) * self.o.rate)) + 1)

    def wait_until_available(self, messages: int, t0: float) -> None:
        """Return once the first ``messages`` messages are available."""
        time.sleep(max(0.0, t0 + (messages - 1) / self.o.rate - time.time()))

    def latestOffset(self, start: dict, limit) -> dict:
        now = time.time()
        end = self.available(start["t0"], now)
        if isinstance(limit, ReadMaxRows):
            full = min(self.o.messages, start["offset"] + limit.max_rows)
            if (self.o.versions or self.o.loads) and end < full:  # only whole batches (module docstring)
                if start["offset"] > 0:
                    return start
                # Nothing is committed yet, so Spark would run batch 0 on the initial offset, empty, and the
                # offsets' batch indices would trail Spark's by one: the first batch waits for its last message.
                self.wait_until_available(full, start["t0"])
                now, end = time.time(), full
            end = min(end, full)
        if end <= start["offset"]:
            return start
        offset = {"offset": end, "t0": start["t0"], "at": now}
        if self.o.versions:  # the batch's routing version (and one announced), logged by Spark before the batch runs
            from skewbench.bench.spark import live

            version = live.latest(self.o.versions)
            since = start.get("since", 0) if version == start.get("version", 0) else start["offset"]
            offset |= {"batch": start["batch"] + 1, "version": version, "since": since,
                       "announced": live.announced(self.o.versions)}
        elif self.o.loads:  # the batch's index: which loads its sources sync to
            offset |= {"batch": start["batch"] + 1}
        return offset | self._duplicates(start)

    def _duplicates(self, start: dict) -> dict:
        """The duplicate fault in the next offset: ``again``, the messages of earlier batches it sends again
        (each once, in the first batch after its own), and ``duplicated``, those sent again so far."""
        if not self.o.duplicate:
            return {}
        done = start.get("duplicated", [])
        again = [d for d in self.o.duplicate if d < start["offset"] and d not in done]
        return {"duplicated": done + again, "again": again}

    def partitions(self, start: dict, end: dict):
        if end["offset"] <= start["offset"]:
            return []
        batch, version = end.get("batch", 1) - 1, end.get("version", 0)
        first = version != start.get("version", 0)
        return [SourcePartition(j, start["offset"], end["offset"], end["t0"], end["at"], batch, version, first,
                                end.get("announced"), end.get("since", 0), tuple(end.get("again", ())))
                for j in range(self.o.sources)]

    def _router(self, partition: SourcePartition, stream) -> tuple:
        """The router of ``partition``'s source, and the run it is kept under (None: nothing to keep).  Live
        routing: the version's own when it sends a key to one worker, the same on every source; else the
        source's own estimates, carried from the version's first message (as the simulator does).  With
        load feedback, set to the workers' true loads before the batch."""
        from skewbench.bench.spark import feedback, live, routing
        from skewbench.migration import moves_state
        from skewbench.sources import source_routers

        o = self.o
        run, since, initial = o.run, 0, None
        if o.versions:
            version = live.version(o.versions, partition.version)
            if moves_state(version.router):
                return version.router, None
            run, since = (*o.run, partition.version), partition.since
            initial = lambda: source_routers(version.router, o.sources, distributed=True)[partition.source]  # noqa: E731
        router = routing.router_at(run, partition.source, partition.start, stream, o.routers, since, initial)
        if o.loads and partition.batch > 0:
            router.sync(feedback.loads_before(o.loads, partition.batch))
        return router, run

    def messages(self, partition: SourcePartition, stream) -> Messages:
        """Source ``partition.source``'s messages with ``start <= seq < end``, from the stream itself."""
        from skewbench.sources import source_of_each_message

        o = self.o
        src = source_of_each_message(stream, o.sources, o.split, partition.start, partition.end)
        seq = partition.start + np.flatnonzero(src == partition.source)
        t_intended = partition.t0 + seq / o.rate if o.rate > 0 else np.full(len(seq), partition.at)
        return Messages(seq, labels_of(stream).take(stream.ids[seq]), stream.fps.view(np.int64)[seq], t_intended,
                        stream.clock[seq], {c: stream.payload[c][seq] for c in o.payload})

    def flush_time(self, partition: SourcePartition) -> float:
        """The intended time of the flush rows that follow the last message."""
        return partition.t0 + self.o.messages / self.o.rate if self.o.rate > 0 else partition.at

    def read(self, partition: SourcePartition):
        import pandas as pd

        from skewbench.bench.spark import live, routing

        o = self.o
        stream = o.stream()
        m = self.messages(partition, stream)
        for seq in partition.again:  # the duplicate fault: its message again, before this batch's (seq order)
            m = SkewbenchStreamReader.messages(self, SourcePartition(partition.source, seq, seq + 1, partition.t0,
                                                                     partition.at), stream).then(m)
        batch = pd.DataFrame({"seq": m.seq, "fp": m.fp, **m.payload})
        router, run = self._router(partition, stream)
        sent = routing.route_batch(router, o.app, batch, m.clock)
        if run is not None:
            routing.keep(run, partition.source, partition.end, router, o.routers)
        if o.lose:  # the lose fault: its message's copies dropped on their way to the workers
            kept = ~np.isin(m.seq[sent.row], o.lose)
            sent = type(sent)(*(part[kept] for part in sent))
        copies = m.take(sent.row)
        worker, role = sent.worker, np.where(sent.store, STORE, PROBE).astype(np.int8)
        if partition.end == o.messages and partition.source == 0:  # a flush copy of message 0 for every worker
            copies = copies.then(self.flush_rows(stream, partition))
            worker = np.r_[worker, np.arange(o.workers, dtype=np.int32)]
            role = np.r_[role, np.full(o.workers, FLUSH, np.int8)]
        order = np.argsort(worker, kind="stable")  # by worker; seq order within each
        copies = copies.take(order)
        roles = pa.DictionaryArray.from_arrays(role[order], pa.array(ROLES))
        columns = [copies.seq, copies.key, copies.fp, copies.t_intended, *(copies.payload[c] for c in o.payload), roles]
        rows = pa.Table.from_arrays(columns, schema=message_schema(stream, o.payload))
        yield bundles(rows, worker[order], partition.source)
        if partition.source == 0 and o.versions:
            control = live.control_bundles(o.versions, partition.batch, partition.version if partition.first else None,
                                           o.workers, partition.announced)
            if control is not None:
                yield control
        if partition.source == 0 and o.closers:
            yield closing_bundles(o.workers, o.closers)

    def flush_rows(self, stream, partition: SourcePartition) -> Messages:
        """The flush rows: one copy of the stream's message 0 per worker, ``seq`` = messages."""
        o, zero = self.o, np.zeros(self.o.workers, np.int64)
        return Messages(np.full(o.workers, o.messages, np.int64), labels_of(stream).take(stream.ids[zero]),
                        stream.fps.view(np.int64)[zero], np.full(o.workers, self.flush_time(partition)),
                        stream.clock[zero], {c: stream.payload[c][zero] for c in o.payload})


def _seqs(text: str) -> tuple[int, ...]:
    """Comma-separated message seqs ("" for none)."""
    return tuple(int(part) for part in text.split(",") if part)


def bundles(rows: pa.Table, worker: np.ndarray, source: int) -> pa.RecordBatch:
    """One row per worker that gets copies from ``source``: its rows (``rows`` sorted by ``worker``)
    as an Arrow IPC stream (:data:`BUNDLE_SCHEMA`), all written into one buffer."""
    starts = np.flatnonzero(np.r_[True, worker[1:] != worker[:-1]]) if len(worker) else np.empty(0, np.int64)
    sink, offsets = pa.BufferOutputStream(), [0]
    for start, end in zip(starts, np.r_[starts[1:], len(worker)]):
        with pa.ipc.new_stream(sink, rows.schema) as writer:
            writer.write_table(rows.slice(start, end - start))
        offsets.append(sink.tell())
    blobs = pa.Array.from_buffers(pa.binary(), len(starts), [None, pa.py_buffer(np.array(offsets, np.int32)),
                                                              sink.getvalue()])
    return pa.RecordBatch.from_arrays([pa.array(worker[starts], pa.int32()),
                                       pa.array(np.full(len(starts), source), pa.int32()), blobs],
                                      schema=BUNDLE_ARROW)


def closing_bundles(workers: int, closers: int) -> pa.RecordBatch:
    """One empty bundle for each closing group (worker ids ``workers`` .. ``workers + closers - 1``)."""
    return pa.RecordBatch.from_arrays([pa.array(np.arange(workers, workers + closers), pa.int32()),
                                       pa.array(np.zeros(closers), pa.int32()), pa.array([b""] * closers, pa.binary())],
                                      schema=BUNDLE_ARROW)


def no_rows() -> pd.DataFrame:
    """The rows of a worker that got only a control bundle: none, with the columns every app reads."""
    import pandas as pd

    return pd.DataFrame({"seq": np.empty(0, np.int64), "source": np.empty(0, np.int32), "key": np.empty(0, object),
                         "fp": np.empty(0, np.int64), "t_intended": np.empty(0), "worker": np.empty(0, np.int32),
                         "role": np.empty(0, object)})


def unbundle(bundles: pd.DataFrame) -> pd.DataFrame:
    """The rows an app sees (:func:`~skewbench.bench.apps.base.copy_rows`) for some bundles of one
    worker (:func:`bundles`; ``bundles`` has the ``worker``, ``source`` and ``bundle`` columns)."""
    tables = [pa.ipc.open_stream(blob).read_all() for blob in bundles["bundle"]]
    rows = pa.concat_tables(tables).to_pandas()
    rows.insert(1, "source", np.repeat(bundles["source"].to_numpy(np.int32), [t.num_rows for t in tables]))
    rows.insert(len(rows.columns) - 1, "worker", np.int32(bundles["worker"].iloc[0]))
    return rows


class SkewbenchDataSource(DataSource):
    """``spark.readStream.format("skewbench").options(...)``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "skewbench"

    def schema(self) -> str:
        o = Options(self.options)
        sample = o.app.prepare(stream_of(o.workload, min(o.messages, 1000), o.seed))
        message_schema(sample, o.payload)  # checks the payload
        return BUNDLE_SCHEMA

    def streamReader(self, schema) -> SkewbenchStreamReader:
        return SkewbenchStreamReader(Options(self.options))
