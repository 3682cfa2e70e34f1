"""The infra tests need Ansible, ansible-lint, checkov, python-hcl2 and psutil, which live in their own
venv (.venv-infra, from infra/requirements.txt: checkov pins old versions of common libraries, so they
stay out of the project's .venv). The first infra test builds it with ``make infra-setup`` (about a
minute, once) and makes its pure-Python modules (hcl2, psutil) importable here, behind the project's.
"""
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INFRA_VENV = ROOT / ".venv-infra"


@pytest.fixture(scope="session", autouse=True)
def infra_venv():
    """Build .venv-infra if needed (make decides), then let tests import hcl2 and psutil from it."""
    built = subprocess.run(["make", "--no-print-directory", "-f", "infra/cluster.mk", "infra-setup"], cwd=ROOT,
                           capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, f"make infra-setup failed:\n{built.stdout[-2000:]}{built.stderr[-3000:]}"
    version = sysconfig.get_python_version()
    site = INFRA_VENV / "lib" / f"python{version}" / "site-packages"
    assert site.is_dir(), f"{site} is missing: .venv-infra was built by another Python than {version}"
    if str(site) not in sys.path:
        sys.path.append(str(site))  # appended: the project's own packages still win
    return INFRA_VENV
