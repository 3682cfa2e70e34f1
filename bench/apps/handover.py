"""A worker's side of moving keys while the stream runs (issue 21), after Megaphone (Hoffmann et al.,
VLDB 2019): the migration travels as data in the stream, and a key's records wait for its state.

When a routing version moves key *k* from worker *a* to worker *b* (:mod:`skewbench.migration`), the
batch that first routes with it sends *k*'s messages to *b* and tells both workers:

* *a* (``leaving``) takes *k*'s state out before it handles the batch (:meth:`App.take`) and sends it
  on as a :class:`Parcel`: removal and emission are one step of one batch, so they commit or replay
  together;
* *b* (``arriving``) holds *k*'s rows — this batch's and any later one's — until the parcel of that
  version from *a* comes; the parcel is delivered in the next batch (the driver re-injects what the
  workers emitted).  *b* installs it (:meth:`App.put`), ignores a second copy of it (a replayed
  delivery), and then handles the rows it held, in ``seq`` order with the rest of the batch.

With the hand-over ``ahead``, *a* is told one batch earlier (``handing``) and hands *k*'s state over at
the end of that batch, after handling its rows; the parcel then arrives with the orders of the version's
first batch, so *b* installs it before handling any of *k*'s rows, and nothing waits.

:func:`sort_out` is that batch step up to handling the rows, pure: the in-process pipeline
(:func:`~skewbench.bench.apps.local.run_in_process`, through :func:`handle`) and the Spark worker stage
call the same function.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Parcel:
    """The state of the keys ``fps`` (int64) that moved from worker ``src`` to ``dst`` with routing
    version ``version``: ``part`` is what :meth:`App.take` removed."""

    version: int
    src: int
    dst: int
    fps: np.ndarray
    part: object


@dataclass
class Desk:
    """What a worker keeps about migrations besides its app state: the parcels it awaits, by
    ``(version, src)``, and the rows it holds for their keys."""

    awaiting: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    held: pd.DataFrame | None = None

    def waiting_keys(self) -> np.ndarray:
        return np.concatenate(list(self.awaiting.values())) if self.awaiting else np.empty(0, np.int64)


@dataclass(frozen=True)
class Orders:
    """What a batch's routing versions tell one worker: ``leaving`` — ``(version, dst, fps)`` for the
    keys it hands over before handling its rows; ``arriving`` — ``(version, src, fps)`` for the keys it
    will receive; ``handing`` — ``(version, dst, fps)`` for the keys it hands over after its rows (the
    version announced for the next batch, :mod:`skewbench.migration`)."""

    leaving: tuple = ()
    arriving: tuple = ()
    handing: tuple = ()

    def __bool__(self) -> bool:
        return bool(self.leaving or self.arriving or self.handing)


@dataclass
class Handled:
    """One worker's batch step: the new app state, the rows to handle now (``seq`` order), their outputs
    once handled, the parcels it sends, and counts for the run's timeline (rows held after the step,
    rows released from holding, duplicate parcels ignored)."""

    state: object
    ready: pd.DataFrame
    sent: list[Parcel]
    held: int
    released: int
    duplicates: int
    outputs: pd.DataFrame | None = None


def sort_out(app, state, desk: Desk, worker: int, rows: pd.DataFrame, orders: Orders = Orders(),
             parcels: list[Parcel] = ()) -> Handled:
    """A worker's batch up to handling its rows (module docstring): hand over what leaves, install what
    arrived, hold the rows of keys still awaited and release the rest; ``desk`` is updated in place.
    The Spark worker stage burns the injected delay for the rows released, then handles them."""
    state, sent = hand_over(app, state, worker, orders.leaving)
    for version, src, fps in orders.arriving:
        desk.awaiting[int(version), int(src)] = np.asarray(fps, np.int64)
    duplicates = 0
    for parcel in parcels:
        if desk.awaiting.pop((parcel.version, parcel.src), None) is None:
            duplicates += 1  # delivered before, or never awaited: installing it would count it twice
        else:
            state = app.put(state, parcel.part)
    ready, released = _release(desk, rows)
    held = 0 if desk.held is None else len(desk.held)
    return Handled(state, ready, sent, held, released, duplicates)


def hand_over(app, state, worker: int, leaving) -> tuple[object, list[Parcel]]:
    """Take the state of the keys ``leaving`` (``(version, dst, fps)``) out of ``state``, as parcels."""
    sent = []
    for version, dst, fps in leaving:
        state, part = app.take(state, np.asarray(fps, np.int64), int(dst))
        sent.append(Parcel(int(version), worker, int(dst), np.asarray(fps, np.int64), part))
    return state, sent


def handle(app, state, desk: Desk, worker: int, rows: pd.DataFrame, orders: Orders = Orders(),
           parcels: list[Parcel] = ()) -> Handled:
    """:func:`sort_out`, :meth:`App.process` of the rows released, then the hand-over of the keys
    ``handing`` (the in-process pipeline's step)."""
    done = sort_out(app, state, desk, worker, rows, orders, parcels)
    if len(done.ready):
        done.state, done.outputs = app.process(done.state, done.ready)
    done.state, handed = hand_over(app, done.state, worker, orders.handing)
    done.sent += handed
    return done


def batch_orders(first, announced, width: int) -> list[Orders]:
    """What each of ``width`` workers is told in a batch: the orders of ``first``, the routing version
    (:class:`~skewbench.migration.Version`) whose first batch it is, and the hand-over of ``announced``,
    the version in force from the next batch (either may be None)."""
    orders = [Orders() for _ in range(width)]
    if first is not None and len(first.moves):
        leaving, arriving = _pairs(first, width)
        ahead = first.handover == "ahead"  # its state was handed over at the end of the batch before
        orders = [Orders(() if ahead else tuple(leaving[w]), tuple(arriving[w])) for w in range(width)]
    if announced is not None and len(announced.moves):
        handing, _ = _pairs(announced, width)
        orders = [replace(orders[w], handing=tuple(handing[w])) for w in range(width)]
    return orders


def _pairs(version, width: int) -> tuple[list, list]:
    """Per worker, one ``(version, other worker, keys)`` per pair of workers a key of ``version`` moves
    between: what leaves it, what arrives."""
    moves = version.moves
    pair = moves["src"].astype(np.int64) * width + moves["dst"]
    order = np.argsort(pair, kind="stable")  # by pair, the plan's order within one (a million moves: 0.1 s)
    pairs, starts = np.unique(pair[order], return_index=True)
    leaving = [[] for _ in range(width)]
    arriving = [[] for _ in range(width)]
    keys = np.split(moves["key"].view(np.int64)[order], starts[1:])
    for src, dst, mine in zip((pairs // width).tolist(), (pairs % width).tolist(), keys):
        leaving[src].append((version.number, dst, mine))
        arriving[dst].append((version.number, src, mine))
    return leaving, arriving


def _release(desk: Desk, rows: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The rows to handle now, in ``seq`` order, and how many of them had been held; rows of keys still
    awaited go (or stay) on the desk."""
    if desk.held is None and (not len(rows) or not desk.awaiting):
        return rows, 0  # nothing held, nothing to hold (the rows may be an empty frame without columns)
    earlier = 0 if desk.held is None else len(desk.held)
    parts = [part for part in (desk.held, rows) if part is not None and len(part)]
    both = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    wait = np.isin(both["fp"].to_numpy(np.int64), desk.waiting_keys())
    desk.held = both[wait].reset_index(drop=True) if wait.any() else None
    released = earlier - int(wait[:earlier].sum())
    ready = both[~wait]
    if released:
        ready = ready.sort_values("seq", kind="stable")
    return ready.reset_index(drop=True), released
