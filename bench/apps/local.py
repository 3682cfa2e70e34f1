"""The pipeline in one process, without Spark: sources → routers → fan-out → workers → aggregator.

:func:`run_in_process` does what the Spark pipeline does, batch by batch, with the same objects:
the stream is split to S sources exactly as the simulator splits it
(:func:`~skewbench.sources.source_of_each_message`), each source routes its share of a
micro-batch with its own scheme object (one shared object, in arrival order, for schemes with
``coupling = "global"``), :meth:`App.fan_out` adds the worker copies, and every worker's rows of
the batch go through :meth:`App.process` in ``seq`` order, with the state pickled in between as
Spark would.  It is the "single process with routing" answer the Spark run is compared with.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from skewbench.bench.apps.base import App, copy_rows, stream_rows
from skewbench.bench.apps.handover import Desk, batch_orders, handle
from skewbench.migration import Live
from skewbench.scheme import Scheme, make_scheme
from skewbench.sources import prepare_scheme, source_of_each_message, source_routers
from skewbench.stream import Stream


@dataclass
class LocalRun:
    """The aggregator's answer plus what a benchmark reports about the run."""

    answer: object
    outputs: pd.DataFrame = field(repr=False)
    states: list = field(repr=False)
    stores: np.ndarray  # store rows per worker (the load a scheme balances)
    probes: np.ndarray  # probe rows per worker (the read fan-out the scheme costs)
    counters: int  # sum over workers of App.state_entries
    versions: list = field(default_factory=list, repr=False)  # the routing versions (skewbench.migration.Version)
    timeline: pd.DataFrame | None = field(default=None, repr=False)  # one row per micro-batch


def run_in_process(app: App, stream: Stream, scheme: str | Scheme, workers: int, sources: int = 1,
                   batch: int = 1_000, *, split: str = "shuffle", seed: int = 0, params: dict | None = None,
                   plan_prefix: int | None = None, pickle_states: bool = True, rebalance_every: int = 0,
                   schedule: dict[int, int] | None = None, migration: str = "all-at-once",
                   fluid_keys: int = 0, handover: str = "hold") -> LocalRun:
    """Run ``app`` on ``stream`` routed by ``scheme`` (a name, or a prepared prototype router).

    ``batch`` messages (in stream order, all sources together) form one micro-batch.  Routing may change
    while it runs (:mod:`skewbench.migration`): an adaptive scheme rebalances every ``rebalance_every``
    batches (starting from its hash, not from a plan on a prefix), ``schedule`` (``{batch: W}``) changes
    the number of workers, and the keys' state moves between workers as the Spark pipeline moves it
    (:mod:`~skewbench.bench.apps.handover`), ``migration`` ``all-at-once`` or ``fluid`` (at most
    ``fluid_keys`` keys out of and into a worker per batch), ``handover`` ``hold`` or ``ahead``.
    """
    stream = app.prepare(stream)
    app.check(stream)
    if isinstance(scheme, str):  # an adaptive scheme whose routing changes starts from its hash, as simulated
        fresh = make_scheme(scheme, workers, seed=seed, **(params or {}))
        adapts_live = fresh.adaptive and (rebalance_every or schedule)
        scheme = fresh if adapts_live else prepare_scheme(scheme, workers, stream, seed=seed, params=params,
                                                   plan_prefix=plan_prefix)
    if scheme.workers != workers:
        raise ValueError(f"the scheme has {scheme.workers} workers, the run {workers}")
    changes = Live(batch, rebalance_every, dict(schedule or {}), migration, fluid_keys, handover,
                   app.probes_read_final_state)
    controller = changes.controller(scheme, stream.messages, rescale=lambda w: prepare_scheme(
        scheme.name, w, stream, seed=seed, params=params, plan_prefix=plan_prefix))
    width = changes.widest(workers)
    source = source_of_each_message(stream, sources, split)
    rows = stream_rows(stream, app, source)
    fps, clock = stream.fps, stream.clock
    states, desks = [app.new_state(w) for w in range(width)], [Desk() for _ in range(width)]
    stores, probes = np.zeros(width, dtype=np.int64), np.zeros(width, dtype=np.int64)
    outputs, parcels, timeline = [], [], []
    version = controller.current
    routers = source_routers(version.router, sources)
    for b, lo in enumerate(range(0, stream.messages, batch)):
        hi = min(lo + batch, stream.messages)
        copies = _copies(app, version.router, routers, rows, fps[lo:hi], clock[lo:hi], source[lo:hi], lo, sources)
        worker = copies["worker"].to_numpy()
        is_store = (copies["role"] == "store").to_numpy()
        stores += np.bincount(worker[is_store], minlength=width)
        probes += np.bincount(worker[~is_store], minlength=width)
        announced = controller.announced  # ahead: in force from the next batch, handed over at this one's end
        orders = batch_orders(version if version.first_batch == b else None, announced, width)
        bounds = np.searchsorted(worker, np.arange(width + 1))
        delivered, parcels = parcels, []
        held = released = 0
        for w in range(width):
            mine = copies.iloc[bounds[w]:bounds[w + 1]].reset_index(drop=True)
            inbox = [p for p in delivered if p.dst == w]
            if not (len(mine) or inbox or orders[w] or desks[w].held is not None):
                continue
            state = pickle.loads(pickle.dumps(states[w])) if pickle_states else states[w]
            done = handle(app, state, desks[w], w, mine, orders[w], inbox)
            states[w], held, released = done.state, held + done.held, released + done.released
            parcels += done.sent
            outputs.append(done.outputs)
        controller.observe(copies["fp"].to_numpy(), worker, float(clock[hi - 1]))  # a probed key has state too
        timeline.append({"batch": b, "version": version.number, "workers": version.workers,
                         "moved_keys": len(version.moves) if version.first_batch == b else 0,
                         "held": held, "released": released})
        if controller.after(b) is not version:
            version = controller.current
            routers = source_routers(version.router, sources)
    if parcels or any(d.held is not None for d in desks):
        raise RuntimeError("a migration was still in flight after the last batch")  # the controller prevents it
    for w in range(width):
        states[w], out = app.finish(states[w])
        outputs.append(out)
    outputs = pd.concat([o for o in outputs if o is not None], ignore_index=True)
    answer = app.combine(outputs, [app.driver_state(s) for s in states])  # what the Spark driver gets
    return LocalRun(answer=answer, outputs=outputs, states=states, stores=stores, probes=probes,
                    counters=int(sum(app.state_entries(s) for s in states)), versions=controller.versions,
                    timeline=pd.DataFrame(timeline))


def _copies(app, router, routers, rows, fps, clock, source, lo, sources) -> pd.DataFrame:
    """One micro-batch's worker copies, sorted by worker then ``seq``: each source routes its own
    messages (one router for all, in arrival order, for ``coupling = "global"`` schemes)."""
    shared = router.coupling == "global"
    routes = router.route_many(fps, clock) if shared else None
    sent = []
    for s in range(sources):
        idx = np.flatnonzero(source == s)
        if not len(idx):
            continue
        own = router if shared else routers[s]
        r = routes[idx] if shared else own.route_many(fps[idx], clock[idx])
        part = rows.iloc[lo + idx].reset_index(drop=True)
        sent.append(copy_rows(part, app.fan_out(own, fps[idx], r, part)))
    return pd.concat(sent, ignore_index=True).sort_values(["worker", "seq"], kind="stable")
