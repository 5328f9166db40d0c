"""Reference files written by hand (plain JSON, no RfsBuilder) over data numpy and h5py wrote.

`write_sources` writes the source files and returns the values each array must read as;
`handmade_rfs` returns the reference document pointing into them, with every kind of reference.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import zarr
from zarr.codecs import BloscCodec, BytesCodec

MISSING = 2**64 - 1
HEADER = 12


def array_meta(
    shape: list[int],
    chunks: list[int],
    dtype: str,
    fill: Any = 0,
    codecs: list[dict[str, Any]] | None = None,
) -> str:
    return json.dumps(
        {
            "zarr_format": 3,
            "node_type": "array",
            "shape": shape,
            "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill,
            "codecs": codecs or [{"name": "bytes", "configuration": {"endian": "little"}}],
            "attributes": {},
        }
    )


GROUP = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {"made": "by hand"}})


@dataclass
class Sources:
    root: Path
    expected: dict[str, np.ndarray]
    refs: dict[str, Any]
    gen: list[dict[str, Any]]
    selections: dict[str, Any]
    index_tables: dict[str, np.ndarray]


def write_sources(root: Path, url_prefix: str = "{{u0}}") -> Sources:
    """Write raw and HDF5 files under ``root``; URLs in the refs are ``url_prefix/<name>``."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    expected: dict[str, np.ndarray] = {}
    refs: dict[str, Any] = {"zarr.json": GROUP}
    gen: list[dict[str, Any]] = []
    selections: dict[str, Any] = {}

    def url(name: str) -> str:
        return f"{url_prefix}/{name}"

    # A raw recording after a 12-byte header: int16, 1000 samples x 4 channels.
    samples = rng.integers(-30000, 30000, size=(1000, 4), dtype="<i2")
    (root / "raw.bin").write_bytes(b"H" * HEADER + samples.tobytes())

    # listed: [url, offset, size] per chunk of 250 rows.
    refs["listed/zarr.json"] = array_meta([1000, 4], [250, 4], "int16")
    for i in range(4):
        refs[f"listed/c/{i}/0"] = [url("raw.bin"), HEADER + i * 2000, 2000]
    expected["listed"] = samples

    # slabs: a gen entry of whole slabs; the short last slab holds the 100 rows there are and
    # reads padded with the fill value past the array's end.
    refs["slabs/zarr.json"] = array_meta([1000, 4], [300, 4], "int16", fill=-7)
    gen.append(
        {
            "key": "slabs/c/{{i}}/0",
            "url": url("raw.bin"),
            "offset": f"{{{{{HEADER} + i * 2400}}}}",
            "length": "2400",
            "dimensions": {"i": {"stop": 3}},
        }
    )
    refs["slabs/c/3/0"] = [url("raw.bin"), HEADER + 3 * 2400, 800]
    expected["slabs"] = samples

    # Big-endian float64 with a non-finite fill: padding uses the stored byte order.
    floats = rng.standard_normal(50).astype(">f8")
    (root / "floats_be.bin").write_bytes(floats.tobytes())
    refs["floats/zarr.json"] = array_meta(
        [50],
        [32],
        "float64",
        fill="NaN",
        codecs=[{"name": "bytes", "configuration": {"endian": "big"}}],
    )
    refs["floats/c/0"] = [url("floats_be.bin"), 0, 256]
    refs["floats/c/1"] = [url("floats_be.bin"), 256, 144]  # the last 18 of 32: padded
    expected["floats"] = floats.astype("f8")

    # whole: the whole file is the one chunk.
    whole = np.arange(24, dtype="<u4").reshape(4, 6)
    (root / "whole.bin").write_bytes(whole.tobytes())
    refs["whole/zarr.json"] = array_meta([4, 6], [4, 6], "uint32")
    refs["whole/c/0/0"] = [url("whole.bin")]
    expected["whole"] = whole

    # inline: base64 bytes and UTF-8 text chunks, and a 0-d array.
    small = np.array([1.5, -2.25, 3.0, 4.75], dtype="<f4")
    refs["inline/zarr.json"] = array_meta([8], [4], "float32")
    refs["inline/c/0"] = "base64:" + base64.b64encode(small.tobytes()).decode()
    refs["inline/c/1"] = "base64:" + base64.b64encode(small[::-1].tobytes()).decode()
    expected["inline"] = np.concatenate([small, small[::-1]])
    text = np.frombuffer(b"hello, world", dtype="u1")
    refs["text/zarr.json"] = array_meta([12], [12], "uint8")
    refs["text/c/0"] = "hello, world"
    expected["text"] = text
    refs["scalar/zarr.json"] = array_meta([], [], "int64")
    refs["scalar/c"] = "base64:" + base64.b64encode(np.int64(-42).tobytes()).decode()
    expected["scalar"] = np.array(-42, dtype="i8")

    # Interleaved records: 2-byte header + 5 int16 channels = 12 bytes per sample.
    channels = rng.integers(-1000, 1000, size=(600, 5), dtype="<i2")
    records = np.zeros(600, dtype=[("head", "<u2"), ("ch", "<i2", (5,))])
    records["head"] = 0xBEEF
    records["ch"] = channels
    (root / "records.bin").write_bytes(records.tobytes())
    refs["picked/zarr.json"] = array_meta([600, 4], [200, 4], "int16")
    refs["reordered/zarr.json"] = array_meta([600, 2], [256, 2], "int16", fill=5)
    selections["picked"] = {"record_size": 12, "keep": [[2, 10]]}
    selections["reordered"] = {"record_size": 12, "keep": [[10, 12], [2, 4]]}
    for i in range(3):
        refs[f"picked/c/{i}/0"] = [url("records.bin"), i * 2400, 2400]
    for i in range(3):  # 256-row chunks; the last one holds the 88 records there are, padded
        refs[f"reordered/c/{i}/0"] = [url("records.bin"), i * 3072, 3072 if i < 2 else 1056]
    expected["picked"] = channels[:, :4]
    expected["reordered"] = channels[:, [4, 0]]

    # HDF5: shuffle + deflate + fletcher32 chunks, and a contiguous dataset.
    h5_path = root / "data.h5"
    values = rng.standard_normal((100, 6)).astype("<f4")
    contiguous = np.arange(300, dtype="<i8").reshape(100, 3)
    with h5py.File(h5_path, "w") as h5:
        chunked = h5.create_dataset(
            "x", data=values, chunks=(30, 6), shuffle=True, compression="gzip", fletcher32=True
        )
        plain = h5.create_dataset("y", data=contiguous)
        chunk_refs = {}
        for n in range(chunked.id.get_num_chunks()):
            info = chunked.id.get_chunk_info(n)
            chunk_refs[f"h5chunked/c/{info.chunk_offset[0] // 30}/0"] = [
                url("data.h5"),
                int(info.byte_offset),
                int(info.size),
            ]
        y_offset = plain.id.get_offset()
    refs["h5chunked/zarr.json"] = array_meta(
        [100, 6],
        [30, 6],
        "float32",
        fill=0.0,
        codecs=[
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}},
            {"name": "numcodecs.zlib", "configuration": {"level": 4}},
            {"name": "numcodecs.fletcher32", "configuration": {}},
        ],
    )
    refs.update(chunk_refs)
    refs["h5contiguous/zarr.json"] = array_meta([100, 3], [40, 3], "int64")
    gen.append(
        {
            "key": "h5contiguous/c/{{i}}/0",
            "url": url("data.h5"),
            "offset": f"{{{{{y_offset} + i * 960}}}}",
            "length": "{{960}}",
            "dimensions": {"i": [0, 1, 2]},
        }
    )
    expected["h5chunked"] = values
    expected["h5contiguous"] = contiguous

    # indexed: 12 chunks of 50 int32 in a file, in shuffled order, chunk 7 never written.
    series = rng.integers(0, 2**31 - 1, size=600, dtype="<i4")
    order = rng.permutation(12)
    table = np.full((12, 2), MISSING, dtype=np.uint64)
    blob = bytearray(b"\0" * 100)
    for chunk in order:
        if chunk == 7:
            continue
        table[chunk] = (len(blob), 200)
        blob += series[chunk * 50 : (chunk + 1) * 50].tobytes()
    (root / "indexed.bin").write_bytes(bytes(blob))
    refs["indexed/zarr.json"] = array_meta([600], [50], "int32", fill=-1)
    series_expected = series.copy()
    series_expected[350:400] = -1
    expected["indexed"] = series_expected

    return Sources(root, expected, refs, gen, selections, {"indexed": table})


