"""The broker source's reading side against a real Redis, without Spark: run with the cluster's Python
(``.venv-cluster/bin/python tests/spark/broker_path.py``; tests/spark/test_broker_source.py does).

The cluster's broker when ``SPARK_CONF_DIR`` names a cluster that has one (``make cluster-up BROKER=1``), else a
Redis server of its own (the Debian ``redis-server`` binary, on a free loopback port, with the broker's
access rules), gets a stream published by :func:`skewbench.bench.broker.publish`; the "skewbench-broker"
reader then plans and reads it batch by batch exactly as Spark would call it, and every batch's bundles
must equal the generated source's ("skewbench") row for row — apart from the intended times, which come
from the producer.  Then what must fail does: a replay below what was committed (trimmed), an altered and a
malformed entry, a second publish (refused by the ids, nothing duplicated).  Last, locust
(bench/locustfile.py, two processes) sends a stream on an open-loop schedule: the broker received it at the
offered rate (within 2 %, by its own clock) and the source reads exactly what the generated source makes.
Prints one line per check; exits non-zero on the first that fails.
"""
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql.streaming.datasource import ReadMaxRows

from skewbench.bench.broker import Broker, BrokerError, deliveries, delivery, forget, publish, stream_key
from skewbench.bench.spark.broker_source import BrokerStreamReader, client_of
from skewbench.bench.spark.source import Options, SkewbenchStreamReader, stream_of
from skewbench.sources import source_of_each_message

from redis_server import RedisServer  # beside this script

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD, MESSAGES, S, W, BATCH = "zipf:z=1.2,keys=500", 3000, 3, 4, 700
RUN = uuid.uuid4().hex[:8]  # this run's topics: t-<RUN>-...


@contextlib.contextmanager
def a_broker():
    """The cluster's broker, else one of our own; the topics this wrote are deleted afterwards."""
    conf = Path(os.environ.get("SPARK_CONF_DIR", "/nowhere"), "broker.json")
    with contextlib.ExitStack() as stack:
        broker = Broker.of(conf.parent) if conf.exists() else stack.enter_context(redis_server())
        try:
            yield broker
        finally:
            forget(client_of(broker), f"{RUN}-*")


@contextlib.contextmanager
def redis_server():
    server = RedisServer(Path(tempfile.mkdtemp()))
    try:
        yield server.broker
    finally:
        server.kill()


def options(app, scheme, split, **extra):
    return Options({"workload": WORKLOAD, "messages": MESSAGES, "seed": 0, "sources": S, "split": split,
                    "max_rows_per_trigger": BATCH, "app": app, "scheme": scheme, "workers": W, **extra})


def read_all(reader, commit=False):
    """Every micro-batch's rows, planned and read as Spark does; ``commit`` after each."""
    start, batches = reader.initialOffset(), []
    while start["offset"] < MESSAGES:
        end = reader.latestOffset(start, ReadMaxRows(BATCH))
        assert end["offset"] > start["offset"], (start, end)
        table = pa.Table.from_batches([b for p in reader.partitions(start, end) for b in reader.read(p)])
        batches.append(unbundled(table))
        if commit:
            reader.commit(end)
        start = end
    return batches


def unbundled(table):
    rows = [pa.ipc.open_stream(blob.as_py()).read_all().drop_columns(["t_intended"]).to_pandas().assign(worker=w)
            for w, blob in zip(table["worker"].to_pylist(), table["bundle"])]
    return rows


def published(broker, topic, app, split, start=0, end=MESSAGES):
    o = options(app, "kg", split)
    stream = o.app.prepare(stream_of(WORKLOAD, MESSAGES, 0))
    seqs = np.arange(start, end)
    return publish(client_of(broker), topic, stream, o.payload, seqs, source_of_each_message(stream, S, split)[seqs],
                   time.time() + seqs / 1e4, {j: end for j in range(S)})


