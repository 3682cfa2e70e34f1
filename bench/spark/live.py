"""Live routing on the cluster (issue 21): the controller runs on the driver, and what it decides reaches
the sources as files that are written once and named by what they are for.

In the run's checkpoint folder, ``routing/``:

* ``version-NNNNNN.pickle`` — routing version NNNNNN (:class:`~skewbench.migration.Version`), published by
  the driver in ``foreachBatch`` of the batch before its first; ``latest`` — the newest one's number;
* ``plan-NNNNNN.pickle`` — a fluid migration's :class:`~skewbench.migration.Plan`, whose first step is
  version NNNNNN: its steps' files refer to it;
* ``announce-NNNNNN.pickle`` — with the hand-over ``ahead``, version NNNNNN's moves (no router), published
  two batches before its first, so that the batch between hands its keys' state over; ``announced`` — its
  number, while the next batch is that batch;
* ``parcels-NNNNNN.pickle`` — the state that workers handed over in batch NNNNNN − 1
  (:class:`~skewbench.bench.apps.handover.Parcel`), delivered with batch NNNNNN.

The source records the version in the offset that Spark logs before a batch runs (``batch``, ``version``,
``announced``:
:mod:`~skewbench.bench.spark.source`), never "the latest" at read time, so a replayed batch routes and
delivers exactly as it did the first time.  Source 0 sends each worker its orders and parcels as a
control bundle (:func:`control_bundles`).
"""

from __future__ import annotations

import io
import pickle
import uuid
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from skewbench.bench.apps.handover import Orders, batch_orders
from skewbench.bench.spark.latency import handled, seqs
from skewbench.migration import Controller, Plan, Version

#: The ``source`` of a control bundle (a worker's orders and parcels for the batch).
CONTROL = -1


def folder_of(checkpoint: Path) -> Path:
    """The run's routing folder, absolute: the executors read it from their own working directories."""
    path = (checkpoint / "routing").absolute()
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_once(path: Path, data: bytes) -> None:
    """Write ``path`` unless it exists: a replayed batch decides the same, and the first copy stands."""
    if path.exists():
        return
    part = path.with_name(f"{path.name}.{uuid.uuid4().hex}")
    part.write_bytes(data)
    part.replace(path)


def latest(folder: str) -> int:
    """The newest version's number (what the source records in the next batch's offset)."""
    try:
        return int((Path(folder) / "latest").read_text())
    except FileNotFoundError:
        return 0


def announced(folder: str) -> int | None:
    """The newest announced version's number, if any (the source records it in the next batch's offset)."""
    try:
        return int((Path(folder) / "announced").read_text())
    except FileNotFoundError:
        return None


@lru_cache(maxsize=4)
def _version_bytes(folder: str, number: int) -> bytes:
    return (Path(folder) / f"version-{number:06d}.pickle").read_bytes()


@lru_cache(maxsize=2)
def _plan(folder: str, number: int) -> Plan:
    return pickle.loads((Path(folder) / f"plan-{number:06d}.pickle").read_bytes())


class _Pickler(pickle.Pickler):
    """Pickles a version with its fluid migration's :class:`~skewbench.migration.Plan` as a reference to
    the plan's own file, written once: a step's file then holds its moves, not every key of the plan."""

    def __init__(self, file, folder: Path):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.folder = folder

    def persistent_id(self, obj):
        if not isinstance(obj, Plan):
            return None
        write_once(self.folder / f"plan-{obj.number:06d}.pickle", pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))
        return obj.number


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, folder: str):
        super().__init__(file)
        self.folder = folder

    def persistent_load(self, number: int) -> Plan:
        return _plan(self.folder, number)  # one copy per process, shared by the plan's steps


def version(folder: str, number: int) -> Version:
    """Version ``number``, with a router of its own (routing may change a router's estimates)."""
    return _Unpickler(io.BytesIO(_version_bytes(folder, number)), folder).load()


def parcels(folder: str, batch: int) -> list:
    path = Path(folder) / f"parcels-{batch:06d}.pickle"
    return pickle.loads(path.read_bytes()) if path.exists() else []


def control_bundles(folder: str, batch: int, first_of: int | None, width: int, announced: int | None = None):
    """Source 0's control bundles for ``batch``: every worker's orders (when the batch is the first of
    version ``first_of``, or hands over for version ``announced``, in force from the next batch) and
    the parcels addressed to it; None when no worker has any."""
    from skewbench.bench.spark.source import BUNDLE_ARROW

    ahead = pickle.loads((Path(folder) / f"announce-{announced:06d}.pickle").read_bytes()) \
        if announced is not None else None
    orders = batch_orders(version(folder, first_of) if first_of is not None else None, ahead, width)
    delivered = parcels(folder, batch)
    rows = [(w, pickle.dumps((orders[w], [p for p in delivered if p.dst == w]))) for w in range(width)
            if orders[w] or any(p.dst == w for p in delivered)]
    if not rows:
        return None
    return pa.RecordBatch.from_arrays([pa.array([w for w, _ in rows], pa.int32()),
                                       pa.array([CONTROL] * len(rows), pa.int32()),
                                       pa.array([blob for _, blob in rows], pa.binary())], schema=BUNDLE_ARROW)


def orders_and_parcels(bundles: pd.DataFrame) -> tuple[Orders, list]:
    """A worker's control bundle (at most one per batch), unpacked."""
    found = [pickle.loads(blob) for blob in bundles["bundle"]]
    return found[0] if found else (Orders(), [])


