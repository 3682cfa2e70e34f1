"""Dalabasmaz & Can, "Dynamic Key Grouping": Fig. 11's skew sweep and Table 3's 68 % skew."""

from __future__ import annotations

from skewbench.bench.study import Study

SCHEMES = ["kg", "sg", "pkg", "dkg"]
RATE = 5000  # tuples/s, about DKG's measured throughput (Table 3)


def experiments(messages: int | None) -> dict[str, tuple[Study, bool]]:
    m = messages or 2_000_000
    # StdDev and DistCost as the share of the hottest country grows (5 sources, 10 workers). At the paper's
    # few thousand tuples/s, so its 15 s / 60 s promotion cycles turn.
    return {f"dkg_skew_{r:03d}": (Study(f"country:skew={r / 100},rate={RATE}", SCHEMES, [10], [5], m), False)
            for r in [*range(0, 101, 10), 68]}
