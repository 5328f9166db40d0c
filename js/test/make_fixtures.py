"""Write the fixtures the JS tests read: source files, their references, and expected values.

Usage: ``uv run python js/test/make_fixtures.py OUTDIR``

OUTDIR/data/      HDF5 files written with h5py and raw binary files written with numpy
OUTDIR/refs/      reference files for them, built with shadowzarr_spec.RfsBuilder / write_rfs:
                  one JSON file (version 1, every chunk listed) and directories (version 2, with
                  chunk manifests, gen entries and selections), all with URLs relative to themselves
OUTDIR/expected/  what h5py/numpy read: raw little-endian C-order dumps, and manifest.json with
                  each array's dtype, shape, fill value, strings, attributes and struct bytes

The HDF5 references are built here from h5py's own chunk table (``dset.id.get_chunk_info``),
independently of shadowzarr's HDF5 generator.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import Dimension, GenEntry, RfsBuilder, write_rfs

# h5py filter ids
DEFLATE, SHUFFLE, FLETCHER32 = 1, 2, 3


def etag_of(path: Path) -> str:
    """The ETag the test server sends: the quoted md5 of the file."""
    return '"' + hashlib.md5(path.read_bytes()).hexdigest() + '"'


def little_endian_dump(array: np.ndarray) -> bytes:
    """C-order little-endian bytes, the layout the JS side compares with."""
    out = np.ascontiguousarray(array)
    if out.dtype.byteorder == ">":
        out = out.astype(out.dtype.newbyteorder("<"))
    return out.tobytes()


def hdf5_codecs(dset: h5py.Dataset) -> list[dict[str, Any]]:
    """Zarr v3 codecs for the dataset's filter pipeline, in encode order."""
    dtype = dset.dtype
    order = {">": "big", "<": "little", "=": "little", "|": None}[dtype.byteorder]
    codecs: list[dict[str, Any]] = [
        {"name": "bytes", "configuration": {"endian": order}} if order else {"name": "bytes"}
    ]
    plist = dset.id.get_create_plist()
    for i in range(plist.get_nfilters()):
        code, _flags, values, _name = plist.get_filter(i)
        if code == SHUFFLE:
            codecs.append(
                {"name": "numcodecs.shuffle", "configuration": {"elementsize": dtype.itemsize}}
            )
        elif code == DEFLATE:
            codecs.append({"name": "numcodecs.zlib", "configuration": {"level": int(values[0])}})
        elif code == FLETCHER32:
            codecs.append({"name": "numcodecs.fletcher32", "configuration": {}})
        else:
            raise ValueError(f"filter {code} not handled by the fixture script")
    return codecs


