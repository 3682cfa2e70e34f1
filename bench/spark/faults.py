"""Faults injected into a run on the local cluster (``skewbench run --faults worker@0.4+5,broker@0.6+2``).

A fault is ``KIND@AT+DOWN``: when the share AT of the stream's messages is done, a node goes down for DOWN
seconds (or until the run ends, if sooner), then its daemons are started again by the node's own launchers
(``NODE/bin/*.sh start``, what ``make cluster-up`` runs), as an operator restoring a machine would.

* ``worker`` — the cluster's last worker node: every process in its network namespace (the worker daemon,
  the run's executor and its Python workers, the metrics agent) killed with SIGKILL at once, as a machine
  that loses power.  Spark reschedules the lost tasks on the workers left and recomputes lost shuffle
  output from the source's offsets; the state stores are read back from the checkpoint.
* ``broker`` — the broker node (``--ingest locust`` only): Redis killed with SIGKILL; what it acknowledged
  is in its append-only file.  locust's users and the source's readers wait for it (:mod:`skewbench.bench.broker`).
* ``driver`` — the run's driver (the Python process and its JVM) killed with SIGKILL by :class:`Supervisor`,
  which runs it as a child and after DOWN seconds starts a new driver on the run's checkpoints
  (:func:`~skewbench.bench.spark.run.resume`), as a cluster manager restarting a failed driver would; the
  master ends the dead driver's application and its executors, the new one gets its own.

Two faults strike a message, not a node, in the source (:mod:`~skewbench.bench.spark.source`), with no DOWN:

* ``lose`` — ``lose@AT``: the source drops the copies of the message at the share AT of the stream after
  routing it, as a network that loses a message would; it never reaches a worker, so the run's driver waits
  for it until its watchdog fails the run (:class:`~skewbench.bench.spark.run.Watchdog`).
* ``duplicate`` — ``duplicate@AT``: the source sends that message again in the next micro-batch (none when
  its batch is the stream's last), routed anew with that batch, as a sender that resends a message would; the
  driver counts it twice (``duplicates``) and the run fails.

The run's checks stay what they are: the final answer must equal the reference, and messages in = messages
counted.  Each fault's ``recovery_s`` in the run's summary (``faults``) is the time from the kill until the
end of the first micro-batch that began after it and ran at the pace of the batches before it (at most
:data:`PACE` × their median duration): the time the pipeline was slower than before.  ``None`` when no such
batch came before the run ended.

Node faults need the local cluster in network namespaces (a killed node is a namespace's processes); on
VMs, stop and start the instances instead.  Source faults run anywhere.
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.bench.spark.ingest import stop_left

SOURCE_KINDS = ("lose", "duplicate")  # what the source does to one message; no node goes down
KINDS = ("worker", "broker", "driver", *SOURCE_KINDS)
PACE = 1.5  # a batch no longer than this × the median before the fault is back at the old pace
SETTLE_S = 120  # the most a restarted node may take to be back (a worker registered with the master)
_NUMBER = r"[0-9]+\.?[0-9]*|\.[0-9]+"  # what float() reads of digits and one point ("1.2.3" is no number)
_SPEC = re.compile(rf"(?P<kind>[a-z]+)@(?P<at>{_NUMBER})(?:\+(?P<down>{_NUMBER}))?")


class FaultError(ValueError):
    """A fault that cannot be injected, with what to do instead."""


@dataclass(frozen=True)
class Fault:
    kind: str
    at: float  # the share of the stream's messages done when it strikes
    down: float  # seconds before the node's daemons are started again

    @classmethod
    def parse(cls, spec: str) -> Fault:
        found = _SPEC.fullmatch(spec.strip())
        if not found:
            raise FaultError(f"fault {spec!r} is not KIND@AT+DOWN (e.g. worker@0.4+5: the last worker node killed "
                             f"when 40 % of the messages are done, started again 5 s later)")
        kind, at, down = found["kind"], float(found["at"]), float(found["down"] or 0)
        if kind not in KINDS:
            raise FaultError(f"fault {spec!r}: unknown kind {kind!r}; give one of {', '.join(KINDS)}")
        if (found["down"] is None) != (kind in SOURCE_KINDS):
            raise FaultError(f"fault {spec!r}: a node fault is KIND@AT+DOWN, a source fault "
                             f"({', '.join(SOURCE_KINDS)}) KIND@AT without DOWN")
        if not 0 < at < 1 or down > 600:
            raise FaultError(f"fault {spec!r}: AT must be between 0 and 1 (a share of the messages) and DOWN at "
                             f"most 600 s")
        return cls(kind, at, down)

    @property
    def name(self) -> str:
        return f"{self.kind}@{self.at:g}" + ("" if self.kind in SOURCE_KINDS else f"+{self.down:g}")

    def message(self, messages: int) -> int:
        """The message a source fault strikes: the one at the share AT of the stream."""
        return min(messages - 1, int(self.at * messages))


def parse_all(specs: str) -> list[Fault]:
    """The faults of ``--faults`` ("" for none), in the order they strike."""
    faults = sorted((Fault.parse(s) for s in specs.split(",") if s.strip()), key=lambda f: f.at)
    if len(set(faults)) < len(faults):
        raise FaultError(f"{specs!r} names a fault twice")
    return faults


def source_options(specs: str, messages: int) -> dict[str, str]:
    """The source faults as the "skewbench" source's options (:mod:`~skewbench.bench.spark.source`): for each
    kind, the messages it strikes, comma-separated ("" for none)."""
    faults = parse_all(specs)
    return {kind: ",".join(str(f.message(messages)) for f in faults if f.kind == kind) for kind in SOURCE_KINDS}


def check(specs: str, ingest: str, cluster: Path | None) -> list[Fault]:
    """The faults, or FaultError when this run cannot have them."""
    faults = parse_all(specs)
    if all(f.kind in SOURCE_KINDS for f in faults):  # none, or only the source's: no node to reach
        return faults
    if any(f.kind == "broker" for f in faults) and ingest != "locust":
        raise FaultError("a broker fault needs --ingest locust: the generated stream never reads the broker")
    if cluster is None:
        raise FaultError("--faults needs the local cluster (make cluster-up): on VMs, stop and start the instances")
    state = json.loads((cluster / "state.json").read_text())
    if state["mode"] != "netns":
        raise FaultError("--faults needs the local cluster in network namespaces (it runs in loopback mode here: "
                         "make cluster-up as root on a machine that allows `ip netns add`)")
    if any(f.kind == "broker" for f in faults) and "broker" not in state["nodes"]:
        raise FaultError("a broker fault needs the cluster's broker: make cluster-up BROKER=1")
    return faults


@dataclass
class Strike:
    """One fault as it happened (wall-clock seconds)."""
    fault: str  # its spec (Fault.name)
    node: str
    killed_at: float
    processes: int  # killed
    restarted_at: float | None = None


class Injector:
    """Strikes each node fault when its share of the messages is done, and restarts its node DOWN s later.
    ``poll`` is called from the driver's wait loop (every 0.2 s), so it never blocks.  The strikes are kept
    in ``folder/faults.json`` (the driver's checkpoint), where a restarted driver finds them, and where
    :class:`Supervisor` adds the driver's."""

    def __init__(self, faults: list[Fault], cluster: Path | None, folder: Path, log=None):
        self.faults = [f for f in faults if f.kind in ("worker", "broker")]
        self.cluster, self.path, self.log = cluster, folder / "faults.json", log
        self.strikes = load_strikes(self.path)

    @property
    def _state(self) -> dict:
        return json.loads((self.cluster / "state.json").read_text())

    def node_of(self, kind: str) -> str:
        if kind == "broker":
            return "broker"
        return max((n for n in self._state["nodes"] if n.startswith("worker")), key=lambda n: int(n[6:]))

    def poll(self, done: float) -> None:
        now = time.time()
        for strike in self._down():
            if now >= strike.killed_at + Fault.parse(strike.fault).down:
                self._restart(strike)
        struck = {s.fault for s in self.strikes}
        for fault in self.faults:
            if fault.at <= done and fault.name not in struck:
                self._strike(fault)

    def _strike(self, fault: Fault) -> None:
        node = self.node_of(fault.kind)
        pids = subprocess.run(["ip", "netns", "pids", self._state["nodes"][node]["netns"]], capture_output=True,
                              text=True, check=True).stdout.split()
        for pid in pids:  # the namespace holds this cluster's node and nothing else
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.strikes.append(Strike(fault.name, node, time.time(), len(pids)))
        save_strikes(self.path, self.strikes)
        self._say(f"fault {fault.name}: killed {node} ({len(pids)} processes)")

    def _restart(self, strike: Strike) -> None:
        netns = self._state["nodes"][strike.node]["netns"]  # a launcher of an SSH-reached node (up --ssh) runs
        inside = ["ip", "netns", "exec", netns] if netns else []  # where its sshd does: in the namespace
        for launcher in sorted((self.cluster / strike.node / "bin").glob("*.sh")):
            subprocess.run([*inside, str(launcher), "start"], capture_output=True, text=True, check=True)
        strike.restarted_at = time.time()
        save_strikes(self.path, self.strikes)
        self._say(f"fault {strike.fault}: {strike.node} started again")

    def restore(self) -> None:
        """Start again every struck node still down (also when the run failed)."""
        for strike in self._down():
            self._restart(strike)

    def _down(self) -> list[Strike]:
        """The nodes struck and not started again (a driver is started again by :class:`Supervisor`)."""
        return [s for s in self.strikes if s.restarted_at is None and s.node != "driver"]

    def settle(self, on_time: bool = False, timeout: float = SETTLE_S) -> None:
        """Start again every struck node still down — now, or (``on_time``) when its DOWN is over — then wait
        until every struck node is back (a worker ALIVE at the master): at a run's end, so that the cluster
        is left as it was found; before a restarted driver asks for its slots, since the driver that struck
        the node died before it could start it again."""
        for strike in self._down() if on_time else ():
            time.sleep(max(0.0, strike.killed_at + Fault.parse(strike.fault).down - time.time()))
        self.restore()
        deadline = time.monotonic() + timeout
        while any(s.node.startswith("worker") for s in self.strikes) and not self._all_back():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the nodes struck by --faults were not back {timeout:.0f} s after the run: "
                                   f"make cluster-status, then make cluster-up")
            time.sleep(1)

    def _all_back(self) -> bool:
        from skewbench.bench.spark.run import RunError, master_status

        state = self._state
        try:
            alive = {w["host"] for w in master_status(state["nodes"]["master"]["ip"])["workers"]
                     if w["state"] == "ALIVE"}
        except RunError:
            return False
        return all(state["nodes"][s.node]["ip"] in alive for s in self.strikes if s.node.startswith("worker"))

    def summary(self, batches: pd.DataFrame) -> list[dict]:
        """Each strike with its recovery time (:func:`recovery`), for the run's summary."""
        return [{"fault": s.fault, "node": s.node, "killed_at": s.killed_at, "processes_killed": s.processes,
                 "down_s": (s.restarted_at or np.nan) - s.killed_at, "recovery_s": recovery(batches, s.killed_at)}
                for s in self.strikes]

    def _say(self, line: str) -> None:
        if self.log is not None:
            print(line, file=self.log, flush=True)


