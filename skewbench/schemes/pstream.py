"""PStream (Chen, Zhang, Jin, "PStream: a popularity-aware differentiated distributed stream processing system",
IEEE Trans. Computers, doi:10.1109/TC.2020.3019689): hot keys are shuffled over every worker, rare keys hashed;
the hot keys are found by a light probabilistic counter whose counts decay.

The rules, from the authors' description and their Storm code (github.com/CGCL-codes/PStream, 64dd135, with its
``Threshold_r = 6``, ``Threshold_l = 16``, ``Threshold_p = 0.01``; read to understand, not copied):

* A message is sampled with probability 2^-r. A sampled message draws a level: r plus the fair coin flips that
  come up 0 before the first 1, at most l. (A key of frequency f shows level r + i about f · 2^-(r+i+1) times.)
* The synopsis keeps, per sampled key, the set of levels it has drawn. A key becomes hot once its set holds two
  distinct levels: a key seen rarely shows one level at most before its set decays.
* After every sampled message, each key's set decays with probability p: its levels move down by one and the
  lowest falls off. A key whose set empties leaves the synopsis and is hot no longer.
* A hot key's message goes to the next worker in this source's round robin (shuffle grouping); any other to
  kg's worker.

Choices made here:

* **Per source, at once.** Each source's router keeps its own synopsis and hot set and updates them at each of
  its sampled messages, from seeded draws, so that the simulator replays it exactly. (The authors run one
  predictor for the whole stream, fed asynchronously, and draw from an unseeded generator.)
* **An exact hot set.** The code keeps the hot keys in a counting Bloom filter of 16 counters and 4 hashes,
  whose false positives would make most keys hot once a few are.
* **Order-free decay.** A key's decay draw is a seeded hash of the key and the sample's number, the same in
  whatever order the synopsis is visited (the kernel and :func:`route_reference` agree).
"""

from __future__ import annotations

import numba
import numpy as np

from skewbench.hashing import choice_hash, murmur64, table_slot
from skewbench.scheme import Scheme, as_fps, register

COIN_SALT, DECAY_SALT = 301, 401  # hash salts of the coin flips and the decay draws
# The router's counters, one int64 array (the kernel updates them in place).
MESSAGES, SAMPLES, TURN, USED = range(4)


@numba.njit(inline="always")
def _level(h, r, top):
    """The level a sampled message draws from the bits of ``h`` above the first ``r``."""
    rest, level = h >> np.uint64(r), r
    while level < top and rest & np.uint64(1) == 0:
        rest >>= np.uint64(1)
        level += 1
    return level


@numba.njit(cache=True)
def _route(fps, start, out, c, seed, workers, r, top, threshold, keys, flags, levels, hot):
    """Route ``fps[start:]`` in order; returns where it stopped (before the end when the synopsis is half full:
    the caller rebuilds it and calls again).  ``flags``: 0 empty, 1 in the synopsis, 2 left it; a key decays
    when its draw is below ``threshold``."""
    sample_mask = np.uint64((1 << r) - 1)
    for i in range(start, fps.shape[0]):
        if 2 * (c[USED] + 1) > keys.shape[0]:
            return i
        fp = fps[i]
        k = table_slot(keys, flags, fp)
        if flags[k] == 1 and hot[k]:
            out[i] = c[TURN] % workers
            c[TURN] += 1
        else:
            out[i] = np.int64(choice_hash(fp, seed, 0) % np.uint64(workers))
        c[MESSAGES] += 1
        h = choice_hash(np.uint64(c[MESSAGES]), seed, COIN_SALT)
        if h & sample_mask != 0:
            continue
        if flags[k] == 0:
            c[USED] += 1
        if flags[k] != 1:
            keys[k], flags[k], levels[k], hot[k] = fp, 1, 0, 0
        levels[k] |= np.uint32(1) << np.uint32(_level(h, r, top))
        if levels[k] & (levels[k] - np.uint32(1)) != 0:  # two distinct levels
            hot[k] = 1
        c[SAMPLES] += 1
        for j in range(keys.shape[0]):
            if flags[j] == 1 and choice_hash(keys[j], seed, DECAY_SALT + c[SAMPLES]) < threshold:
                levels[j] >>= np.uint32(1)
                if levels[j] == 0:
                    flags[j], hot[j] = 2, 0
    return fps.shape[0]


