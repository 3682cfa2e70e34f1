"""The papers' simulation experiments, one module per paper (``make study``).

Each module has ``experiments(messages)`` → {name: (Study, keep the I(t) series) or a callable that writes
``OUT/<name>.csv`` itself (for a measurement no grid of simulations expresses)}: ``messages`` caps every
stream (a quick run), ``None`` runs each at the size the paper used.  Names are unique across papers; the
fidelity table (``analysis/fidelity.py``) reads the tables these write, ``OUT/<name>.csv``.
"""

from __future__ import annotations

from skewbench.bench.papers import dkg, fang, gedik, newer, pkg

LONG = "tw_full_"  # experiments that take hours (TW at its 1.2G messages): `make study-tw`, not `make study`
PAPERS = {"pkg": pkg, "gedik": gedik, "fang": fang, "dkg": dkg, "newer": newer}


def experiments(messages: int | None = None) -> dict:
    chosen: dict = {}
    for paper, module in PAPERS.items():
        for name, experiment in module.experiments(messages).items():
            if name in chosen:
                raise ValueError(f"experiment {name!r} of {paper} is already defined by another paper")
            chosen[name] = experiment
    return chosen


def size(published: int, messages: int | None) -> int:
    """The paper's stream length, or the cap of a quick run."""
    return published if messages is None else min(published, messages)
