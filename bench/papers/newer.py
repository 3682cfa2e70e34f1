"""Beyond the seed papers (issue 23): experiments no single paper ran.

``hetero_wp``: every scheme on the WP-like stream with slow workers — one worker at half speed, and one in
five — beside equal workers, at W = 10, 50 and 100 (S = 5): each row's ``speed_share`` is its throughput as a
share of the same run's on equal workers where the busiest worker's time decides it (:mod:`skewbench.speeds`).
``hetero_wp_told``: Consistent Grouping told the slow workers' capacity (its virtual workers in proportion),
its share against itself on equal workers.
``sweep_*``: the newer schemes beside those they claim to beat (issue 23's sweep), one table per stream —
Zipf z from 0.8 to 2.0 over 100,000 keys and the WP and TW stand-ins — at W = 10, 50 and 100, S = 1 and 5:
imbalance, state (counters, replication per key) and how fast each routes.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pandas as pd

import skewbench.schemes  # noqa: F401  (registers every scheme)
from skewbench.bench.provenance import write_metadata
from skewbench.bench.study import Study, with_speed_share
from skewbench.scheme import REGISTRY
from skewbench.simulator import simulate
from skewbench.workloads import parse as parse_workload

#: mixed-brute is mixed with a brute-force planner (the same routes, hours at W = 100).
SCHEMES = sorted(set(REGISTRY) - {"mixed-brute"})
SLOW, WORKERS, SOURCES = ["", "1@0.5", "20%@0.5"], [10, 50, 100], 5
NEWER = ["dalton", "pstream", "cg", "cm", "lm", "am", "cam"]
RIVALS = ["pkg", "dchoices", "wchoices", "dkg", "mixed", "kg"]
SKEWS = {"z08": "zipf:z=0.8,keys=100000", "z10": "zipf:z=1.0,keys=100000", "z12": "zipf:z=1.2,keys=100000",
         "z15": "zipf:z=1.5,keys=100000", "z20": "zipf:z=2.0,keys=100000", "wp": "wp", "tw": "tw"}


def told(out: Path, messages: int) -> None:
    """cg told each profile as its capacity, beside cg on equal workers."""
    stream = parse_workload("wp", messages=messages, seed=0)
    rows = [simulate(stream, "cg", workers, SOURCES, slow=slow, params={"capacity": slow} if slow else {}).row
            for workers in WORKERS for slow in SLOW]
    table = with_speed_share(pd.DataFrame(rows))
    table[table["slow"] != ""].assign(scheme="cg (capacity told)").to_csv(out, index=False)
    write_metadata(out, {"experiment": "cg told the slow workers' capacity, WP, S=5", "messages": messages})


def experiments(messages: int | None) -> dict:
    m = messages or 2_000_000
    return {"hetero_wp": (Study("wp", SCHEMES, WORKERS, [SOURCES], m, slow=SLOW), False),
            "hetero_wp_told": partial(told, messages=m),
            **{f"sweep_{name}": (Study(spec, NEWER + RIVALS, WORKERS, [1, SOURCES], m), False)
               for name, spec in SKEWS.items()}}
