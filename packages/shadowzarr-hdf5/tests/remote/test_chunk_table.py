"""Chunk tables parsed from raw bytes against h5py's chunk_iter and read_direct_chunk."""

from __future__ import annotations

from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
from shadowzarr_store.transport import RangeSource

from shadowzarr_hdf5.format.btree_v2 import header_size, parse_header
from shadowzarr_hdf5.format.chunk_index import read_dataset_index
from shadowzarr_hdf5.format.data_layout import IndexKind
from shadowzarr_hdf5.format.errors import Hdf5FormatError
from shadowzarr_hdf5.format.superblock_extension import read_superblock
from shadowzarr_hdf5.h5py_glue import dataset_address
from shadowzarr_hdf5.remote import read_chunk_table

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def h5py_chunks(dset: h5py.Dataset) -> list[tuple[tuple[int, ...], int, int, int]]:
    found: list[tuple[tuple[int, ...], int, int, int]] = []
    dset.id.chunk_iter(
        lambda c: found.append((tuple(c.chunk_offset), c.byte_offset, c.size, c.filter_mask))
    )
    return sorted(found)


def check_file(path: Path, *, chunk_iter_wrong: set[str] = frozenset()) -> dict[str, IndexKind]:
    """Every chunked dataset: table == chunk_iter, and bytes == read_direct_chunk."""
    kinds: dict[str, IndexKind] = {}
    raw = path.read_bytes()
    with h5py.File(path, "r") as f, RangeSource(path) as source:
        for name, dset in f.items():
            table = read_chunk_table(source, dset)
            kinds[name] = table.index_kind
            assert table.chunk_shape == dset.chunks
            assert table.shape == dset.shape
            assert table.coords.dtype == np.int64
            assert table.offsets.dtype == np.uint64
            assert len(table) == dset.id.get_num_chunks()
            ours = sorted(
                (
                    tuple(int(c) * s for c, s in zip(co, dset.chunks, strict=True)),
                    int(o),
                    int(n),
                    int(m),
                )
                for co, o, n, m in zip(
                    table.coords, table.offsets, table.sizes, table.filter_masks, strict=True
                )
            )
            if name not in chunk_iter_wrong:
                assert ours == h5py_chunks(dset), name
            for start, offset, size, mask in ours:
                got_mask, data = dset.id.read_direct_chunk(start)
                assert got_mask == mask
                assert raw[offset : offset + size] == data, (name, start)
    return kinds


WRITERS = ["appended", "partial_2d", "two_unlimited", "fixed_array", "single_chunk"]
CASES = [
    (writer, libver, filters)
    for writer in [*WRITERS, "direct_chunks"]
    for libver in ("earliest", "latest")
    # filter_mask=1 only means something with a filter pipeline
    for filters in ("none", "gzip", "shuffle+gzip+fletcher32")
    if not (writer == "direct_chunks" and filters == "none")
]


# Layout message version 4 with filters: the stored-size field is narrower than in version 5.
CASES += [
    (writer, "v110", filters)
    for writer in ("appended", "two_unlimited", "fixed_array", "single_chunk")
    for filters in ("gzip", "shuffle+gzip+fletcher32")
]


@pytest.mark.parametrize(("writer", "libver", "filters"), CASES)
def test_index_kinds_match_h5py(
    write_h5: Callable[..., Path], tmp_path: Path, writer: str, libver: str, filters: str
) -> None:
    path = write_h5(tmp_path / "f.h5", writer, libver, filters)
    kinds = check_file(path)
    if libver == "v110":
        with h5py.File(path, "r") as f, RangeSource(path) as source:
            name = "a" if "a" in f else "small"
            index = read_dataset_index(source, read_superblock(source), dataset_address(f[name]))
            assert index.layout.version == 4
    if libver == "earliest":
        assert set(kinds.values()) == {IndexKind.BTREE_V1}
    else:
        expected = {
            "appended": IndexKind.EXTENSIBLE_ARRAY,
            "partial_2d": IndexKind.FIXED_ARRAY,
            "two_unlimited": IndexKind.BTREE_V2,
            "fixed_array": IndexKind.FIXED_ARRAY,
            "single_chunk": IndexKind.SINGLE_CHUNK,
            "direct_chunks": IndexKind.EXTENSIBLE_ARRAY,
        }[writer]
        assert kinds["a" if "a" in kinds else "small"] == expected


def test_implicit_index(write_h5: Callable[..., Path], tmp_path: Path) -> None:
    kinds = check_file(write_h5(tmp_path / "f.h5", "implicit", "latest", "none"))
    assert kinds == {"a": IndexKind.IMPLICIT}


