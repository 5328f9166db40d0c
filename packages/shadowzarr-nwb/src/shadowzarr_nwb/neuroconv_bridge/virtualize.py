"""virtualize: swap the data iterators NeuroConv put in an NWB file for VirtualArray placeholders.

NeuroConv writes a recording through a SpikeInterface data chunk iterator (``.recording``) and
imaging data through a roiextractors one (``.imaging_extractor``). Each is turned into a
VirtualArray (:mod:`.recordings`, :mod:`.imaging`) with the iterator's shape and dtype, whose
placeholder becomes the dataset's data; everything else NeuroConv built stays as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_nwb.neuroconv_bridge.imaging import imaging_array
from shadowzarr_nwb.neuroconv_bridge.recordings import recording_array

if TYPE_CHECKING:
    from pynwb import NWBFile
    from shadowzarr_spec import VirtualArray

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
    return hasattr(data, "recording") or hasattr(data, "imaging_extractor")


def _array_for(iterator: Any) -> VirtualArray:
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
    shape = tuple(int(s) for s in iterator.maxshape)
    if array.shape != shape or array.dtype != iterator.dtype:
        raise NotVirtualizable(
            f"the referenced data is {array.shape} {array.dtype}, NeuroConv writes {shape} "
            f"{iterator.dtype}"
        )
