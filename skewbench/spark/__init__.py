"""Balance a skewed keyed stage of your own PySpark Structured Streaming job with any skewbench scheme.

Spark runs a stateful per-key operator (``applyInPandasWithState``, a grouped pandas UDF) on one task per
key: a key with a fifth of the stream makes its task, and so every micro-batch, five times longer than it
would be with the load spread.  :class:`Balancer` splits such keys the way a scheme says (PKG's two choices,
D-/W-Choices' many for the hottest keys) and merges the partial results downstream::

    import operator
    from skewbench.spark import Balancer

    def count(word, rows, total):                     # one key's rows of a micro-batch on one worker
        return (total or 0) + len(rows)

    balancer = Balancer("word", scheme="dchoices", workers=10, merge=operator.add, checkpoint="/data/ck")
    partials = balancer.per_key(balancer.route(words), count, "bigint")
    balancer.write(partials, "/data/counts").awaitTermination()
    balancer.results("/data/counts")                  # pandas Series: word -> count

``examples/balanced_wordcount.py`` is a complete job.  What it takes, and what it does not:

* **Decomposable results only.**  A key may be processed on up to ``balancer.replication`` workers (2
  for pkg, W for dchoices/wchoices), each keeping a *partial* result; the answer is ``merge`` of the
  workers' newest partials, so ``merge`` must be associative and commutative and the partials must
  combine into the whole (counts, sums, min/max, histograms, mergeable sketches).  An exact median or
  a per-key sequence that must see every row in order cannot be split: use ``kg`` or ``consistent``
  (one worker per key; no merge needed), and :class:`Balancer` refuses a splitting scheme without
  ``merge``.
* **Tables planned once.**  A scheme that plans a routing table (Gedik's, Fang's, LLFD, Off-Greedy) plans
  it on ``sample=`` before the query starts and keeps it (:func:`~skewbench.spark.balancer.planned`):
  re-planning while the query runs would move keys' state.
* **State up to d times per key.**  A split key's state lives on every worker that took some of its
  rows: up to ``replication`` copies of its partial.  Each worker keeps its keys' partials in one state
  entry, rewritten every micro-batch it gets rows.
* **Rows in no fixed order.**  ``update`` sees one micro-batch's rows of a key on one worker, in
  Spark's shuffle order, as Spark's own per-key operators do.
* **Windows and watermarks.**  Make the window part of the key (e.g. a ``window_start:user`` string
  column) and drop finished windows' partials in ``update``; results are read per key.  A windowed
  second stage in append mode is not provided.
* **Exactly-once output.**  :meth:`Balancer.write` writes each micro-batch's partials to
  ``output/partials/batch=B``, overwritten when Spark reruns batch B; routing reruns the same way
  (:mod:`.routers`), so a replay writes the same files.
* **One configuration per checkpoint.**  The key, scheme, parameters, W and seed are saved beside
  the checkpoint; a restart with others is refused (each key's state lives where the first put it).
* **Where it pays.**  Spark already aggregates built-in mergeable aggregates (``sum``, ``count``)
  partially before the shuffle, so a hot key costs one row per task there, and splitting it gains
  nothing: balance the stages without partial aggregation — Python stateful operators, grouped pandas
  UDFs, per-key CPU cost, skewed state size.  ``bench/studies/api.yaml`` measures both.

W's workers run in ``spark.sql.shuffle.partitions`` tasks (worker *i* in task *i* mod P): set it to W.
"""

from skewbench.spark.balancer import Balancer, BalancerError, merged, balancer_schemes

__all__ = ["Balancer", "BalancerError", "merged", "balancer_schemes"]
