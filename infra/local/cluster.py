"""The local default cluster: one Spark master and N workers on this machine, one node per network namespace.

Each node gets its own Linux network namespace with its own address on a bridge (veth pairs), so
shuffle traffic really crosses interfaces; ``--netem`` adds a ``tc netem`` delay/loss/bandwidth to every
node's link to emulate a commodity network (where the kernel lacks netem, every node's link goes through
the user-space link emulator ``linkem.py`` instead). Without root there are no namespaces: nodes then take
distinct loopback addresses 127.0.0.x instead, and this says so. The nodes are provisioned by the
same Ansible plays as cloud VMs (``ansible/site.yml``); this script plays Terraform's part: it makes
the "machines" and writes the inventory. Drivers run on the host (the load generator node) with
``SPARK_CONF_DIR=<dir>/loadgen/conf``, which holds the master URL and the shared secret.

With ``--ssh`` the nodes are reached as VMs are: ``ansible/ssh.yml`` gives every node an sshd on its own
address and one login user with sudo; then ``site.yml`` provisions them over SSH with become, from the
inventory Terraform's template (``infra/aws/inventory.tftpl``) renders for them — the cloud path, all but
the VMs' creation.

    cluster.py up [--workers N] [--cores C] [--broker] [--encrypt] [--ssh] [--netem "delay 1ms loss 0.5%"]
    cluster.py status                                                          # exit 3 unless healthy
    cluster.py down                                                            # stops only what up started

Exit codes: 0 done, 1 the cluster failed (Ansible, health timeout), 2 usage or environment error,
3 ``status`` of a cluster that is down or degraded.
"""
import argparse
import contextlib
import fcntl
import getpass
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil
import yaml

sys.path.insert(0, str(Path(__file__).parent))
import linkem  # noqa: E402  (beside this script, which runs as a file, not from a package)

PREFIX_RULE = re.compile(r"[a-z][a-z0-9]{0,3}")  # names derive from it: interface names are short
ROOT = Path(__file__).resolve().parents[2]
ANSIBLE = ROOT / "ansible"
AWS = ROOT / "infra" / "aws"
NODE_VENV = ROOT / ".venv-cluster"  # every local node's Python: the project, PySpark, psutil (pinned by Ansible)
# Held while the plays run: clusters of one checkout share NODE_VENV, and the machine's apt, which the plays
# install into (a second cluster-up, e.g. the tests' own beside a developer's, waits instead of racing).
INSTALL_LOCK = ROOT / ".cache" / "cluster-install.lock"
MASTER_PORTS = (7077, 8080)  # must match ansible/group_vars/all.yml
WORKER_PORTS = (7078, 8081)
BROKER_PORT, BROKER_USER = 6379, "skewbench"
UI_PORT = {"master": 8080, "worker": 8081}
TERRAFORM_MISSING = ("--ssh renders the cloud's inventory template with Terraform, which is not installed: "
                     "https://developer.hashicorp.com/terraform/install")
SSH_PORT = 2222  # the nodes' sshd (--ssh): not 22, which the host's own sshd may hold on every address
SPARK_MARKERS = ("org.apache.spark.", "pyspark", "skewbench.bench.spark.daemon", "skewbench_metrics")


class ClusterError(Exception):
    """A failure with a message that says what to do; ``code`` is the exit code."""

    def __init__(self, message, code=2):
        super().__init__(message)
        self.code = code


# --- the shape of the cluster -------------------------------------------------------------------

def layout(mode, net, prefix, workers, broker=False):
    """Nodes as {name: {"ip", "netns"}}: loadgen .1 (the host side), master .2, the broker (when asked
    for) .3, worker i .(10+i)."""
    if not 1 <= workers <= 244:
        raise ClusterError(f"--workers must be in 1..244, got {workers}")
    base = net if mode == "netns" else "127.0.0"
    names = ["master"] + ["broker"] * broker + [f"worker{i}" for i in range(1, workers + 1)]
    hosts = [2] + [3] * broker + [10 + i for i in range(1, workers + 1)]
    nodes = {"loadgen": {"ip": f"{base}.1", "netns": ""}}
    for name, host in zip(names, hosts):
        nodes[name] = {"ip": f"{base}.{host}", "netns": f"{prefix}-{name}" if mode == "netns" else ""}
    return nodes


