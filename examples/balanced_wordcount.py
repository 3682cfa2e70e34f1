"""Word count over a folder of text files as a stream, its hot words split over workers by a skewbench scheme.

    SPARK_CONF_DIR=.cluster/loadgen/conf .venv-cluster/bin/python examples/balanced_wordcount.py TEXTS OUT

reads every file in TEXTS (one micro-batch per file), counts each word with a Python stateful function that
spends ``--cost-ms`` of CPU per word (standing in for real per-key work), writes the partial counts under OUT
and prints the ten most frequent words.  Run it again on the same OUT with new files in TEXTS and it goes on
from its checkpoint; with another ``--scheme`` it is refused.
"""

import argparse
import operator
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from skewbench.spark import Balancer, BalancerError


def counter(cost_ms: float):
    """``update`` for the Balancer: a worker's count of one word, plus this micro-batch's rows of it."""

    def count(word, rows, total):
        busy_until = time.perf_counter() + len(rows) * cost_ms / 1000
        while time.perf_counter() < busy_until:  # the per-word work a real job would do
            pass
        return (total or 0) + len(rows)

    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("texts", help="folder of text files, read as a stream")
    parser.add_argument("out", help="folder for the checkpoint and the counts")
    parser.add_argument("--scheme", default="pkg")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--cost-ms", type=float, default=0.0)
    args = parser.parse_args()
    try:
        balancer = Balancer("word", scheme=args.scheme, workers=args.workers, merge=operator.add,
                            checkpoint=f"{args.out}/checkpoint")
    except BalancerError as error:
        print(f"balanced_wordcount: {error}")
        return 2
    spark = (SparkSession.builder.appName("balanced-wordcount")
             .config("spark.sql.shuffle.partitions", args.workers).getOrCreate())
    lines = spark.readStream.option("maxFilesPerTrigger", 1).text(args.texts)
    words = lines.select(F.explode(F.split("value", r"\s+")).alias("word")).where("word != ''")
    partials = balancer.per_key(balancer.route(words), counter(args.cost_ms), "bigint")
    balancer.write(partials, f"{args.out}/counts", availableNow=True).awaitTermination()
    print(balancer.results(f"{args.out}/counts").sort_values(ascending=False, kind="stable").head(10).to_string())
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
