"""One balanced keyed stage of a user's Structured Streaming job: route, run per key, write, merge.

A :class:`Balancer` holds what must not change over a query's life — the key column, the scheme and its
parameters, W, the seed — checks it against what the checkpoint was started with, and offers the job's
four steps (:meth:`~Balancer.route`, :meth:`~Balancer.per_key`, :meth:`~Balancer.write`,
:meth:`~Balancer.results`).  Where things live, under the query's ``checkpoint`` folder:

* ``checkpoint/skewbench.json`` — the configuration (:data:`CONFIG`), written when a stream is first routed,
  and ``scheme.pickle`` beside it, the router every source starts from (a planned table among them);
* ``checkpoint/routers/`` — every source's router after its newest micro-batches (:mod:`.routers`);
* ``checkpoint/query/`` — Spark's own checkpoint (offsets, commits, the state store).
"""

from __future__ import annotations

import functools
import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.hashing import fingerprint
from skewbench.scheme import Stats, make_scheme, parse_params
from skewbench.spark.routers import SourceRouters, key_fingerprints

CONFIG, SCHEME = "skewbench.json", "scheme.pickle"
FORMAT = 1
WORKER, GROUP, VALUE = "skewbench_worker", "skewbench_group", "value"
KEY_TYPES = ("string", "binary", "tinyint", "smallint", "int", "bigint")


class BalancerError(ValueError):
    """A job the balancer cannot run as asked; the message says what to change."""