def netns_unavailable(prefix):
    """Why this machine cannot run nodes in network namespaces, or None when it can.

    Root alone is not enough (an unprivileged container is root without CAP_SYS_ADMIN/CAP_NET_ADMIN),
    so a throw-away namespace with a veth pair is made and removed.
    """
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("ip") is None:
        return "iproute2 (the ip command) is not installed"
    probe, veth = f"{prefix}-probe", f"{prefix}v-probe"[:15]
    try:
        for command in (["netns", "add", probe], ["link", "add", veth, "type", "veth", "peer", "name", "eth0",
                                                  "netns", probe]):
            done = ip(*command, check=False)
            if done.returncode:
                return f"`ip {' '.join(command)}` failed: {done.stderr.strip()}"
        return None
    finally:
        ip("link", "del", veth, check=False)
        ip("netns", "del", probe, check=False)


def netem_unavailable(options):
    """Why ``tc qdisc ... netem OPTIONS`` cannot be applied, or None; tried on a throw-away namespace."""
    probe = f"sbnetem{os.getpid()}"
    ip("netns", "add", probe)
    try:
        done = subprocess.run(["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "lo", "root", "netem",
                               *options.split()], capture_output=True, text=True)
        return None if done.returncode == 0 else done.stderr.strip() or f"tc exited with {done.returncode}"
    except FileNotFoundError:
        return "tc (iproute2) is not installed"
    finally:
        ip("netns", "del", probe, check=False)


def netem_by(options):
    """"tc" where the kernel applies these netem options, else "linkem" (said out loud) where it can."""
    why = netem_unavailable(options)
    if not why:
        return "tc"
    try:
        linkem.parse(options)
    except ValueError as e:
        raise ClusterError(f"tc netem {options!r} cannot be applied: {why.rstrip('.')}, and {e}. Load the kernel "
                           f"module (modprobe sch_netem), keep to what the emulator does, or leave NETEM empty")
    print(f"cluster: the kernel cannot apply tc netem ({why.rstrip('.')}): every node's link goes through the "
          f"user-space link emulator instead (infra/local/linkem.py: {options})")
    return "linkem"


def choose_mode(requested, prefix):
    """netns when this machine can make namespaces; otherwise loopback, said out loud."""
    if requested == "loopback":
        return "loopback"
    why = netns_unavailable(prefix)
    if why and requested == "netns":
        raise ClusterError(f"network namespaces are not available ({why}): run as root with CAP_SYS_ADMIN and "
                           f"CAP_NET_ADMIN, or use loopback addresses (cluster.py up --mode loopback)")
    if why:
        print(f"cluster: network namespaces are not available ({why}): falling back to loopback addresses "
              f"127.0.0.x (every node shares the host's network stack; shuffle traffic stays on lo)")
        return "loopback"
    return "netns"


# --- network namespaces -------------------------------------------------------------------------

def ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def existing_namespaces():
    return {line.split()[0] for line in ip("netns", "list").stdout.splitlines() if line.strip()}


def bridge_of(state):
    return f"{state['prefix']}br0"


def create_network(state):
    """Bridge with the loadgen address, then one namespace + veth per node; skips what exists."""
    bridge, nodes = bridge_of(state), state["nodes"]
    if ip("link", "show", bridge, check=False).returncode != 0:
        ip("link", "add", bridge, "type", "bridge")
        ip("addr", "add", f"{nodes['loadgen']['ip']}/24", "dev", bridge)
        ip("link", "set", bridge, "up")
    have = existing_namespaces()
    for name, node in nodes.items():
        ns = node["netns"]
        if not ns or ns in have:
            continue
        veth = veth_of(state, name)
        ip("netns", "add", ns)
        if state.get("netem_by") == "linkem":  # two taps, joined by a linkem process
            ip("tuntap", "add", "dev", veth, "mode", "tap")
            ip("-n", ns, "tuntap", "add", "dev", "eth0", "mode", "tap")
        else:
            ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        ip("link", "set", veth, "master", bridge, "up")
        ip("-n", ns, "addr", "add", f"{node['ip']}/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        ip("-n", ns, "link", "set", "lo", "up")  # PySpark's Python workers talk to their JVM over loopback
        if state.get("netem_by") == "tc":
            subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", "eth0", "root", "netem",
                            *state["netem"].split()], check=True, capture_output=True, text=True)
    if state.get("netem_by") == "linkem":
        start_links(state)


