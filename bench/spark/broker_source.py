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
* **What an entry says is checked** against the workload's message of that index (every field but the
  intended time, :func:`~skewbench.bench.broker.received`) and every message of the range must be there: a
  lost, extra, malformed or altered entry stops the run with a message saying which, instead of an answer
  silently wrong.  The routers still come from the workload (an
  adaptive scheme's table is fitted on its first 10 %, as on the generated stream), so routing is exactly
  the simulator's.
"""

from __future__ import annotations

import time
from functools import lru_cache

import numpy as np

from skewbench.bench.broker import PATIENCE, Broker, pages, passed, received, stream_key, trim
from skewbench.bench.spark.source import Messages, Options, SkewbenchDataSource, SkewbenchStreamReader, SourcePartition

POLL = 0.01  # seconds between looks at the producer's marks while a whole batch is awaited


@lru_cache(maxsize=4)
def client_of(broker: Broker):
    """One connection per process and broker, which waits out a broker restart (``PATIENCE``)."""
    return broker.client(patience=PATIENCE)


class BrokerStreamReader(SkewbenchStreamReader):
    def __init__(self, options: Options, broker: Broker, topic: str):
        super().__init__(options)
        self.broker, self.topic = broker, topic

    def produced(self) -> int:
        """Messages the producer has passed on every source's stream."""
        return passed(client_of(self.broker), self.topic, self.o.sources)

    def available(self, t0: float, now: float) -> int:
        return min(self.o.messages, self.produced())

    def wait_until_available(self, messages: int, t0: float) -> None:
        while self.produced() < messages:
            time.sleep(POLL)

    def messages(self, partition: SourcePartition, stream) -> Messages:
        """Stream ``partition.source``'s entries of messages ``start <= seq < end``, checked (:func:`received`)."""
        from skewbench.sources import source_of_each_message

        o, (j, start, end) = self.o, (partition.source, partition.start, partition.end)
        src = source_of_each_message(stream, o.sources, o.split, start, end)
        entries = [e for page in pages(client_of(self.broker), self.topic, j, start, end) for e in page]
        where = f"stream {stream_key(self.topic, j)}, messages {start}..{end - 1}"
        m = Messages(*received(entries, stream, o.payload, start + np.flatnonzero(src == j), where))
        if o.rate <= 0:  # everything at once: a message arrives when a batch first offers it, as in "skewbench"
            return m._replace(t_intended=np.full(len(m.seq), partition.at))
        return m

    def flush_time(self, partition: SourcePartition) -> float:
        return partition.at  # the producer's schedule is in the entries, not here

    def commit(self, end: dict) -> None:
        """Spark has committed every message below ``end``: the broker may forget them."""
        trim(client_of(self.broker), self.topic, self.o.sources, end["offset"])


class BrokerDataSource(SkewbenchDataSource):
    """``spark.readStream.format("skewbench-broker").options(...)``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "skewbench-broker"

    def streamReader(self, schema) -> BrokerStreamReader:
        o = self.options
        broker = Broker(o["broker_host"], int(o["broker_port"]), o["broker_user"], o["broker_password"])
        return BrokerStreamReader(Options(o), broker, o["topic"])
