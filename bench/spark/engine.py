"""The engine's levers: settings that cut Spark's own cost per micro-batch, each on or off per run.

A micro-batch of the pipeline costs the engine seconds that no worker spends (issue 20); profiles of
Spark 4.3.0 on a local cluster showed where (``docs/engine.md``).  Each lever removes one such cost
without changing what the query computes, and is a set of session settings, so that runs with and
without it share one Spark application and one bench (the ``levers`` factor of a study file):

* ``fs-checkpoints`` — Spark's checkpoint files through Hadoop's ``FileSystem`` API instead of
  ``FileContext``, whose renames fork a ``readlink`` per file without Hadoop's native library;
* ``no-crc`` — the local file system without checksums (``RawLocalFileSystem``): no ``.crc`` file
  written, renamed and deleted beside every checkpoint and state file;
* ``no-fork`` — :file:`java/NioLocalFileSystem.java`: ``no-crc``, and permissions set through
  ``java.nio`` instead of a forked ``chmod`` per file and folder (one per state delta per worker and batch);
* ``unload-on-commit`` — a worker's state store closed at the end of its task: the next batch reads
  the worker's state back from its files, and in exchange no task starts with Spark's synchronous
  report of a loaded store to the driver, made under the executor-wide store lock;
* ``pack`` — the W workers share as many Spark tasks as the machine has cores (:func:`worker_tasks`)
  instead of a task each, when more workers than cores sleep their injected delay: each worker stays
  a group with its own state, and sleeps until the task's start plus its own work, as it would on a
  slot of its own (:func:`~skewbench.bench.spark.delay.burn`), so only the task's fixed costs — launch,
  deserialization, a state store, a Python call, a commit — are paid per core instead of per worker;
* ``defer-sleep`` — with ``pack``, a task's workers handle their rows at once and one closing group,
  last in the task, sleeps until the last of them is done (:func:`~skewbench.bench.spark.workers.close`):
  without it each worker's own handling waits for the sleep of the one before it, and the task's
  workers, one after another, add theirs to the batch (0.75 s at W = 100 on 2 cores).

A lever set is written ``default`` (:data:`KEPT`, the levers measured to help), ``none``, ``all`` or lever
names joined by ``+`` (``fs-checkpoints+no-crc``).
Hadoop caches one file system per scheme and JVM, so levers that replace it also turn that cache off
(``fs.file.impl.disable.cache``) for their runs only: every checkpoint manager then makes its own.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

JAVA_SOURCE = Path(__file__).with_name("java") / "NioLocalFileSystem.java"
NIO_FS_CLASS = "skewbench.hadoop.NioLocalFileSystem"


@dataclass(frozen=True)
class Lever:
    why: str
    settings: dict[str, str]  # Spark session settings (Hadoop's keys pass through to its configuration)
    packs: bool = False  # the query's layout: several workers per Spark task (:func:`worker_tasks`)
    defers: bool = False  # packed workers' sleep deferred to one closing group per task (:func:`closers`)


_UNCACHED = {"fs.file.impl.disable.cache": "true"}
LEVERS = {
    "fs-checkpoints": Lever(
        "checkpoint files through FileSystem, not FileContext (a readlink fork per rename)",
        {"spark.sql.streaming.checkpointFileManagerClass":
         "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"}),
    "no-crc": Lever(
        "no .crc checksum file beside every checkpoint and state file",
        {"fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
         "fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.RawLocalFs", **_UNCACHED}),
    "no-fork": Lever(
        "no-crc, and permissions through java.nio instead of a forked chmod per file",
        {"fs.file.impl": NIO_FS_CLASS, "fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.RawLocalFs",
         **_UNCACHED}),
    "pack": Lever(
        "the W workers in as many Spark tasks as the machine has cores, not one task each, when their delay "
        "is slept: a task's fixed cost is paid per core, not per worker",
        {}, packs=True),
    "defer-sleep": Lever(
        "with pack, a task's workers handle their rows at once and one closing group sleeps for them all: "
        "no worker's handling waits for another's sleep",
        {}, defers=True),
    "unload-on-commit": Lever(
        "each state store closed when its task commits (SPARK-51823): no store left loaded on the executor, "
        "so no locality preference and no report of it to the driver's coordinator per task",
        {"spark.sql.streaming.stateStore.unloadOnCommit": "true"}),
}
#: The levers measured to help, each against the set without it (docs/engine.md): the ``default`` set.
#: no-fork is not in it: in place of no-crc it was not distinguishable (95 % intervals over 3 seeds).
KEPT = ("fs-checkpoints", "no-crc", "pack", "defer-sleep")
#: Levers this process cannot apply, and why (no-fork when its class did not compile: :func:`lever_jar`).
UNAVAILABLE: dict[str, str] = {}
DEFAULT = "default"


class LeverError(ValueError):
    """An unknown lever set."""


def parse(spec: str) -> tuple[str, ...]:
    """The levers of a lever set (``default``, ``none``, ``all`` or names joined by ``+``), in :data:`LEVERS`
    order."""
    if spec == "none":
        return ()
    names = {"all": list(LEVERS), "default": list(KEPT)}.get(spec) or spec.split("+")
    unknown = [n for n in names if n not in LEVERS]
    if unknown or not names:
        raise LeverError(f"unknown lever {(unknown or [spec])[0]!r} in {spec!r}: give default, none, all or lever "
                         f"names joined by + ({', '.join(LEVERS)})")
    return tuple(n for n in LEVERS if n in names)


def canonical(spec: str) -> str:
    """The lever set's one spelling (``none``, ``all`` or its names in :data:`LEVERS` order; ``default`` is
    spelled out, so that a run names the levers it had)."""
    levers = parse(spec)
    return "none" if not levers else "all" if levers == tuple(LEVERS) else "+".join(levers)


def settings(spec: str) -> dict[str, str]:
    """The session settings of a lever set (a later lever's value of a key wins: ``no-fork`` over ``no-crc``)."""
    merged: dict[str, str] = {}
    for name in parse(spec):
        merged |= LEVERS[name].settings
    return merged


def worker_tasks(spec: str, workers: int, cores: int, delay_mode: str) -> int:
    """The Spark tasks (shuffle partitions) of the worker stage: one per worker, or with ``pack`` and slept
    delays one per core (a spun delay needs a core per worker: they cannot share a task)."""
    return min(workers, max(cores, 1)) if uses(spec, "packs") and delay_mode == "sleep" else workers


#: How a run realises its injected delay (:func:`work_mode`), named beside every Spark result.
WORK_MODES = ("none", "spin", "sleep", "emulated")


def work_mode(delay_ms: float, delay_mode: str, spec: str, workers: int, cores: int) -> str:
    """How a run on ``cores`` realises its injected delay (:func:`work_of` of its worker stage's tasks)."""
    return work_of(delay_ms, delay_mode, worker_tasks(spec, workers, cores, delay_mode), workers)


def work_of(delay_ms: float, delay_mode: str, tasks: int, workers: int) -> str:
    """``none`` without delay; ``spin``: every message burns its delay of CPU, as the papers' bolts do (real
    work, honest where each worker slot has a core); ``sleep``: each worker sleeps its batch's delay in a task
    of its own (wall time, no CPU); ``emulated``: workers packed in fewer tasks (``pack``, a task per core),
    whose finish times are computed from the delay as if each had a slot of its own."""
    if not delay_ms:
        return "none"
    if delay_mode == "spin":
        return "spin"
    return "emulated" if tasks < workers else "sleep"


def latency_source(work: str, spec: str) -> str:
    """``computed`` where a message's latency comes from a finish time the worker computed rather than lived
    (emulated work whose sleep a closing group takes, ``defer-sleep``), else ``observed``."""
    return "computed" if work == "emulated" and uses(spec, "defers") else "observed"


def uses(spec: str, flag: str) -> bool:
    """Whether a lever of the set changes the query as ``flag`` (a :class:`Lever` field: packs, defers) says."""
    return any(getattr(LEVERS[name], flag) for name in parse(spec))


def closers(spec: str, workers: int, tasks: int) -> int:
    """The closing groups of the worker stage: one per task when ``defer-sleep`` meets packed workers, else 0."""
    return tasks if uses(spec, "defers") and tasks < workers else 0


def apply(spark, spec: str) -> dict[str, str]:
    """Put the session in lever set ``spec`` for the next query: its settings on, every other lever's off."""
    missing = [name for name in parse(spec) if name in UNAVAILABLE]
    if missing:
        raise LeverError(f"lever {missing[0]} is unavailable here: {UNAVAILABLE[missing[0]]}")
    chosen = settings(spec)
    for key in {k for lever in LEVERS.values() for k in lever.settings} - set(chosen):
        spark.conf.unset(key)
    for key, value in chosen.items():
        spark.conf.set(key, value)
    return chosen


# -- the no-fork lever's Java class ----------------------------------------------------------------------------

def hadoop_jar() -> Path:
    """Hadoop's client API jar in this PySpark (what the class compiles against)."""
    import pyspark

    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    if not jars:
        raise RuntimeError(f"no hadoop-client-api jar in {Path(pyspark.__file__).parent / 'jars'}: reinstall pyspark")
    return jars[-1]


def lever_jar(cache: Path) -> Path | None:
    """The jar of :file:`java/NioLocalFileSystem.java`, compiled once per source and Hadoop version into
    ``cache``.  Java's compiler module ships in the runtime image (Debian's JRE too), so no JDK is needed;
    where it does not, the ``no-fork`` lever is :data:`UNAVAILABLE` (None, with a warning)."""
    source, api = JAVA_SOURCE.read_bytes(), hadoop_jar()
    digest = hashlib.sha256(source + api.name.encode()).hexdigest()[:12]
    jar = cache / f"skewbench-hadoop-{digest}.jar"
    if jar.exists():
        return jar
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="skewbench-javac-") as classes:
        compiled = subprocess.run(["java", "-m", "jdk.compiler/com.sun.tools.javac.Main", "--release", "17",
                                   "-nowarn", "-cp", str(api), "-d", classes, str(JAVA_SOURCE)],
                                  capture_output=True, text=True)
        if compiled.returncode != 0:
            UNAVAILABLE["no-fork"] = f"compiling {JAVA_SOURCE} failed: {compiled.stderr.strip()[:300]}"
            print(f"warning: {UNAVAILABLE['no-fork']}", file=sys.stderr, flush=True)
            return None
        part = jar.with_suffix(".part")
        with zipfile.ZipFile(part, "w") as archive:
            archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n\n")
            for path in sorted(Path(classes).rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        part.replace(jar)
    print(f"setup: compiled {JAVA_SOURCE.name} into {jar}", file=sys.stderr, flush=True)
    return jar
