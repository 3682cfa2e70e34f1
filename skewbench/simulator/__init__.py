"""Exact, fast simulation of partitioning schemes over a keyed stream (balls into bins)."""

from skewbench.simulator.engine import SimResult, Simulation, simulate

__all__ = ["SimResult", "Simulation", "simulate"]
