"""Where a TIFF is read from and where its references point.

A URL is read over HTTP range requests unless a local copy is given; a local path is read
directly and referenced by its absolute path unless ``url`` says where it will be served.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

import requests
from shadowzarr_spec import SourceChangedError, SourceNotFoundError

from shadowzarr_tiff.http_file import HttpRangeFile
from shadowzarr_tiff.ifd_chain import prefetch_ifd_chain

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["OpenedSource", "is_url", "open_source"]


@dataclass(frozen=True, slots=True)
class OpenedSource:
    handle: str | IO[bytes]
    """What tifffile opens: a local path or a file object."""
    name: str
    ref_url: str
    """What the references point to."""
    size: int
    etag: str | None
    read_ranges: Callable[[list[tuple[int, int]]], list[bytes]]
    """Bytes of [start, stop) ranges of the file read (not of ``ref_url``)."""


def is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


@contextlib.contextmanager
def open_source(
    url_or_path: str | os.PathLike[str],
    *,
    url: str | None,
    local_path: str | os.PathLike[str] | None,
    read_ahead: int,
    max_concurrency: int,
) -> Iterator[OpenedSource]:
    text = os.fspath(url_or_path)
    if is_url(text) and local_path is None:
        remote = HttpRangeFile(text, max_concurrency=max_concurrency, read_ahead=read_ahead)
        try:
            prefetch_ifd_chain(remote)
            yield OpenedSource(
                cast("IO[bytes]", remote),
                Path(text.split("?")[0]).name,
                url or text,
                remote.size,
                remote.etag,
                remote.read_ranges,
            )
        finally:
            remote.close()
        return
    local = Path(local_path if local_path is not None else text)
    try:
        size = local.stat().st_size
    except FileNotFoundError:
        raise SourceNotFoundError(f"no such file: {local}") from None
    if is_url(text):
        etag = _remote_etag(text, size)
        yield OpenedSource(str(local), local.name, url or text, size, etag, _file_reader(local))
        return
    yield OpenedSource(
        str(local), local.name, url or str(local.resolve()), size, None, _file_reader(local)
    )


def _file_reader(path: Path) -> Callable[[list[tuple[int, int]]], list[bytes]]:
    def read_ranges(ranges: list[tuple[int, int]]) -> list[bytes]:
        out = []
        with path.open("rb") as handle:
            for start, stop in ranges:
                handle.seek(start)
                out.append(handle.read(stop - start))
        return out

    return read_ranges


def _remote_etag(url: str, local_size: int) -> str | None:
    """The ETag of the file the local copy stands for, checking that the sizes agree; None when
    the server cannot be asked (the copy is used offline)."""
    try:
        response = requests.head(url, allow_redirects=True, timeout=30)
    except requests.RequestException:
        return None
    if response.status_code != 200:
        return None
    length = response.headers.get("Content-Length")
    if length is not None and int(length) != local_size:
        raise SourceChangedError(
            f"{url} holds {length} bytes but the local copy holds {local_size}"
        )
    return response.headers.get("ETag")