def add_hdf5_dataset(builder: RfsBuilder, dset: h5py.Dataset, url: str) -> None:
    """Describe one numeric (or compound) HDF5 dataset with its chunk locations."""
    path = dset.name.lstrip("/")
    fill = dset.fillvalue
    fill_value = None if dset.dtype.fields else fill.item() if hasattr(fill, "item") else fill
    if dset.chunks is not None:
        builder.add_array(
            path,
            shape=dset.shape,
            data_type=dset.dtype,
            chunk_shape=dset.chunks,
            codecs=hdf5_codecs(dset),
            fill_value=fill_value,
            attributes=dict(dset.attrs),
        )
        for i in range(dset.id.get_num_chunks()):
            info = dset.id.get_chunk_info(i)
            assert info.filter_mask == 0
            coords = [o // c for o, c in zip(info.chunk_offset, dset.chunks, strict=True)]
            builder.add_chunk(path, coords, url, info.byte_offset, info.size)
        return
    builder.add_array(
        path,
        shape=dset.shape,
        data_type=dset.dtype,
        chunk_shape=dset.shape if dset.shape else None,
        fill_value=fill_value,
        attributes=dict(dset.attrs),
    )
    offset = dset.id.get_offset()
    if offset is None:  # compact layout: the bytes live in the object header
        builder.add_inline_chunk(path, [0] * dset.ndim, dset[()].tobytes())
    else:
        builder.add_chunk(path, [0] * dset.ndim, url, offset, dset.id.get_storage_size())


GENERATED_URL = "http://fixtures.invalid/data/h5data.h5"


def write_generated_hdf5_refs(h5: Path, refs_dir: Path) -> None:
    """References written by shadowzarr's own HDF5 generator for the same file, pointing at a
    placeholder URL that the JS tests map to the server with the store's resolveUrl option."""
    from shadowzarr_hdf5 import generate_rfs

    rfs = generate_rfs(
        GENERATED_URL,
        local_hdf5_path=h5,
        manifest_threshold=4,
        contiguous_chunk_bytes=1024,
        inline_threshold=0,
        record_source=False,
    )
    write_rfs(rfs, refs_dir / "hdf5_generated.shadowzarr")


def write_text_compounds(data_dir: Path, refs_dir: Path) -> list[dict[str, Any]]:
    """Compound datasets with a fixed-length UTF-8 string field, which the HDF5 generator stores
    as structs with a ``fixed_length_utf32`` field (the values converted, stored inline): one
    contiguous, one chunked with chunks never written (read as the fill element). Returns what
    h5py reads, field by field, with the strings decoded."""
    from shadowzarr_hdf5 import generate_rfs

    path = data_dir / "text_compound.h5"
    dtype = np.dtype([("id", "<i4"), ("name", h5py.string_dtype("utf-8", 12)), ("x", "<f8")])
    rows = [(1, "alpha", 0.5), (2, "β-beta", 1.5), (3, "", 2.5), (4, "twelve bytes", 3.5)]
    values = np.array([(i, n.encode(), x) for i, n, x in rows], dtype=dtype)
    with h5py.File(path, "w") as f:
        f.create_dataset("table", data=values)
        f.create_dataset("chunked", shape=(10,), chunks=(4,), dtype=dtype)[:4] = values
    rfs = generate_rfs(
        GENERATED_URL.replace("h5data.h5", path.name),
        local_hdf5_path=path,
        inline_threshold=0,
        record_source=False,
    )
    write_rfs(rfs, refs_dir / "text_compound.shadowzarr")
    out = []
    with h5py.File(path, "r") as f:
        for name in ("table", "chunked"):
            read = f[name][()]
            fields = {
                "id": read["id"].tolist(),
                "name": [b.decode() for b in read["name"].tolist()],
                "x": read["x"].tolist(),
            }
            out.append({"path": name, "shape": list(read.shape), "fields": fields})
    return out


def write_type_conventions(data_dir: Path, refs_dir: Path) -> list[dict[str, Any]]:
    """Compounds with array fields (a pandas table through PyTables, a nested record) and
    sequences of numbers, which the HDF5 generator stores under the type conventions
    (``_STRUCTURED_DTYPE`` records pointing into the file, ``_VLEN_DTYPE`` sequences inline).
    Returns each array's path and what h5py reads, in the conformance suite's form."""
    import warnings

    import pandas as pd
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_spec import ConventionTypeWarning
    from shadowzarr_spec.conformance import native_form
    from zarr.errors import UnstableSpecificationWarning

    path = data_dir / "type_conventions.h5"
    frame = pd.DataFrame({"a": np.arange(30.0) / 3, "b": np.arange(30.0) ** 2, "k": np.arange(30)})
    frame.to_hdf(path, key="frame", format="table")
    deep = np.dtype([("id", "<u1"), ("sub", [("grid", "<u2", (2, 2)), ("weight", ">f4")])])
    with h5py.File(path, "a") as f:
        f["deep"] = np.array([(1, ([[1, 2], [3, 4]], 1.5)), (2, ([[5, 6], [7, 8]], -2.5))], deep)
        floats = f.create_dataset("floats", shape=(4,), chunks=(3,), dtype=h5py.vlen_dtype("<f4"))
        floats[0], floats[3] = np.array([1.5, -2.0], "f4"), np.arange(9, dtype="f4")
        longs = f.create_dataset("longs", shape=(2, 2), dtype=h5py.vlen_dtype("<i8"))
        longs[0, 0], longs[1, 1] = np.array([2**40, -1], "i8"), np.arange(5, dtype="i8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConventionTypeWarning)
        warnings.simplefilter("ignore", UnstableSpecificationWarning)  # raw_bytes, vlen bytes
        rfs = generate_rfs(
            GENERATED_URL.replace("h5data.h5", path.name),
            local_hdf5_path=path,
            inline_threshold=0,
            record_source=False,
        )
    write_rfs(rfs, refs_dir / "type_conventions.shadowzarr")
    out = []
    with h5py.File(path, "r") as f:
        for name in ("frame/table", "deep", "floats", "longs"):
            values = f[name][()]
            out.append({"path": name, "expect": native_form(values)})
    return out


def vlen_utf8(values: list[str]) -> bytes:
    """Zarr's vlen-utf8 encoding: item count, then (length, bytes) per item, uint32 LE."""
    parts = [np.uint32(len(values)).tobytes()]
    for v in values:
        data = v.encode("utf-8")
        parts += [np.uint32(len(data)).tobytes(), data]
    return b"".join(parts)


def write_hdf5(data_dir: Path) -> Path:
    path = data_dir / "h5data.h5"
    rng = np.random.default_rng(7)
    with h5py.File(path, "w") as f:
        d = f.create_dataset(
            "chunked_gzip",
            shape=(100, 60),
            chunks=(16, 25),
            dtype="<i4",
            compression="gzip",
            compression_opts=4,
            shuffle=True,
            fillvalue=-1,
        )
        d[:40] = rng.integers(-1000, 1000, size=(40, 60))  # rows 40.. never written
        d = f.create_dataset(
            "fletcher",
            shape=(50,),
            chunks=(16,),
            dtype="<f8",
            compression="gzip",
            fletcher32=True,
        )
        d[:] = rng.normal(size=50)
        f.create_dataset("contiguous", data=np.arange(1000, dtype="<f4") * 0.5)
        f.create_dataset(
            "bigendian", data=rng.integers(-30000, 30000, (30, 7)).astype(">i2"), chunks=(8, 7)
        )
        f.create_dataset("scalar", data=np.float64(3.25))
        f.create_dataset(
            "strings", data=["alpha", "β-beta", "", "gamma ray"], dtype=h5py.string_dtype()
        )
        compound = np.zeros(20, dtype=[("id", "<i4"), ("value", "<f8")])
        compound["id"] = np.arange(20)
        compound["value"] = np.linspace(0, 1, 20)
        f.create_dataset("compound", data=compound)
        d = f.create_dataset("nan_fill", shape=(40,), chunks=(10,), dtype="<f4", fillvalue=np.nan)
        d[:15] = np.arange(15, dtype="<f4")
        d = f.create_dataset(
            "big_uint", shape=(12,), chunks=(4,), dtype="<u8", fillvalue=np.uint64(2**64 - 1)
        )
        d[:4] = np.array([0, 1, 2**63, 2**64 - 2], dtype="<u8")
        g = f.create_group("meta")
        g.attrs["resolution"] = np.nan
        g.attrs["rate"] = np.inf
        g.attrs["floor"] = -np.inf
        g.attrs["label"] = "NaN"
        g.attrs["blob"] = np.void(b"\xff\x00\x01")
        g.attrs["plain"] = "text"
        g.create_dataset("x", data=np.arange(3, dtype="<i2"))
    return path


def build_hdf5_refs(h5: Path, url: str) -> RfsBuilder:
    builder = RfsBuilder()
    builder.add_group("")
    with h5py.File(h5, "r") as f:
        for name in (
            "chunked_gzip",
            "fletcher",
            "contiguous",
            "bigendian",
            "scalar",
            "compound",
            "nan_fill",
            "big_uint",
        ):
            add_hdf5_dataset(builder, f[name], url)
        strings = [s.decode() for s in f["strings"][()]]
        builder.add_array("strings", shape=[len(strings)], data_type="string")
        builder.add_inline_chunk("strings", [0], vlen_utf8(strings))
        attrs = {k: (bytes(v) if isinstance(v, np.void) else v) for k, v in f["meta"].attrs.items()}
        builder.add_group("meta", attributes=attrs)
        add_hdf5_dataset(builder, f["meta/x"], url)
    builder.add_source(url, size=h5.stat().st_size, etag=etag_of(h5))
    return builder


def write_raw(data_dir: Path) -> dict[str, np.ndarray]:
    """Raw binary files and the arrays they hold."""
    rng = np.random.default_rng(11)
    out: dict[str, np.ndarray] = {}
    # 1000 records: a 2-byte header, then 3 int16 channels.
    records = np.zeros(1000, dtype=[("hdr", "<u2"), ("ch", "<i2", (3,))])
    records["hdr"] = 0xABCD
    records["ch"] = rng.integers(-5000, 5000, size=(1000, 3))
    (data_dir / "records.bin").write_bytes(records.tobytes())
    # keep channel 1 then channel 0 (reordered); the last chunk of 128 rows holds the 104 rows
    # there are (its reference ends at the end of the file), the rest reads as fill.
    selected = np.empty((1000, 2), dtype="<i2")
    selected[:, 0] = records["ch"][:, 1]
    selected[:, 1] = records["ch"][:, 0]
    out["records"] = selected
    # Stacking: three files of (100, 4) float32 make one (300, 4) array.
    parts = [rng.normal(size=(100, 4)).astype("<f4") for _ in range(3)]
    for i, part in enumerate(parts):
        (data_dir / f"part{i}.bin").write_bytes(part.tobytes())
    out["stacked"] = np.concatenate(parts)
    # Transpose: a (20, 30) int32 array stored in Fortran order.
    fortran = rng.integers(0, 10**6, size=(20, 30)).astype("<i4")
    (data_dir / "fortran.bin").write_bytes(fortran.T.copy().tobytes())
    out["transposed"] = fortran
    # Padding: 1000 int32 in the file, an array of 1200 with fill 7 in chunks of 256. Chunks 0-2
    # are the file's first 768 values, chunk 3 is never written, and the last chunk (elements
    # 1024..1199, 176 of them) is the file's last 232 values: a short reference that holds
    # every element inside the array, padded; its last 56 values lie past the array's end.
    short = np.arange(1000, dtype="<i4") * 3
    (data_dir / "short.bin").write_bytes(short.tobytes())
    padded = np.full(1200, 7, dtype="<i4")
    padded[:768] = short[:768]
    padded[1024:] = short[768:944]
    out["padded"] = padded
    # Many small neighbouring chunks in one file (request merging).
    small = rng.integers(0, 2**15, size=4096).astype("<i2")
    (data_dir / "small_chunks.bin").write_bytes(small.tobytes())
    out["small_chunks"] = small
    return out


def write_sharded(data_dir: Path, refs_dir: Path) -> np.ndarray:
    """A sharded Zarr array written by zarr-python, referenced shard by shard (one shard as a
    whole file, one as a byte range), so zarrita reads it through getRange: suffix reads of
    the shard index, then offset/length reads of inner chunks."""
    import zarr
    from zarr.storage import LocalStore

    values = np.arange(40 * 30, dtype="<i4").reshape(40, 30)
    array = zarr.create_array(
        store=LocalStore(data_dir / "sharded.zarr"),
        shape=(40, 30),
        chunks=(5, 10),
        shards=(20, 30),
        dtype="<i4",
        fill_value=-3,
        compressors=None,
    )
    array[:30] = values[:30]  # inner chunks of rows 30.. never written
    expected = array[...]
    shard1 = data_dir / "sharded.zarr" / "c" / "1" / "0"
    refs = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}),
        "sharded/zarr.json": (data_dir / "sharded.zarr" / "zarr.json").read_text(),
        "sharded/c/0/0": ["../data/sharded.zarr/c/0/0"],
        "sharded/c/1/0": ["../data/sharded.zarr/c/1/0", 0, shard1.stat().st_size],
    }
    (refs_dir / "sharded.json").write_text(json.dumps({"version": 1, "refs": refs}))
    return expected


