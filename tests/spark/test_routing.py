"""The routing stage's per-process routers (no Spark needed): whichever process routes a batch, and
after a replay from an earlier offset, every message goes where the simulator sends it."""
import numpy as np
import pytest

from skewbench.bench.spark import routing
from skewbench.simulator.engine import simulate
from skewbench.sources import source_of_each_message
from skewbench.workloads import parse

W, S, BATCH = 8, 3, 700


@pytest.mark.parametrize("saved", [False, True], ids=["process-only", "executor-file"])
@pytest.mark.parametrize("scheme,split", [("pkg", "shuffle"), ("dkg", "shuffle"), ("dchoices", "key"),
                                          ("llfd", "shuffle"), ("pkg", "key"), ("off-greedy", "shuffle"),
                                          ("kg", "key")])
def test_routes_equal_the_simulator_across_processes_and_replays(scheme, split, saved, tmp_path, monkeypatch):
    monkeypatch.setattr(routing, "SAVED_DIR", tmp_path if saved else None)
    stream = parse("zipf:z=1.1,keys=300", messages=6000, seed=3)
    source_of = source_of_each_message(stream, S, split)
    run = (scheme, W, S, 3, "test", stream.messages, split, "")
    routing._LIVE.clear()
    routing._INITIAL.clear()
    routes = np.full(stream.messages, -1)
    offsets = list(range(0, stream.messages, BATCH))
    offsets = offsets[:4] + offsets[2:]  # a replay: batches 2 and 3 are read again
    for n, start in enumerate(offsets):
        end = min(start + BATCH, stream.messages)
        if n % 3 == 1:
            routing._LIVE.clear()  # another Python process picks up the next batch
        for j in range(S):
            router = routing.router_at(run, j, start, stream)
            idx = start + np.flatnonzero(source_of[start:end] == j)
            routes[idx] = router.route_many(stream.fps[idx], stream.clock[idx])
            routing.keep(run, j, end, router)
    if scheme in ("llfd", "off-greedy"):  # the fitted table is fixed: compare with routing by it
        table = routing.prepare(scheme, W, S, stream, seed=3)[0]
        expected = table.route_many(stream.fps, stream.clock)
    else:
        expected = simulate(stream, scheme, W, S, split=split, seed=3).routes
    assert np.array_equal(routes, expected)


@pytest.mark.parametrize("where", ["executor", "run"])
def test_a_router_saved_by_another_process_goes_on_where_it_stopped(where, tmp_path, monkeypatch):
    """Kept in the executor's folder (SAVED_DIR stands in for it outside Spark) or the run's, which every
    executor sees: the next batch's process, on this executor or another, goes on from there."""
    monkeypatch.setattr(routing, "SAVED_DIR", tmp_path if where == "executor" else None)
    folder = str(tmp_path) if where == "run" else ""
    stream = parse("zipf:z=1.1,keys=300", messages=3000, seed=3)
    run = ("pkg", W, 1, 3, "test", stream.messages, "shuffle", "")
    routing._LIVE.clear()
    routing._INITIAL.clear()
    router = routing.router_at(run, 0, 0, stream, folder)
    router.route_many(stream.fps[:1000], stream.clock[:1000])
    routing.keep(run, 0, 1000, router, folder)
    assert [p.name.endswith(".pickle") for p in tmp_path.iterdir()] == [True]  # one file, no part left
    routing._LIVE.clear()  # another Python process, here or on another executor, reads the next batch
    routing._INITIAL.clear()
    monkeypatch.setattr(routing, "prepare", lambda *a, **k: pytest.fail("routed the stream again from the start"))
    again = routing.router_at(run, 0, 1000, stream, folder)
    rest = slice(1000, None)
    assert np.array_equal(again.route_many(stream.fps[rest], stream.clock[rest]),
                          router.route_many(stream.fps[rest], stream.clock[rest]))


