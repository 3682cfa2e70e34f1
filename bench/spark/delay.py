"""The injected per-message work of a worker (the PKG paper's 0.1–1 ms CPU delay per message).

Two ways to spend ``count × delay`` seconds:

* ``spin`` — a busy loop on the thread's CPU clock (:func:`time.thread_time`): every message costs
  ``delay`` seconds of CPU, like the paper's busy-waiting bolt.  Honest only when every worker slot
  has a core of its own (``slots <= cores``); otherwise slots steal each other's cores.
* ``sleep`` — wall time, slept until the batch's total is spent: one ``time.sleep`` per batch, not
  one per message, because at W = 100 the wake-ups of 2 ms chunks cost 15 s of CPU per 40 s batch
  on 2 cores, which the engine's own tasks then waited for.  Lets many worker slots share a small
  machine; the worker handles its rows after the burn, so when inside the batch the time passes is
  not observable.

``spin`` aims at absolute targets (message *k* is done at ``start + k × delay``), so the errors of
single waits do not add up; :func:`burn` returns the seconds actually spent on the clock it used, and
the pipeline records intended vs actual per batch and worker.
"""

from __future__ import annotations

import time

MODES = ("spin", "sleep")


def default_mode(slots: int, cores: int) -> str:
    """``spin`` when every worker slot can have its own core, else ``sleep``."""
    return "spin" if slots <= cores else "sleep"


def burn(count: int, delay: float, mode: str, since: float | None = None) -> float:
    """Spend ``delay`` seconds per message for ``count`` messages; return the seconds spent.

    ``spin`` returns thread CPU seconds, ``sleep`` wall seconds.  ``since`` (sleep only, a
    :func:`time.perf_counter` reading): the work began then, not now.  Workers sharing a Spark task
    (the ``pack`` lever) each sleep until the task's start plus their own work, as on a slot of their
    own; a worker is late only when the ones before it in the task took longer, and the seconds
    returned (from ``since``) say so.

    >>> round(burn(20, 0.001, "sleep"), 2)
    0.02
    """
    if mode not in MODES:
        raise ValueError(f"unknown delay mode {mode!r}; use one of {', '.join(MODES)}")
    if count <= 0 or delay <= 0:
        return 0.0
    if mode == "spin":
        clock = time.thread_time
        start = clock()
        for k in range(1, count + 1):  # one wait per message, on absolute targets
            target = start + k * delay
            while clock() < target:
                pass
        return clock() - start
    start = time.perf_counter() if since is None else since
    sleep_until(start + count * delay)
    return time.perf_counter() - start


def sleep_until(target: float) -> None:
    """Sleep until the :func:`time.perf_counter` reading ``target`` (at once if it has passed)."""
    while (remaining := target - time.perf_counter()) > 0:  # sleep may return early (a signal)
        time.sleep(remaining)
