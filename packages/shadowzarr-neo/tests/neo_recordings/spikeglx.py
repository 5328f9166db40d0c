"""SpikeGLX: one ``.bin`` of interleaved int16 samples and one ``.meta`` text file per stream.

The meta fields are those SpikeGLX writes (``Metadata_30.md``) and NEO's ``SpikeGLXRawIO`` reads:
``nSavedChans``, ``snsApLfSy``, ``~snsChanMap``, ``~imroTbl`` and the probe part number for a
Neuropixels 1.0 probe, ``snsMnMaXaDw`` and the NI gains for the nidq stream. Segments are
triggers ``t0``, ``t1``, … of gate ``g0``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo.rawio import SpikeGLXRawIO

from ._common import WrittenRecording, random_samples

if TYPE_CHECKING:
    from pathlib import Path

AP_RATE = 30_000.0
LF_RATE = 2_500.0
NI_RATE = 25_000.0
AP_GAIN = 500
LF_GAIN = 250


def _write_meta(path: Path, fields: dict[str, str]) -> None:
    path.write_text("".join(f"{key}={value}\n" for key, value in fields.items()))


def _chan_map(names: list[str]) -> str:
    n = len(names)
    return f"({n},{n},1)" + "".join(f"({name};{i}:{i})" for i, name in enumerate(names))


def _imec_meta(run: str, kind: str, n_channels: int, n_samples: int, first_sample: int) -> dict:
    prefix = "AP" if kind == "ap" else "LF"
    names = [f"{prefix}{i}" for i in range(n_channels)] + ["SY0"]
    imro = f"(0,{n_channels})" + "".join(
        f"({i} 0 0 {AP_GAIN} {LF_GAIN} 1)" for i in range(n_channels)
    )
    sns = f"{n_channels},0,1" if kind == "ap" else f"0,{n_channels},1"
    return {
        "acqApLfSy": f"{n_channels},{n_channels},1",
        "fileName": f"D:/data/{run}.imec0.{kind}.bin",
        "fileSizeBytes": str(n_samples * (n_channels + 1) * 2),
        "firstSample": str(first_sample),
        "imAiRangeMax": "0.6",
        "imAiRangeMin": "-0.6",
        "imDatPrb_pn": "NP1000",
        "imDatPrb_port": "1",
        "imDatPrb_slot": "2",
        "imDatPrb_type": "0",
        "imMaxInt": "512",
        "imSampRate": str(AP_RATE if kind == "ap" else LF_RATE),
        "nSavedChans": str(n_channels + 1),
        "snsApLfSy": sns,
        "snsSaveChanSubset": "all",
        "typeThis": "imec",
        "~imroTbl": imro,
        "~snsChanMap": _chan_map(names),
    }


def _nidq_meta(run: str, n_analog: int, n_samples: int, first_sample: int) -> dict:
    names = [f"XA{i}" for i in range(n_analog)] + ["XD0"]
    return {
        "fileName": f"D:/data/{run}.nidq.bin",
        "fileSizeBytes": str(n_samples * (n_analog + 1) * 2),
        "firstSample": str(first_sample),
        "niAiRangeMax": "5",
        "niAiRangeMin": "-5",
        "niMAGain": "1",
        "niMNGain": "200",
        "niSampRate": str(NI_RATE),
        "niXDChans1": "",
        "nSavedChans": str(n_analog + 1),
        "snsMnMaXaDw": f"0,0,{n_analog},1",
        "typeThis": "nidq",
        "~snsChanMap": _chan_map(names),
    }


def write_spikeglx(
    directory: Path,
    *,
    n_channels: int = 384,
    n_samples: int = 3_000,
    segments: int = 2,
    seed: int = 0,
    n_analog: int = 3,
) -> WrittenRecording:
    """An imec0 probe (ap with ``n_channels`` + sync, lf at 1/12 the rate) and a nidq card.

    Every segment has a different length, and the last one is shorter still, so no two
    buffers have the same number of samples.
    """
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    signals: dict[tuple[int, int, str], np.ndarray] = {}
    files: list[Path] = []
    first_sample = 0
    for seg in range(segments):
        run = f"rec_g0_t{seg}"
        seg_samples = n_samples + 37 * seg
        lf_samples = seg_samples // 12
        ni_samples = seg_samples * 5 // 6
        streams = {
            "imec0.ap": (seg_samples, _imec_meta(run, "ap", n_channels, seg_samples, first_sample)),
            "imec0.lf": (
                lf_samples,
                _imec_meta(run, "lf", n_channels, lf_samples, first_sample // 12),
            ),
            "nidq": (ni_samples, _nidq_meta(run, n_analog, ni_samples, first_sample * 5 // 6)),
        }
        for stream, (length, meta) in streams.items():
            n_saved = int(meta["nSavedChans"])
            data = random_samples(rng, length, n_saved, "int16")
            bin_path = directory / f"{run}.{stream}.bin"
            data.astype("<i2").tofile(bin_path)
            _write_meta(bin_path.with_suffix(".meta"), meta)
            files += [bin_path, bin_path.with_suffix(".meta")]
            if stream == "nidq":
                signals[0, seg, stream] = data
            else:
                signals[0, seg, stream] = data[:, :-1]
                signals[0, seg, f"{stream}-SYNC"] = data[:, -1:]
        first_sample += seg_samples + 1_000
    return WrittenRecording(SpikeGLXRawIO, {"dirname": str(directory)}, signals, tuple(files))
