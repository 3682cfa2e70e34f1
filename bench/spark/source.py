"""The "skewbench" PySpark streaming data source: a workload stream offered open loop by S sources,
each routing its messages with its scheme (:mod:`~skewbench.bench.spark.routing`).

Options (strings, as Spark passes them): ``workload`` (SPEC), ``messages``, ``seed``, ``sources`` (S),
``split`` (``shuffle`` | ``key``, as :func:`skewbench.simulator.engine.source_of_each_message`),
``rate`` (messages/s offered; 0 = everything at once), ``max_rows_per_trigger`` (0 = no limit),
``app``, ``scheme`` and ``workers`` (W); ``stream_file``: the name under which the driver shared the
stream with the executors (:func:`stream_of`).

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

Message rows: one per message copy (:meth:`App.fan_out`): ``seq`` (bigint), ``source`` (int), ``key``
(string: the key's label), ``fp`` (bigint: the uint64 fingerprint viewed as int64), ``t_intended``
(double, epoch seconds), the app's payload columns, ``worker`` (int) and ``role`` (``store`` |
``probe``).  After the last message source 0 adds one ``flush`` row per worker (``seq`` = messages),
which makes every worker emit its final state.

What Spark moves is one *bundle* per (source, worker) and micro-batch (:data:`BUNDLE_SCHEMA`): that
worker's message rows from that source as an Arrow IPC stream.  Spark still shuffles every bundle to
its worker's partition and the worker stage reads every message; what bundling saves is Spark's
per-row cost (row conversion, shuffle records, JVM↔Python transfer): on 2 cores a batch of 100,000
messages took 1.7 s instead of 2.5 s at W = 2 and 2.8 s instead of 3.6 s at W = 9.
"""

from __future__ import annotations

import time
from functools import lru_cache

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from skewbench.bench.apps import make_app
from skewbench.bench.apps.base import key_labels
from skewbench.bench.spark import routing
from skewbench.simulator.engine import source_of_each_message

BASE_COLUMNS = [("seq", "bigint"), ("source", "int"), ("key", "string"), ("fp", "bigint"), ("t_intended", "double")]
ROUTE_COLUMNS = [("worker", "int"), ("role", "string")]
ARROW = {"bigint": pa.int64(), "int": pa.int32(), "string": pa.string(), "double": pa.float64(),
         "boolean": pa.bool_()}
#: What Spark sees: one row per (source, worker) and micro-batch, the messages inside as Arrow IPC.
BUNDLE_SCHEMA = "worker int, source int, size int, bundle binary"
BUNDLE_ARROW = pa.schema([("worker", pa.int32()), ("source", pa.int32()), ("size", pa.int32()),
                          ("bundle", pa.binary())])


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
    if isinstance(stream.labels, pa.Array):  # a shared stream: already the text, mapped
        return stream.labels
    return pa.array(key_labels(stream), pa.string())


def _spark_type(dtype: np.dtype) -> str:
    kind = np.dtype(dtype).kind
    return {"b": "boolean", "i": "bigint", "u": "bigint", "f": "double"}.get(kind, "string")


def columns_of(stream, payload: tuple[str, ...]) -> list[tuple[str, str]]:
    """The source's columns as (name, Spark type): base, payload, then the routing columns."""
    missing = [c for c in payload if c not in stream.payload]
    if missing:
        raise ValueError(f"workload {stream.name!r} has no payload column(s) {', '.join(missing)}")
    return BASE_COLUMNS + [(c, _spark_type(stream.payload[c].dtype)) for c in payload] + ROUTE_COLUMNS


class SourcePartition(InputPartition):
    """Source ``source``'s messages with ``start <= seq < end``; ``t0``/``at`` fix intended times."""

    def __init__(self, source: int, start: int, end: int, t0: float, at: float):
        self.source, self.start, self.end, self.t0, self.at = source, start, end, t0, at


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
        self.app = make_app(options["app"])
        self.scheme = options["scheme"]
        self.workers = int(options["workers"])
        self.payload = self.app.payload_columns
        self.stream_file = options.get("stream_file", "")
        self.run = (self.scheme, self.workers, self.sources, self.seed, self.workload, self.messages, self.split)

    def stream(self):
        return stream_of(self.workload, self.messages, self.seed, self.stream_file)


