"""The simulator's prediction of a Spark run: each worker's work per micro-batch, plus an engine model.

A micro-batch of the pipeline lasts the engine's cost (planning, routing, shuffle, task launch,
state commits, the driver) plus its busiest worker's work.  The work is exact from the library
alone: :func:`simulate_point` routes the run's stream with the same routers, source split and
micro-batches as the Spark source (batch *b* holds messages ``b·B .. (b+1)·B − 1`` at rate 0, and at any
rate where routing depends on where batches end: live routing, load feedback) and fans it out with the
app's rule, giving every worker's stored and probe copies per batch; each copy costs the injected delay
plus the app's own processing (the delay divided by the worker's speed: :mod:`skewbench.speeds`).  The
engine's cost comes from
:class:`EngineModel`, fitted on calibration runs (study files with ``engine: true``): a least-squares
line in W, S and the message copies per batch on the no-delay runs, the share of it that overlaps the busiest
worker on the delayed runs, and each app's processing time per copy.

Predicted throughput = the steady batches' messages ÷ Σ their predicted durations, the first
(warm-up) batch excluded as in the measurement; under an offered rate, the smaller of that and
the rate.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.bench.studyfile import Point
from skewbench.speeds import busy_times, parse as parse_speeds

#: What the engine model's cost per batch is linear in (a term is fitted only where the runs vary it).
TERMS = ("workers", "sources", "copies")  # copies: message copies in the batch (stores and probes)


@dataclass
class Work:
    """Copies per micro-batch and worker (``store``, ``probe``: arrays of shape batches × W, W the widest
    the run has), the stream's distinct keys (DKG's DistCost divides the counters by them), for live
    routing each batch's active W (``workers``; None: W never changes) and, when asked for, the (key, worker)
    pairs that hold state at the end (``counters``; None: not counted)."""

    store: np.ndarray
    probe: np.ndarray
    keys: int = 0
    workers: np.ndarray | None = None
    counters: int | None = None

    @property
    def copies(self) -> np.ndarray:
        return self.store + self.probe

    def to_json(self) -> dict:
        return {"store": self.store.tolist(), "probe": self.probe.tolist(), "keys": self.keys} | (
            {"workers": self.workers.tolist()} if self.workers is not None else {})

    @classmethod
    def from_json(cls, data: dict) -> Work:
        workers = np.asarray(data["workers"], dtype=np.int64) if "workers" in data else None
        return cls(np.asarray(data["store"], dtype=np.int64), np.asarray(data["probe"], dtype=np.int64), data["keys"],
                   workers)


def simulate_point(point: Point, count_state: bool = False) -> Work:
    """Every worker's copies per micro-batch for ``point``, as the Spark source produces them (and with
    ``count_state`` the (key, worker) pairs its stores leave state on)."""
    from skewbench.bench.apps import make_app
    from skewbench.bench.spark.feedback import needs_loads
    from skewbench.bench.spark.routing import prepare
    from skewbench.sources import source_of_each_message
    from skewbench.workloads import parse

    app = make_app(point.app)
    stream = app.prepare(parse(point.workload, messages=point.messages, seed=point.seed))
    if point.live is not None:
        return _live_work(point, app, stream)
    source = source_of_each_message(stream, point.sources, point.split)
    routers = prepare(point.scheme, point.workers, point.sources, stream, point.seed, point.params)
    fps, clock = stream.fps, stream.clock
    batches = -(-stream.messages // point.batch_rows)
    store = np.zeros((batches, point.workers), dtype=np.int64)
    probe = np.zeros_like(store)
    told, speeds = needs_loads(routers[0]), parse_speeds(point.slow, point.workers)
    held = []  # with count_state: each source batch's distinct (key id, worker) pairs of its stores
    for b in range(batches):
        lo, hi = b * point.batch_rows, min((b + 1) * point.batch_rows, stream.messages)
        if told and b:  # load feedback: the workers' true loads (times) so far, as the sources get them
            loads = busy_times((store[:b] + probe[:b]).sum(0).astype(np.float64), speeds)
            for router in routers:
                router.sync(loads)
        for s, router in enumerate(routers):
            idx = lo + np.flatnonzero(source[lo:hi] == s)
            if not len(idx):
                continue
            payload = pd.DataFrame({c: stream.payload[c][idx] for c in app.payload_columns}, index=range(len(idx)))
            sent = app.fan_out(router, fps[idx], router.route_many(fps[idx], clock[idx]), payload)
            store[b] += np.bincount(sent.worker[sent.store], minlength=point.workers)
            probe[b] += np.bincount(sent.worker[~sent.store], minlength=point.workers)
            if count_state:
                held.append(np.unique(stream.ids[idx[sent.row[sent.store]]] * point.workers + sent.worker[sent.store]))
    counters = len(np.unique(np.concatenate(held))) if held else (0 if count_state else None)
    return Work(store, probe, stream.distinct_keys, counters=counters)


def _live_work(point: Point, app, stream) -> Work:
    """:func:`simulate_point` for live routing (:func:`simulate_live`)."""
    result = simulate_live(app, stream, point.scheme, point.workers, point.sources, point.live, split=point.split,
                           seed=point.seed, params=point.params, slow=point.slow)
    store, probe, workers = live_copies(app, stream, result, point.live, point.live.widest(point.workers))
    return Work(store, probe, stream.distinct_keys, workers)


def simulate_live(app, stream, scheme: str, workers: int, sources: int, live, *, split: str = "shuffle",
                  seed: int = 0, params: str = "", slow: str = ""):
    """The simulator's run of the pipeline's live routing: it routes with the versions the pipeline's
    controller publishes (:mod:`skewbench.migration`), and a scheme told the workers' loads (pkg-probe,
    pkg-global) is told the copies they handled, as the pipeline's load feedback counts them."""
    from skewbench.bench.spark.feedback import needs_loads
    from skewbench.scheme import make_scheme, parse_params
    from skewbench.simulator import simulate

    width, told = live.widest(workers), needs_loads(make_scheme(scheme, workers, **parse_params(params)))

    def copies(router, start: int, routes: np.ndarray) -> np.ndarray:
        store, probe = fanned_out(app, stream, router, start, routes, width)
        return store + probe

    return simulate(stream, scheme, workers, sources, split=split, seed=seed, params=parse_params(params),
                    live=live, copies=copies if told else None, slow=slow)


