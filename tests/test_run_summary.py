"""The run summary's throughput and latency from what the workers sent (no cluster needed)."""
import subprocess
import sys

import numpy as np
import pandas as pd

from skewbench.bench.spark.latency import batch_messages, first_arrival, handled, seqs
from skewbench.bench.spark.summary import OVERHEAD_PARTS, after_warmup, batch_table, final_counters, mean_counters


def batches(ids):
    return pd.DataFrame({"batch": ids, "started": [10.0 * b for b in ids], "duration": [10.0] * len(ids)})


def test_throughput_skips_the_warmup_batch_and_batches_without_progress():
    latency = {b: np.full(100, float(b)) for b in range(4)}  # 100 messages per batch
    offered = {b: 10.0 * b for b in range(4)}  # rate 0: a batch's messages arrive as it starts
    warm, rate = after_warmup(batches([0, 1, 2, 3]), latency, offered)
    assert len(warm) == 300 and rate == 300 / 30 and sorted(set(warm)) == [1.0, 2.0, 3.0]
    warm, rate = after_warmup(batches([0, 1, 2]), latency, offered)  # batch 3's progress never came
    assert len(warm) == 200 and rate == 200 / 20


def test_under_an_offered_rate_throughput_is_timed_from_the_first_arrival():
    """A slow warm-up batch (0-25 s) while messages keep arriving: batch 1 (25-30 s) takes the 100
    that arrived from 10 s on.  Timing from batch 1's start would give 20/s; they took 20 s."""
    b = pd.DataFrame({"batch": [0, 1], "started": [0.0, 25.0], "duration": [25.0, 5.0]})
    _, rate = after_warmup(b, {0: np.zeros(50), 1: np.zeros(100)}, {0: 0.0, 1: 10.0})
    assert rate == 100 / 20


def test_one_batch_has_no_steady_state():
    assert after_warmup(batches([0]), {0: np.zeros(1)}, {0: 0.0})[0] is None


def record(seq, t_end, t_intended):
    return {"messages": handled(np.array(seq, dtype=np.int64), np.array(t_intended, dtype=np.float64)), "t_end": t_end}


def test_a_message_copied_to_several_workers_ends_with_its_last_copy():
    records = [record([10, 12], 5.0, [1.0, 2.0]),  # seq 12 is also probed at the next worker ...
               record([11, 12], 9.0, [1.5, 2.0]),  # ... which ends later: 12's latency is 9 - 2
               record([], 20.0, []),  # a worker without messages in this batch
               record([13], 4.0, [3.0])]
    done, latency = batch_messages(records)
    assert done.tolist() == [10, 11, 12, 13] and latency.tolist() == [4.0, 7.5, 7.0, 1.0]
    assert [len(a) for a in batch_messages([record([], 1.0, [])])] == [0, 0]