def locust_sends(broker, topic, app, split, rate):
    """Run locust (headless, two processes) until it has sent the whole stream at ``rate``."""
    conf = Path(tempfile.mkdtemp())
    (conf / "broker.json").write_text(json.dumps({"host": broker.host, "port": broker.port, "user": broker.user,
                                                  "password": broker.password}))
    done = subprocess.run([str(Path(sys.executable).parent / "locust"), "-f", str(ROOT / "bench/locustfile.py"),
                           "--headless", "--processes", "2", "--only-summary", "--broker-conf", str(conf),
                           "--topic", topic, "--workload", WORKLOAD, "--messages", str(MESSAGES),
                           "--sources", str(S), "--split", split, "--app", app, "--schedule", str(rate)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode:
        print(done.stdout[-2000:], done.stderr[-3000:])
    return done.returncode


def check(name, ok):
    print(f"{name}: {'ok' if ok else 'FAILED'}")
    if not ok:
        sys.exit(1)


def main():
    with a_broker() as broker:
        print(f"broker: {broker}")
        for app, scheme, split in [("wordcount", "pkg", "shuffle"), ("naivebayes", "dchoices", "key"),
                                   ("selfjoin", "gedik-scan", "shuffle")]:
            topic = f"{RUN}-{app}"
            half = published(broker, topic, app, split, 0, MESSAGES // 2)
            reader = BrokerStreamReader(options(app, scheme, split), broker, topic)
            check(f"{app}: only what the producer passed is offered",
                  half == MESSAGES // 2 and reader.latestOffset(reader.initialOffset(), ReadMaxRows(10**6))["offset"]
                  == MESSAGES // 2)
            check(f"{app}: a second publish adds nothing", published(broker, topic, app, split, 0, MESSAGES // 2) == 0)
            published(broker, topic, app, split, MESSAGES // 2, MESSAGES)
            generated = read_all(SkewbenchStreamReader(options(app, scheme, split)))
            from_broker = read_all(BrokerStreamReader(options(app, scheme, split), broker, topic))
            same = [len(g) == len(b) and all(x.equals(y) for x, y in zip(g, b)) for g, b in zip(generated, from_broker)]
            check(f"{app} {scheme} split={split}: every bundle as the generated source's",
                  len(generated) == len(from_broker) and all(same))
            read_all(BrokerStreamReader(options(app, scheme, split), broker, topic), commit=True)
            check(f"{app}: commit trims what Spark committed",
                  all(client_of(broker).xlen(stream_key(topic, j)) == 0 for j in range(S)))
            try:
                read_all(BrokerStreamReader(options(app, scheme, split), broker, topic))
                check(f"{app}: a replay below the commit fails", False)
            except BrokerError as error:
                check(f"{app}: a replay below the commit fails ({str(error)[:90]}...)", "missing" in str(error))

        client = client_of(broker)
        for what, fields in [("altered", {"fp": "1"}), ("malformed", {"fp": "not a number"}),
                             ("invalid UTF-8", {"fp": "1", "key": b"\xff\xfe"})]:
            topic = f"{RUN}-{what.replace(' ', '-')}"  # message 4 (source 1's) by hand, the rest by the producer
            published(broker, topic, "wordcount", "shuffle", 0, 4)
            client.xadd(stream_key(topic, 1), {"key": "k", "t": "0", "clock": "0", **fields}, id="0-5")
            published(broker, topic, "wordcount", "shuffle", 5, MESSAGES)
            try:
                read_all(BrokerStreamReader(options("wordcount", "kg", "shuffle"), broker, topic))
                check(f"entry {what}: fails", False)
            except BrokerError as error:
                check(f"entry {what}: fails ({str(error)[:120]}...)", "messages 0..699" in str(error))

        topic, rate = f"{RUN}-locust", 1500
        check("locust sends the stream (two processes, one user per source)",
              locust_sends(broker, topic, "naivebayes", "key", rate) == 0)
        got = delivery(deliveries(client, topic))
        print(f"  delivered {got['messages']} messages in {got['seconds']:.2f} s: {got['achieved_rate']:.0f}/s "
              f"offered {rate}/s, lateness p50 {got['lag_p50'] * 1000:.1f} ms p99 {got['lag_p99'] * 1000:.1f} ms")
        check("the broker got every message at the offered rate (within 2 %, by its clock)",
              got["messages"] == MESSAGES and abs(got["achieved_rate"] / rate - 1) < 0.02)
        generated = read_all(SkewbenchStreamReader(options("naivebayes", "pkg", "key")))
        from_broker = read_all(BrokerStreamReader(options("naivebayes", "pkg", "key"), broker, topic))
        check("what locust sent reads as the generated source's stream", len(generated) == len(from_broker) and all(
            len(g) == len(b) and all(x.equals(y) for x, y in zip(g, b)) for g, b in zip(generated, from_broker)))

if __name__ == "__main__":
    main()
