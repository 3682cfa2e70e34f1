"""Counts per key as two arrays: the keys, sorted and unique, and a row of counts for each.

A batch's m keys merge into n held ones by binary search and one insertion, O(n + m log m).  Sorting
the concatenation (``np.unique``) with ``np.add.at`` costs O((n + m) log(n + m)) and a slow scatter:
on the driver, the live controller's counts took 1.7 s per micro-batch at 1.8M keys seen.
"""

from __future__ import annotations

import numpy as np


def union(keys: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted unique ``keys`` with the sorted unique ``new`` added, and those of ``new`` not in ``keys``."""
    at, found = find(keys, new)
    return np.insert(keys, at[~found], new[~found]), new[~found]


def add_counts(keys: np.ndarray, counts: np.ndarray, new_keys: np.ndarray,
               new_counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge ``(new_keys, new_counts)`` (any order, repeats summed) into the sorted unique ``keys`` with
    their ``counts`` (rows may be 2-D); new arrays, the inputs unchanged."""
    if counts.ndim == 2:  # pad to the wider of the two (Naive Bayes grows a class column on demand)
        width = max(counts.shape[1], new_counts.shape[1])
        counts, new_counts = (np.pad(c, ((0, 0), (0, width - c.shape[1]))) for c in (counts, new_counts))
    new_keys, inverse = np.unique(new_keys, return_inverse=True)
    summed = np.zeros((len(new_keys), *new_counts.shape[1:]), dtype=np.int64)
    np.add.at(summed, inverse.ravel(), new_counts)
    at, found = find(keys, new_keys)
    merged = counts.astype(np.int64)
    merged[at[found]] += summed[found]
    return (np.insert(keys, at[~found], new_keys[~found]),
            np.insert(merged, at[~found], summed[~found], axis=0))


def present(keys: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Which of the sorted unique ``keys`` are in ``among`` (any order): ``np.isin`` by binary search,
    O(n + m log n) where ``np.isin`` sorts both (a worker handing 20,000 of 100,000 counters over: 7 -> 1 ms)."""
    mask = np.zeros(len(keys), dtype=bool)
    at, found = find(keys, np.asarray(among, dtype=keys.dtype))
    mask[at[found]] = True
    return mask


def find(keys: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``new`` is or would go in the sorted ``keys``, and whether it is there (``np.insert``
    of ``new[~found]`` at ``at[~found]`` adds them in order)."""
    at = np.searchsorted(keys, new)
    if not len(keys):
        return at, np.zeros(len(new), dtype=bool)
    return at, keys[np.minimum(at, len(keys) - 1)] == new
