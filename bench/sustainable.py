"""Sustainable throughput (Karimov et al., *Benchmarking Distributed Stream Data Processing Systems*,
ICDE 2018): the highest offered rate a system carries without a growing backlog, beside its peak.

A run offered ``rate`` messages/s open loop (:mod:`~skewbench.bench.spark.source`: message *i* is
intended to arrive at ``t0 + i / rate``) is *sustainable* when, after the warm-up batch and while
messages are still being offered, the backlog — messages offered by a batch's end minus messages
processed by then — grows by less than :data:`SLOPE_LIMIT` of the rate (a least-squares slope over the
batches' ends; through the broker, the backlog is the consumer's lag behind what the broker received).
:func:`next_rate` searches reproducibly: it starts from the simulator's predicted capacity (through the
broker, from the measured peak when lower), steps up or down by :data:`STEP` until it has a sustainable and
an unsustainable rate, then bisects until they are within :data:`PRECISION` or :data:`MAX_RUNS` runs were
made. Every search run offers :data:`SECONDS` of stream, so a run costs about as long whatever the rate.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

SLOPE_LIMIT = 0.01  # backlog growth allowed, as a share of the offered rate
STEP = 1.3  # factor between rates until the sustainable rate is bracketed
PRECISION = 0.05  # stop when the bracket is this tight (relative)
MAX_RUNS = 6  # runs per search
SECONDS = 30.0  # stream offered per search run (a study may set its own)


def backlog(batches: pd.DataFrame, rate: float, messages: int, received: pd.DataFrame | None = None) -> pd.DataFrame:
    """``end`` and ``backlog`` of every batch after the first that ended while messages were offered.

    ``batches`` is a run's ``batches.parquet`` (``started``, ``duration``, ``messages`` done and the
    ``first_arrival`` of each batch's messages; the first batch's is ``t0``).  ``received``: a run through
    the broker's delivery log (``locust/deliveries.parquet``, :func:`~skewbench.bench.broker.deliveries`);
    then what was offered by a batch's end is what the broker had received by then, so the backlog is the
    consumer's lag at the broker."""
    batches = batches.sort_values("batch")
    t0 = float(batches["first_arrival"].iloc[0])
    end = (batches["started"] + batches["duration"]).to_numpy()
    done = np.cumsum(batches["messages"].to_numpy())
    keep = (np.arange(len(end)) > 0) & (end < _offering_end(t0, rate, messages, received))
    return pd.DataFrame({"end": end[keep] - t0, "backlog": (_offered(end, t0, rate, messages, received) - done)[keep]})


def _offered(end: np.ndarray, t0: float, rate: float, messages: int, received: pd.DataFrame | None) -> np.ndarray:
    """Messages offered by each time ``end``: by the schedule, or as the broker received them."""
    if received is None:
        return np.minimum(messages, np.floor((end - t0) * rate) + 1)
    log = received.sort_values("at")
    by = np.concatenate([[0], np.cumsum(log["messages"].to_numpy())])
    return by[np.searchsorted(log["at"].to_numpy(), end, side="right")]


def _offering_end(t0: float, rate: float, messages: int, received: pd.DataFrame | None) -> float:
    """When the last message was offered: by the schedule, or the broker's last delivery."""
    return t0 + messages / rate if received is None else float(received["at"].max())


def verdict(batches: pd.DataFrame, rate: float, messages: int,
            received: pd.DataFrame | None = None) -> tuple[bool, float]:
    """Whether a run offered ``rate`` was sustainable, and the backlog's slope (messages/s) (``received``: as
    in :func:`backlog`).  With fewer than three batches to fit, the last batch must end within two median
    batches of the offering's end (a backlog that grew would take longer to drain)."""
    points = backlog(batches, rate, messages, received)
    if len(points) >= 3:
        slope = float(np.polyfit(points["end"], points["backlog"], 1)[0])
        return slope < SLOPE_LIMIT * rate, slope
    until = _offering_end(float(batches["first_arrival"].min()), rate, messages, received)
    late = float((batches["started"] + batches["duration"]).max() - until)
    return late <= 2 * float(batches["duration"].median()), math.nan


def next_rate(tried: list[tuple[float, bool]], start: float, max_runs: int = MAX_RUNS) -> float | None:
    """The next rate to offer after the runs ``tried`` (rate, sustainable) in order; None when done."""
    if not tried:
        return float(round(start))
    if len(tried) >= max_runs:
        return None
    good = [r for r, ok in tried if ok]
    bad = [r for r, ok in tried if not ok]
    if not bad:
        return float(round(max(good) * STEP))
    if not good:
        return float(round(min(bad) / STEP))
    low, high = max(good), min(bad)
    if high <= low * (1 + PRECISION):
        return None
    return float(round(math.sqrt(low * high)))


def sustainable_rate(tried: list[tuple[float, bool]]) -> float:
    """The highest sustainable rate found (0 if none was)."""
    return max((r for r, ok in tried if ok), default=0.0)
