"""Sample CPU and memory of a node's Spark JVMs and Python workers with psutil, one CSV row per process.

Run by the ``metrics`` role on every node; ``ansible/collect.yml`` fetches the CSV with the logs.
A process belongs to the node if it shares the agent's network namespace (``--scope netns``: one
node per machine or namespace) or runs below the node's folder (``--scope dir``: nodes sharing a
machine on loopback addresses). Columns: ``time,node,pid,role,cpu_percent,rss_bytes,pss_bytes`` where
``cpu_percent`` is of one core since the previous sample (so a busy 4-thread JVM shows up to 400) and
PSS divides each shared page among its sharers: Python workers forked from one daemon share most of
their pages, so their RSS summed counts those many times over and their PSS summed does not.
PSS is read every ``--pss-every`` samples only (empty in the other rows): the kernel walks every page
of a process to compute it, 0.4 s of CPU per sample of the 114 processes of W = 100, a fifth of a
2-core machine at one sample per second, where RSS and CPU cost 0.015 s.
"""
import argparse
import csv
import itertools
import os
import time
from pathlib import Path

import psutil

# The first matching marker in a command line names the process's role.
ROLES = (
    ("org.apache.spark.deploy.master.Master", "master"),
    ("org.apache.spark.deploy.worker.Worker", "worker"),
    ("CoarseGrainedExecutorBackend", "executor"),
    ("org.apache.spark.deploy.SparkSubmit", "driver"),
    ("pyspark.daemon", "python_worker"),
    ("skewbench.bench.spark.daemon", "python_worker"),  # the pipeline's preloading daemon
    ("pyspark.worker", "python_worker"),
)

COLUMNS = ("time", "node", "pid", "role", "cpu_percent", "rss_bytes", "pss_bytes")


def role_of(cmdline):
    """The Spark role named by a command line, or None for any other process."""
    line = " ".join(cmdline)
    return next((role for marker, role in ROLES if marker in line), None)


def belongs(proc, scope, node_dir, netns):
    """Whether ``proc`` runs on this node (see the module docstring)."""
    if scope == "dir":
        return proc.cwd().startswith(node_dir)
    return os.stat(f"/proc/{proc.pid}/ns/net").st_ino == netns


def spawning(proc, role):
    """A JVM's child between fork and exec (as when an executor starts a program): it still shows its
    parent's command line and memory, which summed would count the JVM twice.  (A Python worker, forked
    by its daemon and never exec'd, keeps the daemon's command line for good: it counts.)"""
    parent = proc.parent()
    return role != "python_worker" and parent is not None and parent.cmdline() == proc.info["cmdline"]


def sample(tracked, node, scope, node_dir, netns, pss=True):
    """Rows for every Spark process of the node, with PSS if ``pss``; ``tracked`` keeps Process objects
    for cpu_percent."""
    now = time.time()
    rows = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            role = role_of(proc.info["cmdline"] or [])
            if role is None or not belongs(proc, scope, node_dir, netns) or spawning(proc, role):
                continue
            proc = tracked.setdefault(proc.pid, proc)  # the same object remembers the last CPU times
            memory = proc.memory_full_info() if pss else proc.memory_info()
            rows.append((f"{now:.3f}", node, proc.pid, role, proc.cpu_percent(), memory.rss,
                         memory.pss if pss else ""))
        except (psutil.Error, OSError):  # exited or not ours to read: skip it this round
            continue
    return rows


def retire_other_layout(out):
    """Move aside a CSV an older agent wrote with other columns: appending would mix two layouts."""
    if out.exists():
        with out.open() as f:
            header = f.readline().strip()
        if header != ",".join(COLUMNS):
            out.rename(out.with_name(f"resources-{int(time.time())}.csv.old"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node", required=True, help="node name written in every row")
    parser.add_argument("--dir", required=True, help="the node's folder; CSV goes to DIR/metrics/")
    parser.add_argument("--scope", choices=("netns", "dir"), default="netns", help="which processes are the node's")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--pss-every", type=int, default=10, help="read PSS every N samples (it costs CPU)")
    args = parser.parse_args()
    out = Path(args.dir, "metrics", "resources.csv")
    netns = os.stat("/proc/self/ns/net").st_ino
    tracked = {}
    retire_other_layout(out)
    new = not out.exists()
    with out.open("a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(COLUMNS)
        for n in itertools.count():
            writer.writerows(sample(tracked, args.node, args.scope, str(Path(args.dir).resolve()), netns,
                                    pss=n % args.pss_every == 0))
            f.flush()
            tracked = {pid: p for pid, p in tracked.items() if p.is_running()}
            time.sleep(args.interval)


if __name__ == "__main__":
    main()
