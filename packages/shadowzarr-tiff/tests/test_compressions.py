"""Every compression tifffile writes reads back equal to tifffile, and JPEG with shared tables
(Aperio SVS, libtiff's YCbCr JPEG) too: tables are held base64 in the codec configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import imagecodecs
import numpy as np
import pytest
import tifffile
from shadowzarr_spec import read_local_rfs, write_rfs
from shadowzarr_store import open_rfs
from shadowzarr_testing.compare import assert_array_equal_exact

from shadowzarr_tiff import generate_rfs_tiff

IMAGE = (np.add.outer(np.arange(40), np.arange(48)) % 200).astype(np.uint8)
RGB = np.stack([IMAGE, IMAGE[::-1], 255 - IMAGE], axis=-1)

NOT_WRITABLE = {
    # tifffile decodes these but cannot write them here (no encoder): not testable locally
    "CCITTRLE", "CCITTFAX3", "CCITTFAX4", "OJPEG", "JBIG_BW", "JBIG_COLOR", "JPEG_99",
    "IMPACJ", "KODAK_262", "NEXT", "SONY_ARW", "PACKED_RAW", "SAMSUNG_SRW", "CCIRLEW",
    "SAMSUNG_SRW2", "THUNDERSCAN", "IT8CTPAD", "IT8LW", "IT8MP", "IT8BL", "PIXARFILM",
    "PIXARLOG", "DCS", "ALT_JPEG", "JBIG", "SGILOG", "SGILOG24", "LURADOC", "NIKON_NEF",
    "JBIG2", "MDI_BINARY", "MDI_PROGRESSIVE", "MDI_VECTOR", "JETRAW", "EER_V0", "EER_V1",
    "EER_V2",
}  # fmt: skip


@pytest.mark.parametrize("compression", list(tifffile.COMPRESSION), ids=lambda c: c.name)
@pytest.mark.parametrize(("photometric", "data"), [("minisblack", IMAGE), ("rgb", RGB)])
def test_compression_reads_like_tifffile(
    tmp_path: Path, compression: Any, photometric: str, data: np.ndarray
) -> None:
    path = tmp_path / "c.tif"
    try:
        tifffile.imwrite(
            path, data, compression=compression, photometric=photometric, tile=(16, 16)
        )
    except (KeyError, ValueError, ImportError):
        webp_gray = compression.name.startswith("WEBP") and photometric == "minisblack"
        assert compression.name in NOT_WRITABLE or webp_gray, f"{compression.name} now writes"
        return
    assert compression.name not in NOT_WRITABLE
    root = open_rfs(generate_rfs_tiff(path))
    with tifffile.TiffFile(path) as tif:
        expected = tif.asarray()
    assert_array_equal_exact(root["0"][...], expected, compression.name)


def _split_tables(jpeg: bytes) -> tuple[bytes, bytes]:
    """(JPEGTables: SOI, quantisation and Huffman tables, EOI; the abbreviated stream)."""
    position, tables, rest = 2, [], []
    while True:
        marker = jpeg[position : position + 2]
        length = int.from_bytes(jpeg[position + 2 : position + 4], "big")
        segment = jpeg[position : position + 2 + length]
        if marker in (b"\xff\xdb", b"\xff\xc4"):
            tables.append(segment)
        elif marker[1] & 0xF0 != 0xE0:  # APPn segments are left out, as libtiff does
            rest.append(segment)
        position += 2 + length
        if marker == b"\xff\xda":  # start of scan: the entropy-coded data follows
            break
    soi, eoi = b"\xff\xd8", b"\xff\xd9"
    return soi + b"".join(tables) + eoi, soi + b"".join(rest) + jpeg[position:]


def _abbreviated_tiles(image: np.ndarray, tile: int, subsampling: str) -> tuple[list[bytes], bytes]:
    tiles: list[bytes] = []
    shared = b""
    for y in range(0, image.shape[0], tile):
        for x in range(0, image.shape[1], tile):
            block = np.zeros((tile, tile, 3), np.uint8)
            part = image[y : y + tile, x : x + tile]
            block[: part.shape[0], : part.shape[1]] = part
            encoded = bytes(imagecodecs.jpeg8_encode(block, level=80, subsampling=subsampling))
            tables, abbreviated = _split_tables(encoded)
            assert shared in (b"", tables)  # one set of tables for every tile
            shared = tables
            tiles.append(abbreviated)
    return tiles, shared


def _slide(size: tuple[int, int]) -> np.ndarray:
    rng = np.random.default_rng(5)
    smooth = np.add.outer(np.arange(size[0]), np.arange(size[1])) % 256
    noise = rng.integers(0, 30, (*size, 3))
    return np.clip(smooth[..., None] + noise, 0, 255).astype(np.uint8)


def _write_svs(path: Path) -> None:
    """An Aperio SVS-like slide: tiled JPEG baseline and level with JPEGTables, a thumbnail."""
    baseline = _slide((512, 768))
    level = np.ascontiguousarray(baseline[::2, ::2])
    description = "Aperio Image Library v12.0.15 \n768x512 (256x256) JPEG/RGB Q=80|AppMag = 20"
    with tifffile.TiffWriter(path) as tif:
        for image, text in ((baseline, description + "|MPP = 0.5"), (None, "thumbnail"),
                            (level, description)):  # fmt: skip
            if image is None:
                thumb = np.ascontiguousarray(baseline[::8, ::8])
                tif.write(thumb, photometric="rgb", metadata=None, description=text)
                continue
            tiles, tables = _abbreviated_tiles(image, 256, "444")
            tif.write(
                iter(tiles), shape=image.shape, dtype="u1", tile=(256, 256), compression="jpeg",
                photometric="rgb", metadata=None, description=text,
                extratags=[(347, 7, len(tables), tables, True)],
            )  # fmt: skip


def _write_ycbcr(path: Path) -> None:
    """A tiled YCbCr JPEG with 2×2 chroma subsampling and shared tables, as libtiff writes."""
    image = _slide((300, 400))
    tiles, tables = _abbreviated_tiles(image, 128, "420")
    tifffile.imwrite(
        path, iter(tiles), shape=image.shape, dtype="u1", tile=(128, 128), compression="jpeg",
        photometric="ycbcr", subsampling=(2, 2), metadata=None,
        extratags=[(347, 7, len(tables), tables, True)],
    )  # fmt: skip


@pytest.mark.parametrize("writer", [_write_svs, _write_ycbcr], ids=["svs", "ycbcr-2x2"])
def test_jpeg_with_shared_tables_reads_like_tifffile(tmp_path: Path, writer: Any) -> None:
    path = tmp_path / "slide.tif"
    writer(path)
    out = tmp_path / "slide.shadowzarr.json"
    write_rfs(generate_rfs_tiff(path), out)
    root = open_rfs(read_local_rfs(out))
    with tifffile.TiffFile(path) as tif:
        assert tif.pages.first.jpegtables is not None
        assert tif.is_svs == (writer is _write_svs)
        for index, series in enumerate(tif.series):
            for number, level in enumerate(series.levels):
                key = f"{index}/{number}" if len(series.levels) > 1 else str(index)
                assert_array_equal_exact(root[key][...], level.asarray(), f"{path.name} {key}")
