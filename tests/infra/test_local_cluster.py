"""End to end on this machine, through the real make targets and Ansible plays.

Network namespaces (when this machine can make them): make cluster-up ENCRYPT=1 BROKER=1 SSH=1 NETEM=… — the
cloud path but the VMs' creation: every node gets an sshd and a login user with sudo, and the plays provision
the nodes over SSH with become, from the inventory Terraform's template renders (without Terraform, the local
connection) → a PySpark job from the load generator runs tasks on every worker node, over encrypted RPC →
a stream over links that delay and drop what leaves every node still ends exact → a second cluster-up (which
keeps broker and encryption unasked) and an Ansible re-run change nothing →
the broker lets only its user in, on its node's address, and keeps what it acknowledged through a kill →
a killed worker and a killed link emulator are restored → logs and metrics are collected → cluster-down
leaves no process, namespace or link behind. Loopback fallback (always): up → the job runs on both workers, RPC
plain (the local default) → down leaves no process behind.

Each test uses its own folder, subnet and name prefix so it never touches a developer's cluster, and
tears everything down even when a step fails. The first cluster-up builds .venv-cluster (PySpark and
the project, a few minutes); later ones reuse it.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def free_slot(*octets):
    """The first subnet 10.77.N / prefix stN of these that nobody holds: a killed earlier run leaves its
    namespaces behind, and a concurrent run owns its own; either would make cluster-up refuse ours.
    (A prefix has at most 4 characters, so that stN fits for every N up to 99.)"""
    try:
        held = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
        held += subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout.split()
    except FileNotFoundError:  # no iproute2: the loopback fallback, nothing to collide with
        held = []
    for n in octets:
        net, prefix = f"10.77.{n}", f"st{n}"
        if not any(h.startswith((f"{prefix}-", f"{net}.")) for h in held):
            return net, prefix
    return f"10.77.{octets[0]}", f"st{octets[0]}"  # all taken: cluster-up says which names to remove


NET, PREFIX = free_slot(7, 17, 27, 37)
WORKERS = 2
NETEM = "delay 1ms loss 0.5%"
ANSIBLE_ENV = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible" / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}


def test_every_slot_a_test_may_take_is_a_prefix_cluster_up_accepts(monkeypatch):
    """When earlier slots are held (a killed run's namespaces), the fallbacks must still be valid names."""
    held = "st8-master st18-master st7-master st17-master st27-master"
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, held, ""))
    for octets, expected in [((8, 18, 28, 38), ("10.77.28", "st28")), ((7, 17, 27, 37), ("10.77.37", "st37"))]:
        net, prefix = free_slot(*octets)
        assert (net, prefix) == expected and cluster_module().PREFIX_RULE.fullmatch(prefix)


