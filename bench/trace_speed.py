"""How fast a real-sized trace loads and simulates, beside the Java SLBSimulator on the same file.

``python -m skewbench.bench.trace_speed [--lines 10000000] [--seed 0] [--keep FILE]`` writes a
seeded trace of ``ts<TAB>key`` lines (Zipf 1.0 over 1M keys, increasing times in seconds with
microseconds), then measures

1. the ``file:`` workload loading it in this process (wall and CPU seconds; hashing its distinct
   keys, which the first routing does, is timed apart), and
2. the whole ``skewbench simulate --workload file:path=TRACE,key=1,time=0 --schemes pkg --workers
   100 --sources 5`` process, start to exit,

and prints (2) beside the 22 s issue 13 reports for the Java SLBSimulator reading and routing the
same file.  The trace lives in a temporary folder unless ``--keep FILE`` names where to keep it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

JAVA_SLBSIMULATOR_S = 22.0  # issue 13: "the Java SLBSimulator read and routed the same file in 22 s"
KEYS = 1_000_000
ZIPF = 1.0
_CHUNK = 2_000_000  # lines generated and written at a time


def write_trace(path: Path, lines: int, seed: int = 0, keys: int = KEYS, z: float = ZIPF) -> None:
    """``lines`` lines ``SECONDS.MICROS<TAB>kID``: key ranks Zipf(z) over ``keys``, ids a seeded shuffle of ranks."""
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / np.arange(1, keys + 1) ** z)
    cdf /= cdf[-1]
    key_of_rank = rng.permutation(keys)
    clock_us = 0
    with open(path, "wb") as out:
        for start in range(0, lines, _CHUNK):
            n = min(_CHUNK, lines - start)
            ranks = np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), keys - 1)
            micros = clock_us + np.cumsum(rng.integers(0, 720, n))  # ~2,800 messages per second
            clock_us = int(micros[-1])
            seconds = pc.cast(pa.array(micros // 1_000_000), pa.string())
            fraction = pc.utf8_lpad(pc.cast(pa.array(micros % 1_000_000), pa.string()), 6, "0")
            key = pc.binary_join_element_wise("k", pc.cast(pa.array(key_of_rank[ranks]), pa.string()), "")
            stamp = pc.binary_join_element_wise(seconds, fraction, ".")
            text = pc.binary_join_element_wise(pc.binary_join_element_wise(stamp, key, "\t"), "", "\n")
            offsets = np.frombuffer(text.buffers()[1], dtype=np.int32, count=n + 1, offset=text.offset * 4)
            out.write(memoryview(text.buffers()[2])[offsets[0]:offsets[-1]])


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _skewbench_command() -> list[str]:
    script = Path(sys.executable).with_name("skewbench")
    return [str(script)] if script.exists() else [sys.executable, "-m", "skewbench.cli"]


def measure(lines: int = 10_000_000, seed: int = 0, keep: str | Path | None = None) -> dict:
    """Write the trace, time loading it and one whole ``skewbench simulate`` process; one dict of figures."""
    from skewbench.workloads import parse

    folder = Path(tempfile.mkdtemp(prefix="trace-speed-"))
    try:
        trace = Path(keep).expanduser() if keep else folder / "trace.txt"
        started = time.perf_counter()
        write_trace(trace, lines, seed)
        written = time.perf_counter() - started
        spec = f"file:path={trace},key=1,time=0"

        started, cpu = time.perf_counter(), _cpu_seconds()
        stream = parse(spec)
        load, load_cpu = time.perf_counter() - started, _cpu_seconds() - cpu
        started = time.perf_counter()
        stream.key_fps  # noqa: B018 - hash every distinct key once, as the first routing would
        hashing = time.perf_counter() - started
        figures = {"lines": stream.messages, "distinct_keys": stream.distinct_keys, "p1": stream.p1,
                   "bytes": trace.stat().st_size, "write_s": written, "load_s": load, "load_cpu_s": load_cpu,
                   "hash_keys_s": hashing}
        del stream

        command = [*_skewbench_command(), "simulate", "--workload", spec, "--schemes", "pkg", "--workers", "100",
                   "--sources", "5", "--out", str(folder / "simulate.csv")]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        simulate = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        figures.update(simulate_s=simulate, simulate_command=command, java_s=JAVA_SLBSIMULATOR_S,
                       simulate_over_java=simulate / JAVA_SLBSIMULATOR_S, cpus=os.cpu_count(),
                       simulate_output=done.stdout.strip())
        return figures
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def report(f: dict) -> str:
    """The figures of :func:`measure` as a small table."""
    width, ratio = 58, f["simulate_over_java"]
    rows = [
        ("trace", f"{f['lines']:,} lines, {f['distinct_keys']:,} distinct keys, p1 {100 * f['p1']:.2f} %, "
                  f"{f['bytes'] / 1e6:,.0f} MB (written in {f['write_s']:.1f} s)"),
        ("load: file: workload (parse, in process)", f"{f['load_s']:6.2f} s   (CPU {f['load_cpu_s']:.2f} s)"),
        ("  + hashing each distinct key once", f"{f['hash_keys_s']:6.2f} s"),
        ("skewbench simulate pkg W=100 S=5, whole process", f"{f['simulate_s']:6.2f} s"),
        ("Java SLBSimulator, same file (issue 13)", f"{f['java_s']:6.2f} s" + (
            "" if f["lines"] == 10_000_000 else "   (measured on 10,000,000 lines, not this length)")),
        ("ratio skewbench / Java", f"{ratio:6.2f}   ({max(ratio, 1 / ratio):.1f}x {'faster' if ratio < 1 else 'slower'})"),
    ]
    lines = [f"{name:<{width}} {value}" for name, value in rows]
    lines.append(f"(on {f['cpus']} CPUs; simulate: {' '.join(f['simulate_command'])})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m skewbench.bench.trace_speed", description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000_000, help="trace length (default 10,000,000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the trace (default 0)")
    parser.add_argument("--keep", metavar="FILE", help="write the trace here and keep it (default: a temporary file)")
    args = parser.parse_args(argv)
    if args.lines < 1:
        parser.error("--lines must be >= 1")
    print(report(measure(args.lines, args.seed, args.keep)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
