"""The papers' published numbers (transcribed in ``published.yaml``), for side-by-side comparison."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml

PUBLISHED = Path(__file__).with_name("published.yaml")


class _Loader(yaml.SafeLoader):
    """Safe loader that reads ``22.0e6`` as a float (YAML 1.2), not as a string (PyYAML's YAML 1.1)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d+\.\d*|\.\d+|\d+)[eE][-+]?\d+$"),
    list("-+.0123456789"))


@cache
def published() -> dict:
    """All transcribed figures, keyed by paper (``pkg``, ``gedik``, ``fang``, ``dkg`` ...)."""
    return yaml.load(PUBLISHED.read_text(), Loader=_Loader)