def build_raw_refs(data_dir: Path, prefix: str) -> RfsBuilder:
    b = RfsBuilder()
    b.add_group("", attributes={"description": "raw binary fixtures"})
    b.add_array("records", shape=[1000, 2], data_type="<i2", chunk_shape=[128, 2], fill_value=-7)
    b.add_selection("records", 8, [[4, 6], [2, 4]])
    b.add_contiguous_chunks(
        "records",
        url=f"{prefix}records.bin",
        start=0,
        shape=[1000, 2],
        chunk_shape=[128, 2],
        itemsize=2,
        row_bytes=8,
    )
    b.add_array("stacked", shape=[300, 4], data_type="<f4", chunk_shape=[100, 4])
    b.add_array(
        "transposed",
        shape=[20, 30],
        data_type="<i4",
        chunk_shape=[20, 30],
        codecs=[
            {"name": "transpose", "configuration": {"order": [1, 0]}},
            {"name": "bytes", "configuration": {"endian": "little"}},
        ],
    )
    b.add_chunk("transposed", [0, 0], f"{prefix}fortran.bin", 0, 20 * 30 * 4)
    b.add_array("padded", shape=[1200], data_type="<i4", chunk_shape=[256], fill_value=7)
    b.add_strided_chunks(
        "padded", url=f"{prefix}short.bin", start=0, stride=1024, length=1024, count=3
    )
    b.add_chunk("padded", [4], f"{prefix}short.bin", 3072, 928)
    b.add_array("small_chunks", shape=[4096], data_type="<i2", chunk_shape=[64])
    for i in range(64):
        b.add_chunk("small_chunks", [i], f"{prefix}small_chunks.bin", i * 128, 128)
    for name in (
        "records.bin",
        "short.bin",
        "fortran.bin",
        "small_chunks.bin",
        *(f"part{i}.bin" for i in range(3)),
    ):
        path = data_dir / name
        b.add_source(f"{prefix}{name}", size=path.stat().st_size, etag=etag_of(path))
    return b