def decay_threshold(decay: float) -> int:
    """Draws (64-bit) below this decay: a share ``decay`` of them."""
    return min(int(decay * 2 ** 64), 2 ** 64 - 1)


def _synopsis(size: int):
    return (np.zeros(size, dtype=np.uint64), np.zeros(size, dtype=np.int8), np.zeros(size, dtype=np.uint32),
            np.zeros(size, dtype=np.int8))


@register
class PStream(Scheme):
    """PStream: a key with two distinct levels in its decaying synopsis of sampled coin flips is hot and goes
    round robin over every worker; the rest go to kg's worker; per source, seeded.

    >>> from skewbench.hashing import fingerprints
    >>> hot = np.repeat(fingerprints(np.arange(1)), 20_000)  # one key: hot after a few samples, then spread
    >>> int((np.bincount(PStream(8).route_many(hot), minlength=8) > 0).sum())
    8
    """

    name = "pstream"
    splits_keys = True
    state_everywhere = True  # a hot key's messages go to every worker

    def __init__(self, workers: int, seed: int = 0, r: int = 6, levels: int = 16, decay: float = 0.01):
        if not (1 <= int(r) < int(levels) <= 31 and 0 <= float(decay) <= 1):
            raise ValueError(f"need 1 <= r < levels <= 31 and 0 <= decay <= 1, got r={r}, levels={levels}, "
                             f"decay={decay}")
        self.r, self.levels, self.decay = int(r), int(levels), float(decay)
        super().__init__(workers, seed)

    def reset(self) -> None:
        self._c = np.zeros(4, dtype=np.int64)
        self._synopsis = _synopsis(64)

    def candidates(self, fp: int) -> np.ndarray:
        return np.arange(self.workers, dtype=np.int64)

    def hot_keys(self) -> int:
        """Keys hot now."""
        keys, flags, _, hot = self._synopsis
        return int(((flags == 1) & (hot == 1)).sum())

    def route_many(self, fps, now=None) -> np.ndarray:
        fps = as_fps(fps)
        out = np.empty(fps.shape[0], dtype=np.int64)
        i = 0
        while i < fps.shape[0]:
            i = _route(fps, i, out, self._c, self.seed & 0xFFFFFFFF, self.workers, self.r, self.levels,
                       np.uint64(decay_threshold(self.decay)), *self._synopsis)
            if i < fps.shape[0]:
                self._rebuild()
        return out

    def _rebuild(self) -> None:
        """The synopsis again without the keys that left it, in twice the slots its keys need."""
        keys, flags, levels, hot = self._synopsis
        kept = np.flatnonzero(flags == 1)
        self._synopsis = fresh = _synopsis(1 << max(6, int(4 * (len(kept) + 1) - 1).bit_length()))
        for j in kept:
            k = table_slot(fresh[0], fresh[1], keys[j])
            fresh[0][k], fresh[1][k], fresh[2][k], fresh[3][k] = keys[j], 1, levels[j], hot[j]
        self._c[USED] = len(kept)


def route_reference(router: PStream, fps) -> np.ndarray:
    """Plain-Python reference for the kernel: the module docstring's rules over a dict, from a fresh ``router``'s
    parameters (the tests compare the two)."""
    seed, workers, r = router.seed & 0xFFFFFFFF, router.workers, router.r

    def hashed(value: int, salt: int) -> int:
        return int(murmur64(np.array([value], dtype=np.uint64), seed + salt)[0])

    synopsis, turn, samples, out = {}, 0, 0, []  # key -> [levels, hot]
    for n, fp in enumerate((int(f) for f in as_fps(fps)), start=1):
        if fp in synopsis and synopsis[fp][1]:
            out.append(turn % workers)
            turn += 1
        else:
            out.append(hashed(fp, 0) % workers)
        h = hashed(n, COIN_SALT)
        if h % 2 ** r:
            continue
        flips = h >> r
        zeros = (flips & -flips).bit_length() - 1 if flips else 64
        entry = synopsis.setdefault(fp, [0, False])
        entry[0] |= 1 << min(r + zeros, router.levels)
        entry[1] = entry[1] or bin(entry[0]).count("1") >= 2
        samples += 1
        for key in list(synopsis):
            if hashed(key, DECAY_SALT + samples) < decay_threshold(router.decay):
                synopsis[key][0] >>= 1
                if not synopsis[key][0]:
                    del synopsis[key]
    return np.array(out, dtype=np.int64)