def test_handled_messages_travel_compactly_and_come_back_exactly():
    rng = np.random.default_rng(0)
    seq = np.sort(rng.choice(2_000_000, 30_000, replace=False))
    seq[-1] += 100_000  # one gap wider than 2**16
    spread = handled(np.array([5, 300, 1000, 60000]), np.arange(4.0))  # gaps below 2**16, rate > 0
    assert spread["gaps"].dtype == np.uint16 and spread["t_intended"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert seqs(spread).tolist() == [5, 300, 1000, 60000]
    wide = handled(seq, np.full(len(seq), 7.5))  # rate 0: one intended time for the batch
    assert wide["gaps"].dtype == np.uint32 and wide["t_intended"].tolist() == [7.5]
    assert np.array_equal(seqs(wide), seq)
    assert batch_messages([{"messages": wide, "t_end": 10.0}])[1].tolist() == [2.5] * len(seq)


def test_peak_pss_sums_each_nodes_last_reading():
    """Agents read PSS every few samples, each node at its own moments (the other rows have none)."""
    from skewbench.bench.spark.metrics import resource_summary

    MiB = 2**20
    rows = [(t, node, pid, "python_worker", 10.0, 300 * MiB, pss and pss * MiB) for t, node, pid, pss in [
        (0, "w1", 1, 100), (0, "w1", 2, 100), (1, "w1", 1, None), (1, "w1", 2, None),
        (1, "w2", 3, 50), (2, "w2", 3, None), (2, "w1", 1, 120), (2, "w1", 2, 120)]]
    samples = pd.DataFrame(rows, columns=["time", "node", "pid", "role", "cpu_percent", "rss_bytes", "pss_bytes"])
    summary = resource_summary(samples)["python_worker"]
    assert summary["peak_pss_mib"] == 240 + 50  # w1 at t=2 plus w2's reading at t=1
    assert summary["peak_rss_mib"] == 900 and summary["processes"] == 3


def test_a_runs_resource_samples_are_found_in_the_tail_of_a_growing_file(tmp_path):
    from skewbench.bench.spark.metrics import resource_samples

    rng = np.random.default_rng(3)
    for node in ("n1", "n2"):
        times = 1000 + np.cumsum(rng.choice([0.0, 0.0, 0.5, 1.0], size=3000))
        rows = [f"{t:.3f},{node},{i},executor,1.0,{i}," for i, t in enumerate(times)]
        (tmp_path / node / "metrics").mkdir(parents=True)
        (tmp_path / node / "metrics/resources.csv").write_text(
            "time,node,pid,role,cpu_percent,rss_bytes,pss_bytes\n" + "\n".join(rows) + "\n")
    whole = pd.concat([pd.read_csv(f) for f in sorted(tmp_path.glob("*/metrics/resources.csv"))], ignore_index=True)
    for start, end in [(0, 1e9), (1000, 1500), (1500, 1500), (1234.5, 2345.5), (1e8, 1e9)]:
        expected = whole[(whole["time"] >= start) & (whole["time"] <= end)].reset_index(drop=True)
        pd.testing.assert_frame_equal(resource_samples(tmp_path, start, end), expected, check_dtype=False)


def test_first_arrival_is_the_earliest_intended_time_of_a_batch():
    records = [record([3, 4], 5.0, [2.0, 2.5]), record([], 6.0, []), record([1], 7.0, [1.5])]
    assert first_arrival(records) == 1.5 and np.isnan(first_arrival([record([], 1.0, [])]))


def test_batch_table_splits_the_overhead_in_the_order_it_is_paid():
    progress = [{"batchId": b, "timestamp": f"2026-01-01T00:00:{10 * b:02d}.000Z", "numInputRows": rows,
                 "durationMs": {"triggerExecution": 8000, "addBatch": 6000}} for b, rows in [(0, 5), (1, 0), (2, 7)]]
    start = pd.Timestamp("2026-01-01T00:00:00Z").timestamp()
    metrics = pd.DataFrame({"batch": [0, 0, 2], "stored": [3, 2, 7], "probed": [1, 0, 0],
                            "busy_seconds": [4.0, 1.0, 2.0], "t_start": start + np.array([1.0, 2.0, 21.5]),
                            "t_end": start + np.array([5.0, 6.5, 23.5])})
    table = batch_table(progress, metrics)
    assert table["batch"].tolist() == [0, 2]  # a batch without input is no batch
    assert table["copies"].tolist() == [6, 7] and table["addBatch_seconds"].tolist() == [6.0, 6.0]
    first = table.iloc[0]
    assert [first[p] for p in OVERHEAD_PARTS] == [1.0, 1.5, 1.5] and first["overhead"] == 8.0 - 4.0
    assert np.allclose(table[list(OVERHEAD_PARTS)].sum(axis=1), table["overhead"])


def test_mean_counters_carries_a_quiet_workers_state_forward():
    metrics = pd.DataFrame({"batch": [0, 0, 1, 2, 2], "worker": [0, 1, 0, 0, 1], "state_entries": [2, 3, 4, 5, 1]})
    assert mean_counters(metrics) == ((2 + 3) + (4 + 3) + (5 + 1)) / 3
    assert final_counters(metrics.iloc[::-1]) == 5 + 1  # each worker's last batch, whatever the order


def test_the_summaries_need_no_spark_and_the_run_module_keeps_its_names():
    check = "import sys, skewbench.bench.spark.summary; print(sorted(m for m in sys.modules if 'pyspark' in m))"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr[-2000:] + done.stdout
    from skewbench.bench.spark import run
    for name in ("Config", "RunError", "run", "session", "master_url", "master_status", "free_slots", "check",
                 "CLUSTER_PYTHON", "OVERHEAD_PARTS"):
        assert hasattr(run, name), name
