"""Nasir et al., "The Power of Both Choices" (ICDE 2015): Table II, Figs. 2-4, Sec. IV and V-Q4, and PKG's successors.

Most experiments here are callables that run a few simulation grids into one tidy table (``OUT/<name>.csv``,
one row per run, as :func:`skewbench.bench.study.run_study` writes) and then a small comparison table
``OUT/pkg_cmp_<what>.csv`` with one row per cell of the paper's figure (the median over seeds of every
technique side by side, and their ratios), so a claim made "for all datasets, W and S" is checked cell by cell
(``analysis/measures/pkg.yaml``).
"""

from __future__ import annotations

import math
from dataclasses import asdict
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.bench.provenance import write_metadata
from skewbench.bench.study import Study, claim, run_study
from skewbench.scheme import make_scheme
from skewbench.simulator import simulate
from skewbench.stream import Stream
from skewbench.workloads import parse

WORKERS = [5, 10, 50, 100]
NEWER = ["kg", "sg", "pkg", "dchoices", "wchoices", "dkg", "consistent"]
TABLE2 = ["kg", "potc", "on-greedy", "off-greedy", "pkg"]
SEEDS = 5  # PKG's few hot keys make one hash seed a lottery: every point is the median of 5 (Table II and Fig. 2
# report the median of 3), and an order named between points needs 5 (analysis/fidelity.py SEEDS_NEEDED)
# Table I's lengths.  Table II's small cells give WP's and TW's exact length modulo W: a final imbalance
# max - m/W has the fractional part of -m/W, and every WP cell (0.8, 15.8 at W=5; 2.9, 0.9 at W=10) says
# m = 1 (mod 10), every TW cell (0.4, 8.4; 1.7, 92.7; 2.74 at W=50) m = 13 (mod 50).  Perfect balance is
# then 0.8 / 0.9 (WP) and 0.4 / 0.7 / 0.74 (TW), not 0, so our streams keep those residues.
M = {"wp": 22_000_001, "tw": 1_200_000_013, "ct": 690_000, "ln1": 10_000_000, "ln2": 10_000_000,
     "lj": 69_000_000}
TW_STUDY = 20_000_013  # TW's 1.2G messages take hours: make study runs 20M, tw_full_pkg_table2 the full stream
SPEC = {"wp": "wp", "tw": "tw", "ct": "ct", "ln1": "lognormal:preset=LN1", "ln2": "lognormal:preset=LN2"}
# Sec. V Q2: probing every minute (L5P1).  The traces span one day (WP, Jan 2008), July 2012 (TW) and
# November 2013 (CT): a minute holds Table I's messages / these minutes (15k WP, 27k TW, 16 CT), whatever
# length we run.
MINUTES = {"wp": 24 * 60, "tw": 31 * 24 * 60, "ct": 30 * 24 * 60}


def size(published: int, messages: int | None) -> int:
    from skewbench.bench.papers import size as papers_size  # here: the package imports this module

    return papers_size(published, messages)


def _length(dataset: str, messages: int | None) -> int:
    return size(TW_STUDY if dataset == "tw" else M[dataset], messages)


def run_grids(studies: list[Study], out: Path, timeseries: bool = False) -> pd.DataFrame:
    """Run several study grids (e.g. one per dataset) into the one table ``out`` (and its I(t) series)."""
    claim(out, force=False)
    tables, series = [], []
    for i, study in enumerate(studies):
        part = out.with_name(f".{out.stem}.part{i}.csv")
        part_ts = part.with_name(part.stem + ".timeseries.csv") if timeseries else None
        for path in filter(None, (part, part_ts, part.with_name(part.name + ".meta.json"))):
            path.unlink(missing_ok=True)
        tables.append(run_study(study, part, part_ts))
        if part_ts:
            series.append(pd.read_csv(part_ts).assign(workload=tables[-1].workload.iloc[0]))
        for path in filter(None, (part, part_ts, part.with_name(part.name + ".meta.json"))):
            path.unlink()
    table = pd.concat(tables, ignore_index=True)
    table.to_csv(out, index=False)
    if timeseries:
        pd.concat(series, ignore_index=True).to_csv(out.with_name(out.stem + ".timeseries.csv"), index=False)
    write_metadata(out, {"studies": [asdict(s) for s in studies]})
    return table


def compare(table: pd.DataFrame, column: str, cells: list[str], label) -> pd.DataFrame:
    """One row per cell: the median over seeds of ``column`` for each technique (``label(row)``) side by side."""
    named = table.assign(technique=table.apply(label, axis=1))
    return named.pivot_table(index=cells, columns="technique", values=column, aggfunc="median").reset_index()


