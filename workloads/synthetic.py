"""Synthetic key streams regenerated from the papers' own parameters.

* ``zipf`` — finite Zipf over K keys (Gedik §6, Fang §6); the exponent may instead be solved from
  a target share p1 of the hottest key, which is how the Table I stand-ins are made.
* ``lognormal`` — PKG's LN1/LN2: key = a log-normal draw rounded to an integer.  With the paper's
  (μ, σ) this gives p1 = 14.7 % (LN1) and 7.0 % (LN2), as in PKG Table I.
* ``country`` — DKG's country-skew sets: 204 keys, a share r of the messages on one of them.
* ``fzipf`` — Fang's fluctuating Zipf: between intervals a fraction f of the keys swap frequencies.
* ``drift`` — drifting popularity (cashtag-like): each period part of the head is replaced by
  keys from the tail.

Keys are identified by their Zipf rank at the start of the stream (an integer label), so the same
key hashes the same way in every workload that shares it.

All but ``country`` return :class:`Draws`: the raw keys, drawn piece by piece from the seed, so
that a stream too long to hold is generated a piece at a time (:meth:`Draws.generated`) and is
still, message for message, the stream generated at once (:meth:`Draws.stream`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterator

import numpy as np

from skewbench.bounds import CLOCK_RATE, KEYS, MAX_BATCHES, MAX_WORKERS, Range
from skewbench.hashing import fingerprints
from skewbench.stream import GeneratedStream, Stream
from skewbench.workloads.inverse_cdf import InverseCdf
from skewbench.workloads.registry import workload

RATE = 100_000.0  # default arrival rate (messages/s) of the simulated clock
LOGNORMAL_PRESETS = {"LN1": (1.789, 2.366), "LN2": (2.245, 1.133)}  # PKG Sec. V-A (Orkut)
EXPONENT = Range(0, 100)  # a Zipf exponent (zipf_exponent_for searches 0..20)
SHARE = Range(0, 1)
PHASES = Range(1, MAX_BATCHES, integer=True)  # intervals or periods a stream changes in
ZIPF = {"z": EXPONENT, "keys": KEYS, "p1": SHARE, "rate": CLOCK_RATE}


def zipf_norm(keys: int, z: float) -> float:
    """H(K, z) = Σ_{k=1..K} k^-z: the first 10⁴ terms exactly, the rest by the integral (Euler–Maclaurin)."""
    head = min(keys, 10_000)
    total = float(np.sum(np.arange(1, head + 1, dtype=np.float64) ** -z))
    if keys > head:
        a, b = head + 0.5, keys + 0.5
        total += np.log(b / a) if abs(z - 1) < 1e-12 else (b ** (1 - z) - a ** (1 - z)) / (1 - z)
    return total


def zipf_exponent_for(p1: float, keys: int) -> float:
    """The z for which the hottest of ``keys`` Zipf keys has share ``p1`` (bisection on 1/H(K, z))."""
    if not 1 / keys < p1 < 1:
        raise ValueError(f"p1 must lie in (1/keys, 1) = ({1 / keys:.3g}, 1), got {p1}")
    lo, hi = 0.0, 20.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 1 / zipf_norm(keys, mid) < p1 else (lo, mid)
    return (lo + hi) / 2


def zipf_cdf(z: float, keys: int) -> np.ndarray:
    """Cumulative probability of Zipf ranks ``0 .. keys-1`` (0 is the hottest)."""
    if keys < 1:
        raise ValueError(f"keys must be >= 1, got {keys}")
    if z < 0:
        raise ValueError(f"z must be >= 0, got {z}")
    cdf = np.cumsum(np.arange(1, keys + 1, dtype=np.float64) ** -z)
    cdf /= cdf[-1]
    return cdf


def zipf_ranks(messages: int, z: float, keys: int, rng: np.random.Generator) -> np.ndarray:
    """``messages`` draws of a Zipf rank in ``0 .. keys-1`` (0 is the hottest), by inverse CDF."""
    return InverseCdf(zipf_cdf(z, keys))(rng.random(messages))


def keyed(name: str, keys: np.ndarray, rate: float = RATE, **columns) -> Stream:
    """A stream from the raw key of each message: dense ids, the distinct keys as labels."""
    labels, ids = np.unique(keys, return_inverse=True)
    return Stream(name, ids.astype(np.int64), labels, rate=rate, **columns)


def _spans(messages: int, size: int) -> Iterator[tuple[int, int]]:
    """``(lo, hi)`` of consecutive pieces of at most ``size`` of ``messages`` messages."""
    for lo in range(0, messages, size):
        yield lo, min(lo + size, messages)


@dataclass(frozen=True, eq=False)
class Draws:
    """A synthetic stream as the raw integer key of each message, drawn piece by piece.

    ``draw(size)`` starts from the seed and yields the raw keys of consecutive pieces of at most
    ``size`` messages.  numpy's generators give the same numbers whether drawn at once or in
    pieces (one 64-bit output per uniform; the ziggurat keeps no state between calls), so
    :meth:`stream` (one piece, as skewbench always generated) and :meth:`generated` (pieces on
    demand) are the same stream.  ``keys``: the raw keys are ``0 .. keys-1`` (Zipf ranks) and
    serve as key ids; ``None``: any non-negative int64 (log-normal draws), given dense ids in
    order of first appearance.
    """

    name: str
    messages: int
    draw: Callable[[int], Iterator[np.ndarray]]
    keys: int | None
    rate: float = RATE

    def stream(self) -> Stream:
        """The whole stream in memory: dense ids in label order, the distinct raw keys as labels."""
        (raw,) = self.draw(self.messages)
        return keyed(self.name, raw, self.rate)

    def generated(self, name: str, whole: Callable[[], Stream]) -> GeneratedStream:
        """The stream as pieces generated on demand; ``whole()`` builds it in memory (named)."""
        return GeneratedStream(name, self.messages, self.pieces, whole)

    @cached_property
    def _key_space_fps(self) -> np.ndarray:
        return fingerprints(np.arange(self.keys, dtype=np.int64))

    def pieces(self, size: int) -> Iterator[Stream]:
        """Consecutive :class:`Stream` pieces sharing one id space (a raw key hashes as its label
        does in :meth:`stream`)."""
        index = None if self.keys is not None else _FirstSeen()
        start = 0
        for raw in self.draw(size):
            ids, key_fps = (raw, self._key_space_fps) if index is None else index.add(raw)
            times = np.arange(start, start + len(raw), dtype=np.float64) / self.rate
            yield Stream(self.name, ids, times=times, rate=self.rate, key_hashes=key_fps)
            start += len(raw)


class _FirstSeen:
    """Dense ids for raw int64 keys in order of first appearance, with their fingerprints."""

    def __init__(self):
        self._sorted = np.empty(0, dtype=np.int64)  # every key seen, sorted
        self._ids = np.empty(0, dtype=np.int64)  # the id of each, in the same order
        self.fps = np.empty(0, dtype=np.uint64)  # fingerprint by id

    def add(self, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ids of ``raw`` (new keys get the next ids) and the fingerprints of every id so far."""
        keys, inverse = np.unique(raw, return_inverse=True)
        at = np.searchsorted(self._sorted, keys)
        known = at < len(self._sorted)
        known[known] = self._sorted[at[known]] == keys[known]
        new = ~known
        ids = np.empty(len(keys), dtype=np.int64)
        ids[known] = self._ids[at[known]]
        ids[new] = len(self.fps) + np.arange(np.count_nonzero(new))
        self._sorted = np.insert(self._sorted, at[new], keys[new])
        self._ids = np.insert(self._ids, at[new], ids[new])
        self.fps = np.concatenate([self.fps, fingerprints(keys[new])])
        return ids[inverse], self.fps