def load_strikes(path: Path) -> list[Strike]:
    return [Strike(**s) for s in json.loads(path.read_text())] if path.exists() else []


def save_strikes(path: Path, strikes: list[Strike]) -> None:
    part = path.with_suffix(".part")
    part.write_text(json.dumps([asdict(s) for s in strikes], indent=1))
    part.replace(path)


class Supervisor:
    """A run with driver faults: the driver runs as a child process (``python -m skewbench.bench.spark.run``);
    when a driver fault's share of the messages is done (:func:`share_done`) its process group — the Python
    driver and its JVM — is killed with SIGKILL, and DOWN seconds later a new driver resumes the run from its
    checkpoints (``--resume DIR.partial``).  locust, in a session of its own, goes on sending meanwhile
    (:mod:`~skewbench.bench.spark.ingest`).  :meth:`run` returns the last driver's exit code."""

    def __init__(self, config, log):
        from skewbench.bench.spark.run import driver_folder

        self.config, self.log = config, log
        self.folder = Path(config.out).with_name(Path(config.out).name + ".partial")
        self.driver = driver_folder(self.folder)
        self.path = self.driver / "faults.json"

    def run(self) -> int:
        from skewbench.bench.spark.run import local_cluster_dir

        with tempfile.TemporaryDirectory(prefix="skewbench-driver-") as scratch:
            config = Path(scratch) / "config.json"
            config.write_text(json.dumps(asdict(self.config)))
            child = self._start(str(config))
            try:
                for fault in (f for f in parse_all(self.config.faults) if f.kind == "driver"):
                    while child.poll() is None and share_done(self.folder) < fault.at:
                        time.sleep(0.2)
                    if child.poll() is not None:  # it ended (done, or failed) first
                        break
                    killed_at = self._kill(child, fault)
                    time.sleep(max(0.0, killed_at + fault.down - time.time()))
                    strikes = load_strikes(self.path)
                    strikes[-1].restarted_at = time.time()
                    save_strikes(self.path, strikes)  # before the new driver reads them
                    child = self._start("--resume", str(self.folder))
                code = child.wait()
                if code:  # a driver that failed may have left a struck node down, and locust sending
                    Injector([], local_cluster_dir(), self.driver).restore()
                    stop_left(self.driver / "ingest.json")
                return code
            except BaseException:  # Ctrl-C reaches only this process: the driver stops as it would have
                if child.poll() is None:
                    os.killpg(child.pid, signal.SIGINT)
                    child.wait(60)
                stop_left(self.driver / "ingest.json")  # (when no driver ran: between a kill and a restart)
                raise

    def _start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "skewbench.bench.spark.run", *args], stdout=subprocess.DEVNULL,
                                stderr=self.log, start_new_session=True)  # its own group: the JVM dies with it

    def _kill(self, child: subprocess.Popen, fault: Fault) -> float:
        import psutil  # the driver's environment has it (.venv-cluster)

        driver = psutil.Process(child.pid)
        processes = [p for p in [driver, *driver.children(recursive=True)] if _group(p) == child.pid]  # not locust
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        killed_at = time.time()
        save_strikes(self.path, [*load_strikes(self.path), Strike(fault.name, "driver", killed_at, len(processes))])
        print(f"fault {fault.name}: killed the driver ({len(processes)} processes)", file=self.log, flush=True)
        return killed_at