def start_links(state, timeout=10):
    """A linkem process per node link that has none (its PID file under <dir>/links/run), attached once
    it has written its counters."""
    folder = Path(state["dir"], "links")
    (folder / "run").mkdir(parents=True, exist_ok=True)
    started = {}
    for name, node in state["nodes"].items():
        if node["netns"] and not _running(state, "links", name):
            stats = folder / f"{name}.json"
            stats.unlink(missing_ok=True)
            with open(folder / f"{name}.out", "ab") as log:
                proc = subprocess.Popen([sys.executable, str(Path(linkem.__file__)), "--netns", node["netns"],
                                         "--bridge-tap", veth_of(state, name), "--options", state["netem"],
                                         "--stats", str(stats)], stdin=subprocess.DEVNULL, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
            (folder / "run" / f"{name}.pid").write_text(str(proc.pid))
            started[name] = (proc, stats)
    deadline = time.monotonic() + timeout
    for name, (proc, stats) in started.items():
        while not stats.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ClusterError(f"the link emulator of {name} did not start: see {folder / name}.out", code=1)
            time.sleep(0.05)


def links_forwarding(state):
    """{node: whether its linkem runs} for a cluster whose links go through linkem, else {}."""
    if state.get("netem_by") != "linkem":
        return {}
    return {name: _running(state, "links", name) for name, node in state["nodes"].items() if node["netns"]}


def veth_of(state, name):
    return f"{state['prefix']}v-{name}"[:15]


def delete_network(state):
    """Kill what is left inside our namespaces, then remove veths, namespaces and the bridge."""
    have = existing_namespaces()
    for name, node in state["nodes"].items():
        if node["netns"] in have:
            pids = ip("netns", "pids", node["netns"]).stdout.split()  # anything left in it is ours
            _kill([psutil.Process(int(pid)) for pid in pids if psutil.pid_exists(int(pid))])
        if node["netns"]:
            # Deleting a namespace frees its veth only later (asynchronously); delete it now instead.
            ip("link", "del", veth_of(state, name), check=False)
        if node["netns"] in have:
            ip("netns", "del", node["netns"])
    ip("link", "del", bridge_of(state), check=False)


def check_network_free(state, previous):
    """Refuse to adopt namespaces, a bridge or a subnet that another cluster (or anyone) owns."""
    if previous:
        return
    clash = existing_namespaces() & {n["netns"] for n in state["nodes"].values()}
    if clash:
        raise ClusterError(f"network namespaces {sorted(clash)} exist but not from {state['dir']}: "
                           f"remove them (ip netns del NAME) or pick another --prefix")
    net = state["nodes"]["loadgen"]["ip"].rsplit(".", 1)[0] + "."
    if net in ip("-o", "addr").stdout:
        raise ClusterError(f"subnet {net}0/24 is already on an interface of this machine: pick another --net")


def check_ports_free(state):
    """Loopback nodes share one stack: a master or worker port taken by someone else is an error."""
    for name, node in state["nodes"].items():
        kind = name.rstrip("0123456789")
        ports = {"master": MASTER_PORTS, "worker": WORKER_PORTS, "broker": (BROKER_PORT,)}.get(kind, ())
        if not ports or _running(state, name, "broker" if kind == "broker" else f"spark-{kind}"):
            continue
        for port in ports:
            with socket.socket() as s:
                try:
                    s.bind((node["ip"], port))
                except OSError:
                    raise ClusterError(f"port {node['ip']}:{port} for the {name} is taken by another process: "
                                       f"stop it (ss -ltnp 'sport = :{port}')") from None


# --- processes ----------------------------------------------------------------------------------

def _pidfiles(state):
    return sorted(Path(state["dir"]).glob("*/run/*.pid"))


def _running(state, node, daemon):
    pidfile = Path(state["dir"], node, "run", f"{daemon}.pid")
    try:
        return str(Path(state["dir"], node)) in " ".join(psutil.Process(int(pidfile.read_text())).cmdline())
    except (OSError, ValueError, psutil.Error):
        return False


def _kill(procs, timeout=15):
    """SIGTERM, wait, then SIGKILL whatever is left."""
    for proc in procs:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)


