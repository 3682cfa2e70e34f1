"""Word count (the PKG paper's Storm benchmark): counts per key, partial counts merged by an aggregator.

Each worker counts the keys routed to it.  Under key-splitting schemes (pkg, sg, ...) one key is
counted on several workers, so a worker sends the aggregator *partial counts*, which it sums per
key.  How often is the aggregation period T (``period``, in the worker's micro-batches):

* ``period=0`` (default; the paper's first experiment, no aggregation): the worker keeps every
  counter for the whole run and sends the counts of each micro-batch as they happen;
* ``period=T`` (the paper's second experiment, Fig. 5b): the worker sends its counters every T of
  its micro-batches and drops them, so it holds fewer counters and sends more aggregation messages
  the shorter T is.

The top-k words (k = 10) after every micro-batch (:meth:`WordCount.periodic`) are :func:`top_k` of
what the aggregator has received so far.  With T > 0 a worker's counters carry the words, which it
sends later (with T = 0 they go out with each batch's counts, and keeping them would only cost
pickling: 9 ms per batch for 33k counters); :meth:`WordCount.state_entries` counts the counters it
held at the end of its last micro-batch, before sending.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from skewbench.bench.apps.base import App, Copies, key_labels, register_app
from skewbench.counts import add_counts, find, present
from skewbench.stream import Stream

OUTPUT_COLUMNS = ["seq", "worker", "key", "fp", "count"]


def _merge(state: dict, fps: np.ndarray, keys: np.ndarray, counts: np.ndarray) -> dict:
    """The worker's counters (sorted by fingerprint) plus one batch's; words too if it keeps them."""
    all_fps, merged = add_counts(state["fps"], state["counts"], fps, counts)
    if "keys" not in state:
        return {"fps": all_fps, "counts": merged}
    fps, first = np.unique(fps, return_index=True)
    at, found = find(state["fps"], fps)  # the words new to the state go in where their fingerprints went
    return {"fps": all_fps, "keys": np.insert(state["keys"], at[~found], keys[first][~found]), "counts": merged}


def _output(state: dict, fps: np.ndarray, keys: np.ndarray, counts: np.ndarray) -> pd.DataFrame:
    """Counts the worker sends the aggregator, stamped with the last message it had processed."""
    return pd.DataFrame({"seq": np.full(len(fps), state["last_seq"], dtype=np.int64),
                         "worker": np.full(len(fps), state["worker"], dtype=np.int32), "key": keys, "fp": fps,
                         "count": counts.astype(np.int64)}, columns=OUTPUT_COLUMNS)


def _totals() -> dict:
    """The aggregator's running counts, by fingerprint with each word beside (as a worker keeps them): a
    batch's outputs merge in by binary search, where a ``pd.Series`` indexed by word realigned every
    word so far (14 s a run at 2.4 million words, the megaphone study)."""
    return {"fps": np.empty(0, np.int64), "keys": np.empty(0, dtype=object), "counts": np.empty(0, np.int64)}


def _add(totals: dict, outputs: pd.DataFrame) -> dict:
    """The aggregator's running counts plus one micro-batch's outputs."""
    if not len(outputs):
        return totals
    return _merge(totals, outputs["fp"].to_numpy(np.int64), outputs["key"].to_numpy(),
                  outputs["count"].to_numpy(np.int64))


def _top(totals: dict, k: int) -> pd.Series:
    """:func:`top_k` of the running counts, sorting only the counts that can be among the ``k`` largest."""
    counts = totals["counts"]
    among = np.arange(len(counts))
    if len(counts) > k:
        among = np.flatnonzero(counts >= np.partition(counts, len(counts) - k)[len(counts) - k])
    return top_k(pd.Series(counts[among], index=totals["keys"][among]), k)


def top_k(counts: pd.Series, k: int = 10) -> pd.Series:
    """The ``k`` largest counts, ties broken by key (deterministic)."""
    order = np.lexsort((counts.index.to_numpy(dtype=str), -counts.to_numpy()))
    return counts.iloc[order[:k]]


@register_app
class WordCount(App):
    """Counts per key; the answer is a ``pd.Series`` of counts indexed by key (sorted, int64).

    >>> import numpy as np
    >>> from skewbench.stream import Stream
    >>> from skewbench.bench.apps.local import run_in_process
    >>> s = Stream("demo", np.random.default_rng(0).zipf(2.0, 5_000) % 300)
    >>> app = WordCount()
    >>> app.same(run_in_process(app, s, "pkg", workers=4, sources=2, batch=500).answer, app.reference(s))
    True
    """

    name = "wordcount"
    default_workload = "wp"
    payload_columns = ()

    def __init__(self, k: int = 10, period: int = 0):
        if int(period) < 0:
            raise ValueError(f"the aggregation period must be >= 0 micro-batches, got {period}")
        self.k = int(k)
        self.period = int(period)

    def fan_out(self, scheme, fps, routes, batch):
        """Every message is stored where it is routed.  Word count never probes, so no holder rule is
        read and the holders need no check: :func:`copies` would ask a table scheme for every distinct
        key's holders one by one, 50 ms per 50,000 messages under Mixed, in every source task."""
        n = len(batch)
        return Copies(np.arange(n, dtype=np.int64), np.asarray(routes).astype(np.int32), np.ones(n, dtype=bool))

    def new_state(self, worker: int) -> dict:
        state = {"worker": worker, "fps": np.empty(0, dtype=np.int64), "counts": np.empty(0, dtype=np.int64),
                 "batches": 0, "held": 0, "last_seq": -1}
        return state | ({"keys": np.empty(0, dtype=object)} if self.period else {})

    def process(self, state, rows):
        fps, first, counts = np.unique(rows["fp"].to_numpy(dtype=np.int64), return_index=True, return_counts=True)
        keys = rows["key"].to_numpy()[first]
        state = {**state, **_merge(state, fps, keys, counts), "batches": state["batches"] + 1,
                 "last_seq": int(rows["seq"].max())}
        state["held"] = len(state["fps"])
        if self.period == 0:
            return state, _output(state, fps, keys, counts)
        if state["batches"] % self.period == 0:
            return self.finish(state)
        return state, _output(state, fps[:0], keys[:0], counts[:0])

    def finish(self, state):
        """The counters not yet sent go to the aggregator (with ``period=0`` they all went already)."""
        if self.period == 0:
            return state, None
        sent = _output(state, state["fps"], state["keys"], state["counts"])
        return {**state, "fps": state["fps"][:0], "keys": state["keys"][:0], "counts": state["counts"][:0]}, sent

    def state_entries(self, state) -> int:
        return state["held"]

    def driver_state(self, state) -> None:
        """Nothing: the counts are in the outputs (a worker's counters at W = 100 are megabytes in the
        stream's last batch, on the 2 cores the driver shares)."""
        return None

    def take(self, state, fps, to):
        """The counters of ``fps`` not yet sent (all of them with ``period=0``: they only count on)."""
        going = present(state["fps"], fps)
        columns = ("fps", "counts", "keys") if "keys" in state else ("fps", "counts")
        part = {c: state[c][going] for c in columns}
        left = {**state, **{c: state[c][~going] for c in columns}}
        left["held"] = len(left["fps"])
        return left, part

    def put(self, state, part):
        keys = part.get("keys", np.empty(len(part["fps"]), dtype=object))
        state = {**state, **_merge(state, part["fps"], keys, part["counts"])}
        state["held"] = len(state["fps"])
        return state

    def reduce(self, frames):
        """The counts summed per key: the aggregator's totals after the last micro-batch."""
        totals = _totals()
        for out in frames:
            totals = _add(totals, out)
        return pd.DataFrame({"key": totals["keys"], "count": totals["counts"]})

    def combine(self, outputs, states) -> pd.Series:
        counts = outputs.groupby("key", sort=True)["count"].sum().astype(np.int64)
        return counts.rename("count").rename_axis("key")

    def reference(self, stream: Stream) -> pd.Series:
        self.check(stream)
        counts = np.bincount(stream.ids, minlength=stream.n_keys)
        met = np.flatnonzero(counts)  # labels for the keys met only (a Zipf space of 16M keys meets 2.4M)
        counts = pd.Series(counts[met], index=key_labels(stream, met)).groupby(level=0, sort=True).sum()
        counts = counts.astype(np.int64)
        return counts.rename("count").rename_axis("key")

    def same(self, a: pd.Series, b: pd.Series) -> bool:
        return bool(a.index.equals(b.index) and np.array_equal(a.to_numpy(), b.to_numpy()))

    def periodic(self, batches):
        """The top-k words after every micro-batch (the aggregation period T): the deltas summed so far."""
        totals, rows = _totals(), []
        for batch, out in batches:
            totals = _add(totals, out)
            top = _top(totals, self.k)
            rows.append(pd.DataFrame({"batch": batch, "rank": np.arange(1, len(top) + 1), "key": top.index,
                                      "count": top.to_numpy()}))
        return pd.concat(rows, ignore_index=True)

    def top(self, counts: pd.Series) -> pd.Series:
        """This app's top-k (``k`` words) of a count series."""
        return top_k(counts, self.k)
