"""RfsBuilder refuses what would not read back, naming the array."""

from __future__ import annotations

import json

import numpy as np
import pytest

from shadowzarr_spec import BuilderError, GenEntry, InlineRef, RfsBuilder, columns_selection
from shadowzarr_spec.model import FileRef


def make() -> RfsBuilder:
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array("acq/data", shape=[100, 4], data_type=">i2", chunk_shape=[10, 4])
    return builder


def test_metadata_is_what_zarr_writes() -> None:
    rfs = make().build()
    meta = json.loads(rfs.refs["acq/data/zarr.json"].data)  # type: ignore[union-attr]
    assert meta["data_type"] == "int16"
    assert meta["codecs"] == [{"name": "bytes", "configuration": {"endian": "big"}}]
    assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [10, 4]
    assert json.loads(rfs.refs["acq/zarr.json"].data)["node_type"] == "group"  # type: ignore[union-attr]
    root = json.loads(rfs.refs["zarr.json"].data)  # type: ignore[union-attr]
    assert set(root["consolidated_metadata"]["metadata"]) == {"acq", "acq/data"}


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (lambda b: b.add_chunk("acq/data", (10, 0), "f", 0, 80), "outside the chunk grid"),
        (lambda b: b.add_chunk("acq/data", (0,), "f", 0, 80), "outside the chunk grid"),
        (lambda b: b.add_chunk("acq/data", (0, 0), "f", -1, 80), "negative"),
        (lambda b: b.add_chunk("nope", (0, 0), "f", 0, 80), "no array 'nope'"),
        (lambda b: b.add_selection("acq/data", 10, [[8, 12]]), "does not fit"),
        (lambda b: b.add_index("acq/data", "f", np.zeros((10, 1, 2), dtype=np.uint32)), "uint64"),
        (lambda b: b.add_array("acq/data", shape=[1], data_type="i1"), "added already"),
        (lambda b: b.add_array("acq/x", shape=[3], data_type="i1", chunk_shape=[0]), "positive"),
        (
            lambda b: b.add_array("acq/x", shape=[3, 3], data_type="i1", chunk_shape=[3]),
            "does not match",
        ),
        (lambda b: b.add_array("../x", shape=[3], data_type="i1"), "'..'"),
        (
            lambda b: b.add_strided_chunks(
                "acq/data", url="f", start=0, stride=80, length=80, count=11
            ),
            "exceed",
        ),
    ],
)
def test_refusals_name_the_problem(action: object, message: str) -> None:
    builder = make()
    with pytest.raises((BuilderError, ValueError), match=message):
        action(builder)  # type: ignore[operator]


def test_selection_must_divide_chunks_and_stay_uncompressed() -> None:
    builder = make()
    builder.add_selection("acq/data", 10, [[0, 6]])
    with pytest.raises(BuilderError, match="whole number of selected records"):
        builder.build()
    builder = RfsBuilder()
    builder.add_array(
        "z",
        shape=[10],
        data_type="<i4",
        codecs=[{"name": "bytes"}, {"name": "numcodecs.zlib", "configuration": {"level": 1}}],
    )
    builder.add_selection("z", 8, [[0, 4]])
    with pytest.raises(BuilderError, match="uncompressed"):
        builder.build()


def test_codecs_zarr_refuses_are_reported() -> None:
    builder = RfsBuilder()
    builder.add_array("z", shape=[10], data_type="<i4", codecs=[{"name": "no-such-codec"}])
    with pytest.raises(BuilderError, match="zarr-python refuses"):
        builder.build()


def test_a_shard_of_no_whole_inner_chunks_is_refused_after_a_good_one() -> None:
    """Metadata zarr-python accepted once is not asked about again in the process, but a
    sharded array's chunk shape is part of what is asked: 3 elements hold no whole inner
    chunks of 2, whatever was accepted before."""
    little = {"name": "bytes", "configuration": {"endian": "little"}}
    sharding = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [2],
            "codecs": [little],
            "index_codecs": [little, {"name": "crc32c"}],
            "index_location": "end",
        },
    }
    for chunk, accepted in ((4, True), (3, False), (4, True)):
        builder = RfsBuilder()
        builder.add_array("z", shape=[12], data_type="<i4", chunk_shape=[chunk], codecs=[sharding])
        if accepted:
            assert builder.build().refs["z/zarr.json"]
        else:
            with pytest.raises(BuilderError, match="zarr-python refuses"):
                builder.build()


def test_a_codec_a_known_package_provides_is_accepted_where_it_is_not_installed() -> None:
    """Generating decodes nothing: an imagecodecs codec is the reader's to install."""
    builder = RfsBuilder()
    codecs = [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "imagecodecs_nope"},
    ]
    builder.add_array("z", shape=[10], data_type="<i4", codecs=codecs)
    assert builder.build().refs["z/zarr.json"]


def test_columns_selection_joins_neighbours_and_keeps_order() -> None:
    assert columns_selection(385, 2, slice(0, 384)) == (770, [[0, 768]])
    assert columns_selection(4, 2, [3, 0, 1]) == (8, [[6, 8], [0, 4]])
    with pytest.raises(BuilderError):
        columns_selection(4, 2, [4])


