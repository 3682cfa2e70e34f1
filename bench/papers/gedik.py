"""Gedik, "Partitioning Functions for Stateful Data Parallelism in Stream Processing" (VLDB J. 2014), Sec. 5."""

from __future__ import annotations

from skewbench.bench.study import Study

ZIPF = "zipf:z=1.0,keys=100000"


def experiments(messages: int | None) -> dict[str, tuple[Study, bool]]:
    m = messages or 2_000_000
    return {
        # Adaptive partitioning functions under a Zipf stream, rebalanced every interval (with Fang's).
        "adaptive_zipf": (Study(ZIPF, ["kg", "consistent", "gedik-scan", "gedik-redist", "gedik-readj", "llfd",
                                       "mintable", "minmig", "mixed"], [10, 40], [1], m), False),
    }
