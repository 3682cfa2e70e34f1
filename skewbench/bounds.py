"""Numbers users give — command-line options, study-file fields, workload SPEC and scheme parameters — checked in
one place: a finite number of the right kind within its range, or one line saying what it may be.

Every count has a most: a stream, a key space or a worker count is refused before anything is allocated for it,
never attempted (a value of NaN or infinity is refused everywhere; YAML's ``.nan`` and ``.inf`` too).

>>> Range(1, 10, integer=True).parse("5")
5
>>> str(Range(0, 1))
'a number in 0..1'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

#: Messages of a stream generated piece by piece (synthetic workloads in the simulator; TW's full trace is 1.2e9).
MAX_MESSAGES = 10**12
#: Messages of a stream held whole in memory (~50 bytes each): a Spark run's, a file's, an in-memory generator's.
MAX_IN_MEMORY = 10**9
#: Distinct keys a generator draws from (a few arrays of 8 bytes per key; the TW stand-in has 31M).
MAX_KEYS = 10**8
#: Workers (and sources) a simulation may have; a run on the cluster may have fewer (:data:`MAX_CLUSTER_WORKERS`).
MAX_WORKERS = 10_000
MAX_CLUSTER_WORKERS = 1000
#: Micro-batches any count of them may reach (periods, intervals, aggregation and rebalance periods, warm-up).
MAX_BATCHES = 10**6
MAX_DELAY_MS = 100
#: Offered messages per second (a billion: far above any cluster's rate).
MAX_RATE = 1e9
MAX_REPEATS = 1000
MAX_SEED = 2**32 - 1  # the hash functions take 32-bit seeds


class BoundsError(ValueError):
    """A value that is not a number of the right kind, not finite or out of range."""


@dataclass(frozen=True)
class Range:
    """Finite numbers from ``low`` to ``high`` (None: unbounded on that side; ``above``: ``low`` itself excluded),
    integers only when ``integer``."""

    low: float | None = None
    high: float | None = None
    integer: bool = False
    above: bool = False

    def __str__(self) -> str:
        kind = "an integer" if self.integer else "a number"
        low, high = (None if v is None else _shown(v) for v in (self.low, self.high))
        if low is not None and high is not None:
            return f"{kind} > {low} and <= {high}" if self.above else f"{kind} in {low}..{high}"
        if low is not None:
            return f"{kind} {'>' if self.above else '>='} {low}"
        return f"{kind} <= {high}" if high is not None else f"a finite {kind.removeprefix('a ').removeprefix('an ')}"

    def check(self, value):
        """``value`` when it is a number of this range, else :class:`BoundsError`."""
        number = isinstance(value, Real) and not isinstance(value, bool)
        if not (number and (isinstance(value, int) or math.isfinite(value))) \
                or (self.integer and value != int(value)) or not self._within(value):
            raise BoundsError(f"must be {self}, got {echo(value)}")
        return int(value) if self.integer else value

    def parse(self, text: str):
        """The number ``text`` writes (``1000``, ``1_000``, ``1e3`` for an integer), checked."""
        try:
            value = float(text)
            if self.integer:
                value = int(text) if text.strip().lstrip("+-").replace("_", "").isdigit() else value
        except ValueError:
            raise BoundsError(f"must be {self}, got {echo(text)}") from None
        try:
            return self.check(value)
        except BoundsError:
            raise BoundsError(f"must be {self}, got {echo(text)}") from None

    def schema(self) -> dict:
        """The range as a JSON Schema (which lets NaN through: :func:`non_finite` finds it)."""
        schema = {"type": "integer" if self.integer else "number"}
        if self.low is not None:
            schema["exclusiveMinimum" if self.above else "minimum"] = self.low
        if self.high is not None:
            schema["maximum"] = self.high
        return schema

    def _within(self, value) -> bool:
        if self.low is not None and (value <= self.low if self.above else value < self.low):
            return False
        return self.high is None or value <= self.high


def _shown(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() and abs(value) < 1e16 else f"{value:g}"


def echo(value, most: int = 60) -> str:
    """``repr(value)``, cut to ``most`` characters: what a one-line message quotes of what the user gave."""
    shown = repr(value)
    return shown if len(shown) <= most else shown[:most - 3] + "..."


def non_finite(doc, path: tuple = ()):
    """``(path, value)`` of the first NaN or infinity anywhere in a parsed document (lists and mappings), or None."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return path, doc
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        found = non_finite(value, (*path, key))
        if found:
            return found
    return None


def check_schedule(schedule: dict[int, int], workers: Range, most_at: int = MAX_MESSAGES) -> None:
    """A schedule's ``{AT: W}`` (:func:`skewbench.migration.parse_schedule`): every AT in ``0..most_at``, every W
    in ``workers``, else :class:`BoundsError` naming the pair."""
    at = Range(0, most_at, integer=True)
    for when, count in schedule.items():
        for name, range_, value in (("AT", at, when), ("W", workers, count)):
            try:
                range_.check(value)
            except BoundsError as exc:
                raise BoundsError(f"{when}:{count}: {name} {exc}") from None


COUNT = Range(1, MAX_IN_MEMORY, integer=True)
SEED = Range(0, MAX_SEED, integer=True)
REPEATS = Range(1, MAX_REPEATS, integer=True)
KEYS = Range(1, MAX_KEYS, integer=True)
CLOCK_RATE = Range(0, MAX_RATE, above=True)  # a simulated clock's messages per second
