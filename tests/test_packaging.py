"""The wheel the cluster's nodes install on VMs (infra/cluster.mk) holds every package of the source tree: its
package list in pyproject.toml is kept by hand (each top-level folder is a sub-package of ``skewbench``), and the
local cluster, installed editable, would never notice a missing one."""
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_of_the_tree_is_in_the_wheel():
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_of = {folder: package for package, folder in setup["package-dir"].items()}  # top-level folders only
    tree = {".".join([package_of[top], *rest])
            for top in package_of for init in (ROOT / top).rglob("__init__.py")
            for _, *rest in [init.parent.relative_to(ROOT).parts]}
    listed = set(setup["packages"])
    assert tree - listed == set(), "packages missing from pyproject.toml's [tool.setuptools] packages"
    assert listed - tree == {"skewbench.analysis.measures", "skewbench.analysis.templates"}  # data only
