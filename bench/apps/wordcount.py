"""Word count (the PKG paper's Storm benchmark): running counts per key, merged by an aggregator.

Each worker keeps the running counts of the keys routed to it.  Under key-splitting schemes (pkg,
sg, ...) one key is counted on several workers, so a worker's outputs are *partial-count deltas*:
after every micro-batch it emits ``(key, count in this batch)`` for each key it saw, and the
aggregator sums the deltas per key.  The aggregation period T is therefore one micro-batch; the
top-k words (k = 10) at every batch boundary (:meth:`WordCount.periodic`) are :func:`top_k` of the
deltas summed so far.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from skewbench.bench.apps.base import App, add_counts, copies, register_app, stream_keys
from skewbench.stream import Stream

OUTPUT_COLUMNS = ["seq", "worker", "key", "fp", "count"]


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

    def __init__(self, k: int = 10):
        self.k = int(k)

    def fan_out(self, scheme, fps, routes, batch):
        everything = np.ones(len(batch), dtype=bool)
        return copies(scheme, fps, routes, batch, store=everything, probe=~everything)

    def new_state(self, worker: int) -> dict:
        return {"fps": np.empty(0, dtype=np.int64), "counts": np.empty(0, dtype=np.int64)}

    def process(self, state, rows):
        fps = rows["fp"].to_numpy(dtype=np.int64)
        uniq, first, inverse, counts = np.unique(fps, return_index=True, return_inverse=True, return_counts=True)
        last_seq = np.full(len(uniq), -1, dtype=np.int64)
        np.maximum.at(last_seq, inverse, rows["seq"].to_numpy(dtype=np.int64))
        out = pd.DataFrame({"seq": last_seq, "worker": rows["worker"].to_numpy(dtype=np.int32)[first],
                            "key": rows["key"].to_numpy()[first], "fp": uniq, "count": counts.astype(np.int64)},
                           columns=OUTPUT_COLUMNS)
        keys, totals = add_counts(state["fps"], state["counts"], uniq, counts)
        return {"fps": keys, "counts": totals}, out

    def state_entries(self, state) -> int:
        return len(state["fps"])

    def combine(self, outputs, states) -> pd.Series:
        counts = outputs.groupby("key", sort=True)["count"].sum().astype(np.int64)
        return counts.rename("count").rename_axis("key")

    def reference(self, stream: Stream) -> pd.Series:
        self.check(stream)
        counts = pd.Series(stream_keys(stream)).value_counts().sort_index().astype(np.int64)
        return counts.rename("count").rename_axis("key")

    def same(self, a: pd.Series, b: pd.Series) -> bool:
        return bool(a.index.equals(b.index) and np.array_equal(a.to_numpy(), b.to_numpy()))

    def periodic(self, batches):
        """The top-k words after every micro-batch (the aggregation period T): the deltas summed so far."""
        totals, rows = pd.Series(dtype=np.int64), []
        for batch, out in sorted(batches.items()):
            if len(out):
                totals = totals.add(out.groupby("key")["count"].sum(), fill_value=0).astype(np.int64)
            top = self.top(totals)
            rows.append(pd.DataFrame({"batch": batch, "rank": np.arange(1, len(top) + 1), "key": top.index,
                                      "count": top.to_numpy()}))
        return pd.concat(rows, ignore_index=True)

    def top(self, counts: pd.Series) -> pd.Series:
        """This app's top-k (``k`` words) of a count series."""
        return top_k(counts, self.k)