def _write_cmp(cmp: pd.DataFrame, out: Path, name: str) -> None:
    path = out.with_name(f"pkg_cmp_{name}.csv")
    cmp.to_csv(path, index=False)
    write_metadata(path, {"from": out.name, "what": "per-cell medians over seeds and their ratios"})


# --- Table II (Sec. V Q1) -------------------------------------------------------------------------------

def table2(out: Path, messages: int | None, datasets=("wp", "tw"), full: bool = False) -> None:
    """Table II: Hashing, PoTC, On-/Off-Greedy and PKG, one source (PKG with the true loads: Q1 precedes
    local estimation), W = 5..100.  Table II's numbers are the FINAL imbalance I(m) (see measures/pkg.yaml),
    so the comparison table holds final_imbalance."""
    # At TW's full 1.2G messages one seed (as the paper's one run): 20 runs of ~3 min; make study's 20M has 3.
    studies = [Study(SPEC[d], TABLE2, WORKERS, [1], size(M[d], messages) if full else _length(d, messages),
                     repeat=1 if full else SEEDS) for d in datasets]
    _write_cmp(table2_cells(run_grids(studies, out)), out, "tw_full" if full else "table2")


def table2_cells(table: pd.DataFrame) -> pd.DataFrame:
    cmp = compare(table, "final_imbalance", ["workload", "workers"], lambda r: r.scheme)
    c = cmp[TABLE2] + 1  # + 1 message: a balanced run may end at 0
    cmp["kg_over_max_other"] = c["kg"] / c[["potc", "on-greedy", "off-greedy", "pkg"]].max(axis=1)
    cmp["potc_over_kg"] = c["potc"] / c["kg"]
    cmp["on_over_potc"] = c["on-greedy"] / c["potc"]
    cmp["on_over_off"] = c["on-greedy"] / c["off-greedy"]
    cmp["pkg_over_off"] = c["pkg"] / c["off-greedy"]
    cmp["pkg_over_kg"] = c["pkg"] / c["kg"]
    return cmp


# --- Fig. 2 (Sec. V Q2): H, G, L_S over datasets, W and S ----------------------------------------------

def fig2(out: Path, messages: int | None) -> None:
    """Fig. 2: hashing (H) and global PKG (G) do not depend on S, so they run once (S = 5); local estimation
    (L) runs at S = 5, 10, 20.  Comparison per (dataset, W, S) of the average imbalance fraction."""
    studies = []
    for d, spec in SPEC.items():
        m = _length(d, messages)
        studies += [Study(spec, ["kg", "pkg-global"], WORKERS, [5], m, repeat=SEEDS),
                    Study(spec, ["pkg"], WORKERS, [5, 10, 20], m, repeat=SEEDS)]
    _write_cmp(fig2_cells(run_grids(studies, out)), out, "fig2")


def fig2_cells(table: pd.DataFrame) -> pd.DataFrame:
    cmp = compare(table[table.scheme == "pkg"], "imbalance_fraction", ["workload", "workers", "sources"],
                  lambda r: "L")
    base = compare(table[table.scheme != "pkg"], "imbalance_fraction", ["workload", "workers"],
                   lambda r: {"kg": "H", "pkg-global": "G"}[r.scheme])
    cmp = cmp.merge(base, on=["workload", "workers"])
    floor = 0.5 / table.groupby("workload").messages.first()  # half a message: a perfect run is not 0
    low = cmp.workload.map(floor)
    cmp["L_over_G"] = cmp["L"].clip(lower=low) / cmp["G"].clip(lower=low)
    cmp["H_over_L"] = cmp["H"].clip(lower=low) / cmp["L"].clip(lower=low)
    cmp["L_minus_G"] = cmp["L"] - cmp["G"]
    return cmp


# --- Fig. 3 (Sec. V Q2-Q3): I(t) with S = 5, probing every minute -----------------------------------------

