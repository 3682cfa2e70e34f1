"""A node's link through user space: delay, loss and rate on its way out, where the kernel has no netem.

``tc qdisc ... netem`` needs the kernel module ``sch_netem``, which some kernels (this project's CI
machines among them) do not have. Then every node's link is two TAP devices instead of a veth pair —
``eth0`` inside the node's namespace and one on the bridge — and this process moves every Ethernet frame
between them. Frames leaving the node get what ``tc netem`` on its ``eth0`` would give them: with
``rate`` each waits until the link is free and takes its size over the rate to send, then ``delay``
more; ``loss`` drops a share of them at random. Frames arriving pass straight through, as ``tc netem``
on the sending node already shaped them. Frames keep their order, as netem without jitter keeps it.

    linkem.py --netns NS --bridge-tap NAME --options "delay 1ms loss 0.5% rate 1gbit" --stats FILE

It writes its counters (frames and bytes each way, frames dropped) to ``--stats`` every second and
when it stops.
"""
import argparse
import collections
import ctypes
import fcntl
import json
import os
import random
import re
import selectors
import signal
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

TUNSETIFF, IFF_TAP, IFF_NO_PI = 0x400454CA, 0x0002, 0x1000
CLONE_NEWNET = 0x40000000
FRAME = 65536  # a read never returns more than one frame; this bounds any MTU
TIME_UNITS = {"s": 1.0, "sec": 1.0, "secs": 1.0, "ms": 1e-3, "msec": 1e-3, "msecs": 1e-3,
              "us": 1e-6, "usec": 1e-6, "usecs": 1e-6, "": 1e-6}  # a bare number is microseconds, as in tc
RATE_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
              "bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12}  # tc's: bps are bytes per second
SUPPORTED = "delay TIME, loss PERCENT and rate RATE (man tc-netem)"


@dataclass(frozen=True)
class Link:
    delay_s: float = 0.0
    loss: float = 0.0  # the share of frames dropped, 0..1
    rate_bps: float = 0.0  # bits per second; 0 means unlimited


def parse(options: str) -> Link:
    """netem's options as a Link; ValueError naming what this emulator does not do."""
    words, fields = options.lower().split(), {}
    while words:
        word = words.pop(0)
        if word not in ("delay", "loss", "rate") or not words:
            raise ValueError(f"the user-space link emulator does {SUPPORTED}; {word!r} "
                             + ("needs a value" if word in ("delay", "loss", "rate") else "is not one of them"))
        value = words.pop(0)
        if word == "loss" and value == "random" and words:
            value = words.pop(0)
        fields[word] = _value(word, value)
        if words and re.fullmatch(r"[\d.]+\w*%?", words[0]):
            raise ValueError(f"{word} {value} {words[0]}: the user-space link emulator takes one value per option "
                             f"(no jitter or correlation: {SUPPORTED})")
    return Link(delay_s=fields.get("delay", 0.0), loss=fields.get("loss", 0.0), rate_bps=fields.get("rate", 0.0))


def _value(option, text):
    match = re.fullmatch(r"([\d.]+)([a-z%]*)", text)
    try:
        value, unit = float(match[1]), match[2]
        if option == "delay":
            return value * TIME_UNITS[unit]
        if option == "loss" and unit == "%" and value <= 100:
            return value / 100
        if option == "rate" and value > 0:
            return value * RATE_UNITS[unit]
    except (TypeError, ValueError, KeyError):  # no match, not a number, an unknown unit
        pass
    example = {"delay": "1ms", "loss": "0.5%", "rate": "1gbit"}[option]
    raise ValueError(f"{option} {text!r} is not a valid value (for example {option} {example})")


def open_tap(name: str) -> int:
    """Attach to the existing TAP device ``name`` of the calling thread's namespace (``ip tuntap add``)."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH22x", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


def enter_namespace(netns: str) -> None:
    """Move this thread into a named network namespace (what ``ip netns exec`` does), for ``open_tap``."""
    libc = ctypes.CDLL(None, use_errno=True)
    with open(f"/run/netns/{netns}") as handle:
        if libc.setns(handle.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {netns}")


class Emulator:
    """Moves frames between a node's tap and the bridge's, shaping those that leave the node."""

    def __init__(self, node_fd: int, bridge_fd: int, link: Link, seed: str):
        self.node_fd, self.bridge_fd, self.link = node_fd, bridge_fd, link
        self._random = random.Random(seed)
        self._queue = collections.deque()  # (due, frame), due ascending: frames leave in order
        self._free_at = 0.0  # when the emulated link has finished sending what it holds
        self.counts = {"out_frames": 0, "out_bytes": 0, "dropped": 0, "in_frames": 0, "in_bytes": 0}

    def outgoing(self, frame: bytes, now: float) -> None:
        self.counts["out_frames"] += 1
        self.counts["out_bytes"] += len(frame)
        if self.link.loss and self._random.random() < self.link.loss:
            self.counts["dropped"] += 1
            return
        sent = now
        if self.link.rate_bps:
            sent = self._free_at = max(now, self._free_at) + len(frame) * 8 / self.link.rate_bps
        self._queue.append((sent + self.link.delay_s, frame))

    def incoming(self, frame: bytes) -> None:
        self.counts["in_frames"] += 1
        self.counts["in_bytes"] += len(frame)
        _write(self.node_fd, frame)

    def release(self, now: float) -> float | None:
        """Send every frame that is due; seconds until the next one, None when none waits."""
        while self._queue and self._queue[0][0] <= now:
            _write(self.bridge_fd, self._queue.popleft()[1])
        return self._queue[0][0] - now if self._queue else None

    def run(self, stats: Path, stop) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self.node_fd, selectors.EVENT_READ, self.outgoing)
        selector.register(self.bridge_fd, selectors.EVENT_READ, lambda frame, now: self.incoming(frame))
        wait, reported = None, 0.0
        while not stop():
            for key, _ in selector.select(1.0 if wait is None else min(wait, 1.0)):
                for frame in _drain(key.fd):
                    key.data(frame, time.monotonic())
            now = time.monotonic()
            wait = self.release(now)
            if now - reported >= 1.0:
                write_stats(stats, self.counts)
                reported = now
        write_stats(stats, self.counts)


def _drain(fd):
    while True:
        try:
            yield os.read(fd, FRAME)
        except BlockingIOError:
            return


def _write(fd, frame):
    try:
        os.write(fd, frame)
    except OSError:  # the far side is down (no carrier) or its queue full: the frame is lost, as on a wire
        pass


def write_stats(path: Path, counts: dict) -> None:
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps(counts))
    scratch.replace(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--netns", required=True, help="the node's namespace, whose eth0 is a tap")
    parser.add_argument("--bridge-tap", required=True, help="the tap on the bridge, in this namespace")
    parser.add_argument("--options", required=True, help='netem options, e.g. "delay 1ms loss 0.5%%"')
    parser.add_argument("--stats", required=True, type=Path, help="file for the counters (JSON)")
    args = parser.parse_args(argv)
    try:
        link = parse(args.options)
    except ValueError as e:
        parser.error(str(e))
    bridge_fd = open_tap(args.bridge_tap)
    enter_namespace(args.netns)  # the fds opened stay tied to their own devices wherever this thread is
    node_fd = open_tap("eth0")
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    print(f"linkem: {args.netns} eth0 <-> {args.bridge_tap}: {link}", flush=True)
    Emulator(node_fd, bridge_fd, link, seed=args.netns).run(args.stats, lambda: bool(stopping))
    return 0


if __name__ == "__main__":
    sys.exit(main())
