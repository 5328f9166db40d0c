"""TIFF storage (compression, predictor, bit packing, byte order) → a Zarr v3 codec chain.

Deflate and Zstd chunks are plain zlib and zstd streams, so they get the standard numcodecs
codecs that every Zarr library decodes. Everything else uses the Zarr codecs of imagecodecs
(``imagecodecs_*``), which shadowzarr registers with zarr-python when it opens such a file.
Whatever cannot be expressed exactly is refused with the reason, never read approximately.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_spec.metadata import bytes_codec

if TYPE_CHECKING:
    from tifffile import TiffPage

__all__ = ["CodecChain", "codec_chain", "register_tiff_codecs", "uses_imagecodecs"]

# TIFF Compression tag → codec name, for codecs that turn bytes into bytes.
_BYTES_COMPRESSORS: dict[int, str] = {
    5: "imagecodecs_lzw",
    8: "numcodecs.zlib",  # Adobe deflate
    32946: "numcodecs.zlib",  # deflate
    50013: "numcodecs.zlib",  # PixTIFF: deflate too
    34926: "numcodecs.zstd",  # the Zstd code before 50000
    32773: "imagecodecs_packbits",
    34925: "imagecodecs_lzma",
    50000: "numcodecs.zstd",
}
# TIFF Compression tag → image codec name: these decode straight to pixels (array ← bytes).
_IMAGE_COMPRESSORS: dict[int, str] = {
    7: "imagecodecs_jpeg",
    34892: "imagecodecs_jpeg",  # DNG lossy JPEG
    33003: "imagecodecs_jpeg2k",
    33004: "imagecodecs_jpeg2k",
    33005: "imagecodecs_jpeg2k",
    34712: "imagecodecs_jpeg2k",
    34887: "imagecodecs_lerc",
    34933: "imagecodecs_png",
    22610: "imagecodecs_jpegxr",
    34934: "imagecodecs_jpegxr",
    50001: "imagecodecs_webp",
    34927: "imagecodecs_webp",  # the WebP code before 50001
    50002: "imagecodecs_jpegxl",
    52546: "imagecodecs_jpegxl",
}
_HORIZONTAL = {2: 1, 34892: 2, 34893: 4}
_FLOATING_POINT = {3: 1, 34894: 2, 34895: 4}
_STANDARD_BITS = {8, 16, 32, 64, 128}


@dataclass(frozen=True, slots=True)
class CodecChain:
    """The codecs of one series, and whether its chunks are the raw pixel bytes."""

    codecs: list[dict[str, Any]]
    uncompressed: bool
    """Only ``bytes``: chunk bytes are the pixels, so a page can be one chunk and may be padded."""


def codec_chain(page: TiffPage, chunk_shape: tuple[int, ...], where: str) -> CodecChain:
    """The codec chain decoding one strip or tile of ``page`` into a chunk of ``chunk_shape``.

    ``chunk_shape`` is the chunk as the Zarr array sees it (page and sample axes of size one
    may have been dropped); ``where`` names the file and series in error messages.
    """
    _refuse_unsupported(page, where)
    dtype = _stored_dtype(page)
    compression = int(page.compression)
    predictor = int(page.predictor)
    bits = int(page.bitspersample)
    packed = bits not in _STANDARD_BITS or (bits == 8 and dtype == np.bool_)
    contig_samples = page.planarconfig == 1 and page.samplesperpixel > 1
    axis = -2 if contig_samples else -1

    if compression in _IMAGE_COMPRESSORS:
        if predictor != 1:
            raise _refusal(where, f"predictor {predictor} with compression {compression}")
        return CodecChain([_image_codec(page, compression, where)], uncompressed=False)

    codecs: list[dict[str, Any]] = []
    if packed:
        if predictor != 1:
            raise _refusal(where, f"predictor {predictor} on {bits}-bit packed samples")
        # Each row of a strip or tile starts on a byte boundary.
        row_samples = chunk_shape[-1] * chunk_shape[-2] if contig_samples else chunk_shape[-1]
        codecs.append(
            {
                "name": "imagecodecs_packints",
                "configuration": {"bitspersample": bits, "runlen": row_samples},
            }
        )
    elif predictor in _HORIZONTAL:
        codecs.append(
            {
                "name": "imagecodecs_delta",
                "configuration": {"axis": axis, "dist": _HORIZONTAL[predictor]},
            }
        )
        codecs.append(bytes_codec(dtype))
    elif predictor in _FLOATING_POINT:
        if dtype.kind != "f":
            raise _refusal(where, f"floating-point predictor on {dtype} samples")
        codecs.append(
            {
                "name": "imagecodecs_floatpred",
                "configuration": {"axis": axis, "dist": _FLOATING_POINT[predictor]},
            }
        )
    elif predictor != 1:
        raise _refusal(where, f"predictor {predictor}")
    else:
        codecs.append(bytes_codec(dtype))

    if compression == 1:
        return CodecChain(codecs, uncompressed=not packed and predictor == 1)
    name = _BYTES_COMPRESSORS.get(compression)
    if name is None:
        raise _refusal(where, f"compression {_compression_name(compression)} has no Zarr codec")
    if packed and compression != 32773:
        raise _refusal(where, f"{bits}-bit samples with compression {compression}")
    codecs.append(
        {"name": name, "configuration": {}} if name.startswith("numcodecs.") else {"name": name}
    )
    return CodecChain(codecs, uncompressed=False)


def uses_imagecodecs(codecs: Iterable[dict[str, Any]]) -> bool:
    return any(str(codec.get("name", "")).startswith("imagecodecs_") for codec in codecs)


def register_tiff_codecs() -> None:
    """Register imagecodecs' Zarr codecs with zarr-python (they are entry points too, but an
    explicit registration works where entry points were not installed, as in some bundles)."""
    from imagecodecs.zarr import register_codecs

    register_codecs(verbose=False)


def stored_dtype(page: TiffPage) -> np.dtype[Any]:
    """The numpy dtype of a decoded sample, with the file's byte order."""
    return _stored_dtype(page)


