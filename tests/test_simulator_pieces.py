"""A stream simulated piece by piece — generated on demand, never held — gives exactly the result
of the same stream held in memory and routed an interval at a time, for every registered scheme."""

from __future__ import annotations

import numpy as np
import pytest

import skewbench.schemes  # noqa: F401  (registers every scheme)
from skewbench.scheme import REGISTRY
from skewbench.simulator import engine, simulate
from skewbench.workloads import parse

MESSAGES = 200_000
PIECE = 30_000  # pieces of the generated stream: intervals (70,001) span several, cut mid-piece
TIMING = {"route_seconds", "msgs_per_s", "plan_seconds_mean"}
# W in {5, 50} x S in {1, 5} x both splits (with one source both splits are the same)
SHAPES = [(w, 1, "shuffle") for w in (5, 50)] + [(w, 5, split) for w in (5, 50) for split in ("shuffle", "key")]


def stable(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in TIMING}


@pytest.fixture(scope="module")
def streams():
    """wp's Zipf ranks (a known key space) and LN1's log-normal draws (ids found as keys appear)."""
    return {spec: (parse(spec, MESSAGES, seed=4, lazy=False), parse(spec, MESSAGES, seed=4, lazy=True))
            for spec in ("wp", "lognormal:preset=LN1")}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_scheme_gives_the_same_row_from_pieces(name, streams, monkeypatch):
    for spec, (held, generated) in streams.items():
        for workers, sources, split in SHAPES:
            options = dict(split=split, interval=70_001, seed=1)
            whole = simulate(held, name, workers, sources, **options)
            with monkeypatch.context() as patch:
                patch.setattr(engine, "PIECE_MESSAGES", PIECE)
                pieces = simulate(generated, name, workers, sources, **options)
            assert pieces.routes is None
            assert stable(pieces.row) == stable(whole.row), (spec, workers, sources, split)
            np.testing.assert_array_equal(pieces.timeseries.to_numpy(), whole.timeseries.to_numpy())


@pytest.mark.parametrize("name", ["kg", "consistent", "pkg", "llfd"])
def test_a_worker_added_mid_piece_moves_the_same_keys(name, streams, monkeypatch):
    held, generated = streams["wp"]
    whole = simulate(held, name, 10, 3, schedule={100_003: 11}, seed=1)
    monkeypatch.setattr(engine, "PIECE_MESSAGES", PIECE)
    pieces = simulate(generated, name, 10, 3, schedule={100_003: 11}, seed=1)
    assert stable(pieces.row) == stable(whole.row) and whole.row["final_workers"] == 11


def test_a_held_stream_routed_in_pieces_keeps_every_route(streams, monkeypatch):
    held, _ = streams["wp"]
    whole = simulate(held, "pkg", 9, 4)
    monkeypatch.setattr(engine, "PIECE_MESSAGES", 12_345)
    np.testing.assert_array_equal(simulate(held, "pkg", 9, 4).routes, whole.routes)
