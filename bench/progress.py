"""One progress line per step of a long job: which run of how many, elapsed time and ETA."""

from __future__ import annotations

import math
import sys
import time


def clock(seconds: float) -> str:
    """``H:MM:SS``, or ``?`` when not known (not finite)."""
    if not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    """``with Progress(total) as p: p.step("label")`` prints ``[i/total] label  elapsed … ETA …``."""

    def __init__(self, total: int, stream=None):
        self.total, self.stream, self.done = total, stream or sys.stderr, 0
        self.started = time.monotonic()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.stream.flush()

    def step(self, label: str) -> None:
        """Announce the next run (call before doing it)."""
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        self.done += 1
        print(f"[{self.done}/{self.total}] {label}  elapsed {clock(elapsed)}  ETA {clock(eta)}",
              file=self.stream, flush=True)
