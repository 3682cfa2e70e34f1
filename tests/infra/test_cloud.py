"""The real-cloud path, end to end: Terraform VMs on AWS → Ansible → a job on every worker → destroy.

Opt-in only: it costs money and needs an account. Set SKEWBENCH_CLOUD_TESTS=1, AWS credentials
(AWS_PROFILE or AWS_ACCESS_KEY_ID), terraform on PATH and infra/aws/terraform.tfvars (copy the
.example). The VMs are destroyed at the end even when a step fails.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AWS = ROOT / "infra" / "aws"

pytestmark = [pytest.mark.cloud, pytest.mark.slow]


def missing():
    if os.environ.get("SKEWBENCH_CLOUD_TESTS") != "1":
        return "opt-in: set SKEWBENCH_CLOUD_TESTS=1 (creates billed AWS VMs)"
    if not (os.environ.get("AWS_PROFILE") or os.environ.get("AWS_ACCESS_KEY_ID")):
        return "no AWS credentials (AWS_PROFILE or AWS_ACCESS_KEY_ID)"
    if shutil.which("terraform") is None:
        return "terraform is not on PATH"
    if not (AWS / "terraform.tfvars").exists():
        return "infra/aws/terraform.tfvars is missing (copy terraform.tfvars.example)"
    return None


def make(target, timeout=3600):
    return subprocess.run(["make", "--no-print-directory", "-f", "infra/cluster.mk", target, "CLOUD=aws"], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def aws_cluster():
    why = missing()
    if why:
        pytest.skip(why)
    try:
        up = make("cluster-up")
        assert up.returncode == 0, up.stdout[-4000:] + up.stderr[-4000:]
        yield AWS / "inventory.yml"
    finally:
        down = make("cluster-down")
        assert down.returncode == 0, down.stdout[-4000:] + down.stderr[-4000:]


def test_job_runs_on_every_worker_vm(aws_cluster):
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible" / "ansible.cfg")}
    ansible = [str(ROOT / ".venv-infra/bin/ansible"), "-i", str(aws_cluster)]
    job = subprocess.run(ansible + ["loadgens", "--become", "--become-user", "spark", "-m", "ansible.builtin.shell",
                                    "-a", "SPARK_CONF_DIR={{ node_dir }}/conf {{ skewbench_venv }}/bin/python "
                                          "{{ node_dir }}/bin/smoke_job.py --tasks 32 | tail -1",
                                    "-e", "@" + str(ROOT / "ansible/group_vars/all.yml")],
                         env=env, capture_output=True, text=True, timeout=900)
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-4000:]
    result = json.loads(job.stdout.strip().splitlines()[-1])
    hosts = json.loads(subprocess.run(["terraform", f"-chdir={AWS}", "output", "-json", "workers"],
                                      capture_output=True, text=True, check=True).stdout)
    workers = {vm["private"] for vm in hosts.values()}
    assert set(result["executor_tasks"]) == workers and set(result["task_nodes"]) == workers, result
    status = make("cluster-status", timeout=300)
    assert status.returncode == 0 and "ALIVE" in status.stdout, status.stdout