class Balancer:
    """Route a keyed stream with a skewbench scheme and run a per-key function on the split keys.

    ``key``: the column to balance on (string, binary or integer).  ``scheme``/``params``/``seed``: any
    registered scheme but the global load oracle (:func:`balancer_schemes`).  ``workers``: W, the workers of
    the per-key stage.  ``merge(a, b)``: combines two partial results of one key; required when the scheme
    may send a key to more than one worker.  ``checkpoint``: the query's folder, which every executor must
    reach (a local or mounted path).  ``sample``: for schemes that plan a routing table from statistics
    (adaptive, offline), the keys to plan it on — a recent stretch of the key column, as the benchmark
    plans on its stream's first tenth; the table is then fixed, and saved beside the checkpoint.

    >>> Balancer("word", scheme="pkg", workers=4, checkpoint="/tmp/unused")
    Traceback (most recent call last):
    ...
    skewbench.spark.balancer.BalancerError: scheme 'pkg' may send one key to 2 of the 4 workers, whose partial \
results must then be merged: give merge=f, where f(a, b) combines two partial results of one key (operator.add \
for counts and sums); a result that cannot be merged (an exact median, a distinct count) needs a scheme that \
keeps every key on one worker: kg or consistent
    """

    def __init__(self, key: str, *, scheme: str = "pkg", workers: int, checkpoint: str | Path, merge=None,
                 params: str = "", seed: int = 0, sample=None):
        self.key, self.scheme, self.workers, self.checkpoint = key, scheme, workers, checkpoint
        self.merge, self.params, self.seed = merge, params, seed
        self._folder = _local_folder(checkpoint)
        self._check_checkpoint()
        self._proto = self._prototype(_usable_scheme(scheme, workers, seed, params), sample)
        self.replication = _replication(self._proto)
        if self.replication > 1 and merge is None:
            raise BalancerError(
                f"scheme {scheme!r} may send one key to {self.replication} of the {workers} workers, whose partial "
                f"results must then be merged: give merge=f, where f(a, b) combines two partial results of one key "
                f"(operator.add for counts and sums); a result that cannot be merged (an exact median, a distinct "
                f"count) needs a scheme that keeps every key on one worker: kg or consistent")

    # -- the job's steps -----------------------------------------------------------------------
    def route(self, df):
        """``df`` with each row's worker (``skewbench_worker``, int) and that worker's group key
        (``skewbench_group``, bigint: grouping by it runs worker *i* in shuffle partition *i* mod P).
        Each input partition of ``df`` is one source with its own router.  The configuration is saved beside
        the checkpoint here, the first time (any query on the routed stream keeps it)."""
        from pyspark.sql.types import IntegerType, LongType, StructField, StructType

        from skewbench.spark.groups import preimages

        if self.key not in df.columns:
            raise BalancerError(f"the stream has no column {self.key!r}; its columns: {', '.join(df.columns)}")
        kind = df.schema[self.key].dataType.simpleString()
        if kind not in KEY_TYPES:
            raise BalancerError(f"column {self.key!r} is {kind}; balance on a {', '.join(KEY_TYPES)} column "
                                f"(cast it, or hash a composite key into one)")
        spark = df.sparkSession
        self._partitions = int(self._saved().get("partitions") or spark.conf.get("spark.sql.shuffle.partitions"))
        groups = preimages(spark, self.workers, self._partitions)
        self._persist()
        schema = StructType(df.schema.fields + [StructField(WORKER, IntegerType()), StructField(GROUP, LongType())])
        return df.mapInPandas(_router_function(self.key, SourceRouters(self._proto, self._folder / "routers"),
                                               groups), schema)

    def per_key(self, routed, update, value_type: str):
        """Run ``update(key, rows, partial) -> partial`` for every key of every micro-batch on the worker
        the scheme chose: ``rows`` are the key's rows of the batch on that worker (a pandas DataFrame),
        ``partial`` what the worker's last call for the key returned (None the first time).

        Returns the partial results as Spark streams them in update mode: one row (``key``,
        ``skewbench_worker``, ``value`` of Spark SQL type ``value_type``) per key and worker the batch
        touched.  A key's result is the ``merge`` of its workers' newest partials (:meth:`results`)."""
        from pyspark.sql.streaming.state import GroupStateTimeout

        if GROUP not in routed.columns:
            raise BalancerError("per_key() takes the stream route() returns (it has no skewbench_group column)")
        key_type = routed.schema[self.key].dataType.simpleString()
        out = f"`{self.key}` {key_type}, {WORKER} int, {VALUE} {value_type}"
        return routed.groupBy(GROUP).applyInPandasWithState(
            _worker_function(self.key, update), out, "partials binary", "Update", GroupStateTimeout.NoTimeout)

    def write(self, partials, output: str | Path, **trigger):
        """Start the query: every micro-batch's partials go to ``output/partials/batch=B`` (Parquet),
        overwritten if Spark runs batch B again, so a replay writes the same files (idempotent).
        ``trigger``: as ``DataStreamWriter.trigger`` takes it (e.g. ``availableNow=True``)."""
        return write_partials(partials, output, self._folder / "query", **trigger)

    def results(self, output: str | Path) -> pd.Series:
        """Every key's result so far: the ``merge`` of its workers' newest partials, read from ``output``
        (no Spark needed), sorted by key."""
        return merged(output, self.key, self.merge)

    # -- the configuration beside the checkpoint -----------------------------------------------
    def config(self) -> dict:
        return {"format": FORMAT, "key": self.key, "scheme": self.scheme, "params": self.params,
                "workers": int(self.workers), "seed": int(self.seed)}

    def _saved(self) -> dict:
        path = self._folder / CONFIG
        return json.loads(path.read_text()) if path.exists() else {}

    def _check_checkpoint(self) -> None:
        """Refuse a restart with another key, scheme, W or seed: each key's state lives where the
        scheme that started the query put it."""
        saved = self._saved()
        if not saved:
            return
        changed = [f"{k} {saved.get(k)!r} -> {v!r}" for k, v in self.config().items() if saved.get(k) != v]
        if changed:
            raise BalancerError(
                f"checkpoint {self.checkpoint} was started with {_describe(saved)}, and this job changes "
                f"{'; '.join(changed)}: each key's state lives where the first configuration put it, so a "
                f"restart must keep it. Start from a new checkpoint folder to change it")

    def _prototype(self, proto, sample):
        """The router every source starts from: the one the query started with (saved beside the checkpoint,
        a table planned on the first start's sample among them), else ``proto``, planned on ``sample`` if it
        plans a table."""
        saved = self._folder / SCHEME
        if saved.exists():
            return pickle.loads(saved.read_bytes())
        if not (proto.adaptive or proto.offline):
            return proto
        if sample is None:
            raise BalancerError(f"scheme {self.scheme!r} plans a routing table from the keys' counts: give "
                                f"sample=keys, a recent stretch of the {self.key!r} column (e.g. "
                                f"spark.read.parquet(history).select({self.key!r}).toPandas()[{self.key!r}])")
        return planned(proto, sample)

    def _persist(self) -> None:
        self._folder.mkdir(parents=True, exist_ok=True)
        path = self._folder / CONFIG
        if not path.exists():
            config = self.config() | {"partitions": getattr(self, "_partitions", None)}
            (self._folder / SCHEME).write_bytes(pickle.dumps(self._proto))
            path.write_text(json.dumps(config, indent=1) + "\n")


def write_partials(partials, output: str | Path, checkpoint: str | Path, **trigger):
    """Start a query writing each micro-batch's partials (columns key, ``skewbench_worker``, ``value``) to
    ``output/partials/batch=B``, the batch's folder overwritten when Spark runs it again."""
    target = str(Path(output) / "partials")

    def commit(batch, batch_id):
        batch.write.mode("overwrite").parquet(f"{target}/batch={batch_id}")

    writer = (partials.writeStream.outputMode("update").foreachBatch(commit)
              .option("checkpointLocation", str(checkpoint)))
    return (writer.trigger(**trigger) if trigger else writer).start()


def merged(output: str | Path, key: str, merge=None) -> pd.Series:
    """A key's result: ``merge`` over its workers of each one's newest partial (in ``output/partials``)."""
    folder = Path(output) / "partials"
    if not folder.is_dir():
        raise BalancerError(f"no partial results in {folder}: has the query written a micro-batch yet?")
    partials = pd.read_parquet(folder)  # batch=B folders: the column "batch"
    if not len(partials):
        return pd.Series([], name=VALUE, dtype=object).rename_axis(key)
    partials["batch"] = partials["batch"].astype(np.int64)
    newest = partials.sort_values("batch", kind="stable").drop_duplicates([key, WORKER], keep="last")
    combine = (lambda values: functools.reduce(merge, values)) if merge else (lambda values: values.iloc[0])
    return newest.groupby(key, sort=True)[VALUE].agg(combine).rename(VALUE)