def live_copies(app, stream, result, live, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stored and probe copies per micro-batch and worker of a simulated live run ``result``, each batch
    fanned out with the version in force, and each batch's W."""
    batches = live.batches(stream.messages)
    store, probe = np.zeros((batches, width), dtype=np.int64), np.zeros((batches, width), dtype=np.int64)
    workers = np.empty(batches, dtype=np.int64)
    for b in range(batches):
        version = max((v for v in result.versions if v.first_batch <= b), key=lambda v: v.number)
        lo, hi = b * live.batch, min((b + 1) * live.batch, stream.messages)
        store[b], probe[b] = fanned_out(app, stream, version.router, lo, result.routes[lo:hi], width)
        workers[b] = version.workers
    return store, probe, workers


def fanned_out(app, stream, router, start: int, routes: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The stored and probe copies per worker of messages ``start ..`` of ``stream`` routed to ``routes``."""
    lo, hi = start, start + len(routes)
    payload = pd.DataFrame({c: stream.payload[c][lo:hi] for c in app.payload_columns}, index=range(hi - lo))
    sent = app.fan_out(router, stream.fps[lo:hi], routes, payload)
    return (np.bincount(sent.worker[sent.store], minlength=width),
            np.bincount(sent.worker[~sent.store], minlength=width))


def routed(point: Point) -> Point:
    """The point with only what decides where messages go: the delay, the offered rate, word count's
    aggregation period and the engine's levers change how long the work takes, not the work."""
    return replace(point, study="routes", delay_ms=0.0, rate=0.0, aggregation_period=0, levers="none")


def cached_work(point: Point, folder: Path) -> Work:
    """:func:`simulate_point`, kept in ``folder/<routed point>.json`` (a bench folder's ``sim/``)."""
    path = folder / f"{routed(point).name}.json"
    if path.exists():
        return Work.from_json(json.loads(path.read_text()))
    work = simulate_point(point)
    folder.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part")
    part.write_text(json.dumps(work.to_json()))
    part.replace(path)
    return work


@dataclass
class EngineModel:
    """The engine's cost per batch and how much of it the workers' time hides.

    ``cost(W, S, copies) = intercept + Σ coef[t] · t`` over :data:`TERMS` is a batch's engine cost with
    no injected delay, fitted by least squares on the no-delay calibration runs, with no negative
    coefficient (a cost does not fall as a batch grows: such a term is dropped and the rest refitted,
    else huge batches extrapolate to no cost at all).  With a delay part of
    that cost overlaps the busiest worker (its task sleeps or spins while the engine launches,
    commits and serves the others on the remaining cores): a batch takes ``serial · cost +
    max((1 − serial) · cost, busiest)``, ``serial`` fitted on the delayed calibration runs (1 — no
    overlap — without any).  ``per_copy``: each app's processing seconds per message copy.  ``source``:
    which runs it was fitted on, for the reader of a prediction.  ``levers``: the engine's lever set of
    those runs (the most common one among them); a run with other levers is not predicted ("" predicts
    every run, as models fitted before levers existed did)."""

    intercept: float
    coef: dict[str, float]
    per_copy: dict[str, float]
    runs: int
    serial: float = 1.0
    source: str = ""
    levers: str = ""

    @classmethod
    def fit(cls, rows: pd.DataFrame) -> EngineModel | None:
        """Fitted on calibration rows (None without a no-delay one), those with their most common lever set."""
        rows = rows[rows["overhead_median_s"].notna()]
        levers = rows["levers"].mode().iloc[0] if "levers" in rows and len(rows) else ""
        if levers:
            rows = rows[rows["levers"] == levers]
        bare = rows[rows["delay_ms"] == 0]
        if bare.empty:
            return None
        varied = [t for t in TERMS if bare[t].nunique() > 1]
        while True:
            design = np.column_stack([np.ones(len(bare))] + [bare[t].to_numpy(dtype=float) for t in varied])
            if np.linalg.matrix_rank(design) < design.shape[1]:  # e.g. copies ∝ W: keep the earlier term
                varied = varied[:-1]
                continue
            solution = np.linalg.lstsq(design, bare["overhead_median_s"].to_numpy(dtype=float), rcond=None)[0]
            negative = [t for t, c in zip(varied, solution[1:]) if c < 0]
            if not negative:
                break
            varied.remove(negative[0])
        per_copy = bare.groupby("app")["busy_per_copy_s"].median().dropna()
        model = cls(float(solution[0]), {t: float(c) for t, c in zip(varied, solution[1:])},
                    {app: float(v) for app, v in per_copy.items()}, len(rows), levers=levers)
        delayed = rows[rows["delay_ms"] > 0]
        if len(delayed):
            model.serial = model._fit_serial(delayed)
        return model

    def _fit_serial(self, rows: pd.DataFrame) -> float:
        """The serial share that best predicts the delayed runs' batch times (least squares in log)."""
        cost = np.array([self.cost(w, s, c) for w, s, c in zip(rows["workers"], rows["sources"], rows["copies"])])
        busiest = rows["busiest_median_s"].to_numpy(dtype=float)
        measured = busiest + rows["overhead_median_s"].to_numpy(dtype=float)
        grid = np.linspace(0, 1, 101)
        error = [np.sum(np.log(self.batch_seconds(cost, busiest, serial) / measured) ** 2) for serial in grid]
        return float(grid[int(np.argmin(error))])

    def cost(self, workers: int, sources: int, copies: int) -> float:
        """The engine's cost of a batch with no injected delay."""
        x = {"workers": workers, "sources": sources, "copies": copies}
        return max(0.0, self.intercept + sum(c * x[t] for t, c in self.coef.items()))

    def batch_seconds(self, cost, busiest, serial: float | None = None):
        """A batch's duration from its engine cost and busiest worker's work (arrays or numbers)."""
        serial = self.serial if serial is None else serial
        return serial * cost + np.maximum((1 - serial) * cost, busiest)

    def copy_seconds(self, app: str) -> float:
        """An app's processing time per copy; apps never run without delay take the median of the others."""
        return self.per_copy.get(app, float(np.median(list(self.per_copy.values()))) if self.per_copy else 0.0)

    def to_json(self) -> dict:
        return {"intercept_s": self.intercept, "coef_s": self.coef, "per_copy_s": self.per_copy, "runs": self.runs,
                "serial": self.serial, "terms": list(TERMS), "source": self.source, "levers": self.levers}

    @classmethod
    def from_json(cls, data: dict) -> EngineModel:
        return cls(data["intercept_s"], data["coef_s"], data["per_copy_s"], data["runs"], data["serial"],
                   data.get("source", ""), data.get("levers", ""))

    @classmethod
    def read(cls, path: Path) -> EngineModel:
        """An ``engine_model.json`` (a bench's, or a cached calibration's); ValueError saying what is wrong."""
        try:
            return cls.from_json(json.loads(Path(path).read_text()))
        except OSError as exc:
            raise ValueError(f"{path}: cannot read the engine model: {exc.strerror}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: not an engine model (an engine_model.json a bench wrote): {exc}") from None


def predict(point: Point, work: Work, model: EngineModel) -> dict:
    """For ``point``: ``throughput`` (messages/s, see the module docstring), and the median over the
    steady batches of the engine's time beyond the busiest worker (``overhead_s``) and of the busiest
    worker's work (``busiest_s``); NaN for a run whose levers are not the model's."""
    if model.levers and point.levers != model.levers:
        return {"throughput": np.nan, "overhead_s": np.nan, "busiest_s": np.nan}
    sizes = np.minimum(point.batch_rows, point.messages - point.batch_rows * np.arange(len(work.store)))
    steady = slice(1, None) if len(sizes) > 1 else slice(None)  # the warm-up batch is not measured
    speeds = parse_speeds(point.slow, work.store.shape[1])
    per_copy = point.delay_ms / 1000 / speeds + model.copy_seconds(point.app)  # each worker's
    workers = work.workers if work.workers is not None else np.full(len(work.store), point.workers)
    cost = np.array([model.cost(int(w), point.sources, int(c.sum()))
                     for w, c in zip(workers[steady], work.copies[steady])])
    busiest = (work.copies[steady] * per_copy).max(axis=1)
    seconds = model.batch_seconds(cost, busiest)
    capacity = sizes[steady].sum() / seconds.sum() if seconds.sum() > 0 else float("inf")
    return {"throughput": min(capacity, point.rate) if point.rate > 0 else capacity,
            "overhead_s": float(np.median(seconds - busiest)), "busiest_s": float(np.median(busiest))}


def predict_points(points: list[Point], model: EngineModel, progress=None) -> pd.DataFrame:
    """The simulator's prediction of every point, no Spark: one row per point with its work per batch
    (busiest worker's copies, max/mean of the stores) and the predicted throughput."""
    rows, works = [], {}
    for point in points:
        if progress is not None:
            progress.step(f"{point.study}: {point.app} {point.scheme} W={point.workers} S={point.sources} "
                          f"delay {point.delay_ms} ms {point.workload}")
        if routed(point) not in works:  # a delay sweep routes once
            works[routed(point)] = simulate_point(point)
        work = works[routed(point)]
        stores = work.store.sum(0)
        rows.append({**asdict(point), **predict(point, work, model), "keys": work.keys,
                     "max_over_mean": float(stores.max() / stores.mean()) if stores.mean() else float("nan"),
                     "busiest_copies": float(np.median(work.copies[1:].max(axis=1))) if len(work.copies) > 1
                     else float(work.copies.max())})
    return pd.DataFrame(rows).rename(columns={"throughput": "predicted_throughput",
                                              "overhead_s": "predicted_overhead_s", "busiest_s": "predicted_busiest_s"})
