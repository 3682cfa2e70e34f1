"""The papers' published numbers (transcribed in ``published.yaml``), for side-by-side comparison."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

PUBLISHED = Path(__file__).with_name("published.yaml")


@cache
def published() -> dict:
    """All transcribed figures, keyed by paper (``pkg``, ``gedik``, ``fang``, ``dkg`` ...)."""
    return yaml.safe_load(PUBLISHED.read_text())