def _exponent(z: float, p1: float, keys: int) -> float:
    return zipf_exponent_for(p1, keys) if p1 > 0 else z


@workload("zipf", ZIPF)
def zipf(messages: int = 10_000_000, seed: int = 0, *, z: float = 1.0, keys: int = 100_000, p1: float = 0.0,
         rate: float = RATE) -> Draws:
    """Zipf over K keys with exponent z (or the z giving the hottest key share p1, if p1 > 0)."""
    ranks = InverseCdf(zipf_cdf(_exponent(z, p1, keys), keys))

    def draw(size: int) -> Iterator[np.ndarray]:
        rng = np.random.default_rng(seed)
        for lo, hi in _spans(messages, size):
            yield ranks(rng.random(hi - lo))

    return Draws("zipf", messages, draw, keys, rate)


@workload("lognormal", {"mu": Range(-100, 100), "sigma": Range(0, 100), "rate": CLOCK_RATE})
def lognormal(messages: int = 10_000_000, seed: int = 0, *, preset: str = "LN1", mu: float = 0.0,
              sigma: float = 0.0, rate: float = RATE) -> Draws:
    """PKG's log-normal sets: preset LN1 or LN2, or your own mu and sigma (both > 0 override the preset)."""
    if mu or sigma:
        if sigma <= 0:
            raise ValueError("give both mu and sigma > 0 (or neither, to use the preset)")
    elif preset.upper() in LOGNORMAL_PRESETS:
        mu, sigma = LOGNORMAL_PRESETS[preset.upper()]
    else:
        raise ValueError(f"unknown preset {preset!r}; use LN1 or LN2, or set mu and sigma")

    def draw(size: int) -> Iterator[np.ndarray]:
        rng = np.random.default_rng(seed)
        for lo, hi in _spans(messages, size):
            yield np.rint(np.minimum(rng.lognormal(mu, sigma, hi - lo), 2.0**62)).astype(np.int64)

    return Draws("lognormal", messages, draw, None, rate)


