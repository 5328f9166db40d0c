"""The files every reader is measured on, generated with fixed seeds.

Sizes come from `Sizes` (the defaults model real recordings; ``Sizes.quick()`` is for the
smoke test). Each writer returns what a reader must get back, so every read is checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

SAMPLE_RATE = 30_000
RECORD_HEADER = 1024
RECORD_SIZE = 2070  # Open Ephys .continuous: 8 timestamp, 2 count, 2 number, 2048 data, 10 marker
RECORD_DATA_OFFSET = 12
RECORD_SAMPLES = 1024


@dataclass(frozen=True, slots=True)
class Sizes:
    fragmented_chunks: int = 150_000
    fragmented_per_append: int = 40
    fragmented_elements: int = 256
    nwb_groups: int = 400
    grid_chunks: int = 2_000_000
    recording_channels: int = 64
    recording_bytes: int = 1_000_000_000
    recording_chunk: tuple[int, int] = (8192, 16)
    contiguous_bytes: int = 200_000_000
    records: int = 300
    lfp_chunks: int = 82
    lfp_chunk_rows: int = 1600
    lfp_channels: int = 64

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            fragmented_chunks=1_500,
            fragmented_per_append=20,
            fragmented_elements=64,
            nwb_groups=12,
            grid_chunks=20_000,
            recording_channels=16,
            recording_bytes=4 * SAMPLE_RATE * 16 * 2,
            recording_chunk=(4096, 8),
            contiguous_bytes=4 * SAMPLE_RATE * 16 * 2,
            records=300,
            lfp_chunks=82,
            lfp_chunk_rows=400,
            lfp_channels=16,
        )

    @property
    def recording_samples(self) -> int:
        return self.recording_bytes // (2 * self.recording_channels)


def write_fragmented(path: Path, sizes: Sizes) -> int:
    """Chunks of dataset "a" appended a few at a time, each append followed by one chunk of
    dataset "b", so the chunk index nodes of "a" are scattered through the file (a v1 B-tree,
    what most NWB files hold). Returns the number of chunks of "a"."""
    elements, per_append = sizes.fragmented_elements, sizes.fragmented_per_append
    chunks = sizes.fragmented_chunks
    with h5py.File(path, "w", libver="earliest") as f:
        a = f.create_dataset("a", (0,), maxshape=(None,), chunks=(elements,), dtype="i4")
        b = f.create_dataset("b", (0,), maxshape=(None,), chunks=(elements,), dtype="i4")
        piece = np.arange(per_append * elements, dtype="i4")
        for start in range(0, chunks, per_append):
            count = min(per_append, chunks - start)
            a.resize(((start + count) * elements,))
            a[start * elements :] = piece[: count * elements] + start * elements
            n = b.shape[0]
            b.resize((n + elements,))
            b[n:] = piece[:elements]
    return chunks


def fragmented_values(sizes: Sizes) -> np.ndarray:
    return np.arange(sizes.fragmented_chunks * sizes.fragmented_elements, dtype="i4")


def write_nwb_like(path: Path, sizes: Sizes) -> None:
    """Many groups, each with attributes of several types, fixed and variable-length strings,
    object references and small and chunked arrays: the shape of an NWB file's metadata."""
    rng = np.random.default_rng(7)
    strings = h5py.string_dtype("utf-8")
    with h5py.File(path, "w") as f:
        f.attrs["nwb_version"] = "2.8.0"
        f.attrs["namespace"] = "core"
        f.create_dataset("identifier", data="bench-nwb-like", dtype=strings)
        targets = []
        for g in range(sizes.nwb_groups):
            group = f.create_group(f"processing/module_{g // 20}/table_{g}")
            group.attrs["neurodata_type"] = "DynamicTable"
            group.attrs["description"] = f"table number {g} of the benchmark"
            group.attrs["colnames"] = np.array(["id", "label", "value"], dtype=object)
            group.attrs["rate"] = float(g) / 3
            rows = 10 + g % 7
            group.create_dataset("id", data=np.arange(rows))
            group.create_dataset(
                "label",
                data=np.array([f"row {i} of {g}" for i in range(rows)], dtype=object),
                dtype=strings,
            )
            group.create_dataset(
                "value", data=rng.normal(size=(rows * 100,)), chunks=(100,), compression="gzip"
            )
            group["value"].attrs["unit"] = "volts"
            group["value"].attrs["conversion"] = 1.0e-6
            targets.append(group["value"])
            if g > 0:
                group.create_dataset(
                    "refs", data=[t.ref for t in targets[-5:]], dtype=h5py.ref_dtype
                )
                group.attrs["previous"] = targets[-2].ref


