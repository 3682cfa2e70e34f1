"""Sustainable throughput (Karimov et al., *Benchmarking Distributed Stream Data Processing Systems*,
ICDE 2018): the highest offered rate a system carries without a growing backlog, beside its peak.

A run offered ``rate`` messages/s open loop (:mod:`~skewbench.bench.spark.source`: message *i* is
intended to arrive at ``t0 + i / rate``) is *sustainable* when, after the warm-up batch and while
messages are still being offered, the backlog — messages offered by a batch's end minus messages
processed by then — grows by less than :data:`SLOPE_LIMIT` of the rate (a least-squares slope over
the batches' ends).  :func:`next_rate` searches reproducibly: it starts from the simulator's predicted
capacity, steps up or down by :data:`STEP` until it has a sustainable and an unsustainable rate, then
bisects until they are within :data:`PRECISION` or :data:`MAX_RUNS` runs were made.  Every search run
offers :data:`SECONDS` of stream, so a run costs about as long whatever the rate.
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


def backlog(batches: pd.DataFrame, rate: float, messages: int) -> pd.DataFrame:
    """``end`` and ``backlog`` of every batch after the first that ended while messages were offered.

    ``batches`` is a run's ``batches.parquet`` (``started``, ``duration``, ``messages`` done and the
    ``first_arrival`` of each batch's messages; the first batch's is ``t0``)."""
    batches = batches.sort_values("batch")
    t0 = float(batches["first_arrival"].iloc[0])
    end = (batches["started"] + batches["duration"]).to_numpy()
    offered = np.minimum(messages, np.floor((end - t0) * rate) + 1)
    done = np.cumsum(batches["messages"].to_numpy())
    keep = (np.arange(len(end)) > 0) & (end < t0 + messages / rate)
    return pd.DataFrame({"end": end[keep] - t0, "backlog": (offered - done)[keep]})


def verdict(batches: pd.DataFrame, rate: float, messages: int) -> tuple[bool, float]:
    """Whether a run offered ``rate`` was sustainable, and the backlog's slope (messages/s).  With
    fewer than three batches to fit, the last batch must end within two median batches of the
    offering's end (a backlog that grew would take longer to drain)."""
    points = backlog(batches, rate, messages)
    if len(points) >= 3:
        slope = float(np.polyfit(points["end"], points["backlog"], 1)[0])
        return slope < SLOPE_LIMIT * rate, slope
    t0 = float(batches["first_arrival"].min())
    late = float((batches["started"] + batches["duration"]).max() - t0 - messages / rate)
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
