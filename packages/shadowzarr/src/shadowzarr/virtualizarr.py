"""``shadowzarr.virtualizarr``: VirtualiZarr both ways (``pip install shadowzarr[virtualizarr]``).

`ShadowzarrParser` is a VirtualiZarr parser built on shadowzarr's generators, so
``open_virtual_dataset(url, parser=ShadowzarrParser(), registry=registry)`` gets what
``generate_rfs`` sees (every HDF5 feature it reads, its per-dataset refusals) as a
ManifestStore. The other names (`manifest_store_to_rfs`, `rfs_to_manifest_store`,
`virtual_array`) are ``shadowzarr_icechunk``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shadowzarr._lazy import import_module_for

if TYPE_CHECKING:
    from obspec_utils.registry import ObjectStoreRegistry
    from virtualizarr.manifests import ManifestStore

__all__ = ["ShadowzarrParser", "manifest_store_to_rfs", "rfs_to_manifest_store", "virtual_array"]

_module = import_module_for(
    "shadowzarr_icechunk.virtualizarr", "virtualizarr", "shadowzarr.virtualizarr"
)
_manifests = import_module_for(
    "shadowzarr_icechunk.manifests", "virtualizarr", "shadowzarr.virtualizarr"
)
manifest_store_to_rfs = _module.manifest_store_to_rfs
rfs_to_manifest_store = _manifests.rfs_to_manifest_store
virtual_array = _module.virtual_array


class ShadowzarrParser:
    """A VirtualiZarr parser: `shadowzarr.generate_rfs` on the URL, as a ManifestStore.

    ``options`` go to ``generate_rfs`` (``headers``, ``storage_options``, ``allowed_urls``,
    ``inline_threshold``...). The registry VirtualiZarr passes reads the chunks.
    """

    def __init__(self, **options: Any) -> None:
        self.options = options

    def __call__(self, url: str, registry: ObjectStoreRegistry[Any]) -> ManifestStore:
        from shadowzarr_hdf5 import generate_rfs

        rfs = generate_rfs(url, **self.options)
        store: ManifestStore = _manifests.rfs_to_manifest_store(rfs, registry=registry)
        return store