def test_a_stateless_router_is_saved_once_and_never_routes_again(tmp_path, monkeypatch):
    stream = parse("zipf:z=1.1,keys=300", messages=3000, seed=3)
    run = ("off-greedy", W, 1, 3, "test", stream.messages, "shuffle", "")
    routing._LIVE.clear()
    routing._INITIAL.clear()
    router = routing.router_at(run, 0, 0, stream, str(tmp_path))
    routing.keep(run, 0, 1000, router, str(tmp_path))
    [saved] = tmp_path.iterdir()
    written = saved.stat().st_mtime_ns
    routing.keep(run, 0, 2000, router, str(tmp_path))
    assert saved.stat().st_mtime_ns == written  # not written again: routing did not change it
    routing._LIVE.clear()  # another process, at a later offset: the saved router, nothing routed again
    monkeypatch.setattr(type(router), "route_many", lambda *a: pytest.fail("routed again"))
    assert routing.router_at(run, 0, 2000, stream, str(tmp_path)).stateless


def test_a_process_keeps_the_routers_of_one_run_only():
    """A Python worker serves every run of a bench: the next run's routers replace the last's."""
    stream = parse("zipf:z=1.1,keys=300", messages=3000, seed=3)
    first, second = (("off-greedy", W, 2, seed, "test", stream.messages, "shuffle", "") for seed in (3, 4))
    routing._LIVE.clear()
    routing._INITIAL.clear()
    for j in range(2):
        routing.keep(first, j, 1000, routing.router_at(first, j, 0, stream))
    assert {key[0] for key in routing._LIVE} == set(routing._INITIAL) == {first}
    routing.keep(second, 0, 1000, routing.router_at(second, 0, 0, stream))
    assert {key[0] for key in routing._LIVE} == set(routing._INITIAL) == {second}


@pytest.mark.parametrize("scheme", ["mixed", "off-greedy", "pkg"])
def test_the_first_batch_reads_the_initial_routers_the_driver_saved(scheme, tmp_path, monkeypatch):
    """Saved by the driver before the query starts, the first batch's sources prepare nothing themselves
    (an adaptive or offline scheme's fit) and route as the prepared routers do."""
    stream = parse("zipf:z=1.1,keys=300", messages=6000, seed=3)
    run = routing.run_of(scheme, W, S, 3, "test", stream.messages, "shuffle", "")
    first = slice(0, BATCH)
    expected = [r.route_many(stream.fps[first], stream.clock[first]) for r in routing.prepare(scheme, W, S, stream, 3)]
    routing.save_initial(run, stream, str(tmp_path))
    assert len(list(tmp_path.iterdir())) == S
    routing._LIVE.clear()
    routing._INITIAL.clear()
    monkeypatch.setattr(routing, "prepare", lambda *a, **k: pytest.fail("prepared the routers again"))
    for j in range(S):
        router = routing.router_at(run, j, 0, stream, str(tmp_path))
        assert np.array_equal(router.route_many(stream.fps[first], stream.clock[first]), expected[j])


SHARED_STREAM_CHECK = """
import sys
from pathlib import Path
import numpy as np
from pyspark import SparkFiles
from skewbench.bench.spark import shared as sharing
from skewbench.bench.spark.source import stream_of
from skewbench.workloads import parse

shared = parse("zipf:z=1.1,keys=300", messages=500, seed=9)  # not what (spec, 500, seed 1) generates
sharing.write(shared, Path(sys.argv[1]) / "stream-x")
SparkFiles._root_directory, SparkFiles._is_running_on_worker = sys.argv[1], True  # as in an executor
assert np.array_equal(stream_of("zipf:z=1.1,keys=300", 500, 1, "stream-x").ids, shared.ids)
assert not np.array_equal(stream_of("zipf:z=1.1,keys=300", 500, 1).ids, shared.ids)
print("ok")
"""


@pytest.mark.spark
def test_the_source_reads_the_stream_the_driver_shared(spark_cluster, tmp_path):
    """With ``stream_file`` the source uses the driver's stream from SparkFiles, not a regenerated one
    (in the cluster's interpreter, which has PySpark and which the cluster fixture installs)."""
    import subprocess

    from skewbench.bench.spark.run import CLUSTER_PYTHON, ROOT

    done = subprocess.run([str(CLUSTER_PYTHON), "-c", SHARED_STREAM_CHECK, str(tmp_path)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
