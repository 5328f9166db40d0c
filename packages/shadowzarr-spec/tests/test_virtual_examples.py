"""VirtualArray on the seed's examples, and every refusal with the reason it gives."""

from __future__ import annotations

import numpy as np
import pytest
from shadowzarr_store import open_rfs
from spec_virtual_reading import assert_same, build, read

from shadowzarr_spec import (
    FileRef,
    NotVirtualizable,
    RfsBuilder,
    VirtualArray,
    columns_selection,
    read_local_rfs,
    stack,
    write_rfs,
)
from shadowzarr_spec.virtual import NeedsDataError, Placeholder, concatenate


@pytest.fixture
def interleaved(tmp_path):
    """A SpikeGLX-like file: 385 int16 channels interleaved sample by sample."""
    data = np.random.default_rng(0).integers(-2000, 2000, (3000, 385), dtype=np.int16)
    path = tmp_path / "run_g0_t0.imec0.ap.bin"
    data.tofile(path)
    return str(path), data


def test_spikeglx_neural_and_sync_channels(interleaved):
    path, data = interleaved
    raw = VirtualArray.contiguous(path, shape=[3000, 385], dtype="int16", chunk_rows=1000)
    neural = raw[:, :384]
    sync = raw[:, 384]
    first_part = neural[:1500]
    rfs = build(neural, dimension_names=["time", "channel"])
    assert rfs.selections["x"].to_json() == {"record_size": 770, "keep": [[0, 768]]}
    assert len(rfs.gen) == 1
    assert_same(read(neural), data[:, :384])
    assert_same(read(sync), data[:, 384])
    assert_same(read(first_part), data[:1500, :384])
    assert_same(read(raw[1234:2345, [7, 3, 300]]), data[1234:2345, [7, 3, 300]])
    assert_same(read(raw[-5]), data[-5])
    assert_same(read(raw[17, 200]), data[17, 200])
    zarr_json = open_rfs(rfs)["x"].metadata.to_dict()
    assert zarr_json["dimension_names"] == ("time", "channel")
    assert [c["name"] for c in zarr_json["codecs"]] == ["bytes"]


def test_one_file_per_channel_stacks_into_columns(tmp_path):
    rng = np.random.default_rng(1)
    data = rng.integers(-100, 100, (500, 4), dtype=np.int16)
    paths = []
    for channel in range(4):
        path = tmp_path / f"ch{channel}.dat"
        path.write_bytes(b"\0" * 16384 + data[:, channel].tobytes())
        paths.append(str(path))
    channels = [
        VirtualArray.contiguous(p, shape=[500], dtype="int16", offset=16384, chunk_rows=128)
        for p in paths
    ]
    signal = stack(channels, axis=1)
    assert signal.shape == (500, 4)
    assert signal.chunk_shape == (128, 1)
    rfs = build(signal)
    assert len(rfs.gen) == 4  # one gen entry per file, whatever the length
    assert_same(read(signal), data)
    assert_same(read(signal[:, [2, 0]]), data[:, [2, 0]])
    assert_same(read(signal[256:, 3]), data[256:, 3])
    assert_same(read(stack(channels, axis=0)), data.T)


def test_channels_one_after_another_in_one_file_make_two_gen_entries(tmp_path):
    data = np.arange(6 * 100, dtype=">f4").reshape(6, 100)
    path = tmp_path / "blocked.bin"
    path.write_bytes(b"head" + data.tobytes())
    channels = [
        VirtualArray.contiguous(str(path), [100], ">f4", offset=4 + 400 * k, chunk_rows=30)
        for k in range(6)
    ]
    signal = stack(channels, axis=1)
    rfs = build(signal)
    # the whole chunks of every channel, then their short last chunks (10 rows: 40 bytes,
    # never past the channel's last value, nor the file's end after the last channel)
    assert [(entry.count, next(entry.items())[1].size) for entry in rfs.gen] == [(18, 120), (6, 40)]
    assert_same(read(signal), data.T)


