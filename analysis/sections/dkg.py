"""DKG (Dalabasmaz & Can): the skew sweep's StdDev and DistCost beside Table 3, from ``make study``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns
from skewbench.analysis.published import published
from skewbench.analysis.sections.common import figure, load, markdown


def dkg(folder: Path) -> list[str]:
    data = load(folder, "dkg_skew")
    if data is None:
        return []
    data["skew_pct"] = data.experiment.str[-3:].astype(int)
    long = data.melt(id_vars=["scheme", "skew_pct"], value_vars=["load_stddev_pct", "dist_cost"])
    grid = sns.relplot(data=long, x="skew_pct", y="value", hue="scheme", col="variable", kind="line", marker="o",
                       height=3, facet_kws={"sharey": False})
    lines = ["## DKG Fig. 11 — StdDev (% of mean load) and DistCost vs. the hottest country's share (W=10, S=5)", "",
             figure(folder, "dkg_skew", grid), ""]
    at68 = data[data.skew_pct == 68].set_index("scheme")
    if not at68.empty:
        paper = published()["dkg"]["table3_twitter_election"]
        rows = [[s.upper(), at68.load_stddev_pct[s], paper[s.upper()]["stddev"], at68.dist_cost[s],
                 paper[s.upper()]["dist_cost"]] for s in at68.index]
        lines += ["DKG Table 3 (Twitter election, 68 % on one key; ours: country-skew stand-in at 68 %):", "",
                  markdown(pd.DataFrame(rows, columns=["scheme", "StdDev ours", "StdDev paper", "DistCost ours",
                                                        "DistCost paper"])), "",
                  "The paper's DistCost counts (worker, key) pairs over millions of distinct keys, most of them "
                  "rare; the stand-in has 204 keys, all frequent, so every key reaches both of its candidates.", ""]
    return lines
