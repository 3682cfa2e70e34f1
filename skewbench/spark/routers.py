"""Each input partition of a user's stream is one source, routing its rows with its own router.

As in the benchmark (:mod:`skewbench.bench.spark.routing`), a source's router keeps its own load
estimates across micro-batches.  A micro-batch that Spark runs again (a failed task, a restarted query)
must route its rows exactly as before, or a key's partial results would be split differently the second
time.  So a source's router after micro-batch *b* is saved (:meth:`SourceRouters.keep`), and batch *b*
always starts from the router saved by the newest batch before it (:meth:`SourceRouters.start`):
rerunning *b* finds the same one.  Without a folder every executor can write, each micro-batch starts
from a fresh router: deterministic too, with estimates that span one micro-batch only.
"""

from __future__ import annotations

import pickle
import re
import uuid
from pathlib import Path

import numpy as np

from skewbench.hashing import fingerprints
from skewbench.scheme import Scheme

KEEP = 3  # saved routers per source: the newest batches' (a rerun of the newest needs the one before it)


class SourceRouters:
    """The routers of every source of one query, saved in ``folder`` (None: never saved).

    >>> from skewbench.scheme import make_scheme
    >>> routers = SourceRouters(make_scheme("pkg", workers=4), folder=None)
    >>> router = routers.start(source=0, batch=0)
    >>> router.route_many(key_fingerprints(["a", "a", "a", "b"])).tolist()
    [1, 2, 1, 2]
    """

    def __init__(self, proto: Scheme, folder: str | Path | None):
        self.proto = proto
        self.folder = None if folder is None else Path(folder)

    def start(self, source: int, batch: int | None) -> Scheme:
        """Source ``source``'s router for micro-batch ``batch``: the one the newest batch before it left, or a
        fresh one (always for ``batch`` None: a static DataFrame's rows, not a micro-batch)."""
        saved = self._saved(source)
        earlier = [b for b in saved if batch is not None and b < batch]
        if earlier:
            return pickle.loads(saved[max(earlier)].read_bytes())
        return pickle.loads(pickle.dumps(self.proto)) if self.proto.adaptive else self.proto.spawn()  # spawn: no plan

    def keep(self, source: int, batch: int | None, router: Scheme) -> None:
        """Save ``router`` as it is after routing micro-batch ``batch``; forget all but the newest saved."""
        if batch is None or self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"source-{source}-batch-{batch}.pickle"
        part = path.with_name(f"{path.name}.{uuid.uuid4().hex}")  # whole or not at all for a reader
        part.write_bytes(pickle.dumps(router))
        part.replace(path)
        saved = self._saved(source)
        for old in sorted(saved)[:-KEEP]:
            saved[old].unlink(missing_ok=True)

    def _saved(self, source: int) -> dict[int, Path]:
        if self.folder is None or not self.folder.is_dir():
            return {}
        pattern = re.compile(rf"source-{source}-batch-(\d+)\.pickle")
        return {int(m.group(1)): p for p in self.folder.iterdir() if (m := pattern.fullmatch(p.name))}


def key_fingerprints(keys) -> np.ndarray:
    """The 64-bit fingerprints of a key column's values: str, bytes or int (a long column with nulls
    reaches pandas as floats); a null is fingerprint 0."""
    values = np.asarray(keys)
    if values.dtype.kind in "iu":
        return fingerprints(values)
    missing = np.array([v is None or v != v for v in values], dtype=bool)  # None, NaN
    out = np.zeros(len(values), dtype=np.uint64)
    if not missing.all():
        present = [int(v) if isinstance(v, float) else v for v in values[~missing]]
        out[~missing] = fingerprints(np.array(present, dtype=object))
    return out
