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
from skewbench.scheme import Scheme
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


def run_in_process(app: App, stream: Stream, scheme: str | Scheme, workers: int, sources: int = 1,
                   batch: int = 1_000, *, split: str = "shuffle", seed: int = 0, params: dict | None = None,
                   plan_prefix: int | None = None, pickle_states: bool = True) -> LocalRun:
    """Run ``app`` on ``stream`` routed by ``scheme`` (a name, or a prepared prototype router).

    ``batch`` messages (in stream order, all sources together) form one micro-batch.
    """
    stream = app.prepare(stream)
    app.check(stream)
    if isinstance(scheme, str):
        scheme = prepare_scheme(scheme, workers, stream, seed=seed, params=params, plan_prefix=plan_prefix)
    if scheme.workers != workers:
        raise ValueError(f"the scheme has {scheme.workers} workers, the run {workers}")
    source = source_of_each_message(stream, sources, split)
    rows = stream_rows(stream, app, source)
    fps, clock = stream.fps, stream.clock
    shared = scheme.coupling == "global"
    routers = source_routers(scheme, sources)
    states = [app.new_state(w) for w in range(workers)]
    stores, probes = np.zeros(workers, dtype=np.int64), np.zeros(workers, dtype=np.int64)
    outputs = []
    for lo in range(0, stream.messages, batch):
        hi = min(lo + batch, stream.messages)
        routes = scheme.route_many(fps[lo:hi], clock[lo:hi]) if shared else None
        sent = []
        for s in range(sources):
            idx = lo + np.flatnonzero(source[lo:hi] == s)
            if not len(idx):
                continue
            router = routers[0 if shared else s]
            r = routes[idx - lo] if shared else router.route_many(fps[idx], clock[idx])
            part = rows.iloc[idx].reset_index(drop=True)
            sent.append(copy_rows(part, app.fan_out(router, fps[idx], r, part)))
        copies = pd.concat(sent, ignore_index=True).sort_values(["worker", "seq"], kind="stable")
        worker = copies["worker"].to_numpy()
        is_store = (copies["role"] == "store").to_numpy()
        stores += np.bincount(worker[is_store], minlength=workers)
        probes += np.bincount(worker[~is_store], minlength=workers)
        bounds = np.searchsorted(worker, np.arange(workers + 1))
        for w in np.flatnonzero(np.diff(bounds)):
            mine = copies.iloc[bounds[w]:bounds[w + 1]].reset_index(drop=True)
            state = pickle.loads(pickle.dumps(states[w])) if pickle_states else states[w]
            states[w], out = app.process(state, mine)
            outputs.append(out)
    for w in range(workers):
        states[w], out = app.finish(states[w])
        outputs.append(out)
    outputs = pd.concat([o for o in outputs if o is not None], ignore_index=True)
    return LocalRun(answer=app.combine(outputs, states), outputs=outputs, states=states, stores=stores,
                    probes=probes, counters=int(sum(app.state_entries(s) for s in states)))