def _group(process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except ProcessLookupError:
        return None


def share_done(folder: Path) -> float:
    """The share of the stream's messages the run in ``folder`` has done, from its driver's checkpoint: its
    batches end at increasing seqs (the generated stream)."""
    from skewbench.bench.spark.run import driver_folder

    kept = sorted(driver_folder(folder).glob("batch-*.pickle"))
    run = driver_folder(folder) / "run.json"
    if not kept or not run.exists():
        return 0.0
    return (_last_seq(kept[-1], kept[-1].stat().st_mtime_ns) + 1) / json.loads(run.read_text())["config"]["messages"]


@functools.lru_cache(maxsize=4)
def _last_seq(batch: Path, mtime_ns: int) -> int:
    """The last message a kept batch did (read once per file: :func:`share_done` is asked every 0.2 s)."""
    from skewbench.bench.spark.latency import seqs

    records = pickle.loads(batch.read_bytes())
    return max((int(seqs(r["messages"])[-1]) for r in records if r["messages"]["count"]), default=-1)


def recovery(batches: pd.DataFrame, killed_at: float) -> float | None:
    """Seconds from ``killed_at`` to the end of the first batch that began after it and took at most
    :data:`PACE` × the median duration of the batches before it; None if none did (or none came before)."""
    before = batches[batches["started"] + batches["duration"] <= killed_at]
    if before.empty:
        return None
    pace = PACE * float(before["duration"].median())
    after = batches[(batches["started"] >= killed_at) & (batches["duration"] <= pace)]
    if after.empty:
        return None
    return float(after["started"].iloc[0] + after["duration"].iloc[0] - killed_at)
