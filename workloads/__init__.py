"""Workloads: seeded generators and file loaders, each giving a :class:`~skewbench.stream.Stream`.

A workload is named by a SPEC, ``name`` or ``name:param=value,...`` (``skewbench workloads`` lists
them); :func:`parse` turns a SPEC into a stream and :class:`WorkloadError` reports a bad one.
Imported as ``skewbench.workloads``.
"""

from skewbench.workloads.registry import WorkloadError, available, parse, split_spec, workload
from skewbench.workloads import files, graph, presets, synthetic, text, ticks  # noqa: F401,E402 (register)

__all__ = ["WorkloadError", "available", "parse", "split_spec", "workload"]
