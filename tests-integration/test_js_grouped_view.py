"""The Python and JavaScript stores show the same grouped view by default.

For the same references (an HDF5 file's, as a folder with chunk manifests and as one JSON file),
`RfsStore` and the JS `ReferenceStore` serve the same ``zarr.json`` for every array, with the
grouped view on (their defaults) and off (``grouped_view=0`` / ``groupedView: 0``): both pack
the stored chunks of arrays read from one table of entries, a chunk manifest or chunks listed in
the JSON file into one source file (Python's `Resolver.listed_table`, the JS store's
listed-table.ts). One name
differs, as js/README.md says: Python names shards of slabs ``shadowzarr.sharding_indexed`` (its
own decoder of the same format), zarrita 0.7.5 knows sharding only as ``sharding_indexed``.
zarrita reads every array through the JS view equal to h5py, and the requests it costs are
counted at the test server of js/test (js/test/grouped-view-check.mjs).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs
from shadowzarr_store import RfsStore
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

REPO = Path(__file__).resolve().parents[1]
PLACEHOLDER = "http://shadowzarr.test/"
SLAB_SHARDING = "shadowzarr.sharding_indexed"
ARRAYS = {
    # name: (shown as shards, packs of stored chunks from chunk manifests, packs of stored chunks
    # listed in one JSON file: at least 64 listed chunks, every one into one file)
    "dense": (True, True, True),  # 1,250 chunks of 1 KiB: the reads benchmark's shape
    "shuffled_gzip": (True, True, True),  # packs of chunks the stores decode
    "few": (False, False, False),  # three chunks: as stored
    "sparse": (True, False, False),  # most chunks never written
    "big_endian": (True, True, True),
    "narrow": (True, True, True),  # the shard overhangs the array's end
    "transposed_listed": (True, False, False),  # 60 chunks: too few to be listed as a table
    "sparse_packed": (True, True, False),  # packs with members never written (fill values);
    # its 41 written chunks are too few for a listed table
    "sparse_packed_gzip": (True, True, False),
}


def write_hdf5(path: Path) -> None:
    rng = np.random.default_rng(40)
    with h5py.File(path, "w") as f:
        f.create_dataset(
            "dense", data=rng.integers(-999, 999, (20000, 32), dtype=np.int16), chunks=(32, 16)
        )
        f.create_dataset(
            "shuffled_gzip",
            data=rng.random((20000, 8), dtype=np.float32),
            chunks=(16, 8),
            compression="gzip",
            shuffle=True,
        )
        f.create_dataset("few", data=np.arange(30, dtype=np.int32), chunks=(10,))
        sparse = f.create_dataset(
            "sparse", shape=(5000,), chunks=(100,), dtype=np.int32, fillvalue=7
        )
        sparse[:1000] = np.arange(1000)
        f.create_dataset("big_endian", data=np.arange(128000, dtype=">i4"), chunks=(64,))
        f.create_dataset(
            "narrow", data=rng.integers(0, 100, (10001, 3), dtype=np.int8), chunks=(8, 3)
        )
        for name, compression in (("sparse_packed", None), ("sparse_packed_gzip", "gzip")):
            holes = f.create_dataset(
                name,
                shape=(200000,),
                chunks=(100,),
                dtype=np.int32,
                fillvalue=-3,
                compression=compression,
            )
            holes[1000:5000] = np.arange(4000)
            holes[150000:150100] = 5
        f.create_dataset(
            "transposed_listed", data=rng.random((300, 40)), chunks=(10, 20), compression="gzip"
        )


def python_zarr_json(store: RfsStore, path: str) -> dict[str, Any]:
    buffer = sync(store.get(f"{path}/zarr.json", default_buffer_prototype()))
    assert buffer is not None
    document = json.loads(buffer.to_bytes())
    assert isinstance(document, dict)
    return document


def same_format(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with Python's name of shards of slabs spelled as zarrita knows it."""
    text = json.dumps(document).replace(f'"{SLAB_SHARDING}"', '"sharding_indexed"')
    out = json.loads(text)
    assert isinstance(out, dict)
    return out


def node_reads(
    root: Path, refs: str, arrays: tuple[str, ...] = tuple(ARRAYS), *, build: bool = True
) -> dict[str, Any]:
    node = shutil.which("node")
    npm = shutil.which("npm")
    assert node is not None, "the JS store's check needs Node 20+"
    assert npm is not None, "the JS store's check needs npm"
    if build:
        built = subprocess.run(
            [npm, "run", "build"], cwd=REPO / "js", capture_output=True, text=True, check=False
        )
        assert built.returncode == 0, built.stdout + built.stderr
    result = subprocess.run(
        [node, "test/grouped-view-check.mjs", str(root), refs, PLACEHOLDER, *arrays],
        cwd=REPO / "js",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert isinstance(out, dict)
    return out


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(600)
@pytest.mark.parametrize("refs", ["refs.shadowzarr", "refs.json"])
def test_both_stores_show_the_same_view(tmp_path: Path, refs: str) -> None:
    if not (REPO / "js" / "node_modules" / "zarrita").exists():
        pytest.fail("js/node_modules is missing: run `npm ci` in js/ (tools/test does)")
    source = tmp_path / "data.h5"
    write_hdf5(source)
    rfs = generate_rfs(PLACEHOLDER + "data.h5", local_hdf5_path=source)
    write_rfs(rfs, tmp_path / refs)
    grouped = RfsStore(str(tmp_path / refs))
    stored = RfsStore(str(tmp_path / refs), grouped_view=0)
    js = node_reads(tmp_path, refs)
    indexed = refs == "refs.shadowzarr"
    with h5py.File(source) as f:
        for name, (shown_grouped, packed_from_manifest, packed_when_listed) in ARRAYS.items():
            python = python_zarr_json(grouped, name)
            shown_by_js = json.loads(js[name]["grouped"]["zarr_json"])
            assert python_zarr_json(stored, name) == json.loads(js[name]["stored"]["zarr_json"])
            assert same_format(python) == shown_by_js, name
            codec = python["codecs"][0]
            assert (codec["name"] in ("sharding_indexed", SLAB_SHARDING)) == shown_grouped, name
            stored_chunks = list(f[name].chunks or ())
            inner = codec["configuration"]["chunk_shape"] if shown_grouped else stored_chunks
            packed = list(inner) != stored_chunks
            assert packed == (packed_from_manifest if indexed else packed_when_listed), name

            want = f[name][()]
            dtype = want.dtype.newbyteorder("<") if want.dtype.byteorder == ">" else want.dtype
            for view in ("grouped", "stored"):
                read = js[name][view]
                got = np.frombuffer(base64.b64decode(read["data"]), dtype=dtype)
                np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=name)
            through, plain = js[name]["grouped"], js[name]["stored"]
            # the view never costs a request more, nor a byte more for a dense read
            assert through["requests"] <= plain["requests"], (name, through, plain)
            assert through["bytes"] <= plain["bytes"], (name, through, plain)
            if packed:
                # zarrita asks for a few packs instead of every stored chunk
                assert through["calls"] * 100 < plain["calls"], (name, through, plain)


