"""End-to-end latency: each worker batch says which messages it handled, the driver derives each
message's latency = the end of the last worker batch that handled a copy of it − its intended
arrival time.

A worker sends its messages compactly (:func:`handled`): at W = 100 a batch of 3M messages would
otherwise carry 48 MB of seqs and intended times to the driver, which every batch waits for.
"""

from __future__ import annotations

import numpy as np


def handled(seq: np.ndarray, t_intended: np.ndarray) -> dict:
    """The messages of one worker batch (``seq`` ascending and distinct, ``t_intended`` theirs): the
    first seq, the gaps to the next in the narrowest unsigned type (2 bytes per message at W = 100
    under sg), and the intended times once if they are all equal (``rate`` 0: a batch's messages
    all became available together)."""
    seq = np.asarray(seq, dtype=np.int64)
    gaps = np.diff(seq)
    same = len(t_intended) > 0 and bool((t_intended == t_intended[0]).all())
    return {"first_seq": int(seq[0]) if len(seq) else 0, "count": len(seq),
            "gaps": gaps.astype(np.min_scalar_type(int(gaps.max()))) if len(gaps) else gaps,
            "t_intended": np.asarray(t_intended[:1] if same else t_intended, dtype=np.float64)}


def seqs(messages: dict) -> np.ndarray:
    """The seqs of :func:`handled`'s ``messages``."""
    if not messages["count"]:
        return np.empty(0, dtype=np.int64)
    return messages["first_seq"] + np.r_[0, np.cumsum(messages["gaps"], dtype=np.int64)]


def batch_messages(records: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct seqs one micro-batch handled (ascending) and each one's latency, from the worker records
    (``messages`` from :func:`handled`, ``t_end``).  A batch's messages are a range of ``seq``."""
    handled_by = [(r, seqs(r["messages"])) for r in records if r["messages"]["count"]]
    if not handled_by:
        return np.empty(0, dtype=np.int64), np.empty(0)
    low = min(int(s[0]) for _, s in handled_by)
    span = max(int(s[-1]) for _, s in handled_by) - low + 1
    end, intended = np.full(span, np.nan), np.full(span, np.nan)
    for r, s in sorted(handled_by, key=lambda pair: pair[0]["t_end"]):  # a later copy overwrites an earlier one
        end[s - low] = r["t_end"]
        intended[s - low] = r["messages"]["t_intended"]  # one value broadcasts
    done = ~np.isnan(end)
    return low + np.flatnonzero(done), (end - intended)[done]


def first_arrival(records: list[dict]) -> float:
    """The earliest intended arrival time among one micro-batch's messages (nan without messages)."""
    return min((float(r["messages"]["t_intended"].min()) for r in records if r["messages"]["count"]),
               default=float("nan"))