def test_a_transposed_contiguous_array_references_only_bytes_its_file_holds(tmp_path):
    """Issue 39 item 8: the last of 16 chunks of 333 rows holds 5 rows (120 bytes at the end of
    the file); its reference claimed a whole chunk (7,992 bytes) and both readers refused it."""
    data = np.random.default_rng(8).integers(-3000, 3000, (5000, 12), dtype="<i2")
    path = tmp_path / "block.bin"
    path.write_bytes(b"\x01" * 600 + data.tobytes())
    size = path.stat().st_size
    for url in (str(path), "https://example.org/block.bin"):  # a file's size known or not
        virtual = VirtualArray.contiguous(
            url, shape=[5000, 12], dtype="<i2", offset=600, chunk_rows=333
        ).transpose(1, 0)
        rfs = build(virtual)
        references = [ref for entry in rfs.gen for _, ref in entry.items()]
        references += [ref for ref in rfs.refs.values() if isinstance(ref, FileRef)]
        assert sorted((ref.offset, ref.size) for ref in references)[-1] == (size - 120, 120)
        assert len(references) == 16
    local = VirtualArray.contiguous(
        str(path), shape=[5000, 12], dtype="<i2", offset=600, chunk_rows=333
    ).transpose(1, 0)
    expected = np.fromfile(path, dtype="<i2", offset=600).reshape(5000, 12).T
    assert_same(read(local), expected)
    assert_same(read(local, tmp_path / "refs.shadowzarr"), expected)


def test_records_with_a_header_match_the_memmap_view(tmp_path):
    rng = np.random.default_rng(2)
    header_size, n = 100, 257
    packets = np.zeros(n, dtype=[("header", "u1", 13), ("samples", "<i2", 64)])
    packets["header"] = rng.integers(0, 255, (n, 13))
    packets["samples"] = rng.integers(-30000, 30000, (n, 64))
    path = tmp_path / "packets.bin"
    path.write_bytes(b"\xff" * header_size + packets.tobytes())
    signal = VirtualArray.records(
        str(path), shape=[n, 64], dtype="int16", record_size=141, skip=13, offset=header_size
    )
    mapped = np.memmap(path, dtype=packets.dtype, mode="r", offset=header_size)
    from_map = VirtualArray.from_memmap(mapped["samples"])
    assert signal.selection == from_map.selection
    assert signal.selection.to_json() == {"record_size": 141, "keep": [[13, 141]]}
    assert_same(read(signal), packets["samples"])
    assert_same(read(from_map), packets["samples"])
    assert_same(
        read(VirtualArray.from_memmap(mapped["header"][10:20, 3:9])), packets["header"][10:20, 3:9]
    )
    assert_same(read(signal[:, ::-3]), packets["samples"][:, ::-3])
    del mapped


def test_blocks_transposed_give_samples_by_channels(tmp_path):
    """Records holding one block of channels × samples after a header (as Intan blocks)."""
    rng = np.random.default_rng(3)
    channels, per_block, n_blocks, header = 5, 6, 9, 10
    values = rng.integers(0, 65535, (n_blocks, channels, per_block), dtype=np.uint16)
    record_size = header + channels * per_block * 2 + 3
    body = bytearray()
    for block in values:
        body += b"H" * header + block.tobytes() + b"tail"[:3]
    path = tmp_path / "blocks.bin"
    path.write_bytes(b"file-header" + bytes(body))
    stored = VirtualArray.blocks(
        str(path),
        shape=[channels, n_blocks * per_block],
        chunk_shape=[channels, per_block],
        dtype="uint16",
        record_size=record_size,
        offset=len(b"file-header") + header,
        axis=1,
    )
    signal = stored.transpose(1, 0)
    expected = np.concatenate(list(values), axis=1).T
    assert signal.codecs[0] == {"name": "transpose", "configuration": {"order": [1, 0]}}
    assert_same(read(signal), expected)
    assert_same(read(signal[12:30]), expected[12:30])
    assert_same(read(stored), expected.T)
    with pytest.raises(NeedsDataError, match="inside chunks of 6"):
        signal[13:30]
    with pytest.raises(NeedsDataError, match="inside chunks of 5"):
        signal[:, 1:]


