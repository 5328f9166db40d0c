"""Where a store may read: local files and an allow-list of URL prefixes.

References are data from someone else. One loaded from a URL must not make the reader open its
own local files, and a service reading references for users can name the only places requests
may go (against server-side request forgery), redirects included.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from shadowzarr_spec import SourceAccessError, UnsafePathError

from shadowzarr_store.fetch.local import is_local, local_path

if TYPE_CHECKING:
    from shadowzarr_spec import ReferenceFileSystem

    from shadowzarr_store.options import StoreOptions

__all__ = ["AccessPolicy"]


@dataclass(frozen=True, slots=True)
class _Prefix:
    scheme: str
    netloc: str
    path: str

    @classmethod
    def parse(cls, prefix: str) -> _Prefix:
        parts = urlsplit(prefix)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"allowed_urls entries must be http(s) URL prefixes, got {prefix!r}")
        return cls(parts.scheme, parts.netloc.lower(), parts.path)

    def admits(self, url: str) -> bool:
        parts = urlsplit(url)
        return (
            parts.scheme == self.scheme
            and parts.netloc.lower() == self.netloc
            and parts.path.startswith(self.path)
        )


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """Checks each location before it is read; refusals are `SourceAccessError`."""

    local_files: bool
    prefixes: tuple[_Prefix, ...] | None

    @classmethod
    def for_references(cls, rfs: ReferenceFileSystem, options: StoreOptions) -> AccessPolicy:
        """Local files are allowed unless the references came from a URL or the options say no."""
        local = options.allow_local_files
        if local is None:
            local = rfs.base is None or "://" not in rfs.base
        prefixes = None
        if options.allowed_urls is not None:
            prefixes = tuple(_Prefix.parse(prefix) for prefix in options.allowed_urls)
        return cls(local_files=local, prefixes=prefixes)

    def check(self, location: str) -> None:
        if is_local(location):
            if not self.local_files:
                raise SourceAccessError(
                    f"{location}: reading local files is not allowed for these references "
                    "(pass allow_local_files=True to allow it)"
                )
            return
        if self.prefixes is not None and not any(p.admits(location) for p in self.prefixes):
            raise SourceAccessError(f"{location}: not under any of the allowed_urls")

    def check_index(self, location: str, base: str | None) -> None:
        """An index chunk: allowed like a source, and a local one must stay inside ``base``.

        Symlinks are resolved first, so a link inside the reference directory cannot lead out.
        """
        self.check(location)
        if not is_local(location):
            return
        if base is None or "://" in base:
            raise UnsafePathError(f"local index {location!r} outside of any reference directory")
        root = os.path.realpath(base)
        resolved = os.path.realpath(local_path(location))
        if os.path.commonpath([root, resolved]) != root:
            raise UnsafePathError(
                f"index chunk {location!r} resolves to {resolved!r}, outside the reference "
                f"directory {root!r}"
            )
