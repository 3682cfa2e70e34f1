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
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

#: Every key the benchmark writes starts with this: the broker's user may touch no other.
KEY_PREFIX = "skewbench:"


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

    def client(self, timeout: float = 10.0):
        """A connected client (redis-py), checked with a PING."""
        import redis

        client = redis.Redis(host=self.host, port=self.port, username=self.user, password=self.password,
                             socket_timeout=timeout, socket_connect_timeout=timeout)
        try:
            client.ping()
        except redis.AuthenticationError:
            raise BrokerError(f"the broker at {self.host}:{self.port} refuses user {self.user!r}: its password "
                              f"changed since broker.json was written; run `make cluster-up BROKER=1`") from None
        except redis.ConnectionError as exc:
            raise BrokerError(f"the broker at {self.host}:{self.port} is unreachable ({exc}); "
                              f"`make cluster-up BROKER=1` starts it") from None
        return client