def fig3(out: Path, messages: int | None) -> None:
    """Fig. 3: H, G, L5 and L5P1 through time on TW, WP and CT, S = 5 (W = 10, 50 shown; 5 and 100 run for
    the paper's "similar" remark).  The figure is one run; we run SEEDS, so that its orders are over seeds."""
    studies = []
    for d in ("tw", "wp", "ct"):
        m = _length(d, messages)
        studies.append(Study(SPEC[d], ["kg", "pkg-global", "pkg", "pkg-probe"], WORKERS, [5], m,
                             interval=max(1, M[d] // MINUTES[d]), repeat=SEEDS))
    _write_cmp(fig3_cells(run_grids(studies, out, timeseries=True)), out, "fig3")


def fig3_cells(table: pd.DataFrame) -> pd.DataFrame:
    names = {"kg": "H", "pkg-global": "G", "pkg": "L5", "pkg-probe": "L5P1"}
    cmp = compare(table, "imbalance_fraction", ["workload", "workers"], lambda r: names[r.scheme])
    floor = cmp.workload.map(0.5 / table.groupby("workload").messages.first())
    c = {k: cmp[k].clip(lower=floor) for k in names.values()}
    cmp["best_over_rest"] = np.maximum(c["G"], c["L5"]) / np.minimum(c["H"], c["L5P1"])
    cmp["L5P1_over_L5"] = c["L5P1"] / c["L5"]
    cmp["H_over_G_L"] = c["H"] / np.maximum(c["G"], c["L5"])
    cmp["max_fraction"] = cmp[list(names.values())].max(axis=1)
    # W = 5 vs 10 and 100 vs 50: the paper omits 5 and 100 as "similar"; the factor between them, the
    # largest over the four techniques, on the rows of W = 5 and 100.
    by_w = cmp.set_index(["workload", "workers"])
    for small, big in ((5, 10), (100, 50)):
        for d in cmp.workload.unique():
            r = np.array([c[k].loc[by_w.index.get_loc((d, small))] / c[k].loc[by_w.index.get_loc((d, big))]
                          for k in names.values()])
            cmp.loc[(cmp.workload == d) & (cmp.workers == small), "factor_vs_shown"] = np.maximum(r, 1 / r).max()
    return cmp


# --- Fig. 4 (Sec. V Q3): skewed vs uniform split of the sources ------------------------------------------

def fig4(out: Path, messages: int | None) -> None:
    """Fig. 4: PKG on the LJ graph stand-in, edges split to the sources by source vertex (KG, skewed) or
    shuffled (uniform)."""
    m = size(M["lj"], messages)
    studies = [Study("graph:preset=lj", ["pkg"], WORKERS, [5, 10, 20], m, split=split, repeat=SEEDS)
               for split in ("key", "shuffle")]
    _write_cmp(fig4_cells(run_grids(studies, out)), out, "fig4")


def fig4_cells(table: pd.DataFrame) -> pd.DataFrame:
    cmp = compare(table, "imbalance_fraction", ["workers", "sources"], lambda r: r.split)
    floor = 0.5 / table.messages.iloc[0]
    cmp["key_over_shuffle"] = cmp["key"].clip(lower=floor) / cmp["shuffle"].clip(lower=floor)
    cmp["split_factor"] = np.maximum(cmp.key_over_shuffle, 1 / cmp.key_over_shuffle)  # >= 1 either way
    return cmp


# --- Sec. V Q2: agreement of G and L ----------------------------------------------------------------------

def agreement(global_routes: np.ndarray, local_routes: np.ndarray) -> tuple[float, float]:
    """Share of messages G and L send to the same worker, and the Jaccard overlap of their sets of
    (message, worker) pairs, |A ∩ B| / |A ∪ B| = s / (2 - s)."""
    share = float(np.mean(global_routes == local_routes))
    return share, share / (2 - share)


def jaccard(out: Path, messages: int | None) -> None:
    """Route the same stream with G (pkg-global) and L5 (pkg, 5 sources) and compare destinations (the
    paper's 47 % Jaccard, Fig. 3's setting: TW, WP, CT; W = 10, 50; S = 5)."""
    claim(out, force=False)
    rows = []
    for d in ("tw", "wp", "ct"):
        for seed in range(SEEDS):
            stream = parse(SPEC[d], messages=min(_length(d, messages), 25_000_000), seed=seed)
            for w in (10, 50):
                g = simulate(stream, "pkg-global", w, 5, seed=seed)
                local = simulate(stream, "pkg", w, 5, seed=seed)
                share, jac = agreement(g.routes, local.routes)
                rows.append({"workload": d, "workers": w, "sources": 5, "seed": seed, "messages": stream.messages,
                             "same_worker_share": share, "jaccard": jac,
                             "G_final_imbalance": g.row["final_imbalance"],
                             "L_final_imbalance": local.row["final_imbalance"]})
    pd.DataFrame(rows).to_csv(out, index=False)
    write_metadata(out, {"experiment": "G vs L5 destinations", "seeds": SEEDS})


# --- Sec. IV: Theorems 4.1-4.2 and the uniform-keys example ---------------------------------------------

def uniform(keys: int, messages: int, seed: int) -> Stream:
    """Keys drawn uniformly: the distribution of Theorem 4.2 (5n keys, p1 = 1/(5n)) and of Sec. IV-A's
    example (n keys)."""
    ids = np.random.default_rng(seed).integers(0, keys, messages, dtype=np.int64)
    return Stream(f"uniform:keys={keys}", ids, np.arange(keys, dtype=np.int64))


def coverage(workers: int, keys: int, seed: int) -> float:
    """Share of the n bins that are one of PKG's two choices of some key (Sec. IV-A: 1 - 1/e^2 = 0.865)."""
    scheme = make_scheme("pkg", workers, seed=seed)
    key_fps = uniform(keys, keys, seed).key_fps
    return len(set(np.concatenate([scheme.candidates(int(fp)) for fp in key_fps]).tolist())) / workers


THEOREM_N = [5, 10, 20, 50, 100, 200]


def theorem(out: Path, messages: int | None) -> None:
    """I(m) of Greedy-1 (KG) and Greedy-2 (PKG, one source: the global process of Sec. IV) on uniform keys,
    5n keys (p1 = 1/(5n), Theorems 4.1-4.2) and n keys (Sec. IV-A's overpopulated bins), m >= n^2."""
    claim(out, force=False)
    m = size(2_000_000, messages)
    rows = []
    for n in THEOREM_N:
        for per_bin in (5, 1):
            for seed in range(5):
                stream = uniform(per_bin * n, max(m, n * n), seed)
                for scheme in ("kg", "pkg"):
                    i_m = simulate(stream, scheme, n, 1, seed=seed).row["final_imbalance"]
                    per_worker = stream.messages / n
                    rows.append({"workers": n, "keys_per_worker": per_bin, "scheme": scheme, "seed": seed,
                                 "messages": stream.messages, "final_imbalance": i_m,
                                 "over_m_per_n": i_m / per_worker,
                                 "over_kg_bound": i_m / (per_worker * math.log(n) / math.log(math.log(n))),
                                 "coverage": coverage(n, per_bin * n, seed) if scheme == "pkg" else np.nan})
    pd.DataFrame(rows).to_csv(out, index=False)
    write_metadata(out, {"experiment": "Theorem 4.1/4.2 scaling", "workers": THEOREM_N, "messages": m})


# --- Sec. III-A, V-Q4 and VI: counters and copies per key -------------------------------------------------

def copies(out: Path, messages: int | None) -> None:
    """Q4's memory (counters = distinct (worker, key) pairs, the word count's state) of KG, PKG and SG on the
    WP stand-in at the paper's length, 1 source and 9 workers as on the paper's Storm cluster; and the most
    workers any one key reaches (Sec. III-A, VI-B, VI-C: 2 with PKG)."""
    claim(out, force=False)
    rows = []
    stream = parse("wp", messages=size(M["wp"], messages), seed=0)
    for scheme in ("kg", "pkg", "sg"):
        result = simulate(stream, scheme, 9, 1, seed=0)
        pairs = np.unique(stream.ids * 9 + result.routes)
        per_key = np.bincount(pairs // 9)
        rows.append({**{k: result.row[k] for k in ("workload", "scheme", "workers", "sources", "messages", "keys",
                                                   "counters", "dist_cost", "max_over_mean")},
                     "max_copies": int(per_key.max()), "keys_on_two_or_more": int(np.sum(per_key >= 2))})
    pd.DataFrame(rows).to_csv(out, index=False)
    write_metadata(out, {"experiment": "counters and copies per key, WP, W=9, S=1"})


def experiments(messages: int | None) -> dict:
    m = messages or 2_000_000
    run = {"pkg_table2": table2, "pkg_fig2": fig2, "pkg_fig3": fig3, "pkg_fig4": fig4, "pkg_jaccard": jaccard,
           "pkg_theorem": theorem, "pkg_copies": copies}
    return {
        **{name: partial(f, messages=messages) for name, f in run.items()},
        # Table II on TW's full 1.2G messages (hours): its own make target.
        "tw_full_pkg_table2": partial(table2, messages=messages, datasets=("tw",), full=True),
        # Successors of PKG side by side on the same streams.
        "newer_wp": (Study("wp", NEWER, WORKERS, [5], m), False),
        "newer_ln1": (Study("lognormal:preset=LN1", NEWER, WORKERS, [5], m), False),
    }
