"""The metadata a TIFF file carries, kept as Zarr attributes.

OME-XML is kept whole on the root group and per image on each series; ImageJ metadata on the
root; each series records its axes and how its pixels are to be interpreted (photometric,
colormap), because the references give the stored values, as tifffile does.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tifffile import TiffFile, TiffPageSeries

__all__ = ["multiscales_attributes", "root_attributes", "series_attributes"]

_AXIS_TYPES = {
    "T": "time",
    "C": "channel",
    "S": "channel",
    "Z": "space",
    "Y": "space",
    "X": "space",
}


def root_attributes(tif: TiffFile, all_pyramids: bool) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "tiff": {
            "byteorder": "little" if tif.byteorder == "<" else "big",
            "bigtiff": bool(tif.is_bigtiff),
            "series": len(tif.series),
        }
    }
    if all_pyramids:
        # Every series is a multiscales group "i" with levels "i/j", as bioformats2raw writes.
        attributes["bioformats2raw.layout"] = 3
    if tif.is_ome and tif.ome_metadata:
        attributes["ome_xml"] = tif.ome_metadata
    if tif.is_imagej and tif.imagej_metadata:
        attributes["imagej"] = _plain(tif.imagej_metadata)
    return attributes


def series_attributes(tif: TiffFile, series: TiffPageSeries, index: int) -> dict[str, Any]:
    keyframe = series.keyframe
    info: dict[str, Any] = {
        "kind": series.kind,
        "photometric": _enum_name(keyframe.photometric),
        "compression": _enum_name(keyframe.compression),
        "planarconfig": _enum_name(keyframe.planarconfig),
        "samplesperpixel": int(keyframe.samplesperpixel),
        "bitspersample": int(keyframe.bitspersample),
    }
    if keyframe.predictor != 1:
        info["predictor"] = _enum_name(keyframe.predictor)
    if keyframe.extrasamples:
        info["extrasamples"] = [int(e) for e in keyframe.extrasamples]
    if keyframe.colormap is not None:
        info["colormap"] = np.asarray(keyframe.colormap).tolist()
    attributes: dict[str, Any] = {"axes": series.axes, "tiff": info}
    if series.name:
        attributes["name"] = series.name
    ome = _ome_image(tif, index)
    if ome is not None:
        attributes["ome"] = ome
    return attributes


def multiscales_attributes(series: TiffPageSeries) -> dict[str, Any]:
    """OME-NGFF (0.4) multiscales for a pyramid whose levels are the arrays "0", "1", …"""
    base = series.levels[0].shape
    datasets = []
    for index, level in enumerate(series.levels):
        scale = [b / s if s else 1.0 for b, s in zip(base, level.shape, strict=True)]
        datasets.append(
            {
                "path": str(index),
                "coordinateTransformations": [{"type": "scale", "scale": scale}],
            }
        )
    axes = []
    for letter in series.axes:
        axis: dict[str, Any] = {"name": letter.lower()}
        if letter in _AXIS_TYPES:
            axis["type"] = _AXIS_TYPES[letter]
        axes.append(axis)
    entry: dict[str, Any] = {"version": "0.4", "axes": axes, "datasets": datasets}
    if series.name:
        entry["name"] = series.name
    return {"multiscales": [entry]}


def _ome_image(tif: TiffFile, index: int) -> Any:
    if not (tif.is_ome and tif.ome_metadata):
        return None
    from tifffile import xml2dict

    try:
        document = xml2dict(tif.ome_metadata)
    except ValueError:
        return None
    images = document.get("OME", {}).get("Image")
    if isinstance(images, dict):
        images = [images]
    if not isinstance(images, list) or index >= len(images):
        return None
    return _plain(images[index])


def _enum_name(value: Any) -> Any:
    return value.name if hasattr(value, "name") else int(value)


def _plain(value: Any) -> Any:
    """JSON-ready copy (tuples, numpy scalars and arrays, bytes become plain values)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
