"""locust as the load generator of the broker path: it writes a workload's stream into the cluster's
broker (:mod:`skewbench.bench.broker`) on an open-loop schedule (:mod:`skewbench.bench.schedule`), and the
"skewbench-broker" source reads it from there.

    locust -f bench/locustfile.py --headless --processes 2 --broker-conf .cluster/loadgen/conf \\
        --topic T --workload zipf:z=1.2,keys=10000 --messages 200000 --sources 5 --schedule 20000

One user per source: each user claims a source with an atomic ``INCR`` at the broker (the claim holds across
locust's processes and machines), and sends that source's messages when their intended times come, as many
as are due in one transaction (:func:`~skewbench.bench.broker.publish`, at most :data:`CHUNK`), with the
source's mark of how far its stream is complete. A broker that stops answering is waited for (``PATIENCE``)
and what it did not acknowledge is sent again: the ids refuse a message twice. Locust is closed loop by
nature — a user waits for its request — so the schedule, not the users, sets the rate: a user that falls
behind sends what is overdue at once and the lateness shows in the broker's delivery log
(:func:`~skewbench.bench.broker.delivery`), never as a lower offered rate. Every transaction is a locust
request (type ``XADD``, named by its source, its length the messages it carried), so locust's statistics and
CSVs count deliveries. The shape :class:`UntilSent` keeps one user per source until every source has sent
its last message, then stops the test.
"""

from __future__ import annotations

import time
from functools import lru_cache

import gevent
import locust.runners
import numpy as np
from locust import LoadTestShape, User, events, task
from locust.exception import StopUser

from skewbench.bench.broker import PATIENCE, Broker, BrokerError, passed_key, publish, topic_key
from skewbench.bench.schedule import intended_times, parse_schedule

CHUNK = 2000  # messages per transaction at most: a late user catches up in bounded steps
LEAD = 1.0  # seconds between the first user's start and message 0: every user is ready by then
IDLE = 0.005  # the longest a user sleeps before it looks again: the schedule's resolution
# A worker's first user builds its stream (imports, numba's compilation) without yielding, so on a loaded machine
# its heartbeats stop for seconds; after locust's 3 missed ones the master calls it missing and stops the test with
# the stream half sent. The master waits this many heartbeats (1 s each) instead, locust's own patience with a
# silent master.
locust.runners.HEARTBEAT_LIVENESS = 60


@events.init_command_line_parser.add_listener
def options(parser):
    parser.add_argument("--broker-conf", required=True, help="the drivers' configuration folder (broker.json)")
    parser.add_argument("--topic", required=True, help="the name of this stream at the broker (one per run)")
    parser.add_argument("--workload", required=True, help="workload SPEC, as skewbench run takes it")
    parser.add_argument("--messages", type=int, required=True, help="messages in the stream")
    parser.add_argument("--seed", type=int, default=0, help="the workload's seed")
    parser.add_argument("--sources", type=int, required=True, help="S: one stream (and one user) per source")
    parser.add_argument("--split", default="shuffle", help="how messages are dealt to sources (shuffle | key)")
    parser.add_argument("--app", default="wordcount", help="the app whose payload columns the entries carry")
    parser.add_argument("--schedule", required=True, help="offered rate: RATE or RATE@SECONDS,...,RATE")


@lru_cache(maxsize=1)
def stream_and_payload(workload: str, messages: int, seed: int, app: str):
    """The stream, once per locust process (every user of a process shares it)."""
    from skewbench.bench.apps import make_app
    from skewbench.bench.spark.source import stream_of

    prepared = make_app(app)
    return prepared.prepare(stream_of(workload, messages, seed)), prepared.payload_columns


class SourceProducer(User):
    """One source's producer: its messages, each at its intended time."""

    def wait_time(self):
        return 0  # the task paces itself by the schedule

    def on_start(self):
        from skewbench.sources import source_of_each_message

        o = self.environment.parsed_options
        self.client = Broker.of(o.broker_conf).client(patience=PATIENCE)
        self.source = self.client.incr(topic_key(o.topic, "claims")) - 1
        if self.source >= o.sources:
            raise StopUser()
        self.client.set(topic_key(o.topic, "t0"), repr(time.time() + LEAD), nx=True)  # the first user's wins
        t0 = float(self.client.get(topic_key(o.topic, "t0")))
        self.stream, self.payload = stream_and_payload(o.workload, o.messages, o.seed, o.app)
        self.seqs = np.flatnonzero(source_of_each_message(self.stream, o.sources, o.split) == self.source)
        self.times = intended_times(self.seqs, t0, parse_schedule(o.schedule))
        self.sent = 0

    @task
    def send(self):
        o = self.environment.parsed_options
        if self.sent == len(self.seqs):
            self.finish()
        now = time.time()
        due = int(np.searchsorted(self.times, now, side="right"))
        if due <= self.sent:
            gevent.sleep(min(IDLE, self.times[self.sent] - now))
            return
        end = min(due, self.sent + CHUNK)
        mark = int(self.seqs[end]) if end < len(self.seqs) else o.messages
        seqs = self.seqs[self.sent:end]
        started, error = time.perf_counter(), None
        try:
            publish(self.client, o.topic, self.stream, self.payload, seqs, np.full(len(seqs), self.source),
                    self.times[self.sent:end], {self.source: mark})
            self.sent = end
        except BrokerError as exc:  # counted as a failed request; the same messages are sent again next time
            error = exc
        self.environment.events.request.fire(request_type="XADD", name=f"source {self.source}",
                                             response_time=(time.perf_counter() - started) * 1000,
                                             response_length=len(seqs), exception=error, context={})

    def finish(self):
        o = self.environment.parsed_options
        self.client.set(passed_key(o.topic, self.source), o.messages)  # also a source without messages is done
        self.client.sadd(topic_key(o.topic, "done"), self.source)  # a set: a retried "done" counts once
        raise StopUser()


class UntilSent(LoadTestShape):
    """One user per source until every source has sent its last message."""

    def tick(self):
        o = self.runner.environment.parsed_options
        if not hasattr(self, "client"):
            self.client = Broker.of(o.broker_conf).client(patience=PATIENCE)
        done = self.client.scard(topic_key(o.topic, "done"))
        return None if done >= o.sources else (o.sources, o.sources)