def test_extensible_array_unlimited_dim_not_first(
    write_h5: Callable[..., Path], tmp_path: Path
) -> None:
    """HDF5's chunk_iter mislabels these (§6.1); read_direct_chunk at our coords is the truth."""
    path = write_h5(tmp_path / "f.h5", "unlimited_not_first", "latest", "gzip")
    kinds = check_file(path, chunk_iter_wrong={"a", "b"})
    assert set(kinds.values()) == {IndexKind.EXTENSIBLE_ARRAY}
    with h5py.File(path, "r") as f, RangeSource(path) as source:
        table = read_chunk_table(source, f["b"])
        expected = {(i, j, k) for i in range(3) for j in range(7) for k in range(3)}
        assert {tuple(int(x) for x in c) for c in table.coords} == expected


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_userblock_offsets_are_absolute(
    write_h5: Callable[..., Path], tmp_path: Path, libver: str
) -> None:
    path = write_h5(tmp_path / "f.h5", "appended", libver, "gzip", userblock=512)
    assert path.read_bytes()[512:516] == b"\x89HDF"
    check_file(path)


@pytest.mark.parametrize(
    ("libver", "sizes", "k"),
    [("earliest", (4, 8), 8), ("earliest", (8, 4), None), ("latest", (4, 8), 8)],
)
def test_field_sizes_and_btree_k(
    write_h5: Callable[..., Path],
    tmp_path: Path,
    libver: str,
    sizes: tuple[int, int],
    k: int | None,
) -> None:
    path = write_h5(tmp_path / "f.h5", "partial_2d", libver, "gzip", sizes=sizes, istore_k=k)
    check_file(path)
    path = write_h5(tmp_path / "g.h5", "appended", libver, "none", sizes=sizes, istore_k=k)
    check_file(path)


@pytest.mark.slow
def test_paged_extensible_array(tmp_path: Path) -> None:
    """140,000 one-element chunks: EA super blocks from 13 on have paged data blocks, and the
    pages between the written runs stay uninitialised."""
    path = tmp_path / "ea.h5"
    with h5py.File(path, "w", libver="latest") as f:
        d = f.create_dataset("a", (0,), maxshape=(None,), chunks=(1,), dtype="u1")
        d.resize((140_000,))
        d[:50_000] = 1
        d[131_100:131_200] = 2
        d[139_500:] = 3
    with h5py.File(path, "r") as f, RangeSource(path) as source:
        dset = f["a"]
        table = read_chunk_table(source, dset)
        assert table.index_kind == IndexKind.EXTENSIBLE_ARRAY
        assert len(table) == 50_000 + 100 + 500
        ours = sorted(zip(table.coords[:, 0].tolist(), table.offsets.tolist(), strict=True))
        assert ours == [(c[0][0], c[1]) for c in h5py_chunks(dset)]
        values = np.frombuffer(path.read_bytes(), np.uint8)[table.offsets.astype(np.int64)]
        assert np.array_equal(values, dset[...][table.coords[:, 0]])


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_v2_btree_of_depth_two(tmp_path: Path, compression: str | None) -> None:
    """Enough records for internal nodes below the root: records at every level, 3 pointer
    widths."""
    path = tmp_path / "bt2.h5"
    with h5py.File(path, "w", libver="latest") as f:
        d = f.create_dataset(
            "a", (0, 4), maxshape=(None, None), chunks=(1, 1), dtype="i2", compression=compression
        )
        for start in range(0, 2_500, 50):
            d.resize((start + 50, 4))
            d[start:] = np.arange(200).reshape(50, 4) + start
    with h5py.File(path, "r") as f, RangeSource(path) as source:
        dset = f["a"]
        sb = read_superblock(source)
        layout = read_dataset_index(source, sb, dataset_address(dset)).layout
        (head,) = source.fetch_many([(sb.absolute(layout.address), header_size(sb))])
        assert parse_header(sb, head, layout.address).depth >= 2
    check_file(path)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [(slice(0, 4), b"TRAP", "expected b'TREE'"), (slice(6, 8), b"\xff\xff", "claims 65535")],
    ids=["signature", "entry count"],
)
def test_a_damaged_leaf_of_a_v1_btree_is_named(
    tmp_path: Path, field: slice, value: bytes, message: str
) -> None:
    """A level's leaves are decoded together; a bad one is still refused by its address."""
    path = tmp_path / "deep.h5"
    with h5py.File(path, "w", libver="earliest") as f:
        dset = f.create_dataset("a", (0,), maxshape=(None,), chunks=(4,), dtype="i4")
        for start in range(0, 600, 4):
            dset.resize((start + 4,))
            dset[start:] = np.arange(start, start + 4, dtype="i4")
        address = dataset_address(dset)
    raw = bytearray(path.read_bytes())
    leaves = [
        at
        for at in range(len(raw) - 8)
        if raw[at : at + 4] == b"TREE" and raw[at + 4] == 1 and raw[at + 5] == 0
    ]
    assert len(leaves) > 2  # a tree of more than one level
    raw[leaves[1] + field.start : leaves[1] + field.stop] = value
    path.write_bytes(raw)
    with RangeSource(path) as source, pytest.raises(Hdf5FormatError, match=message) as caught:
        read_chunk_table(source, address)
    assert str(leaves[1]) in str(caught.value)