def ours(state):
    """Processes this cluster started: PID-file daemons, their descendants, and Spark or agent processes
    running in a node folder (never, say, a shell that happens to sit there)."""
    found = {}
    for pidfile in _pidfiles(state):
        try:
            proc = psutil.Process(int(pidfile.read_text()))
            if str(pidfile.parents[1]) in " ".join(proc.cmdline()):  # not a recycled PID
                found.update({p.pid: p for p in [proc, *proc.children(recursive=True)]})
        except (OSError, ValueError, psutil.Error):
            pass
    for proc in psutil.process_iter():  # orphans, e.g. an executor whose worker was killed
        try:
            if proc.cwd().startswith(state["dir"] + os.sep) and any(
                    marker in " ".join(proc.cmdline()) for marker in SPARK_MARKERS):
                found[proc.pid] = proc
        except psutil.Error:
            pass
    return list(found.values())


# --- Ansible ------------------------------------------------------------------------------------

def site_vars(state):
    """This machine's answers to what the inventory must say of a site (ansible/group_vars/all.yml): the
    project's venv and checkout instead of a wheel in /opt, PID-file launchers instead of systemd."""
    return {
        "cluster_dir": state["dir"],
        "common_python": getattr(sys, "_base_executable", sys.executable),
        "skewbench_venv": str(NODE_VENV),
        "skewbench_source": str(ROOT),
        "skewbench_editable": True,
        "skewbench_wheel": "",
        "service_manager": "pidfile",
        "metrics_scope": "netns" if state["mode"] == "netns" else "dir",
        "spark_daemon_memory": "256m",
        "spark_network_encryption": bool(state.get("encrypt")),
    }


def groups(state):
    """The inventory's groups: {group: [node name]}."""
    nodes = state["nodes"]
    return {"masters": ["master"], "workers": [n for n in nodes if n.startswith("worker")], "loadgens": ["loadgen"],
            "brokers": [n for n in nodes if n == "broker"]}


def write_inventory(state, args, name="inventory.yml"):
    """The local counterpart of Terraform's inventory: same groups, local connection, PID files."""
    def hosts(names):
        return {"hosts": {n: {"node_ip": state["nodes"][n]["ip"], "netns": state["nodes"][n]["netns"]}
                          for n in names}}

    inventory = {"all": {
        "vars": {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "node_become": False,  # local nodes run as the caller; up() checked what would need root
            "spark_user": getpass.getuser(),
            **site_vars(state),
            "spark_worker_cores": args.cores,
            "spark_worker_memory": args.memory,
            "spark_executor_memory": args.executor_memory,
            **({"ssh_login": ssh_login(state), "ssh_port": SSH_PORT} if state.get("ssh") else {}),
        },
        "children": {group: hosts(names) for group, names in groups(state).items()},
    }}
    path = Path(state["dir"], name)
    path.write_text("# Written by infra/local/cluster.py up; ansible-playbook -i this ansible/site.yml\n"
                    + yaml.safe_dump(inventory, sort_keys=False))
    return path


def ssh_login(state):
    return f"{state['prefix']}-ssh"