@workload("country", {"skew": SHARE, "countries": Range(1, 10**6, integer=True), "skewed_part": SHARE,
                     "rate": CLOCK_RATE}, whole=True)
def country(messages: int = 10_000_000, seed: int = 0, *, skew: float = 0.5, countries: int = 204,
            skewed_part: float = 1.0, rate: float = RATE) -> Stream:
    """DKG's country-skew sets: a share `skew` of the messages on one country, the rest uniform over all."""
    if not 0 <= skew <= 1:
        raise ValueError(f"skew is a share of the messages in [0, 1] (r80 is skew=0.8), got {skew}")
    if not 0 <= skewed_part <= 1:
        raise ValueError(f"skewed_part must be in [0, 1], got {skewed_part}")
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, countries, messages)
    hot = rng.random(messages) < skew
    hot[int(skewed_part * messages):] = False  # "half-skew": only the first part is skewed
    ids[hot] = 0
    labels = np.array([f"country-{c:03d}" for c in range(countries)], dtype=object)
    return Stream("country", ids, labels, rate=rate)


def _swap_pairs(order: np.ndarray, candidates: np.ndarray, partners: np.ndarray, count: int,
                rng: np.random.Generator) -> None:
    """Swap the keys at ``count`` ranks drawn from ``candidates`` with ranks drawn from ``partners``."""
    count = min(count, len(candidates), len(partners))
    a = rng.choice(candidates, count, replace=False)
    b = rng.choice(partners, count, replace=False)
    order[a], order[b] = order[b], order[a].copy()


def _phased(name: str, messages: int, seed: int, phases: int, z: float, keys: int, rate: float, reshuffle) -> Draws:
    """Zipf ranks mapped to keys by a rank→key order that ``reshuffle(order, rng)`` changes between phases.

    The ranks take the seed's first ``messages`` uniforms and the reshuffles what follows them, as
    when the ranks were drawn at once; a second generator advanced past the ranks makes the same
    reshuffles while the ranks are drawn piece by piece.
    """
    rank = InverseCdf(zipf_cdf(z, keys))
    bounds = np.linspace(0, messages, phases + 1).astype(np.int64)

    def draw(size: int) -> Iterator[np.ndarray]:
        rng, later = np.random.default_rng(seed), np.random.default_rng(seed)
        later.bit_generator.advance(messages)  # one 64-bit output per uniform rank
        order, phase = np.arange(keys, dtype=np.int64), 0
        for lo, hi in _spans(messages, size):
            ranks, out = rank(rng.random(hi - lo)), np.empty(hi - lo, dtype=np.int64)
            at = lo
            while at < hi:
                while bounds[phase + 1] <= at:  # phases that ended before this message
                    reshuffle(order, later)
                    phase += 1
                end = min(hi, int(bounds[phase + 1]))
                out[at - lo:end - lo] = order[ranks[at - lo:end - lo]]
                at = end
            yield out

    return Draws(name, messages, draw, keys, rate)


@workload("fzipf", {**ZIPF, "f": SHARE, "intervals": PHASES})
def fzipf(messages: int = 10_000_000, seed: int = 0, *, z: float = 1.0, keys: int = 100_000, f: float = 0.1,
          intervals: int = 100, rate: float = RATE) -> Draws:
    """Fang's fluctuating Zipf: after each of `intervals` intervals a fraction f of the keys swap frequencies."""
    if not 0 <= f <= 1:
        raise ValueError(f"f is a fraction of the keys in [0, 1], got {f}")
    if intervals < 1:
        raise ValueError(f"intervals must be >= 1, got {intervals}")
    pairs = int(round(f * keys / 2))
    everyone = np.arange(keys)

    def swap(order, rng):
        chosen = rng.choice(everyone, 2 * pairs, replace=False)
        order[chosen[:pairs]], order[chosen[pairs:]] = order[chosen[pairs:]], order[chosen[:pairs]].copy()

    return _phased("fzipf", messages, seed, intervals, z, keys, rate, swap)


