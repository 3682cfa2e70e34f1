"""A local Spark cluster for the pipeline tests, brought up once per session through the same make
targets as tests/infra/test_local_cluster.py (whose ``make`` helper is reused), with its own folder,
subnet and name prefix so it never touches a developer's cluster; torn down at the end.
"""
import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKERS, CORES = 2, 2


def _infra_cluster_tests():
    spec = importlib.util.spec_from_file_location("skewbench_infra_cluster_tests",
                                                  ROOT / "tests/infra/test_local_cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """The driver configuration folder (SPARK_CONF_DIR) of a running 2-worker × 2-core cluster with a broker."""
    if shutil.which("java") is None and os.geteuid() != 0:
        pytest.skip("Java is missing and only root may install it: sudo apt-get install openjdk-17-jre-headless, "
                    "or run as root (the cluster's Ansible installs it)")
    infra = _infra_cluster_tests()
    net, prefix = infra.free_slot(8, 18, 28, 38)
    directory = tmp_path_factory.mktemp("spark-cluster")
    # With the broker (BROKER=1): the tests of the broker source use its Redis (Ansible installs it).
    options = {"CLUSTER_NET": net, "CLUSTER_PREFIX": prefix, "WORKERS": WORKERS, "CORES": CORES, "BROKER": 1}
    try:  # make takes the last of repeated variables: these override the infra tests' own
        up = infra.make("cluster-up", directory, timeout=1500, **options)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        assert json.loads((directory / "state.json").read_text())["nodes"]["master"]["ip"]
        yield directory / "loadgen" / "conf"
    finally:
        infra.make("cluster-down", directory, **options)
