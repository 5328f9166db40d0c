"""Where a catalog is published: a local folder or an ``s3://``, ``gs://`` or ``az://`` prefix.

Every file is published whole. Locally a file is written under a temporary name and renamed
(references through `shadowzarr_spec.write_rfs`, which stages a directory the same way); on an
object store each file is one PUT, which S3 makes visible whole or not at all. A reference
directory's index files are PUT before its ``refs.json``, so a reader that finds ``refs.json``
finds what it names; a reader listing the prefix mid-run may see index files whose
``refs.json`` is not there yet (ignore a directory without one).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shadowzarr_spec import ReferenceFileSystem
from shadowzarr_spec import write_rfs as write_local_rfs
from shadowzarr_spec.io import reference_files
from shadowzarr_store.transport import (
    ListedObject,
    delete_objects,
    get_object,
    is_local,
    list_objects,
    local_path,
    put_objects,
    split_object_url,
)

__all__ = ["Destination", "ListedObject"]


class Destination:
    """A local folder or an object-store prefix, with the few writes a catalog makes."""

    def __init__(self, root: str | os.PathLike[str], storage_options: Mapping[str, Any] | None):
        text = os.fspath(root)
        self.local = is_local(text)
        self.root = str(Path(local_path(text)).resolve()) if self.local else text.rstrip("/")
        self._storage_options = storage_options
        if self.local:
            Path(self.root).mkdir(parents=True, exist_ok=True)

    def __str__(self) -> str:
        return self.root

    def location(self, relative: str) -> str:
        return f"{self.root}/{relative}" if not self.local else str(Path(self.root, relative))

    def write_references(
        self, rfs: ReferenceFileSystem, relative: str, manifest_threshold: int | None
    ) -> int:
        """Publish ``rfs`` at ``relative`` (``….shadowzarr`` or ``….shadowzarr.json``); returns
        the bytes written."""
        if self.local:
            target = Path(self.root, relative)
            write_local_rfs(rfs, target, manifest_threshold=manifest_threshold)
            if target.is_file():
                return target.stat().st_size
            return sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
        json_file = relative.endswith(".json")
        folder, _, name = relative.rpartition("/") if json_file else (relative, "", "")
        files = reference_files(
            rfs, json_file=json_file, name=name, manifest_threshold=manifest_threshold
        )
        put_objects(self.location(folder), files, self._storage_options)
        return sum(map(len, files.values()))

    def write_file(self, relative: str, data: bytes) -> None:
        """One file published whole (temporary name and rename; one PUT)."""
        if not self.local:
            put_objects(self.root, {relative: data}, self._storage_options)
            return
        target = Path(self.root, relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}")
        try:
            temporary.write_bytes(data)
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def write_files(self, files: Mapping[str, bytes]) -> None:
        """Several files, each published whole (one PUT each, sent together)."""
        if not self.local:
            put_objects(self.root, dict(files), self._storage_options)
            return
        for relative, data in files.items():
            self.write_file(relative, data)

    def read_file(self, relative: str) -> bytes | None:
        """A file of the destination, None when there is none."""
        if self.local:
            path = Path(self.root, relative)
            return path.read_bytes() if path.is_file() else None
        return get_object(self.location(relative), self._storage_options)

    def list_files(self, folder: str) -> list[ListedObject]:
        """The objects under ``folder`` of an object-store destination, their keys relative to
        the destination (one request per 1,000 keys)."""
        assert not self.local
        cut = len(split_object_url(self.root)[1].rstrip("/"))
        cut = cut + 1 if cut else 0
        return [
            ListedObject(o.key[cut:], o.size, o.etag)
            for o in list_objects(self.location(folder), self._storage_options)
        ]

    def delete_files(self, relatives: list[str]) -> None:
        """Delete files of an object-store destination (one request per 1,000)."""
        assert not self.local
        prefix = split_object_url(self.root)[1].rstrip("/")
        keys = [f"{prefix}/{r}" if prefix else r for r in relatives]
        for start in range(0, len(keys), 1000):
            delete_objects(self.root, keys[start : start + 1000], self._storage_options)
