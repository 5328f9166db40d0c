"""Where an array lives: a container URL plus the dataset inside it.

Three spellings name the same dataset, as blosc2 users expect: ``file.nwb::/acquisition/x``,
the slash form ``file.nwb/acquisition/x`` (split after the container's suffix, or after a DANDI
``…/assets/<id>/download/``) and a ``dataset=`` argument. A container whose name tells no
format is asked for its first bytes (``sniff``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from shadowzarr_store.remote.errors import AddressError, SourceFormatError

__all__ = ["FORMAT_SUFFIXES", "Address", "Sniff", "SourceFormat", "parse_address"]

type SourceFormat = Literal["hdf5", "tiff", "zarr", "references"]

FORMAT_SUFFIXES: dict[str, SourceFormat] = {
    ".h5": "hdf5",
    ".hdf5": "hdf5",
    ".hdf": "hdf5",
    ".he5": "hdf5",
    ".nwb": "hdf5",
    ".mat": "hdf5",
    ".nc": "hdf5",
    ".tif": "tiff",
    ".tiff": "tiff",
    ".ome.tif": "tiff",
    ".ome.tiff": "tiff",
    ".zarr": "zarr",
    ".json": "references",
    ".shadowzarr": "references",
}
_SUFFIX = re.compile(
    r"(" + "|".join(re.escape(s) for s in sorted(FORMAT_SUFFIXES, key=len, reverse=True)) + r")"
    r"(?=/|$)",
    re.IGNORECASE,
)
_DANDI_DOWNLOAD = re.compile(
    r"^https?://[^/]+/api/(?:dandisets/[^/]+/versions/[^/]+/)?assets/[^/]+/download/"
)

type Sniff = Callable[[str], SourceFormat | None]
"""The format of a container told from its first bytes (None: not one we read)."""


@dataclass(frozen=True, slots=True)
class Address:
    """A container (URL or local path), its format and the dataset path inside it ("" = root)."""

    container: str
    format: SourceFormat
    dataset: str

    def __str__(self) -> str:
        return f"{self.container}::/{self.dataset}" if self.dataset else self.container


def parse_address(
    source: str | os.PathLike[str],
    *,
    dataset: str | None = None,
    source_format: SourceFormat | None = None,
    sniff: Sniff | None = None,
) -> Address:
    """Split ``source`` into container and dataset and tell the container's format: from
    ``source_format``, the container's suffix, or else ``sniff(container)``.

    Raises
    ------
    AddressError
        Two different datasets are named, or the format cannot be told.
    """
    text = os.fspath(source)
    container, separator, inner = text.partition("::")
    named = _clean(inner) if separator else None
    if not separator and source_format is None:
        container, named = _split_slash_form(text)
    elif not separator:
        container, named = text, None
    if dataset is not None:
        if named and _clean(dataset) != named:
            raise AddressError(f"{text!r} names {named!r} but dataset={dataset!r}")
        named = _clean(dataset)
    if not container:
        raise AddressError(f"no container in {text!r}")
    kind = source_format or _format_of(container)
    if kind is None and sniff is not None:
        kind = sniff(container)
    if kind is None:
        told = "its name or its first bytes" if sniff is not None else "its name"
        raise (SourceFormatError if sniff is not None else AddressError)(
            f"cannot tell the format of {container!r} from {told}; pass source_format="
            "'hdf5', 'tiff', 'zarr' or 'references'"
        )
    return Address(container=container, format=kind, dataset=named or "")


def _clean(path: str) -> str:
    return "/".join(part for part in path.split("/") if part)


def _split_slash_form(text: str) -> tuple[str, str | None]:
    """``…/file.h5/a/b`` → (``…/file.h5``, ``a/b``): the last container suffix ends the URL;
    ``…/assets/<id>/download/a/b`` → (``…/assets/<id>/download/``, ``a/b``)."""
    dandi = _DANDI_DOWNLOAD.match(text)
    if dandi is not None and "?" not in text:
        return text[: dandi.end()], _clean(text[dandi.end() :]) or None
    bare, mark, query = text.partition("?")
    matches = list(_SUFFIX.finditer(bare))
    if not matches:
        return text, None
    end = matches[-1].end()
    # A query string (a presigned URL's signature) belongs to the container, not the dataset.
    return bare[:end] + mark + query, _clean(bare[end:]) or None


def _format_of(container: str) -> SourceFormat | None:
    path = container.split("?", 1)[0].rstrip("/").lower()
    for suffix, kind in sorted(FORMAT_SUFFIXES.items(), key=lambda item: -len(item[0])):
        if path.endswith(suffix):
            return kind
    if "://" not in path and os.path.isdir(container):
        if os.path.exists(os.path.join(container, "refs.json")):
            return "references"
        if os.path.exists(os.path.join(container, "zarr.json")):
            return "zarr"
    return None
