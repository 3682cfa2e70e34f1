"""Every partitioning scheme, one module each; importing this package registers them all.

See :mod:`skewbench.scheme` for the protocol and ``skewbench.scheme.REGISTRY`` for the names.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
