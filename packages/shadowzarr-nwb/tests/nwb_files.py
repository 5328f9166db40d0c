"""NWB files holding a list of series, with placeholders or with the values themselves.

The same function builds the virtual file and an ordinary one from the values, so that the two
can be compared dataset by dataset.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from pynwb import NWBFile, TimeSeries
from pynwb.ecephys import ElectricalSeries
from pynwb.ophys import OpticalChannel, TwoPhotonSeries

if TYPE_CHECKING:
    from nwb_sources import Series

SESSION_START = datetime.datetime(2026, 10, 1, 12, 0, tzinfo=datetime.UTC)


def build_nwbfile(series: list[Series], *, virtual: bool) -> NWBFile:
    """An NWBFile with every series; ``virtual`` gives placeholders, otherwise the values."""
    nwbfile = NWBFile(
        session_description="virtual NWB test",
        identifier="shadowzarr-nwb-test",
        session_start_time=SESSION_START,
        file_create_date=SESSION_START,
    )
    for item in series:
        data: Any = item.array.placeholder() if virtual else item.expected
        timestamps: Any = None
        if item.timestamps is not None:
            timestamps = item.timestamps.placeholder() if virtual else item.expected_timestamps
        match item.kind:
            case "ephys":
                nwbfile.add_acquisition(_electrical_series(nwbfile, item, data))
            case "twophoton":
                nwbfile.add_acquisition(_two_photon_series(nwbfile, item, data))
            case "timeseries":
                timing = (
                    {"timestamps": timestamps} if timestamps is not None else {"rate": item.rate}
                )
                nwbfile.add_acquisition(
                    TimeSeries(name=item.name, data=data, unit="a.u.", **timing)
                )
            case other:
                raise ValueError(f"unknown series kind {other!r}")
    return nwbfile


def _electrical_series(nwbfile: NWBFile, item: Series, data: Any) -> ElectricalSeries:
    n_channels = item.array.shape[1]
    device = nwbfile.create_device(name=f"{item.name}_device")
    group = nwbfile.create_electrode_group(
        name=f"{item.name}_group", description="probe", location="brain", device=device
    )
    first = 0 if nwbfile.electrodes is None else len(nwbfile.electrodes)
    for _ in range(n_channels):
        nwbfile.add_electrode(group=group, location="brain")
    region = nwbfile.create_electrode_table_region(
        list(range(first, first + n_channels)), f"electrodes of {item.name}"
    )
    assert item.gain is not None
    return ElectricalSeries(
        name=item.name,
        data=data,
        electrodes=region,
        rate=item.rate,
        conversion=1e-6,
        channel_conversion=np.asarray(item.gain, dtype=np.float64),
    )


def _two_photon_series(nwbfile: NWBFile, item: Series, data: Any) -> TwoPhotonSeries:
    device = nwbfile.create_device(name="microscope")
    plane = nwbfile.create_imaging_plane(
        name="ImagingPlane",
        optical_channel=OpticalChannel(name="green", description="gcamp", emission_lambda=510.0),
        description="plane",
        device=device,
        excitation_lambda=920.0,
        imaging_rate=item.rate,
        indicator="GCaMP6f",
        location="V1",
    )
    return TwoPhotonSeries(
        name=item.name, data=data, imaging_plane=plane, rate=item.rate, unit="a.u."
    )
