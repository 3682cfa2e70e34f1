"""Heterogeneous workers: a worker-speed profile, and what it does to a run's busiest worker.

None of the seed papers measures workers of unequal speed, but every commodity cluster has them (a noisy
neighbour, an older VM, a throttled core).  A profile names the slow workers and their speed as a share
of the others'::

    ""         every worker at speed 1 (homogeneous)
    "1@0.5"    one worker at half speed
    "20%@0.5"  one worker in five at half speed (at least one)
    "2@0.5,1@0.8"  two workers at half speed, the next one at 0.8 ("2@0.5+1@0.8" in a scheme's parameters)

The slow workers are the first ones (worker 0, 1, ...): worker 0 exists under every W a schedule goes
through, so a profile means the same machines before and after a scale-out.  A copy on a worker of speed
*s* costs ``1 / s`` times what it costs on the others: on the cluster the injected per-copy delay is
divided by *s* on that worker (:mod:`skewbench.bench.spark.workers`); the simulator weighs each worker's
load by ``1 / s`` (its *time*), and so does the load a scheme told the workers' true loads is told — a
probe reports how long a worker is busy, not how many messages it got.

Which worker is slow matters under hashing (the slow one may or may not hold the hottest key), which is
why the choice is fixed rather than drawn: every scheme meets the same slow machines.
"""

from __future__ import annotations

import math

import numpy as np

from skewbench.bounds import BoundsError, Range

#: Speeds a profile may give (a worker 100× slower than the rest is a failed one, not a slow one).
SLOWEST, FASTEST = 0.01, 100.0
_SPEED, _PERCENT = Range(SLOWEST, FASTEST), Range(0, 100, above=True)


class SpeedError(ValueError):
    """A profile that cannot be read: one line saying what is wrong and how to write it."""


def parse(profile: str, workers: int) -> np.ndarray:
    """Every worker's speed under ``profile`` (module docstring) for ``workers`` workers."""
    speeds = np.ones(workers)
    at = 0
    for part in (p.strip() for p in profile.replace("+", ",").split(",") if p.strip()):
        count, speed = _part(part, workers)
        if at + count > workers:
            raise SpeedError(f"speed profile {profile!r} names {at + count} slow workers, but there are only "
                             f"{workers}")
        speeds[at:at + count] = speed
        at += count
    return speeds


def _part(part: str, workers: int) -> tuple[int, float]:
    """``COUNT@SPEED`` or ``PERCENT%@SPEED`` → (workers, speed)."""
    how_many, sep, speed_text = part.partition("@")
    percent = how_many.endswith("%")
    try:
        if not sep:
            raise ValueError
        speed = float(speed_text)
        count = float(how_many[:-1]) if percent else int(how_many)
    except ValueError:
        raise SpeedError(f"speed profile part {part!r}: write COUNT@SPEED or PERCENT%@SPEED, e.g. 1@0.5 (one "
                         f"worker at half speed) or 20%@0.5") from None
    try:
        _SPEED.check(speed)
        if percent:  # of the workers, at least one
            count = max(1, math.floor(_PERCENT.check(count) * workers / 100 + 0.5))
        elif count < 1:
            raise BoundsError
    except BoundsError:
        raise SpeedError(f"speed profile part {part!r}: the count must be >= 1 (a percentage in 0..100) and the "
                         f"speed within {SLOWEST:g}..{FASTEST:g}") from None
    return count, speed


def check(profiles: list[str], workers: list[int]) -> None:
    """Every profile applies to every worker count: else :class:`SpeedError` naming the first W it does not."""
    for profile in profiles:
        for w in workers:
            try:
                parse(profile, w)
            except SpeedError as exc:
                raise SpeedError(f"W = {w}: {exc}") from None


def busy_times(copies: np.ndarray, speeds: np.ndarray) -> np.ndarray:
    """Each worker's time in units of one copy at speed 1 (``copies``: shape ... × W)."""
    return copies / speeds[: copies.shape[-1]]


def time_over_ideal(loads: np.ndarray, speeds: np.ndarray) -> float:
    """The busiest worker's time over what a split in proportion to speed would give every worker:
    1 is perfect; on equal workers it is max/mean of the loads."""
    speeds = speeds[: len(loads)]
    ideal = loads.sum() / speeds.sum()
    return float(busy_times(loads, speeds).max() / ideal) if ideal > 0 else float("nan")


def speed_share(equal: float, slow: float, speeds: np.ndarray) -> float:
    """A run's throughput with the workers' ``speeds`` as a share of the same run's on equal workers, where the
    busiest worker's time alone decides it, from the two runs' :func:`time_over_ideal` (``equal``, ``slow``):
    ``max_i L_i`` over ``max_i L_i / s_i``.  A split in proportion to speed reaches ``Σ s_i / W``."""
    return equal * speeds.sum() / (slow * len(speeds))


def untold(params: str) -> str:
    """A scheme's parameters without the workers' capacities it was told (``capacity=...``): what its run on
    equal workers was given."""
    return ",".join(p for p in params.split(",") if p and not p.startswith("capacity="))


def beside_equal_twin(table, same: list[str], values: list[str]):
    """The rows of ``table`` (a DataFrame) with slow workers, each beside the ``values`` of its twin on equal
    workers (columns ``<value>_equal``, NaN where no twin ran): the row with the same ``same`` factors and no
    ``slow`` profile.  A scheme told the slow workers' capacities is paired with itself untold."""
    key = [c for c in same if c != "params"] + ["_untold"]
    marked = table.assign(_untold=table["params"].fillna("").map(untold), slow=table["slow"].fillna(""))
    equal = (marked.loc[marked["slow"] == "", key + values]
             .rename(columns={v: f"{v}_equal" for v in values}))
    slow = marked[marked["slow"] != ""]
    paired = slow.reset_index().merge(equal, on=key, how="left").set_index("index")
    return paired.rename_axis(table.index.name).drop(columns="_untold")
