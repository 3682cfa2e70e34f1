"""Advice checked (issue 24): ``skewbench advise``'s rule (:func:`skewbench.bench.advise.choose`) applied to a
bench's own predictions — its engine model fitted on this cluster, its simulator — at every point of the
``advice`` study, and the advised scheme's measured throughput set beside the best measured scheme's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from skewbench.analysis.sections.common import markdown, study_table
from skewbench.bench.advise import choose

#: The advised scheme passes when its measured throughput is at least this share of the best measured one's.
WITHIN = 0.9


def advice_checked(folder: Path) -> list[str]:
    data = study_table(folder, "advice")
    if data is None:
        return []
    rows = [_point(workload, workers, at) for (workload, workers), at in data.groupby(["workload", "workers"])]
    passed = sum(r["passes"] for r in rows)
    return ["## Advice checked", "",
            "`skewbench advise` on a stream no one tuned for (`advice` study): its rule picks a scheme from the "
            "bench's own predictions (the simulator's routes, the engine model fitted on this cluster), and the "
            "cluster measures every scheme at the same point (one seed). The advised scheme passes when it carries "
            f"at least {WITHIN:.0%} of the best measured scheme's throughput: {passed} of {len(rows)} points pass.",
            "", markdown(pd.DataFrame(rows)), ""]


def _point(workload: str, workers: int, at: pd.DataFrame) -> dict:
    predicted = pd.DataFrame({"scheme": at["scheme"], "msgs/s": at["predicted_throughput"],
                              "counters per key": at["counters"] / at["keys"],
                              "probes per message": at["probes"] / at["messages"]})
    advised = choose(predicted)[0]["scheme"]
    measured = at.set_index("scheme")["throughput"]
    best = measured.idxmax()
    return {"workload": workload, "W": workers, "advised": advised,
            "its predicted msgs/s": at.set_index("scheme").loc[advised, "predicted_throughput"],
            "its measured msgs/s": measured[advised], "best measured": best, "its msgs/s": measured[best],
            "advised / best": measured[advised] / measured[best],
            "passes": bool(measured[advised] >= WITHIN * measured[best])}
