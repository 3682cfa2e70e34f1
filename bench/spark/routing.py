"""The routing stage: one scheme object per source, kept across micro-batches, run by the source.

As in Storm, where the spout's grouping decides the target task, the routing happens where the
messages enter: the "skewbench" data source's partition *j* (source *j*) routes its messages with
its own router — the pickled :class:`~skewbench.scheme.Scheme`, the same object the simulator uses —
in ``seq`` order, so a ``coupling = "local"`` scheme makes exactly the decisions it makes in the
simulator, and fans the copies out (:meth:`App.fan_out`).  The router survives across micro-batches
in the Python process and in a file every executor reads (:func:`router_at`, :func:`keep`); any process
can rebuild it exactly, because routing is a deterministic function of the stream.  (A separate
stateful routing operator costs a second shuffle and W more tasks per micro-batch.)

Every registered scheme runs; how each kind gets its routers (:func:`prepare`, with
:func:`~skewbench.sources.source_routers`):

* online ``local`` schemes — as in the simulator, ``[proto] + [proto.spawn() ...]``;
* ``offline`` schemes (off-greedy) — fitted with the whole stream's key counts, exactly as the
  simulator fits them, then spawned to every source;
* ``adaptive`` schemes (gedik-*, llfd, mintable, minmig, mixed*) — a warm-up prefix of
  :func:`warmup_messages` messages is routed with the initial (hash) function, the scheme
  rebalances once on that prefix's statistics, and every source gets a copy of the resulting
  *fixed* table.  Routing by a fixed table is a pure function of the key, so sharing it is honest;
  with ``--rebalance-every`` the table changes during the run (:mod:`skewbench.migration`);
* schemes told the true worker loads between intervals (pkg-probe's ``sync``) and the global load
  oracle (pkg-global) — every source keeps its own estimates, set to the workers' true loads before
  each micro-batch (:mod:`~skewbench.bench.spark.feedback`).

With live routing (:mod:`~skewbench.bench.spark.live`) a source routes with the routing version its offset
names: the version's own router when it sends a key to one worker, the same on every source
(:func:`~skewbench.migration.moves_state`), else the source's own router, started afresh from the version's
and carried from its first message (the offset's ``since``) with :func:`router_at`, as the simulator does —
and, for a scheme told the loads, set to them before each micro-batch as above.
"""

from __future__ import annotations

import hashlib
import pickle
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.bench.apps.base import Copies
from skewbench.scheme import Scheme, parse_params
from skewbench.sources import prepare_scheme, source_of_each_message, source_routers


