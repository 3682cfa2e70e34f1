"""Nasir et al., "The Power of Both Choices" (ICDE 2015): Table II, Figs. 2-4, and PKG's successors."""

from __future__ import annotations

from skewbench.bench.study import Study

WORKERS = [5, 10, 50, 100]
NEWER = ["kg", "sg", "pkg", "dchoices", "wchoices", "dkg", "consistent"]
TABLE2 = ["kg", "potc", "on-greedy", "off-greedy", "pkg"]
SEEDS = 3  # PKG's few hot keys make one hash seed a lottery: Table II and Fig. 2 report the median of 3


def experiments(messages: int | None) -> dict[str, tuple[Study, bool]]:
    m = messages or 2_000_000
    return {
        # Table II: average imbalance of PKG vs. the baselines, one source.
        "pkg_table2_wp": (Study("wp", TABLE2, WORKERS, [1], m, repeat=SEEDS), False),
        "pkg_table2_tw": (Study("tw", TABLE2, WORKERS, [1], m, repeat=SEEDS), False),
        # Fig. 2: hashing (H) vs. global (G) vs. local estimation (L_S) over datasets, W and S.
        **{f"pkg_fig2_{name}": (Study(spec, ["kg", "pkg-global", "pkg"], WORKERS, [5, 10, 20], m, repeat=SEEDS), False)
           for name, spec in [("wp", "wp"), ("tw", "tw"), ("ct", "ct"),
                              ("ln1", "lognormal:preset=LN1"), ("ln2", "lognormal:preset=LN2")]},
        # Fig. 3: I(t) through time with S=5, and periodic probing (L5P1).
        "pkg_fig3": (Study("ct", ["kg", "pkg-global", "pkg", "pkg-probe"], [10, 50], [5], m), True),
        # Fig. 4: skewed (by-key) vs. uniform split of a graph's edges to the sources.
        "pkg_fig4_key": (Study("graph", ["pkg"], WORKERS, [5, 10, 20], m, split="key"), False),
        "pkg_fig4_shuffle": (Study("graph", ["pkg"], WORKERS, [5, 10, 20], m, split="shuffle"), False),
        # Successors of PKG side by side on the same streams.
        "newer_wp": (Study("wp", NEWER, WORKERS, [5], m), False),
        "newer_ln1": (Study("lognormal:preset=LN1", NEWER, WORKERS, [5], m), False),
    }
