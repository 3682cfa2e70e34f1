"""A file's format and compression from its suffixes, and its decompressed bytes.

Its own module: which bytes a file holds does not depend on how they are then parsed.

gzip, bz2 and xz are read by Python's modules, which detect truncation; zstd and lz4 by pyarrow.
A damaged file, or a codec this Python or pyarrow lacks, fails with one :class:`WorkloadError`
line that says how to decompress it instead.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import pyarrow as pa

from skewbench.workloads.registry import WorkloadError

try:  # optional parts of a Python build
    import bz2
except ImportError:  # pragma: no cover
    bz2 = None
try:
    import lzma
except ImportError:  # pragma: no cover
    lzma = None

FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet",
           ".txt": "text", ".log": "text"}
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".lzma": "xz", ".zst": "zstd", ".zstd": "zstd",
                ".lz4": "lz4"}
UNSUPPORTED = {".zip": "zip", ".7z": "7-Zip", ".rar": "RAR", ".z": "compress (.Z)", ".br": "brotli",
               ".sz": "snappy", ".tar": "tar"}
_ARROW_CODECS = ("zstd", "lz4")  # no stdlib module reads these; gzip/bz2/xz use Python's (which detect truncation)
DAMAGED = (OSError, EOFError, zlib.error, pa.ArrowException, *((lzma.LZMAError,) if lzma else ()))


def first_line(exc: BaseException) -> str:
    """The first line of an error's message, for a one-line WorkloadError."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def detect(file: Path, fmt: str = "") -> tuple[str, str | None]:
    """``(format, compression)`` of a file from its suffixes: ``trace.tsv.gz`` → ``("tsv", "gzip")``."""
    suffix = file.suffix.lower()
    codec = COMPRESSIONS.get(suffix)
    inner = Path(file.stem).suffix.lower() if codec else suffix
    for part in (suffix, inner):
        if part in UNSUPPORTED:
            raise WorkloadError(f"file: {file.name} is a {UNSUPPORTED[part]} file, which file: cannot read; "
                                f"unpack it, or compress it with gzip, bzip2, xz, zstd or lz4")
    fmt = fmt or FORMATS.get(inner, "text")
    if fmt not in ("csv", "tsv", "parquet", "text"):
        raise WorkloadError(f"file: unknown format {fmt!r}; use csv, tsv, parquet or text")
    return fmt, codec


def _arrow_codec_available(codec: str) -> bool:
    return pa.Codec.is_available(codec)


def opener(file: Path, codec: str):
    """A function opening ``file`` as a binary stream of its decompressed bytes."""
    python = {"gzip": gzip, "bz2": bz2, "xz": lzma}.get(codec)
    if python is not None:
        return lambda: python.open(file, "rb")
    if codec == "bz2" and _arrow_codec_available("bz2"):
        return lambda: pa.input_stream(str(file), compression="bz2")
    tool = {"gzip": "gzip", "bz2": "bzip2", "xz": "xz"}.get(codec, codec)
    lacks = f"this pyarrow has no {codec} codec" if codec in _ARROW_CODECS else f"this Python has no {'lzma' if codec == 'xz' else codec} module"
    if codec in _ARROW_CODECS and _arrow_codec_available(codec):
        return lambda: pa.input_stream(str(file), compression=codec)
    raise WorkloadError(f"file: cannot read {file.name}: {lacks}; decompress it first (e.g. `{tool} -d {file.name}`)")


def decompress(file: Path, codec: str, lines: int | None = None) -> bytes:
    """The decompressed content of ``file`` (at least its first ``lines`` lines, if given).

    A damaged file, or a codec this Python or pyarrow lacks, is one WorkloadError line.
    """
    open_file = opener(file, codec)
    try:
        with open_file() as handle:
            if lines is None:
                return handle.read_buffer().to_pybytes() if isinstance(handle, pa.NativeFile) else handle.read()
            return read_lines(handle, lines)
    except DAMAGED as exc:
        raise WorkloadError(f"file: cannot decompress {file.name} as {codec}: {first_line(exc)}") from None


def read_lines(handle, lines: int) -> bytes:
    """Bytes from ``handle`` until they hold ``lines`` newlines (or the end)."""
    parts, seen, size = [], 0, 1 << 16
    while seen < lines:
        part = handle.read(size)
        if not part:
            break
        parts.append(part)
        seen += part.count(b"\n")
        size = min(size * 2, 1 << 26)
    return b"".join(parts)
