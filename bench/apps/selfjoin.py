"""Sliding-window self-join of stock ticks (PKG paper §VI-A): pairs of ticks of one ticker close in time.

**Window.**  A join pair is ``(seq_a, seq_b)`` with ``seq_a < seq_b``, the same key, and
``seq_b - seq_a <= window``: the window is the last ``window`` *messages of the stream* (default
100).  At the offered rate R this is a time window of ``window / R`` seconds of ``t_intended``,
but measured in integers: a float time window would change its boundary pairs once the pipeline
adds an epoch offset to the clock, and a per-key "last N ticks" window needs a global per-key
counter that no worker has when the key is split.

**Exactly once.**  Every tick is stored at its routed worker and sent as a read-only probe to every
other holder of its key (:meth:`~skewbench.scheme.Scheme.holders`).  A pair is emitted by the
worker that *stores the earlier tick* ``a``, when the later tick's copy (store or probe) meets it
there: the later tick reaches that worker because the worker is one of its holders, and nowhere
else stores ``a``, so the pair comes out once, whatever the order in which workers run.  A tick's
store and probe copies never meet (they go to different workers), and within a batch a worker
handles rows in ``seq`` order, so a tick and its earlier partner in the same batch still match.

**Order across batches.**  With ``lateness = 0`` (default) a worker must receive its rows in
``seq`` order across micro-batches; :meth:`SelfJoin.process` raises ``ValueError`` otherwise.  With
``lateness = L > 0`` rows may arrive up to L messages behind the newest one the worker has seen:
it then also keeps probe copies, and a late stored tick emits the pairs with later ticks already
there.  The state is the stored window: rows with ``seq >= newest - window - lateness``.
"""

from __future__ import annotations

import dataclasses
import numpy as np
import pandas as pd

from skewbench.bench.apps.base import App, copies, register_app
from skewbench.stream import Stream

OUTPUT_COLUMNS = ["seq", "worker", "seq_a", "seq_b", "dprice"]
_STATE = ("fp", "seq", "price", "store")