def add_grid(builder: RfsBuilder, data_dir: Path, prefix: str) -> np.ndarray:
    """300 x 300 one-byte chunks (more than one index chunk covers): a chunk manifest with two
    index chunks, and row 150 never written (fill 9)."""
    rng = np.random.default_rng(5)
    values = rng.integers(0, 256, size=(300, 300), dtype=np.uint8)
    (data_dir / "grid.bin").write_bytes(values.tobytes())
    table = np.zeros((300, 300, 2), dtype=np.uint64)
    table[..., 0] = np.arange(300 * 300, dtype=np.uint64).reshape(300, 300)
    table[..., 1] = 1
    table[150] = np.uint64(2**64 - 1)
    builder.add_array("grid", shape=[300, 300], data_type="uint8", chunk_shape=[1, 1], fill_value=9)
    builder.add_index("grid", f"{prefix}grid.bin", table)
    expected = values.copy()
    expected[150] = 9
    return expected


def write_rechunked_indexes(data_dir: Path, refs_dir: Path) -> np.ndarray:
    """Reference directories whose index arrays zarr-python wrote in other layouts than
    ``write_rfs`` writes (the format lets any Zarr writer write an index): index shape
    (1200, 2, 2) in chunks of (600, 2, 2) with zstd, and in chunks of (500, 1, 1) with ``v2``
    keys, big-endian bytes and gzip. Readers must follow the index's own zarr.json. Row 700 is
    never written (2^64 - 1 twice), row 701 is missing as VirtualiZarr writes it (0, 0)."""
    import shutil

    import zarr
    from zarr.codecs import BytesCodec, GzipCodec
    from zarr.storage import LocalStore

    rng = np.random.default_rng(3)
    values = rng.integers(0, 256, size=(1200, 4), dtype=np.uint8)
    (data_dir / "cells.bin").write_bytes(values.tobytes())
    table = np.zeros((1200, 2, 2), dtype=np.uint64)
    table[..., 0] = np.arange(1200 * 2, dtype=np.uint64).reshape(1200, 2) * 2
    table[..., 1] = 2
    table[700] = np.uint64(2**64 - 1)
    table[701] = 0
    expected = values.copy()
    expected[700:702] = 9
    layouts = {
        "rechunked_index.shadowzarr": {"chunks": (600, 2, 2)},
        "strange_index.shadowzarr": {
            "chunks": (500, 1, 1),
            "chunk_key_encoding": {"name": "v2", "separator": "."},
            "serializer": BytesCodec(endian="big"),
            "compressors": [GzipCodec(level=5)],
        },
    }
    for name, layout in layouts.items():
        builder = RfsBuilder()
        builder.add_group("")
        builder.add_array(
            "cells", shape=[1200, 4], data_type="uint8", chunk_shape=[1, 2], fill_value=9
        )
        builder.add_index("cells", "../../data/cells.bin", table)
        builder.add_source("../../data/cells.bin", size=values.nbytes)
        write_rfs(builder.build(), refs_dir / name, inline_index_bytes=0)
        index = refs_dir / name / "index" / "cells"
        shutil.rmtree(index)
        written = zarr.create_array(
            store=LocalStore(index),
            shape=table.shape,
            dtype="uint64",
            fill_value=2**64 - 1,
            **layout,
        )
        written[...] = table
    return expected


