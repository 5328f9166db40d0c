"""virtual_arrays_neo against NEO: each stream's VirtualArray, written and read through the store,
equals NEO's read of that stream, for every block and segment."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from neo_cases import virtual_cases
from shadowzarr_spec import RfsBuilder
from shadowzarr_spec.errors import NotVirtualizable
from shadowzarr_store import open_rfs

from shadowzarr_neo import virtual_arrays_neo


def _open(write, tmp_path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Blackrock without its NEV file
        return write(tmp_path).open()


def _read_back(arrays, **options) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    builder = RfsBuilder()
    builder.add_group("")
    for k, (stream_id, array) in enumerate(arrays.items()):
        array.add_to(builder, f"stream{k}", dimension_names=["time", "channel"])
        del stream_id
    root = open_rfs(builder.build(), **options)
    return {sid: root[f"stream{k}"] for k, sid in enumerate(arrays)}


@virtual_cases
def test_every_stream_equals_neo(write, tmp_path: Path) -> None:
    reader = _open(write, tmp_path)
    header = reader.header
    stream_ids = [str(s) for s in header["signal_streams"]["id"]]
    checked = 0
    for block in range(header["nb_block"]):
        for seg in range(int(header["nb_segment"][block])):
            arrays = virtual_arrays_neo(reader, block_index=block, seg_index=seg)
            for stream_id, stored in _read_back(arrays).items():
                index = stream_ids.index(stream_id)
                expected = reader.get_analogsignal_chunk(block, seg, None, None, index)
                got = stored[:]
                assert got.dtype == expected.dtype.newbyteorder("=")
                np.testing.assert_array_equal(got, expected)
                np.testing.assert_array_equal(stored[5:9, -1:], expected[5:9, -1:])
                attributes = dict(stored.attrs)
                assert attributes["sampling_rate"] == reader.get_signal_sampling_rate(index)
                assert attributes["t_start"] == reader.get_signal_t_start(block, seg, index)
                channels = header["signal_channels"]
                mine = channels[channels["stream_id"] == stream_id]
                assert attributes["channel_ids"] == [str(c) for c in mine["id"]]
                np.testing.assert_array_equal(attributes["gain"], mine["gain"])
                checked += 1
            left_out = set(stream_ids) - set(arrays)
            for stream_id in left_out:  # only streams whose values NEO computes
                name = str(header["signal_streams"][stream_ids.index(stream_id)]["name"])
                assert "digital" in name or name == "Stim channel"
    assert checked >= 1


def test_intan_digital_channels_are_left_out_or_refused(tmp_path: Path) -> None:
    from neo_cases import NO_BUFFERS

    reader = _open(NO_BUFFERS["intan-rhd-60"], tmp_path)
    arrays = virtual_arrays_neo(reader)
    assert set(arrays) == {"0", "1", "2"}  # amplifier, auxiliary, supply; not digital input
    with pytest.raises(NotVirtualizable, match="digital"):
        virtual_arrays_neo(reader, strict=True)


def test_gapped_open_ephys_is_refused(tmp_path: Path) -> None:
    from neo_recordings.openephys_legacy import write_openephys_legacy

    reader = write_openephys_legacy(tmp_path, gap=True, segments=1, n_samples=4 * 1024).open()
    with pytest.raises(NotVirtualizable, match="gaps"):
        virtual_arrays_neo(reader)


def test_spikeglx_neural_channels_without_sync(tmp_path: Path) -> None:
    """The seed's example: 384 neural channels selected out of 385 interleaved ones."""
    from neo_recordings.spikeglx import write_spikeglx

    recording = write_spikeglx(tmp_path, segments=1, n_samples=2_000)
    arrays = virtual_arrays_neo(recording.open(), url_for=lambda p: p)
    ap = arrays["imec0.ap"]
    assert ap.shape == (2_000, 384)
    builder = RfsBuilder()
    builder.add_group("")
    ap.add_to(builder, "ap")
    rfs = builder.build()
    assert rfs.selections["ap"].record_size == 770  # one sample of all 385 channels
    assert rfs.selections["ap"].keep == ((0, 768),)  # the 384 neural ones
    assert len(rfs.gen) <= 1
    np.testing.assert_array_equal(open_rfs(rfs)["ap"][:], recording.signals[0, 0, "imec0.ap"])