def write_recording(path: Path, sizes: Sizes) -> None:
    """A long int16 recording (samples × channels), chunked like NWB's ElectricalSeries; the
    values are a seeded function of position so reads can be checked without keeping them."""
    samples, channels = sizes.recording_samples, sizes.recording_channels
    with h5py.File(path, "w") as f:
        data = f.create_dataset(
            "acquisition/ElectricalSeries/data",
            (samples, channels),
            dtype="<i2",
            chunks=sizes.recording_chunk,
        )
        _fill_recording(data, sizes)


def write_contiguous(path: Path, sizes: Sizes) -> None:
    """The same kind of recording stored contiguously (no chunks): references cut it into slabs
    of about 4 MiB, so a short read touches a fraction of one."""
    channels = sizes.recording_channels
    samples = sizes.contiguous_bytes // (2 * channels)
    with h5py.File(path, "w") as f:
        _fill_recording(f.create_dataset("data", (samples, channels), dtype="<i2"), sizes)


def _fill_recording(data: h5py.Dataset, sizes: Sizes) -> None:
    """Write ``recording_values`` into ``data`` a block of rows at a time (bounded memory)."""
    samples, channels = data.shape
    rows = sizes.recording_chunk[0] * 16
    for start in range(0, samples, rows):
        stop = min(start + rows, samples)
        data[start:stop] = recording_values(start, stop, channels)


def recording_values(start: int, stop: int, channels: int) -> np.ndarray:
    t = np.arange(start, stop, dtype=np.int64)[:, None]
    c = np.arange(channels, dtype=np.int64)[None, :]
    return ((t * 2654435761 + c * 40503) % 65536 - 32768).astype("<i2")


def write_records(path: Path, sizes: Sizes) -> np.ndarray:
    """An Open Ephys .continuous file: a 1024-byte header and records of 1024 big-endian int16
    samples between a 12-byte head and a 10-byte marker. Returns the samples."""
    rng = np.random.default_rng(11)
    samples = rng.integers(-2000, 2000, size=(sizes.records, RECORD_SAMPLES)).astype(">i2")
    with path.open("wb") as stream:
        stream.write(b"header = 'bench'\n".ljust(RECORD_HEADER, b" "))
        marker = bytes(range(10))
        for i, record in enumerate(samples):
            head = np.array([i * RECORD_SAMPLES], "<i8").tobytes()
            head += np.array([RECORD_SAMPLES, i % 65536], "<u2").tobytes()
            stream.write(head + record.tobytes() + marker)
    return samples.reshape(-1)


def write_lfp(path: Path, sizes: Sizes) -> np.ndarray:
    """A zlib-compressed LFP dataset of ``lfp_chunks`` chunks (a slow random walk, which
    compresses about 2:1 like real LFP). Returns its values."""
    rng = np.random.default_rng(13)
    shape = (sizes.lfp_chunks * sizes.lfp_chunk_rows, sizes.lfp_channels)
    steps = rng.integers(-3, 4, size=shape)
    values = np.cumsum(steps, axis=0).astype("<i2")
    with h5py.File(path, "w") as f:
        f.create_dataset(
            "lfp",
            data=values,
            chunks=(sizes.lfp_chunk_rows, sizes.lfp_channels),
            compression="gzip",
            compression_opts=4,
        )
    return values


def write_grid(path: Path, sizes: Sizes) -> np.ndarray:
    """``grid_chunks`` 8-byte chunks (chunk i holds the int64 i) stored in a shuffled order, so
    no gen entry can describe them. Returns each chunk's offset."""
    order = np.random.default_rng(17).permutation(sizes.grid_chunks)
    content = np.empty(sizes.grid_chunks, "<i8")
    content[order] = np.arange(sizes.grid_chunks, dtype="<i8")
    path.write_bytes(content.tobytes())
    return order.astype(np.uint64) * 8
