"""Keys enter the library once, as 64-bit Murmur3 fingerprints; workers are drawn from those.

Every scheme routes *fingerprints* (``uint64``): the first 64 bits of MurmurHash3_x64_128 over the
key's bytes (UTF-8 for ``str``, 8 little-endian bytes for ``int``, as-is for ``bytes``), seed 0.
A scheme's *j*-th hash of a key is MurmurHash3_x64_128 again, over the fingerprint's 8 bytes with
seed ``seed + j``.  Both are the same on every machine and in every process — never Python's salted
``hash()`` — so the simulator and Spark executors agree on every route.

The PKG paper hashed with 64-bit Murmur; Storm 1.x and the original PKG code took ``h1 % W`` and
``h2 % W`` independently, so a key whose two hashes collide modulo W silently got one worker.
:func:`distinct_choices` draws *d* distinct workers instead (a hashed partial Fisher–Yates shuffle):
the *j*-th choice is uniform over the W − j workers not chosen yet.

>>> fingerprint("the") == fingerprint("the") and fingerprint(7) != fingerprint("7")
True
>>> ch = distinct_choices(np.array([fingerprint("the")], dtype=np.uint64), workers=5, d=2, seed=0)
>>> int(ch[0, 0]) != int(ch[0, 1])
True
"""

from __future__ import annotations

from collections.abc import Iterable

import mmh3
import numba
import numpy as np

_C1 = np.uint64(0x87C37B91114253D5)
_C2 = np.uint64(0x4CF5AD432745937F)
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_MASK32 = 0xFFFFFFFF


@numba.njit(inline="always")
def _fmix64(k):
    k ^= k >> np.uint64(33)
    k *= _M1
    k ^= k >> np.uint64(33)
    k *= _M2
    k ^= k >> np.uint64(33)
    return k


# MurmurHash3_x64_128 over 8 bytes with seed 8 xors the length (8) into both halves: h2 becomes 0, h1 = h2
# before the final sums, and the first half is 2 * fmix(k), always even (mmh3 agrees). Modulo an even W that
# halves the workers, so seed 8 is replaced by this one (any seed the schemes' seed + j do not reach).
SEED_FOR_8 = 0x5BD1E995


@numba.njit(inline="always")
def murmur64_of_u64(value, seed):
    """First half of MurmurHash3_x64_128 over the 8 little-endian bytes of ``value``.

    Equal to ``mmh3.hash64(value.to_bytes(8, "little"), seed, signed=False)[0]``, except that seed 8 (whose
    hashes are all even) is taken as ``SEED_FOR_8``.
    """
    if seed == 8:
        seed = SEED_FOR_8
    h1 = np.uint64(seed)
    h2 = np.uint64(seed)
    k1 = np.uint64(value) * _C1
    k1 = (k1 << np.uint64(31)) | (k1 >> np.uint64(33))
    k1 *= _C2
    h1 ^= k1
    h1 ^= np.uint64(8)
    h2 ^= np.uint64(8)
    h1 += h2
    h2 += h1
    h1 = _fmix64(h1)
    h2 = _fmix64(h2)
    return h1 + h2


@numba.njit(cache=True)
def _murmur64_array(values, seed, out):
    for i in range(values.shape[0]):
        out[i] = murmur64_of_u64(values[i], seed)


def murmur64(values: np.ndarray, seed: int) -> np.ndarray:
    """Vectorised :func:`murmur64_of_u64` over an integer array; returns ``uint64``."""
    values = np.ascontiguousarray(values).astype(np.uint64, copy=False)
    out = np.empty(values.shape[0], dtype=np.uint64)
    _murmur64_array(values, np.uint64(seed & _MASK32), out)
    return out


def fingerprint(key: str | bytes | int) -> int:
    """The 64-bit fingerprint of one key (see module docstring)."""
    if isinstance(key, str):
        data = key.encode("utf-8")
    elif isinstance(key, bytes):
        data = key
    elif isinstance(key, (int, np.integer)):
        data = int(key).to_bytes(8, "little", signed=True)
    else:
        raise TypeError(f"keys must be str, bytes or int, not {type(key).__name__}")
    return mmh3.hash64(data, 0, signed=False)[0]


def fingerprints(keys: Iterable | np.ndarray) -> np.ndarray:
    """Fingerprints of many keys; integer arrays take a compiled fast path."""
    arr = np.asarray(keys) if not isinstance(keys, np.ndarray) else keys
    if arr.dtype.kind in "iu":
        return murmur64(arr.astype(np.int64, copy=False).view(np.uint64), 0)
    return np.fromiter((fingerprint(k) for k in arr), dtype=np.uint64, count=len(arr))


@numba.njit(inline="always")
def choice_hash(fp, seed, j):
    """The j-th hash of a fingerprint for a scheme seeded with ``seed``."""
    return murmur64_of_u64(fp, (seed + j) & 0xFFFFFFFF)


@numba.njit(inline="always")
def two_choices(fp, workers, seed):
    """The first two columns of :func:`distinct_choices` for one fingerprint (W ≥ 2), without allocating."""
    first = np.int64(choice_hash(fp, seed, 0) % np.uint64(workers))
    r = np.int64(choice_hash(fp, seed, 1) % np.uint64(workers - 1))
    return first, r + (r >= first)


@numba.njit(cache=True)
def distinct_choices_into(fps, workers, d, seed, out):
    """Kernel of :func:`distinct_choices`: fills ``out[:, :d]`` (seed already masked to 32 bits)."""
    taken = np.empty(d, dtype=np.int64)  # the choices so far, kept sorted
    for i in range(fps.shape[0]):
        for j in range(d):
            r = np.int64(choice_hash(fps[i], seed, j) % np.uint64(workers - j))
            # r-th worker not chosen yet: step over the chosen ones in increasing order.
            pos = 0
            while pos < j and taken[pos] <= r:
                r += 1
                pos += 1
            for m in range(j, pos, -1):
                taken[m] = taken[m - 1]
            taken[pos] = r
            out[i, j] = r


def distinct_choices(fps: np.ndarray, workers: int, d: int, seed: int) -> np.ndarray:
    """``(n, d)`` int64 array: d distinct workers per fingerprint (d ≤ workers).

    The first column is the plain ``h_0 mod W`` (so d = 1 is key grouping); column j is
    uniform over the workers not in columns < j.
    """
    if not 1 <= d <= workers:
        raise ValueError(f"need 1 <= d <= workers, got d={d}, workers={workers}")
    fps = np.ascontiguousarray(fps, dtype=np.uint64)
    out = np.empty((fps.shape[0], d), dtype=np.int64)
    distinct_choices_into(fps, workers, d, seed & _MASK32, out)
    return out


@numba.njit(inline="always")
def table_slot(keys, flags, fp):
    """The slot of fingerprint ``fp`` in an open-addressing table of a power-of-two size (linear probing; a
    slot is taken where ``flags`` is not 0), or the empty slot where it goes."""
    mask = keys.shape[0] - 1
    i = np.int64(fp & np.uint64(mask))
    while flags[i] != 0 and keys[i] != fp:
        i = (i + 1) & mask
    return i