@pytest.mark.network
def test_spikeglx_selection_transfers_only_the_records_read(nginx, nginx_root: Path) -> None:
    """Through HTTP, 100 samples of the 384 neural channels cost only the records that hold them
    (asserted from nginx's own log): the store's sharded view lets zarr ask for row blocks of
    8 KiB, and each is mapped through the selection to whole 770-byte records of the file."""
    from neo_recordings.spikeglx import write_spikeglx

    recording = write_spikeglx(nginx_root, segments=1, n_samples=12_000)
    reader = recording.open()
    arrays = virtual_arrays_neo(
        reader,
        url_for=lambda p: nginx.url(str(Path(p).relative_to(nginx_root))),
        chunk_samples=3_000,
    )
    stored = _read_back({"ap": arrays["imec0.ap"]}, sharded_view=8192)["ap"]
    nginx.reset()
    got = stored[4_000:4_100]
    np.testing.assert_array_equal(got, recording.signals[0, 0, "imec0.ap"][4_000:4_100])
    requests = nginx.count("GET", "rec_g0_t0.imec0.ap.bin")
    sent = nginx.bytes_sent("rec_g0_t0.imec0.ap.bin")
    assert requests >= 1
    assert 100 * 770 <= sent <= 2 * 100 * 770  # the records needed, plus at most a block
    print(f"100 samples of 384 channels: {requests} request(s), {sent} bytes (100 records = 77000)")


def test_bdf_is_refused(tmp_path: Path) -> None:
    from neo_recordings.edf import write_edf

    recording = write_edf(tmp_path, bdf=True, n_channels=2)
    reader = recording.open()  # NEO opens it, and reads 24-bit samples as int16
    with pytest.raises(NotVirtualizable, match="BDF"):
        virtual_arrays_neo(reader)


def test_inverted_biocam_is_refused(tmp_path: Path) -> None:
    from neo_recordings.biocam import write_biocam

    reader = write_biocam(tmp_path / "inverted", inverted=True).open()
    with pytest.raises(NotVirtualizable, match="inverted"):
        virtual_arrays_neo(reader)


def test_compressed_biocam_keeps_its_codecs(tmp_path: Path) -> None:
    """Referenced as the HDF5 generator would: the flat dataset's gzip chunks, each ten frames
    of sixteen channels, decode to blocks of frames."""
    from neo_recordings.biocam import write_biocam

    recording = write_biocam(tmp_path / "gzip", chunks=160, compression="gzip", shuffle=True)
    (array,) = virtual_arrays_neo(recording.open()).values()
    assert array.chunk_shape == (10, 16)
    names = [codec["name"] for codec in array.codecs]
    assert names == ["bytes", "numcodecs.shuffle", "numcodecs.zlib"]
    (stored,) = _read_back({"0": array}).values()
    np.testing.assert_array_equal(stored[:], recording.signals[0, 0, "0"])


def test_biocam_chunks_of_part_frames_are_refused(tmp_path: Path) -> None:
    from neo_recordings.biocam import write_biocam

    reader = write_biocam(tmp_path, chunks=100, n_channels=16).open()  # 6.25 frames a chunk
    with pytest.raises(NotVirtualizable, match="whole frames"):
        virtual_arrays_neo(reader)


def test_intan_stimulation_current_is_left_out_or_refused(tmp_path: Path) -> None:
    from neo_recordings.intan_rhs import write_intan_rhs

    from shadowzarr_neo.errors import ComputedStream

    reader = write_intan_rhs(tmp_path).open()
    assert set(virtual_arrays_neo(reader)) == {"0", "10", "3"}  # amplifier, DC, ADC
    with pytest.raises(ComputedStream):
        virtual_arrays_neo(reader, strict=True)
