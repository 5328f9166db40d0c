"""Shared pieces of the Icechunk bridge tests: sample source files with references to them,
and repositories with the virtual chunk containers those references need."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import icechunk
import numcodecs
import numpy as np
from shadowzarr_spec import ReferenceFileSystem, RfsBuilder

ZLIB_CODECS = [
    {"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "numcodecs.zlib", "configuration": {"level": 3}},
]


@dataclass
class Sample:
    """References to files written by the test, and the arrays they hold."""

    rfs: ReferenceFileSystem
    expected: dict[str, np.ndarray]


def write_sample(
    put: Callable[[str, bytes], str],
    *,
    etag_of: Callable[[str], str | None] = lambda url: None,
    n_compressed_chunks: int = 40,
) -> Sample:
    """Source files through ``put(name, data) -> url``, and references holding every kind of
    chunk: a gen entry with a short last chunk past the end of its file, compressed chunks
    listed one by one, inline data, a string array, a 0-d array and non-finite attributes."""
    rng = np.random.default_rng(7)
    urls: list[str] = []
    builder = RfsBuilder()

    def put_source(name: str, data: bytes) -> str:
        urls.append(put(name, data))
        return urls[-1]

    builder.add_group("", {"title": "sample", "missing": float("nan")})
    expected: dict[str, np.ndarray] = {}

    samples = rng.integers(-1000, 1000, size=(1030, 4), dtype="<i2")
    url = put_source("samples.bin", b"HEADER" + samples.tobytes())
    builder.add_array(
        "acq/samples",
        shape=samples.shape,
        data_type=samples.dtype,
        chunk_shape=(100, 4),
        attributes={"rate": 30000.0, "offset": float("-inf")},
        dimension_names=["time", "channel"],
    )
    builder.add_contiguous_chunks(
        "acq/samples", url=url, start=6, shape=samples.shape, chunk_shape=(100, 4), itemsize=2
    )
    expected["acq/samples"] = samples

    values = rng.normal(size=n_compressed_chunks * 25).astype("<f8")
    codec = numcodecs.Zlib(level=3)
    blob = bytearray(b"\0" * 13)
    builder.add_array(
        "values", shape=values.shape, data_type=values.dtype, chunk_shape=(25,), codecs=ZLIB_CODECS
    )
    pieces = []
    for i in range(n_compressed_chunks):
        data = codec.encode(values[i * 25 : (i + 1) * 25].tobytes())
        pieces.append((i, len(blob), len(data)))
        blob += data
    url = put_source("values.zlib", bytes(blob))
    for i, offset, size in pieces:
        builder.add_chunk("values", (i,), url, offset, size)
    expected["values"] = values

    small = np.array([1.5, -2.0, np.nan], dtype="<f8")
    builder.add_array("small", shape=small.shape, data_type=small.dtype, fill_value=np.nan)
    builder.add_inline_chunk("small", (0,), small.tobytes())
    expected["small"] = small

    scalar = np.array(42, dtype="<u4")
    url = put_source("scalar.bin", scalar.tobytes())
    builder.add_array("scalar", shape=(), data_type=scalar.dtype)
    builder.add_chunk("scalar", (), url, 0, 4)
    expected["scalar"] = scalar

    names = np.array(["alpha", "beta", "ε"], dtype=object)
    builder.add_array("names", shape=(3,), data_type="string")
    builder.add_inline_chunk(
        "names",
        (0,),
        numcodecs.VLenUTF8().encode(names),  # type: ignore[no-untyped-call]
    )
    expected["names"] = names

    for url in urls:
        builder.add_source(url, etag=etag_of(url))
    return Sample(builder.build(), expected)


def local_put(folder: Path) -> Callable[[str, bytes], str]:
    folder.mkdir(parents=True, exist_ok=True)

    def put(name: str, data: bytes) -> str:
        path = folder / name
        path.write_bytes(data)
        return str(path)

    return put


def make_repository(path: Path, prefixes: dict[str, Any]) -> icechunk.Repository:
    """A repository at ``path`` with a container per prefix: ``{prefix: store config}``."""
    config = icechunk.RepositoryConfig.default()
    authorize: dict[str, Any] = {}
    for prefix, store in prefixes.items():
        config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(prefix, store))
        authorize[prefix] = (
            icechunk.credentials.LocalFileSystemAccess
            if prefix.startswith("file://")
            else icechunk.credentials.HttpAccess
        )
    return icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(path)),
        config=config,
        authorize_virtual_chunk_access=authorize,
    )


def local_container(folder: Path) -> dict[str, Any]:
    return {f"{folder.resolve().as_uri()}/": icechunk.local_filesystem_store(str(folder))}


def assert_same(actual: Any, expected: np.ndarray, what: str) -> None:
    actual = np.asarray(actual)
    if expected.dtype == object:
        assert actual.tolist() == expected.tolist(), what
        return
    assert actual.shape == expected.shape, what
    np.testing.assert_array_equal(actual, expected, err_msg=what)


def chunk_count(shape: tuple[int, ...], chunks: tuple[int, ...]) -> int:
    return math.prod(math.ceil(s / c) for s, c in zip(shape, chunks, strict=True))