def make(target, directory, timeout=600, **variables):
    args = [f"CLUSTER_DIR={directory}", f"CLUSTER_NET={NET}", f"CLUSTER_PREFIX={PREFIX}", f"WORKERS={WORKERS}"]
    args += [f"{k}={v}" for k, v in variables.items()]
    return subprocess.run(["make", "--no-print-directory", "-f", "infra/cluster.mk", target, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def cluster_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("skewbench_local_cluster", ROOT / "infra/local/cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def leftovers(directory):
    """Processes running from the cluster's folder, and namespaces or links with the test's prefix."""
    import psutil  # from .venv-infra (conftest.py)

    procs = []
    for p in psutil.process_iter():
        try:
            if p.cwd().startswith(str(directory)) or str(directory) in " ".join(p.cmdline()):
                procs.append(p.pid)
        except psutil.Error:
            pass
    names = []
    if os.geteuid() == 0 and shutil.which("ip"):
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        names += [line.split(":")[1].strip().split("@")[0] for line in links.splitlines()]
        names += subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    return procs, [n for n in names if n.startswith(PREFIX)]


def master(state):
    with urllib.request.urlopen(f"http://{state['nodes']['master']['ip']}:8080/json/", timeout=5) as r:
        return json.load(r)


def ansible_changed(text):
    return sum(int(n) for n in re.findall(r"changed=(\d+)", text[text.rfind("PLAY RECAP"):]))


def cluster_up(directory, mode, **variables):
    if shutil.which("java") is None and os.geteuid() != 0:
        pytest.skip("Java is missing and only root may install it (apt-get install openjdk-17-jre-headless)")
    started = time.monotonic()
    up = make("cluster-up", directory, timeout=1500, CLUSTER_MODE=mode, **variables)
    print(f"cluster-up ({mode}) {time.monotonic() - started:.1f} s")
    assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
    assert f"workers: {WORKERS} of {WORKERS} alive" in up.stdout, up.stdout
    state = json.loads((directory / "state.json").read_text())
    assert state["mode"] == mode
    return up, state, {n: v["ip"] for n, v in state["nodes"].items() if n.startswith("worker")}


def smoke_job(directory):
    job = subprocess.run([str(ROOT / ".venv-cluster/bin/python"), str(ROOT / "infra/smoke_job.py"), "--tasks", "16"],
                         env={**os.environ, "SPARK_CONF_DIR": str(directory / "loadgen/conf")},
                         capture_output=True, text=True, timeout=300)
    assert job.returncode == 0, job.stderr[-3000:]
    return json.loads(job.stdout.strip().splitlines()[-1])


def cluster_down(directory):
    started = time.monotonic()
    down = make("cluster-down", directory)
    print(f"cluster-down {time.monotonic() - started:.1f} s")
    assert down.returncode == 0, down.stdout + down.stderr
    assert leftovers(directory) == ([], []), leftovers(directory)
    assert not (directory / "state.json").exists()


@pytest.fixture
def cluster_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cluster")
    try:
        yield directory
    finally:
        make("cluster-down", directory)


def test_namespace_cluster_lifecycle(cluster_dir, tmp_path):
    why = cluster_module().netns_unavailable(PREFIX)
    if why:
        pytest.skip(f"network namespaces are not available here ({why}); the loopback test covers the fallback")
    cluster = cluster_dir
    ssh = shutil.which("terraform") is not None  # it renders the SSH inventory; CI installs it
    if not ssh:
        print("terraform is not installed: the nodes are provisioned with the local connection, not over SSH")
    up, state, workers = cluster_up(cluster, "netns", ENCRYPT=1, BROKER=1, NETEM=NETEM, **({"SSH": 1} if ssh else {}))
    assert len(set(workers.values())) == WORKERS
    login = check_ssh(cluster, state) if ssh else None

    again = make("cluster-up", cluster, CLUSTER_MODE="netns", BROKER=1)
    assert again.returncode == 0 and "already up" in again.stdout, again.stdout + again.stderr
    rerun = subprocess.run([str(ROOT / ".venv-infra/bin/ansible-playbook"), "-i", str(cluster / "inventory.yml"),
                            str(ROOT / "ansible/site.yml")], env=ANSIBLE_ENV, capture_output=True, text=True,
                           timeout=600)
    assert rerun.returncode == 0 and "PLAY RECAP" in rerun.stdout, rerun.stdout[-3000:]
    assert ansible_changed(rerun.stdout) == 0, rerun.stdout[rerun.stdout.rfind("PLAY RECAP"):]
    # (Deployed from other files, cluster-up applies them again: tests/infra/test_cluster_cli.py.)

    key = check_broker(cluster, state)

    # A job from the load generator (the host, on the bridge) runs tasks on executors of every worker node,
    # and the tasks' own route to the master starts at their node's address: they ran in its namespace.
    result = smoke_job(cluster)
    assert set(result["executor_tasks"]) == set(workers.values()), result
    assert all(n > 0 for n in result["executor_tasks"].values()), result
    assert set(result["task_nodes"]) == set(workers.values()), result
    assert result["rpc_encrypted"], result  # and its driver and executors spoke AES (ENCRYPT=1)

    check_netem_stream(cluster, state, tmp_path)

    status = make("cluster-status", cluster)
    assert status.returncode == 0, status.stdout + status.stderr
    for name, address in workers.items():
        assert re.search(rf"{name}\s+{re.escape(address)}\s+ALIVE\s+cores 2\s+memory 1024 MiB", status.stdout), \
            status.stdout
    assert f"UI http://{state['nodes']['master']['ip']}:8080" in status.stdout

    # Every worker node's agent sampled its worker and executor JVMs and Python workers.
    for name in workers:
        roles = {line.split(",")[3] for line in (cluster / name / "metrics/resources.csv").read_text().splitlines()}
        assert {"worker", "executor", "python_worker"} <= roles, (name, roles)

    # Kill a worker daemon and the broker: the master marks the worker dead, status says both, cluster-up
    # restores both, and the broker kept what it acknowledged (its append-only file).
    pid = int((cluster / "worker2/run/spark-worker.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    os.kill(int((cluster / "broker/run/broker.pid").read_text()), signal.SIGKILL)
    linkem = cluster / "links/run/worker1.pid"
    if linkem.exists():  # (the user-space link emulator's, where the kernel has no netem)
        os.kill(int(linkem.read_text()), signal.SIGKILL)
    deadline = time.monotonic() + 200  # a lost connection marks it at once; a missed heartbeat within 2 x 60 s
    while not any(w["host"] == workers["worker2"] and w["state"] == "DEAD" for w in master(state)["workers"]):
        assert time.monotonic() < deadline, "the master did not mark the killed worker dead"
        time.sleep(1)
    status = make("cluster-status", cluster)
    assert status.returncode != 0 and "Error 3" in status.stderr, status.stdout + status.stderr  # make says 3
    assert re.search(rf"worker2\s+{re.escape(workers['worker2'])}\s+DEAD", status.stdout), status.stdout
    assert "NOT ANSWERING" in status.stdout, status.stdout
    assert not linkem.exists() or "links:   3 of 4 forwarding" in status.stdout, status.stdout
    restored = make("cluster-up", cluster, CLUSTER_MODE="netns", BROKER=1)
    assert restored.returncode == 0, restored.stdout[-3000:] + restored.stderr[-3000:]
    status = make("cluster-status", cluster)
    assert status.returncode == 0 and f"workers: {WORKERS} of {WORKERS} alive" in status.stdout, status.stdout
    assert "ANSWERS" in status.stdout and broker_client(cluster).xlen(key) == 5000, status.stdout
    assert not linkem.exists() or "links:   4 of 4 forwarding" in status.stdout, status.stdout

    # Logs and metrics of every node land in one results folder.
    results = cluster / "results"
    collect = subprocess.run([str(ROOT / ".venv-infra/bin/ansible-playbook"), "-i", str(cluster / "inventory.yml"),
                              str(ROOT / "ansible/collect.yml"), "-e", f"results_dir={results}"],
                             env=ANSIBLE_ENV, capture_output=True, text=True, timeout=300)
    assert collect.returncode == 0, collect.stdout[-3000:]
    for node in ["master", "loadgen", "broker", *workers]:
        assert (results / node / "metrics/resources.csv").exists(), node
    assert (results / "master/logs/spark-master.out").exists()
    assert list(results.glob("worker1/work/app-*/*/stderr")), "executor logs were not collected"

    cluster_down(cluster)
    if login:  # down removed the login user and its sudo rule
        assert subprocess.run(["id", login], capture_output=True).returncode != 0
        assert not Path("/etc/sudoers.d", login).exists()


def check_netem_stream(cluster, state, tmp_path):
    """Every node's link delays and drops what leaves it (the kernel's netem, else linkem): a stream run
    still counts every message once, and its result says how its network was shaped."""
    out = tmp_path / "netem-run"
    run = subprocess.run([str(ROOT / ".venv/bin/skewbench"), "run", "--app", "wordcount", "--scheme", "pkg",
                          "--workers", "2", "--sources", "2", "--messages", "8000", "--batch-rows", "2000",
                          "--out", str(out)], env={**os.environ, "SPARK_CONF_DIR": str(cluster / "loadgen/conf")},
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["correct"] and summary["messages_counted"] == 8000 and summary["duplicates"] == 0, summary
    meta = json.loads((out / "run.meta.json").read_text())["config"]
    assert meta["network"] == {"netem": NETEM, "by": state["netem_by"]}, meta["network"]
    if state["netem_by"] == "linkem":
        counts = {n: json.loads((cluster / f"links/{n}.json").read_text()) for n in ("master", "worker1", "worker2")}
        assert sum(c["dropped"] for c in counts.values()) > 0 and all(c["out_frames"] > 500 for c in counts.values()), \
            counts
    else:
        qdisc = subprocess.run(["ip", "netns", "exec", state["nodes"]["worker1"]["netns"], "tc", "qdisc", "show",
                                "dev", "eth0"], capture_output=True, text=True).stdout
        assert "netem" in qdisc and "delay 1ms" in qdisc, qdisc
    print(f"netem ({state['netem_by']}: {NETEM}): 8,000 messages in, {summary['messages_counted']:,} counted, "
          f"{summary['duplicates']} duplicates, {summary['throughput_msgs_per_s']:,.0f} msgs/s")


def check_ssh(cluster, state):
    """The nodes were provisioned over SSH, as VMs are: the inventory is infra/aws/inventory.tftpl's rendering
    (the login user, become), every node's own sshd (on its address only) let that user in with the cluster's
    key, and the user gets root by sudo; returns the login user."""
    inventory = yaml.safe_load((cluster / "inventory.yml").read_text())["all"]
    login = inventory["vars"]["ansible_user"]
    assert login == f"{PREFIX}-ssh" and inventory["vars"]["node_become"] is True
    assert inventory["children"]["workers"]["hosts"]["worker1"]["ansible_host"] == state["nodes"]["worker1"]["ip"]
    assert (cluster / "inventory.yml").read_text().startswith("# Rendered by Terraform from infra/aws/inventory.tftpl")
    for name, node in state["nodes"].items():
        log = (cluster / name / "logs" / "sshd.out").read_text()
        assert f"Accepted publickey for {login} from {state['nodes']['loadgen']['ip']}" in log, (name, log[-2000:])
        if node["netns"]:
            listening = subprocess.run(["ip", "netns", "exec", node["netns"], "ss", "-Hltn"], capture_output=True,
                                       text=True).stdout.split()
            assert f"{node['ip']}:2222" in listening and "0.0.0.0:2222" not in listening, (name, listening)
    ssh = ["ssh", "-i", str(cluster / "ssh/login_key"), "-p", "2222", "-o", "BatchMode=yes",
           "-o", f"UserKnownHostsFile={cluster / 'ssh/known_hosts'}", "-o", "StrictHostKeyChecking=yes",
           f"{login}@{state['nodes']['worker1']['ip']}"]
    done = subprocess.run([*ssh, "id -un; sudo -n id -un; hostname -I"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.split() == [login, "root", state["nodes"]["worker1"]["ip"]], \
        done.stdout + done.stderr
    return login


def check_broker(cluster, state):
    """The broker: only its user gets in, only to the skewbench keys, only on its node's address; returns the
    key of a stream of 5,000 entries it acknowledged."""
    import redis

    from skewbench.bench.broker import KEY_PREFIX, Broker

    broker = Broker.of(cluster / "loadgen/conf")
    address = state["nodes"]["broker"]["ip"]
    assert (broker.host, broker.port) == (address, 6379)
    assert (cluster / "broker.secret").stat().st_mode & 0o077 == 0
    assert (cluster / "loadgen/conf/broker.json").stat().st_mode & 0o077 == 0
    client = broker.client()
    key = f"{KEY_PREFIX}test:0"
    for first in range(0, 5000, 1000):  # in transactions, as producers send (the AOF replays them after a kill)
        pipe = client.pipeline(transaction=True)
        for seq in range(first, first + 1000):
            pipe.xadd(key, {"seq": seq})
        pipe.execute()
    assert client.xlen(key) == 5000
    for refused in ({"username": broker.user, "password": "wrong"}, {"username": "default", "password": ""}, {}):
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host=address, port=6379, **refused).ping()
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.set("elsewhere", 1)
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.flushall()
    listening = subprocess.run(["ip", "netns", "exec", state["nodes"]["broker"]["netns"], "ss", "-Hltn"],
                               capture_output=True, text=True).stdout.split()
    assert f"{address}:6379" in listening and "0.0.0.0:6379" not in listening and "127.0.0.1:6379" not in listening
    assert "broker:  redis://" in make("cluster-status", cluster).stdout

    assert (cluster / "broker.secret").read_text().strip() not in (cluster / "ansible.log").read_text()
    return key


def broker_client(cluster):
    from skewbench.bench.broker import Broker

    return Broker.of(cluster / "loadgen/conf").client()


def test_loopback_fallback_lifecycle(cluster_dir):
    """What a machine without namespaces gets: every node on its own 127.0.0.x address."""
    cluster = cluster_dir
    _, state, workers = cluster_up(cluster, "loopback")
    assert all(address.startswith("127.0.0.") for address in workers.values())
    result = smoke_job(cluster)
    assert set(result["executor_tasks"]) == set(workers.values()), result
    assert all(n > 0 for n in result["executor_tasks"].values()), result
    assert set(result["task_local_ips"]) == set(workers.values()), result
    assert not result["rpc_encrypted"], result  # the local default
    again = make("cluster-up", cluster, CLUSTER_MODE="loopback")
    assert again.returncode == 0 and "already up" in again.stdout, again.stdout + again.stderr
    cluster_down(cluster)
