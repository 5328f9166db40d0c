"""Every TIFF kind tifffile writes, referenced and read back, compared with tifffile itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
import tifffile
import zarr
from shadowzarr_spec import rfs_to_json, write_rfs
from shadowzarr_store import open_rfs
from shadowzarr_testing.compare import assert_array_equal_exact

from shadowzarr_tiff import generate_rfs_tiff

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

RNG = np.random.default_rng(42)


def _u8(*shape: int) -> np.ndarray:
    return RNG.integers(0, 255, shape, dtype=np.uint8)


def _u16(*shape: int) -> np.ndarray:
    return RNG.integers(0, 4000, shape, dtype=np.uint16)


def _smooth(*shape: int) -> np.ndarray:
    """Image-like values (lossy codecs are compared with tifffile's own decoding anyway)."""
    ramp = np.add.outer(np.arange(shape[-2]), np.arange(shape[-1])) % 256
    return np.broadcast_to(ramp, shape).astype(np.uint8).copy()


def _write(**options: Any) -> Callable[[Path], None]:
    data = options.pop("data")
    options.setdefault("photometric", "minisblack")

    def write(path: Path) -> None:
        tifffile.imwrite(path, data, **options)

    return write


def _pages(*pages: tuple[np.ndarray, dict[str, Any]], bigtiff: bool = False) -> Callable:
    def write(path: Path) -> None:
        with tifffile.TiffWriter(path, bigtiff=bigtiff) as tif:
            for data, options in pages:
                tif.write(data, **{"photometric": "minisblack", **options})

    return write


def _pyramid(data: np.ndarray, levels: int, *, ome: bool, **options: Any) -> Callable:
    def write(path: Path) -> None:
        with tifffile.TiffWriter(path, ome=ome) as tif:
            options.setdefault("photometric", "minisblack")
            tif.write(data, subifds=levels - 1, **options)
            level = data
            for _ in range(levels - 1):
                level = (
                    level[..., ::2, ::2]
                    if options.get("photometric") != "rgb"
                    else level[..., ::2, ::2, :]
                )
                tif.write(np.ascontiguousarray(level), subfiletype=1, **options)

    return write


def _uneven_stack(path: Path) -> None:
    """Pages whose IFDs carry tags of different lengths, so they are not evenly spaced."""
    with tifffile.TiffWriter(path) as tif:
        for index in range(6):
            tag = (65000, "s", 0, "x" * (10 + 37 * index), False)
            tif.write(
                _u16(20, 24),
                extratags=[tag],
                contiguous=False,
                metadata=None,
                photometric="minisblack",
            )


CORPUS: dict[str, Callable[[Path], None]] = {
    # uncompressed layouts
    "stack_shaped": _write(data=_u16(12, 32, 48)),
    "stack_generic": _write(data=_u16(7, 20, 30), metadata=None),
    "stack_uneven": _uneven_stack,
    "stack_4d": _write(data=_u16(3, 4, 16, 20)),
    "strips_not_dividing": _write(data=_u16(5, 50, 30), rowsperstrip=7),
    "short_strips_zlib_default": _write(data=_u16(3, 300, 200), compression="zlib"),
    "short_strips_lzw_horizontal": _write(
        data=_u16(2, 45, 30), rowsperstrip=10, compression="lzw", predictor=True
    ),
    "short_strips_zstd_planar": _write(
        data=_u8(3, 45, 30),
        rowsperstrip=8,
        compression="zstd",
        photometric="rgb",
        planarconfig="separate",
    ),
    "short_strips_packbits_rgb": _write(
        data=_u8(45, 30, 3), rowsperstrip=8, compression="packbits", photometric="rgb"
    ),
    "short_strips_float_predictor": _write(
        data=RNG.random((45, 30), dtype=np.float32),
        rowsperstrip=8,
        compression="zlib",
        predictor=True,
    ),
    "strips_dividing_zlib": _write(data=_u16(4, 40, 30), rowsperstrip=8, compression="zlib"),
    "single_pixel": _write(data=np.array([[7]], dtype=np.uint16)),
    "tiles": _write(data=_u16(3, 70, 50), tile=(32, 16)),
    "tiles_volumetric": _write(data=_u8(8, 40, 40), volumetric=True, tile=(4, 16, 16)),
    "bigtiff_stack": _write(data=_u16(6, 30, 20), bigtiff=True),
    "bigtiff_tiles_zstd": _write(
        data=_u16(2, 64, 64), bigtiff=True, tile=(32, 32), compression="zstd"
    ),
    # compressions
    "zlib": _write(data=_u16(3, 32, 40), compression="zlib"),
    "adobe_deflate": _write(data=_u8(40, 32), compression="adobe_deflate"),
    "deflate": _write(data=_u8(40, 32), compression="deflate"),
    "zstd": _write(data=_u16(2, 32, 40), compression="zstd"),
    "lzw": _write(data=_u16(3, 32, 40), compression="lzw"),
    "packbits": _write(data=_u8(2, 33, 40), compression="packbits"),
    "lzma": _write(data=_u8(30, 40), compression="lzma"),
    "jpeg_gray": _write(data=_smooth(2, 32, 48), compression="jpeg"),
    "jpeg_rgb_tiles": _write(
        data=_smooth(64, 64, 3), compression="jpeg", tile=(32, 32), photometric="rgb"
    ),
    "jpeg_ycbcr": _write(data=_smooth(32, 48, 3), compression="jpeg", photometric="ycbcr"),
    "png": _write(data=_u8(30, 40), compression="png"),
    "webp_rgb": _write(data=_smooth(32, 40, 3), compression="webp", photometric="rgb"),
    "jpegxl": _write(data=_smooth(32, 40), compression="jpegxl"),
    "jpeg2000": _write(data=_u16(32, 40), compression="jpeg2000"),
    "lerc": _write(data=RNG.random((30, 40), dtype=np.float32), compression="lerc"),
    "jpegxr": _write(data=_smooth(32, 40), compression="jpegxr"),
    # predictors
    "lzw_horizontal_u16": _write(data=_u16(2, 32, 40), compression="lzw", predictor=True),
    "zlib_horizontal_rgb": _write(
        data=_u8(32, 40, 3), compression="zlib", predictor=True, photometric="rgb"
    ),
    "zlib_horizontal_planar": _write(
        data=_u16(3, 32, 40),
        compression="zlib",
        predictor=True,
        photometric="rgb",
        planarconfig="separate",
    ),
    "zstd_horizontal_tiles": _write(
        data=_u16(48, 48), compression="zstd", predictor=True, tile=(16, 16)
    ),
    "zlib_float_predictor_f32": _write(
        data=RNG.random((2, 24, 30), dtype=np.float32), compression="zlib", predictor=True
    ),
    "lzw_float_predictor_f64": _write(data=RNG.random((24, 30)), compression="lzw", predictor=True),
    # samples, photometric, bit depths, byte orders
    "rgb_contig": _write(data=_u8(2, 20, 30, 3), photometric="rgb"),
    "rgb_planar": _write(data=_u8(2, 3, 20, 30), photometric="rgb", planarconfig="separate"),
    "rgba_zlib": _write(
        data=_u8(20, 30, 4), photometric="rgb", extrasamples=["unassalpha"], compression="zlib"
    ),
    "palette": _write(
        data=_u8(20, 30),
        photometric="palette",
        colormap=RNG.integers(0, 65535, (3, 256), dtype=np.uint16),
    ),
    "miniswhite": _write(data=_u8(20, 30), photometric="miniswhite"),
    "bilevel": _write(data=RNG.integers(0, 2, (3, 21, 13)).astype(bool)),
    "bilevel_packbits": _write(
        data=RNG.integers(0, 2, (21, 13)).astype(bool), compression="packbits"
    ),
    "packed_12bit": _write(
        data=RNG.integers(0, 4096, (2, 20, 31), dtype=np.uint16), bitspersample=12
    ),
    "packed_4bit": _write(data=RNG.integers(0, 16, (20, 31), dtype=np.uint8), bitspersample=4),
    "float16": _write(data=RNG.random((3, 20, 30)).astype(np.float16)),
    "float32_big_endian": _write(data=RNG.random((3, 20, 30), dtype=np.float32), byteorder=">"),
    "float64": _write(data=RNG.random((20, 30))),
    "u16_big_endian_lzw_horizontal": _write(
        data=_u16(2, 20, 30), byteorder=">", compression="lzw", predictor=True
    ),
    "f32_big_endian_float_predictor": _write(
        data=RNG.random((20, 30), dtype=np.float32),
        byteorder=">",
        compression="zlib",
        predictor=True,
    ),
    "int8": _write(data=RNG.integers(-128, 127, (2, 20, 30), dtype=np.int8)),
    "int32_big_endian": _write(
        data=RNG.integers(-(2**31), 2**31 - 1, (20, 30), dtype=np.int32), byteorder=">"
    ),
    "complex64": _write(
        data=(RNG.random((20, 30)) + 1j * RNG.random((20, 30))).astype(np.complex64)
    ),
    # metadata formats and pyramids
    "imagej_hyperstack": _write(
        data=_u16(3, 4, 2, 20, 30), imagej=True, metadata={"axes": "TZCYX"}
    ),
    "imagej_truncated": _write(
        data=_u16(5, 4, 16, 20), imagej=True, truncate=True, metadata={"axes": "TZYX"}
    ),
    "shaped_truncated": _write(data=_u16(6, 16, 20), truncate=True),
    "imagej_rgb": _write(data=_u8(4, 20, 30, 3), imagej=True, photometric="rgb"),
    "ome_single": _write(data=_u16(3, 2, 20, 30), ome=True, metadata={"axes": "ZCYX"}),
    "ome_multi_series": _pages(
        (_u16(2, 20, 30), {"metadata": {"axes": "ZYX"}, "compression": "zlib"}),
        (_u8(10, 12, 3), {"photometric": "rgb"}),
    ),
    "ome_pyramid_subifds": _pyramid(
        _u16(2, 64, 96), 3, ome=True, tile=(32, 32), compression="zlib", metadata={"axes": "CYX"}
    ),
    "subifd_pyramid_rgb": _pyramid(
        _smooth(128, 128, 3), 3, ome=False, tile=(32, 32), compression="jpeg", photometric="rgb"
    ),
    "shaped_multi_series": _pages(
        (_u16(3, 20, 30), {}),
        (_u8(16, 16), {"compression": "lzw"}),
        (_u16(2, 8, 9), {}),
    ),
}


def _ome_writer(name: str) -> bool:
    return name.startswith("ome_")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tiff-corpus")
    for name, write in CORPUS.items():
        write(root / f"{name}{'.ome' if _ome_writer(name) else ''}.tif")
    return root


def _open_fsspec(rfs: Any) -> zarr.Group:
    """Read the references with fsspec's ReferenceFileSystem: a reader that is not ours."""
    import fsspec

    document = rfs_to_json(rfs, expand=True)
    fs = fsspec.filesystem("reference", fo=document, remote_protocol="file", asynchronous=True)
    store = zarr.storage.FsspecStore(fs, read_only=True, path="")
    return zarr.open_group(store, mode="r", zarr_format=3)


def _levels(tif: tifffile.TiffFile) -> list[tuple[str, tifffile.TiffPageSeries]]:
    out = []
    for index, series in enumerate(tif.series):
        if len(series.levels) > 1:
            out.extend((f"{index}/{j}", level) for j, level in enumerate(series.levels))
        else:
            out.append((str(index), series))
    return out


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_reads_like_tifffile(corpus: Path, name: str, tmp_path: Path) -> None:
    """Each series and level through open_rfs (from memory and from a written directory with
    chunk manifests) and through fsspec, equal to tifffile's own reading."""
    path = next(corpus.glob(f"{name}.*tif"))
    rfs = generate_rfs_tiff(path)
    directory = write_rfs(generate_rfs_tiff(path, manifest_threshold=4), tmp_path / "refs")
    readers = {
        "open_rfs": open_rfs(rfs),
        "open_rfs(directory)": open_rfs(directory),
        "fsspec": _open_fsspec(rfs),
    }
    with tifffile.TiffFile(path) as tif:
        levels = _levels(tif)
        assert levels
        for key, level in levels:
            expected = level.asarray()
            for reader, group in readers.items():
                assert_array_equal_exact(group[key][...], expected, f"{name} {key} via {reader}")