def swap_load(order: np.ndarray, rng: np.random.Generator, zipf: np.ndarray, home: np.ndarray, workers: int,
              f: float) -> int:
    """Fang et al.'s fluctuation (Sec. 5): swap the frequencies of keys drawn uniformly in pairs that ``home``
    puts on different instances until the instances' loads changed by Σ_d |ΔL(d)| ≥ f · L̄; returns the swaps.

    ``order`` (rank → key) changes in place; ``zipf`` holds each rank's probability.  Swaps come in batches
    of disjoint rank pairs (so their order within a batch does not matter), cut at the first swap that
    reaches the target."""
    keys = len(zipf)
    if workers <= 1:  # no two instances to swap between
        return 0
    target = f / workers
    weights = np.empty_like(zipf)
    weights[order] = zipf
    start = np.bincount(home, weights=weights, minlength=workers)
    loads, swaps = start.copy(), 0
    while np.abs(loads - start).sum() < target and swaps < 100 * keys:
        pairs = rng.choice(keys, 2 * min(1024, keys // 2), replace=False).reshape(2, -1)
        a, b = order[pairs[0]], order[pairs[1]]
        keep = home[a] != home[b]  # keys from different instances
        pairs, a, b = pairs[:, keep], a[keep], b[keep]
        delta = zipf[pairs[0]] - zipf[pairs[1]]  # a's frequency goes to b's instance
        step = np.zeros((len(delta), workers))
        step[np.arange(len(delta)), home[a]] -= delta
        step[np.arange(len(delta)), home[b]] += delta
        path = loads + np.cumsum(step, axis=0)
        reached = np.flatnonzero(np.abs(path - start).sum(axis=1) >= target)
        n = reached[0] + 1 if len(reached) else len(delta)
        order[pairs[0, :n]], order[pairs[1, :n]] = b[:n], a[:n]
        loads, swaps = path[n - 1], swaps + n
    return swaps


@workload("lzipf", {**ZIPF, "f": Range(0, 100), "workers": Range(1, MAX_WORKERS, integer=True),
                    "intervals": PHASES})
def lzipf(messages: int = 10_000_000, seed: int = 0, *, z: float = 0.85, keys: int = 10_000, f: float = 1.0,
          workers: int = 15, intervals: int = 20, rate: float = RATE) -> Draws:
    """Fang's fluctuating Zipf as their Sec. 5 defines f (``fzipf`` swaps a fraction of the keys instead):
    after each of `intervals` intervals, keys that consistent hashing over `workers` instances puts apart
    swap frequencies until the instances' loads changed by f times the mean load."""
    from skewbench.schemes.consistent import lookup, ring

    if f < 0 or workers < 1 or intervals < 1:
        raise ValueError(f"lzipf needs f >= 0, workers >= 1 and intervals >= 1, got f={f}, workers={workers}, "
                         f"intervals={intervals}")
    zipf = np.diff(zipf_cdf(z, keys), prepend=0.0)
    empty = np.empty(0, dtype=np.uint64)
    home = lookup(fingerprints(np.arange(keys, dtype=np.int64)), empty, np.empty(0, dtype=np.int64),
                  *ring(workers, 100, 0), 0)

    def swap(order, rng):
        swap_load(order, rng, zipf, home, workers, f)

    return _phased("lzipf", messages, seed, intervals, z, keys, rate, swap)


@workload("drift", {**ZIPF, "periods": PHASES, "head": Range(2, KEYS.high, integer=True), "churn": SHARE})
def drift(messages: int = 10_000_000, seed: int = 0, *, z: float = 1.0, keys: int = 10_000, p1: float = 0.0,
          periods: int = 4, head: int = 50, churn: float = 0.5, rate: float = RATE) -> Draws:
    """Drifting popularity (cashtag-like): each period a share `churn` of the `head` hottest keys is replaced.

    The very hottest key stays put (as $AAPL did in PKG's cashtags), so p1 is that of the Zipf law.
    """
    if not 0 <= churn <= 1:
        raise ValueError(f"churn is a share of the head in [0, 1], got {churn}")
    if not 1 < head < keys:
        raise ValueError(f"head must be in (1, keys), got {head}")
    top, tail = np.arange(1, head), np.arange(head, keys)
    replace = lambda order, rng: _swap_pairs(order, top, tail, int(round(churn * (head - 1))), rng)  # noqa: E731
    return _phased("drift", messages, seed, periods, _exponent(z, p1, keys), keys, rate, replace)