def _matches(t_fp, t_seq, q_fp, q_lo, q_hi) -> tuple[np.ndarray, np.ndarray]:
    """``(query, target)`` index pairs with equal fp and ``q_lo <= t_seq < q_hi``."""
    if not len(t_fp) or not len(q_fp):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    _, group = np.unique(np.concatenate([t_fp, q_fp]), return_inverse=True)
    base = min(int(t_seq.min()), int(q_lo.min()))
    span = max(int(t_seq.max()), int(q_hi.max())) - base + 1
    if (int(group.max()) + 1) * span >= 2**62:
        raise OverflowError("self-join batch spans too many keys and sequence numbers")
    t_key = group[: len(t_fp)] * span + (t_seq - base)
    order = np.argsort(t_key, kind="stable")
    sorted_key = t_key[order]
    q_group = group[len(t_fp):] * span
    lo = np.searchsorted(sorted_key, q_group + (q_lo - base), "left")
    hi = np.searchsorted(sorted_key, q_group + (q_hi - base), "left")
    counts = hi - lo
    query = np.repeat(np.arange(len(q_fp), dtype=np.int64), counts)
    within = np.arange(len(query), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return query, order[np.repeat(lo, counts) + within]


def _pairs(seq_a, price_a, seq_b, price_b, worker: int) -> pd.DataFrame:
    return pd.DataFrame({"seq": seq_b, "worker": np.full(len(seq_a), worker, dtype=np.int32), "seq_a": seq_a,
                         "seq_b": seq_b, "dprice": price_b - price_a}, columns=OUTPUT_COLUMNS)


def _late(state: dict, new: dict, lateness: int) -> tuple[int, int] | None:
    """The first new tick (``new`` sorted by seq) more than ``lateness`` behind the newest tick the
    worker had seen, with that newest; None when all are in order.  A tick of a key that has just moved
    here (:meth:`SelfJoin.put`) counts from the newest tick its old worker had seen: its window came
    with it, and its ticks held while it moved are older than this worker's own newest."""
    limit = np.full(len(new["seq"]), state["newest"], dtype=np.int64)
    if len(state.get("arrived", ())):
        keys, newest = state["arrived"]
        at = np.minimum(np.searchsorted(keys, new["fp"]), len(keys) - 1)
        limit = np.where(keys[at] == new["fp"], newest[at], limit)
    bad = np.flatnonzero(new["seq"] < limit - lateness)
    return (int(new["seq"][bad[0]]), int(limit[bad[0]])) if len(bad) else None


@register_app
class SelfJoin(App):
    """Join ticks of the same ticker at most ``window`` messages apart; see the module docstring.

    The answer is a DataFrame of pairs (``seq_a``, ``seq_b``, ``dprice`` = price_b − price_a),
    sorted, one row per pair (a pair produced twice shows up twice).
    """

    name = "selfjoin"
    default_workload = "ticks:symbols=5000"
    payload_columns = ("price",)

    def __init__(self, window: int = 100, lateness: int = 0):
        if int(window) < 1 or int(lateness) < 0:
            raise ValueError(f"need window >= 1 and lateness >= 0, got window={window}, lateness={lateness}")
        self.window, self.lateness = int(window), int(lateness)

    def prepare(self, stream: Stream) -> Stream:
        """A keyed stream without prices (a word or Zipf stream) gets a seeded random walk as prices, so
        that any key distribution can be self-joined; the pairs depend only on keys and positions."""
        if "price" in stream.payload:
            return stream
        walk = 100 + np.random.default_rng(0).standard_normal(stream.messages).cumsum() / 100
        return dataclasses.replace(stream, payload={**stream.payload, "price": walk})

    def fan_out(self, scheme, fps, routes, batch):
        everything = np.ones(len(batch), dtype=bool)
        return copies(scheme, fps, routes, store=everything, probe=everything)

    def new_state(self, worker: int) -> dict:
        return {"fp": np.empty(0, dtype=np.int64), "seq": np.empty(0, dtype=np.int64),
                "price": np.empty(0, dtype=np.float64), "store": np.empty(0, dtype=bool), "newest": -1}

    def process(self, state, rows):
        rows = rows.sort_values("seq", kind="stable")
        worker = int(rows["worker"].iloc[0]) if len(rows) else -1
        new = {"fp": rows["fp"].to_numpy(dtype=np.int64), "seq": rows["seq"].to_numpy(dtype=np.int64),
               "price": rows["price"].to_numpy(dtype=np.float64), "store": (rows["role"] == "store").to_numpy()}
        late = _late(state, new, self.lateness)
        if late is not None:
            raise ValueError(f"self-join worker {worker} got tick {late[0]} after tick {late[1]}: "
                             f"rows arrived more than lateness={self.lateness} messages out of order")
        both = {c: np.concatenate([state[c], new[c]]) for c in _STATE}
        w = self.window
        # A: every row meets the earlier stored ticks within the window (state or this batch).
        stored = np.flatnonzero(both["store"])
        q, t = _matches(both["fp"][stored], both["seq"][stored], new["fp"], new["seq"] - w, new["seq"])
        t = stored[t]
        found = [_pairs(both["seq"][t], both["price"][t], new["seq"][q], new["price"][q], worker)]
        # B: a late stored tick meets later ticks that arrived before it (only when lateness > 0).
        mine = np.flatnonzero(new["store"])
        q, t = _matches(state["fp"], state["seq"], new["fp"][mine], new["seq"][mine] + 1, new["seq"][mine] + w + 1)
        q = mine[q]
        found.append(_pairs(new["seq"][q], new["price"][q], state["seq"][t], state["price"][t], worker))
        newest = max(int(state["newest"]), int(new["seq"][-1]) if len(rows) else -1)
        keep = (both["seq"] >= newest - w - self.lateness) & (both["store"] | (self.lateness > 0))
        return {**{c: both[c][keep] for c in _STATE}, "newest": newest}, pd.concat(found, ignore_index=True)

    def state_entries(self, state) -> int:
        return len(np.unique(state["fp"][state["store"]]))

    def driver_state(self, state) -> None:
        """Nothing: the pairs are in the outputs."""
        return None

    def take(self, state, fps, to):
        """The window's ticks of ``fps``, and the newest tick this worker had seen (:func:`_late`)."""
        going = np.isin(state["fp"], fps)
        part = {**{c: state[c][going] for c in _STATE}, "fps": np.asarray(fps, dtype=np.int64),
                "newest": state["newest"]}
        return {**state, **{c: state[c][~going] for c in _STATE}}, part

    def put(self, state, part):
        both = {c: np.concatenate([state[c], part[c]]) for c in _STATE}
        order = np.argsort(both["seq"], kind="stable")
        keys, newest = state.get("arrived", (np.empty(0, np.int64), np.empty(0, np.int64)))
        keys, newest = np.r_[keys, part["fps"]], np.r_[newest, np.full(len(part["fps"]), part["newest"])]
        order_keys = np.argsort(keys, kind="stable")
        return {**state, **{c: both[c][order] for c in _STATE}, "arrived": (keys[order_keys], newest[order_keys])}

    def combine(self, outputs, states) -> pd.DataFrame:
        pairs = outputs[["seq_a", "seq_b", "dprice"]]
        return pairs.sort_values(["seq_a", "seq_b"], kind="stable").reset_index(drop=True)

    def reference(self, stream: Stream) -> pd.DataFrame:
        """Direct scan: ticks sorted by (key, seq); pairs at lag 1, 2, ... until no lag fits the window."""
        self.check(stream)
        seq = np.arange(stream.messages, dtype=np.int64)
        price = np.asarray(stream.payload["price"], dtype=np.float64)
        order = np.lexsort((seq, stream.ids))
        ids, seq, price = stream.ids[order], seq[order], price[order]
        found = []
        for lag in range(1, len(seq)):
            ok = (ids[lag:] == ids[:-lag]) & (seq[lag:] - seq[:-lag] <= self.window)
            if not ok.any():
                break
            a, b = np.flatnonzero(ok), np.flatnonzero(ok) + lag
            found.append(pd.DataFrame({"seq_a": seq[a], "seq_b": seq[b], "dprice": price[b] - price[a]}))
        pairs = pd.concat(found, ignore_index=True) if found else pd.DataFrame(
            {"seq_a": np.empty(0, np.int64), "seq_b": np.empty(0, np.int64), "dprice": np.empty(0)})
        return pairs.sort_values(["seq_a", "seq_b"], kind="stable").reset_index(drop=True)

    def same(self, a: pd.DataFrame, b: pd.DataFrame) -> bool:
        return len(a) == len(b) and all(np.array_equal(a[c].to_numpy(), b[c].to_numpy())
                                        for c in ("seq_a", "seq_b", "dprice"))
