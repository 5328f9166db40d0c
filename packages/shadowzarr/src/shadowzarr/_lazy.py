"""Lazy re-exports: ``import shadowzarr`` imports nothing heavy, and a name whose sub-package is
not installed raises an ImportError that says which extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["import_module_for", "load_attribute"]

# public name -> (module that defines it, extra that installs it)
EXPORTS: dict[str, tuple[str, str | None]] = {
    **{
        name: ("shadowzarr_spec", None)
        for name in (
            "BuilderError",
            "DatasetNotFoundError",
            "GenExpressionError",
            "NotVirtualizable",
            "ReferenceFileSystem",
            "ReferenceFormatError",
            "RfsBuilder",
            "ShadowzarrError",
            "SourceChangedError",
            "SourceError",
            "SourceNotFoundError",
            "UnsafePathError",
            "UnsupportedFeatureError",
            "VirtualArray",
            "columns_selection",
            "decode_attributes",
            "parse_json",
            "stack",
        )
    },
    **{
        name: ("shadowzarr_store", None)
        for name in (
            "LocalCache",
            "RfsStore",
            "load_rfs",
            "materialize",
            "open_rfs",
            "session_traffic",
            "write_rfs",
        )
    },
    "open_array": ("shadowzarr.remote_array", None),
    **{
        name: ("shadowzarr_store.remote", None)
        for name in ("AddressError", "CachePolicy", "OfflineError", "RemoteArray")
    },
    "generate_rfs": ("shadowzarr_hdf5", "hdf5"),
    "generate_rfs_tiff": ("shadowzarr_tiff", "tiff"),
    "generate_rfs_neo": ("shadowzarr_neo", "neo"),
    "virtual_arrays_neo": ("shadowzarr_neo", "neo"),
    "read_nwb": ("shadowzarr_nwb", "nwb"),
    "open_nwb": ("shadowzarr_nwb", "nwb"),
    "generate_catalog": ("shadowzarr_catalog", "catalog"),
}

# import name of a package -> the extra that installs it
EXTRAS = {
    "shadowzarr_spec": None,
    "shadowzarr_store": None,
    "shadowzarr_hdf5": "hdf5",
    "shadowzarr_tiff": "tiff",
    "shadowzarr_neo": "neo",
    "shadowzarr_nwb": "nwb",
    "shadowzarr_icechunk": "icechunk",
    "shadowzarr_catalog": "catalog",
}


def import_module_for(module: str, extra: str | None, wanted: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (exc.name == module or module.startswith(exc.name + ".")):
            raise
        hint = (
            f"pip install 'shadowzarr[{extra}]'"
            if extra
            else f"pip install {module.replace('_', '-')}"
        )
        raise ImportError(
            f"{wanted} needs {module.replace('_', '-')}, which is not installed: {hint}"
        ) from exc


def load_attribute(name: str) -> Any:
    module, extra = EXPORTS[name]
    value = getattr(import_module_for(module, extra, f"shadowzarr.{name}"), name, None)
    if value is None:
        raise ImportError(
            f"shadowzarr.{name} is not available in the installed {module} (upgrade it)"
        )
    return value
