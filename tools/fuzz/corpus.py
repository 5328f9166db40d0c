"""Valid reference files of both forms over small source files, and what each array reads as.

One set of sources (raw records, chunks compressed with Blosc, zstd, zlib with shuffle and
fletcher32, gzip; inline chunks; strings) is described three ways:

- ``json-v1``: plain kerchunk version 1, every chunk listed, no recorded sizes (its last slabs
  end with their files, as kerchunk would write them);
- ``json-v2``: one JSON file with templates, gen entries, a selection and recorded sizes (a
  short last slab ends with its file and is padded past the array's end);
- ``directory``: refs.json plus index arrays: one written by shadowzarr (Blosc), one rewritten
  by zarr-python with another chunking and zstd, one with gzip and the last axis cut in two.

`Corpus.expected` holds the values every array must read as (the native truth: the numbers the
sources were written from).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import zarr
from shadowzarr_spec import RfsBuilder, load_index_table, read_local_rfs, rfs_to_json, write_rfs
from shadowzarr_spec.json_text import dumps_strict
from shadowzarr_store.transport import probe_local

__all__ = ["FORMS", "Corpus", "build_corpus"]

FORMS = ("json-v1", "json-v2", "directory")
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def _codec(name: str, **configuration: Any) -> dict[str, Any]:
    return {"name": name, "configuration": configuration}


@dataclass
class Corpus:
    root: Path
    forms: dict[str, Path] = field(default_factory=dict)
    """Form name → the reference file or directory."""
    expected: dict[str, np.ndarray] = field(default_factory=dict)
    arrays: dict[str, list[str]] = field(default_factory=dict)
    """Form name → the arrays it holds."""

    @property
    def expected_file(self) -> Path:
        return self.root / "expected.npz"


class _Chunks:
    """Appends encoded chunks to one file, remembering where each went."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = bytearray(b"CHUNKS\0\0")

    def add(self, data: bytes) -> tuple[int, int]:
        offset = len(self.data)
        self.data += data
        return offset, len(data)

    def write(self) -> None:
        self.path.write_bytes(bytes(self.data))


