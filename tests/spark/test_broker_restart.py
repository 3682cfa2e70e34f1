"""A broker restart mid-stream, at the broker's edge (bench/broker.py): the producer and the reader wait it out
(their clients' patience), nothing the broker acknowledged is lost (AOF), what the producer sends again is
refused by the ids and counted once in the delivery log, and a reader without patience — or with a wrong
password — gets one clear error at once.
On a Redis server of the test's own (the Debian binary the cluster's Ansible installed), killed with SIGKILL."""
import importlib.util
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from skewbench.bench.apps.base import make_app
from skewbench.bench.broker import Broker, BrokerError, deliveries, delivery, pages, passed, publish, received
from skewbench.sources import source_of_each_message
from skewbench.workloads import parse

MESSAGES, S, CHUNK = 20_000, 2, 500


@pytest.fixture
def server(spark_cluster, tmp_path):
    """A Redis server of the test's own (tests/spark/redis_server.py), which it kills."""
    spec = importlib.util.spec_from_file_location("redis_server", Path(__file__).with_name("redis_server.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.RedisServer(tmp_path)
    yield server
    server.kill()


def test_a_broker_restart_mid_stream_loses_nothing_and_counts_nothing_twice(server):
    app = make_app("wordcount")
    stream = app.prepare(parse("zipf:z=1.2,keys=500", messages=MESSAGES, seed=0))
    source = source_of_each_message(stream, S, "shuffle")
    producer, watcher, topic = server.broker.client(patience=30), server.broker.client(patience=30), "restart"
    down = threading.Event()

    def restart_at(seq):
        while passed(watcher, topic, S) < seq:
            time.sleep(0.01)
        server.kill()
        down.set()
        time.sleep(1.5)
        server.start()

    restarter = threading.Thread(target=restart_at, args=(MESSAGES // 2,), daemon=True)
    restarter.start()
    sent, retries, started = 0, 0, time.monotonic()
    while sent < MESSAGES:  # as a locust user: a chunk whose reply did not come is sent again
        seqs = np.arange(sent, min(sent + CHUNK, MESSAGES))
        try:
            publish(producer, topic, stream, app.payload_columns, seqs, source[seqs], np.full(len(seqs), time.time()),
                    dict.fromkeys(range(S), seqs[-1] + 1))
            sent = seqs[-1] + 1
        except BrokerError:
            retries += 1
    restarter.join(30)
    assert down.is_set() and not restarter.is_alive()
    print(f"sent {MESSAGES} messages through a broker restart (1.5 s down) in {time.monotonic() - started:.1f} s, "
          f"{retries} chunk(s) sent again")

    reader = server.broker.client(patience=30)
    for j in range(S):
        entries = [e for page in pages(reader, topic, j, 0, MESSAGES) for e in page]
        seq = received(entries, stream, app.payload_columns, np.flatnonzero(source == j), f"stream {j}")[0]
        assert np.array_equal(seq, np.flatnonzero(source == j))  # every message once, none lost
    assert delivery(deliveries(reader, topic))["messages"] == MESSAGES
    publish(reader, topic, stream, app.payload_columns, np.arange(CHUNK), source[:CHUNK], np.zeros(CHUNK), {})
    assert delivery(deliveries(reader, topic))["messages"] == MESSAGES  # a chunk sent again counts once

    started = time.monotonic()
    with pytest.raises(BrokerError, match="refuses user 'skewbench': its password changed"):
        Broker(server.broker.host, server.broker.port, "skewbench", "wrong").client(patience=30)
    assert time.monotonic() - started < 5  # a refusal is no restart to wait out

    impatient = server.broker.client()  # patience 0: what a driver checks the broker with
    server.kill()
    started = time.monotonic()
    with pytest.raises(BrokerError, match=f"127.0.0.1:{server.broker.port} is unreachable .*BROKER=1"):
        list(pages(impatient, topic, 0, 0, 10))
    assert time.monotonic() - started < 5
