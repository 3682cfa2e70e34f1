"""The "skewbench-broker" PySpark streaming data source: the sources of "skewbench"
(:mod:`~skewbench.bench.spark.source`: the same offsets, partitions, routing and bundles), reading their
messages from the cluster's broker (:mod:`skewbench.bench.broker`, which says how a stream travels there)
instead of generating them.

Options: those of "skewbench", plus ``topic`` and the broker's ``broker_host``, ``broker_port``,
``broker_user`` and ``broker_password`` (Spark redacts an option named like a password in plans and logs).

* **Offsets** are global message indices, as in "skewbench".  What is available is what the producer has
  passed on every source's stream (the least ``passed`` mark), so the stream is offered at the producer's
  pace — open loop while it keeps to its schedule — and the admission control is ``ReadMaxRows``
  (``max_rows_per_trigger``) as before.
* **Partitions**: one per source, i.e. per stream; partition *j* reads stream *j*'s entries with ids in
  ``[0-(start + 1), 0-end]`` on the executor, with paged ``XRANGE``.
* **Replays read the same messages**: entry ids are message indices, and :meth:`commit` trims a stream
  (``XTRIM MINID``) only below what Spark has committed.
* **What an entry says is checked** against the workload's message of that index (its fingerprint) and
  every message of the range must be there: a lost, extra or altered entry stops the run with a message
  saying which, instead of an answer silently wrong.  The routers still come from the workload (an
  adaptive scheme's table is fitted on its first 10 %, as on the generated stream), so routing is exactly
  the simulator's.
"""

from __future__ import annotations

import time
from functools import lru_cache

import numpy as np
import pyarrow as pa

from skewbench.bench.broker import Broker, BrokerError, passed_key, stream_key
from skewbench.bench.spark.source import Messages, Options, SkewbenchDataSource, SkewbenchStreamReader, SourcePartition

PAGE = 10_000  # entries per XRANGE: a page of the biggest payload stays well under a megabyte per 1,000
POLL = 0.01  # seconds between looks at the producer's marks while a whole batch is awaited


@lru_cache(maxsize=4)
def client_of(broker: Broker):
    """One connection per process and broker."""
    return broker.client()


class BrokerStreamReader(SkewbenchStreamReader):
    def __init__(self, options: Options, broker: Broker, topic: str):
        super().__init__(options)
        self.broker, self.topic = broker, topic

    def passed(self) -> int:
        """Messages the producer has passed on every source's stream."""
        marks = client_of(self.broker).mget([passed_key(self.topic, j) for j in range(self.o.sources)])
        return min(int(m or 0) for m in marks)

    def available(self, t0: float, now: float) -> int:
        return min(self.o.messages, self.passed())

    def wait_until_available(self, messages: int, t0: float) -> None:
        while self.passed() < messages:
            time.sleep(POLL)

    def messages(self, partition: SourcePartition, stream) -> Messages:
        """Stream ``partition.source``'s entries of messages ``start <= seq < end``, checked."""
        from skewbench.sources import source_of_each_message

        o = self.o
        entries = self.entries(partition)
        seq = np.fromiter((int(i.split(b"-")[1]) - 1 for i, _ in entries), np.int64, len(entries))
        src = source_of_each_message(stream, o.sources, o.split, partition.start, partition.end)
        expected = partition.start + np.flatnonzero(src == partition.source)
        where = f"stream {stream_key(self.topic, partition.source)}, messages {partition.start}..{partition.end - 1}"
        if not np.array_equal(seq, expected):
            missing, extra = np.setdiff1d(expected, seq), np.setdiff1d(seq, expected)
            raise BrokerError(f"{where}: {len(missing)} message(s) missing (first {missing[:3].tolist()}) and "
                              f"{len(extra)} unexpected (first {extra[:3].tolist()}); was the stream trimmed or "
                              f"written by another run? Publish the topic again or pick another")
        try:
            fp = np.fromiter((int(f[b"fp"]) for _, f in entries), np.int64, len(entries))
            key = pa.array([f[b"key"] for _, f in entries], pa.binary()).cast(pa.string())
            t_intended = np.fromiter((float(f[b"t"]) for _, f in entries), np.float64, len(entries))
            clock = np.fromiter((float(f[b"clock"]) for _, f in entries), np.float64, len(entries))
            payload = {c: np.array([f[c.encode()] for _, f in entries], dtype=stream.payload[c].dtype)
                       for c in o.payload}
        except (KeyError, ValueError, TypeError, pa.ArrowInvalid) as exc:
            raise BrokerError(f"{where}: a malformed entry ({type(exc).__name__}: {exc})") from None
        altered = np.flatnonzero(fp != stream.fps.view(np.int64)[seq])
        if len(altered):
            raise BrokerError(f"{where}: {len(altered)} entries carry another key than the workload's message "
                              f"(first: message {seq[altered[0]]}); was the topic written for another workload?")
        if o.rate <= 0:  # everything at once: a message arrives when a batch first offers it, as in "skewbench"
            t_intended = np.full(len(seq), partition.at)
        return Messages(seq, key, fp, t_intended, clock.astype(stream.clock.dtype), payload)

    def entries(self, partition: SourcePartition) -> list:
        """The raw entries of the partition's range, page by page."""
        client, key = client_of(self.broker), stream_key(self.topic, partition.source)
        low, high, entries = f"0-{partition.start + 1}", f"0-{partition.end}", []
        while True:
            page = client.xrange(key, low, high, count=PAGE)
            entries += page
            if len(page) < PAGE:
                return entries
            low = "(" + page[-1][0].decode()

    def flush_time(self, partition: SourcePartition) -> float:
        return partition.at  # the producer's schedule is in the entries, not here

    def commit(self, end: dict) -> None:
        """Spark has committed every message below ``end``: the broker may forget them."""
        pipe = client_of(self.broker).pipeline(transaction=False)
        for j in range(self.o.sources):
            pipe.xtrim(stream_key(self.topic, j), minid=f"0-{end['offset'] + 1}", approximate=False)
        pipe.execute()


class BrokerDataSource(SkewbenchDataSource):
    """``spark.readStream.format("skewbench-broker").options(...)``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "skewbench-broker"

    def streamReader(self, schema) -> BrokerStreamReader:
        o = self.options
        broker = Broker(o["broker_host"], int(o["broker_port"]), o["broker_user"], o["broker_password"])
        return BrokerStreamReader(Options(o), broker, o["topic"])
