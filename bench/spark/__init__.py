"""The Spark Structured Streaming pipeline (issue 4): a Python streaming source with S partitions, a
routing stage (one scheme object per source, kept as state across micro-batches), W worker slots
(worker *i* on Spark partition *i*, app state and injected CPU delay) and a driver that checks the
final answer against a single-process reference.  Imported as ``skewbench.bench.spark``.

Only :mod:`~skewbench.bench.spark.delay`, :mod:`~skewbench.bench.spark.summary` and
:mod:`~skewbench.bench.spark.run`'s input checks work without PySpark; everything else runs in
``.venv-cluster``.
"""
