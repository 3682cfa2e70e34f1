"""The run's stream, shared by the driver with every executor as two memory-mapped Arrow files.

A source task may run in any Python worker of an executor, and each such process used to unpickle
its own copy of the stream and keep it for the rest of the run: at 15M messages, 0.6 GB per process
and 3.5 GB over a run at W = 100.  Mapped from files, the columns are pages of the OS's file cache,
shared by every process of the executor and dropped under memory pressure; numpy views them
without a copy.

``NAME.messages.arrow`` holds one row per message (``ids``, ``fps``, ``clock``, ``split_ids`` if
the stream has them, the payload columns as ``payload.COLUMN``) and the stream's name and rate in
its schema metadata; ``NAME.keys.arrow`` one row per key id (``label``, the text the ``key``
column carries, and ``fp``).  In the stream read back, ``labels`` is that Arrow string array.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

from skewbench.bench.apps.base import key_labels
from skewbench.stream import Stream

PAYLOAD = "payload."

_FOLDER: tempfile.TemporaryDirectory | None = None  # removed when the driver process exits
PREFIX = "skewbench-streams-"  # then the driver's PID: a folder whose driver was killed is removed later


def write(stream: Stream, prefix: Path) -> list[Path]:
    """The two files of ``stream`` (``PREFIX.messages.arrow``, ``PREFIX.keys.arrow``)."""
    columns = {"ids": stream.ids, "fps": stream.fps, "clock": stream.clock}
    if stream.split_ids is not None:
        columns["split_ids"] = stream.split_ids
    columns |= {PAYLOAD + name: values for name, values in stream.payload.items()}
    messages = pa.table(columns).replace_schema_metadata(
        {"stream": json.dumps({"name": stream.name, "rate": stream.rate})})
    keys = pa.table({"label": pa.array(key_labels(stream), pa.string()), "fp": stream.key_fps})
    paths = [prefix.with_name(prefix.name + ".messages.arrow"), prefix.with_name(prefix.name + ".keys.arrow")]
    for table, path in zip((messages, keys), paths):
        with pa.OSFile(str(path), "wb") as file, pa.ipc.new_file(file, table.schema) as writer:
            writer.write_table(table)
    return paths


def _mapped(path: str) -> pa.Table:
    return pa.ipc.open_file(pa.memory_map(path)).read_all()


def _array(table: pa.Table, name: str) -> np.ndarray:
    """A column as numpy, a view of the mapped file for numbers (strings get copied)."""
    column = table.column(name)
    return (column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()).to_numpy(zero_copy_only=False)


def read(messages_path: str, keys_path: str) -> Stream:
    """The stream :func:`write` wrote, its columns mapped (read-only), ready to route."""
    messages, keys = _mapped(messages_path), _mapped(keys_path)
    meta = json.loads(messages.schema.metadata[b"stream"])
    payload = {name[len(PAYLOAD):]: _array(messages, name) for name in messages.column_names
               if name.startswith(PAYLOAD)}
    split_ids = _array(messages, "split_ids") if "split_ids" in messages.column_names else None
    stream = Stream(meta["name"], _array(messages, "ids"), keys.column("label").combine_chunks(),
                    split_ids=split_ids, payload=payload, rate=meta["rate"])
    # Stream's cached properties, from the file instead of recomputed into private memory.
    vars(stream).update(fps=_array(messages, "fps"), clock=_array(messages, "clock"),
                        key_fps=_array(keys, "fp"))
    return stream


def share(spark, stream: Stream) -> str:
    """Write ``stream`` and add its files to the application's files, which every executor fetches
    once; returns the name :func:`~skewbench.bench.spark.source.stream_of` finds them under.

    The files must outlive the run: an executor fetches every file the application added when it
    first gets a task, also a finished run's.  So they live in a folder of the driver process, and
    every run's name is new (Spark refuses a second file under a name it already serves)."""
    global _FOLDER
    if _FOLDER is None:
        remove_left()
        _FOLDER = tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-")
    name = f"stream-{uuid.uuid4().hex}"
    for path in write(stream, Path(_FOLDER.name) / name):
        spark.sparkContext.addFile(str(path))
    return name


def remove_left(folder: Path = Path(tempfile.gettempdir())) -> None:
    """Remove the stream folders of drivers that are gone: a driver killed (``--faults driver@…``, or by
    its user) leaves its folder behind."""
    import psutil

    for left in folder.glob(f"{PREFIX}*-*"):
        pid = left.name.removeprefix(PREFIX).split("-")[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(left, ignore_errors=True)


def fetched(name: str) -> Stream:
    """In an executor: the stream the driver shared under ``name`` (:func:`share`)."""
    from pyspark import SparkFiles

    return read(SparkFiles.get(name + ".messages.arrow"), SparkFiles.get(name + ".keys.arrow"))
