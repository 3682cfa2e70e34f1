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


SOURCES = ("table", "prose", "caption", "plot")
KINDS = ("value", "claim")
DIRECTIONS = ("less", "more", "about_equal", "not_less", "least", "most", "increasing", "decreasing", "flat", "low")
QUALIFIERS = ("exact", "about", "at_least", "at_most", "up_to", "range")
FIELDS = ("paper", "seed", "id", "where", "source", "kind", "value", "value_max", "qualifier", "unit", "direction",
          "subject", "than", "over", "text", "measurable", "why")
_META = ("seed", "sections", "entries")  # per-paper keys that are not named result sections
_UNIT_SUFFIXES = {"_pct": "%", "_ms": "ms", "_s": "s", "_rps": "records/s"}


def entries() -> list[dict]:
    """Every published entry as one flat record (``FIELDS``), across the whole file.

    The fidelity table needs one row per published number or claim, whether it was transcribed into the
    older named sections (read by code under fixed key paths) or into a paper's ``entries`` list; the
    paper's ``sections`` metadata says how each named section's leaves are cited and which are setup.
    """
    return [record for paper, body in published().items() for record in _paper_entries(paper, body)]


def counts() -> dict:
    """Totals (entries, measurable, claims, values) per paper and under ``all``, to report coverage and
    to let a test catch deletions."""
    totals: dict[str, dict[str, int]] = {}
    for record in entries():
        for key in (record["paper"], "all"):
            total = totals.setdefault(key, dict.fromkeys(("entries", "measurable", "claims", "values"), 0))
            total["entries"] += 1
            total["measurable"] += record["measurable"]
            total["claims"] += record["kind"] == "claim"
            total["values"] += record["kind"] == "value"
    return totals


def _paper_entries(paper: str, body: dict):
    """One paper's records: its named sections (each must be described in ``sections``), then ``entries``."""
    for name, section in body.items():
        if name in _META:
            continue
        spec = body["sections"][name]
        if spec.get("role") == "definitions":
            continue
        if isinstance(section, list) and all(isinstance(item, dict) and "id" in item for item in section):
            yield from (_record(paper, body["seed"], spec, {**item, "id": f"{name}.{item['id']}"}) for item in section)
        else:
            yield from (_leaf(paper, body["seed"], name, path, value, spec) for path, value in _leaves(section, spec))
    yield from (_record(paper, body["seed"], {}, item) for item in body.get("entries", []))


def _record(paper: str, seed: str, spec: dict, item: dict) -> dict:
    """An entry-style mapping completed to ``FIELDS``: the section's where/source by default, a claim when
    it has a direction, measurable unless it says why not."""
    record = dict.fromkeys(FIELDS)
    record.update(paper=paper, seed=seed, where=spec.get("where"), source=spec.get("source"), measurable=True)
    record.update(item)
    record["kind"] = item.get("kind") or ("claim" if "direction" in item else "value")
    return record


def _leaves(section, spec: dict, path: tuple = (), header: list | None = None):
    """(key path, value) for each leaf of a named section: notes are skipped, the ``axis`` header labels the
    positions of its sibling lists (Table II's workers), ``label`` names the rows of a list of mappings."""
    if isinstance(section, dict):
        header = section.get(spec.get("axis"), header)
        for key, value in section.items():
            if key not in spec.get("notes", ()) and key != spec.get("axis"):
                yield from _leaves(value, spec, path + (str(key),), header)
    elif isinstance(section, list) and section and isinstance(section[0], dict):
        label = spec["label"]
        for row in section:
            rest = {k: v for k, v in row.items() if k != label}
            yield from _leaves(rest, spec, path + (f"{label}{row[label]}",), header)
    elif isinstance(section, list) and header is not None:
        for position, value in zip(header, section, strict=True):
            yield path + (f"{spec['axis_label']}{position}",), value
    else:
        yield path, section


def _leaf(paper: str, seed: str, name: str, path: tuple, value, spec: dict) -> dict:
    """A named-section leaf as a value record: id from the key path, unit from ``units``, the key's suffix
    or the section, setup when the section or the key is an input."""
    setup_why = spec.get("setup_keys", {}).get(path[0]) or (spec.get("why") if spec.get("role") == "setup" else None)
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    return _record(paper, seed, spec, {
        "id": ".".join((name, *path)), "kind": "value", "value": number, "unit": _unit(path, spec),
        "qualifier": _qualifier(path, spec),
        "text": f"{spec.get('text', name)}: {' '.join(path)} = {value}",
        "measurable": setup_why is None, "why": setup_why})


def _qualifier(path: tuple, spec: dict) -> str | None:
    """A leaf's qualifier: named in the section's ``qualifiers`` (by dotted path or key: "more than 8" is
    at_least), else the section's, else exact for a table."""
    own = spec.get("qualifiers", {})
    for key in (".".join(path), path[-1], path[0]):
        if key in own:
            return own[key]
    return spec.get("qualifier", "exact" if spec.get("source") == "table" else None)


def _unit(path: tuple, spec: dict) -> str | None:
    """Unit of a leaf: named in the section's ``units`` (by leaf or first key), else from a ``_pct``/``_ms``/
    ``_s``/``_rps`` suffix in its path, else the section's ``unit``."""
    units = spec.get("units", {})
    for key in (path[-1], path[0]):
        if key in units:
            return units[key]
    for key in reversed(path):
        for suffix, unit in _UNIT_SUFFIXES.items():
            if key.endswith(suffix) or f"{suffix}_" in key:
                return unit
    return spec.get("unit")
