"""Offline stand-ins for PKG Table I's datasets, matched on key count and p1 (the share of the hottest key).

The real traces (Wikipedia page views, tweets, cashtags) load with ``pageviews:``/``file:`` when you
have them; these presets regenerate their shape so every result can be set beside Table I without them.
"""

from __future__ import annotations

from skewbench.workloads.registry import workload
from skewbench.workloads.synthetic import Draws, drift, zipf


@workload("wp")
def wikipedia(messages: int = 22_000_000, seed: int = 0) -> Draws:
    """WP stand-in: Zipf over 2.9M pages with p1 = 9.32% (Wikipedia page visits, PKG Table I)."""
    return zipf(messages, seed, keys=2_900_000, p1=0.0932)


@workload("tw")
def twitter(messages: int = 20_000_000, seed: int = 0) -> Draws:
    """TW stand-in: Zipf over 31M words with p1 = 2.67% (tweet words; Table I has 1.2G messages)."""
    return zipf(messages, seed, keys=31_000_000, p1=0.0267)


@workload("ct")
def cashtags(messages: int = 690_000, seed: int = 0) -> Draws:
    """CT stand-in: 2.9k cashtags, p1 = 3.29%, the popular ones drifting over 4 weeks (PKG Table I)."""
    return drift(messages, seed, keys=2_900, p1=0.0329, periods=4, head=50, churn=0.5)
