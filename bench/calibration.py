"""The engine calibration of a bench that brings none: designed from its studies, run once, cached.

A bench's predictions turn the simulator's exact work per worker into throughput through an engine
model (:class:`~skewbench.bench.prediction.EngineModel`) fitted on calibration runs.  A bench with an
``engine: true`` study fits it on that study's runs, and ``--engine-model FILE`` gives one; otherwise
``skewbench bench`` runs the short calibration :func:`design` draws from the bench's own points — sg
(balanced) over their apps, their smallest and largest W, S and batch per worker (a batch of W = 100's
size at W = 10 would give each worker ten times the work), one factor at a time around the
smallest point, each without delay and at their median delay, with their most common lever set — so the
model is fitted where it predicts.

It is cached in ``.cache/engine/<key>/`` (``SKEWBENCH_CACHE`` moves ``.cache``), the key a digest of
the cluster's shape, the code and the design (:func:`key_parts`): a later bench on the same cluster
with the same code and shape of studies reuses it, and any change calibrates again.  The folder is a
small bench of its own: ``runs/<point>`` (an interrupted calibration keeps its complete runs),
``key.json`` (what the key is made of) and, once complete, ``engine_model.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
from dataclasses import dataclass
from pathlib import Path

import skewbench
import skewbench.bench
import skewbench.workloads
from skewbench.bench.prediction import EngineModel
from skewbench.bench.studyfile import Point, Study, from_spec

CHECKOUT = Path(__file__).resolve().parents[1]  # the repository, when the package runs from one (make setup)
BATCHES = 8  # the first is the warm-up batch; medians over seven steady ones: a few % of noise, not 30
#: What the code version covers: every Python source of the package (the routers, apps, pipeline, model).
CODE = [Path(module.__file__).parent for module in (skewbench, skewbench.bench, skewbench.workloads)]


def cache_root() -> Path:
    """``SKEWBENCH_CACHE``, else ``.cache`` in the checkout (in the working folder for an installed package)."""
    default = CHECKOUT if (CHECKOUT / "pyproject.toml").exists() else Path.cwd()
    return Path(os.environ.get("SKEWBENCH_CACHE") or default / ".cache") / "engine"


def design(studies: list[Study], profile: str) -> Study:
    """The calibration study for the points of ``studies`` (see the module docstring)."""
    points = [p for s in studies for p in s.points(profile)]
    apps = list(dict.fromkeys(p.app for p in points))
    delays = sorted({p.delay_ms for p in points if p.delay_ms > 0})
    per_worker = [-(-p.batch_rows // p.workers) for p in points]  # a batch's size scales with its W
    span = {f: sorted({min(v), max(v)}) for f, v in (("workers", [p.workers for p in points]),
                                                      ("sources", [p.sources for p in points]),
                                                      ("batch_rows_per_worker", per_worker))}
    levers = max({p.levers for p in points}, key=[p.levers for p in points].count)  # the bench's usual engine
    doc = {"name": "engine-calibration", "engine": True, "apps": apps, "schemes": "sg", **span, "levers": levers,
           "delay_ms": [0.0] + ([statistics.median(delays)] if delays else []), "cross_with": ["delay_ms"],
           "design": "around", "batches": BATCHES}
    return from_spec(doc, Path("<the bench's engine calibration>"))


def code_digest() -> str:
    """A digest of every Python source the runs execute: any edit is another code version."""
    digest = hashlib.sha256()
    for part in CODE:
        for path in sorted(part.rglob("*.py")):
            digest.update(str(path.relative_to(part.parent)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def key_parts(study: Study, status: dict, executor_memory: str | None, machine_cores: int,
              spark_version: str) -> dict:
    """What a cached calibration must share with this bench: cluster shape, code and design."""
    workers = sorted((w["cores"], w["memory"]) for w in status.get("workers", []) if w.get("state") == "ALIVE")
    return {"cluster": {"workers": [{"slots": c, "memory_mib": m} for c, m in workers],
                        "executor_memory": executor_memory, "machine_cores": machine_cores,
                        "spark": spark_version},
            "code": code_digest(), "design": study.spec}


@dataclass(frozen=True)
class Calibration:
    """A calibration study and its cache folder."""

    study: Study
    folder: Path

    @classmethod
    def for_bench(cls, studies: list[Study], profile: str, **shape) -> Calibration:
        study = design(studies, profile)
        parts = key_parts(study, **shape)
        key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]
        folder = cache_root() / key
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "key.json").write_text(json.dumps(parts, indent=2) + "\n")
        return cls(study, folder)

    @property
    def points(self) -> list[Point]:
        return self.study.points()

    @property
    def model_path(self) -> Path:
        return self.folder / "engine_model.json"

    def missing(self) -> list[Point]:
        """The calibration runs not yet complete (all of them once the model is cached: none)."""
        if self.model_path.exists():
            return []
        return [p for p in self.points if not (self.folder / "runs" / p.name / "summary.json").exists()]

    def save(self, rows) -> EngineModel:
        """Fit the model on the complete runs' ``rows`` and keep it in the cache."""
        model = EngineModel.fit(rows)
        model.source = f"calibration {self.folder} ({len(rows)} runs: {self.describe()})"
        self.model_path.write_text(json.dumps(model.to_json(), indent=2) + "\n")
        return model

    def describe(self) -> str:
        spec = self.study.spec
        span = ", ".join(f"{k} {'–'.join(map(str, spec[k]))}"
                         for k in ("workers", "sources", "batch_rows_per_worker"))
        delays = " and ".join("no delay" if d == 0 else f"{d:g} ms" for d in spec["delay_ms"])
        return f"sg, {'/'.join(spec['apps'])}, {span}, {delays}"