def hostile(refs: dict[str, Any], variant: str, source: Path) -> None:
    """``refs`` (one JSON file's) with the listing of ``dense`` damaged as ``variant`` says."""
    chunks = refs["refs"]
    if variant == "mixed_sources":  # one chunk in another file (a copy of the same bytes)
        chunks["dense/c/5/0"][0] = PLACEHOLDER + "copy.h5"
    elif variant == "missing_entries":  # chunks never written: fill values, in packs too
        for key in ("dense/c/0/0", "dense/c/100/1", "dense/c/624/1"):
            del chunks[key]
    elif variant == "inline_entry":  # an entry of another form among the listed chunks
        _, offset, size = chunks["dense/c/7/1"]
        data = source.read_bytes()[offset : offset + size]
        chunks["dense/c/7/1"] = "base64:" + base64.b64encode(data).decode()
    elif variant == "long_entry":  # an uncompressed chunk a byte longer than a chunk
        chunks["dense/c/9/0"][2] += 1
    elif variant == "empty_entry":  # size 0 anywhere but offset 0 is malformed
        chunks["dense/c/9/0"] = [chunks["dense/c/9/0"][0], 64, 0]
    elif variant == "float_entry":  # JSON has one number type: 12345.0 is the integer 12345
        url, offset, size = chunks["dense/c/5/0"]
        chunks["dense/c/5/0"] = [url, float(offset), float(size)]


# variant: (Python and JS pack the listed chunks, the typed error both views' reads fail with)
HOSTILE = {
    "mixed_sources": (False, None),
    "missing_entries": (True, None),
    "inline_entry": (False, None),
    "long_entry": (True, "ChunkDecodeError"),
    "empty_entry": (True, "ReferenceFormatError"),  # listed, refused when read
    "float_entry": (True, None),  # [url, 64.0, 100] is listed as [url, 64, 100] is
}


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(600)
def test_hostile_listings_show_the_same_view(tmp_path: Path) -> None:
    """A listing that is not one table into one file (mixed sources, an entry of another form)
    is shown as stored inside the shards by both stores; missing entries still pack (fill
    values); bad sizes fail the read through the view with the stored read's typed error; an
    offset and size spelled as floats (``12345.0``) are the integers, listed and packed."""
    if not (REPO / "js" / "node_modules" / "zarrita").exists():
        pytest.fail("js/node_modules is missing: run `npm ci` in js/ (tools/test does)")
    source = tmp_path / "data.h5"
    write_hdf5(source)
    shutil.copy(source, tmp_path / "copy.h5")
    rfs = generate_rfs(PLACEHOLDER + "data.h5", local_hdf5_path=source)
    write_rfs(rfs, tmp_path / "refs.json")
    text = (tmp_path / "refs.json").read_text()
    with h5py.File(source) as f:
        want = f["dense"][()]
    for n, (variant, (packed, error)) in enumerate(HOSTILE.items()):
        refs = json.loads(text)
        hostile(refs, variant, source)
        name = f"refs-{variant}.json"
        (tmp_path / name).write_text(json.dumps(refs))
        if variant == "float_entry":
            assert ".0, " in (tmp_path / name).read_text()
        python = python_zarr_json(RfsStore(str(tmp_path / name)), "dense")
        inner = python["codecs"][0]["configuration"]["chunk_shape"]
        assert (inner != [32, 16]) == packed, (variant, inner)  # dense: chunks of 32 x 16
        js = node_reads(tmp_path, name, ("dense",), build=n == 0)["dense"]
        assert json.loads(js["grouped"]["zarr_json"]) == same_format(python), variant
        for view in ("grouped", "stored"):
            read = js[view]
            if error is not None:
                assert read.get("error") == error, (variant, view, read.get("error"))
                continue
            assert "error" not in read, (variant, view, read["error"])
            got = np.frombuffer(base64.b64decode(read["data"]), dtype=want.dtype)
            expected = want.copy()
            if variant == "missing_entries":
                for i, j in ((0, 0), (100, 1), (624, 1)):
                    expected[i * 32 : (i + 1) * 32, j * 16 : (j + 1) * 16] = 0  # h5py's fill
            np.testing.assert_array_equal(got.reshape(want.shape), expected, err_msg=variant)
        if error is None:
            assert js["grouped"]["requests"] <= js["stored"]["requests"], (variant, js)
