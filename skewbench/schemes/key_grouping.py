"""Key grouping: every message of a key goes to ``h(key) mod W`` (Gedik's "uniform hash")."""

from __future__ import annotations

import numpy as np

from skewbench.hashing import choice_hash, murmur64
from skewbench.scheme import Scheme, as_fps, register


@register
class KeyGrouping(Scheme):
    """Hash partitioning, the PKG paper's baseline *H* / Storm's fields grouping.

    Stateless, so every source routes alike and a key's state lives on exactly one worker.

    >>> from skewbench.hashing import fingerprint
    >>> kg = KeyGrouping(workers=10, seed=0)
    >>> kg.route(fingerprint("the")) == kg.route(fingerprint("the"))
    True
    """

    name = "kg"
    stateless = True

    def candidates(self, fp: int) -> np.ndarray:
        return np.array([int(choice_hash(np.uint64(fp), self.seed, 0) % np.uint64(self.workers))])

    def route_many(self, fps, now=None) -> np.ndarray:
        return (murmur64(as_fps(fps), self.seed) % np.uint64(self.workers)).astype(np.int64)
