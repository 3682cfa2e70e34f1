"""Workload SPECs: ``name`` or ``name:param=value,...`` → a seeded :class:`~skewbench.stream.Stream`.

Every workload is a function ``f(messages, seed, **params)`` registered with :func:`workload`; its
keyword defaults are the parameters a SPEC may set, and their types are the types a SPEC value is
converted to, each number checked against the range the workload declares for it
(:class:`~skewbench.bounds.Range`), so ``zipf:z=banana``, ``zipf:z=nan`` and ``zipf:keys=1e12`` fail before
anything runs or is allocated; so does a stream longer than :data:`~skewbench.bounds.MAX_MESSAGES` (or, for a
workload that makes its stream whole in memory, :data:`~skewbench.bounds.MAX_IN_MEMORY`).  It returns a
:class:`~skewbench.stream.Stream`, or — synthetic streams — a
:class:`~skewbench.workloads.synthetic.Draws` that can also generate itself piece by piece, which
:func:`parse` does for streams longer than :data:`GENERATE_ABOVE`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

from skewbench.bounds import MAX_IN_MEMORY, MAX_MESSAGES, BoundsError, Range
from skewbench.stream import GeneratedStream, Stream

#: Longer synthetic streams are generated piece by piece each time they are read (the simulator's
#: memory is then bounded by the key space); shorter ones once, in memory (~50 bytes a message),
#: since a study simulates one stream many times and generating is slower than routing.
GENERATE_ABOVE = 25_000_000


class WorkloadError(ValueError):
    """A bad SPEC, parameter or input file: reported to the user in one line."""


@dataclass(frozen=True)
class Workload:
    name: str
    make: Callable[..., Stream]
    doc: str
    defaults: dict
    messages: int | None  # default stream length; None = the input decides (files)
    bounds: dict[str, Range]  # the range of each numeric parameter
    most: int  # the longest stream it may make (whole in memory: MAX_IN_MEMORY)


_WORKLOADS: dict[str, Workload] = {}


def workload(name: str, bounds: dict[str, Range] | None = None, whole: bool = False):
    """Decorator: register ``make(messages, seed, **params)`` under ``name``; ``bounds``: the range of each
    numeric parameter (every one needs one); ``whole``: it makes its stream at once, in memory."""

    def register(make):
        signature = inspect.signature(make).parameters
        defaults = {p.name: p.default for p in signature.values() if p.kind is p.KEYWORD_ONLY}
        unbounded = [k for k, v in defaults.items() if _numeric(v) and k not in (bounds or {})]
        if unbounded:
            raise TypeError(f"workload {name!r}: give the range of parameter {unbounded[0]!r} in bounds=")
        doc = (make.__doc__ or "").strip().splitlines()[0]
        _WORKLOADS[name] = Workload(name, make, doc, defaults, signature["messages"].default, dict(bounds or {}),
                                    MAX_IN_MEMORY if whole else MAX_MESSAGES)
        return make

    return register


def available() -> dict[str, tuple[str, dict]]:
    """``{name: (one-line description, {parameter: default})}`` for every workload."""
    return {w.name: (w.doc, dict(w.defaults)) for w in _WORKLOADS.values()}


def _numeric(default) -> bool:
    return isinstance(default, (int, float)) and not isinstance(default, bool)


def bounds_of(name: str) -> dict[str, Range]:
    """The range of each numeric parameter of workload ``name``."""
    return dict(_WORKLOADS[name].bounds)


def _convert(chosen: Workload, key: str, text: str):
    default = chosen.defaults[key]
    if isinstance(default, bool):
        if text.lower() not in ("0", "1", "true", "false", "yes", "no"):
            raise WorkloadError(f"{chosen.name}: parameter {key} must be 0 or 1 (true/false, yes/no), got "
                                f"{text!r}")
        return text.lower() in ("1", "true", "yes")
    if not _numeric(default):
        return text
    try:
        return chosen.bounds[key].parse(text)
    except BoundsError as exc:
        raise WorkloadError(f"{chosen.name}: parameter {key} {exc}") from None


def split_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"zipf:z=1.0,keys=10"`` → ``("zipf", {"z": "1.0", "keys": "10"})``."""
    name, _, rest = spec.strip().partition(":")
    params: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise WorkloadError(f"bad workload SPEC {spec!r}: expected name:param=value,..., got {item!r}")
        params[key.strip()] = value.strip()
    return name.strip(), params


def parse(spec: str, messages: int | None = None, seed: int = 0, *,
          lazy: bool | None = None) -> Stream | GeneratedStream:
    """Generate (or load) the stream a SPEC names; ``messages`` overrides the default length.

    ``lazy``: return a :class:`~skewbench.stream.GeneratedStream` (pieces generated when read) if
    the workload can draw its keys piece by piece (synthetic ones), or a :class:`Stream` in
    memory (``False``); ``None`` chooses lazy above :data:`GENERATE_ABOVE` messages.

    >>> parse("zipf:z=1.2,keys=50", messages=1000, seed=1).summary()["messages"]
    1000
    >>> type(parse("zipf:keys=100", messages=10**9)).__name__
    'GeneratedStream'
    """
    name, raw = split_spec(spec)
    if name not in _WORKLOADS:
        raise WorkloadError(f"unknown workload {name!r}; known workloads: {' '.join(sorted(_WORKLOADS))}")
    chosen = _WORKLOADS[name]
    unknown = set(raw) - set(chosen.defaults)
    if unknown:
        known = ", ".join(chosen.defaults) or "none"
        raise WorkloadError(f"{name}: unknown parameter {sorted(unknown)[0]!r}; its parameters: {known}")
    params = {k: _convert(chosen, k, v) for k, v in raw.items()}
    length = chosen.messages if messages is None else messages
    if length is not None:
        try:
            Range(1, chosen.most, integer=True).check(length)
        except BoundsError as exc:
            raise WorkloadError(f"{name}: messages {exc}") from None
    try:
        made = chosen.make(messages=length, seed=seed, **params)
    except WorkloadError:
        raise
    except ValueError as exc:
        raise WorkloadError(f"{name}: {exc}") from None
    if isinstance(made, Stream):
        return _named(made, spec)
    whole = lambda: _named(made.stream(), spec)  # noqa: E731
    if lazy or (lazy is None and made.messages > GENERATE_ABOVE):
        return made.generated(spec, whole)
    return whole()


def _named(stream: Stream, spec: str) -> Stream:
    return Stream(spec, stream.ids, stream.labels, stream.times, stream.split_ids, stream.payload, stream.rate)
