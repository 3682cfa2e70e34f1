"""The infra tests need Ansible and psutil (.venv-infra, infra/requirements.txt: what brings up the cluster)
and the static checks' ansible-lint, checkov and python-hcl2 (.venv-infra-lint, infra/requirements-lint.txt:
checkov pins old versions of common libraries, so they stay out of the project's .venv). The first infra
test builds both with make (about a minute, once) and makes their pure-Python modules (hcl2, psutil)
importable here, behind the project's.
"""
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INFRA_VENV = ROOT / ".venv-infra"
LINT_VENV = ROOT / ".venv-infra-lint"


@pytest.fixture(scope="session", autouse=True)
def infra_venv():
    """Build both venvs if needed (make decides), then let tests import psutil and hcl2 from them."""
    built = subprocess.run(["make", "--no-print-directory", "-f", "infra/cluster.mk", "infra-setup",
                            "infra-lint-setup"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, f"make infra-setup failed:\n{built.stdout[-2000:]}{built.stderr[-3000:]}"
    version = sysconfig.get_python_version()
    for venv in (INFRA_VENV, LINT_VENV):
        site = venv / "lib" / f"python{version}" / "site-packages"
        assert site.is_dir(), f"{site} is missing: {venv.name} was built by another Python than {version}"
        if str(site) not in sys.path:
            sys.path.append(str(site))  # appended: the project's own packages still win
    return INFRA_VENV
