"""Opening a repository for reading with the virtual chunk containers it declares authorized.

Icechunk reads no virtual chunk until the opener authorizes its container, and a repository
written by ``shadowzarr convert`` declares one per folder or server its references point into.
These helpers authorize exactly those containers, with the no-secret credentials a reader of a
local folder or a public HTTP server needs; a container in an object store (S3, GCS, Azure)
stays unauthorized, so its chunks raise Icechunk's own error naming the prefix.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import icechunk

__all__ = ["open_icechunk_repository", "opening_code", "read_credentials"]


def read_credentials(config: icechunk.RepositoryConfig) -> dict[str, Any]:
    """Container prefix → the credential that reads it, for the local folders and HTTP
    servers the repository declares (object stores need the caller's own credentials)."""
    import icechunk

    credentials: dict[str, Any] = {}
    for prefix, container in (config.virtual_chunk_containers or {}).items():
        if isinstance(container.store, icechunk.ObjectStoreConfig.LocalFileSystem):
            credentials[prefix] = icechunk.credentials.LocalFileSystemAccess
        elif isinstance(container.store, icechunk.ObjectStoreConfig.Http):
            credentials[prefix] = icechunk.credentials.HttpAccess
    return credentials


def open_icechunk_repository(path: str | os.PathLike[str]) -> icechunk.Repository:
    """The local repository at ``path``, its local-folder and HTTP virtual chunk containers
    authorized (read with ``repository.readonly_session("main")``)."""
    import icechunk

    storage = icechunk.local_filesystem_storage(os.fspath(path))
    config = icechunk.Repository.fetch_config(storage)
    credentials = read_credentials(config) if config is not None else {}
    return icechunk.Repository.open(storage, authorize_virtual_chunk_access=credentials)


def opening_code(path: str | os.PathLike[str], prefixes: list[str]) -> list[str]:
    """Python lines that open the repository at ``path`` and read it with zarr, authorizing
    the virtual chunk containers ``prefixes`` (what ``shadowzarr convert`` prints)."""
    location = os.path.abspath(os.fspath(path))
    lines = [
        "import icechunk, zarr",
        "repo = icechunk.Repository.open(",
        f"    icechunk.local_filesystem_storage({location!r}),",
        "    authorize_virtual_chunk_access={",
    ]
    for prefix in prefixes:
        credential = "LocalFileSystemAccess" if prefix.startswith("file://") else "HttpAccess"
        lines.append(f"        {prefix!r}: icechunk.credentials.{credential},")
    lines += [
        "    },",
        ")",
        'root = zarr.open_group(repo.readonly_session("main").store, mode="r")',
        "# or: shadowzarr_icechunk.open_icechunk_repository(path), which does the same",
    ]
    return lines
