"""``skewbench profile``: where a run's CPU goes, per process role and thread, and what it forks.

``skewbench profile [run options] --out DIR`` makes one ``skewbench run`` into ``DIR/run`` on a local
cluster and, over its steady batches (from the end of the first to the end of the last), reads from
``/proc`` the CPU seconds of every thread of the run's Spark processes: the driver's JVM, the
executors and their Python workers.  Threads are grouped by role and by name as the kernel keeps it
(15 characters) with numbers folded ("Executor task l", "CN CompilerThre" for C1/C2, "GC ThreadN"), so
JIT compilers, GC, task threads and RPC show apart.  Where ``perf`` may trace the scheduler it also
counts the programs the machine exec'd during the run (Hadoop's ``chmod`` and ``readlink`` forks
without its native library).

Writes ``DIR/threads.csv`` (role, thread, seconds, per batch, share of all) and ``DIR/execs.csv``
(program, count, per batch), and prints both, largest first.  A process that both starts and ends
between the two readings is missed; none of the pipeline's does (Python workers are reused).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def role(cmdline: list[str]) -> str | None:
    line = " ".join(cmdline)
    if "CoarseGrainedExecutorBackend" in line:
        return "executor"
    if "org.apache.spark.deploy.SparkSubmit" in line:
        return "driver"
    return None


def spark_processes(app_id: str) -> dict[int, str]:
    """pid → role of this application's driver JVM (a child of this process), executors and their Python
    workers, and this (the driver's Python) process."""
    import psutil

    def cmdline(proc) -> list[str]:
        try:
            return proc.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied):  # ended meanwhile (a fork of Hadoop's, a git)
            return []

    found = {os.getpid(): "driver_python"}  # foreachBatch runs here
    found |= {p.pid: "driver" for p in psutil.Process().children(recursive=True) if role(cmdline(p)) == "driver"}
    for proc in psutil.process_iter(["cmdline"]):
        line = proc.info["cmdline"] or []
        if role(line) == "executor" and app_id in line:
            found[proc.pid] = "executor"
            found |= {child.pid: "python" for child in proc.children(recursive=True)}
    return found


def thread_times(pids: dict[int, str]) -> dict[tuple[int, int], tuple[str, str, float]]:
    """(pid, tid) → (role, thread name with numbers folded, CPU seconds) of every thread of ``pids``."""
    times = {}
    for pid, who in pids.items():
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:  # ended
            continue
        for tid in tids:
            try:
                name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
                fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            times[pid, int(tid)] = (who, re.sub(r"\d+", "N", name), (int(fields[11]) + int(fields[12])) / TICKS)
    return times


def thread_table(before: dict, after: dict, batches: int) -> pd.DataFrame:
    """CPU seconds between two :func:`thread_times` readings, per role and thread name."""
    rows = [(who, name, seconds - before.get(key, (who, name, 0.0))[2]) for key, (who, name, seconds) in after.items()]
    table = pd.DataFrame(rows, columns=["role", "thread", "seconds"]).groupby(["role", "thread"], as_index=False).sum()
    table["per_batch"] = table["seconds"] / max(batches, 1)
    table["share"] = table["seconds"] / table["seconds"].sum() if table["seconds"].sum() else 0.0
    return table.sort_values("seconds", ascending=False, ignore_index=True)


@dataclass
class ExecTrace:
    """``perf record`` of the scheduler's exec events on the whole machine, while it runs."""

    folder: Path
    _proc: subprocess.Popen | None = None

    def start(self) -> bool:
        if shutil.which("perf") is None:
            return False
        self._proc = subprocess.Popen(["perf", "record", "-q", "-a", "-e", "sched:sched_process_exec", "-o",
                                       str(self.folder / "perf.data")], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE)
        try:
            self._proc.wait(1.0)  # exited at once: not permitted here
        except subprocess.TimeoutExpired:
            return True
        self._proc = None
        return False

    def stop(self) -> pd.Series | None:
        """Programs exec'd while it ran, counted (None when perf could not trace)."""
        if self._proc is None:
            return None
        self._proc.send_signal(signal.SIGINT)
        self._proc.wait(30)
        script = subprocess.run(["perf", "script", "-i", str(self.folder / "perf.data"), "-F", "comm"],
                                capture_output=True, text=True)
        (self.folder / "perf.data").unlink(missing_ok=True)
        names = [line.strip() for line in script.stdout.splitlines() if line.strip()]
        return pd.Series(names, dtype=str).value_counts() if names else pd.Series(dtype=int)


@dataclass
class Profiler:
    """Reads the threads' CPU after the first batch and after the last (:func:`~skewbench.bench.spark.run.run`
    calls :meth:`observe` while it waits)."""

    app_id: str
    readings: list = field(default_factory=list)  # (batches done, thread times)
    table: pd.DataFrame | None = None  # by :meth:`finish`, over ``steady`` batches
    steady: int = 0

    def observe(self, batches: int) -> None:
        if batches >= 1 and not self.readings:
            self.readings.append((batches, thread_times(spark_processes(self.app_id))))

    def finish(self, batches: int) -> None:
        if not self.readings:  # a run of one batch: from its end, nothing steady to read
            raise ValueError("the run had no steady batch to profile: give more --messages than --batch-rows")
        first, before = self.readings[0]
        self.steady = batches - first
        self.table = thread_table(before, thread_times(spark_processes(self.app_id)), self.steady)


def profile(config, log) -> tuple[pd.DataFrame, pd.Series | None, int]:
    """One run of ``config`` (its ``out`` is the profile's folder: the run goes to ``out/run``), profiled:
    the threads' CPU, the programs exec'd (None where perf cannot trace) and the steady batches read."""
    from skewbench.bench.spark.run import RunError, check, local_cluster_dir, master_url, run, session

    out = Path(config.out)
    if local_cluster_dir() is None:
        raise RunError("skewbench profile reads the cluster's processes from /proc: it needs the local cluster "
                       "(make cluster-up), not VMs")
    if out.exists():
        raise RunError(f"--out {out} exists; results are never overwritten: pick another folder")
    check(config, need_cluster=False)
    out.mkdir(parents=True)
    spark = session(master_url(config), f"skewbench-profile-{config.app}-{config.scheme}-W{config.workers}")
    try:
        profiler = Profiler(spark.sparkContext.applicationId)
        with tempfile.TemporaryDirectory(prefix="skewbench-perf-") as tmp:
            trace = ExecTrace(Path(tmp))
            tracing = trace.start()
            try:
                summary = run(type(config)(**{**config.__dict__, "out": str(out / "run")}), log=log, spark=spark,
                              profiler=profiler)
            finally:
                execs = trace.stop() if tracing else None
    finally:
        spark.stop()
    threads = profiler.table
    threads.to_csv(out / "threads.csv", index=False)
    if execs is not None:
        batches = summary["batches"]
        execs.rename_axis("program").reset_index(name="count").assign(
            per_batch=lambda t: t["count"] / batches).to_csv(out / "execs.csv", index=False)
    return threads, execs, profiler.steady