def write_ssh_inventory(state, args):
    """The cloud's inventory for these nodes, reached over SSH: infra/aws/inventory.tftpl rendered by Terraform,
    each node's address its public and private one, this machine's site vars (root by sudo from the login
    user, as on a cloud image)."""
    directory = state["dir"]
    site = {**site_vars(state), "node_become": True, "spark_user": "root", "ansible_port": SSH_PORT,
            "ansible_ssh_private_key_file": f"{directory}/ssh/login_key",
            "ansible_ssh_common_args": f"-o UserKnownHostsFile={directory}/ssh/known_hosts"}
    machines = {group: {n: {"public_ip": state["nodes"][n]["ip"], "private_ip": state["nodes"][n]["ip"]}
                        for n in names} for group, names in groups(state).items()}
    path = Path(directory, "inventory.yml")
    path.write_text(templatefile(AWS / "inventory.tftpl", {
        **machines, "ssh_user": ssh_login(state), "site": site, "worker_cores": args.cores,
        "worker_memory": args.memory, "executor_memory": args.executor_memory}))
    return path


def templatefile(template, variables):
    """Terraform's own ``templatefile(template, variables)``, through ``terraform console`` (no provider, no
    state: a scratch folder with the template and the variables as JSON); ``up`` checked that it is installed."""
    with tempfile.TemporaryDirectory(prefix="skewbench-tf-") as scratch:
        shutil.copy(template, scratch)
        Path(scratch, "variables.json").write_text(json.dumps(variables))
        done = subprocess.run(["terraform", "console"], cwd=scratch, capture_output=True, text=True, timeout=120,
                              input=f'templatefile("{template.name}", jsondecode(file("variables.json")))\n',
                              env={**os.environ, "TF_CLI_CONFIG_FILE": "/dev/null", "TF_IN_AUTOMATION": "1"})
    if done.returncode or "<<EOT\n" not in done.stdout:
        raise ClusterError(f"terraform could not render {template}: {done.stderr.strip()[-2000:]}", code=1)
    return done.stdout.split("<<EOT\n", 1)[1].rsplit("\nEOT", 1)[0] + "\n"  # console prints it as a heredoc


