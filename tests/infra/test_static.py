"""Static checks of what cannot run here: Terraform (parse, variables, outputs → inventory, checkov,
validate when terraform is installed), Ansible (ansible-lint, every template renders for the local
and the cloud inventory) and the metrics agent's process classification.

The static checks' tools (and an Ansible of their own) live in .venv-infra-lint, which conftest.py
builds; python-hcl2 is imported from it.
"""
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
AWS = ROOT / "infra" / "aws"
HERE = Path(__file__).parent
LINT_BIN = ROOT / ".venv-infra-lint" / "bin"
VARIABLE = re.compile(r"\bvar\.([A-Za-z_][A-Za-z0-9_]*)")


def tool(name):
    path = LINT_BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make infra-setup infra-lint-setup` (infra/requirements*.txt)")
    return str(path)


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plain(value):
    """Undo python-hcl2's wrapping: it adds ``__start_line__``-style keys, wraps every attribute value
    (and a block given once) in a one-element list, and some versions keep HCL's quotes."""
    if isinstance(value, dict):
        return {plain(k): plain(v[0] if isinstance(v, list) and len(v) == 1 else v)
                for k, v in value.items() if not str(k).startswith("__")}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def blocks(value):
    """A repeatable block (``ingress``) as a list, whether it appears once or more."""
    return value if isinstance(value, list) else [value]


def hcl():
    import hcl2  # from .venv-infra, which the session fixture put on sys.path

    return hcl2


def terraform():
    """Parsed *.tf files of infra/aws, merged by block type."""
    hcl2 = hcl()
    merged = {}
    for path in sorted(AWS.glob("*.tf")):
        with path.open() as f:
            for block, items in hcl2.load(f).items():
                if not block.startswith("__"):
                    merged.setdefault(block, []).extend(plain(item) for item in items)
    return merged


def tf_text():
    return "\n".join(p.read_text() for p in sorted(AWS.glob("*.tf")))


def variables():
    return {name: body for item in terraform()["variable"] for name, body in item.items()}


def test_every_variable_is_documented_typed_and_used():
    text = tf_text()
    used = set(VARIABLE.findall(text))
    for name, body in variables().items():
        assert body.get("description", "").strip(), f"variable {name} has no description"
        assert "type" in body, f"variable {name} has no type"
        assert name in used, f"variable {name} is declared but never used"
    assert used <= set(variables()), f"undeclared variables used: {used - set(variables())}"


def test_tfvars_example_sets_every_required_variable_and_only_declared_ones():
    example = plain(hcl().loads((AWS / "terraform.tfvars.example").read_text()))
    declared = variables()
    required = {name for name, body in declared.items() if "default" not in body}
    assert required <= set(example), f"terraform.tfvars.example misses {required - set(example)}"
    assert set(example) <= set(declared), f"unknown variables in the example: {set(example) - set(declared)}"


def test_providers_are_pinned():
    providers = terraform()["terraform"][0]["required_providers"]
    assert providers, "no required_providers"
    for name, spec in providers.items():
        assert re.fullmatch(r"~> \d+\.\d+\.\d+|= ?\d+\.\d+\.\d+|\d+\.\d+\.\d+", spec["version"]), \
            f"provider {name} is not pinned to a patch series: {spec['version']}"


def test_ssh_is_open_only_to_the_operator_cidr():
    groups = [r["aws_security_group"] for r in terraform()["resource"] if "aws_security_group" in r]
    for group in groups:
        for body in group.values():
            assert body["ingress"], "a security group without ingress rules"
            for rule in blocks(body["ingress"]):
                assert rule.get("self") or rule["cidr_blocks"] == ["${var.allowed_ssh_cidr}"], rule
                if not rule.get("self"):
                    assert (rule["from_port"], rule["to_port"]) == (22, 22), rule


def test_outputs_feed_the_inventory_template():
    """Every value the template uses comes from local.inventory, and each is also an output."""
    template = (AWS / "inventory.tftpl").read_text()
    directives = re.findall(r"%\{([^}]*)\}", template) + re.findall(r"\$\{([^}]*)\}", template)
    loop_vars = {v for d in directives for pair in re.findall(r"for\s+(\w+)\s*,\s*(\w+)\s+in", d) for v in pair}
    names = {w for d in directives for w in re.findall(r"\b([a-z_]+)\b", d)}
    used = names - loop_vars - {"for", "in", "endfor", "jsonencode", "public_ip", "private_ip"}
    keys = {k for item in terraform()["locals"] for k in item.get("inventory", {})}
    outputs = {name: body for item in terraform()["output"] for name, body in item.items()}
    inventory_call = outputs["inventory"]["value"]
    # python-hcl2 prints the object argument as a Python dict ('k': '${local.inventory.k}'); HCL has k = ...
    passed = set(re.findall(r"(\w+)'?\s*[=:]\s*'?(?:\$\{)?local\.inventory\.(\w+)", inventory_call))
    assert used == keys, f"template uses {sorted(used)}, local.inventory has {sorted(keys)}"
    assert passed == {(k, k) for k in keys}, f"templatefile() passes {sorted(passed)}"
    for key in keys:
        assert key in outputs and f"local.inventory.{key}" in str(outputs[key]["value"]), f"no output for {key}"
        assert outputs[key].get("description"), f"output {key} has no description"


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not installed")
def test_cloud_inventory_fixture_is_what_terraform_renders(tmp_path):
    shutil.copy(AWS / "inventory.tftpl", tmp_path)
    out = subprocess.run(["terraform", "console"], cwd=tmp_path, input=(HERE / "cloud_inventory.tfexpr").read_text(),
                         capture_output=True, text=True, env={**os.environ, "TF_CLI_CONFIG_FILE": "/dev/null"},
                         timeout=60)
    assert out.returncode == 0, out.stderr
    rendered = out.stdout.split("<<EOT\n", 1)[1].rsplit("\nEOT", 1)[0]
    assert rendered.rstrip("\n") == (HERE / "cloud_inventory.yml").read_text().rstrip("\n")


@pytest.mark.skipif(shutil.which("terraform") is None or not Path("/opt/tf-plugins").is_dir(),
                    reason="terraform or its offline provider mirror (/opt/tf-plugins) is not installed")
def test_terraform_validates(tmp_path):
    for path in AWS.glob("*.tf*"):
        shutil.copy(path, tmp_path)
    env = {**os.environ, "TF_CLI_CONFIG_FILE": "/dev/null"}
    run = dict(cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    init = subprocess.run(["terraform", "init", "-backend=false", "-input=false", "-plugin-dir=/opt/tf-plugins"], **run)
    if init.returncode:
        pytest.skip(f"the offline mirror lacks a pinned provider: {init.stderr[-300:]}")
    validate = subprocess.run(["terraform", "validate", "-no-color"], **run)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    fmt = subprocess.run(["terraform", "fmt", "-check", "-diff", "-no-color", str(AWS)], **run)
    assert fmt.returncode == 0, fmt.stdout


def test_checkov_finds_nothing_and_every_skip_says_why():
    """Open-source checkov reports no severities, so no failed check at all is allowed."""
    out = subprocess.run([tool("checkov"), "-d", str(AWS), "--framework", "terraform", "--output", "json",
                          "--skip-download"], capture_output=True, text=True, timeout=300)
    report = json.loads(out.stdout)
    failed = [(c["check_id"], c["resource"]) for c in report["results"]["failed_checks"]]
    assert not failed, f"checkov failed checks: {failed}"
    assert report["summary"]["passed"] > 10
    for check in report["results"]["skipped_checks"]:
        assert len(check["check_result"].get("suppress_comment", "")) > 20, f"skip of {check['check_id']} gives no reason"


def test_ansible_lint_is_clean():
    out = subprocess.run([tool("ansible-lint"), "--offline", "--nocolor", "--profile", "production", "ansible/"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]


def local_inventory(directory):
    cluster = load_module(ROOT / "infra" / "local" / "cluster.py", "skewbench_local_cluster")
    state = {"dir": str(directory), "mode": "netns", "encrypt": False,
             "nodes": cluster.layout("netns", "10.77.5", "sbr", 3, broker=True)}
    args = type("Args", (), {"cores": 4, "memory": "2g", "executor_memory": "1g"})
    return cluster.write_inventory(state, args)


def cloud_inventory(directory):
    path = directory / "inventory.yml"
    shutil.copy(HERE / "cloud_inventory.yml", path)
    return path


@pytest.mark.parametrize("make_inventory", [local_inventory, cloud_inventory], ids=["local", "cloud"])
def test_every_template_renders(tmp_path, make_inventory):
    inventory = make_inventory(tmp_path)
    out_dir = tmp_path / "rendered"
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible" / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    run = subprocess.run([tool("ansible-playbook"), "-i", str(inventory), str(HERE / "render.yml"),
                          "-e", f"render_dir={out_dir}", "-e", f"ansible_python_interpreter={LINT_BIN / 'python'}"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    hosts = yaml.safe_load(inventory.read_text())["all"]["children"]
    secret = (tmp_path / "spark.secret").read_text().strip()
    assert len(secret) == 48
    master_ip = next(iter(hosts["masters"]["hosts"].values()))["node_ip"]
    for group in hosts.values():
        for name, host in group["hosts"].items():
            node = out_dir / name
            env_sh = (node / "spark-env.sh").read_text()
            defaults = (node / "spark-defaults.conf").read_text()
            assert f"SPARK_LOCAL_IP={host['node_ip']}\n" in env_sh
            assert f"spark://{master_ip}:7077" in defaults
            assert re.search(rf"spark\.authenticate\.secret\s+{secret}\n", defaults)
            assert re.search(r"spark\.authenticate\s+true\n", defaults)
            encrypted = make_inventory is cloud_inventory  # VMs always; a local cluster when asked (ENCRYPT=1)
            assert re.search(rf"spark\.network\.crypto\.enabled\s+{str(encrypted).lower()}\n", defaults)
            assert "Restart=on-failure" in (node / "unit.service").read_text()
            launcher = (node / "launcher.sh").read_text()
            assert (f"ip netns exec {host['netns']}" in launcher) == bool(host["netns"])
            syntax = subprocess.run(["sh", "-n", str(node / "launcher.sh")], capture_output=True, text=True)
            assert syntax.returncode == 0, syntax.stderr
    if "brokers" in hosts:  # the broker listens on its node's address only, and its password is only hashed
        cluster = load_module(ROOT / "infra" / "local" / "cluster.py", "skewbench_local_cluster")
        (name, host), = hosts["brokers"]["hosts"].items()
        conf = (out_dir / name / "redis.conf").read_text()
        password = (tmp_path / "broker.secret").read_text().strip()
        assert len(password) == 48 and password not in conf and password != secret
        for line in (f"bind {host['node_ip']}", f"port {cluster.BROKER_PORT}", "protected-mode yes", "user default off",
                     "appendonly yes", "set-proc-title no",
                     f"user {cluster.BROKER_USER} on #{hashlib.sha256(password.encode()).hexdigest()} ~skewbench:* "):
            assert f"\n{line}" in conf, line


def test_metrics_agent_moves_an_older_layout_aside(tmp_path):
    agent = load_module(ROOT / "ansible" / "roles" / "metrics" / "files" / "skewbench_metrics.py", "agent")
    out = tmp_path / "resources.csv"
    out.write_text(",".join(agent.COLUMNS) + "\n1,n,2,worker,0.5,100,90\n")
    agent.retire_other_layout(out)
    assert out.exists()  # the current layout: appended to
    out.write_text("time,node,pid,role,cpu_percent,rss_bytes\n1,n,2,worker,0.5,100\n")
    agent.retire_other_layout(out)
    assert not out.exists() and len(list(tmp_path.glob("resources-*.csv.old"))) == 1


def test_metrics_agent_names_roles_and_samples_its_own_namespace(tmp_path):
    agent = load_module(ROOT / "ansible" / "roles" / "metrics" / "files" / "skewbench_metrics.py", "agent")
    java = ["/usr/bin/java", "-cp", "x"]
    assert agent.role_of(java + ["org.apache.spark.deploy.worker.Worker", "spark://m:7077"]) == "worker"
    assert agent.role_of(java + ["org.apache.spark.executor.CoarseGrainedExecutorBackend"]) == "executor"
    assert agent.role_of(["python3", "-m", "pyspark.daemon"]) == "python_worker"
    assert agent.role_of(["python3", "-m", "skewbench.bench.spark.daemon"]) == "python_worker"
    assert agent.role_of(["python3", "-m", "pytest"]) is None
    # A stand-in "Python worker" below tmp_path is found in scope dir and not when it runs elsewhere.
    child = subprocess.Popen([sys.executable, "-c", "import time; print(flush=True); time.sleep(30)", "pyspark.daemon"],
                             cwd=tmp_path, stdout=subprocess.PIPE)
    child.stdout.readline()  # its interpreter is up: just after exec its memory is still mostly shared pages
    try:
        netns = os.stat("/proc/self/ns/net").st_ino
        rows = agent.sample({}, "n1", "dir", str(tmp_path), netns)
        assert [(r[1], r[2], r[3]) for r in rows] == [("n1", child.pid, "python_worker")]
        assert rows[0][5] > 1_000_000 and 0 < rows[0][6] <= rows[0][5]  # RSS and PSS in bytes
        cheap = agent.sample({}, "n1", "dir", str(tmp_path), netns, pss=False)
        assert cheap[0][5] > 1_000_000 and cheap[0][6] == ""  # no PSS in this round
        assert agent.sample({}, "n1", "dir", str(tmp_path / "other"), netns) == []
        assert child.pid in [r[2] for r in agent.sample({}, "n1", "netns", "/", netns)]
    finally:
        child.kill()
        child.wait()
    # A JVM's child between fork and exec has its parent's command line: only the parent counts.
    import psutil  # from .venv-infra (the infra_venv fixture)

    forks = "import os, time; os.fork() or print(flush=True); time.sleep(30)"
    jvm = subprocess.Popen([sys.executable, "-c", forks, "CoarseGrainedExecutorBackend"], cwd=tmp_path,
                           stdout=subprocess.PIPE)
    jvm.stdout.readline()
    try:
        rows = agent.sample({}, "n1", "dir", str(tmp_path), netns)
        assert [(r[2], r[3]) for r in rows] == [(jvm.pid, "executor")]
    finally:
        for proc in psutil.Process(jvm.pid).children():
            proc.kill()
        jvm.kill()
        jvm.wait()

