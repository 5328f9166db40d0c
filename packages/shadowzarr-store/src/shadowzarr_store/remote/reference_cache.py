"""References already generated, kept on disk by source identity so a reopen reads no headers.

``directory/<address digest>/<identity digest>/`` holds one reference directory (``refs.json``
plus chunk manifests) per identity the source has had; ``latest`` names the one seen last, which is
what an open that trusts the source to be immutable uses without asking the server anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from shadowzarr_spec import ReferenceFormatError, read_local_rfs, write_rfs

from shadowzarr_store.local_cache import default_cache_dir
from shadowzarr_store.remote.identity import SourceIdentity

if TYPE_CHECKING:
    from shadowzarr_spec import ReferenceFileSystem

__all__ = ["ReferenceCache"]

_LATEST = "latest.json"
_ARRAY_PATH = "array_path.txt"
_FORMAT_VERSION = 1


class ReferenceCache:
    """Generated references on disk, keyed by what was asked for and the source's identity.

    Parameters
    ----------
    directory
        Where references are kept (default: ``<default_cache_dir()>/references``).
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = (
            Path(directory) if directory is not None else default_cache_dir() / "references"
        )

    def _folder(self, request: str) -> Path:
        digest = hashlib.sha256(f"{_FORMAT_VERSION}\x00{request}".encode()).hexdigest()[:32]
        return self.directory / digest

    def latest(self, request: str) -> tuple[SourceIdentity, ReferenceFileSystem, str] | None:
        """The references generated last for ``request``, with the identity they were made for."""
        try:
            recorded = json.loads((self._folder(request) / _LATEST).read_text())
            identity = SourceIdentity(recorded["url"], recorded["etag"], recorded["size"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        found = self.get(request, identity)
        return None if found is None else (identity, *found)

    def get(self, request: str, identity: SourceIdentity) -> tuple[ReferenceFileSystem, str] | None:
        """The references for ``request`` made from the source as ``identity`` describes it,
        and the path of the requested array inside them."""
        target = self._folder(request) / identity.digest
        if not (target / _ARRAY_PATH).is_file():
            return None
        try:
            return read_local_rfs(target), (target / _ARRAY_PATH).read_text()
        except (OSError, ReferenceFormatError, ValueError):
            shutil.rmtree(target, ignore_errors=True)  # damaged: generate again
            return None

    def put(
        self, request: str, identity: SourceIdentity, rfs: ReferenceFileSystem, path: str
    ) -> Path:
        """Keep ``rfs`` (and forget references of other identities of the same request)."""
        folder = self._folder(request)
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.iterdir():
            if stale.is_dir() and stale.name != identity.digest:
                shutil.rmtree(stale, ignore_errors=True)
        target = write_rfs(rfs, folder / identity.digest)
        (target / _ARRAY_PATH).write_text(path)  # written last: its presence marks a whole entry
        latest = {"url": identity.url, "etag": identity.etag, "size": identity.size}
        staging = folder / f".{_LATEST}.{os.getpid()}"
        staging.write_text(json.dumps(latest))
        staging.replace(folder / _LATEST)
        return target

    def discard(self, request: str) -> None:
        shutil.rmtree(self._folder(request), ignore_errors=True)