def _stored_dtype(page: TiffPage) -> np.dtype[Any]:
    if page.dtype is None:
        raise _refusal(
            f"page {page.index}",
            f"{page.bitspersample}-bit samples of sample format {page.sampleformat}",
        )
    dtype = np.dtype(page.dtype)
    if dtype.itemsize > 1 and dtype.kind != "b":
        dtype = dtype.newbyteorder(page.parent.byteorder)
    return dtype


def _refuse_unsupported(page: TiffPage, where: str) -> None:
    if page.fillorder != 1:
        raise _refusal(where, "fill order 2 (bits stored least significant first)")
    if page.is_subsampled and int(page.compression) != 7:
        raise _refusal(where, "chroma-subsampled YCbCr samples outside JPEG")
    if page.dtype is None:
        raise _refusal(
            where, f"{page.bitspersample}-bit samples of sample format {page.sampleformat}"
        )
    if int(page.sampleformat) == 5 and int(page.bitspersample) not in {64, 128}:
        raise _refusal(where, f"complex integer samples ({page.bitspersample} bits)")
    if int(page.sampleformat) == 3 and int(page.bitspersample) not in {16, 32, 64}:
        raise _refusal(
            where, f"{page.bitspersample}-bit samples of sample format {page.sampleformat}"
        )
    if int(page.compression) in {2, 3, 4}:
        raise _refusal(where, "CCITT bilevel compression")


def _image_codec(page: TiffPage, compression: int, where: str) -> dict[str, Any]:
    name = _IMAGE_COMPRESSORS[compression]
    if name == "imagecodecs_jpeg":  # and DNG lossy JPEG, which tifffile decodes alike
        from tifffile.tifffile import jpeg_decode_colorspace

        colorspace_jpeg, colorspace_data = jpeg_decode_colorspace(
            int(page.photometric), int(page.planarconfig), page.extrasamples, page.is_jfif
        )
        config: dict[str, Any] = {"bitspersample": int(page.bitspersample)}
        if colorspace_jpeg is not None:
            config["colorspace_jpeg"] = _enum_text(colorspace_jpeg)
        if colorspace_data is not None:
            config["colorspace_data"] = _enum_text(colorspace_data)
        if page.jpegtables is not None:
            config["tables"] = base64.b64encode(page.jpegtables).decode("ascii")
        if page.jpegheader is not None:
            config["header"] = base64.b64encode(page.jpegheader).decode("ascii")
        return {"name": name, "configuration": config}
    if name == "imagecodecs_webp" and page.samplesperpixel == 4:
        return {"name": name, "configuration": {"hasalpha": True}}
    if name == "imagecodecs_jpegxr" and page.photometric not in (1, 2):
        raise _refusal(where, f"JPEG XR with photometric {page.photometric}")
    return {"name": name}


def _enum_text(value: Any) -> Any:
    return value.name if hasattr(value, "name") else value


def _compression_name(code: int) -> str:
    try:
        from tifffile import COMPRESSION

        return f"{COMPRESSION(code).name} ({code})"
    except ValueError:
        return str(code)


def _refusal(where: str, reason: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(f"{where}: {reason} cannot be referenced")
