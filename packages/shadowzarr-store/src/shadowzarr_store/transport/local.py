"""Local files: byte ranges, and what identifies a file (size, mtime, a sampled hash, a stamp).

A local file has no ETag. The references record its size, ``mtime_ns`` and ``sample_hash``
(`SAMPLE_COUNT` blocks of `SAMPLE_BYTES` at fixed positions, so the check costs a few small
reads however large the file). The first read of a file by a store checks those (`pin`) and
keeps the file's `Stamp` (device, inode, size, mtime, ctime); every later read opens the file,
``fstat``s the open descriptor and reads only if the stamp is unchanged, and ``fstat``s it again
after reading: the bytes come from the file that was checked, and a file replaced (a new inode)
or rewritten (a new ctime, which no user can set back) under a long-lived store raises
`SourceChangedError` instead of handing out a mix of old and new chunks.
"""

from __future__ import annotations

import hashlib
import os
import stat as stat_module
from dataclasses import dataclass

from shadowzarr_spec import SourceChangedError, SourceError, SourceInfo, SourceNotFoundError

from shadowzarr_store.transport.errors import RangeNotSatisfiable
from shadowzarr_store.transport.locations import local_path

__all__ = [
    "SAMPLE_BYTES",
    "SAMPLE_COUNT",
    "Stamp",
    "check_identity",
    "identify_local",
    "probe_local",
    "read_local",
    "stamp_now",
]

SAMPLE_COUNT = 8
SAMPLE_BYTES = 4096


@dataclass(frozen=True, slots=True)
class Stamp:
    """What ``stat`` says of one version of a file: a rename onto it changes the inode, a
    rewrite in place the ctime (and usually the mtime)."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, status: os.stat_result) -> Stamp:
        return cls(
            status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns
        )

    def token(self) -> str:
        """The stamp as text, for a cache identity."""
        return f"{self.device}:{self.inode}:{self.size}:{self.mtime_ns}:{self.ctime_ns}"

    def differences(self, other: Stamp) -> str:
        """Which of the fields differ, in words, for an error message."""
        names = {
            "device": "device",
            "inode": "inode (replaced by another file)",
            "size": "size",
            "mtime_ns": "modification time",
            "ctime_ns": "change time (rewritten or its times reset)",
        }
        return ", ".join(
            text for name, text in names.items() if getattr(self, name) != getattr(other, name)
        )


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


def _regular(path: str, status: os.stat_result) -> Stamp:
    if not stat_module.S_ISREG(status.st_mode):
        raise SourceError(f"source {path} is not a regular file")
    return Stamp.of(status)


def probe_local(location: str) -> SourceInfo:
    """The identity of a local file now: size, mtime and sampled hash."""
    return identify_local(location)[0]


def identify_local(location: str) -> tuple[SourceInfo, Stamp]:
    """`probe_local` and the `Stamp` of the same open file, to hold later reads to."""
    stream, path = _open(location)
    try:
        stamp = _regular(path, os.fstat(stream))
        info = SourceInfo(stamp.size, None, stamp.mtime_ns, sample_hash(stream, stamp.size))
        return info, stamp
    finally:
        os.close(stream)


def _check_recorded(stream: int, path: str, size: int, mtime_ns: int, recorded: SourceInfo) -> None:
    """Raise `SourceChangedError` unless the open file is the one ``recorded`` describes: its
    size, and its sampled bytes when recorded (an equal mtime proves nothing: it can be set
    back), else its mtime."""
    _check_size(path, size, recorded.size)
    if recorded.sample_hash is not None:
        if sample_hash(stream, size) != recorded.sample_hash:
            raise SourceChangedError(
                f"{path} was rewritten after the references were made (its sampled bytes "
                "differ): make the references again"
            )
    elif recorded.mtime_ns is not None and mtime_ns != recorded.mtime_ns:
        raise SourceChangedError(
            f"{path} was modified after the references were made (mtime differs, and no "
            "sample_hash was recorded to tell a copy from a rewrite)"
        )


def check_identity(location: str, recorded: SourceInfo) -> Stamp:
    """The file's `Stamp`, after checking it is the one ``recorded`` describes
    (`SourceChangedError` if not)."""
    stream, path = _open(location)
    try:
        status = os.fstat(stream)
        stamp = _regular(path, status)
        _check_recorded(stream, path, stamp.size, stamp.mtime_ns, recorded)
        return stamp
    finally:
        os.close(stream)


def stamp_now(location: str) -> Stamp:
    """The `Stamp` of the file at ``location`` now (one ``stat``, no open)."""
    path = local_path(location)
    try:
        return _regular(path, os.stat(path))
    except FileNotFoundError as exc:
        raise SourceNotFoundError(f"no such source file: {path}") from exc
    except OSError as exc:
        raise SourceError(f"cannot stat source {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise SourceError(f"cannot stat source {path!r}: {exc}") from exc


def _check_size(path: str, size: int, expected: int | None) -> None:
    if expected is not None and size != expected:
        raise SourceChangedError(
            f"{path} is {size} bytes, but the references were made for {expected} bytes: "
            "the file has changed"
        )


def changed_under(path: str, pinned: Stamp, now: Stamp) -> SourceChangedError:
    return SourceChangedError(
        f"{path} changed since this store first read it ({pinned.differences(now)} differ): "
        "open the references again to check it against them"
    )


def read_local(
    location: str,
    ranges: list[tuple[int, int | None]],
    expected_size: int | None = None,
    *,
    recorded: SourceInfo | None = None,
    pinned: Stamp | None = None,
) -> tuple[list[bytes], int, Stamp]:
    """Bytes ``[start, end)`` of each range (``end`` None: to the end; fewer when the file ends
    first), the file's size and its `Stamp`; blocking, so callers on an event loop use a worker
    thread.

    With ``pinned``, the open file must still have that stamp; without, it is checked against
    ``recorded`` (if given) and its stamp is returned for the caller to pin. Either way the
    stamp is taken again after reading: a file rewritten while it was read raises
    `SourceChangedError`, so a mix of two versions never leaves here.
    """
    stream, path = _open(location)
    try:
        stamp = _regular(path, os.fstat(stream))
        size = stamp.size
        if pinned is not None and stamp != pinned:
            raise changed_under(path, pinned, stamp)
        _check_size(path, size, expected_size)
        if pinned is None and recorded is not None:
            _check_recorded(stream, path, size, stamp.mtime_ns, recorded)
        out = []
        for start, end in ranges:
            if end is not None and end > start and start >= size:
                raise RangeNotSatisfiable(
                    f"{path}: bytes {start}-{end - 1} start past the end of the file ({size} bytes)"
                )
            # Never ask for more than the file holds: read() allocates what it is asked for.
            stop = size if end is None else min(end, size)
            out.append(os.pread(stream, max(stop - start, 0), start) if stop > start else b"")
        after = Stamp.of(os.fstat(stream))
        if after != stamp:
            raise SourceChangedError(
                f"{path} changed while it was being read ({stamp.differences(after)} differ)"
            )
        return out, size, stamp
    except OSError as exc:
        if isinstance(exc, SourceError):
            raise
        raise SourceError(f"reading {path} failed: {exc.strerror}") from exc
    finally:
        os.close(stream)