def run_ansible(inventory, playbook="site.yml"):
    """Run a playbook; output goes to <dir>/ansible.log, the recap to stdout. Returns total changed."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    log = inventory.parent / "ansible.log"
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(ANSIBLE / playbook)]
    with log.open("w") as out:
        result = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    text = log.read_text()
    recap = text[text.rfind("PLAY RECAP"):] if "PLAY RECAP" in text else text[-3000:]
    print(recap.rstrip())
    if result.returncode:
        raise ClusterError(f"ansible-playbook failed (exit {result.returncode}); full output in {log}", code=1)
    return sum(int(part.split("=")[1]) for part in recap.split() if part.startswith("changed="))


@contextlib.contextmanager
def installing():
    """INSTALL_LOCK held: one cluster-up of this checkout at a time runs the plays."""
    INSTALL_LOCK.parent.mkdir(exist_ok=True)
    with INSTALL_LOCK.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("cluster: another cluster-up of this checkout is running its plays (they install into the "
                  f"shared {NODE_VENV.name}); waiting for it", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def announce_installs(broker, ssh=False):
    """One line for each long install the plays are about to make, so that a first cluster-up says what it
    is doing instead of looking hung (the plays themselves print only their recap)."""
    versions = yaml.safe_load((ANSIBLE / "group_vars" / "all.yml").read_text())
    if broker and shutil.which("redis-server") is None:
        print(f"cluster: installing Redis ({versions['broker_package']}) with apt: the broker; once")
    if ssh and not (Path("/usr/sbin/sshd").exists() and shutil.which("sudo")):
        print("cluster: installing openssh-server and sudo with apt: the nodes' sshd; once")
    if shutil.which("java") is None:
        print(f"cluster: installing Java {versions['java_version']} ({versions['java_package']}) with apt: Spark "
              f"runs on it; once")
    python = NODE_VENV / "bin" / "python"
    found = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('pyspark'))"],
                           capture_output=True, text=True) if python.exists() else None
    if found is None or found.stdout.strip() != versions["pyspark_version"]:
        print(f"cluster: installing PySpark {versions['pyspark_version']}, pandas, psutil and skewbench into "
              f"{NODE_VENV.name} (every local node's Python); once, a minute or two")


# --- health -------------------------------------------------------------------------------------

def master_json(state, timeout=2.0):
    url = f"http://{state['nodes']['master']['ip']}:{UI_PORT['master']}/json/"
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


def worker_states(state):
    """{worker name: ALIVE | DEAD | MISSING} as the master sees them; raises OSError if it is unreachable."""
    seen = {}
    for w in master_json(state)["workers"]:
        seen.setdefault(w["host"], set()).add(w["state"])
    states = {}
    for name, node in state["nodes"].items():
        if name.startswith("worker"):
            got = seen.get(node["ip"], set())
            states[name] = "ALIVE" if "ALIVE" in got else ("DEAD" if got else "MISSING")
    return states


def healthy(state):
    if not all(links_forwarding(state).values()):
        return False
    try:
        return all(s == "ALIVE" for s in worker_states(state).values()) and broker_answers(state) is not False
    except OSError:
        return False


def broker_answers(state, timeout=2.0):
    """None without a broker; else whether it lets its user in and answers PING (a raw RESP exchange:
    this venv has no Redis client)."""
    node = state["nodes"].get("broker")
    if node is None:
        return None
    secret = Path(state["dir"], "broker.secret")
    try:
        with socket.create_connection((node["ip"], BROKER_PORT), timeout=timeout) as conn:
            conn.sendall(f"AUTH {BROKER_USER} {secret.read_text().strip()}\r\nPING\r\n".encode())
            reply = b""
            while reply.count(b"\r\n") < 2 and (chunk := conn.recv(256)):
                reply += chunk
        return reply == b"+OK\r\n+PONG\r\n"
    except OSError:
        return False


def wait_healthy(state, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if healthy(state):
            return
        time.sleep(1)
    logs = "\n".join(f"  {p}" for p in sorted(Path(state["dir"]).glob("*/logs/spark-*.out")))
    raise ClusterError(f"the cluster was not healthy after {timeout:.0f} s (every worker registered and ALIVE); "
                       f"see `cluster.py status` and the logs:\n{logs}", code=1)


# --- commands -----------------------------------------------------------------------------------

def ansible_digest():
    """A digest of every file under ansible/: a healthy cluster deployed from other files (an updated
    metrics agent, say) gets them applied again instead of "nothing to do"."""
    digest = hashlib.sha256()
    for path in sorted(p for p in ANSIBLE.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(ANSIBLE)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def load_state(directory):
    path = Path(directory, "state.json")
    return json.loads(path.read_text()) if path.exists() else None


def up(args):
    directory = str(Path(args.dir).resolve())
    previous = load_state(directory)
    if not PREFIX_RULE.fullmatch(args.prefix):
        raise ClusterError(f"--prefix must be 1-4 lowercase letters/digits (interface names are short), "
                           f"got {args.prefix!r}")
    mode = previous["mode"] if previous and args.mode == "auto" else choose_mode(args.mode, args.prefix)
    args.broker = args.broker or bool(previous and previous.get("broker"))  # a broker up stays: nothing needs it gone
    args.encrypt = args.encrypt or bool(previous and previous.get("encrypt"))  # and so does encryption
    args.ssh = args.ssh or bool(previous and previous.get("ssh"))  # and so do the nodes' sshd
    args.netem = args.netem or (previous or {}).get("netem", "")  # and the links' netem
    shape = {"mode": mode, "net": args.net, "prefix": args.prefix, "workers": args.workers, "cores": args.cores,
             "memory": args.memory, "executor_memory": args.executor_memory, "netem": args.netem,
             "broker": args.broker, "encrypt": args.encrypt, "ssh": args.ssh}
    state = {"dir": directory, **shape, "ansible": ansible_digest(), "netem_by": (previous or {}).get("netem_by"),
             "nodes": layout(mode, args.net, args.prefix, args.workers, args.broker)}
    if previous and {k: {"broker": False, "encrypt": False, "ssh": False, **previous}.get(k) for k in shape} != shape:
        raise ClusterError(f"a cluster with another shape is up in {directory} "
                           f"({previous['workers']} workers, {previous['cores']} cores each, mode {previous['mode']}, "
                           f"{'a' if previous.get('broker') else 'no'} broker, "
                           f"{'encrypted' if previous.get('encrypt') else 'plain'} RPC"
                           f"{', nodes over SSH' if previous.get('ssh') else ''}"
                           f"{', netem ' + repr(previous['netem']) if previous.get('netem') else ''}): "
                           f"run `make cluster-down` first")
    if previous and healthy(state):
        if previous.get("ansible") == state["ansible"]:
            print(f"cluster: already up ({args.workers} workers ALIVE); nothing to do")
            return status(args)
        print("cluster: up, but the files under ansible/ changed since it was deployed: applying them again")
    if shutil.which("java") is None and os.geteuid() != 0:
        raise ClusterError("Java is missing: install openjdk-17-jre-headless (apt), or run as root so Ansible "
                           "installs it")
    if args.broker and shutil.which("redis-server") is None and os.geteuid() != 0:
        raise ClusterError("Redis is missing for the broker: install redis-server (apt), or run as root so Ansible "
                           "installs it")
    if args.ssh and mode != "netns":
        raise ClusterError("--ssh needs network namespaces (each node's sshd on its own address): run as root "
                           "with CAP_SYS_ADMIN and CAP_NET_ADMIN")
    if args.ssh and shutil.which("terraform") is None:
        raise ClusterError(TERRAFORM_MISSING)
    if args.netem and mode != "netns":
        raise ClusterError("--netem needs network namespaces (loopback traffic cannot be shaped per node)")
    if args.netem and not previous:
        state["netem_by"] = netem_by(args.netem)
    started = time.monotonic()
    Path(directory).mkdir(mode=0o700, parents=True, exist_ok=True)
    Path(directory, ".gitignore").write_text("# the running cluster's state and its secret: never commit\n*\n")
    if mode == "netns":
        check_network_free(state, previous)
        create_network(state)
    else:
        check_ports_free(state)
    Path(directory, "state.json").write_text(json.dumps(state, indent=1))
    announce_installs(args.broker, args.ssh)
    with installing():
        if args.ssh:  # first an sshd on every node (locally), then every play over SSH, as on VMs
            run_ansible(write_inventory(state, args, "bootstrap.yml"), "ssh.yml")
            run_ansible(write_ssh_inventory(state, args))
        else:
            run_ansible(write_inventory(state, args))
    if NODE_VENV.is_dir():
        Path(NODE_VENV, ".gitignore").write_text("*\n")
    wait_healthy(state, args.timeout)
    print(f"cluster: up in {time.monotonic() - started:.1f} s")
    return status(args)


def status(args):
    state = load_state(Path(args.dir).resolve())
    if state is None:
        print(f"cluster: none in {args.dir} (make cluster-up starts one)")
        return 3
    master = state["nodes"]["master"]["ip"]
    where = (f"network namespaces on bridge {bridge_of(state)}" if state["mode"] == "netns"
             else "loopback addresses (no namespaces)")
    print(f"cluster: local, {state['workers']} workers, {where}; folder {state['dir']}")
    links = links_forwarding(state)
    if links:
        print(f"links:   {sum(links.values())} of {len(links)} forwarding through the user-space link emulator "
              f"({state['netem']})" + ("" if all(links.values()) else "; `make cluster-up` restarts them"))
    try:
        info, workers = master_json(state), worker_states(state)
    except OSError as e:
        print(f"master:  spark://{master}:7077 NOT REACHABLE ({e}); `make cluster-up` restarts it")
        return 3
    print(f"master:  {info['url']} {info['status']}  UI http://{master}:{UI_PORT['master']}")
    alive = sum(s == "ALIVE" for s in workers.values())
    print(f"workers: {alive} of {len(workers)} alive")
    registered = {w["host"]: w for w in info["workers"] if w["state"] == "ALIVE"}
    for name, st in workers.items():
        node = state["nodes"][name]["ip"]
        w = registered.get(node)
        detail = f"cores {w['cores']}  memory {w['memory']} MiB  UI {w['webuiaddress']}" if w else \
            "the master lost it; `make cluster-up` restarts it"
        print(f"  {name:<9} {node:<12} {st:<7} {detail}")
    broker = broker_answers(state)
    if broker is not None:
        print(f"broker:  redis://{state['nodes']['broker']['ip']}:{BROKER_PORT} "
              + ("ANSWERS" if broker else "NOT ANSWERING; `make cluster-up BROKER=1` restarts it"))
    print(f"drivers: SPARK_CONF_DIR={state['dir']}/loadgen/conf  (master URL and secret inside"
          + (", broker.json the broker's" if broker is not None else "") + ")")
    ok = alive == len(workers) and info["status"] == "ALIVE" and broker is not False and all(links.values())
    return 0 if ok else 3


def down(args):
    state = load_state(Path(args.dir).resolve())
    if state is None:
        print(f"cluster: none in {args.dir}; nothing to stop")
        return 0
    started = time.monotonic()
    procs = ours(state)
    _kill(procs)
    for pidfile in _pidfiles(state):
        pidfile.unlink()
    if state["mode"] == "netns":
        delete_network(state)
    if state.get("ssh"):
        remove_login(ssh_login(state))
    Path(state["dir"], "state.json").unlink()
    print(f"cluster: down in {time.monotonic() - started:.1f} s ({len(procs)} processes stopped"
          + (", namespaces and bridge removed)" if state["mode"] == "netns" else ")"))
    return 0


def remove_login(name):
    """The login user and its sudo rule, which up --ssh made (no process of it is left: its sessions ran
    in the nodes, stopped with them)."""
    Path("/etc/sudoers.d", name).unlink(missing_ok=True)
    subprocess.run(["userdel", "--remove", name], capture_output=True, text=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=str(ROOT / ".cluster"), help="folder for state, inventory, node files")
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="start the cluster, or restore what died; a no-op when healthy")
    p_up.add_argument("--workers", type=int, default=2, help="number of worker nodes")
    p_up.add_argument("--cores", type=int, default=2, help="task slots per worker (may exceed real cores)")
    p_up.add_argument("--memory", default="1g", help="memory per worker for executors")
    p_up.add_argument("--executor-memory", default="512m", help="spark.executor.memory")
    p_up.add_argument("--broker", action="store_true",
                      help="also a broker node: Redis Streams between the load generator and Spark's sources")
    p_up.add_argument("--encrypt", action="store_true",
                      help="encrypt Spark's RPC and block transfers (spark.network.crypto.enabled)")
    p_up.add_argument("--ssh", action="store_true",
                      help="reach every node over SSH, as a VM (its own sshd, a login user with sudo) and provision "
                           "it from the inventory Terraform's template renders")
    p_up.add_argument("--netem", default="",
                      help='netem options for what leaves every node, e.g. "delay 1ms loss 0.5%%" (the kernel\'s '
                           'tc netem, else linkem.py: delay, loss, rate)')
    p_up.add_argument("--mode", choices=("auto", "netns", "loopback"), default="auto",
                      help="netns needs root; auto falls back to loopback addresses")
    p_up.add_argument("--net", default="10.77.0", help="first three octets of the namespaces' /24 subnet")
    p_up.add_argument("--prefix", default="sb", help="prefix of namespace, bridge and veth names")
    p_up.add_argument("--timeout", type=float, default=180, help="seconds to wait until every worker is ALIVE")
    sub.add_parser("status", help="master URL, workers with cores/memory/state, UI URLs")
    sub.add_parser("down", help="stop what up started and remove its namespaces")
    args = parser.parse_args(argv)
    try:
        return {"up": up, "status": status, "down": down}[args.command](args)
    except ClusterError as e:
        print(f"cluster: error: {e}", file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
