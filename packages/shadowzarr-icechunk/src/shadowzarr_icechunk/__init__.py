"""shadowzarr-icechunk: reference file systems ↔ Icechunk repositories, and VirtualiZarr
ManifestStores → reference file systems."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from shadowzarr_spec import ReferenceFileSystem

from shadowzarr_icechunk.errors import (
    MissingVirtualChunkContainerError,
    SelectionNotSupportedError,
)
from shadowzarr_icechunk.icechunk import (
    icechunk_to_rfs,
    prepare_conversion,
    required_containers,
    rfs_to_icechunk,
    write_conversion,
)
from shadowzarr_icechunk.manifests import rfs_to_manifest_store
from shadowzarr_icechunk.reading import open_icechunk_repository, opening_code
from shadowzarr_icechunk.virtualizarr import manifest_store_to_rfs, virtual_array

if TYPE_CHECKING:
    import icechunk as icechunk_module

__version__ = "0.1.0"

__all__ = [
    "MissingVirtualChunkContainerError",
    "SelectionNotSupportedError",
    "icechunk_to_rfs",
    "manifest_store_to_rfs",
    "open_icechunk_repository",
    "opening_code",
    "required_containers",
    "rfs_to_icechunk",
    "rfs_to_manifest_store",
    "virtual_array",
    "write_icechunk_repository",
]


def write_icechunk_repository(
    rfs: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any],
    path: str | os.PathLike[str],
    *,
    copy_selections: bool = False,
    message: str = "Add references (shadowzarr convert)",
) -> icechunk_module.Repository:
    """Create a repository on the local filesystem at ``path`` holding ``rfs``, committed.

    It gets a virtual chunk container for each server and local folder the references point
    into (see :func:`required_containers`), authorized for reading.
    """
    import icechunk

    from shadowzarr_icechunk.locations import file_url_path

    conversion = prepare_conversion(rfs, copy_selections=copy_selections, url_for=None)
    config = icechunk.RepositoryConfig.default()
    authorize: dict[str, Any] = {}
    for prefix in conversion.prefixes:
        folder = file_url_path(prefix)
        store: Any
        if folder is not None:
            store = icechunk.local_filesystem_store(folder)
            authorize[prefix] = icechunk.credentials.LocalFileSystemAccess
        elif prefix.startswith(("http://", "https://")):
            store = icechunk.http_store()
            authorize[prefix] = icechunk.credentials.HttpAccess
        else:
            raise MissingVirtualChunkContainerError([prefix])
        config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(prefix, store))
    repository = icechunk.Repository.create(
        icechunk.local_filesystem_storage(os.fspath(path)),
        config=config,
        authorize_virtual_chunk_access=authorize,
    )
    session = repository.writable_session("main")
    write_conversion(conversion, session)
    session.commit(message)
    return repository
