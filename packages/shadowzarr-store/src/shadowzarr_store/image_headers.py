"""The size an image chunk declares in its own header, read before its decoder runs.

imagecodecs' image decoders allocate what the image's header declares (a 100-byte JPEG may
claim 65,535 x 65,535 pixels). So the header of every image chunk (JPEG, PNG, WebP, JPEG 2000,
JPEG XL, JPEG XR, LERC) is parsed here, without a native decoder, into `ImageSize`: the pixel
count and, where the header states them cheaply, the samples per pixel and bytes per sample.
The caller compares that with the chunk its array declares. Anything this parser does not
understand is refused: a header it cannot read is a header no one has checked.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from shadowzarr_spec import ChunkDecodeError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["IMAGE_CODECS", "ImageSize", "image_size"]


@dataclass(frozen=True, slots=True)
class ImageSize:
    """What an image header declares. ``sample_bytes`` is the most one pixel decodes to."""

    pixels: int
    sample_bytes: int

    @property
    def decoded_bytes(self) -> int:
        return self.pixels * self.sample_bytes


_MAX_PIXEL_BYTES: Final = 16
"""Assumed bytes per pixel where the header's sample format is not parsed (4 x float32)."""


def image_size(codec: str, data: bytes | memoryview, header: bytes = b"") -> ImageSize:
    """The size ``data`` declares for image codec ``codec`` (`IMAGE_CODECS`); `ChunkDecodeError`
    when its header is missing, cut or not understood. ``header`` is a JPEG header stored in
    the codec's configuration (TIFF's old-style JPEG), tried when ``data`` has no frame header.
    """
    view = bytes(data)
    try:
        return IMAGE_CODECS[codec](view, header)
    except (IndexError, struct.error):
        raise _invalid(codec, "its header is cut short") from None


def _jpeg(data: bytes, header: bytes) -> ImageSize:
    for stream in (data, header + data):
        found = _jpeg_frame(stream)
        if found is not None:
            return found
    raise _invalid("imagecodecs_jpeg", "no frame header (SOF) before the scan")


_SOF: Final = frozenset(
    {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
)


def _jpeg_frame(data: bytes) -> ImageSize | None:
    if data[:2] != b"\xff\xd8":
        raise _invalid("imagecodecs_jpeg", "no start-of-image marker")
    position = 2
    while position + 4 <= len(data):
        if data[position] != 0xFF:
            raise _invalid("imagecodecs_jpeg", f"no marker at byte {position}")
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):
            position += 2
            continue
        if marker in (0xD9, 0xDA):  # end of image, start of scan: no frame header before it
            return None
        (length,) = struct.unpack_from(">H", data, position + 2)
        if marker in _SOF:
            precision, height, width, components = struct.unpack_from(">BHHB", data, position + 4)
            if height == 0 or width == 0 or not 1 <= components <= 4 or precision > 16:
                raise _invalid(
                    "imagecodecs_jpeg",
                    f"frame of {width} x {height} pixels, {components} components, "
                    f"{precision} bits",
                )
            # Decoding may convert gray or YCbCr to RGB or CMYK: at most 4 samples a pixel.
            return ImageSize(width * height, 4 * (2 if precision > 8 else 1))
        position += 2 + length
    return None


_PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
_PNG_CHANNELS: Final = {0: 1, 2: 3, 3: 4, 4: 2, 6: 4}  # a palette expands to RGB(A)


def _png(data: bytes, _: bytes) -> ImageSize:
    if data[:8] != _PNG_SIGNATURE or data[12:16] != b"IHDR":
        raise _invalid("imagecodecs_png", "no PNG signature and header")
    width, height, depth, color = struct.unpack_from(">IIBB", data, 16)
    if color not in _PNG_CHANNELS or depth not in (1, 2, 4, 8, 16) or not width or not height:
        raise _invalid("imagecodecs_png", f"header of {width} x {height}, type {color}/{depth}")
    return ImageSize(width * height, _PNG_CHANNELS[color] * (2 if depth == 16 else 1))