def received(rows: pd.DataFrame) -> dict:
    """The messages a worker received in a batch (before any wait for state), compactly (:func:`handled`)."""
    seq = np.unique(rows["seq"].to_numpy(np.int64)) if len(rows) else np.empty(0, np.int64)
    return handled(seq, np.zeros(min(len(seq), 1)))


class Publisher:
    """The driver's side: after each batch, what the workers received goes to the controller, whose
    next version and the workers' parcels are published for the next batch; one timeline row a batch."""

    def __init__(self, folder: Path, controller: Controller, stream):
        self.folder, self.controller, self.stream = folder, controller, stream
        self.rows: list[dict] = []
        self._publish(controller.current)

    def _publish(self, v: Version, kind: str = "version", pointer: str = "latest") -> None:
        data = io.BytesIO()
        _Pickler(data, self.folder).dump(v)
        write_once(self.folder / f"{kind}-{v.number:06d}.pickle", data.getvalue())
        (self.folder / f"{pointer}.part").write_text(str(v.number))
        (self.folder / f"{pointer}.part").replace(self.folder / pointer)

    def after_batch(self, batch: int, records: list[dict]) -> None:
        got = [(seqs(r["received"]), r["worker"]) for r in records if "received" in r]
        seq = np.concatenate([s for s, _ in got]) if got else np.empty(0, np.int64)
        workers = np.concatenate([np.full(len(s), w) for s, w in got]) if got else np.empty(0, np.int64)
        order = np.argsort(seq, kind="stable")  # arrival order, for a router that learns from it (gedik-*)
        fps = self.stream.fps[seq[order]]
        now = float(self.stream.clock[seq[order][-1]]) if len(seq) else 0.0
        current = self.controller.current
        if current.router.adaptive:  # it plans from what it routed, as the simulator's router does
            current.router.route_many(fps, self.stream.clock[seq[order]])
        self.controller.observe(fps, workers[order], now)
        nxt = self.controller.after(batch)
        if nxt is not current:
            self._publish(nxt)
        if self.controller.announced is not None:  # its moves only: the router in force is published later
            self._publish(replace(self.controller.announced, router=None), "announce", "announced")
        else:  # the next batch hands nothing over
            (self.folder / "announced").unlink(missing_ok=True)
        sent = [p for r in records for p in r.get("parcels", ())]
        handed = pickle.dumps(sent) if sent else b""
        if sent:
            write_once(self.folder / f"parcels-{batch + 1:06d}.pickle", handed)
        loads = np.bincount(workers, minlength=current.workers)[:current.workers]
        self.rows.append({"batch": batch, "version": current.number, "workers": current.workers,
                          "max_over_mean": float(loads.max() / loads.mean()) if loads.sum() else float("nan"),
                          "moved_keys": len(current.moves) if current.first_batch == batch else 0,
                          "moved_bytes": len(handed),
                          "parcels": len(sent), "held": sum(r.get("held", 0) for r in records),
                          "released": sum(r.get("released", 0) for r in records),
                          "duplicates": sum(r.get("duplicates", 0) for r in records),
                          "migrating_seconds": max((r.get("migrating_seconds", 0.0) for r in records), default=0.0),
                          "plan_seconds": current.plan_seconds if current.first_batch == batch else 0.0})

    def timeline(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)

    def migrations(self, batches: pd.DataFrame | None = None) -> list[dict]:
        """One row per migration: from the batch that hands its first keys over to the batch that installs
        its last parcels; keys and bytes moved, the most rows held meanwhile, and its seconds when ``batches``
        (``batch``, ``started``, ``duration``: :func:`~skewbench.bench.spark.summary.batch_table`) has them."""
        timeline = self.timeline().set_index("batch")
        found = []
        for v in self.controller.versions:
            if not (len(v.moves) and v.step == 1):
                continue
            steps = [w for w in self.controller.versions
                     if w.first_batch in range(v.first_batch, v.first_batch + v.steps) and len(w.moves)]
            first, last = v.handed_over_in, steps[-1].installed_in
            during = timeline.loc[first:last]
            row = {"version": v.number, "reason": v.reason, "workers": v.workers, "steps": v.steps,
                   "first_batch": first, "last_batch": last, "keys": int(sum(len(w.moves) for w in steps)),
                   "bytes": int(during["moved_bytes"].sum()), "held_max": int(during["held"].max()),
                   "plan_seconds": v.plan_seconds, "seen_keys": v.seen_keys}
            if batches is not None and {first, last} <= set(batches["batch"]):
                at = batches.set_index("batch")
                row["seconds"] = float(at.loc[last, "started"] + at.loc[last, "duration"] - at.loc[first, "started"])
            found.append(row)
        return found

    def summary(self, batches: pd.DataFrame | None = None) -> dict:
        moving = [v for v in self.controller.versions if len(v.moves)]
        return {"versions": len(self.controller.versions), "migrations": sum(v.step == 1 for v in moving),
                "migrated_keys": int(sum(len(v.moves) for v in moving)),
                "migrated_bytes": int(sum(r["moved_bytes"] for r in self.rows)),
                "final_workers": self.controller.current.workers,
                "plans_skipped": len(self.controller.skipped),
                "held_max": int(max((r["held"] for r in self.rows), default=0)),
                "migration_list": self.migrations(batches)}
