"""Counts per key merged by binary search (skewbench.counts) equal the sort-everything reference, and the
sorted set operations numpy's."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from skewbench.counts import add_counts, present, union

keys = st.lists(st.integers(0, 50), max_size=40)


def reference(held_keys, held_counts, new_keys, new_counts):
    merged, inverse = np.unique(np.concatenate([held_keys, new_keys]), return_inverse=True)
    totals = np.zeros((len(merged), *held_counts.shape[1:]), np.int64)
    np.add.at(totals, inverse, np.concatenate([held_counts, new_counts]))
    return merged, totals


@settings(max_examples=200, deadline=None)
@given(held=keys, new=keys, dtype=st.sampled_from([np.int64, np.uint64]))
def test_add_counts_equals_the_reference(held, new, dtype):
    held_keys = np.unique(np.array(held, dtype=dtype))
    held_counts = np.arange(1, len(held_keys) + 1, dtype=np.int64)
    new_keys = np.array(new, dtype=dtype)  # any order, repeats
    new_counts = np.arange(len(new_keys), dtype=np.int64) % 3 + 1
    before = held_counts.copy()
    got = add_counts(held_keys, held_counts, new_keys, new_counts)
    want = reference(held_keys, held_counts, new_keys, new_counts)
    assert got[0].dtype == dtype and np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert np.array_equal(held_counts, before)  # the inputs are left as they were


@settings(max_examples=100, deadline=None)
@given(held=keys, new=keys, classes=st.tuples(st.integers(1, 3), st.integers(1, 3)))
def test_add_counts_pads_rows_to_the_wider(held, new, classes):
    held_keys, new_keys = np.unique(np.array(held, np.int64)), np.array(new, np.int64)
    held_counts = np.ones((len(held_keys), classes[0]), np.int64)
    new_counts = np.full((len(new_keys), classes[1]), 2, np.int64)
    got = add_counts(held_keys, held_counts, new_keys, new_counts)
    width = max(classes)
    pad = [np.pad(c, ((0, 0), (0, width - c.shape[1]))) for c in (held_counts, new_counts)]
    want = reference(held_keys, pad[0], new_keys, pad[1])
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@settings(max_examples=200, deadline=None)
@given(held=keys, new=keys)
def test_union_equals_union1d_with_the_keys_new_to_it(held, new):
    a, b = np.unique(np.array(held, np.uint64)), np.unique(np.array(new, np.uint64))
    merged, fresh = union(a, b)
    assert np.array_equal(merged, np.union1d(a, b)) and np.array_equal(fresh, np.setdiff1d(b, a))



@settings(max_examples=200, deadline=None)
@given(held=keys, among=keys, dtype=st.sampled_from([np.int64, np.uint64]))
def test_present_equals_isin(held, among, dtype):
    a, b = np.unique(np.array(held, dtype)), np.array(among, dtype)  # ``among`` in any order, with repeats
    assert np.array_equal(present(a, b), np.isin(a, b))
