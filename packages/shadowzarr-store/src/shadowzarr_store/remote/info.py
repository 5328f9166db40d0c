"""What ``remote.info`` shows: one readable summary of a remote array, and the formatting of
its fields (sizes in binary units, codec names, the data files the references record)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shadowzarr_spec.units import format_bytes

from shadowzarr_store.remote.export import scrub_url

if TYPE_CHECKING:
    from shadowzarr_spec import ReferenceFileSystem

__all__ = [
    "RemoteInfo",
    "codec_name",
    "data_files",
    "format_cap",
    "is_local_folder",
]


@dataclass(frozen=True, slots=True)
class RemoteInfo:
    """What ``remote.info`` shows: one readable summary (``print(remote.info)``)."""

    items: tuple[tuple[str, str], ...]

    def __str__(self) -> str:
        width = max(len(name) for name, _ in self.items)
        return "\n".join(f"{name:<{width}} : {value}" for name, value in self.items)

    def __repr__(self) -> str:
        return str(self)

    def __getitem__(self, name: str) -> str:
        return dict(self.items)[name]

    def _repr_html_(self) -> str:
        from shadowzarr_store.remote.summary_html import info_html

        return info_html(self.items)


def is_local_folder(url: str) -> bool:
    return "://" not in url and os.path.isdir(url)


def data_files(rfs: ReferenceFileSystem) -> str:
    """The source files the references record (the first, with its size, and how many)."""
    if not rfs.sources:
        return "none recorded"
    url, info = next(iter(rfs.sources.items()))
    shown = scrub_url(url) + ("" if info.size is None else f" ({format_bytes(info.size)})")
    more = len(rfs.sources) - 1
    return shown + (f" and {more} more" if more else "")


def codec_name(codec: Any) -> str:
    to_dict = getattr(codec, "to_dict", None)
    if callable(to_dict):
        try:
            described = to_dict()
        except (TypeError, ValueError, NotImplementedError):
            described = None
        if isinstance(described, dict) and isinstance(described.get("name"), str):
            return str(described["name"])
    name = type(codec).__name__
    codec_id = getattr(codec, "codec_id", None) or getattr(codec, "codec_name", None)
    return str(codec_id) if codec_id else name


def format_cap(cap: int | None) -> str:
    if cap is None:
        return "unbounded"
    return "no cache" if cap == 0 else format_bytes(cap)
