"""Reading a stream's layout straight from its files with numpy, to test the layouts."""

from __future__ import annotations

import numpy as np

from shadowzarr_neo.sources import ChannelRuns, Chunks, Hdf5Dataset, RecordBlocks, Rows, Stacked


def _file_bytes(path: str, start: int, stop: int) -> np.ndarray:
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(stop - start)
    return np.frombuffer(data + b"\x00" * (stop - start - len(data)), dtype=np.uint8)


def read_layout(layout: Rows | ChannelRuns | RecordBlocks) -> np.ndarray:
    """The time-by-channel values the layout describes."""
    match layout:
        case Rows():
            raw = _file_bytes(
                layout.path, layout.offset, layout.offset + layout.n_samples * layout.row_bytes
            )
            rows = raw.reshape(layout.n_samples, layout.row_bytes)[:, layout.skip :]
            items = rows[:, : rows.shape[1] // layout.dtype.itemsize * layout.dtype.itemsize]
            values = items.copy().view(layout.dtype)
            return values[:, list(layout.columns)]
        case ChannelRuns():
            size = layout.n_samples * layout.dtype.itemsize
            columns = [
                _file_bytes(p, o, o + size).view(layout.dtype)
                for p, o in zip(layout.paths, layout.offsets, strict=True)
            ]
            return (
                np.stack(columns, axis=1)
                if columns
                else np.empty((layout.n_samples, 0), layout.dtype)
            )
        case RecordBlocks():
            n_records = -(-layout.n_samples // layout.block)
            raw = _file_bytes(
                layout.path, layout.offset, layout.offset + n_records * layout.record_size
            )
            records = raw.reshape(n_records, layout.record_size)
            size = layout.block * layout.dtype.itemsize
            columns = [
                records[:, o : o + size].copy().view(layout.dtype).reshape(-1)[: layout.n_samples]
                for o in layout.channel_offsets
            ]
            return np.stack(columns, axis=1)
        case Chunks():
            stored = np.zeros(layout.stored_shape, dtype=layout.dtype)
            for (i, j), (offset, size) in layout.chunks.items():
                chunk = _file_bytes(layout.path, offset, offset + size).view(layout.dtype)
                chunk = chunk.reshape(layout.chunk_shape)
                a, b = i * layout.chunk_shape[0], j * layout.chunk_shape[1]
                region = stored[a : a + layout.chunk_shape[0], b : b + layout.chunk_shape[1]]
                region[...] = chunk[: region.shape[0], : region.shape[1]]
            return stored.T if layout.channel_major else stored
        case Hdf5Dataset():
            import h5py

            with h5py.File(layout.path, "r") as f:
                if layout.flat:
                    size = layout.n_samples * layout.n_channels
                    return f[layout.name][:size].reshape(layout.n_samples, layout.n_channels)
                return f[layout.name][: layout.n_samples]
        case Stacked():
            return np.concatenate([read_layout(part) for part in layout.parts], axis=1)
    raise TypeError(f"not a layout: {layout!r}")
