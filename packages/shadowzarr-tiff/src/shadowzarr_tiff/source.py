"""Where a TIFF is read from and where its references point.

A URL (http(s), s3, gs, az) is read through the store's transport unless a local copy is given;
a local path is read directly and referenced by its absolute path unless ``url`` says where it
will be served.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from shadowzarr_spec import SourceChangedError, SourceInfo, SourceNotFoundError
from shadowzarr_store.transport import RangeSource, Transport, is_local, redact, run_blocking

from shadowzarr_tiff.block_file import BlockFile
from shadowzarr_tiff.ifd_chain import prefetch_ifd_chain

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from shadowzarr_store.transport import TransportOptions

__all__ = ["OpenedSource", "open_source"]

logger = logging.getLogger(__name__)


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
                remote.read_ranges,
            )
        finally:
            remote.close()
        return
    local = Path(local_path if local_path is not None else text)
    if not local.is_file():
        raise SourceNotFoundError(f"no such file: {local}")
    reader = RangeSource(local)
    if not is_local(text):
        info = _remote_info(text, reader.size, transport)
    elif url is not None:
        info = SourceInfo(reader.size)  # served elsewhere: only the size says anything there
    else:
        info = reader.info
    ref_url = url or (str(local.resolve()) if is_local(text) else text)
    yield OpenedSource(str(local), local.name, ref_url, info, _ranges(reader))


def _ranges(reader: RangeSource) -> Callable[[list[tuple[int, int]]], list[bytes]]:
    return lambda ranges: reader.fetch_many([(start, stop - start) for start, stop in ranges])


def _remote_info(url: str, local_size: int, options: TransportOptions) -> SourceInfo:
    """Size and ETag of the file the local copy stands for, checking that the sizes agree; the
    copy's size alone when the server cannot be asked (the copy is used offline)."""

    async def probe() -> SourceInfo:
        transport = Transport(options)
        try:
            return await transport.probe(url)
        finally:
            await transport.aclose()

    try:
        info = run_blocking(probe())
    except OSError as exc:
        logger.warning("%s is not reachable (%s); recording the copy's size", redact(url), exc)
        return SourceInfo(local_size)
    if info.size is not None and info.size != local_size:
        raise SourceChangedError(
            f"{redact(url)} holds {info.size} bytes but the local copy holds {local_size}"
        )
    return info