def build_corpus(root: Path, *, data: Path | None = None, base_url: str | None = None) -> Corpus:
    """Write the sources (into ``data``, default ``root/data``) and the three forms under
    ``root`` (created afresh); references name sources by ``base_url/<name>`` if given (a
    server serving ``data``), else by their local paths."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    data = data or root / "data"
    data.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20)
    corpus = Corpus(root)
    expected = corpus.expected
    chunks = _Chunks(data / "chunks.bin")
    encoded: dict[str, list[tuple[tuple[int, ...], int, int]]] = {}

    def encode(name: str, values: np.ndarray, chunk: tuple[int, ...], codec: Any) -> None:
        expected[name] = values
        grid = [-(-s // c) for s, c in zip(values.shape, chunk, strict=True)]
        entries = []
        for coords in np.ndindex(*grid):
            block = np.zeros(chunk, dtype=values.dtype)
            region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, chunk, strict=True))
            part = values[region]
            block[tuple(slice(0, s) for s in part.shape)] = part
            entries.append((coords, *chunks.add(bytes(codec(block.tobytes())))))
        encoded[name] = entries

    # plain: an uncompressed file of 1000 uint32; the last chunk of 128 holds the 104 there are
    plain = rng.integers(0, 2**32, 1000, dtype="<u4")
    (data / "plain.bin").write_bytes(plain.tobytes())
    expected["plain"] = plain
    blosc = numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)
    encode("blosc", np.cumsum(rng.normal(size=600)).astype("<f4"), (200,), blosc.encode)
    encode(
        "zstd", rng.integers(-(2**40), 2**40, 300, dtype="<i8"), (100,), numcodecs.Zstd(3).encode
    )
    shuffle, zlib, fletcher = numcodecs.Shuffle(2), numcodecs.Zlib(4), numcodecs.Fletcher32()
    encode(
        "zlib",
        (np.arange(600, dtype="<u2") % 97).reshape(2, 300),
        (2, 100),
        lambda raw: fletcher.encode(zlib.encode(shuffle.encode(raw))),
    )
    encode("gzip", rng.integers(-500, 500, 500, dtype="<i2"), (250,), numcodecs.GZip(5).encode)
    chunks.write()
    # gen: 4 slabs of 600 int16 after a 16-byte header
    slabs = rng.integers(-(2**15), 2**15, 2400, dtype="<i2")
    (data / "raw.bin").write_bytes(b"\xff" * 16 + slabs.tobytes())
    expected["gen"] = slabs
    # picked: records of 4 int16 and a 2-byte counter; the selection keeps the samples
    records = rng.integers(-900, 900, (300, 5), dtype="<i2")
    (data / "records.bin").write_bytes(records.tobytes())
    expected["picked"] = records[:, :4].copy()
    # indexed: 300 chunks of 8 uint32 in one file (index arrays in the directory form)
    indexed = np.arange(2400, dtype="<u4") * 3
    (data / "indexed.bin").write_bytes(indexed.tobytes())
    for name in ("indexed", "indexed_zstd", "indexed_gzip"):
        expected[name] = indexed
    expected["inline"] = (np.arange(64) * 5 % 256).astype("u1")
    expected["strings"] = np.array(["alpha", "βeta", "", "δ" * 40, "e"], dtype=object)

    for form in FORMS:
        builder = _references(form, data, encoded, base_url)
        rfs = builder.build()
        if form == "json-v1":
            target = write_rfs(rfs, root / "v1.json", manifest_threshold=None)
        elif form == "json-v2":
            target = root / "v2.json"
            target.write_text(dumps_strict(rfs_to_json(rfs)), encoding="utf-8")
        else:
            target = write_rfs(rfs, root / "refs", manifest_threshold=100)
            _rewrite_indexes(target)
        corpus.forms[form] = target
        corpus.arrays[form] = sorted(
            key.removesuffix("/zarr.json") for key in rfs.refs if key.endswith("/zarr.json")
        )
    np.savez(corpus.expected_file, **{k: v for k, v in expected.items() if v.dtype != object})
    (root / "strings.json").write_text(json.dumps(list(expected["strings"])))
    return corpus


def _references(
    form: str,
    data: Path,
    encoded: dict[str, list[tuple[tuple[int, ...], int, int]]],
    base_url: str | None,
) -> RfsBuilder:
    v1 = form == "json-v1"

    def url(name: str) -> str:
        return f"{base_url}/{name}" if base_url else str(data / name)

    builder = RfsBuilder()
    builder.add_group("", {"made": "for fuzzing", "form": form})
    plain_url = url("plain.bin")
    builder.add_array("plain", shape=(1000,), data_type="<u4", chunk_shape=(128,), fill_value=9)
    for i in range(8):
        # the last slab as far as the file goes (readers refuse one running past its end)
        size = 4000 - 512 * i if i == 7 else 512
        builder.add_chunk("plain", (i,), plain_url, 512 * i, size)
    chunk_url = url("chunks.bin")
    chains = {
        "blosc": ("<f4", (600,), (200,), [BYTES, _blosc("lz4", 4)]),
        "zstd": ("<i8", (300,), (100,), [BYTES, _codec("zstd", level=3, checksum=False)]),
        "zlib": (
            "<u2",
            (2, 300),
            (2, 100),
            [
                BYTES,
                _codec("numcodecs.shuffle", elementsize=2),
                _codec("numcodecs.zlib", level=4),
                _codec("numcodecs.fletcher32"),
            ],
        ),
        "gzip": ("<i2", (500,), (250,), [BYTES, _codec("gzip", level=5)]),
    }
    for name, (dtype, shape, chunk, codecs) in chains.items():
        builder.add_array(
            name, shape=shape, data_type=dtype, chunk_shape=chunk, fill_value=0, codecs=codecs
        )
        for coords, offset, size in encoded[name]:
            builder.add_chunk(name, coords, chunk_url, offset, size)
    raw_url = url("raw.bin")
    builder.add_array("gen", shape=(2400,), data_type="<i2", chunk_shape=(600,), fill_value=-1)
    if v1:
        for i in range(4):
            builder.add_chunk("gen", (i,), raw_url, 16 + 1200 * i, 1200)
    else:
        from shadowzarr_spec import Dimension, GenEntry

        builder.add_gen_entry(
            "gen",
            GenEntry(
                "gen/c/{{i}}",
                raw_url,
                "{{16 + i * 1200}}",
                "1200",
                {"i": Dimension(stop=4)},
            ),
        )
        builder.add_array(
            "picked", shape=(300, 4), data_type="<i2", chunk_shape=(100, 4), fill_value=0
        )
        for i in range(3):
            builder.add_chunk("picked", (i, 0), url("records.bin"), 1000 * i, 1000)
        builder.add_selection("picked", 10, [[0, 8]])
    indexed_url = url("indexed.bin")
    for name in ("indexed", "indexed_zstd", "indexed_gzip"):
        builder.add_array(name, shape=(2400,), data_type="<u4", chunk_shape=(8,), fill_value=0)
        for i in range(300):
            builder.add_chunk(name, (i,), indexed_url, 32 * i, 32)
    blosc = numcodecs.Blosc("zstd", 5, numcodecs.Blosc.SHUFFLE)
    builder.add_array(
        "inline",
        shape=(64,),
        data_type="uint8",
        chunk_shape=(32,),
        fill_value=0,
        codecs=[BYTES, _blosc("zstd", 1)],
    )
    values = (np.arange(64) * 5 % 256).astype("u1")
    for i in range(2):
        builder.add_inline_chunk("inline", (i,), bytes(blosc.encode(values[32 * i : 32 * (i + 1)])))
    words = np.array(["alpha", "βeta", "", "δ" * 40, "e"], dtype=object)
    builder.add_array(
        "strings",
        shape=(5,),
        data_type="string",
        chunk_shape=(5,),
        fill_value="",
        codecs=[_codec("vlen-utf8")],
    )
    builder.add_inline_chunk("strings", (0,), bytes(numcodecs.VLenUTF8().encode(words)))
    if not v1:
        for name in ("plain.bin", "chunks.bin", "raw.bin", "records.bin", "indexed.bin"):
            if base_url:
                builder.add_source(url(name), size=(data / name).stat().st_size)  # + ETag later
            else:  # what a generator records for a local file: size, mtime, sampled hash
                found = probe_local(str(data / name))
                builder.add_source(
                    url(name),
                    size=found.size,
                    mtime_ns=found.mtime_ns,
                    sample_hash=found.sample_hash,
                )
    return builder


def _blosc(cname: str, typesize: int) -> dict[str, Any]:
    return _codec("blosc", cname=cname, clevel=5, shuffle="shuffle", typesize=typesize, blocksize=0)


def _rewrite_indexes(directory: Path) -> None:
    """Two of the directory's index arrays as another Zarr writer would write them."""
    rfs = read_local_rfs(directory)
    for name, options in {
        "indexed_zstd": {"chunks": (64, 2)},  # zarr-python's default codecs: zstd
        "indexed_gzip": {
            "chunks": (100, 1),
            "compressors": [zarr.codecs.GzipCodec(level=5)],
        },
    }.items():
        table = load_index_table(rfs, name)
        index_root = directory / "index" / name
        shutil.rmtree(index_root)
        index = zarr.create_array(
            store=str(index_root),
            shape=table.shape,
            dtype="uint64",
            fill_value=2**64 - 1,
            zarr_format=3,
            **options,
        )
        index[...] = table
