"""Synthetic streams generated piece by piece are, message for message, the streams generated at once."""

import numpy as np
import pytest

from skewbench.stream import GeneratedStream, Stream
from skewbench.workloads import parse, registry

DRAWN = ["zipf:z=1.1,keys=5000", "lognormal:preset=LN1", "lognormal:preset=LN2", "lognormal:mu=3,sigma=1.5",
         "fzipf:keys=3000,f=0.3,intervals=9", "lzipf:keys=3000,f=1.5,workers=8,intervals=9", "drift", "wp", "tw",
         "ct"]


@pytest.mark.parametrize("spec", DRAWN)
def test_pieces_concatenate_to_the_stream_in_memory(spec):
    held, generated = (parse(spec, 50_001, seed=3, lazy=lazy) for lazy in (False, True))
    assert isinstance(held, Stream) and isinstance(generated, GeneratedStream) and generated.name == spec
    pieces = list(generated.chunks(7_000))
    assert [len(p) for p in pieces] == [7_000] * 7 + [1_001]
    np.testing.assert_array_equal(np.concatenate([p.fps for p in pieces]), held.fps)
    np.testing.assert_array_equal(np.concatenate([p.clock for p in pieces]), held.clock)
    assert len({p.n_keys for p in pieces}) == 1 or spec.startswith("lognormal")  # log-normal ids grow
    assert generated.distinct_keys == held.distinct_keys  # anything else: the whole stream, in memory


def test_long_streams_are_generated_when_read_and_others_held(monkeypatch):
    monkeypatch.setattr(registry, "GENERATE_ABOVE", 10_000)
    assert isinstance(parse("wp", 10_000), Stream)
    assert isinstance(parse("wp", 10_001), GeneratedStream)
    assert isinstance(parse("wp", 10_001, lazy=False), Stream)
    assert isinstance(parse("country", 10**5, lazy=True), Stream)  # drawn all at once: no pieces


def test_bad_parameters_fail_before_anything_is_drawn():
    with pytest.raises(registry.WorkloadError, match="keys must be an integer in 1.."):
        parse("zipf:keys=0", messages=10**12)
