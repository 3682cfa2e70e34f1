"""A run's ingestion through the broker (``skewbench run --ingest locust``): the driver's side.

Before the query starts, locust (:mod:`skewbench.bench.locustfile`) is started on the load generator to send
the run's stream to the cluster's broker under a topic of the run's own, at ``--rate`` messages/s on an
open-loop schedule (rate 0: every message at once, as fast as locust sends); the query reads it with the
"skewbench-broker" source (:mod:`~skewbench.bench.spark.broker_source`), which routes exactly as the generated
source does. When the run ends, the broker's delivery log says what was offered: the run's ``ingest`` summary
has the offered and achieved rate (by the broker's clock), the generator's lateness, and ``valid`` — false
when a message is missing or the achieved rate fell short of the offered one by more than :data:`TOLERANCE`
(:func:`kept_up`), so that such a run is never reported as if it had run at the offered rate. locust's own
log and statistics (CSV) stay in the run's ``locust/`` folder with the broker's delivery log
(``deliveries.parquet``: what a sustainable search measures the consumer's lag against); the topic's keys are
deleted from the broker.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from skewbench.bench.broker import Broker, deliveries, delivery, forget

TOLERANCE = 0.02  # achieved rate at most 2 % below the offered one, or the run is not valid
DELIVERIES = "deliveries.parquet"  # in the run's locust/ folder: the broker's delivery log of the run
PATHS = ("engine", "locust")  # where a run's messages come from: generated in Spark's source, or sent by locust


def kept_up(achieved: float, offered: float) -> bool:
    """Whether the broker got the offered rate (0: as fast as locust sends), to :data:`TOLERANCE`.  Only falling
    short counts: no message is sent before its intended time, so an achieved rate above the offered one
    means a late start (the first delivery 0.1-0.3 s late shortens the span it is measured over), which the
    lateness statistics report."""
    return offered == 0 or achieved >= (1 - TOLERANCE) * offered


class Ingest:
    """locust sending one run's stream to the broker."""

    def __init__(self, config, workload: str, folder: Path, conf_dir: Path):
        self.broker = Broker.of(conf_dir)  # skewbench run checked that it answers
        self.config, self.workload, self.conf_dir = config, workload, conf_dir
        self.folder = folder / "locust"
        self.topic = f"{folder.name.removesuffix('.partial')}-{uuid.uuid4().hex[:8]}"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        c = self.config
        self.folder.mkdir()
        command = [str(Path(sys.executable).parent / "locust"), "-f", str(Path(__file__).parents[1] / "locustfile.py"),
                   "--headless", "--only-summary", "--processes", str(max(1, min(c.sources, os.cpu_count() or 1))),
                   "--csv", str(self.folder / "stats"), "--logfile", str(self.folder / "locust.log"),
                   "--broker-conf", str(self.conf_dir), "--topic", self.topic, "--workload", self.workload,
                   "--messages", str(c.messages), "--seed", str(c.seed), "--sources", str(c.sources), "--split",
                   c.split, "--app", c.app, "--schedule", repr(float(c.rate))]
        with (self.folder / "output.txt").open("w") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def source_options(self) -> dict:
        b = self.broker
        return {"topic": self.topic, "broker_host": b.host, "broker_port": b.port, "broker_user": b.user,
                "broker_password": b.password}

    def failed(self) -> str | None:
        """Why locust stopped before sending everything, or None while it runs or after it succeeded."""
        code = self.process.poll() if self.process is not None else None
        if code:
            return f"locust exited with {code}: see {self.folder / 'locust.log'} and {self.folder / 'output.txt'}"
        return None

    def finish(self, timeout: float = 60) -> dict:
        """Wait for locust, then what the broker received; deletes the topic."""
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise RuntimeError(f"locust did not stop {timeout:.0f} s after the run: see {self.folder}") from None
        if code:
            raise RuntimeError(self.failed())
        client = self.broker.client()
        log = deliveries(client, self.topic)
        log.to_parquet(self.folder / DELIVERIES, index=False)
        got = delivery(log)
        offered = float(self.config.rate)
        valid = got["messages"] == self.config.messages and kept_up(got["achieved_rate"], offered)
        forget(client, f"{self.topic}:*")
        return {"path": "locust", "topic": self.topic, "offered_rate": offered, **got, "valid": valid}

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
