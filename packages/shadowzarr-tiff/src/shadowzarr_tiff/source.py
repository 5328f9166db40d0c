"""Where a TIFF is read from and where its references point.

A URL (http(s), s3, gs, az) is read through the store's transport unless a local copy is given;
a local path is read directly and referenced by its absolute path unless ``url`` says where it
will be served.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from shadowzarr_spec import SourceInfo, SourceNotFoundError
from shadowzarr_store.transport import RangeSource, is_local
from shadowzarr_store.transport import local_path as path_of_local

from shadowzarr_tiff.block_file import BlockFile
from shadowzarr_tiff.ifd_chain import prefetch_ifd_chain

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from shadowzarr_store.transport import TransportOptions

__all__ = ["OpenedSource", "open_source"]


@dataclass(frozen=True, slots=True)
class OpenedSource:
    handle: str | IO[bytes]
    """What tifffile opens: a local path or a file object."""
    name: str
    ref_url: str
    """What the references point to."""
    info: SourceInfo
    """What to record under ``sources`` for ``ref_url``."""
    read_ranges: Callable[[list[tuple[int, int]]], list[bytes]]
    """Bytes of [start, stop) ranges of the file read (not of ``ref_url``)."""

    @property
    def size(self) -> int:
        assert self.info.size is not None
        return self.info.size


@contextlib.contextmanager
def open_source(
    url_or_path: str | os.PathLike[str],
    *,
    url: str | None,
    local_path: str | os.PathLike[str] | None,
    read_ahead: int,
    max_concurrency: int,
    transport: TransportOptions,
) -> Iterator[OpenedSource]:
    text = os.fspath(url_or_path)
    if not is_local(text) and local_path is None:
        options = dataclasses.replace(transport, max_connections=max_concurrency)
        remote = BlockFile(text, transport=options, read_ahead=read_ahead)
        try:
            prefetch_ifd_chain(remote)
            yield OpenedSource(
                cast("IO[bytes]", remote),
                Path(text.split("?")[0]).name,
                url or text,
                SourceInfo(remote.size, remote.etag),
                _ranges(remote.source, max_gap=0),
            )
        finally:
            remote.close()
        return
    # a file:// URL is the file it names
    local = Path(local_path if local_path is not None else path_of_local(text))
    if not local.is_file():
        raise SourceNotFoundError(f"no such file: {local}")
    reader = RangeSource(local)
    # A copy of a remote file (never asked: it may be gone, or slow to refuse), or a file
    # served elsewhere: only the size says anything there; the ETag stays unknown.
    info = SourceInfo(reader.size) if not is_local(text) or url is not None else reader.info
    ref_url = url or (str(local.resolve()) if is_local(text) else text)
    yield OpenedSource(str(local), local.name, ref_url, info, _ranges(reader))


def _ranges(
    reader: RangeSource, max_gap: int | None = None
) -> Callable[[list[tuple[int, int]]], list[bytes]]:
    """[start, stop) ranges read in one round, not cached."""
    return lambda ranges: reader.fetch_many(
        [(start, stop - start) for start, stop in ranges], max_gap=max_gap
    )
