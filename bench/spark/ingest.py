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

locust is the load generator, not the driver: it runs in a session of its own, so a driver that dies (``--faults
driver@…``) leaves it sending on its schedule, as producers go on when a consumer fails. The driver's checkpoint
keeps its topic and process (``ingest.json``); a new driver takes it over from there, reads the backlog from
the offsets Spark committed, and judges locust by the exit code it left in ``locust/exit_code``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil

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
    """locust sending one run's stream to the broker; ``kept`` (in the driver's checkpoint) names the topic and
    the process, for a driver that takes over from a dead one."""

    def __init__(self, config, workload: str, folder: Path, conf_dir: Path, kept: Path):
        self.broker = Broker.of(conf_dir)  # skewbench run checked that it answers
        self.config, self.workload, self.conf_dir, self.kept = config, workload, conf_dir, kept
        self.folder = folder / "locust"
        self.exit_file = self.folder / "exit_code"  # written by the shell around locust when locust ends
        saved = json.loads(kept.read_text()) if kept.exists() else {}
        self.topic = saved.get("topic") or f"{folder.name.removesuffix('.partial')}-{uuid.uuid4().hex[:8]}"
        self.pid: int | None = saved.get("pid")  # the shell's: locust's process group

    def start(self) -> None:
        """Start locust, unless a dead driver's locust is sending this run's stream already."""
        if self.pid is not None:
            return
        c = self.config
        self.folder.mkdir(exist_ok=True)  # (a dead driver may have made it and died before starting locust)
        command = [str(Path(sys.executable).parent / "locust"), "-f", str(Path(__file__).parents[1] / "locustfile.py"),
                   "--headless", "--only-summary", "--processes", str(max(1, min(c.sources, os.cpu_count() or 1))),
                   "--csv", str(self.folder / "stats"), "--logfile", str(self.folder / "locust.log"),
                   "--broker-conf", str(self.conf_dir), "--topic", self.topic, "--workload", self.workload,
                   "--messages", str(c.messages), "--seed", str(c.seed), "--sources", str(c.sources), "--split",
                   c.split, "--app", c.app, "--schedule", repr(float(c.rate))]
        with (self.folder / "output.txt").open("w") as out:
            self.pid = subprocess.Popen(["sh", "-c", '"$@"; echo $? >"$0"', str(self.exit_file), *command],
                                        stdout=out, stderr=subprocess.STDOUT, start_new_session=True).pid
        self.kept.write_text(json.dumps({"topic": self.topic, "pid": self.pid}))

    def source_options(self) -> dict:
        b = self.broker
        return {"topic": self.topic, "broker_host": b.host, "broker_port": b.port, "broker_user": b.user,
                "broker_password": b.password}

    def running(self) -> bool:
        return running(self.pid, self.topic)

    def failed(self) -> str | None:
        """Why locust stopped before sending everything, or None while it runs or after it succeeded."""
        if self.pid is None or self.running():
            return None
        code = self.exit_file.read_text().strip() if self.exit_file.exists() else "no exit code (it was killed)"
        if code != "0":
            return f"locust exited with {code}: see {self.folder / 'locust.log'} and {self.folder / 'output.txt'}"
        return None

    def finish(self, timeout: float = 60) -> dict:
        """Wait for locust, then what the broker received; deletes the topic."""
        deadline = time.monotonic() + timeout
        while self.running():
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"locust did not stop {timeout:.0f} s after the run: see {self.folder}")
            time.sleep(0.1)
        if self.failed():
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
        stop(self.pid, self.topic)


def running(pid: int | None, topic: str) -> bool:
    """Whether the locust sending ``topic`` (the shell around it: a driver's child or a dead driver's orphan)
    still runs."""
    if pid is None:  # never started
        return False
    try:
        shell = psutil.Process(pid)
        return shell.status() != psutil.STATUS_ZOMBIE and topic in shell.cmdline()
    except psutil.Error:  # gone (and reaped)
        return False


def stop(pid: int | None, topic: str) -> None:
    """Stop that locust and its processes (its own process group), if it runs."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not running(pid, topic):
            return
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:  # it ended in between
            return
        deadline = time.monotonic() + 10
        while running(pid, topic) and time.monotonic() < deadline:
            time.sleep(0.1)


def stop_left(kept: Path) -> None:
    """Stop the locust a run's dead driver left sending (``kept``: the driver checkpoint's ingest.json)."""
    if kept.exists():
        saved = json.loads(kept.read_text())
        stop(saved["pid"], saved["topic"])