def build_raw_rfs(data_dir: Path, prefix: str) -> tuple[Any, np.ndarray]:
    """The raw-file references (version 2) and the expected values of the indexed grid."""
    builder = build_raw_refs(data_dir, prefix)
    grid = add_grid(builder, data_dir, prefix)
    rfs = builder.build()
    # Stacking: one gen entry whose URL depends on the dimension (names may hold "_").
    rfs.gen.append(
        GenEntry(
            "stacked/c/{{part_i}}/0",
            f"{prefix}part{{{{part_i}}}}.bin",
            "{{part_i * 0 + (2 - 2) // 1}}",
            "{{100 * 4 * 4}}",
            {"part_i": Dimension(values=(0, 1, 2))},
        )
    )
    rfs.version = rfs.required_version
    return rfs, grid


def array_entry(path: str, values: np.ndarray, expected_dir: Path) -> dict:
    file = expected_dir / (path.replace("/", "__") + ".bin")
    file.write_bytes(little_endian_dump(values))
    return {
        "path": path,
        "dtype": values.dtype.newbyteorder("<").name
        if values.dtype.byteorder == ">"
        else values.dtype.name,
        "shape": list(values.shape),
        "data": file.name,
    }


def main(out: Path) -> None:
    data_dir, refs_dir, expected_dir = out / "data", out / "refs", out / "expected"
    for d in (data_dir, refs_dir, expected_dir):
        d.mkdir(parents=True, exist_ok=True)
    h5 = write_hdf5(data_dir)
    raw = write_raw(data_dir)

    # One JSON file (version 1) and a directory whose chunked_gzip chunks sit in a chunk manifest.
    write_rfs(build_hdf5_refs(h5, "../data/h5data.h5").build(), refs_dir / "hdf5.json")
    # Index files fetched (none carried in refs.json), and the same with them carried.
    write_rfs(
        build_hdf5_refs(h5, "../../data/h5data.h5").build(),
        refs_dir / "hdf5.shadowzarr",
        manifest_threshold=4,
        inline_index_bytes=0,
    )
    write_rfs(
        build_hdf5_refs(h5, "../../data/h5data.h5").build(),
        refs_dir / "hdf5_carried.shadowzarr",
        manifest_threshold=4,
    )
    raw_rfs, grid = build_raw_rfs(data_dir, "../../data/")
    write_rfs(raw_rfs, refs_dir / "raw.shadowzarr", inline_index_bytes=0)
    # Absolute local paths, as generators write them for local files (read with openLocal).
    write_rfs(build_hdf5_refs(h5, str(h5.resolve())).build(), refs_dir / "hdf5_local.json")
    sharded = write_sharded(data_dir, refs_dir)
    cells = write_rechunked_indexes(data_dir, refs_dir)
    text_structs = write_text_compounds(data_dir, refs_dir)
    conventions = write_type_conventions(data_dir, refs_dir)
    write_generated_hdf5_refs(h5, refs_dir)

    # A legacy file: Python's json with bare NaN/Infinity tokens, in metadata and at top level.
    legacy_meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [40],
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": math.nan,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {"resolution": math.nan, "limits": [-math.inf, math.inf], "name": "NaN"},
    }
    legacy = {
        "version": 1,
        "refs": {
            "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}),
            "x/zarr.json": json.dumps(legacy_meta),
            "x/c/0": ["../data/h5data.h5", 0, 0],
        },
    }
    with h5py.File(h5, "r") as f:
        info = f["nan_fill"].id.get_chunk_info(0)
        legacy["refs"]["x/c/0"] = ["../data/h5data.h5", info.byte_offset, info.size]
    (refs_dir / "legacy_nan.json").write_text(json.dumps(legacy))

    arrays: list[dict] = []
    with h5py.File(h5, "r") as f:
        for name in (
            "chunked_gzip",
            "fletcher",
            "contiguous",
            "bigendian",
            "scalar",
            "nan_fill",
            "big_uint",
            "meta/x",
        ):
            arrays.append(array_entry(name, f[name][()], expected_dir))
        strings = [s.decode() for s in f["strings"][()]]
        compound = f["compound"][()]
        meta_attrs = {
            k: (
                list(bytes(v))
                if isinstance(v, np.void)
                else (None if isinstance(v, float) and not math.isfinite(v) else v)
            )
            for k, v in f["meta"].attrs.items()
        }
    legacy_x = np.full(40, np.nan, dtype="<f4")
    legacy_x[:10] = np.arange(10, dtype="<f4")
    manifest = {
        "hdf5": {
            "refs": ["refs/hdf5.json", "refs/hdf5.shadowzarr", "refs/hdf5_carried.shadowzarr"],
            "local_refs": ["refs/hdf5_local.json"],
            "arrays": arrays,
            "strings": {"path": "strings", "values": strings},
            "struct": {
                "path": "compound",
                "key": "compound/c/0",
                "bytes": (expected_dir / "compound.bin").name,
            },
            "indexed": "chunked_gzip",
            "attributes": {
                "path": "meta",
                "values": meta_attrs,
                "nonfinite": {"resolution": "NaN", "rate": "Infinity", "floor": "-Infinity"},
            },
            "children": {
                "": [
                    "big_uint",
                    "bigendian",
                    "chunked_gzip",
                    "compound",
                    "contiguous",
                    "fletcher",
                    "meta",
                    "nan_fill",
                    "scalar",
                    "strings",
                ],
                "meta": ["x"],
            },
        },
        "hdf5_generated": {
            "refs": ["refs/hdf5_generated.shadowzarr"],
            "placeholder": GENERATED_URL.removesuffix("data/h5data.h5"),
            "arrays": arrays,
        },
        "raw": {
            "refs": ["refs/raw.shadowzarr"],
            "arrays": [array_entry(name, values, expected_dir) for name, values in raw.items()],
            "record_size": 8,
        },
        "grid": {
            "refs": "refs/raw.shadowzarr",
            "entry": array_entry("grid", grid, expected_dir),
        },
        "sharded": {
            "refs": ["refs/sharded.json"],
            "arrays": [array_entry("sharded", sharded, expected_dir)],
        },
        "struct_text": {
            "refs": "refs/text_compound.shadowzarr",
            "placeholder": GENERATED_URL.removesuffix("data/h5data.h5"),
            "structs": text_structs,
        },
        "type_conventions": {
            "refs": "refs/type_conventions.shadowzarr",
            "placeholder": GENERATED_URL.removesuffix("data/h5data.h5"),
            "conventions": conventions,
        },
        "rechunked_index": {
            "refs": ["refs/rechunked_index.shadowzarr", "refs/strange_index.shadowzarr"],
            "arrays": [array_entry("cells", cells, expected_dir)],
        },
        "legacy": {
            "refs": "refs/legacy_nan.json",
            "arrays": [array_entry("x", legacy_x, expected_dir)],
        },
    }
    (expected_dir / "compound.bin").write_bytes(compound.tobytes())
    (expected_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_fixtures.py OUTDIR")
    main(Path(sys.argv[1]))
