"""The PKG paper's simulation claims (Sec. V Q1/Q2), reproduced on the synthetic stand-ins for its datasets.

Each claim is checked as the median over several hash seeds: which workers the few hottest keys
share is luck of the hash, and a single seed would test that luck rather than the scheme.
"""

import numpy as np
import pytest

from skewbench.simulator import simulate
from skewbench.workloads import parse

MESSAGES = 400_000
HASH_SEEDS = range(7)


@pytest.fixture(scope="module")
def streams():
    return {spec: parse(spec, messages=MESSAGES, seed=11) for spec in ("wp", "lognormal:preset=LN1")}


def median_fraction(stream, scheme, workers, sources=5, final=False):
    rows = [simulate(stream, scheme, workers, sources, seed=seed).row for seed in HASH_SEEDS]
    values = [r["final_imbalance"] / r["messages"] if final else r["imbalance_fraction"] for r in rows]
    return float(np.median(values))


@pytest.mark.parametrize("spec,workers,factor", [
    ("wp", 5, 1e3), ("wp", 10, 1e3),
    ("lognormal:preset=LN1", 5, 1e3),
    # LN1's two hottest keys hold 28% of the stream; at W=10, near its 2/p1 = 13.6 knee, PKG is only
    # one order of magnitude below hashing, by how often their candidate pairs overlap.
    ("lognormal:preset=LN1", 10, 10),
])
def test_pkg_is_orders_of_magnitude_below_hashing_for_small_w(streams, spec, workers, factor):
    stream = streams[spec]
    assert median_fraction(stream, "pkg", workers) < median_fraction(stream, "kg", workers) / factor


def test_wp_like_stream_has_the_papers_p1(streams):
    assert streams["wp"].p1 == pytest.approx(0.0932, rel=0.05)


def test_transition_to_high_imbalance_happens_as_w_passes_two_over_p1(streams):
    # Q1: "the behavior is binary": once W > 2/p1 the hottest key alone overloads its two workers,
    # so the final imbalance is at least (p1/2 - 1/W) of the stream; below the knee it is a handful of messages.
    stream = streams["wp"]
    knee = 2 / stream.p1
    for workers in (5, 10, 15):
        assert workers < 0.8 * knee and median_fraction(stream, "pkg", workers) < 1e-4
    for workers in (30, 50, 100):
        floor = stream.p1 / 2 - 1 / workers
        assert workers > 1.25 * knee and median_fraction(stream, "pkg", workers, final=True) > 0.95 * floor


def test_local_estimation_stays_within_an_order_of_magnitude_of_the_global_oracle():
    stream = parse("lognormal:preset=LN2", messages=MESSAGES, seed=3)
    for workers in (5, 10):
        oracle = median_fraction(stream, "pkg-global", workers, sources=1)
        for sources in (5, 20):
            # Resolution: each source's estimate may be off by a message or two, so S/n is the floor.
            assert median_fraction(stream, "pkg", workers, sources) < 10 * max(oracle, sources / MESSAGES)
