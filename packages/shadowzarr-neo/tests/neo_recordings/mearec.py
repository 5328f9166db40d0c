"""MEArec simulated recordings (HDF5), written with MEArec's own writer.

``save_recording_generator`` writes ``info/recordings`` (``fs``, ``duration``, ``dtype``),
``channel_positions``, ``spiketrains/<unit>`` and ``recordings``: samples by channels (MEArec
1.5 and later), contiguous, with a ``gain_to_uV`` attribute. NEO reads ``int(fs * duration)``
samples, which floating point may make one fewer than the dataset holds. With ``chunks`` the
``recordings`` dataset is written again chunked (and ``compression``, ``scaleoffset``), as
MEArec's loader reads any dataset of that name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import h5py
import numpy as np
from neo.rawio import MEArecRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path


def write_mearec(
    directory: Path,
    *,
    n_channels: int = 7,
    n_samples: int = 3_001,
    segments: int = 1,
    seed: int = 0,
    dtype: str = "int16",
    sampling_rate: float = 32_000.0,
    chunks: tuple[int, int] | None = None,
    compression: str | None = None,
    scaleoffset: int | None = None,
    filters: dict[str, Any] | None = None,
) -> WrittenRecording:
    import MEArec
    import neo
    import quantities

    if segments != 1:
        raise ValueError("MEArec recordings hold one segment")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    data = random_samples(rng, n_samples, n_channels, dtype)
    duration = n_samples / sampling_rate
    spiketrains = [
        neo.SpikeTrain(
            np.sort(rng.uniform(0, duration, size=5)) * quantities.s,
            t_stop=duration * quantities.s,
            cell_type=cell_type,  # MEArec's loader expects every unit to have annotations
        )
        for cell_type in ("E", "I")
    ]
    info = {
        "recordings": {"fs": sampling_rate, "duration": duration, "dtype": dtype},
        # what probeinterface's read_mearec (SpikeInterface, NeuroConv) takes of the probe
        "electrodes": {
            "electrode_name": "tests-linear-7",
            "description": "a linear probe written by the tests",
            "plane": "yz",
            "shape": "square",
            "size": 7.5,
            "type": "mea",
            "sortlist": "null",  # contacts in channel order, as MEArec writes None
        },
    }
    positions = np.column_stack(
        [np.zeros(n_channels), np.zeros(n_channels), 20.0 * np.arange(n_channels)]
    )
    generator = MEArec.RecordingGenerator(
        rec_dict={
            "recordings": data,
            "channel_positions": positions,
            "spiketrains": spiketrains,
        },
        info=info,
    )
    generator.gain_to_uV = 0.195 if np.dtype(dtype).kind in "iu" else None
    path = directory / "recording.h5"
    MEArec.save_recording_generator(generator, path)
    if chunks is not None:
        with h5py.File(path, "a") as f:
            attributes = dict(f["recordings"].attrs)
            del f["recordings"]
            options = {"compression": compression, "scaleoffset": scaleoffset}
            options.update(filters or {})  # e.g. an hdf5plugin filter's compression options
            stored = f.create_dataset("recordings", data=data, chunks=chunks, **options)
            stored.attrs.update(attributes)
    n_read = int(sampling_rate * duration)  # what NEO reads
    return WrittenRecording(
        MEArecRawIO, {"filename": str(path)}, {(0, 0, "0"): data[:n_read]}, (path,)
    )
