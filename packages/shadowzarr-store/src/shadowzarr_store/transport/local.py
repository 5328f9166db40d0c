"""Local files: byte ranges, and what identifies a file (size, mtime, a sampled hash).

A local file has no ETag. Its size is checked on every read (one ``fstat`` of the open file);
its identity once per source per transport (per store open): when the recorded ``mtime_ns``
equals the file's, it is the file the references were made for; when it differs (a copy, a
``touch``, a rewrite) the ``sample_hash`` decides, and a file whose samples differ raised
`SourceChangedError`. The samples are `SAMPLE_COUNT` blocks of `SAMPLE_BYTES` at fixed
positions, so the check costs a few small reads however large the file.
"""

from __future__ import annotations

import hashlib
import os

from shadowzarr_spec import SourceChangedError, SourceError, SourceInfo, SourceNotFoundError

from shadowzarr_store.transport.errors import RangeNotSatisfiable
from shadowzarr_store.transport.locations import local_path

__all__ = ["SAMPLE_BYTES", "SAMPLE_COUNT", "check_identity", "probe_local", "read_local"]

SAMPLE_COUNT = 8
SAMPLE_BYTES = 4096


def sample_hash(stream: int, size: int) -> str:
    """``sha256:<hex>`` of the samples of an open file descriptor (see the spec README)."""
    digest = hashlib.sha256(size.to_bytes(8, "little"))
    if size <= SAMPLE_COUNT * SAMPLE_BYTES:
        digest.update(os.pread(stream, size, 0))
    else:
        last = size - SAMPLE_BYTES
        for i in range(SAMPLE_COUNT):
            digest.update(os.pread(stream, SAMPLE_BYTES, last * i // (SAMPLE_COUNT - 1)))
    return f"sha256:{digest.hexdigest()[:32]}"


def _open(location: str) -> tuple[int, str]:
    path = local_path(location)
    try:
        return os.open(path, os.O_RDONLY), path
    except FileNotFoundError as exc:
        raise SourceNotFoundError(f"no such source file: {path}") from exc
    except IsADirectoryError as exc:
        raise SourceError(f"source {path} is a directory") from exc
    except PermissionError as exc:
        raise SourceError(f"cannot read source {path}: permission denied") from exc
    except OSError as exc:
        raise SourceError(f"cannot open source {path}: {exc.strerror}") from exc
    except ValueError as exc:  # a path holding a NUL byte
        raise SourceError(f"cannot open source {path!r}: {exc}") from exc


def probe_local(location: str) -> SourceInfo:
    """The identity of a local file now: size, mtime and sampled hash."""
    stream, path = _open(location)
    try:
        stat = os.fstat(stream)
        if not os.path.isfile(path):
            raise SourceError(f"source {path} is not a regular file")
        return SourceInfo(stat.st_size, None, stat.st_mtime_ns, sample_hash(stream, stat.st_size))
    finally:
        os.close(stream)


def check_identity(location: str, recorded: SourceInfo) -> None:
    """Raise `SourceChangedError` unless the file is the one ``recorded`` describes."""
    if recorded.mtime_ns is None and recorded.sample_hash is None and recorded.size is None:
        return
    stream, path = _open(location)
    try:
        stat = os.fstat(stream)
        _check_size(path, stat.st_size, recorded.size)
        if recorded.mtime_ns is None or stat.st_mtime_ns == recorded.mtime_ns:
            return
        if recorded.sample_hash is None:
            raise SourceChangedError(
                f"{path} was modified after the references were made (mtime differs, and no "
                "sample_hash was recorded to tell a copy from a rewrite)"
            )
        if sample_hash(stream, stat.st_size) != recorded.sample_hash:
            raise SourceChangedError(
                f"{path} was rewritten after the references were made (its sampled bytes "
                "differ): make the references again"
            )
    finally:
        os.close(stream)


def _check_size(path: str, size: int, expected: int | None) -> None:
    if expected is not None and size != expected:
        raise SourceChangedError(
            f"{path} is {size} bytes, but the references were made for {expected} bytes: "
            "the file has changed"
        )


def read_local(
    location: str, ranges: list[tuple[int, int | None]], expected_size: int | None = None
) -> tuple[list[bytes], int]:
    """Bytes ``[start, end)`` of each range (``end`` None: to the end; fewer when the file ends
    first) and the file's size; blocking, so callers on an event loop use a worker thread."""
    stream, path = _open(location)
    try:
        size = os.fstat(stream).st_size
        _check_size(path, size, expected_size)
        out = []
        for start, end in ranges:
            if end is not None and end > start and start >= size:
                raise RangeNotSatisfiable(
                    f"{path}: bytes {start}-{end - 1} start past the end of the file ({size} bytes)"
                )
            # Never ask for more than the file holds: read() allocates what it is asked for.
            stop = size if end is None else min(end, size)
            out.append(os.pread(stream, max(stop - start, 0), start) if stop > start else b"")
        return out, size
    except OSError as exc:
        if isinstance(exc, SourceError):
            raise
        raise SourceError(f"reading {path} failed: {exc.strerror}") from exc
    finally:
        os.close(stream)