def _webp(data: bytes, _: bytes) -> ImageSize:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise _invalid("imagecodecs_webp", "no RIFF WEBP signature")
    kind = data[12:16]
    body = 20
    if kind == b"VP8X":
        width = int.from_bytes(data[body + 4 : body + 7], "little") + 1
        height = int.from_bytes(data[body + 7 : body + 10], "little") + 1
        if len(data) < body + 10:
            raise IndexError("VP8X")
    elif kind == b"VP8L":
        if data[body] != 0x2F:
            raise _invalid("imagecodecs_webp", "no lossless signature")
        (bits,) = struct.unpack_from("<I", data, body + 1)
        width, height = (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    elif kind == b"VP8 ":
        if data[body + 3 : body + 6] != b"\x9d\x01\x2a":
            raise _invalid("imagecodecs_webp", "no lossy frame start code")
        width_bits, height_bits = struct.unpack_from("<HH", data, body + 6)
        width, height = width_bits & 0x3FFF, height_bits & 0x3FFF
    else:
        raise _invalid("imagecodecs_webp", f"unknown first chunk {kind!r}")
    return ImageSize(width * height, 4)


def _jpeg2k(data: bytes, _: bytes) -> ImageSize:
    codestream = data
    if data[4:8] == b"jP  ":
        codestream = _box(data, b"jp2c", "imagecodecs_jpeg2k")
    if codestream[:4] != b"\xff\x4f\xff\x51":
        raise _invalid("imagecodecs_jpeg2k", "no codestream header (SOC, SIZ)")
    x, y, x0, y0 = struct.unpack_from(">IIII", codestream, 8)
    (components,) = struct.unpack_from(">H", codestream, 40)
    if x <= x0 or y <= y0 or not 1 <= components <= 16384:
        raise _invalid("imagecodecs_jpeg2k", f"image of {x - x0} x {y - y0}, {components} parts")
    depth = max(((codestream[42 + 3 * c] & 0x7F) + 1) for c in range(components))
    sample = 1 if depth <= 8 else 2 if depth <= 16 else 4
    return ImageSize((x - x0) * (y - y0), components * sample)


def _box(data: bytes, wanted: bytes, codec: str) -> bytes:
    """The content of the first ISO box of type ``wanted`` (JPEG 2000 and JPEG XL files)."""
    position = 0
    while position + 8 <= len(data):
        size, kind = struct.unpack_from(">I4s", data, position)
        header = 8
        if size == 1:
            (size,) = struct.unpack_from(">Q", data, position + 8)
            header = 16
        elif size == 0:
            size = len(data) - position
        if size < header:
            raise _invalid(codec, f"a box of {size} bytes")
        if kind == wanted:
            return data[position + header : position + size]
        position += size
    raise _invalid(codec, f"no {wanted.decode()!r} box")


def _jpegxl(data: bytes, _: bytes) -> ImageSize:
    codestream = data
    if data[:12] == b"\x00\x00\x00\x0cJXL \r\n\x87\n":
        try:
            codestream = _box(data, b"jxlc", "imagecodecs_jpegxl")
        except ChunkDecodeError:
            part = _box(data, b"jxlp", "imagecodecs_jpegxl")
            codestream = part[4:]  # a partial codestream box starts with its index
    if codestream[:2] != b"\xff\x0a":
        raise _invalid("imagecodecs_jpegxl", "no codestream signature")
    bits = _Bits(codestream[2:])
    small = bits.read(1)
    height = (bits.read(5) + 1) * 8 if small else _jxl_u32(bits)
    ratio = bits.read(3)
    if ratio:
        numerator, denominator = _JXL_RATIOS[ratio]
        width = height * numerator // denominator
    elif small:
        width = (bits.read(5) + 1) * 8
    else:
        width = _jxl_u32(bits)
    # The image metadata (bit depth, extra channels) is not parsed: assume the widest pixel.
    return ImageSize(width * height, _MAX_PIXEL_BYTES)


_JXL_RATIOS: Final = {
    1: (1, 1),
    2: (12, 10),
    3: (4, 3),
    4: (3, 2),
    5: (16, 9),
    6: (5, 4),
    7: (2, 1),
}


def _jxl_u32(bits: _Bits) -> int:
    return 1 + bits.read((9, 13, 18, 30)[bits.read(2)])


class _Bits:
    """Least significant bit first, as JPEG XL packs its headers."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._position = 0

    def read(self, count: int) -> int:
        value = 0
        for i in range(count):
            byte = self._data[(self._position + i) >> 3]
            value |= ((byte >> ((self._position + i) & 7)) & 1) << i
        self._position += count
        return value


_JXR_WIDTH: Final = 0xBC80
_JXR_HEIGHT: Final = 0xBC81


def _jpegxr(data: bytes, _: bytes) -> ImageSize:
    if data[:3] != b"II\xbc":
        raise _invalid("imagecodecs_jpegxr", "no JPEG XR signature")
    (ifd,) = struct.unpack_from("<I", data, 4)
    (count,) = struct.unpack_from("<H", data, ifd)
    found: dict[int, int] = {}
    for i in range(count):
        tag, kind, _, value = struct.unpack_from("<HHII", data, ifd + 2 + 12 * i)
        if tag in (_JXR_WIDTH, _JXR_HEIGHT):
            found[tag] = value & 0xFFFF if kind == 3 else value
    if _JXR_WIDTH not in found or _JXR_HEIGHT not in found:
        raise _invalid("imagecodecs_jpegxr", "no image width and height tags")
    # The pixel format GUID is not parsed: assume the widest pixel (128 bits).
    return ImageSize(found[_JXR_WIDTH] * found[_JXR_HEIGHT], _MAX_PIXEL_BYTES)


_LERC_TYPE_BYTES: Final = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 8}


def _lerc(data: bytes, _: bytes) -> ImageSize:
    """Lerc2 blobs (one per band, back to back): rows x columns x depth of each."""
    position, pixels, sample_bytes = 0, 0, 0
    while position < len(data):
        if data[position : position + 6] != b"Lerc2 ":
            raise _invalid("imagecodecs_lerc", f"no Lerc2 blob at byte {position}")
        (version,) = struct.unpack_from("<i", data, position + 6)
        if not 2 <= version <= 6:
            raise _invalid("imagecodecs_lerc", f"Lerc2 version {version}")
        at = position + 10 + (4 if version >= 3 else 0)
        rows, columns = struct.unpack_from("<ii", data, at)
        at += 8
        depth = 1
        if version >= 4:
            (depth,) = struct.unpack_from("<i", data, at)
            at += 4
        _, _, blob_size = struct.unpack_from("<iii", data, at)
        at += 12
        if version >= 6:
            at += 4  # number of masks
        (data_type,) = struct.unpack_from("<i", data, at)
        if rows <= 0 or columns <= 0 or depth <= 0 or data_type not in _LERC_TYPE_BYTES:
            raise _invalid("imagecodecs_lerc", f"blob of {rows} x {columns} x {depth}")
        if blob_size <= 0 or position + blob_size > len(data):
            raise _invalid("imagecodecs_lerc", f"a blob of {blob_size} bytes")
        if pixels and rows * columns != pixels:
            raise _invalid("imagecodecs_lerc", "bands of different sizes")
        pixels = rows * columns
        sample_bytes += depth * _LERC_TYPE_BYTES[data_type]
        position += blob_size
    if not pixels:
        raise _invalid("imagecodecs_lerc", "no blob")
    return ImageSize(pixels, sample_bytes)


IMAGE_CODECS: Final[dict[str, Callable[[bytes, bytes], ImageSize]]] = {
    "imagecodecs_jpeg": _jpeg,
    "imagecodecs_png": _png,
    "imagecodecs_webp": _webp,
    "imagecodecs_jpeg2k": _jpeg2k,
    "imagecodecs_jpegxl": _jpegxl,
    "imagecodecs_jpegxr": _jpegxr,
    "imagecodecs_lerc": _lerc,
}


def _invalid(codec: str, why: str) -> ChunkDecodeError:
    return ChunkDecodeError(f"not valid {codec} data: {why}")
