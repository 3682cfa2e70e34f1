"""Gedik, "Partitioning Functions for Stateful Data Parallelism in Stream Processing" (VLDB J. 2014), Sec. 5.

Gedik's evaluation (Sec. 5.1) is a simulation of the partitioning function alone: a Zipf(z) domain of |D|
items with fixed frequencies ("we do not change the load"); to test N channels he starts at N = 1 and
rebuilds the function once per adaptation period, adding one channel each time, so a function at N
depends on every earlier one.  Metrics (Sec. 5): the relative imbalance b of the function at N (Eq. 11,
with the three b_k), the relative migration m of the step N − 1 → N (Eq. 12), the items in the lossy
counter and in the explicit hash, and the construction time.  Defaults (Table 1): N = 10, α = 1.2, LCL,
|D| = 10⁶, z = 1, σ = 0.1, U^APM, 5 runs.

:func:`growth` replays that protocol for uniform hashing (``kg``), consistent hashing (the function's own
ring H_c with 1000 replicas, no explicit hash) and scan/redist/readj, measuring b and m over the whole
domain with its exact frequencies; the schemes learn the frequencies from a sampled stream through their
lossy counter, as Gedik's splitter does.  One experiment per figure group writes one row per (setting,
scheme, run, N): ``relative_imbalance`` (b), ``b_s``/``b_c``/``b_n``, ``relative_migration`` (m),
``explicit_items``, ``lossy_items`` (the counter's peak size), ``ring_seconds`` (building H_c),
``explicit_seconds`` (building H_p) and ``build_seconds`` (both: the whole function).  Runs are seeds
0 … 4.  How each published entry reads these tables: ``analysis/measures/gedik.yaml``.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.bench import papers  # the package: size() is read at run time (circular import)
from skewbench.bench.provenance import write_metadata
from skewbench.bench.study import Study, claim
from skewbench.hashing import fingerprints, murmur64
from skewbench.scheme import Plan, make_scheme
from skewbench.schemes import gedik as g
from skewbench.schemes.consistent import lookup, ring
from skewbench.schemes.lossy_counting import bucket_width

ZIPF = "zipf:z=1.0,keys=100000"
ALGORITHMS = ("gedik-scan", "gedik-redist", "gedik-readj")
SCHEMES = ("kg", "consistent", *ALGORITHMS)  # kg = Gedik's "uniform hash", h(d) mod N
DEFAULTS = dict(resources="LCL", z=1.0, sigma=0.1, domain=10**6, utility="APM", alpha=1.2)  # Table 1
RUNS = 5  # Sec. 5.1: "averages of 5 runs"
VNODES = 1000  # Sec. 5.5: 1000 replicas
STREAM_PER_KEY = 2  # Sec. 4.1.2: lossy counting's history M "a constant factor of |D|"; the factor is ours
MIN_STREAM = 2_000_000  # enough that items near δ are counted within a few % at small |D|
_NONE_KEYS, _NONE_WORKERS = np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)


@functools.lru_cache(maxsize=1)
def domain_keys(domain: int) -> tuple[np.ndarray, np.ndarray]:
    """Fingerprints of the items 0 … |D|−1 (item k is the k-th most frequent), and their sort order."""
    keys = fingerprints(np.arange(domain))
    return keys, np.argsort(keys)


@functools.lru_cache(maxsize=1)
def zipf_frequencies(domain: int, z: float) -> np.ndarray:
    """Exact Zipf frequencies, f(d_k) ∝ 1/k^z (Sec. 5.1)."""
    freqs = 1.0 / np.arange(1, domain + 1, dtype=np.float64) ** z
    return freqs / freqs.sum()


@functools.lru_cache(maxsize=1)
def sample(domain: int, z: float, messages: int, seed: int) -> np.ndarray:
    """A stream of ``messages`` draws from the Zipf domain (inverse CDF), shared by the settings of a run."""
    keys, cdf = domain_keys(domain)[0], np.cumsum(zipf_frequencies(domain, z))
    at = np.searchsorted(cdf, np.random.default_rng(seed).random(messages) * cdf[-1], side="right")
    return keys[np.minimum(at, len(keys) - 1)]


@functools.lru_cache(maxsize=40)
def hashed(domain: int, workers: int, seed: int) -> np.ndarray:
    """Channel of every item under the consistent hash H_c alone (the same ring for every setting)."""
    points, owners = ring(workers, VNODES, seed)
    channels = lookup(domain_keys(domain)[0], _NONE_KEYS, _NONE_WORKERS, points, owners, seed)
    return channels.astype(np.int8)  # N ≤ 32 here: a 10⁷-item domain costs 10 MB per cached ring


def metrics(freqs, exps, before, after, workers, alpha) -> dict:
    """b (Eq. 11), its b_s, b_c, b_n, and m (Eq. 12) of the function ``after`` that replaced ``before``."""
    b_k = []
    for e in exps:
        loads = np.bincount(after, weights=freqs ** e if e else None, minlength=workers)
        with np.errstate(divide="ignore"):
            b_k.append(loads.max() / loads.min() / alpha)
    beta_s = freqs ** exps[0]
    m = float(beta_s[before != after].sum()) / (float(beta_s.sum()) / workers)
    return {"relative_imbalance": float(np.prod(b_k) ** (1 / 3)), "b_s": b_k[0], "b_c": b_k[1], "b_n": b_k[2],
            "relative_migration": m}


def make(name: str, workers: int, setting: dict, seed: int):
    return make_scheme(name, workers, seed=seed, alpha=setting["alpha"], resources=setting["resources"],
                       sigma=setting["sigma"], utility=setting["utility"], domain_size=setting["domain"],
                       window=10**12, vnodes=VNODES)


def lossy_items(setting: dict, seed: int, workers: int, stream: np.ndarray) -> int:
    """Most items the lossy counter held while counting the stream (its space, Sec. 5.4), at the ε a
    splitter uses with ``workers`` channels.  The size saws within each bucket of w = 1/ε messages
    (evictions at its end), so it is read every w/8 messages: the size at the end of the stream alone
    depends on where that end falls in a bucket."""
    counter = make("gedik-scan", workers, setting, seed).counter
    step, most = max(bucket_width(counter.epsilon) // 8, 1), 0
    for start in range(0, len(stream), step):
        counter.update(stream[start:start + step])
        most = max(most, len(counter))
    return most


def growth(setting: dict, seed: int, upto: int, record: set[int], messages: int | None,
           schemes=SCHEMES) -> list[dict]:
    """Sec. 5.1's protocol for one run: N = 1 → ``upto``, one channel per adaptation; a row per scheme
    for each N in ``record``.

    The Gedik schemes count the whole stream once, with the ε they would use at ``upto`` + 1 channels
    (the smallest of the growth: every N's δ − ε report is at least as precise as at its own ε), then
    start from N = 1 with an empty explicit hash.
    """
    domain = setting["domain"]
    exps = g.resource_exponents(setting["resources"])
    (keys, index), freqs = domain_keys(domain), zipf_frequencies(domain, setting["z"])
    stream = sample(domain, setting["z"], papers.size(max(STREAM_PER_KEY * domain, MIN_STREAM), messages), seed)
    gedik = {}
    for name in set(schemes) & set(ALGORITHMS):
        gedik[name] = make(name, upto, setting, seed)
        gedik[name].counter.update(stream)  # the splitter's count (routing the stream changes nothing else)
        gedik[name].apply(Plan(_NONE_KEYS, _NONE_WORKERS, workers=1))
    before = dict.fromkeys(schemes, np.zeros(len(keys), dtype=np.int64))
    rows = []
    for n in range(2, upto + 1):
        began = time.perf_counter()
        new_ring = ring(n, VNODES, seed)  # H_c^(t+1), timed for Fig. 13
        ring_seconds = time.perf_counter() - began
        h_c = hashed(domain, n, seed).astype(np.int64)
        counter_items = lossy_items(setting, seed, n, stream) if n in record else 0
        for name in schemes:
            explicit, table = 0.0, 0
            if name == "kg":
                after = (murmur64(keys, seed) % np.uint64(n)).astype(np.int64)
            elif name == "consistent":
                after = h_c
            else:
                began = time.perf_counter()
                table_keys, table_workers = gedik[name].build(n, new_ring)  # H_p^(t+1) by scan/redist/readj
                explicit = time.perf_counter() - began
                gedik[name].apply(Plan(table_keys, table_workers, workers=n))
                after = h_c.copy()
                after[index[np.searchsorted(keys, table_keys, sorter=index)]] = table_workers
                table = len(table_keys)
            if n in record:
                rows.append({**setting, "scheme": name, "seed": seed, "workers": n,
                             **metrics(freqs, exps, before[name], after, n, setting["alpha"]),
                             "explicit_items": table, "lossy_items": counter_items if name in ALGORITHMS else 0,
                             "explicit_seconds": explicit, "ring_seconds": ring_seconds,
                             "build_seconds": explicit + ring_seconds if name in ALGORITHMS else 0.0,
                             "messages": len(stream)})
            before[name] = after
    return rows


def onset(table: pd.DataFrame) -> pd.DataFrame:
    """Per resource functions, scheme and run: the skew z at which the relative imbalance crosses 1 (Fig. 4: "the
    first one to start violating the balance requirements"), interpolated linearly between the two swept z around
    the crossing, as it is read off the paper's curves; the sweep's steps alone (0.1) would tie most schemes.  The
    lowest z when b > 1 there already, inf when b never exceeds 1."""
    def crossing(run: pd.DataFrame) -> float:
        z, b = run["z"].to_numpy(), run["relative_imbalance"].to_numpy()
        over = np.flatnonzero(b > 1)
        if len(over) == 0:
            return np.inf
        i = over[0]
        return float(z[0]) if i == 0 else float(z[i - 1] + (1 - b[i - 1]) * (z[i] - z[i - 1]) / (b[i] - b[i - 1]))

    keys = ["resources", "scheme", "seed"]
    rows = [dict(zip(keys, key), onset_z=crossing(run)) for key, run in table.sort_values("z").groupby(keys)]
    return pd.DataFrame(rows, columns=[*keys, "onset_z"])


def sweep(settings: list[dict], upto: int, record: set[int], messages: int | None, runs: int = RUNS,
          derived=None):
    """A callable experiment: ``runs`` runs of :func:`growth` for every setting (Table 1's defaults
    overridden; a setting's ``schemes`` picks the schemes, default :data:`SCHEMES`).  Runs are the outer
    loop so that a run's stream and rings serve all settings.  ``derived`` = (suffix, function): a second
    table ``<name>_<suffix>.csv`` computed from the first."""
    def run(out: Path) -> None:
        claim(out, force=False)  # results are never silently replaced
        growth({**DEFAULTS, "domain": 1000}, 0, 3, {3}, 10_000)  # compile or load the kernels before timing them
        rows = []
        for seed in range(runs):
            for setting in sorted(settings, key=lambda s: (s.get("domain", 0), s.get("z", 0))):  # stream reuse
                setting = {**DEFAULTS, **setting}
                schemes = setting.pop("schemes", SCHEMES)
                rows += growth(setting, seed, upto, record, messages, schemes)
        config = {"settings": settings, "upto": upto, "record": sorted(record), "runs": runs, "messages": messages,
                  "vnodes": VNODES, "stream_per_key": STREAM_PER_KEY, "min_stream": MIN_STREAM}
        pd.DataFrame(rows).to_csv(out, index=False)
        write_metadata(out, config)
        if derived:
            extra = out.with_name(f"{out.stem}_{derived[0]}.csv")
            derived[1](pd.DataFrame(rows)).to_csv(extra, index=False)
            write_metadata(extra, {**config, "derived_from": out.name, "by": derived[1].__name__})
    return run


def experiments(messages: int | None) -> dict:
    m = messages or 2_000_000
    at10 = {10}
    skews = [round(0.1 * i, 1) for i in range(1, 11)]
    sigmas = [0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0]
    return {
        # Adaptive partitioning functions under a Zipf stream, rebalanced every interval (with Fang's).
        "adaptive_zipf": (Study(ZIPF, ["kg", "consistent", "gedik-scan", "gedik-redist", "gedik-readj", "llfd",
                                       "mintable", "minmig", "mixed"], [10, 40], [1], m), False),
        # Fig. 3: resource functions at z = 1, N = 10.
        "gedik_resources": sweep([{"resources": r} for r in ("CCL", "LCL", "LLL", "LQL")], 10, at10, messages),
        # Fig. 4, 10, 14: skew z ∈ [0.1, 1] for LCL and LLL, [0.25, 0.5] for LQL.
        "gedik_skew": sweep([{"resources": r, "z": z} for r in ("LCL", "LLL") for z in skews]
                            + [{"resources": "LQL", "z": z} for z in (0.25, 0.3, 0.35, 0.4, 0.45, 0.5)],
                            10, at10, messages, derived=("onset", onset)),
        # Fig. 5, 9, 12: the frequency threshold scaler σ for LCL and LQL (LLL for Fig. 9's sizes only, which do
        # not depend on the algorithm); 0.008: the construction times quoted in Sec. 5.5.
        "gedik_sigma": sweep([{"resources": r, "sigma": s} for r in ("LCL", "LQL") for s in sigmas]
                             + [{"resources": "LLL", "sigma": s, "schemes": ("gedik-scan",)} for s in sigmas]
                             + [{"resources": "LCL", "sigma": 0.008}], 10, at10, messages),
        # Fig. 6, 11, 13: N = 2 … 32 (every step of one growth).
        "gedik_channels": sweep([{}], 32, set(range(2, 33)), messages),
        # Fig. 7: utility functions, for readj (a) and redist (b).
        "gedik_utility": sweep([{"resources": r, "utility": u, "schemes": ("gedik-redist", "gedik-readj")}
                                for r in ("CCL", "LCL", "LLL", "LQL") for u in g.UTILITIES], 10, at10, messages),
        # Fig. 8: domain size |D| (10⁸ left out: see analysis/measures/gedik.yaml).
        "gedik_domain": sweep([{"domain": d} for d in (10**4, 10**5, 10**6, 10**7)], 10, at10, messages),
    }
