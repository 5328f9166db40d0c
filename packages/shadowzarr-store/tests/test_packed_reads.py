"""Packed inner chunks of the grouped view read exactly what the chunks as stored read, for a
sound chunk manifest and for damaged ones: the same values, or the same typed error naming the
same chunk."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import ShadowzarrError

from shadowzarr_store import open_rfs

CHUNK = 8 * 8 * 4  # bytes of one stored chunk


def _damage(kind: str, table: np.ndarray, file_size: int) -> None:
    offsets = table[:, 0, 0]
    if kind == "over-long":
        table[3, 0, 1] = CHUNK + 8
    elif kind == "short":
        table[5, 0, 1] = CHUNK - 12  # an uncompressed chunk shorter than full: padded
    elif kind == "past the end":
        table[7, 0, 0] = file_size + 100
    elif kind == "reaching past the end":
        table[9, 0, 0] = file_size - 100  # the recorded size proves the rest missing
    elif kind == "swapped":
        offsets[[2, 11]] = offsets[[11, 2]]
    elif kind == "repeated":
        offsets[20:30] = offsets[20]
    elif kind == "never written":
        table[40:60] = np.iinfo(np.uint64).max


@pytest.mark.parametrize(
    "kind",
    [
        "sound",
        "over-long",
        "short",
        "past the end",
        "reaching past the end",
        "swapped",
        "repeated",
        "never written",
    ],
)
def test_packed_reads_equal_stored_reads(tmp_path: Path, kind: str) -> None:
    values = np.arange(200 * 8 * 8, dtype="<i4").reshape(1600, 8)
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("x", data=values, chunks=(8, 8), fillvalue=-3)
    rfs = generate_rfs(tmp_path / "f.h5", manifest_threshold=10, progress=False)
    _damage(kind, rfs.indexes["x"].table, (tmp_path / "f.h5").stat().st_size)
    packed, stored = open_rfs(rfs, grouped_view="auto")["x"], open_rfs(rfs, grouped_view=0)["x"]
    assert packed.chunks != stored.chunks == (8, 8)
    try:
        whole = stored[:]
    except ShadowzarrError as exc:
        failure: ShadowzarrError | None = exc
    else:
        failure = None
    for selection in (np.s_[:], np.s_[30:90, 2:5], np.s_[1599, :]):
        if failure is None:
            np.testing.assert_array_equal(packed[selection], whole[selection])
            continue
        # a damaged chunk fails every read of its pack (a selection may not touch it, but its
        # pack's bytes cannot be made without it), with the error the chunk as stored raises
        with pytest.raises(type(failure)) as raised:
            packed[selection]
        assert str(raised.value) == str(failure)
    if kind == "sound":
        np.testing.assert_array_equal(whole, values)


def _filters() -> dict[str, dict]:
    import hdf5plugin

    return {
        "gzip": {"compression": "gzip"},
        "shuffle+gzip+fletcher32": {"compression": "gzip", "shuffle": True, "fletcher32": True},
        # LZF grows the 3-row edge chunks, so HDF5 stores them unfiltered and they are listed
        # in refs (the array is then grouped unpacked): no edge here
        "lzf": {"compression": "lzf", "rows": 1600},
        "zstd": dict(hdf5plugin.Zstd()),
        "blosc-lz4": dict(hdf5plugin.Blosc(cname="lz4", shuffle=hdf5plugin.Blosc.SHUFFLE)),
        "big-endian gzip": {"compression": "gzip", "dtype": ">i4"},
    }


@pytest.mark.parametrize("name", list(_filters()))
def test_decoded_packs_equal_h5py(tmp_path: Path, name: str) -> None:
    """Compressed stored chunks are decoded by the store into packs of plain bytes: the same
    values as h5py, for every selection, and the stored view keeps the stored codecs."""
    options = dict(_filters()[name])
    dtype, rows = options.pop("dtype", "<i4"), options.pop("rows", 1603)
    # compressible: every chunk filtered (a filter HDF5 may skip for a chunk it would grow
    # leaves that chunk listed in refs, and the array is then grouped unpacked)
    values = (np.arange(rows * 12).reshape(rows, 12) // 40 % 977 - 400).astype(dtype)
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("x", data=values, chunks=(8, 4), **options)
        part = f.create_dataset("part", (rows, 12), dtype, chunks=(8, 4), fillvalue=-9, **options)
        part[300:900, 4:8] = values[300:900, 4:8]
    rfs = generate_rfs(tmp_path / "f.h5", manifest_threshold=10, progress=False)
    group, stored = open_rfs(rfs, grouped_view="auto"), open_rfs(rfs, grouped_view=0)
    with h5py.File(tmp_path / "f.h5") as f:
        for path in ("x", "part"):
            packed, native = group[path], f[path][:]
            inner = [c.to_dict()["name"] for c in packed.metadata.codecs[0].codecs]
            assert packed.chunks != (8, 4)
            assert inner == ["bytes"]
            assert len(stored[path].metadata.codecs) > 1  # as stored: its compressor
            for selection in (np.s_[:], np.s_[1590:], np.s_[17:333, 3:9], np.s_[::7, 11]):
                np.testing.assert_array_equal(packed[selection], native[selection])


def test_a_damaged_compressed_chunk_fails_its_pack_by_name(tmp_path: Path) -> None:
    values = np.arange(1600 * 8, dtype="<i4").reshape(1600, 8)
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("x", data=values, chunks=(8, 8), compression="gzip")
    rfs = generate_rfs(tmp_path / "f.h5", manifest_threshold=10, progress=False)
    rfs.indexes["x"].table[5, 0, 0] += 3  # the reference of chunk 5 starts 3 bytes late
    stored = open_rfs(rfs, grouped_view=0)["x"]
    with pytest.raises(ShadowzarrError) as as_stored:
        stored[40:48]
    packed = open_rfs(rfs, grouped_view="auto")["x"]
    for selection in (np.s_[40:48], np.s_[0:8]):  # chunk 5 itself, and a neighbour in its pack
        with pytest.raises(type(as_stored.value), match="'x/c/5/0'"):
            packed[selection]
    np.testing.assert_array_equal(stored[0:8], values[0:8])  # as stored: the neighbour reads


@pytest.mark.parametrize("seed", range(6))
def test_packs_rearranged_from_pieces_equal_packs_from_their_joined_bytes(seed: int) -> None:
    """The answers of a shard's reads split its stored chunks anywhere (where the file's
    order breaks): rearranging each piece straight into the value gives the same bytes as
    joining them first, whatever the split, and pieces that are not whole packs are refused."""
    from shadowzarr_store.views.grouped import GroupLayout

    rng = np.random.default_rng(seed)
    layout = GroupLayout(
        chunk_shape=(3, 4, 2), grid=(40, 6, 3), factors=(8, 6, 3), pack=(2, 3, 3), itemsize=2
    )
    count = int(rng.integers(1, 7))
    rows = count * layout.members
    members = rng.integers(0, 256, (rows, layout.chunk_nbytes), dtype=np.uint8)
    expected = layout.pack_bytes(members.reshape(count, layout.members, -1))
    cuts = np.sort(rng.choice(np.arange(1, rows), size=min(rows - 1, 5), replace=False))
    pieces = np.split(members, cuts)
    np.testing.assert_array_equal(layout.pack_rows(pieces), expected)
    into = np.zeros_like(expected)
    assert layout.pack_rows(pieces, into) is into
    np.testing.assert_array_equal(into, expected)
    with pytest.raises(ValueError, match="not whole packs"):
        layout.pack_rows([members[:-1]])


@pytest.mark.parametrize(
    ("chunk_shape", "pack", "itemsize"),
    [
        ((5,), (7,), 8),
        ((3, 4), (2, 5), 2),
        ((1, 6), (4, 1), 4),
        ((3, 4, 2), (2, 3, 3), 2),
        ((2, 1, 3), (1, 4, 2), 1),
    ],
)
def test_a_pack_is_its_stored_chunks_placed_in_one_c_order_block(
    chunk_shape: tuple[int, ...], pack: tuple[int, ...], itemsize: int
) -> None:
    """`GroupLayout.pack_bytes` against its definition, chunk by chunk: the inner chunk is the
    block of its stored chunks (members in C order over ``pack``), each placed at its offset
    in the block, the block's elements in C order."""
    from shadowzarr_store.views.grouped import GroupLayout

    layout = GroupLayout(
        chunk_shape=chunk_shape,
        grid=tuple(4 * p for p in pack),
        factors=tuple(2 * p for p in pack),
        pack=pack,
        itemsize=itemsize,
    )
    rng = np.random.default_rng(len(chunk_shape))
    count = 3
    members = rng.integers(0, 256, (count, layout.members, layout.chunk_nbytes), dtype=np.uint8)
    element = np.dtype((np.void, itemsize))
    for into in (None, np.zeros((count, layout.members * layout.chunk_nbytes), np.uint8)):
        packed = layout.pack_bytes(members, into)
        assert packed.shape == (count, layout.members * layout.chunk_nbytes)
        for k in range(count):
            block = np.empty(layout.inner_shape, dtype=element)
            for m, where in enumerate(np.ndindex(*pack)):
                chunk = members[k, m].view(element).reshape(chunk_shape)
                place = tuple(
                    slice(w * c, (w + 1) * c) for w, c in zip(where, chunk_shape, strict=True)
                )
                block[place] = chunk
            assert packed[k].tobytes() == block.tobytes()
