"""Partitioning that counts the aggregation cost (Katsipoulakis, Labrinidis, Chrysanthis, "A Holistic View of
Stream Partitioning Costs", PVLDB 10(11): 1286-1297, 2017): CM, LM, AM and cAM.

A stateful operator split over W workers pays twice: the busiest worker's tuples, and the merge of the
partial results downstream, which grows with the distinct keys each worker holds (its *cardinality*).
The paper's partitioners weigh both. Each key has two hash choices, as in PKG, and every source keeps,
per worker, the tuples it sent there and the distinct keys it sent there:

* ``cm`` — cardinality: every tuple to the choice with fewer distinct keys (a key may use both);
* ``lm`` — load: every tuple to the choice with the lower sum of its tuple count and its distinct-key
  count, each normalised to the spread over all workers, ``(x - min) / (max - min + 1)``, equal weights;
* ``am`` — affinity: a key this source has sent to one of its choices goes there again; a new key goes
  to the choice with fewer distinct keys;
* ``cam`` — the same with tuple counts for new keys: PoTC (:mod:`skewbench.schemes.potc`) but for ties.

Only the abstract of the paper could be read here. The rules above are those of the first author's code
(github.com/BarbaNikos/CppStream, ``ca_partition_lib.h`` and ``partition_policy.h`` at 328fdd0), whose
classes ``cn``, ``ln``, ``an`` and ``can`` match these names by that repository's commit messages and by the
Dalton authors' re-implementation of CM and cAM (github.com/ezapridou/Dalton); that code was read to
understand the rules, not copied. Choices made here:

* Distinct counts are exact, over everything the source has sent (the code also has HyperLogLog
  estimates, and resets its state every window of its experiments; a run here is one window).
* The two choices are :func:`skewbench.hashing.two_choices`, distinct for W ≥ 2, as for ``pkg`` (the
  authors' two Murmur3 seeds may coincide, giving a key one worker).
* Ties go to the second choice, as in the authors' code (PKG's and PoTC's go to the first).
* A key's state may live on both of its choices for all four: CM and LM split keys, and under AM and
  cAM each source fixes a key on the choice it saw as better, not necessarily the same one.
"""

from __future__ import annotations

import numba
import numpy as np

from skewbench.hashing import distinct_choices, two_choices
from skewbench.scheme import TwoChoices, as_fps, register
from skewbench.schemes.potc import KeyTable, run_growing, table_slot

CM, LM, AM, CAM = 0, 1, 2, 3  # the policies, as the kernel knows them


@numba.njit(cache=True)
def _spread(values, x):
    """``(values[x] - min) / (max - min + 1)``: LM's normalisation over all workers."""
    low, high = values.min(), values.max()
    return (values[x] - low) / (high - low + 1.0)


@numba.njit(cache=True)
def _choose(policy, a, b, counts, cards):
    """The choice for a tuple of a key this source has not fixed; ties go to ``b``."""
    if policy == LM:
        return a if _spread(cards, a) + _spread(counts, a) < _spread(cards, b) + _spread(counts, b) else b
    if policy == CAM:
        return a if counts[a] < counts[b] else b
    return a if cards[a] < cards[b] else b  # CM and AM


@numba.njit(cache=True)
def _route(fps, start, keys, vals, size, workers, seed, policy, counts, cards, out):
    """Route ``fps[start:]``; ``vals`` holds per key which choices this source sent it to (bit 0: the
    first, bit 1: the second). Returns where it stopped (the table half full) or the end."""
    for i in range(start, fps.shape[0]):
        fp = fps[i]
        a, b = two_choices(fp, workers, seed) if workers > 1 else (np.int64(0), np.int64(0))
        s = table_slot(keys, vals, fp)
        held = max(vals[s], 0)
        if policy >= AM and held:  # affinity: where this source sent the key before
            w = a if held & 1 else b
        else:
            w = _choose(policy, a, b, counts, cards)
        bit = 1 if w == a else 2
        if not held & bit:  # a key new to this worker (from this source)
            cards[w] += 1.0
            if vals[s] < 0:
                keys[s] = fp
                size[0] += 1
            vals[s] = held | bit
        counts[w] += 1.0
        out[i] = w
        if 2 * size[0] > keys.shape[0]:
            return i + 1
    return fps.shape[0]


def route_reference(fps, workers: int, seed: int, policy: int, held: dict, counts, cards) -> np.ndarray:
    """Plain-Python reference for the kernel (updates ``held``: key → set of workers, and the counts)."""
    out = np.empty(len(fps), dtype=np.int64)
    for i, fp in enumerate(as_fps(fps)):
        a, b = (int(w) for w in distinct_choices(np.array([fp], dtype=np.uint64), workers, 2, seed)[0]) \
            if workers > 1 else (0, 0)
        mine = held.setdefault(int(fp), set())
        if policy >= AM and mine:
            w = a if a in mine else b
        elif policy == LM:
            score = {x: (cards[x] - cards.min()) / (cards.max() - cards.min() + 1.0)
                     + (counts[x] - counts.min()) / (counts.max() - counts.min() + 1.0) for x in (a, b)}
            w = a if score[a] < score[b] else b
        elif policy == CAM:
            w = a if counts[a] < counts[b] else b
        else:
            w = a if cards[a] < cards[b] else b
        if w not in mine:
            mine.add(w)
            cards[w] += 1
        counts[w] += 1
        out[i] = w
    return out


class AggregationCost(TwoChoices):
    """The four partitioners' common part: two choices, per-worker tuple and distinct-key counts of this
    source. Subclasses name the policy."""

    policy: int

    def reset(self) -> None:
        self._counts = np.zeros(self.workers, dtype=np.float64)
        self._cards = np.zeros(self.workers, dtype=np.float64)
        self._held = KeyTable()  # key → the choices this source sent it to (two bits)

    @property
    def loads(self) -> np.ndarray:
        """This source's tuples per worker."""
        return self._counts

    @property
    def cardinalities(self) -> np.ndarray:
        """This source's distinct keys per worker (the aggregation cost it leaves there)."""
        return self._cards

    def route_many(self, fps, now=None) -> np.ndarray:
        return run_growing(_route, self._held, as_fps(fps), self.workers, self.seed & 0xFFFFFFFF, self.policy,
                           self._counts, self._cards)

    def table_size(self) -> int:
        return len(self._held)


@register
class CardinalityMin(AggregationCost):
    """CM (Katsipoulakis et al., PVLDB 2017): every tuple to the choice with fewer distinct keys from this source."""

    name = "cm"
    policy = CM
    splits_keys = True


@register
class LoadMin(AggregationCost):
    """LM (Katsipoulakis et al., PVLDB 2017): every tuple to the choice with the lower normalised tuples plus
    normalised distinct keys."""

    name = "lm"
    policy = LM
    splits_keys = True


@register
class AffinityMin(AggregationCost):
    """AM (Katsipoulakis et al., PVLDB 2017): a key stays where this source first sent it, the choice with
    fewer distinct keys."""

    name = "am"
    policy = AM


@register
class CountAffinityMin(AggregationCost):
    """cAM (Katsipoulakis et al., PVLDB 2017): a key stays where this source first sent it, the choice with
    fewer tuples (PoTC, but ties go to the second choice)."""

    name = "cam"
    policy = CAM
