"""The user-space link emulator: netem's options read as tc reads them, frames shaped as netem shapes
them (in order, after the rate's sending time and the delay, a seeded share dropped), and a real link
between a namespace and a bridge that delays and drops what leaves the node."""
import dataclasses
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "infra" / "local" / "linkem.py"
spec = importlib.util.spec_from_file_location("skewbench_linkem", SCRIPT)
linkem = importlib.util.module_from_spec(spec)
spec.loader.exec_module(linkem)


@pytest.mark.parametrize("options, link", [
    ("delay 1ms", linkem.Link(delay_s=1e-3)),
    ("delay 250us loss 0.5% rate 1gbit", linkem.Link(delay_s=250e-6, loss=0.005, rate_bps=1e9)),
    ("loss random 2% delay 0.1s", linkem.Link(delay_s=0.1, loss=0.02)),
    ("rate 10kbps delay 40", linkem.Link(delay_s=40e-6, rate_bps=80e3)),  # bps are bytes; a bare time is us
    ("", linkem.Link()),
])
def test_options_read_as_tc_reads_them(options, link):
    assert dataclasses.astuple(linkem.parse(options)) == pytest.approx(dataclasses.astuple(link))


@pytest.mark.parametrize("options, message", [
    ("duplicate 1%", "'duplicate' is not one of them"),
    ("delay 1ms 100us", "one value per option (no jitter or correlation"),
    ("delay", "'delay' needs a value"),
    ("loss 120%", "loss '120%' is not a valid value (for example loss 0.5%)"),
    ("loss 0.5", "loss '0.5' is not a valid value"),
    ("rate 1gbyte", "rate '1gbyte' is not a valid value (for example rate 1gbit)"),
    ("delay 1.2.3ms", "delay '1.2.3ms' is not a valid value"),
])
def test_what_the_emulator_does_not_do_is_named(options, message):
    with pytest.raises(ValueError, match="user-space|not a valid") as error:
        linkem.parse(options)
    assert message in str(error.value)


def emulator(link, seed="n"):
    node_r, node_w = os.pipe()
    bridge_r, bridge_w = os.pipe()
    for fd in (node_r, bridge_r):
        os.set_blocking(fd, False)
    return linkem.Emulator(node_w, bridge_w, link, seed), node_r, bridge_r


def test_frames_leave_in_order_after_the_rates_sending_time_and_the_delay():
    em, _, bridge = emulator(linkem.Link(delay_s=0.010, rate_bps=8_000))  # 1 byte per ms
    em.outgoing(b"a" * 5, now=100.0)
    em.outgoing(b"b" * 5, now=100.001)  # waits for the link: sent at 100.010
    assert em.release(100.0149) == pytest.approx(0.0001)
    assert em.release(100.015) == pytest.approx(0.005)  # the first is out, the second due at 100.020
    assert os.read(bridge, 100) == b"aaaaa"
    em.release(100.020)
    assert os.read(bridge, 100) == b"bbbbb" and em.release(100.021) is None
    assert em.counts == {"out_frames": 2, "out_bytes": 10, "dropped": 0, "in_frames": 0, "in_bytes": 0}


def test_loss_drops_a_seeded_share_and_incoming_frames_pass_unshaped():
    em, node, _ = emulator(linkem.Link(delay_s=1.0, loss=0.25), seed="worker1")
    for _ in range(4000):
        em.outgoing(b"x", now=0.0)
    assert 850 < em.counts["dropped"] < 1150  # 1000 expected; about 6 standard deviations either side
    again, _, _ = emulator(linkem.Link(delay_s=1.0, loss=0.25), seed="worker1")
    for _ in range(4000):
        again.outgoing(b"x", now=0.0)
    assert again.counts == em.counts  # the same seed drops the same frames
    em.incoming(b"reply")
    assert os.read(node, 100) == b"reply"


@pytest.fixture
def tapped_namespace():
    """A namespace whose eth0 is a tap, and a bridge with a tap: the two ends linkem joins."""
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        pytest.skip("taps and namespaces need root and /dev/net/tun")
    ns, bridge, tap = f"lkt{os.getpid()}", f"lkt{os.getpid()}br"[:15], f"lkt{os.getpid()}t"[:15]
    commands = [["netns", "add", ns], ["link", "add", bridge, "type", "bridge"],
                ["addr", "add", "10.79.250.1/24", "dev", bridge], ["link", "set", bridge, "up"],
                ["tuntap", "add", "dev", tap, "mode", "tap"], ["link", "set", tap, "master", bridge, "up"],
                ["-n", ns, "tuntap", "add", "dev", "eth0", "mode", "tap"],
                ["-n", ns, "addr", "add", "10.79.250.2/24", "dev", "eth0"], ["-n", ns, "link", "set", "eth0", "up"]]
    try:
        for command in commands:
            subprocess.run(["ip", *command], check=True, capture_output=True)
        yield ns, tap
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", tap], capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)


IN_NODE = """
import socket, sys, time
connects = []
for _ in range(3):
    started = time.perf_counter()
    socket.create_connection(("10.79.250.1", int(sys.argv[1])), timeout=10).close()
    connects.append(time.perf_counter() - started)
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(2000):
    udp.sendto(str(i).encode(), ("10.79.250.1", int(sys.argv[2])))
    time.sleep(0.0002)
print(min(connects))
"""


def test_a_real_link_delays_and_drops_what_leaves_the_node(tapped_namespace, tmp_path):
    ns, tap = tapped_namespace
    stats = tmp_path / "stats.json"
    link = subprocess.Popen([sys.executable, str(SCRIPT), "--netns", ns, "--bridge-tap", tap,
                             "--options", "delay 20ms loss 10%", "--stats", str(stats)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    received = set()
    try:
        with socket.socket() as listener, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            listener.bind(("10.79.250.1", 0))
            listener.listen(8)
            udp.bind(("10.79.250.1", 0))
            reader = threading.Thread(target=read_until_quiet, args=(udp, received))
            reader.start()
            node = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", IN_NODE,
                                   str(listener.getsockname()[1]), str(udp.getsockname()[1])],
                                  capture_output=True, text=True, timeout=120)
            reader.join()
        assert node.returncode == 0, node.stderr
        # A connect's SYN leaves the node and is delayed; the host's answer is not (it never leaves a node).
        assert float(node.stdout) >= 0.020
        assert 1600 < len(received) < 1900  # 1800 expected: 10 % of what left the node dropped (retries aside)
    finally:
        link.send_signal(signal.SIGTERM)
        out, _ = link.communicate(timeout=10)
    assert link.returncode == 0, out
    assert "delay_s=0.02, loss=0.1" in out
    counts = json.loads(stats.read_text())  # written once more as it stopped
    assert counts["dropped"] >= 2000 - len(received) and counts["out_frames"] > 2000 and counts["in_frames"] > 0


def read_until_quiet(udp, received):
    udp.settimeout(60)  # the node's first datagram follows its connects (a dropped SYN costs a second)
    try:
        while True:
            received.add(int(udp.recv(64)))
            udp.settimeout(2.0)  # its last arrives 20 ms after it was sent
    except socket.timeout:
        pass
