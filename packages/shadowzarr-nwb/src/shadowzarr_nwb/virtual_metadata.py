"""A placeholder dataset's metadata: hdmf-zarr's document, made to describe the VirtualArray.

hdmf-zarr chose the attributes (``_DTYPE``, ``unit``, ``conversion``, dimension names) and the
array's place; the VirtualArray knows how its chunks are stored. Shape and data type must agree
(otherwise pynwb converted or reshaped the data, and the references would read other values);
chunking, codecs and fill value are taken from the VirtualArray, since they describe the bytes
in the source files.
"""

from __future__ import annotations

from typing import Any

from shadowzarr_nwb.errors import VirtualDatasetMismatch

__all__ = ["STORAGE_FIELDS", "merge_array_metadata"]

STORAGE_FIELDS = ("chunk_grid", "chunk_key_encoding", "codecs", "fill_value")
"""The fields of a Zarr v3 array document that describe how the chunks are stored."""


def merge_array_metadata(
    path: str, written: dict[str, Any], virtual: dict[str, Any]
) -> dict[str, Any]:
    """hdmf-zarr's document ``written`` with the storage fields of ``virtual``."""
    if written.get("node_type") != "array":
        raise VirtualDatasetMismatch(f"{path!r}: hdmf-zarr did not write an array there")
    if list(written["shape"]) != list(virtual["shape"]):
        raise VirtualDatasetMismatch(
            f"{path!r}: hdmf-zarr wrote shape {written['shape']}, the VirtualArray has "
            f"{virtual['shape']}"
        )
    if written["data_type"] != virtual["data_type"]:
        raise VirtualDatasetMismatch(
            f"{path!r}: hdmf-zarr wrote data type {written['data_type']!r} (pynwb converts to the "
            f"type the NWB specification asks for), the VirtualArray has "
            f"{virtual['data_type']!r}; give the placeholder of an array of that type"
        )
    merged = dict(written)
    for field in STORAGE_FIELDS:
        merged[field] = virtual[field]
    if "dimension_names" not in merged and virtual.get("dimension_names") is not None:
        merged["dimension_names"] = virtual["dimension_names"]
    return merged
