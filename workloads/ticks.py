"""Stock-like ticks for the self-join: key = ticker symbol (Zipf popularity), payload price and volume."""

from __future__ import annotations

import numpy as np

from skewbench.bounds import KEYS, Range
from skewbench.stream import Stream
from skewbench.workloads.registry import workload
from skewbench.workloads.synthetic import RATE, zipf_ranks


def ticker(i: int) -> str:
    """A distinct 3–5 letter ticker for symbol index ``i`` (AAA, AAB, ...)."""
    letters = []
    i += 26**2  # start at three letters
    while i:
        i, r = divmod(i, 26)
        letters.append(chr(ord("A") + r))
    return "".join(reversed(letters))


def grouped_cumsum(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Running sum of ``values`` within each group, in message order."""
    order = np.argsort(groups, kind="stable")
    run = np.cumsum(values[order])
    g = groups[order]
    starts = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
    offset = np.repeat(run[starts] - values[order][starts], np.diff(np.r_[starts, len(g)]))
    out = np.empty_like(run)
    out[order] = run - offset
    return out


@workload("ticks", {"symbols": KEYS, "z": Range(0, 100), "volatility": Range(0, 1)}, whole=True)
def ticks(messages: int = 10_000_000, seed: int = 0, *, symbols: int = 5_000, z: float = 1.0,
          volatility: float = 0.001) -> Stream:
    """Stock ticks: symbol ~ Zipf(z) over `symbols`; each symbol's price is a geometric random walk."""
    rng = np.random.default_rng(seed)
    sym = zipf_ranks(messages, z, symbols, rng)
    start = rng.uniform(5, 500, symbols)
    price = start[sym] * np.exp(grouped_cumsum(rng.normal(0, volatility, messages), sym))
    volume = rng.geometric(0.01, messages).astype(np.int64)
    used, ids = np.unique(sym, return_inverse=True)
    labels = np.array([ticker(int(i)) for i in used], dtype=object)
    return Stream("ticks", ids.astype(np.int64), labels, rate=RATE,
                  payload={"price": np.round(price, 4), "volume": volume})
