"""A Redis server of a test's own, on a free loopback port, with the broker's access rules and append-only file
(ansible/roles/broker/templates/redis.conf.j2); the test may kill it and start it again on the same files."""
import contextlib
import socket
import subprocess
import time
from pathlib import Path

from skewbench.bench.broker import Broker, BrokerError

PASSWORD = "x" * 48
RULES = "~skewbench:* &* +@all -@dangerous"


class RedisServer:
    def __init__(self, folder: Path):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.conf = folder / "redis.conf"
        self.conf.write_text(f"bind 127.0.0.1\nport {port}\ndir {folder}\nsave \"\"\nappendonly yes\n"
                             f"appendfsync everysec\nuser default off {RULES}\nuser skewbench on >{PASSWORD} {RULES}\n")
        self.broker = Broker("127.0.0.1", port, "skewbench", PASSWORD)
        self.process = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(["redis-server", str(self.conf)], stdout=subprocess.DEVNULL)
        for _ in range(200):  # until it answers
            with contextlib.suppress(BrokerError):
                self.broker.client()
                return
            time.sleep(0.05)
        self.broker.client()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
