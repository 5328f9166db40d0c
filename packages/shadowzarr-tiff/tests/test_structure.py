"""How series become arrays: gen entries, page chunks, indexes, attributes and refusals."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
import pytest
import tifffile
from shadowzarr_spec import FileRef, UnsupportedFeatureError, array_info, rfs_to_json

from shadowzarr_tiff import generate_rfs_tiff

if TYPE_CHECKING:
    from pathlib import Path

RNG = np.random.default_rng(7)


def _metadata(rfs, path: str) -> dict:
    return json.loads(rfs.refs[f"{path}/zarr.json" if path else "zarr.json"].data)


def _chunk_refs(rfs, path: str) -> dict[str, FileRef]:
    prefix = f"{path}/c/"
    return {k: v for k, v in rfs.refs.items() if k.startswith(prefix)}


def test_evenly_spaced_stack_is_one_gen_entry(tmp_path: Path) -> None:
    path = tmp_path / "stack.tif"
    data = RNG.integers(0, 60000, (500, 16, 24), dtype=np.uint16)
    tifffile.imwrite(path, data, photometric="minisblack")
    rfs = generate_rfs_tiff(path)
    assert len(rfs.gen) == 1
    entry = rfs.gen[0]
    assert entry.count == 500
    assert not _chunk_refs(rfs, "0")
    assert rfs.version == 2
    page = 16 * 24 * 2
    with tifffile.TiffFile(path) as tif:
        first = tif.series[0].keyframe.dataoffsets[0]
    assert entry.lookup("0/c/3/0/0") == FileRef(str(path.resolve()), first + 3 * page, page)
    assert _metadata(rfs, "0")["chunk_grid"]["configuration"]["chunk_shape"] == [1, 16, 24]


def test_uneven_pages_are_listed_one_chunk_each(tmp_path: Path) -> None:
    path = tmp_path / "uneven.tif"
    with tifffile.TiffWriter(path) as tif:
        for index in range(4):
            tif.write(
                RNG.integers(0, 255, (10, 12), dtype=np.uint8),
                extratags=[(65000, "s", 0, "y" * (5 + 50 * index), False)],
                contiguous=False,
                metadata=None,
                photometric="minisblack",
            )
    rfs = generate_rfs_tiff(path)
    assert not rfs.gen
    refs = _chunk_refs(rfs, "0")
    assert sorted(refs) == [f"0/c/{i}/0/0" for i in range(4)]
    with tifffile.TiffFile(path) as tif:
        for index, page in enumerate(tif.pages):
            ref = refs[f"0/c/{index}/0/0"]
            assert (ref.offset, ref.size) == (page.dataoffsets[0], 120)


def test_strips_not_dividing_become_page_chunks(tmp_path: Path) -> None:
    path = tmp_path / "strips.tif"
    tifffile.imwrite(
        path,
        RNG.integers(0, 255, (3, 50, 30), dtype=np.uint8),
        rowsperstrip=7,
        photometric="minisblack",
    )
    rfs = generate_rfs_tiff(path)
    metadata = _metadata(rfs, "0")
    assert metadata["chunk_grid"]["configuration"]["chunk_shape"] == [1, 50, 30]
    assert metadata["codecs"] == [{"name": "bytes"}]


def test_compressed_short_last_strips_are_padded_inline(tmp_path: Path) -> None:
    from shadowzarr_spec import InlineRef
    from shadowzarr_store import open_rfs

    path = tmp_path / "short_last_strip.tif"
    data = RNG.integers(0, 255, (2, 50, 30), dtype=np.uint8)
    tifffile.imwrite(path, data, rowsperstrip=7, compression="zlib", photometric="minisblack")
    rfs = generate_rfs_tiff(path)
    refs = _chunk_refs(rfs, "0")
    inline = sorted(key for key, ref in refs.items() if isinstance(ref, InlineRef))
    assert inline == ["0/c/0/7/0", "0/c/1/7/0"]  # rows 49..55 of 50: one strip per page
    assert len(refs) == 16
    np.testing.assert_array_equal(open_rfs(rfs)["0"][...], data)

    with pytest.raises(UnsupportedFeatureError) as error:
        generate_rfs_tiff(path, max_inline_bytes=10)
    message = str(error.value)
    assert "short_last_strip.tif" in message
    assert "series 0" in message
    assert "7 rows per strip do not divide the image height 50" in message
    assert "exceed max_inline_bytes (10)" in message


def test_lossy_short_last_strips_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "jpeg_strips.tif"
    tifffile.imwrite(
        path,
        RNG.integers(0, 255, (50, 32), dtype=np.uint8),
        rowsperstrip=16,
        compression="jpeg",
        photometric="minisblack",
    )
    with pytest.raises(UnsupportedFeatureError, match="lossy or bit-packing codec"):
        generate_rfs_tiff(path)


def test_not_a_tiff_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.tif"
    path.write_bytes(b"this is not a TIFF file at all")
    with pytest.raises(UnsupportedFeatureError, match=r"notes\.tif: not a TIFF file"):
        generate_rfs_tiff(path)


def test_deflate_and_zstd_use_standard_codecs(tmp_path: Path) -> None:
    for compression, name in (("zlib", "numcodecs.zlib"), ("zstd", "numcodecs.zstd")):
        path = tmp_path / f"{compression}.tif"
        tifffile.imwrite(
            path,
            RNG.integers(0, 255, (32, 32), dtype=np.uint8),
            compression=compression,
            photometric="minisblack",
        )
        metadata = _metadata(generate_rfs_tiff(path), "0")
        assert [c["name"] for c in metadata["codecs"]] == ["bytes", name]
        assert "codecs_from" not in metadata["attributes"]


def test_predictor_uses_imagecodecs_delta_on_the_width_axis(tmp_path: Path) -> None:
    path = tmp_path / "rgb.tif"
    tifffile.imwrite(
        path,
        RNG.integers(0, 255, (16, 20, 3), dtype=np.uint8),
        compression="lzw",
        predictor=True,
        photometric="rgb",
    )
    metadata = _metadata(generate_rfs_tiff(path), "0")
    codecs = metadata["codecs"]
    assert codecs[0] == {"name": "imagecodecs_delta", "configuration": {"axis": -2, "dist": 1}}
    assert metadata["attributes"]["codecs_from"] == "imagecodecs-zarr"
    assert [c["name"] for c in codecs[1:]] == ["bytes", "imagecodecs_lzw"]


def test_big_endian_samples_keep_their_byte_order(tmp_path: Path) -> None:
    path = tmp_path / "be.tif"
    tifffile.imwrite(
        path,
        RNG.integers(0, 60000, (8, 9), dtype=np.uint16),
        byteorder=">",
        photometric="minisblack",
    )
    rfs = generate_rfs_tiff(path)
    assert _metadata(rfs, "0")["codecs"] == [{"name": "bytes", "configuration": {"endian": "big"}}]
    assert _metadata(rfs, "")["attributes"]["tiff"]["byteorder"] == "big"


def test_many_chunks_get_a_manifest(tmp_path: Path) -> None:
    path = tmp_path / "tiles.tif"
    tifffile.imwrite(
        path,
        RNG.integers(0, 255, (4, 64, 64), dtype=np.uint8),
        tile=(16, 16),
        compression="zlib",
        photometric="minisblack",
    )
    rfs = generate_rfs_tiff(path, manifest_threshold=10)
    assert "0" in rfs.indexes
    assert not _chunk_refs(rfs, "0")
    table = rfs.indexes["0"].table
    assert table.shape == (4, 4, 4, 2)
    with tifffile.TiffFile(path) as tif:
        page = tif.pages[2]
        assert tuple(table[2, 1, 3]) == (page.dataoffsets[7], page.databytecounts[7])
    listed = generate_rfs_tiff(path, manifest_threshold=None)
    assert len(_chunk_refs(listed, "0")) == 64
    assert not listed.indexes


def test_pyramid_levels_and_multiscales(tmp_path: Path) -> None:
    path = tmp_path / "pyramid.ome.tif"
    data = RNG.integers(0, 4000, (2, 64, 96), dtype=np.uint16)
    with tifffile.TiffWriter(path, ome=True) as tif:
        options = {"tile": (32, 32), "photometric": "minisblack", "metadata": {"axes": "CYX"}}
        tif.write(data, subifds=2, **options)
        tif.write(data[:, ::2, ::2].copy(), subfiletype=1, tile=(32, 32), photometric="minisblack")
        tif.write(data[:, ::4, ::4].copy(), subfiletype=1, tile=(32, 32), photometric="minisblack")
    rfs = generate_rfs_tiff(path)
    group = _metadata(rfs, "0")
    assert group["node_type"] == "group"
    multiscales = group["attributes"]["multiscales"][0]
    assert [d["path"] for d in multiscales["datasets"]] == ["0", "1", "2"]
    assert multiscales["datasets"][2]["coordinateTransformations"][0]["scale"] == [1.0, 4.0, 4.0]
    assert [a["name"] for a in multiscales["axes"]] == ["c", "y", "x"]
    assert [array_info(rfs, f"0/{j}").shape for j in range(3)] == [
        (2, 64, 96),
        (2, 32, 48),
        (2, 16, 24),
    ]
    root = _metadata(rfs, "")["attributes"]
    assert root["bioformats2raw.layout"] == 3
    assert root["ome_xml"].startswith("<?xml")
    assert "Pixels" in group["attributes"]["ome"]


def test_imagej_and_palette_metadata_are_attributes(tmp_path: Path) -> None:
    path = tmp_path / "imagej.tif"
    tifffile.imwrite(
        path,
        RNG.integers(0, 255, (2, 3, 8, 9), dtype=np.uint8),
        imagej=True,
        metadata={"axes": "TZYX"},
    )
    rfs = generate_rfs_tiff(path)
    root = _metadata(rfs, "")["attributes"]
    assert root["imagej"]["frames"] == 2
    assert root["imagej"]["slices"] == 3
    array = _metadata(rfs, "0")
    assert array["attributes"]["axes"] == "TZYX"
    assert array["dimension_names"] == ["T", "Z", "Y", "X"]

    palette = tmp_path / "palette.tif"
    colormap = RNG.integers(0, 65535, (3, 256), dtype=np.uint16)
    tifffile.imwrite(
        palette,
        RNG.integers(0, 255, (8, 9), dtype=np.uint8),
        photometric="palette",
        colormap=colormap,
    )
    info = _metadata(generate_rfs_tiff(palette), "0")["attributes"]["tiff"]
    assert info["photometric"] == "PALETTE"
    assert info["colormap"] == colormap.tolist()


def test_url_and_sources(tmp_path: Path) -> None:
    path = tmp_path / "plain.tif"
    tifffile.imwrite(path, RNG.integers(0, 255, (8, 9), dtype=np.uint8), photometric="minisblack")
    url = "https://example.org/data/plain.tif"
    rfs = generate_rfs_tiff(path, url=url)
    assert rfs.sources[url].size == path.stat().st_size
    assert rfs.sources[url].etag is None
    document = rfs_to_json(rfs)
    assert document["refs"]["0/c/0/0"][0] in (url, "{{u0}}")


def test_large_uncompressed_pages_are_read_by_strips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shadowzarr_store import open_rfs

    import shadowzarr_tiff.generate

    monkeypatch.setattr(shadowzarr_tiff.generate, "MAX_PAGE_CHUNK_BYTES", 1000)
    path = tmp_path / "big_pages.tif"
    data = RNG.integers(0, 255, (3, 40, 30), dtype=np.uint8)
    tifffile.imwrite(path, data, rowsperstrip=8, photometric="minisblack")
    rfs = generate_rfs_tiff(path)
    assert _metadata(rfs, "0")["chunk_grid"]["configuration"]["chunk_shape"] == [1, 8, 30]
    assert len(_chunk_refs(rfs, "0")) == 15
    np.testing.assert_array_equal(open_rfs(rfs)["0"][...], data)


def _patch_entry(path: Path, old: tuple[int, int], new: tuple[int, int]) -> None:
    """Rewrite one short IFD entry (tag, value) of a little-endian classic TIFF, to make files
    tifffile will not write (it refuses fill order 2 and CCITT compression)."""
    import struct

    raw = bytearray(path.read_bytes())
    entry = struct.pack("<HHIH", old[0], 3, 1, old[1])
    at = raw.find(entry)
    assert at > 0
    raw[at : at + len(entry)] = struct.pack("<HHIH", new[0], 3, 1, new[1])
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ((65001, 2), (266, 2), "fill order 2"),
        ((259, 1), (259, 3), "CCITT bilevel compression"),
    ],
)
def test_unsupported_storage_is_refused_with_the_reason(
    tmp_path: Path, old: tuple[int, int], new: tuple[int, int], reason: str
) -> None:
    path = tmp_path / "patched.tif"
    tifffile.imwrite(
        path,
        np.zeros((4, 8), dtype=np.uint8),
        photometric="minisblack",
        extratags=[(65001, "H", 1, 2, True)],
    )
    _patch_entry(path, old, new)
    with pytest.raises(UnsupportedFeatureError) as error:
        generate_rfs_tiff(path)
    message = str(error.value)
    assert message.startswith(f"{path.resolve()}: series 0: ")
    assert reason in message


def test_contiguous_hyperstack_is_one_gen_entry_over_its_axes(tmp_path: Path) -> None:
    from shadowzarr_store import open_rfs

    path = tmp_path / "hyperstack.tif"
    data = RNG.integers(0, 60000, (3, 4, 2, 10, 12), dtype=np.uint16)
    tifffile.imwrite(path, data, imagej=True, metadata={"axes": "TZCYX"})
    rfs = generate_rfs_tiff(path)
    assert len(rfs.gen) == 1
    assert rfs.gen[0].count == 24
    assert rfs.gen[0].key == "0/c/{{i0}}/{{i1}}/{{i2}}/0/0"
    assert not _chunk_refs(rfs, "0")
    np.testing.assert_array_equal(open_rfs(rfs)["0"][...], data)
    with tifffile.TiffFile(path) as tif:
        start = tif.series[0].dataoffset
    assert rfs.gen[0].lookup("0/c/2/1/1/0/0").offset == start + (2 * 8 + 1 * 2 + 1) * 240


def test_uncompressed_short_strips_of_scattered_pages(tmp_path: Path) -> None:
    """Strips not dividing the height, and pages not stored in one piece (an IFD between two
    strips), so page chunks do not apply: the short last strips are padded inline."""
    from shadowzarr_spec import InlineRef
    from shadowzarr_store import open_rfs

    path = tmp_path / "scattered.tif"
    data = RNG.integers(0, 60000, (3, 20, 16), dtype=np.uint16)
    tifffile.imwrite(path, data, rowsperstrip=6, photometric="minisblack", metadata=None)
    raw = bytearray(path.read_bytes())
    with tifffile.TiffFile(path) as tif:
        page = tif.pages[1]
        second = page.dataoffsets[1]
        strip_offsets_tag = page.tags["StripOffsets"]
    # Move the page's second strip to the end of the file and point the tag at it.
    strip = bytes(raw[second : second + page.databytecounts[1]])
    new_offset = len(raw)
    raw += strip
    raw[second : second + len(strip)] = bytes(len(strip))  # nothing left where it was
    pointer = strip_offsets_tag.valueoffset + 4
    raw[pointer : pointer + 4] = new_offset.to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    with tifffile.TiffFile(path) as tif:
        assert tif.pages[1].dataoffsets[1] == new_offset
        np.testing.assert_array_equal(tif.pages[1].asarray(), data[1])
    rfs = generate_rfs_tiff(path)
    refs = _chunk_refs(rfs, "0")
    assert sum(isinstance(ref, InlineRef) for ref in refs.values()) == 3
    np.testing.assert_array_equal(open_rfs(rfs)["0"][...], data)
