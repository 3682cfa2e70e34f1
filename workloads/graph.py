"""Power-law graph edges (PKG Q3, Fig. 4): workers keyed by destination vertex, sources by source vertex.

A Chung–Lu style generator: both endpoints of an edge are drawn from a Zipf law over the vertices
(independently permuted, so the hottest source is not the hottest destination), with the exponent
solved from the share p1 of the most-followed vertex.  Presets match PKG Table I's graphs.
"""

from __future__ import annotations

import numpy as np

from skewbench.bounds import KEYS, Range
from skewbench.stream import Stream
from skewbench.workloads.registry import workload
from skewbench.workloads.synthetic import RATE, zipf_exponent_for, zipf_ranks

GRAPH_PRESETS = {  # PKG Table I: edges (messages), vertices (keys), p1
    "lj": (69_000_000, 4_900_000, 0.0029),
    "sl1": (905_000, 77_000, 0.0328),
    "sl2": (948_000, 82_000, 0.0311),
}


def edges(messages: int, seed: int, vertices: int, p1: float) -> Stream:
    rng = np.random.default_rng(seed)
    z = zipf_exponent_for(p1, vertices)
    dst = rng.permutation(vertices)[zipf_ranks(messages, z, vertices, rng)]
    src = rng.permutation(vertices)[zipf_ranks(messages, z, vertices, rng)]
    labels, ids = np.unique(dst, return_inverse=True)
    return Stream("graph", ids.astype(np.int64), labels, split_ids=src.astype(np.int64), rate=RATE,
                  payload={"src": src.astype(np.int64)})


@workload("graph", {"vertices": Range(0, KEYS.high, integer=True), "p1": Range(0, 1)}, whole=True)
def graph(messages: int = 905_000, seed: int = 0, *, preset: str = "sl1", vertices: int = 0,
          p1: float = 0.0) -> Stream:
    """Power-law graph edges keyed by destination (split by source): preset lj/sl1/sl2, or vertices and p1."""
    if preset.lower() not in GRAPH_PRESETS:
        raise ValueError(f"unknown preset {preset!r}; use one of {', '.join(GRAPH_PRESETS)}")
    _, preset_vertices, preset_p1 = GRAPH_PRESETS[preset.lower()]
    return edges(messages, seed, vertices or preset_vertices, p1 or preset_p1)