class SkewbenchStreamReader(DataSourceStreamReader):
    def __init__(self, options: Options):
        self.o = options

    def initialOffset(self) -> dict:
        now = time.time()
        return {"offset": 0, "t0": now, "at": now}

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.o.max_rows) if self.o.max_rows > 0 else ReadAllAvailable()

    def available(self, t0: float, now: float) -> int:
        """Messages whose intended arrival time has come (all of them when rate = 0)."""
        if self.o.rate <= 0:
            return self.o.messages
        return min(self.o.messages, int(np.floor((now - t0) * self.o.rate)) + 1)

    def latestOffset(self, start: dict, limit) -> dict:
        now = time.time()
        end = self.available(start["t0"], now)
        if isinstance(limit, ReadMaxRows):
            end = min(end, start["offset"] + limit.max_rows)
        if end <= start["offset"]:
            return start
        return {"offset": end, "t0": start["t0"], "at": now}

    def partitions(self, start: dict, end: dict):
        if end["offset"] <= start["offset"]:
            return []
        return [SourcePartition(j, start["offset"], end["offset"], end["t0"], end["at"]) for j in range(self.o.sources)]

    def read(self, partition: SourcePartition):
        o = self.o
        stream = o.stream()
        src = source_of_each_message(stream, o.sources, o.split, partition.start, partition.end)
        seq = partition.start + np.flatnonzero(src == partition.source)
        keys = labels_of(stream).take(pa.array(stream.ids[seq]))  # Arrow text: no Python string per message
        batch = pd.DataFrame({
            "seq": seq, "source": np.full(len(seq), partition.source, dtype=np.int32),
            "key": pd.arrays.ArrowExtensionArray(keys), "fp": stream.fps.view(np.int64)[seq],
            "t_intended": partition.t0 + seq / o.rate if o.rate > 0 else np.full(len(seq), partition.at),
            **{c: stream.payload[c][seq] for c in o.payload}})
        router = routing.router_at(o.run, partition.source, partition.start, stream)
        rows = routing.route_batch(router, o.app, batch, stream.clock[seq])
        routing.keep(o.run, partition.source, partition.end, router)
        if partition.end == o.messages and partition.source == 0:
            rows = pd.concat([rows, flush_rows(stream, o)], ignore_index=True)
        columns = columns_of(stream, o.payload)
        schema = pa.schema([(name, ARROW[kind]) for name, kind in columns])
        rows = rows.sort_values("worker", kind="stable")  # seq order within each worker
        yield bundles(pa.Table.from_pandas(rows[[name for name, _ in columns]], schema=schema, preserve_index=False),
                      partition.source)


def bundles(rows: pa.Table, source: int) -> pa.RecordBatch:
    """One row per worker that gets messages from ``source``: its rows (sorted by worker) as an Arrow
    IPC stream (:data:`BUNDLE_SCHEMA`)."""
    workers, starts, sizes = np.unique(rows.column("worker").to_numpy(), return_index=True, return_counts=True)
    blobs = []
    for start, size in zip(starts, sizes):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, rows.schema) as writer:
            writer.write_table(rows.slice(start, size))
        blobs.append(sink.getvalue().to_pybytes())
    return pa.RecordBatch.from_arrays(
        [pa.array(workers, pa.int32()), pa.array(np.full(len(workers), source), pa.int32()),
         pa.array(sizes, pa.int32()), pa.array(blobs, pa.binary())], schema=BUNDLE_ARROW)


def unbundle(blobs) -> pd.DataFrame:
    """The message rows of some bundles (:func:`bundles`), concatenated."""
    return pa.concat_tables([pa.ipc.open_stream(blob).read_all() for blob in blobs]).to_pandas()


def flush_rows(stream, o: Options) -> pd.DataFrame:
    """One ``flush`` row per worker (a copy of message 0 with ``seq`` = messages)."""
    key = labels_of(stream).take(np.full(o.workers, stream.ids[0]))
    return pd.DataFrame({"seq": np.full(o.workers, o.messages, dtype=np.int64),
                         "source": np.zeros(o.workers, dtype=np.int32), "key": pd.arrays.ArrowExtensionArray(key),
                         "fp": int(stream.fps.view(np.int64)[0]), "t_intended": 0.0,
                         **{c: stream.payload[c][0] for c in o.payload},
                         "worker": np.arange(o.workers, dtype=np.int32), "role": "flush"})


class SkewbenchDataSource(DataSource):
    """``spark.readStream.format("skewbench").options(...)``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "skewbench"

    def schema(self) -> str:
        o = Options(self.options)
        columns_of(stream_of(o.workload, min(o.messages, 1000), o.seed), o.payload)  # checks the payload columns
        return BUNDLE_SCHEMA

    def streamReader(self, schema) -> SkewbenchStreamReader:
        return SkewbenchStreamReader(Options(self.options))
