"""Ctrl-C (SIGINT) that stops a bench or a run wherever it lands, and never half-counts a result.

PySpark's own SIGINT handler raises ``KeyboardInterrupt`` wherever the main thread is, often inside a
Py4J call, which then leaves a ``Py4JError`` and a broken gateway instead.  While :func:`deferred` is
held, SIGINT is only noted; the holder acts on it at safe points (:meth:`Guard.check`), or at once in
the stretches that make no Spark call (:meth:`Guard.raising`: simulation, tables, the report), and at
the latest when the outermost holder ends — so a note can never be lost.  Holders nest: a run inside
a bench shares the bench's guard and leaves the note to it.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


class Guard:
    """The note of a SIGINT; ``KeyboardInterrupt`` raised where it is safe."""

    def __init__(self):
        self.seen = False
        self._raising = 0

    def note(self, *_) -> None:
        self.seen = True
        if self._raising:
            raise KeyboardInterrupt

    def check(self) -> None:
        if self.seen:
            raise KeyboardInterrupt

    @contextmanager
    def raising(self) -> Iterator[None]:
        """A stretch without Spark calls: a SIGINT noted before or during it raises at once."""
        self.check()
        self._raising += 1
        try:
            yield
        finally:
            self._raising -= 1


_active: Guard | None = None


@contextmanager
def deferred() -> Iterator[Guard]:
    """Hold SIGINT for the block (see the module docstring); a note left at its end raises there."""
    global _active
    if _active is not None:  # nested: the outer holder acts on the note
        yield _active
        return
    guard = Guard()
    if threading.current_thread() is not threading.main_thread():  # no handler can be set off the main thread
        yield guard
        return
    previous = signal.signal(signal.SIGINT, guard.note)
    _active = guard
    try:
        yield guard
    finally:
        signal.signal(signal.SIGINT, previous)
        _active = None
    guard.check()
