"""Byte ranges of local files, read in a worker thread so the event loop never blocks."""

from __future__ import annotations

import asyncio
import os
import urllib.parse
import urllib.request

from shadowzarr_spec import SourceChangedError, SourceError, SourceNotFoundError

from shadowzarr_store.fetch.errors import RangeNotSatisfiable

__all__ = ["is_local", "local_path", "read_local"]


def is_local(url: str) -> bool:
    return url.startswith("file://") or "://" not in url


def local_path(url: str) -> str:
    """The filesystem path of a local path or ``file://`` URL."""
    if url.startswith("file://"):
        return urllib.request.url2pathname(urllib.parse.urlparse(url).path)
    return url


def _read(path: str, start: int, end: int | None, expected_size: int | None) -> bytes:
    try:
        with open(path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            if expected_size is not None and size != expected_size:
                raise SourceChangedError(
                    f"{path} is {size} bytes, but the references were made for "
                    f"{expected_size} bytes: the file has changed"
                )
            if end is not None and end > start and start >= size:
                raise RangeNotSatisfiable(
                    f"{path}: bytes {start}-{end - 1} start past the end of the file "
                    f"({size} bytes)"
                )
            stream.seek(min(start, size))
            # Never ask read() for more than the file holds: it allocates what it is asked for.
            return stream.read(-1 if end is None else max(min(end, size) - start, 0))
    except FileNotFoundError as exc:
        raise SourceNotFoundError(f"no such source file: {path}") from exc
    except IsADirectoryError as exc:
        raise SourceError(f"source {path} is a directory") from exc
    except PermissionError as exc:
        raise SourceError(f"cannot read source {path}: permission denied") from exc
    except SourceError:
        raise  # ours (a changed file, a range past the end), an OSError too
    except OSError as exc:  # not a directory, name too long, a loop of links, …
        raise SourceError(f"cannot read source {path!r}: {exc.strerror or exc}") from exc
    except ValueError as exc:  # a path holding a NUL byte
        raise SourceError(f"cannot read source {path!r}: {exc}") from exc


async def read_local(
    url: str, start: int, end: int | None, expected_size: int | None = None
) -> bytes:
    """Bytes ``[start, end)`` of a local file (fewer when the file ends first)."""
    return await asyncio.to_thread(_read, local_path(url), start, end, expected_size)
