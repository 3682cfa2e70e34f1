"""The run summary's throughput counts only batches whose progress Spark reported (no cluster needed)."""
import pandas as pd

from skewbench.bench.spark.run import after_warmup


def batches(ids):
    return pd.DataFrame({"batch": ids, "started": [10.0 * b for b in ids], "duration": [10.0] * len(ids)})


def test_throughput_skips_the_warmup_batch_and_batches_without_progress():
    latency = pd.DataFrame({"batch": [b for b in range(4) for _ in range(100)]})  # 100 messages per batch
    warm, rate = after_warmup(batches([0, 1, 2, 3]), latency)
    assert len(warm) == 300 and rate == 300 / 30
    warm, rate = after_warmup(batches([0, 1, 2]), latency)  # batch 3's progress never came
    assert len(warm) == 200 and rate == 200 / 20


def test_one_batch_has_no_steady_state():
    assert after_warmup(batches([0]), pd.DataFrame({"batch": [0]}))[0] is None
