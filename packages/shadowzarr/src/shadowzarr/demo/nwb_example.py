"""The demo's embedded default: a realistic NWB file written with pynwb (no download needed)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np

__all__ = ["SAMPLING_RATE", "write_example_nwb"]

SAMPLING_RATE = 30_000.0


def write_example_nwb(path: Path, *, seconds: int = 20, channels: int = 32, seed: int = 7) -> Path:
    """An extracellular recording with electrodes, LFP, sorted units and trials."""
    from hdmf.backends.hdf5 import H5DataIO
    from pynwb import NWBHDF5IO, NWBFile
    from pynwb.ecephys import LFP, ElectricalSeries
    from pynwb.file import Subject

    rng = np.random.default_rng(seed)
    nwbfile = NWBFile(
        session_description="shadowzarr demo: a synthetic probe recording",
        identifier="shadowzarr-demo",
        session_start_time=datetime(2026, 1, 1, 12, 0, tzinfo=UTC),
        subject=Subject(subject_id="mouse-1", species="Mus musculus", age="P90D", sex="F"),
    )
    device = nwbfile.create_device(name="probe", description="a 32-channel silicon probe")
    group = nwbfile.create_electrode_group(
        name="shank0", description="the only shank", location="CA1", device=device
    )
    for channel in range(channels):
        nwbfile.add_electrode(group=group, location="CA1", x=0.0, y=float(channel * 20), z=0.0)
    region = nwbfile.create_electrode_table_region(list(range(channels)), "all electrodes")
    samples = int(seconds * SAMPLING_RATE)
    signal = (rng.standard_normal((samples, channels)) * 200).astype(np.int16)
    nwbfile.add_acquisition(
        ElectricalSeries(
            name="ElectricalSeries",
            data=H5DataIO(
                signal, chunks=(30_000, channels), compression="gzip", compression_opts=1
            ),
            electrodes=region,
            rate=SAMPLING_RATE,
            conversion=0.195e-6,
        )
    )
    module = nwbfile.create_processing_module(name="ecephys", description="LFP")
    lfp_data = signal[::30].astype(np.float32)
    module.add(LFP(ElectricalSeries(name="LFP", data=lfp_data, electrodes=region, rate=1000.0)))
    for _unit in range(12):
        times = np.sort(rng.uniform(0, seconds, size=int(rng.integers(50, 400))))
        nwbfile.add_unit(spike_times=times)
    nwbfile.add_trial_column(name="correct", description="whether the trial was correct")
    for trial in range(seconds // 2):
        nwbfile.add_trial(
            start_time=2.0 * trial, stop_time=2.0 * trial + 1.5, correct=bool(trial % 2)
        )
    with NWBHDF5IO(str(path), "w") as io:
        io.write(nwbfile)
    return path
