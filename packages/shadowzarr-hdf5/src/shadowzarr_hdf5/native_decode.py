"""Values decoded by HDF5 itself, with every filter plugin hdf5plugin ships loaded when it is
installed: the last resort for data no Zarr codec reads, and never h5py's plugin-path message.

HDF5 looks for filter plugins in ``HDF5_PLUGIN_PATH`` (default ``/usr/local/hdf5/lib/plugin``);
when a chunk needs one that is not there, h5py raises ``OSError: Can't synchronously read data
(can't open directory ...)``, which names neither the dataset nor the filter.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import h5py
from shadowzarr_spec import SourceError, UnsupportedFeatureError

from .format.messages import FilterSpec

__all__ = ["decoded_values", "load_filter_plugins"]

_PROCESS_ENDING = {32017: "SZ"}
"""Filters whose plugin (as hdf5plugin builds it) calls ``exit()`` on a stream it rejects, which
would end the generating process: never run in it."""


@functools.cache
def load_filter_plugins() -> bool:
    """Register hdf5plugin's filters with HDF5 (importing it does); False when not installed."""
    try:
        importlib.import_module("hdf5plugin")
    except ImportError:
        return False
    return True


def decoded_values(dataset: Any, path: str, filters: tuple[FilterSpec, ...]) -> Any:
    """``dataset[()]`` (an h5py dataset, or a header reader's that reads through one), read by
    HDF5 (``filters``: its pipeline); a filter HDF5 cannot apply raises UnsupportedFeatureError
    naming the dataset and its filters."""
    ending = [f"{_PROCESS_ENDING[s.code]} ({s.code})" for s in filters if s.code in _PROCESS_ENDING]
    if ending:
        raise UnsupportedFeatureError(
            f"dataset {path!r}: the {', '.join(ending)} filter plugin ends the process on data "
            "it rejects, so it is not run to decode the values"
        )
    load_filter_plugins()
    try:
        return dataset[()]
    except SourceError:
        raise  # the source could not be read: not a property of the dataset
    except OSError as exc:
        missing = [
            f"{spec.name or 'unnamed'} ({spec.code})"
            for spec in filters
            if not h5py.h5z.filter_avail(spec.code)
        ]
        if missing:
            hint = "" if load_filter_plugins() else " (pip install hdf5plugin)"
            raise UnsupportedFeatureError(
                f"dataset {path!r}: HDF5 has no filter plugin for {', '.join(missing)}{hint}"
            ) from exc
        raise UnsupportedFeatureError(f"dataset {path!r}: HDF5 cannot read it") from exc
