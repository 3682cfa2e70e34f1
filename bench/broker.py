"""The broker between the load generator and Spark's sources: Redis Streams on the cluster's broker node
(``make cluster-up BROKER=1``; the Ansible role ``broker`` installs, configures and starts it).

Redis rather than Kafka: Kafka cannot be installed here and Spark's Kafka connector jar is on no registry
we reach, while Debian ships Redis 7, whose streams give what a benchmark's queue must — entries with
monotonic ids a reader can re-read from any id (a replayed micro-batch reads the same messages), appends
acknowledged only once in the append-only file, and trimming below an id once Spark has committed it.

The broker listens on the cluster network only, its default user is off, and one user (``skewbench``)
may touch only the ``skewbench:*`` keys, with no administrative command.  The plays tell drivers where it
is and the user's generated password in ``broker.json`` in the drivers' configuration folder
(``SPARK_CONF_DIR``, readable only by its owner); :meth:`Broker.of` reads it.  The password is in no
repr, message or result: :class:`Broker` leaves it out.

**How a stream travels** (:func:`publish`; read by :mod:`~skewbench.bench.spark.broker_source`): source *j*'s
messages go to the Redis stream ``skewbench:<topic>:<j>``, one entry per message, whose id ``0-<seq + 1>`` names
the message (so a producer that sends a message again after a failure is refused by the broker, not
counted twice) and whose fields are ``key`` (the key's label), ``fp`` (its 64-bit fingerprint, which the
producer computes once as a Kafka producer hashes a key), ``t`` (the intended send time, epoch seconds),
``clock`` (the stream clock that time-aware schemes route by) and the app's payload columns.  With the
entries, in the same transaction, the producer sets ``skewbench:<topic>:passed:<j>``: every message of
source *j* below that index is in the stream, which tells a reader how far the stream is complete.
A reader takes a range of messages page by page (:func:`pages`) and :func:`received` checks every entry
against the workload's message of its index, so what the broker gives is either exactly the workload's
stream or one clear error — never a silently different answer.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: Every key the benchmark writes starts with this: the broker's user may touch no other.
KEY_PREFIX = "skewbench:"
PAGE = 10_000  # entries per XRANGE: a page of the biggest payload stays well under a megabyte per 1,000
RETRY_CAP = 1.0  # seconds between a patient client's retries, at most
PATIENCE = 60.0  # seconds producers and sources wait out a broker that stopped answering (a restart)


class BrokerError(ValueError):
    """The broker is missing, unreachable or refuses us; the message says how to fix it."""


@dataclass(frozen=True)
class Broker:
    """Where the broker is and how to log in."""

    host: str
    port: int
    user: str
    password: str = field(repr=False)

    @classmethod
    def of(cls, conf_dir: str | Path | None = None) -> Broker:
        """The broker of the cluster whose driver configuration is ``conf_dir`` (default ``SPARK_CONF_DIR``)."""
        conf_dir = conf_dir or os.environ.get("SPARK_CONF_DIR")
        if not conf_dir:
            raise BrokerError("SPARK_CONF_DIR is not set: point it at the cluster's driver configuration "
                              "(`make cluster-status` prints it)")
        path = Path(conf_dir, "broker.json")
        try:
            conf = json.loads(path.read_text())
            return cls(str(conf["host"]), int(conf["port"]), str(conf["user"]), str(conf["password"]))
        except FileNotFoundError:
            raise BrokerError(f"{path} is missing: this cluster has no broker; bring one up with "
                              f"`make cluster-up BROKER=1`") from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BrokerError(f"{path} is unreadable ({type(exc).__name__}: {exc}); `make cluster-up BROKER=1` "
                              f"writes it again") from None

    def client(self, timeout: float = 10.0, patience: float = 0.0):
        """A connected client (redis-py), checked with a PING.  ``patience``: seconds it keeps retrying, with
        backoff, a broker that stops answering — a restart (AOF loaded again) — before it gives up; 0 fails fast."""
        import redis
        from redis.backoff import ExponentialBackoff, NoBackoff
        from redis.retry import Retry

        client = redis.Redis(host=self.host, port=self.port, username=self.user, password=self.password,
                             socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0))
        with answering(client):
            client.ping()  # at once: a wrong password or a broker that is not there are no restart to wait out
        if patience:
            client.set_retry(Retry(ExponentialBackoff(cap=RETRY_CAP, base=0.05), int(patience / RETRY_CAP) + 5))
        return client


@contextmanager
def answering(client):
    """A broker that stops answering ``client`` (after the client's patience) is one clear BrokerError."""
    import redis

    where = client.connection_pool.connection_kwargs
    try:
        yield
    except redis.AuthenticationError:
        raise BrokerError(f"the broker at {where['host']}:{where['port']} refuses user {where['username']!r}: its "
                          f"password changed since broker.json was written; run `make cluster-up BROKER=1`") from None
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise BrokerError(f"the broker at {where['host']}:{where['port']} is unreachable ({exc}); `make cluster-up "
                          f"BROKER=1` starts it (it keeps every message it acknowledged)") from None


def stream_key(topic: str, source: int) -> str:
    """The Redis stream of source ``source``'s messages."""
    return f"{KEY_PREFIX}{topic}:{source}"


def passed_key(topic: str, source: int) -> str:
    """Every message of source ``source`` below the index this key holds is in its stream."""
    return f"{KEY_PREFIX}{topic}:passed:{source}"


def passed(client, topic: str, sources: int) -> int:
    """Messages the producer has passed on every one of the ``sources`` streams (the least mark)."""
    with answering(client):
        marks = client.mget([passed_key(topic, j) for j in range(sources)])
    try:
        return min(int(m or 0) for m in marks)
    except ValueError:
        raise BrokerError(f"topic {topic!r}: a source's mark {passed_key(topic, 0)[:-1]}* is not a message count "
                          f"({marks}); was the topic written by something else than skewbench? Publish it again "
                          f"or pick another") from None


def log_key(topic: str) -> str:
    """The topic's delivery log: one entry per :func:`publish`, its id the broker's time of it."""
    return f"{KEY_PREFIX}{topic}:log"


def topic_key(topic: str, name: str) -> str:
    """The topic's coordination keys (:mod:`~skewbench.bench.locustfile`): ``claims`` (sources taken), ``t0``
    (message 0's time), ``done`` (sources sent)."""
    return f"{KEY_PREFIX}{topic}:{name}"


def forget(client, pattern: str) -> None:
    """Delete every key ``skewbench:<pattern>`` (``TOPIC:*``: a topic's streams, marks and log)."""
    keys = list(client.scan_iter(match=f"{KEY_PREFIX}{pattern}", count=1000))
    if keys:
        client.delete(*keys)


def entry_id(seq: int) -> str:
    return f"0-{seq + 1}"


def seq_of(entry_id: bytes) -> int:
    """The message index an entry id names (:func:`entry_id`); ValueError for an id no producer writes."""
    ms, _, n = entry_id.partition(b"-")
    if ms != b"0" or not n.isdigit() or int(n) < 1:
        raise ValueError(f"entry id {entry_id.decode(errors='replace')!r} is not 0-<message index + 1>")
    return int(n) - 1


def publish(client, topic: str, stream, payload: tuple[str, ...], seqs: np.ndarray, source: np.ndarray,
            t_intended: np.ndarray, passed: dict[int, int]) -> int:
    """Send messages ``seqs`` (ascending) of ``stream`` to their sources' streams (``source``: each one's
    source, ``t_intended``: each one's intended send time), set the sources' marks ``passed``
    ({source: every message of it below this index is sent}) and log the delivery (:func:`log_key`: how
    many, the last one's intended time), in one transaction.  A message the broker already holds (a retry)
    is skipped; returns how many were new."""
    from skewbench.bench.apps.base import key_labels

    labels = key_labels(stream, stream.ids[seqs])
    fps, clock = stream.fps[seqs].view(np.int64), stream.clock[seqs]
    columns = {c: stream.payload[c][seqs].astype(str) for c in payload}
    pipe = client.pipeline(transaction=True)
    for i, seq in enumerate(seqs):
        fields = {"key": labels[i], "fp": int(fps[i]), "t": repr(float(t_intended[i])), "clock": repr(float(clock[i])),
                  **{c: v[i] for c, v in columns.items()}}
        pipe.xadd(stream_key(topic, int(source[i])), fields, id=entry_id(int(seq)))
    for j, mark in passed.items():
        pipe.set(passed_key(topic, j), int(mark))
    if len(seqs):
        pipe.xadd(log_key(topic), {"messages": len(seqs), "t": repr(float(t_intended[-1]))})
    with answering(client):
        replies = pipe.execute(raise_on_error=False)
        refused = [r for r in replies if isinstance(r, Exception)]
        if any("equal or smaller" not in str(r) for r in refused):
            raise BrokerError(f"the broker refused messages {seqs[0]}..{seqs[-1]} of topic {topic!r}: {refused[0]}")
        if refused:  # sent before (a retry after a lost reply): the log takes them back
            client.xadd(log_key(topic), {"messages": -len(refused), "t": repr(float(t_intended[-1]))})
    return len(seqs) - len(refused)


def deliveries(client, topic: str):
    """The topic's delivery log (:func:`log_key`) as a table: ``at`` (the broker's time of a delivery, epoch
    seconds), ``messages`` it added (negative: sent again after a lost reply, taken back) and ``t`` (the
    intended time of its last message)."""
    import pandas as pd

    log = client.xrange(log_key(topic))
    return pd.DataFrame({"at": np.array([int(i.split(b"-")[0]) / 1000 for i, _ in log], np.float64),
                         "messages": np.array([int(f[b"messages"]) for _, f in log], np.int64),
                         "t": np.array([float(f[b"t"]) for _, f in log], np.float64)})


def delivery(log) -> dict:
    """What the broker received, from its delivery log (:func:`deliveries`): ``messages``, ``seconds`` from the
    first delivery to the last, the ``achieved_rate`` over them, and ``lag_p50``/``lag_p99``/``lag_max``: how
    late the deliveries' last messages reached the broker after their intended times (seconds).  Messages
    sent twice (a retry after a lost reply) count once."""
    if not len(log):
        return {"messages": 0, "seconds": 0.0, "achieved_rate": 0.0, "lag_p50": 0.0, "lag_p99": 0.0, "lag_max": 0.0}
    at, count = log["at"].to_numpy(), log["messages"].to_numpy()
    lag = (at - log["t"].to_numpy())[count > 0]
    seconds = float(at[-1] - at[0])
    return {"messages": int(count.sum()), "seconds": seconds,
            "achieved_rate": float(count[1:].sum() / seconds) if seconds > 0 else float("inf"),
            "lag_p50": float(np.percentile(lag, 50)), "lag_p99": float(np.percentile(lag, 99)),
            "lag_max": float(lag.max())}


def trim(client, topic: str, sources: int, below: int) -> None:
    """Forget every source's messages below index ``below`` (Spark has committed them)."""
    pipe = client.pipeline(transaction=False)
    for j in range(sources):
        pipe.xtrim(stream_key(topic, j), minid=entry_id(below), approximate=False)
    with answering(client):
        pipe.execute()


def pages(client, topic: str, source: int, start: int, end: int, size: int = PAGE):
    """Source ``source``'s entries of messages ``start <= seq < end``, a page (``XRANGE … COUNT size``) at a time."""
    import redis

    key, low, high = stream_key(topic, source), entry_id(start), entry_id(end - 1)
    while end > start:
        try:
            with answering(client):
                page = client.xrange(key, low, high, count=size)
        except redis.ResponseError as exc:
            raise BrokerError(f"stream {key}: the broker cannot read it as a stream ({exc}); was it written by "
                              f"something else than skewbench? Publish the topic again or pick another") from None
        yield page
        if len(page) < size:
            return
        low = "(" + page[-1][0].decode()


def received(entries: list, stream, payload: tuple[str, ...], expected: np.ndarray, where: str) -> tuple:
    """The messages ``entries`` carry — ``seq``, ``key`` (a pyarrow string array), ``fp``, ``t_intended``,
    ``clock`` and the ``payload`` columns, in the order of :class:`~skewbench.bench.spark.source.Messages` —
    when they are exactly the workload's messages ``expected``: else a :class:`BrokerError` that says, for
    ``where``, which entries are missing, unexpected, malformed or altered."""
    import pyarrow as pa

    from skewbench.bench.apps.base import key_labels

    try:
        seq = np.fromiter((seq_of(i) for i, _ in entries), np.int64, len(entries))
    except ValueError as exc:
        raise BrokerError(f"{where}: {exc}; was the stream written by something else than skewbench?") from None
    if not np.array_equal(seq, expected):
        missing, extra = np.setdiff1d(expected, seq), np.setdiff1d(seq, expected)
        raise BrokerError(f"{where}: {len(missing)} message(s) missing (first {missing[:3].tolist()}) and "
                          f"{len(extra)} unexpected (first {extra[:3].tolist()}); was the stream trimmed or "
                          f"written by another run? Publish the topic again or pick another")
    try:
        keys = np.array([f[b"key"].decode() for _, f in entries], dtype=object)
        fp = np.fromiter((int(f[b"fp"]) for _, f in entries), np.int64, len(entries))
        t_intended = np.fromiter((float(f[b"t"]) for _, f in entries), np.float64, len(entries))
        clock = np.fromiter((float(f[b"clock"]) for _, f in entries), np.float64, len(entries))
        columns = {c: np.array([f[c.encode()] for _, f in entries], dtype=stream.payload[c].dtype) for c in payload}
    except (KeyError, ValueError, TypeError, OverflowError) as exc:
        raise BrokerError(f"{where}: a malformed entry ({type(exc).__name__}: {exc})") from None
    truth = {"key": key_labels(stream, stream.ids[seq]), "fp": stream.fps.view(np.int64)[seq],
             "clock": stream.clock[seq], **{c: stream.payload[c][seq] for c in payload}}
    for name, got in {"key": keys, "fp": fp, "clock": clock, **columns}.items():
        differ = np.flatnonzero(got != truth[name])
        if len(differ):
            raise BrokerError(f"{where}: {len(differ)} entries carry another {name} than the workload's message "
                              f"(first: message {seq[differ[0]]}); was the topic written for another workload?")
    if not np.isfinite(t_intended).all():
        raise BrokerError(f"{where}: an entry's intended time is not a finite number")
    return seq, pa.array(keys, pa.string()), fp, t_intended, clock.astype(stream.clock.dtype), columns
