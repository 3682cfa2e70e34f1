"""Open-loop schedules: when each message of a stream is meant to be sent.

A generator that waits for the system under test before sending the next message hides the system's
stalls from the latency it measures (coordinated omission).  Ours instead fix every message's *intended*
send time up front, from the offered rate, and measure latency from it; a generator that falls behind
records its lateness instead of silently offering less (after OpenMessaging's ``UniformRateLimiter``).

A schedule is a list of steps ``(rate, seconds)``: ``rate`` messages/s for ``seconds``, the last step
lasting until the stream ends.  Spelled ``R`` (constant) or ``R1@S1,R2@S2,...,Rn`` (steps: ``R1`` for ``S1``
seconds, then ...); a spike is a short step: ``5000@20,20000@5,5000``.  ``0`` is no schedule at all (no
steps): every message is due at once, and is sent as fast as the generator goes.
"""

from __future__ import annotations

import numpy as np


class ScheduleError(ValueError):
    """A schedule that cannot be read; the message says how it is spelled."""


def parse_schedule(text: str) -> list[tuple[float, float]]:
    """``"R"`` or ``"R1@S1,...,Rn"`` as ``[(rate, seconds), ..., (rate, inf)]``; ``"0"`` as ``[]``."""
    if str(text).strip() in ("0", "0.0"):
        return []
    steps = []
    parts = str(text).split(",")
    try:
        for i, part in enumerate(parts):
            rate, _, seconds = part.partition("@")
            last = i == len(parts) - 1
            if bool(seconds) == last:
                raise ValueError
            steps.append((float(rate), float(seconds) if seconds else np.inf))
    except ValueError:
        raise ScheduleError(f"schedule {text!r}: write RATE (messages/s) or RATE@SECONDS,...,RATE, e.g. "
                            f"5000@20,20000@5,5000 (the last step lasts until the stream ends)") from None
    if any(not (0 < rate < np.inf and seconds > 0) for rate, seconds in steps):
        raise ScheduleError(f"schedule {text!r}: every rate must be positive and finite, every duration positive")
    return steps


def intended_times(seq: np.ndarray, t0: float, steps: list[tuple[float, float]]) -> np.ndarray:
    """The intended send time of messages ``seq`` (indices in the stream) under ``steps`` from ``t0``:
    message *n* is sent when the schedule has offered *n* messages (message 0 at ``t0``); all at ``t0``
    without steps."""
    seq = np.asarray(seq, dtype=np.float64)
    if not steps:
        return np.full(len(seq), float(t0))
    rates = np.array([r for r, _ in steps])
    seconds = np.array([s for _, s in steps])
    starts = np.r_[0.0, np.cumsum(seconds[:-1])]  # each step's start, in seconds after t0
    offered = np.r_[0.0, np.cumsum(rates[:-1] * seconds[:-1])]  # messages offered before each step
    step = np.searchsorted(offered, seq, side="right") - 1
    return t0 + starts[step] + (seq - offered[step]) / rates[step]


def mean_rate(messages: int, steps: list[tuple[float, float]]) -> float:
    """Messages per second the schedule offers over a stream of ``messages`` (inf without steps)."""
    if not steps:
        return float("inf")
    return messages / (intended_times(np.array([messages]), 0.0, steps)[0]) if messages else 0.0
