"""virtualize: swap the data iterators NeuroConv put in an NWB file for VirtualArray placeholders.

NeuroConv writes a recording through a SpikeInterface data chunk iterator (``.recording``),
imaging data through a roiextractors one (``.imaging_extractor``) and WAV audio through an
iterator over a memory map (``.data``). Each is turned into a
VirtualArray (:mod:`.recordings`, :mod:`.imaging`) with the iterator's shape and dtype, whose
placeholder becomes the dataset's data; everything else NeuroConv built stays as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec import VirtualArray
from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_nwb.neuroconv_bridge.imaging import imaging_array
from shadowzarr_nwb.neuroconv_bridge.recordings import recording_array

if TYPE_CHECKING:
    from pynwb import NWBFile

__all__ = ["virtualize"]

_DATASETS = ("data", "timestamps")


def virtualize(nwbfile: NWBFile, strict: bool = True) -> dict[str, VirtualArray]:
    """Replace NeuroConv's data iterators in ``nwbfile`` by placeholders, in place.

    Parameters
    ----------
    nwbfile
        An NWB file NeuroConv built in memory (``interface.create_nwbfile(...)``), not written.
    strict
        Raise :class:`NotVirtualizable` for an iterator whose data cannot be referenced;
        otherwise leave it for NeuroConv (or pynwb) to copy.

    Returns
    -------
    dict
        ``"<container name>/<dataset>"`` → the VirtualArray now behind that dataset.
    """
    replaced: dict[str, VirtualArray] = {}
    for container in list(nwbfile.objects.values()):
        fields = getattr(container, "fields", None)
        if not isinstance(fields, dict):
            continue
        for name in _DATASETS:
            iterator = fields.get(name)
            if iterator is None or not _is_neuroconv_iterator(iterator):
                continue
            try:
                array = _array_for(iterator)
                _check_matches(array, iterator)
            except NotVirtualizable as exc:
                if strict:
                    raise NotVirtualizable(f"{container.name}/{name}: {exc}") from exc
                continue
            # pynwb sets a dataset once; hdmf's own set_data_io replaces it through ``fields``.
            fields[name] = array.placeholder()
            replaced[f"{container.name}/{name}"] = array
    return replaced


def _is_neuroconv_iterator(data: Any) -> bool:
    return (
        hasattr(data, "recording")
        or hasattr(data, "imaging_extractor")
        or _memmap_of(data) is not None
    )


def _memmap_of(data: Any) -> np.memmap | None:
    """The memory map behind a dataset: the data itself, or what a sliceable data chunk
    iterator (NeuroConv's WAV audio, read with ``scipy.io.wavfile.read(mmap=True)``) wraps."""
    for candidate in (data, getattr(data, "data", None)):
        if isinstance(candidate, np.memmap):
            return candidate
    return None


def _array_for(iterator: Any) -> VirtualArray:
    memmap = _memmap_of(iterator)
    if memmap is not None:
        return VirtualArray.from_memmap(memmap)
    if hasattr(iterator, "recording"):
        if getattr(iterator, "return_in_uV", False) or getattr(iterator, "return_scaled", False):
            raise NotVirtualizable("the iterator writes scaled values, not the stored ones")
        return recording_array(
            iterator.recording,
            segment_index=int(getattr(iterator, "segment_index", 0) or 0),
            channel_ids=getattr(iterator, "channel_ids", None),
        )
    return imaging_array(iterator.imaging_extractor)


def _check_matches(array: VirtualArray, iterator: Any) -> None:
    shape = tuple(int(s) for s in getattr(iterator, "maxshape", iterator.shape))
    # Byte order aside: Zarr's bytes codec reads a big-endian file (Open Ephys legacy) as the
    # same values NeuroConv writes natively.
    same_type = array.dtype.newbyteorder("=") == np.dtype(iterator.dtype).newbyteorder("=")
    if array.shape != shape or not same_type:
        raise NotVirtualizable(
            f"the referenced data is {array.shape} {array.dtype}, NeuroConv writes {shape} "
            f"{iterator.dtype}"
        )
