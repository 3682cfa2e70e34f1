"""The local cluster script's clear errors, without starting Spark: not root (or no namespaces),
Java or Redis missing, a port taken, netem the kernel cannot apply, a bad name prefix, a cluster of another shape, a
health check that times out, and status/down of a cluster that is not there."""
import importlib.util
import json
import socket
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "infra" / "local" / "cluster.py"
PYTHON = ROOT / ".venv-infra" / "bin" / "python"


@pytest.fixture
def cluster(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("skewbench_local_cluster_cli", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # A lock of its own: the real one may be held by the cluster tests' cluster-up (tests/spark), running beside.
    module.INSTALL_LOCK = tmp_path_factory.mktemp("install") / "cluster-install.lock"
    return module


def run(*args):
    return subprocess.run([str(PYTHON), str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_without_root_netns_is_refused_and_auto_falls_back_to_loopback(cluster, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cluster.os, "geteuid", lambda: 1000)
    assert cluster.main(["--dir", str(tmp_path), "up", "--mode", "netns"]) == 2
    err = capsys.readouterr().err
    assert "network namespaces are not available (not root)" in err and "--mode loopback" in err
    assert cluster.choose_mode("auto", "sb") == "loopback"
    assert "falling back to loopback addresses 127.0.0.x" in capsys.readouterr().out
    assert not (tmp_path / "state.json").exists()


def test_java_missing_is_a_clear_error_for_a_normal_user(cluster, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cluster.os, "geteuid", lambda: 1000)
    real_which = cluster.shutil.which
    monkeypatch.setattr(cluster.shutil, "which", lambda name: None if name == "java" else real_which(name))
    assert cluster.main(["--dir", str(tmp_path), "up"]) == 2
    assert "Java is missing: install openjdk-17-jre-headless" in capsys.readouterr().err


def test_redis_missing_for_a_broker_is_a_clear_error_for_a_normal_user(cluster, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cluster.os, "geteuid", lambda: 1000)
    real_which = cluster.shutil.which
    monkeypatch.setattr(cluster.shutil, "which", lambda name: None if name == "redis-server" else real_which(name))
    if real_which("java") is None:
        pytest.skip("Java is missing here: its own error comes first")
    assert cluster.main(["--dir", str(tmp_path), "up", "--broker"]) == 2
    assert "Redis is missing for the broker: install redis-server" in capsys.readouterr().err
    assert not (tmp_path / "state.json").exists()


def test_a_taken_port_is_a_clear_error_before_anything_starts(tmp_path):
    with socket.socket() as taken:
        try:
            taken.bind(("127.0.0.11", 7078))  # worker1's RPC port in loopback mode
        except OSError:
            pytest.skip("127.0.0.11:7078 is already in use here (a loopback cluster is running)")
        taken.listen()
        out = run("--dir", str(tmp_path / "c"), "up", "--mode", "loopback")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "port 127.0.0.11:7078 for the worker1 is taken by another process" in out.stderr
    assert not (tmp_path / "c" / "state.json").exists() and not (tmp_path / "c" / "inventory.yml").exists()


def test_netem_the_kernel_cannot_apply_goes_through_linkem_or_is_a_clear_error(cluster, monkeypatch, tmp_path,
                                                                               capsys):
    monkeypatch.setattr(cluster, "netns_unavailable", lambda prefix: None)
    monkeypatch.setattr(cluster, "netem_unavailable", lambda options: "Error: Specified qdisc kind is unknown.")
    assert cluster.netem_by("delay 1ms loss 0.5%") == "linkem"  # what the user-space emulator does
    assert "user-space link emulator instead (infra/local/linkem.py: delay 1ms loss 0.5%)" in capsys.readouterr().out
    assert cluster.main(["--dir", str(tmp_path), "up", "--mode", "netns", "--netem", "delay 1ms 200us"]) == 2
    err = capsys.readouterr().err
    assert "tc netem 'delay 1ms 200us' cannot be applied: Error: Specified qdisc kind is unknown, and" in err
    assert "takes one value per option (no jitter" in err and "modprobe sch_netem" in err
    assert not (tmp_path / "state.json").exists()
    monkeypatch.setattr(cluster, "netem_unavailable", lambda options: None)
    assert cluster.netem_by("delay 1ms 200us") == "tc"  # the kernel's, whenever it can
    assert cluster.main(["--dir", str(tmp_path), "up", "--mode", "loopback", "--netem", "delay 1ms"]) == 2
    assert "--netem needs network namespaces" in capsys.readouterr().err


def test_netem_probe_answers_on_this_machine(cluster):
    """The real probe: None where tc netem works, else the kernel's/tc's reason (never an exception)."""
    if cluster.netns_unavailable("sbq"):
        pytest.skip("the netem probe needs network namespaces")
    why = cluster.netem_unavailable("delay 1ms")
    assert why is None or isinstance(why, str) and why
    assert "sbnetem" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_ssh_without_namespaces_is_a_clear_error(cluster, tmp_path, capsys):
    """Each node's sshd needs an address of its own: on loopback addresses there is no node to log in to."""
    assert cluster.main(["--dir", str(tmp_path), "up", "--mode", "loopback", "--ssh"]) == 2
    assert "--ssh needs network namespaces" in capsys.readouterr().err
    assert not (tmp_path / "state.json").exists()


def test_ssh_without_terraform_is_a_clear_error(cluster, monkeypatch, tmp_path, capsys):
    """The SSH inventory is the cloud's template rendered by Terraform itself."""
    monkeypatch.setattr(cluster, "netns_unavailable", lambda prefix: None)
    real_which = cluster.shutil.which
    monkeypatch.setattr(cluster.shutil, "which", lambda name: None if name == "terraform" else real_which(name))
    assert cluster.main(["--dir", str(tmp_path), "up", "--mode", "netns", "--ssh"]) == 2
    assert "renders the cloud's inventory template with Terraform, which is not installed" in capsys.readouterr().err
    assert not (tmp_path / "state.json").exists()


@pytest.mark.parametrize("prefix", ["toolong", "Sb", "s-b", ""])
def test_bad_prefix_is_refused(cluster, tmp_path, capsys, prefix):
    assert cluster.main(["--dir", str(tmp_path), "up", "--prefix", prefix]) == 2
    assert "--prefix must be 1-4 lowercase letters/digits" in capsys.readouterr().err


def test_a_cluster_of_another_shape_must_be_taken_down_first(cluster, tmp_path, capsys):
    state = {"dir": str(tmp_path), "mode": "loopback", "net": "10.77.0", "prefix": "sb", "workers": 3, "cores": 2,
             "memory": "1g", "executor_memory": "512m", "netem": "",
             "nodes": cluster.layout("loopback", "10.77.0", "sb", 3)}
    (tmp_path / "state.json").write_text(json.dumps(state))
    assert cluster.main(["--dir", str(tmp_path), "up", "--workers", "2"]) == 2
    assert "a cluster with another shape is up" in capsys.readouterr().err
    # The same cluster with a broker is another shape too; the message says which it has.
    assert cluster.main(["--dir", str(tmp_path), "up", "--workers", "3", "--mode", "loopback", "--broker"]) == 2
    assert "no broker, plain RPC): run `make cluster-down` first" in capsys.readouterr().err
    # So is it encrypted.
    assert cluster.main(["--dir", str(tmp_path), "up", "--workers", "3", "--mode", "loopback", "--encrypt"]) == 2
    assert "a cluster with another shape is up" in capsys.readouterr().err


def test_a_cluster_with_a_broker_keeps_it_when_asked_for_none(cluster, tmp_path, capsys, monkeypatch):
    """`make bench` after `make bench INGEST=locust`: the broker stays, the cluster is the same shape; and so
    do encryption (`make cluster-up ENCRYPT=1`, then `make bench`) and the links' netem. Another netem is
    another shape."""
    state = {"dir": str(tmp_path), "mode": "netns", "net": "10.77.0", "prefix": "sb", "workers": 3, "cores": 2,
             "memory": "1g", "executor_memory": "512m", "netem": "delay 1ms", "netem_by": "linkem", "broker": True,
             "encrypt": True, "ansible": cluster.ansible_digest(),
             "nodes": cluster.layout("netns", "10.77.0", "sb", 3, broker=True)}
    (tmp_path / "state.json").write_text(json.dumps(state))
    monkeypatch.setattr(cluster, "healthy", lambda state: True)
    cluster.main(["--dir", str(tmp_path), "up", "--workers", "3"])
    out = capsys.readouterr()
    assert "already up" in out.out and "another shape" not in out.err, out
    assert "links:   0 of 5 forwarding through the user-space link emulator (delay 1ms)" in out.out
    assert cluster.main(["--dir", str(tmp_path), "up", "--workers", "3", "--netem", "delay 5ms"]) == 2
    assert "encrypted RPC, netem 'delay 1ms'): run `make cluster-down` first" in capsys.readouterr().err


def test_a_healthy_cluster_deployed_from_other_files_gets_them_applied_again(cluster, tmp_path, capsys,
                                                                           monkeypatch):
    """After an edit under ansible/ (the state's digest is another), cluster-up runs the playbooks again."""
    state = {"dir": str(tmp_path), "mode": "loopback", "net": "10.77.0", "prefix": "sb", "workers": 3, "cores": 2,
             "memory": "1g", "executor_memory": "512m", "netem": "", "ansible": "stale",
             "nodes": cluster.layout("loopback", "10.77.0", "sb", 3)}
    (tmp_path / "state.json").write_text(json.dumps(state))
    monkeypatch.setattr(cluster, "healthy", lambda state: True)
    monkeypatch.setattr(cluster, "check_ports_free", lambda state: None)  # the cluster holds them

    class Applied(Exception):
        pass

    def run_ansible(inventory):
        raise Applied(inventory)

    monkeypatch.setattr(cluster, "run_ansible", run_ansible)
    with pytest.raises(Applied):
        cluster.main(["--dir", str(tmp_path), "up", "--workers", "3", "--mode", "loopback"])
    assert "applying them again" in capsys.readouterr().out
    assert json.loads((tmp_path / "state.json").read_text())["ansible"] == cluster.ansible_digest()


def test_the_ansible_digest_follows_the_files(cluster, tmp_path, monkeypatch):
    (tmp_path / "roles" / "metrics" / "__pycache__").mkdir(parents=True)
    (tmp_path / "roles" / "metrics" / "agent.py").write_text("v1")
    monkeypatch.setattr(cluster, "ANSIBLE", tmp_path)
    first = cluster.ansible_digest()
    (tmp_path / "roles" / "metrics" / "__pycache__" / "agent.pyc").write_text("bytecode")
    assert cluster.ansible_digest() == first
    (tmp_path / "roles" / "metrics" / "agent.py").write_text("v2")
    assert cluster.ansible_digest() != first


def test_health_wait_times_out_with_the_logs_to_read(cluster, tmp_path):
    state = {"dir": str(tmp_path), "nodes": cluster.layout("netns", "192.0.2", "sb", 2)}  # TEST-NET: nobody answers
    (tmp_path / "worker1" / "logs").mkdir(parents=True)
    (tmp_path / "worker1" / "logs" / "spark-worker.out").write_text("")
    with pytest.raises(cluster.ClusterError) as error:
        cluster.wait_healthy(state, timeout=1)
    assert error.value.code == 1
    assert "not healthy after 1 s" in str(error.value) and "worker1/logs/spark-worker.out" in str(error.value)


def test_status_and_down_without_a_cluster(tmp_path):
    status = run("--dir", str(tmp_path), "status")
    assert status.returncode == 3 and "cluster: none in" in status.stdout
    down = run("--dir", str(tmp_path), "down")
    assert down.returncode == 0 and "nothing to stop" in down.stdout


def test_layout_gives_every_node_its_own_address(cluster):
    nodes = cluster.layout("netns", "10.77.0", "sb", 100)
    addresses = [n["ip"] for n in nodes.values()]
    assert len(set(addresses)) == len(addresses) == 102
    assert nodes["loadgen"] == {"ip": "10.77.0.1", "netns": ""}
    assert nodes["worker100"] == {"ip": "10.77.0.110", "netns": "sb-worker100"}
    assert all(n["ip"].startswith("127.0.0.") and not n["netns"]
               for n in cluster.layout("loopback", "10.77.0", "sb", 3).values())
    with pytest.raises(cluster.ClusterError):
        cluster.layout("netns", "10.77.0", "sb", 245)
    with_broker = cluster.layout("netns", "10.77.0", "sb", 2, broker=True)
    assert with_broker["broker"] == {"ip": "10.77.0.3", "netns": "sb-broker"}
    assert len({n["ip"] for n in with_broker.values()}) == 5 and "broker" not in nodes


def test_status_says_whether_the_broker_lets_its_user_in(cluster, tmp_path):
    """A raw RESP exchange (the infra venv has no Redis client) against a stand-in that checks the password."""
    (tmp_path / "broker.secret").write_text("s3cret\n")
    with socket.socket() as server:
        try:
            server.bind(("127.0.0.3", cluster.BROKER_PORT))
        except OSError:
            pytest.skip("127.0.0.3:6379 is in use here")
        server.listen()
        state = {"dir": str(tmp_path), "nodes": cluster.layout("loopback", "10.77.0", "sb", 1, broker=True)}
        import threading

        def answer(replies):
            for reply in replies:
                conn, _ = server.accept()
                with conn:
                    got = b""
                    while got.count(b"\r\n") < 2:
                        got += conn.recv(256)
                    assert got == b"AUTH skewbench s3cret\r\nPING\r\n", got
                    conn.sendall(reply)
                    conn.recv(1)  # the client closes first: no TIME_WAIT left on the port for the next run

        stand_in = threading.Thread(target=answer, args=([b"+OK\r\n+PONG\r\n", b"-WRONGPASS invalid\r\n"],))
        stand_in.start()
        assert cluster.broker_answers(state) is True
        assert cluster.broker_answers(state) is False
        stand_in.join(5)
    assert cluster.broker_answers(state) is False  # nobody listens
    assert cluster.broker_answers({"dir": str(tmp_path), "nodes": cluster.layout("loopback", "10.77.0", "sb", 1)}) \
        is None


def test_a_second_cluster_up_waits_for_the_first_ones_plays(cluster, capsys):
    """Clusters of one checkout share .venv-cluster and apt: their plays run one at a time, the second says why
    it waits."""
    import threading

    order = []

    def second():
        with cluster.installing():
            order.append("second")

    with cluster.installing():
        waiting = threading.Thread(target=second)
        waiting.start()
        waiting.join(timeout=1.0)
        assert waiting.is_alive() and order == []  # blocked behind the first
        order.append("first")
    waiting.join(timeout=30)
    assert order == ["first", "second"]
    assert "another cluster-up of this checkout is running its plays" in capsys.readouterr().out
