"""Fang et al., "Parallel Stream Processing Against Workload Skewness and Variance" (HPDC 2017), Sec. 6."""

from __future__ import annotations

from skewbench.bench.study import Study

ZIPF = "zipf:z=1.0,keys=100000"


def experiments(messages: int | None) -> dict[str, tuple[Study, bool]]:
    m = messages or 2_000_000
    return {
        # Scale-out: one worker added half-way (Gedik grows N one channel at a time; Fang adds an instance).
        "scale_out": (Study(ZIPF, ["kg", "consistent", "gedik-readj", "mixed"], [10], [1], m,
                            schedule={m // 2: 11}), True),
    }
