"""The stream the driver shares with the executors: the same stream back, mapped rather than copied."""
import os

import numpy as np

from skewbench.bench.apps.base import key_labels
from skewbench.bench.spark import shared
from skewbench.stream import Stream
from skewbench.workloads import parse


def test_the_stream_read_back_is_the_stream_written(tmp_path):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, 1000)
    stream = Stream("demo", ids, labels=np.array([f"w{i}" for i in range(60)]), times=np.sort(rng.random(1000)),
                    split_ids=rng.integers(0, 7, 1000), rate=3.0,
                    payload={"price": rng.random(1000), "doc": rng.integers(0, 9, 1000)})
    back = shared.read(*map(str, shared.write(stream, tmp_path / "s")))
    assert (back.name, back.rate, back.messages, back.n_keys) == ("demo", 3.0, 1000, 60)
    for name in ("ids", "fps", "key_fps", "clock", "split_ids"):
        assert np.array_equal(getattr(back, name), getattr(stream, name)), name
    assert back.labels.to_pylist() == key_labels(stream).tolist()
    assert all(np.array_equal(back.payload[c], stream.payload[c]) for c in ("price", "doc"))
    assert not back.ids.flags.writeable  # a view of the file


def anonymous_kib() -> int:
    rollup = dict(line.split(":", 1) for line in open("/proc/self/smaps_rollup").read().splitlines()[1:])
    return int(rollup["Anonymous"].split()[0])


def test_reading_maps_the_file_instead_of_copying_it(tmp_path):
    """Every process of an executor shares the pages (a pickled stream cost each 0.6 GB at 15M messages)."""
    paths = [str(p) for p in shared.write(parse("zipf:z=1.1,keys=1000", messages=2_000_000, seed=1), tmp_path / "s")]
    before = anonymous_kib()
    stream = shared.read(*paths)
    total = int(stream.ids.sum()) + int(stream.fps[::7].sum() % 3) + float(stream.clock.sum())
    assert total > 0 and stream.key_fps.size == 1000
    assert anonymous_kib() - before < 8 * 1024  # the columns alone are 47 MB


def test_a_killed_drivers_stream_folder_is_removed_by_the_next_driver(tmp_path):
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()  # a PID no process has now
    left = [tmp_path / f"{shared.PREFIX}{gone.pid}-abc", tmp_path / f"{shared.PREFIX}{os.getpid()}-def",
            tmp_path / f"{shared.PREFIX}xyz"]  # a dead driver's, a live one's, and one of an older name
    for folder in left:
        folder.mkdir()
        (folder / "stream-1.messages.arrow").write_bytes(b"x")
    shared.remove_left(tmp_path)
    assert [f.exists() for f in left] == [False, True, True]