def handmade_document(sources: Sources, base_url: str, *, index_dir: bool) -> dict[str, Any]:
    """The reference document; chunk manifests as index arrays (directory form) or listed refs."""
    refs = dict(sources.refs)
    document: dict[str, Any] = {
        "version": 2,
        "templates": {"u0": base_url},
        "refs": refs,
        "gen": sources.gen,
        "selections": sources.selections,
        # Sizes as generators record them: what tells a changed file from the one referenced.
        "sources": {
            f"{base_url}/{path.name}": {"size": path.stat().st_size}
            for path in sorted(sources.root.iterdir())
            if path.is_file()
        },
    }
    if index_dir:
        document["indexes"] = {
            path: {"url": "{{u0}}/indexed.bin", "index": f"index/{path}"}
            for path in sources.index_tables
        }
    else:
        for path, table in sources.index_tables.items():
            for i, (offset, size) in enumerate(table.tolist()):
                if offset != MISSING:
                    refs[f"{path}/c/{i}"] = ["{{u0}}/indexed.bin", offset, size]
    return document


def write_index_arrays(sources: Sources, directory: Path, chunk_shape: tuple[int, ...]) -> None:
    """Write each chunk manifest as a plain zarr array (with zarr itself) under directory/index/."""
    for path, table in sources.index_tables.items():
        array = zarr.create_array(
            store=str(directory / "index" / path),
            shape=table.shape,
            chunks=chunk_shape,
            dtype="uint64",
            fill_value=MISSING,
            serializer=BytesCodec(endian="little"),
            compressors=[
                BloscCodec(cname="zstd", clevel=5, shuffle="shuffle", typesize=8, blocksize=0)
            ],
            zarr_format=3,
            config={"write_empty_chunks": True},
        )
        array[...] = table


def write_reference_directory(sources: Sources, directory: Path, base_url: str) -> Path:
    from shadowzarr_spec import index_chunk_shape

    directory.mkdir(parents=True, exist_ok=True)
    document = handmade_document(sources, base_url, index_dir=True)
    (directory / "refs.json").write_text(json.dumps(document))
    for path, table in sources.index_tables.items():
        write_index_arrays(
            Sources(sources.root, {}, {}, [], {}, {path: table}),
            directory,
            index_chunk_shape(table.shape[:-1]),
        )
    return directory
