"""generate_rfs_neo against NEO: every block, segment and stream equal, attributes from headers."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from neo_cases import WRITTEN, all_cases, written_cases
from shadowzarr_store import open_rfs

from shadowzarr_neo import generate_rfs_neo
from shadowzarr_neo.generate import buffer_path

if TYPE_CHECKING:
    from pathlib import Path


def _check_against_neo(reader, rfs, root=None) -> int:
    """Every stream of every segment read through the references equals NEO's read.

    ``root`` is the zarr group to read; by default the references opened with open_rfs.
    """
    if root is None:
        root = open_rfs(rfs)
    del rfs
    header = reader.header
    n_segments = _n_segments(reader)
    single = n_segments == [1]
    checked = 0
    for block in range(header["nb_block"]):
        for seg in range(n_segments[block]):
            for buffer in header["signal_buffers"]:
                path = buffer_path(str(buffer["id"]), block, seg, single=single)
                array = root[path]
                data = array[:]
                neo_attrs = dict(array.attrs)["neo"]
                assert neo_attrs["buffer_id"] == str(buffer["id"])
                for stream in neo_attrs["streams"]:
                    index = list(header["signal_streams"]["id"]).index(stream["id"])
                    expected = reader.get_analogsignal_chunk(block, seg, None, None, index)
                    got = data[:, stream["columns"]]
                    assert got.dtype == expected.dtype.newbyteorder("=")  # zarr gives native order
                    np.testing.assert_array_equal(got, expected)
                    _check_stream_attributes(reader, block, seg, index, stream)
                    checked += 1
    streams_in_buffers = sum(
        1 for s in header["signal_streams"] if str(s["buffer_id"]) in header["signal_buffers"]["id"]
    )
    assert checked == streams_in_buffers * sum(n_segments)
    return checked


def _n_segments(reader) -> list[int]:
    header = reader.header
    return [int(header["nb_segment"][block]) for block in range(header["nb_block"])]


def _check_stream_attributes(reader, block: int, seg: int, index: int, stream: dict) -> None:
    header = reader.header
    assert stream["name"] == header["signal_streams"][index]["name"]
    assert stream["sampling_rate"] == reader.get_signal_sampling_rate(index)
    assert stream["t_start"] == reader.get_signal_t_start(block, seg, index)
    channels = header["signal_channels"]
    mine = channels[channels["stream_id"] == stream["id"]]
    assert [c["id"] for c in stream["channels"]] == list(mine["id"])
    assert [c["name"] for c in stream["channels"]] == list(mine["name"])
    assert [c["units"] for c in stream["channels"]] == list(mine["units"])
    np.testing.assert_array_equal([c["gain"] for c in stream["channels"]], mine["gain"])
    np.testing.assert_array_equal([c["offset"] for c in stream["channels"]], mine["offset"])


@all_cases
def test_every_stream_equals_neo(write, tmp_path: Path) -> None:
    reader = write(tmp_path).open()
    rfs = generate_rfs_neo(reader)
    assert _check_against_neo(reader, rfs) >= 1
    json.dumps(rfs.refs["zarr.json"].data.decode())  # metadata is plain JSON text


@all_cases
def test_small_chunks_are_one_gen_entry_per_buffer(write, tmp_path: Path) -> None:
    reader = write(tmp_path).open()
    # a few chunks per buffer, with a short last one (97 does not divide the lengths written)
    longest = max(
        reader.get_signal_size(b, s, i)
        for b in range(reader.header["nb_block"])
        for s in range(int(reader.header["nb_segment"][b]))
        for i in range(len(reader.header["signal_streams"]))
    )
    rfs = generate_rfs_neo(reader, chunk_samples=max(97, longest // 4 | 1))
    _check_against_neo(reader, rfs)
    root = open_rfs(rfs)
    for path in [k.removesuffix("/zarr.json") for k in rfs.refs if k.endswith("/zarr.json")]:
        node = root[path]
        if not isinstance(node, zarr.Array):
            continue
        grid = [-(-s // c) for s, c in zip(node.shape, node.chunks, strict=True)]
        entries = [e for e in rfs.gen if e.key.startswith(path + "/c/")]
        listed = [k for k in rfs.refs if k.startswith(path + "/c/")]
        if path in rfs.indexes:  # many HDF5 chunks: listed in a chunk manifest instead
            assert not entries
            assert not listed
        elif grid[0] * grid[1] > 1 and not listed:
            assert len(entries) == 1, path  # however long the buffer: one gen entry
            assert entries[0].count == grid[0] * grid[1]
    assert rfs.version == (2 if rfs.gen or rfs.indexes else 1)


@written_cases
def test_url_for_and_sources(write, tmp_path: Path) -> None:
    recording = write(tmp_path / "data")
    reader = recording.open()
    rfs = generate_rfs_neo(reader, url_for=lambda p: "https://bucket.example/" + p.lstrip("/"))
    assert rfs.sources
    for url, info in rfs.sources.items():
        assert url.startswith("https://bucket.example/")
        local = "/" + url.removeprefix("https://bucket.example/")
        with open(local, "rb") as f:
            assert info.size == len(f.read())
    urls = {ref.url for ref in rfs.refs.values() if hasattr(ref, "url")}
    urls |= {entry.url for entry in rfs.gen}
    assert urls <= set(rfs.sources)


def test_paths_for_one_segment(tmp_path: Path) -> None:
    from neo_recordings.spikeglx import write_spikeglx

    reader = write_spikeglx(tmp_path, n_channels=4, segments=1, n_samples=100).open()
    rfs = generate_rfs_neo(reader)
    arrays = sorted(k.removesuffix("/zarr.json") for k in rfs.refs if k.endswith("/zarr.json"))
    assert arrays == ["imec0.ap", "imec0.lf", "nidq"]


@pytest.mark.filterwarnings("ignore:Cannot rescale to voltage:UserWarning")
def test_readers_without_buffers_are_refused(tmp_path: Path) -> None:
    from neo.rawio import BlackrockRawIO
    from neo_recordings._common import ephys_data
    from shadowzarr_spec.errors import NotVirtualizable

    reader = BlackrockRawIO(str(ephys_data() / "blackrock" / "example_2"), nsx_to_load=2)
    reader.parse_header()
    with pytest.raises(NotVirtualizable, match="BlackrockRawIO"):
        generate_rfs_neo(reader)


@written_cases
def test_version_1_output_reads_with_fsspec_and_zarr(write, tmp_path: Path) -> None:
    """Without gen, the references are plain kerchunk: fsspec and zarr read them unaided."""
    import fsspec
    from shadowzarr_spec import rfs_to_json

    reader = write(tmp_path).open()
    rfs = generate_rfs_neo(reader, chunk_samples=1_000_000)
    if rfs.indexes:  # a chunk manifest is written next to the references, never plain kerchunk
        assert rfs.version == 2
        return
    document = rfs_to_json(rfs)
    document = json.loads(document) if isinstance(document, str) else document
    if rfs.gen:
        assert document["version"] == 2
        return
    assert document["version"] == 1
    fs = fsspec.filesystem("reference", fo=document, asynchronous=True)
    root = zarr.open_group(zarr.storage.FsspecStore(fs, read_only=True), mode="r")
    assert _check_against_neo(reader, rfs, root) >= 1


def test_an_hour_of_neuropixels_is_one_gen_entry(tmp_path: Path) -> None:
    """A 83 GB ap file (sparse on disk) costs the same few references as a short one."""
    import os
    import time

    from neo_recordings.spikeglx import write_spikeglx
    from shadowzarr_spec import rfs_to_json

    recording = write_spikeglx(tmp_path, segments=1, n_samples=1_000)
    ap = tmp_path / "rec_g0_t0.imec0.ap.bin"
    hour = 3_600 * 30_000
    os.truncate(ap, hour * 385 * 2)  # the rest of the hour reads as zeros
    reader = recording.open()
    started = time.perf_counter()
    rfs = generate_rfs_neo(reader)
    elapsed = time.perf_counter() - started
    entries = [entry for entry in rfs.gen if entry.key.startswith("imec0.ap/")]
    assert len(entries) == 1
    # 4 MiB chunks of 770-byte samples; the short last one is a reference of its own, as far as
    # the data goes
    assert entries[0].count == hour // 5_447
    assert "imec0.ap/c/19827/0" in rfs.refs
    assert len(rfs_to_json(rfs)) < 40_000  # metadata and attributes, no per-chunk lists
    assert elapsed < 5
    root = open_rfs(rfs)
    ap_index = list(reader.header["signal_streams"]["id"]).index("imec0.ap")
    for start in (0, 990, hour // 2, hour - 7):
        expected = reader.get_analogsignal_chunk(0, 0, start, start + 7, ap_index)
        np.testing.assert_array_equal(root["imec0.ap"][start : start + 7, :384], expected)


def test_compressed_maxwell_is_refused(tmp_path: Path) -> None:
    from neo_recordings.maxwell import write_maxwell
    from shadowzarr_spec.errors import NotVirtualizable

    recording = write_maxwell(tmp_path, chunks=(3, 100), compression="gzip")
    reader = recording.open()
    np.testing.assert_array_equal(
        reader.get_analogsignal_chunk(0, 0, None, None, 0), recording.signals[0, 0, "well000"]
    )
    with pytest.raises(NotVirtualizable, match="compressed"):
        generate_rfs_neo(reader)


@pytest.mark.parametrize("target", ["refs.json", "refs.shadowzarr"])
@pytest.mark.parametrize(
    "write_name", ["openephys-binary", "maxwell-many-chunks", "axon-File_axon_7"]
)
def test_written_references_read_back(write_name: str, target: str, tmp_path: Path) -> None:
    """Written to a JSON file or a directory (with a chunk manifest), then loaded from disk."""
    from neo_cases import REAL, WRITTEN
    from shadowzarr_spec import write_rfs

    reader = {**WRITTEN, **REAL}[write_name](tmp_path / "data").open()
    written = write_rfs(generate_rfs_neo(reader, chunk_samples=101), tmp_path / target)
    assert _check_against_neo(reader, None, open_rfs(written)) >= 1


INTERLEAVED = {k: v for k, v in WRITTEN.items() if "vectorized" not in k and "maxwell" not in k}


@pytest.mark.parametrize("write", list(INTERLEAVED.values()), ids=list(INTERLEAVED))
def test_same_values_as_neos_own_zarr_v2_references(write, tmp_path: Path) -> None:
    """NEO's experimental xarray export (one big Zarr v2 chunk per interleaved buffer, read by
    fsspec and zarr) is an independent peer: our arrays hold the same values."""
    import fsspec
    from neo.rawio.xarray_utils import to_zarr_v2_reference

    reader = write(tmp_path).open()
    ours = open_rfs(generate_rfs_neo(reader, chunk_samples=333))
    single = _n_segments(reader) == [1]
    compared = 0
    for block, n in enumerate(_n_segments(reader)):
        for seg in range(n):
            for buffer_id in (str(b) for b in reader.header["signal_buffers"]["id"]):
                description = reader.get_analogsignal_buffer_description(block, seg, buffer_id)
                if description["type"] != "raw" or description.get("time_axis", 0) != 0:
                    continue  # NEO's export covers interleaved raw buffers only
                peer_refs = to_zarr_v2_reference(reader, block, seg, buffer_id)
                fs = fsspec.filesystem("reference", fo=peer_refs, asynchronous=True)
                peer = zarr.open_group(
                    zarr.storage.FsspecStore(fs, read_only=True), mode="r", zarr_format=2
                )
                path = buffer_path(buffer_id, block, seg, single=single)
                np.testing.assert_array_equal(ours[path][:], peer["traces"][:])
                compared += 1
    assert compared == len(reader.header["signal_buffers"]) * sum(_n_segments(reader))
