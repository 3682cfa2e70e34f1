"""Dalabasmaz & Can, "Dynamic Key Grouping": the load-balance side of Sec. 5 (Figs. 9-13, Tables 2-3).

The simulator measures what the paper's Distribution Observer measured (Sec. 4.7): StdDev (Eq. 7,
``load_stddev_pct``), DistCost (Eq. 8, ``dist_cost``) and the busiest worker's load (``max_over_mean``,
which paces a CPU-bound operator).  Throughput and latency are measured on Spark (bench study ``dkg``).

Stand-ins for Table 2's datasets ("Total Keys (Million)" is the number of messages: 5.32 M for
twitter-election = Table 3's throughput × latency; the country sets have 10 M over 204 keys):

* country-skew-rXX: regenerated exactly (``country:skew=r``), 10 M messages.
* twitter-election (68 %): Zipf with the hottest key at 68 %.  A real tweet set has a long tail of rare
  keys (Table 3's SG DistCost of 2.45 at W = 10 says most keys are seen a few times), which the
  204-key country set lacks.  The key count is not given; with p1 = 68 % the exponent is so steep that
  only ~1.4 k keys appear in 5.32 M messages whether K is 100 k or 5 M, so K = 1 M.
* twitter-ticker: PKG's CT cashtags (2.9 k keys drifting over 4 periods, ref. [14]) at Table 2's 10 %
  skew and 1.5 M messages.
* wikipedia-pageviews: PKG's WP (ref. [14]; Zipf over 2.9 M pages, p1 = 9.32 %; Table 2 rounds to 9 %).
* wikipedia-clickstream (10 %) and wikipedia-pageviews-by-lang (27 %): Zipf with that p1 over 1 M keys
  (key counts not given), cut to ``CAP`` messages from 8 G and 588 M: StdDev and the busiest worker's
  share of a stationary stream settle long before that.

Every stream runs on DKG's clock at ``RATE`` tuples/s (its 15 s / 60 s promotion cycles turn as in
the paper's runs of a few thousand tuples/s).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

from skewbench.bench import papers  # the package: size() is read at run time (circular import)
from skewbench.bench.provenance import write_metadata
from skewbench.bench.study import Study, run_study

SCHEMES = ["kg", "sg", "pkg", "dkg"]
RATE = 5000  # tuples/s, about DKG's measured throughput (Table 3)
SKEWS = [*range(0, 101, 10), 68]  # Table 2's country sets, and Table 3's 68 %
SEEDS = 5  # hash seeds behind every point an order is claimed between (analysis/fidelity.py SEEDS_NEEDED)
COUNTRY_MESSAGES = 10_000_000  # Table 2
ELECTION = f"zipf:p1=0.68,keys=1000000,rate={RATE}"
ELECTION_MESSAGES = 5_320_000  # Table 3: throughput × latency / 1000, the same for all four schemes
CAP = 20_000_000  # longest stand-in stream we run (clickstream has 8 G messages, by-lang 588 M)
REAL = {  # Table 2's other real sets: stand-in, messages in the paper
    "ticker": (f"drift:keys=2900,p1=0.1,periods=4,head=50,churn=0.5,rate={RATE}", 1_500_000),
    "clickstream": (f"zipf:p1=0.1,keys=1000000,rate={RATE}", 8_000_000_000),
    "pageviews": (f"zipf:p1=0.0932,keys=2900000,rate={RATE}", 22_000_000),
    "bylang": (f"zipf:p1=0.27,keys=1000000,rate={RATE}", 588_000_000),
}


def country(skew_pct: int) -> str:
    return f"country:skew={skew_pct / 100},rate={RATE}"


def skew_sweep(messages: int, repeat: int = SEEDS):
    """Figs. 10-11 as one table with a ``skew`` column (%), so a trend over skew is one series."""

    def write(path: Path) -> None:
        parts = []
        with tempfile.TemporaryDirectory() as scratch:
            for r in sorted(set(SKEWS)):
                study = Study(country(r), SCHEMES, [10], [5], messages, repeat=repeat)
                parts.append(run_study(study, Path(scratch) / f"r{r}.csv").assign(skew=r))
        pd.concat(parts, ignore_index=True).to_csv(path, index=False)
        write_metadata(path, {"experiment": "DKG Figs. 10-11 skew sweep", "skews_pct": sorted(set(SKEWS)),
                              "schemes": SCHEMES, "workers": 10, "sources": 5, "messages": messages,
                              "repeat": repeat, "workload": country(0).replace("skew=0.0", "skew=r/100")})

    return write


def experiments(messages: int | None) -> dict:
    size = papers.size
    country_m, election_m = size(COUNTRY_MESSAGES, messages), size(ELECTION_MESSAGES, messages)
    chosen: dict = {
        # Fig. 11 per skew, one table each (read by the report's DKG section); W = 10, S = 5 (Sec. 5.4).
        **{f"dkg_skew_{r:03d}": (Study(country(r), SCHEMES, [10], [5], country_m), False) for r in SKEWS},
        "dkg_fig11": skew_sweep(country_m),
        # twitter-election: Table 3 and Fig. 9(a) (W = 10, S = 5), Fig. 12 (W = 10, 50, 100), Fig. 13 (S = 5..20).
        "dkg_fig12": (Study(ELECTION, SCHEMES, [10, 50, 100], [5], election_m, repeat=SEEDS), False),
        "dkg_fig13": (Study(ELECTION, SCHEMES, [10], [5, 10, 15, 20], election_m, repeat=SEEDS), False),
    }
    for name, (workload, published) in REAL.items():  # Fig. 9(b-e), 5 spouts and 10 workers
        chosen[f"dkg_real_{name}"] = (Study(workload, SCHEMES, [10], [5], size(min(published, CAP), messages),
                                             repeat=SEEDS), False)
    return chosen
