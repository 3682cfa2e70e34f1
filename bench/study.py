"""A simulation study: every (scheme, W, S, seed) over one workload, one tidy CSV row per run."""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from skewbench.bench.progress import Progress
from skewbench.bench.provenance import write_metadata
from skewbench.simulator import simulate
from skewbench.workloads import parse


class ResultExists(FileExistsError):
    """Refuse to overwrite a result (results are never silently replaced)."""


@dataclass
class Study:
    workload: str
    schemes: list[str]
    workers: list[int]
    sources: list[int]
    messages: int | None = None
    seed: int = 0
    repeat: int = 1
    split: str = "shuffle"
    interval: int | None = None
    schedule: dict[int, int] = field(default_factory=dict)
    params: dict[str, dict] = field(default_factory=dict)  # scheme name → its parameters
    slow: list[str] = field(default_factory=lambda: [""])  # worker-speed profiles (skewbench.speeds)

    def grid(self) -> list[tuple[int, int, int, str, str]]:
        seeds = range(self.seed, self.seed + self.repeat)
        return list(itertools.product(seeds, self.workers, self.sources, self.schemes, self.slow))


def claim(path: Path, force: bool) -> None:
    """Fail before any work if ``path`` holds a result and the user did not ask to replace it."""
    if path.exists() and not force:
        raise ResultExists(f"{path} already exists; choose another --out or pass --force to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)


def with_speed_share(table: pd.DataFrame) -> pd.DataFrame:
    """``speed_share`` for the rows with a slow-worker profile: their throughput as a share of the same run's on
    equal workers (:func:`skewbench.speeds.speed_share`)."""
    from skewbench.speeds import beside_equal_twin, parse, speed_share

    if not (table["slow"] != "").any():
        return table
    same = ["workload", "scheme", "workers", "sources", "seed", "split", "params"]
    paired = beside_equal_twin(table, same, ["time_over_ideal"])
    share = [speed_share(r.time_over_ideal_equal, r.time_over_ideal, parse(r.slow, r.workers))
             for r in paired.itertuples()]
    return table.assign(speed_share=pd.Series(share, index=paired.index))


def run_study(study: Study, out: Path, timeseries: Path | None = None, force: bool = False) -> pd.DataFrame:
    """Run every cell of the study, then write ``out`` (and the I(t) series) with provenance.

    Rows are written to ``<out>.partial`` as they finish; only a complete study is renamed to
    ``out``, so an interrupted one can never pass for complete.
    """
    for path in filter(None, (out, timeseries)):
        claim(path, force)
    partial = out.with_name(out.name + ".partial")
    streams: dict[int, object] = {}
    rows, series = [], []
    cells = study.grid()
    with Progress(len(cells)) as progress:
        for seed, workers, sources, scheme, slow in cells:
            progress.step(f"{scheme} W={workers} S={sources} seed={seed}{' slow ' + slow if slow else ''} on "
                          f"{study.workload}")
            if seed not in streams:
                streams = {seed: parse(study.workload, messages=study.messages, seed=seed)}
            result = simulate(streams[seed], scheme, workers, sources, split=study.split, interval=study.interval,
                              schedule=study.schedule, seed=seed, params=study.params.get(scheme, {}), slow=slow)
            rows.append(result.row)
            pd.DataFrame(rows).to_csv(partial, index=False)
            if timeseries is not None:
                series.append(result.timeseries.assign(scheme=scheme, workers_initial=workers, sources=sources,
                                                       seed=seed))
    table = with_speed_share(pd.DataFrame(rows))
    table.to_csv(partial, index=False)
    if timeseries is not None:
        pd.concat(series).to_csv(timeseries, index=False)
    partial.replace(out)
    write_metadata(out, {"study": asdict(study), "timeseries": str(timeseries) if timeseries else None})
    return table