def planned(proto, sample):
    """``proto`` with the routing table it plans on the keys ``sample`` (an offline scheme fitted on their
    counts, an adaptive one rebalanced once on them, routed first by its hash function), as the benchmark's
    pipeline plans on its stream's first tenth (:func:`skewbench.sources.prepare_scheme`)."""
    fps = key_fingerprints(np.asarray(sample))
    if not len(fps):
        raise BalancerError("sample= holds no keys: give a recent stretch of the key column")
    keys, counts = np.unique(fps, return_counts=True)
    if proto.offline:
        proto.fit(Stats(keys=keys, counts=counts.astype(np.float64), loads=np.zeros(proto.workers)))
    if proto.adaptive:
        loads = np.bincount(proto.route_many(fps), minlength=proto.workers).astype(np.float64)
        plan = proto.rebalance(Stats(keys=keys, counts=counts.astype(np.float64), loads=loads))
        if plan is not None:
            proto.apply(plan)
    return proto


def _usable_scheme(name: str, workers: int, seed: int, params: str):
    """The scheme's prototype router; a scheme that needs what a user's stream cannot give is refused."""
    if not isinstance(workers, (int, np.integer)) or workers < 1:
        raise BalancerError(f"workers must be a whole number >= 1, got {workers!r}")
    try:
        proto = make_scheme(name, int(workers), seed=int(seed), **parse_params(params))
    except ValueError as error:
        raise BalancerError(str(error)) from None
    except TypeError as error:  # a parameter the scheme does not take
        raise BalancerError(f"scheme {name!r} does not take the parameters {params!r} ({error})") from None
    if not _usable(type(proto)):
        raise BalancerError(f"scheme {name!r} needs every worker's true load at every source, which the sources of "
                            f"a Spark job do not share: use one of {', '.join(balancer_schemes())}")
    return proto


def _usable(cls) -> bool:
    """Sources that route alone, or by one table planned before the query starts (not a global load oracle)."""
    return cls.coupling == "local" or cls.adaptive


def balancer_schemes() -> list[str]:
    """The schemes :class:`Balancer` takes: all but those that need a load oracle every source shares."""
    import skewbench.schemes  # noqa: F401  (registers every scheme)
    from skewbench.scheme import REGISTRY

    return sorted(n for n, c in REGISTRY.items() if _usable(c))


def _replication(proto) -> int:
    """How many workers one key's state may live on (1: never split, no merge needed)."""
    return proto.workers if proto.holds_every_key() else len(proto.holders(fingerprint("any key")))


def _local_folder(checkpoint: str | Path) -> Path:
    text = str(checkpoint)
    if "://" in text and not text.startswith("file://"):
        raise BalancerError(f"checkpoint {text}: skewbench.spark keeps its configuration and routers beside the "
                            f"checkpoint, in a folder every executor reaches: give a local or mounted path")
    return Path(text.removeprefix("file://"))


def _describe(config: dict) -> str:
    return (f"key {config.get('key')!r}, scheme {config.get('scheme')!r} ({config.get('params') or 'defaults'}), "
            f"W = {config.get('workers')}, seed {config.get('seed')}")


def _router_function(key: str, routers: SourceRouters, groups: np.ndarray):
    """``mapInPandas``'s function: the rows of one input partition (one source) with their workers."""

    def route(frames):
        from pyspark import TaskContext

        context = TaskContext.get()
        batch = context.getLocalProperty("streaming.sql.batchId")  # None outside a streaming query
        batch, source = None if batch is None else int(batch), context.partitionId()
        router = routers.start(source, batch)
        for frame in frames:
            workers = router.route_many(key_fingerprints(frame[key].to_numpy())).astype(np.int32)
            yield frame.assign(**{WORKER: workers, GROUP: groups[workers]})
        routers.keep(source, batch, router)

    return route


def _worker_function(key: str, update):
    """``applyInPandasWithState``'s function: one worker's rows of a micro-batch, its partials kept in the
    group's state (one pickled dict: key -> partial)."""

    def work(_group, frames, state):
        partials = pickle.loads(state.get[0]) if state.exists else {}
        rows = pd.concat(list(frames), ignore_index=True)
        worker = int(rows[WORKER].iloc[0])
        rows = rows.drop(columns=[WORKER, GROUP])
        keys, values = [], []
        for k, part in rows.groupby(key, sort=False, dropna=False):
            partials[k] = update(k, part, partials.get(k))
            keys.append(k)
            values.append(partials[k])
        state.update((pickle.dumps(partials),))
        yield pd.DataFrame({key: keys, WORKER: np.full(len(keys), worker, np.int32), VALUE: values})

    return work