def test_pages_by_whole_chunks_and_transposed(tmp_path):
    """A stack of uncompressed pages (as a TIFF), one chunk per page."""
    pages = np.random.default_rng(4).integers(0, 255, (7, 4, 5), dtype=np.uint8)
    path = tmp_path / "stack.raw"
    page_record = 20 + 8
    path.write_bytes(b"".join(b"IFD-----" + page.tobytes() for page in pages))
    stack_ = VirtualArray.blocks(
        str(path), [7, 4, 5], [1, 4, 5], "uint8", record_size=page_record, offset=8, axis=0
    )
    frames = stack_.transpose(0, 2, 1)
    assert frames.codecs[0]["configuration"]["order"] == [0, 2, 1]
    assert_same(read(frames), pages.transpose(0, 2, 1))
    assert_same(read(stack_[::2]), pages[::2])
    assert_same(read(stack_[::-3]), pages[::-3])
    assert_same(read(stack_[[5, 1, 1]]), pages[[5, 1, 1]])
    assert_same(read(frames[4]), pages[4].T)
    assert len(build(stack_[::2]).gen) == 1


def test_transpose_without_codec_when_chunks_extend_along_one_axis(tmp_path):
    data = np.arange(40, dtype="<u2")
    path = tmp_path / "d.bin"
    data.tofile(path)
    columns = stack([VirtualArray.contiguous(str(path), [40], "<u2", chunk_rows=8)] * 3, axis=1)
    rows = columns.transpose()
    assert [c["name"] for c in rows.codecs] == ["bytes"]
    assert_same(read(rows), np.stack([data] * 3, axis=1).T)


def test_from_chunks_refs_gen_and_index(tmp_path):
    rng = np.random.default_rng(5)
    chunks = rng.integers(0, 1000, (6, 8), dtype="<i4")  # 6 chunks of 8 values
    path = tmp_path / "c.bin"
    order = [4, 0, 5, 2, 1]  # chunk 3 never written
    path.write_bytes(b"".join(chunks[c].tobytes() for c in order))
    listed = [((c,), str(path), 32 * position, 32) for position, c in enumerate(order)]
    array = VirtualArray.from_chunks([46], [8], "<i4", listed, fill_value=-1)
    expected = chunks.reshape(-1)[:46].copy()
    expected[24:32] = -1
    rfs = build(array)
    assert not rfs.gen
    assert not rfs.indexes
    assert len([k for k in rfs.refs if "/c/" in k]) == 5
    assert_same(read(array), expected)
    indexed = build(array, manifest_threshold=2)
    assert "x" in indexed.indexes
    assert_same(read(array, tmp_path / "refs", manifest_threshold=2), expected)
    evenly = VirtualArray.from_chunks(
        [16], [8], "<i4", [((0,), str(path), 0, 32), ((1,), str(path), 32, 32)]
    )
    assert len(build(evenly).gen) == 1
    assert_same(read(evenly), chunks[[4, 0]].reshape(-1))


def test_from_rfs_keeps_gen_and_index_and_can_be_stacked(tmp_path):
    data = np.random.default_rng(6).standard_normal((4, 300)).astype("<f8")
    path = tmp_path / "d.bin"
    data.tofile(path)
    rows = [
        VirtualArray.contiguous(str(path), [300], "<f8", 2400 * k, chunk_rows=10) for k in range(4)
    ]
    rows[1].attributes["unit"] = "mV"
    single = build(rows[1])
    taken = VirtualArray.from_rfs(single, "x")
    assert taken.attributes == {"unit": "mV"}
    assert len(taken._layout.pieces) == 1  # the gen entry stays evenly spaced
    assert_same(read(taken[100:200]), data[1, 100:200])
    written = tmp_path / "refs"
    write_rfs(build(rows[2], manifest_threshold=5), written)
    loaded = read_local_rfs(written)
    assert "x" in loaded.indexes or loaded.gen
    assert_same(read(VirtualArray.from_rfs(loaded, "x")), data[2])
    indexed = read_local_rfs(_directory_with_index(rows[3], tmp_path / "indexed"))
    assert "x" in indexed.indexes
    stacked = stack([VirtualArray.from_rfs(indexed, "x"), taken], axis=0)
    assert_same(read(stacked), data[[3, 1]])