def warmup_messages(n: int) -> int:
    """Prefix an adaptive scheme's table is fitted on: 10 % of the stream, at least 1000 messages."""
    return min(n, max(1000, n // 10))


def prepare(name: str, workers: int, sources: int, stream, seed: int = 0, params: str = "") -> list[Scheme]:
    """The initial router of every source (``ValueError`` for bad parameters); ``params``: the scheme's
    parameters as :func:`~skewbench.scheme.parse_params` reads them."""
    proto = prepare_scheme(name, workers, stream, seed=seed, plan_prefix=warmup_messages(stream.messages),
                           params=parse_params(params))
    return source_routers(proto, sources, distributed=True)


def route_batch(scheme: Scheme, app, batch: pd.DataFrame, clock: np.ndarray) -> Copies:
    """Route one source's messages (``batch`` in ``seq`` order, ``clock`` their stream times) and fan
    them out: which copies go to which worker."""
    fps = batch["fp"].to_numpy(dtype=np.int64).view(np.uint64)
    return app.fan_out(scheme, fps, scheme.route_many(fps, clock), batch)


_INITIAL: dict[tuple, tuple[bytes, ...]] = {}  # run -> every source's pickled initial router
_LIVE: dict[tuple, tuple[int, Scheme]] = {}  # (run, source) -> (offset, the router that routed up to it)


def router_at(run: tuple, source: int, offset: int, stream, folder: str = "", since: int = 0,
              initial: Callable[[], Scheme] | None = None) -> Scheme:
    """Source ``source``'s router as it is after routing its messages with ``since <= seq < offset``.

    ``run = (scheme, workers, sources, seed, workload, messages, split, params)`` names the run.  Routers are
    kept across micro-batches (:func:`keep`).  A router found at an earlier offset first routes the
    messages it missed; none found (or only later ones: a replay) means starting again from the
    initial router: ``initial()`` if given (a live routing version's, from its first message ``since``,
    with the version appended to ``run``), else the run's prepared one.  Routing is a deterministic
    function of the stream, so every process reaches exactly the same state.  ``folder``: where every
    executor keeps routers (:func:`_saved`).
    """
    _forget_other_runs(run)
    position, router = since, None
    kept = [_LIVE.pop((run, source), None)]
    if kept[0] is None or (kept[0][0] != offset and not kept[0][1].stateless):
        kept.append(_load(run, source, folder))  # another process may have routed the batches since
    for found in kept:  # a stateless router routes alike from any offset
        if found is not None and (found[1].stateless or position <= found[0] <= offset):
            position, router = found
    if router is None and initial is not None:
        router = initial()
    if router is None:
        if run not in _INITIAL:
            name, workers, sources, seed, *_, params = run
            _INITIAL[run] = tuple(pickle.dumps(r) for r in prepare(name, workers, sources, stream, seed, params))
        router = pickle.loads(_INITIAL[run][source])
    if router.stateless:
        return router
    missed = position + np.flatnonzero(source_of_each_message(stream, run[2], run[6], position, offset) == source)
    if len(missed):
        router.route_many(stream.fps[missed], stream.clock[missed])
    return router


def _forget_other_runs(run: tuple) -> None:
    """One run at a time, as the stream (:func:`~skewbench.bench.spark.source.stream_of`): a Python worker
    serves every run of a bench, and the routers of the runs before would only take memory (Off-Greedy's
    table is 8 MB a source)."""
    for key in [k for k in _LIVE if k[0] != run]:
        del _LIVE[key]
    for key in [k for k in _INITIAL if k != run]:
        del _INITIAL[key]


def run_of(scheme: str, workers: int, sources: int, seed: int, workload: str, messages: int, split: str,
           params: str) -> tuple:
    """The name of a run's routers (:func:`router_at`), the same from the driver's and the source's values."""
    return str(scheme), int(workers), int(sources), int(seed), str(workload), int(messages), str(split), str(params)


def save_initial(run: tuple, stream, folder: str) -> None:
    """Every source's initial router, prepared once by the driver and saved where the sources look
    (:func:`_saved`): else each source task of the first batch prepares them all itself, which fits an
    offline or adaptive scheme on the stream (Mixed: 2.6 s of CPU, once per source at the centre's S = 5)."""
    name, workers, sources, seed, *_, params = run
    for source, router in enumerate(prepare(name, workers, sources, stream, seed, params)):
        _write(_saved(run, source, folder), 0, router)


def keep(run: tuple, source: int, offset: int, router: Scheme, folder: str = "") -> None:
    """Remember ``router`` as source ``source``'s router at ``offset`` (after a batch routed well):
    in this process, and in a file for the other Python workers (:func:`_saved`)."""
    _LIVE[run, source] = (offset, router)
    path = _saved(run, source, folder)
    if path is not None and not (router.stateless and path.exists()):  # routing never changes a stateless one
        _write(path, offset, router)


def _write(path: Path, offset: int, router: Scheme) -> None:
    part = path.with_name(f"{path.name}.{uuid.uuid4().hex}")  # unique across the executors' processes
    part.write_bytes(pickle.dumps((offset, router)))
    part.replace(path)  # whole or not at all for a reader in another process


def _load(run: tuple, source: int, folder: str = "") -> tuple[int, Scheme] | None:
    path = _saved(run, source, folder)
    try:
        return pickle.loads(path.read_bytes()) if path is not None else None
    except FileNotFoundError:
        return None


#: The folder of :func:`_saved` files (None: only the process keeps routers); tests set it.
SAVED_DIR: Path | None = None


def _saved(run: tuple, source: int, folder: str = "") -> Path | None:
    """The file where source ``source``'s latest router is kept.  A source task lands on whichever
    Python worker has been idle longest, hardly ever the one that routed the source's previous batch,
    which then had to route the whole stream so far again (1 s for 12M messages with sg): O(offset) per
    batch.  ``folder`` is the run's, which every executor sees (the driver puts it in the checkpoint
    folder, which Spark's state needs shared): the source's previous batch may have run on another
    executor, whose file alone would leave this one a batch to route again (0.2-0.4 s a batch at
    W = 100 with 1M messages per batch, every other batch).  Where ``folder`` is not reachable, the
    executor's Spark files folder (one per executor and application, removed with it)."""
    if SAVED_DIR is not None:
        base = SAVED_DIR
    elif folder and Path(folder).is_dir():
        base = Path(folder)
    else:
        try:
            from pyspark import SparkFiles, TaskContext
        except ImportError:  # not in Spark
            return None
        if TaskContext.get() is None:
            return None
        base = Path(SparkFiles.getRootDirectory())
    name = hashlib.sha1(repr(run).encode()).hexdigest()[:16]
    return base / f"router-{name}-{source}.pickle"
