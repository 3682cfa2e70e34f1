"""The "skewbench" PySpark streaming data source: a workload stream offered open loop to S partitions.

Options (strings, as Spark passes them): ``workload`` (SPEC), ``messages``, ``seed``, ``sources`` (S),
``split`` (``shuffle`` | ``key``, as :func:`skewbench.simulator.engine.source_of_each_message`),
``rate`` (messages/s offered; 0 = everything at once), ``max_rows_per_trigger`` (0 = no limit) and
``payload`` (comma-separated payload columns the app needs).

Offsets are ``{"offset": n, "t0": start, "at": offered}`` over the global message index ``n``:
``t0`` is the query start (fixed by the first offset), ``at`` the time :meth:`latestOffset` made the
batch available.  A message's intended arrival time is ``t0 + seq / rate``; :meth:`latestOffset` never
offers a message before that time, so a stalled pipeline builds a backlog instead of slowing the
input (open loop, no coordinated omission).  With ``rate = 0`` every message is available at once and
its intended time is the ``at`` of the batch that first offered it.  Partition *j* reads source *j*'s
messages with ``start <= seq < end``; the stream is regenerated deterministically from
(workload, messages, seed) on the executor and cached per Python process, so a replay from the
offsets in the checkpoint reads exactly the same rows.

Columns: ``seq`` (bigint), ``source`` (int), ``key`` (string: the key's label), ``fp`` (bigint: the
uint64 fingerprint viewed as int64), ``t_intended`` (double, epoch seconds), ``t_stream`` (double: the
stream's own clock, which time-aware schemes such as DKG route by, as in the simulator), then the
payload columns.
"""

from __future__ import annotations

import time
from functools import lru_cache

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

BASE_SCHEMA = "seq bigint, source int, key string, fp bigint, t_intended double, t_stream double"


@lru_cache(maxsize=4)
def stream_of(workload: str, messages: int, seed: int):
    """The workload's stream, generated once per process."""
    from skewbench.workloads import parse

    return parse(workload, messages=messages, seed=seed)


@lru_cache(maxsize=8)
def _columns(workload: str, messages: int, seed: int, sources: int, split: str):
    """Per-message source index, key labels (as strings) and fingerprints (as int64), cached."""
    from skewbench.simulator.engine import source_of_each_message

    stream = stream_of(workload, messages, seed)
    src = source_of_each_message(stream, sources, split)
    labels = np.arange(stream.n_keys) if stream.labels is None else stream.labels
    key_text = np.asarray([str(label) for label in labels], dtype=object)
    return src, key_text, stream.fps.view(np.int64), stream.clock


def _spark_type(dtype: np.dtype) -> str:
    kind = np.dtype(dtype).kind
    return {"b": "boolean", "i": "bigint", "u": "bigint", "f": "double"}.get(kind, "string")


def schema_of(workload: str, messages: int, seed: int, payload: tuple[str, ...]) -> str:
    """The source's DDL schema: the base columns plus the requested payload columns."""
    stream = stream_of(workload, messages, seed)
    missing = [c for c in payload if c not in stream.payload]
    if missing:
        raise ValueError(f"workload {workload!r} has no payload column(s) {', '.join(missing)}")
    extra = "".join(f", {c} {_spark_type(stream.payload[c].dtype)}" for c in payload)
    return BASE_SCHEMA + extra


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
        self.payload = tuple(c for c in options.get("payload", "").split(",") if c)


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
        src, key_text, fps, clock = _columns(o.workload, o.messages, o.seed, o.sources, o.split)
        stream = stream_of(o.workload, o.messages, o.seed)
        seq = partition.start + np.flatnonzero(src[partition.start:partition.end] == partition.source)
        if o.rate > 0:
            t_intended = partition.t0 + seq / o.rate
        else:
            t_intended = np.full(len(seq), partition.at)
        arrays = {
            "seq": pa.array(seq, pa.int64()),
            "source": pa.array(np.full(len(seq), partition.source, dtype=np.int32)),
            "key": pa.array(key_text[stream.ids[seq]].tolist(), pa.string()),
            "fp": pa.array(fps[seq], pa.int64()),
            "t_intended": pa.array(t_intended, pa.float64()),
            "t_stream": pa.array(clock[seq], pa.float64()),
        }
        for c in o.payload:
            values = stream.payload[c][seq]
            kind = values.dtype.kind
            arrays[c] = pa.array(values.astype(np.int64) if kind in "iu" else
                                 values.astype(np.float64) if kind == "f" else
                                 values if kind == "b" else values.astype(str).tolist())
        yield pa.RecordBatch.from_pydict(arrays)


class SkewbenchDataSource(DataSource):
    """``spark.readStream.format("skewbench").options(...)``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "skewbench"

    def schema(self) -> str:
        o = Options(self.options)
        return schema_of(o.workload, o.messages, o.seed, o.payload)

    def streamReader(self, schema) -> SkewbenchStreamReader:
        return SkewbenchStreamReader(Options(self.options))