def _directory_with_index(virtual, directory):
    """References as a generator with a chunk manifest writes them."""
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array(
        "x", shape=virtual.shape, data_type=virtual.dtype, chunk_shape=virtual.chunk_shape
    )
    table = np.zeros((*virtual._chunked()._layout.grid, 2), dtype=np.uint64)
    urls = set()
    for (c,), url, offset, length in virtual._chunked()._layout.chunks():
        table[c] = (offset, length)
        urls.add(url)
    builder.add_index("x", urls.pop(), table)
    write_rfs(builder.build(), directory)
    return directory


def test_attributes_are_settable_and_added(tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(bytes(8))
    array = VirtualArray.contiguous(str(path), [4], "<i2")
    array.attributes = {"rate": 30000.0}
    array.attributes["gain"] = [0.195]
    rfs = build(array, attributes={"units": "uV"})
    attributes = dict(open_rfs(rfs)["x"].attrs)
    assert attributes == {"rate": 30000.0, "gain": [0.195], "units": "uV"}
    assert array[1:].attributes == array.attributes


def test_placeholder_has_shape_and_refuses_to_be_read(tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(bytes(600))
    virtual = VirtualArray.contiguous(str(path), [100, 3], ">i2", chunk_rows=10)
    placeholder = virtual.placeholder()
    assert isinstance(placeholder, Placeholder)
    assert placeholder.virtual is virtual
    assert (placeholder.shape, placeholder.dtype, len(placeholder)) == ((100, 3), ">i2", 100)
    assert placeholder.recommended_chunk_shape() == (10, 3)
    with pytest.raises(NotVirtualizable, match="holds no data"):
        np.asarray(placeholder)


def test_hdmf_zarr_writes_a_placeholder_as_metadata_only(tmp_path):
    """hdmf-zarr takes the placeholder as a data chunk iterator: the dataset gets shape, dtype
    and chunking and no chunk is written (the virtual NWB writer adds the references)."""
    from datetime import UTC, datetime

    import zarr
    from hdmf_zarr import NWBZarrIO
    from pynwb import NWBFile, TimeSeries

    path = tmp_path / "a.bin"
    path.write_bytes(bytes(4000))
    virtual = VirtualArray.contiguous(str(path), [1000, 2], "<i2", chunk_rows=100)
    nwbfile = NWBFile("test", "id", datetime(2024, 1, 1, tzinfo=UTC))
    nwbfile.add_acquisition(
        TimeSeries(name="series", data=virtual.placeholder(), unit="V", rate=10.0)
    )
    with NWBZarrIO(str(tmp_path / "out.nwb.zarr"), mode="w") as io:
        io.write(nwbfile)
    dataset = zarr.open_group(str(tmp_path / "out.nwb.zarr"), mode="r")["acquisition/series/data"]
    assert (dataset.shape, dataset.dtype, dataset.chunks) == ((1000, 2), np.dtype("<i2"), (100, 2))
    assert dataset.nchunks_initialized == 0


# -- refusals ---------------------------------------------------------------------------------


@pytest.fixture
def contiguous(tmp_path):
    path = tmp_path / "r.bin"
    path.write_bytes(bytes(2 * 50 * 6))
    return VirtualArray.contiguous(str(path), [50, 6], "<i2", chunk_rows=10)


def test_contiguous_first_axis_step_is_refused(contiguous):
    with pytest.raises(NeedsDataError, match="only steps of 1 move the byte range"):
        contiguous[::2]
    with pytest.raises(NeedsDataError, match=r"the indices \[3, 1\]"):
        contiguous[[3, 1]]


def test_rows_as_chunks_allow_steps(tmp_path):
    data = np.arange(60, dtype="<i2").reshape(10, 6)
    path = tmp_path / "r.bin"
    data.tofile(path)
    rows = VirtualArray.contiguous(str(path), [10, 6], "<i2", chunk_rows=1)
    assert_same(read(rows[::3]), data[::3])
    assert_same(read(rows[[4, 2]]), data[[4, 2]])
    assert_same(read(rows[::-4, 1:5]), data[::-4, 1:5])


def test_chunked_arrays_refuse_indexing_inside_chunks(contiguous):
    chunked = contiguous.transpose()
    with pytest.raises(NeedsDataError, match="only contiguous arrays"):
        chunked[:, 5:]
    with pytest.raises(NeedsDataError, match="index 3 along axis 1 falls inside chunks of 10"):
        chunked[:, 3]
    with pytest.raises(NeedsDataError, match="falls inside chunks"):
        chunked[[1, 2]]
    assert chunked[:, 10:35].shape == (6, 25)


def test_invalid_indices_raise_index_error(contiguous):
    with pytest.raises(IndexError, match="out of bounds"):
        contiguous[50]
    with pytest.raises(IndexError, match="too many indices"):
        contiguous[1, 2, 3]
    with pytest.raises(IndexError, match="newaxis"):
        contiguous[None]
    with pytest.raises(IndexError, match="at most one list"):
        contiguous[:1][[0], [1, 2]]
    with pytest.raises(IndexError, match="moves the list's axis"):
        stack([contiguous] * 2, axis=2)[0, :, [1, 0]]
    with pytest.raises(IndexError, match="not a valid index"):
        contiguous["a"]


def test_stack_refuses_arrays_that_differ(contiguous, tmp_path):
    with pytest.raises(ValueError, match="shape"):
        stack([contiguous, contiguous[:40]])
    with pytest.raises(ValueError, match="selection"):
        stack([contiguous[:, :3], contiguous[:, 3:]])
    with pytest.raises(NotVirtualizable, match="end to end"):
        concatenate([contiguous, contiguous])


def test_memmap_refusals(tmp_path):
    path = tmp_path / "m.bin"
    path.write_bytes(bytes(100))
    with pytest.raises(NotVirtualizable, match=r"not a view of a numpy\.memmap"):
        VirtualArray.from_memmap(np.zeros(3))
    mapped = np.memmap(path, dtype="<i2", mode="r")
    with pytest.raises(NotVirtualizable, match="evenly spaced records"):
        VirtualArray.from_memmap(mapped[::-1])
    assert VirtualArray.from_memmap(mapped[10:20]).selection is None
    del mapped


def test_too_many_byte_ranges_per_record_are_refused(tmp_path):
    path = tmp_path / "wide.bin"
    path.write_bytes(bytes(2 * 2 * 40_000))
    wide = VirtualArray.contiguous(str(path), [2, 40_000], "<i2")
    with pytest.raises(NotVirtualizable, match="separate byte ranges"):
        _ = wide[:, ::2].selection


def test_layout_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError, match="does not fit a record"):
        VirtualArray.records("f", [10, 8], "<i2", record_size=20, skip=6)
    with pytest.raises(ValueError, match="every other axis"):
        VirtualArray.blocks("f", [4, 10], [2, 5], "<i2", record_size=100, axis=1)
    with pytest.raises(ValueError, match="outside the chunk grid"):
        VirtualArray.from_chunks([4], [2], "<i2", [((2,), "f", 0, 4)])


def test_from_rfs_compressed_and_inline_chunks_by_whole_chunks(tmp_path):
    """A generator's compressed array (zlib chunks in a file, one chunk inline) taken back,
    indexed by whole chunks, stacked and transposed: the codecs stay as they are."""
    import numcodecs

    values = np.random.default_rng(7).integers(0, 50, (6, 4, 3), dtype="<i4")
    zlib = numcodecs.Zlib(level=1)
    path = tmp_path / "z.bin"
    builder = RfsBuilder()
    builder.add_group("")
    codecs = [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "numcodecs.zlib", "configuration": {"level": 1}},
    ]
    builder.add_array("z", shape=[6, 4, 3], data_type="<i4", chunk_shape=[1, 2, 3], codecs=codecs)
    body = bytearray()
    for page, half in np.ndindex(6, 2):
        encoded = zlib.encode(values[page, 2 * half : 2 * half + 2].tobytes())
        if (page, half) == (2, 1):
            builder.add_inline_chunk("z", (page, half, 0), encoded)
            continue
        builder.add_chunk("z", (page, half, 0), str(path), len(body), len(encoded))
        body += encoded
    path.write_bytes(bytes(body))
    taken = VirtualArray.from_rfs(builder.build(), "z")
    assert taken.codecs == codecs
    assert_same(read(taken), values)
    assert_same(read(taken[::-2, 2:]), values[::-2, 2:])
    frames = stack([taken[1:4], taken[3:]], axis=1).transpose(0, 1, 3, 2)
    assert frames.codecs[0] == {"name": "transpose", "configuration": {"order": [0, 1, 3, 2]}}
    expected = np.stack([values[1:4], values[3:]], axis=1).transpose(0, 1, 3, 2)
    assert_same(read(frames), expected)
    with pytest.raises(NeedsDataError, match="inside chunks of 2"):
        taken[:, 1]


