"""Shuffle grouping: each source deals its messages round-robin over the workers."""

from __future__ import annotations

import numpy as np

from skewbench.scheme import Scheme, as_fps, register


@register
class ShuffleGrouping(Scheme):
    """Round-robin per source: perfect balance, but every key's state may live on every worker.

    ``offset`` staggers sources so S sources do not all start on worker 0 (a driver sets it per
    source; Storm starts each task at a random index).

    >>> sg = ShuffleGrouping(workers=3)
    >>> [sg.route(0) for _ in range(4)]
    [0, 1, 2, 0]
    """

    name = "sg"
    splits_keys = True
    state_everywhere = True  # round robin: every worker gets every key

    def __init__(self, workers: int, seed: int = 0, offset: int = 0):
        self.offset = int(offset)
        super().__init__(workers, seed)

    def reset(self) -> None:
        self._next = self.offset % self.workers

    def candidates(self, fp: int) -> np.ndarray:
        return np.arange(self.workers)

    def route_many(self, fps, now=None) -> np.ndarray:
        n = as_fps(fps).shape[0]
        out = (self._next + np.arange(n, dtype=np.int64)) % self.workers
        self._next = int((self._next + n) % self.workers)
        return out