def test_contiguous_chunks_become_one_gen_entry() -> None:
    builder = RfsBuilder()
    builder.add_array("t", shape=[1000], data_type="<f8", chunk_shape=[100])
    builder.add_contiguous_chunks(
        "t", url="f.h5", start=2048, shape=[1000], chunk_shape=[100], itemsize=8
    )
    rfs = builder.build()
    (entry,) = rfs.gen
    assert isinstance(entry, GenEntry)
    assert entry.lookup("t/c/9").offset == 2048 + 9 * 800  # type: ignore[union-attr]
    assert rfs.version == 2


def test_inline_chunks_and_scalars() -> None:
    builder = RfsBuilder()
    builder.add_array("s", shape=[], data_type="<i8")
    builder.add_inline_chunk("s", (), np.int64(7).tobytes())
    rfs = builder.build()
    assert rfs.refs["s/c"] == InlineRef(np.int64(7).tobytes())
    assert rfs.version == 1


def _listed(add: object) -> tuple[str, dict[str, object]]:
    """The JSON text and refs of an array whose chunks ``add(builder)`` adds."""
    from shadowzarr_spec.json_text import dumps_strict
    from shadowzarr_spec.serialize import rfs_to_json

    builder = RfsBuilder()
    builder.add_array("a/x", shape=(10, 6), chunk_shape=(2, 3), data_type="<i4")
    add(builder)  # type: ignore[operator]
    rfs = builder.build()
    return dumps_strict(rfs_to_json(rfs)), rfs.refs


def test_add_chunks_is_add_chunk_for_every_row_in_order() -> None:
    rng = np.random.default_rng(5)
    coords = np.array([(i, j) for i in range(5) for j in range(2)])[rng.permutation(10)]
    offsets = rng.integers(0, 2**40, 10).astype(np.uint64)
    sizes = rng.integers(1, 1000, 10).astype(np.uint64)

    def one_by_one(builder: RfsBuilder) -> None:
        builder.add_chunk("a/x", (0, 0), "u0", 1, 2)
        for c, o, s in zip(coords.tolist(), offsets.tolist(), sizes.tolist(), strict=True):
            builder.add_chunk("a/x", c, "file.h5", o, s)
        builder.add_inline_chunk("a/x", (4, 1), b"\x00" * 24)
        builder.add_chunk("a/x", (0, 0), "file.h5", 5, 6)  # replaces, keeps its place

    def columns(builder: RfsBuilder) -> None:
        builder.add_chunk("a/x", (0, 0), "u0", 1, 2)
        builder.add_chunks("a/x", coords, "file.h5", offsets, sizes)
        builder.add_inline_chunk("a/x", (4, 1), b"\x00" * 24)
        builder.add_chunk("a/x", (0, 0), "file.h5", 5, 6)

    text, refs = _listed(columns)
    assert (text, refs) == _listed(one_by_one)
    chunk_keys = [key for key in refs if "/c/" in key]
    assert chunk_keys[0] == "a/x/c/0/0"
    assert refs["a/x/c/0/0"] == FileRef("file.h5", 5, 6)
    assert len(chunk_keys) == 10


@pytest.mark.parametrize(
    ("coords", "offsets", "sizes", "message"),
    [
        ([(5, 0)], [0], [1], r"chunk \(5, 0\) is outside the chunk grid \(5, 2\)"),
        ([(0, -1)], [0], [1], "outside the chunk grid"),
        ([(0, 0)], [-3], [1], "negative offset or size"),
        ([(0, 0)], [0], [-1], "negative offset or size"),
        ([(0, 0)], [0.5], [1], "must be integers"),
        ([(0, 0), (1, 1)], [0], [1, 2], "offsets of shape"),
    ],
)
def test_add_chunks_refuses_what_add_chunk_refuses(
    coords: list[tuple[int, int]], offsets: list[float], sizes: list[int], message: str
) -> None:
    builder = RfsBuilder()
    builder.add_array("x", shape=(10, 6), chunk_shape=(2, 3), data_type="<i4")
    with pytest.raises(BuilderError, match=message):
        builder.add_chunks("x", coords, "file.h5", np.asarray(offsets), np.asarray(sizes))


def test_a_reference_past_the_recorded_end_of_its_file_is_refused() -> None:
    """Readers refuse such a reference (never padding): the builder refuses to write one, in
    refs, columns, chunk manifests and gen entries alike."""
    for add in (
        lambda b: b.add_chunk("x", (3,), "f.bin", 90, 16),
        lambda b: b.add_chunks("x", np.array([[0], [3]]), "f.bin", [0, 90], [16, 16]),
        lambda b: b.add_strided_chunks("x", url="f.bin", start=0, stride=16, length=16, count=8),
        lambda b: b.add_index("x", "f.bin", np.array([[0, 16]] * 6 + [[96, 16]] * 2, "u8")),
    ):
        builder = RfsBuilder()
        builder.add_array("x", shape=[32], data_type="int32", chunk_shape=[4])
        add(builder)
        builder.add_source("f.bin", size=100)
        with pytest.raises(BuilderError, match=r"past the end of the file \(100 bytes"):
            builder.build()
    builder = RfsBuilder()
    builder.add_array("x", shape=[30], data_type="int32", chunk_shape=[4])
    builder.add_chunk("x", (7,), "f.bin", 92, 8)  # a short last chunk ending at the end
    builder.add_source("f.bin", size=100)
    assert builder.build().refs["x/c/7"] == FileRef("f.bin", 92, 8)