def test_memmap_scalar_and_field_of_one_record(tmp_path):
    records = np.zeros(5, dtype=[("t", ">f8"), ("v", ">i2"), ("pad", "u1")])
    records["t"] = np.arange(5) / 3
    records["v"] = [-1, 2, -3, 4, -5]
    path = tmp_path / "r.bin"
    path.write_bytes(b"xyz" + records.tobytes())
    mapped = np.memmap(path, dtype=records.dtype, mode="r", offset=3)
    assert_same(read(VirtualArray.from_memmap(mapped["v"][3, ...])), records["v"][3])
    assert_same(read(VirtualArray.from_memmap(mapped[["v", "t"]])), records[["v", "t"]])
    assert_same(read(VirtualArray.from_memmap(mapped[1:4])), records[1:4])
    located = build(VirtualArray.from_memmap(mapped["t"], url="https://host/r.bin"))
    file_refs = [ref for ref in located.refs.values() if isinstance(ref, FileRef)]
    assert {ref.url for ref in [*located.gen, *file_refs]} == {"https://host/r.bin"}
    del mapped


def test_from_rfs_of_the_builders_contiguous_chunks_with_a_selection(interleaved):
    """The seed's builder example (columns_selection, add_contiguous_chunks) taken back."""
    path, data = interleaved
    record_size, keep = columns_selection(n_columns=385, itemsize=2, columns=slice(0, 384))
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array("ap", shape=[3000, 384], data_type="int16", chunk_shape=[700, 384])
    builder.add_selection("ap", record_size, keep)
    builder.add_contiguous_chunks(
        "ap",
        url=path,
        start=0,
        shape=[3000, 384],
        chunk_shape=[700, 384],
        itemsize=2,
        row_bytes=record_size,
    )
    taken = VirtualArray.from_rfs(builder.build(), "ap")
    # four whole slabs (one gen entry) and the short last one, referenced only as far as it goes
    assert len(taken._layout.pieces) == 2
    assert taken.selection.to_json() == {"record_size": 770, "keep": [[0, 768]]}
    assert_same(read(taken[1400:]), data[1400:, :384])
    assert_same(
        read(stack([taken, taken[:, :]], axis=2)[700:1400]),
        np.stack([data[700:1400, :384]] * 2, axis=2),
    )


def test_stack_an_array_from_references_with_a_new_one(tmp_path):
    """A zero fill value read back from references equals the default one."""
    data = np.arange(20, dtype=">u2")
    path = tmp_path / "d.bin"
    data.tofile(path)
    fresh = VirtualArray.contiguous(str(path), [10], ">u2", chunk_rows=5)
    taken = VirtualArray.from_rfs(
        build(VirtualArray.contiguous(str(path), [10], ">u2", 20, chunk_rows=5)), "x"
    )
    assert_same(read(stack([fresh, taken], axis=1)), data.reshape(2, 10).T)
    with pytest.raises(ValueError, match="fill value"):
        stack([fresh, VirtualArray.from_chunks([10], [5], ">u2", [], fill_value=3)])
