import mmh3
import numpy as np
import pytest
from hypothesis import given, strategies as st

from skewbench.hashing import SEED_FOR_8, distinct_choices, fingerprint, fingerprints, murmur64


def _mmh3(value: int, seed: int) -> int:
    return mmh3.hash64(value.to_bytes(8, "little"), SEED_FOR_8 if seed == 8 else seed, signed=False)[0]


@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=50), st.integers(0, 2**32 - 1))
def test_murmur64_equals_reference_murmur3(values, seed):
    got = murmur64(np.array(values, dtype=np.uint64), seed)
    assert got.tolist() == [_mmh3(v, seed) for v in values]


def test_seed_8_whose_murmur3_hashes_are_all_even_is_replaced():
    values = np.arange(1000, dtype=np.uint64)
    assert all(mmh3.hash64(int(v).to_bytes(8, "little"), 8, signed=False)[0] % 2 == 0 for v in values)
    assert 400 < int((murmur64(values, 8) % np.uint64(2)).sum()) < 600


def test_fingerprints_are_murmur3_of_the_key_bytes():
    assert fingerprint("the") == mmh3.hash64("the".encode(), 0, signed=False)[0]
    assert fingerprint("ü") == mmh3.hash64("ü".encode("utf-8"), 0, signed=False)[0]
    assert fingerprint(-3) == mmh3.hash64((-3).to_bytes(8, "little", signed=True), 0, signed=False)[0]
    ints = np.array([0, 1, -3, 2**40])
    assert fingerprints(ints).tolist() == [fingerprint(int(k)) for k in ints]
    assert fingerprints(["a", "b"]).tolist() == [fingerprint("a"), fingerprint("b")]
    with pytest.raises(TypeError):
        fingerprint(1.5)


def _reference_choices(fp, workers, d, seed):
    free = list(range(workers))
    chosen = []
    for j in range(d):
        r = _mmh3(int(fp), (seed + j) & 0xFFFFFFFF) % (workers - j)
        chosen.append(free.pop(r))
    return chosen


@pytest.mark.parametrize("workers,d", [(2, 2), (7, 2), (7, 7), (100, 5)])
def test_distinct_choices_equal_a_plain_fisher_yates_reference(workers, d):
    fps = fingerprints(np.arange(300))
    got = distinct_choices(fps, workers, d, seed=9)
    want = [_reference_choices(fp, workers, d, 9) for fp in fps]
    assert got.tolist() == want
    assert all(len(set(row)) == d for row in got.tolist())


def test_second_choice_is_uniform_over_the_other_workers():
    choices = distinct_choices(fingerprints(np.arange(200_000)), 10, 2, seed=0)
    counts = np.bincount(choices[:, 1] - (choices[:, 1] > choices[:, 0]), minlength=9)
    assert counts.min() > 0.95 * counts.mean() and counts.max() < 1.05 * counts.mean()


def test_impossible_d_is_refused():
    with pytest.raises(ValueError, match="1 <= d <= workers"):
        distinct_choices(fingerprints(np.arange(3)), 3, 4, 0)
