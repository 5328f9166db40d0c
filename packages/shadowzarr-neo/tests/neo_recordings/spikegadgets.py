"""SpikeGadgets Trodes ``.rec``: an XML configuration, then one packet per sample.

Each packet is a 0x55 sync byte, the bytes of every device of ``HardwareConfiguration`` in order
(``numBytes`` each; analog channels are int16 at ``startByte`` within their device), a uint32
timestamp and the int16 samples of ``numChannels`` headstage channels. Intan headstages send
their channels chip-interleaved: slot ``i`` holds hwChan ``(i % chips) * chanPerChip + i // chips``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import SpikeGadgetsRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path

DIO_BYTES = 4
ECU_BYTES = 32
ECU_ANALOG_START = (8, 10, 14)  # startByte of ECU_Ain1..3 within the ECU device


def _xml(n_channels: int, chan_per_chip: int) -> str:
    trodes = []
    for trode in range(n_channels // 4):
        channels = "".join(
            f'<SpikeChannel hwChan="{4 * trode + k}" thresh="60" maxDisp="200" triggerOn="1"/>'
            for k in range(4)
        )
        trodes.append(
            f'<SpikeNTrode id="{trode + 1}" spikeScalingToUv="0.195" refOn="0">{channels}'
            "</SpikeNTrode>"
        )
    ecu = "".join(
        f'<Channel id="ECU_Ain{k + 1}" dataType="analog" startByte="{start}" bit="0" input="1"/>'
        for k, start in enumerate(ECU_ANALOG_START)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<Configuration>\n"
        ' <GlobalConfiguration trodesVersion="2.3.4" compileDate="Jan 1 2026" '
        'systemTimeAtCreation="1767268800000" timestampAtCreation="0"/>\n'
        f' <HardwareConfiguration samplingRate="30000" numChannels="{n_channels}">\n'
        f'  <Device name="Controller_DIO" numBytes="{DIO_BYTES}" available="1">'
        '<Channel id="Controller_Din1" dataType="digital" startByte="0" bit="0" input="1"/>'
        "</Device>\n"
        f'  <Device name="ECU" numBytes="{ECU_BYTES}" available="1">{ecu}'
        '<Channel id="ECU_Din1" dataType="digital" startByte="0" bit="0" input="1"/></Device>\n'
        " </HardwareConfiguration>\n"
        f' <SpikeConfiguration device="intan" chanPerChip="{chan_per_chip}">'
        + "".join(trodes)
        + "</SpikeConfiguration>\n"
        "</Configuration>\n"
    )


def write_spikegadgets(
    directory: Path,
    *,
    n_channels: int = 16,
    n_samples: int = 1_500,
    segments: int = 1,
    seed: int = 0,
    chan_per_chip: int = 8,
    partial_tail: int = 7,
) -> WrittenRecording:
    """Tetrodes of ``n_channels`` headstage channels, three ECU analog inputs, a cut last packet."""
    if segments != 1 or n_channels % 4:
        raise ValueError("one segment and whole tetrodes only")
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    packet = 1 + DIO_BYTES + ECU_BYTES + 4 + 2 * n_channels
    packets = rng.integers(0, 256, size=(n_samples, packet), dtype=np.uint8)
    packets[:, 0] = 0x55
    packets[:, 1 + DIO_BYTES + ECU_BYTES : 5 + DIO_BYTES + ECU_BYTES] = (
        np.arange(n_samples, dtype="<u4").view(np.uint8).reshape(n_samples, 4)
    )
    ephys = random_samples(rng, n_samples, n_channels, "int16")
    packets[:, packet - 2 * n_channels :] = ephys.astype("<i2").view(np.uint8)
    ecu = random_samples(rng, n_samples, len(ECU_ANALOG_START), "int16")
    for k, start in enumerate(ECU_ANALOG_START):
        byte = 1 + DIO_BYTES + start
        packets[:, byte : byte + 2] = ecu[:, k : k + 1].astype("<i2").view(np.uint8)
    path = directory / "recording.rec"
    with path.open("wb") as f:
        f.write(_xml(n_channels, chan_per_chip).encode("utf8"))
        f.write(packets.tobytes())
        f.write(packets[0, :partial_tail].tobytes())
    signals = {(0, 0, "ECU"): ecu, (0, 0, "trodes"): ephys}
    return WrittenRecording(SpikeGadgetsRawIO, {"filename": str(path)}, signals, (path,))
