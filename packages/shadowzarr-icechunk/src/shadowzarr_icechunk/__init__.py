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
    **store_options: Any,
) -> icechunk_module.Repository:
    """Create a repository on the local filesystem at ``path`` holding ``rfs``, committed.

    It gets a virtual chunk container for each server, bucket and local folder the references
    point into (see :func:`required_containers`), authorized for the returned repository.
    ``store_options`` are `RfsStore` keyword arguments (``headers``, ``allowed_urls``,
    ``storage_options``, ``proxy``…) for what the conversion reads; an ``s3://``, ``gs://`` or
    ``az://`` container takes its region, endpoint and credentials from ``storage_options``
    (credentials are not written into the repository: a reader authorizes the container
    with its own).
    """
    import icechunk

    from shadowzarr_icechunk.containers import container_for

    conversion = prepare_conversion(
        rfs, copy_selections=copy_selections, url_for=None, **store_options
    )
    storage_options = store_options.get("storage_options")
    config = icechunk.RepositoryConfig.default()
    authorize: dict[str, Any] = {}
    for prefix in conversion.prefixes:
        store, credential = container_for(prefix, storage_options)
        authorize[prefix] = credential
        config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(prefix, store))
    repository = icechunk.Repository.create(
        icechunk.local_filesystem_storage(os.fspath(path)),
        config=config,
        authorize_virtual_chunk_access=icechunk.containers_credentials(authorize),
    )
    session = repository.writable_session("main")
    write_conversion(conversion, session)
    session.commit(message)
    return repository
