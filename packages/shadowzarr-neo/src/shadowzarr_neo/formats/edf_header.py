"""The layout of an EDF file, from its own fixed-width header.

NEO reads EDF through pyedflib, which keeps no memory map, so the data records are located
here: after ``header_bytes`` come ``n_records`` records, each holding every signal's samples
per record as little-endian int16, signal after signal.
"""

from __future__ import annotations

from dataclasses import dataclass

from shadowzarr_spec.errors import NotVirtualizable

__all__ = ["EdfLayout", "read_edf_layout"]

_SIGNAL_FIELDS = (16, 80, 8, 8, 8, 8, 8, 80, 8, 32)
"""Widths of label, transducer, dimension, physical min/max, digital min/max, prefiltering,
samples per record and reserved; each field holds one value per signal."""


@dataclass(frozen=True, slots=True)
class EdfLayout:
    header_bytes: int
    n_records: int
    labels: tuple[str, ...]
    samples_per_record: tuple[int, ...]

    @property
    def record_size(self) -> int:
        return 2 * sum(self.samples_per_record)

    def signal_offset(self, signal: int) -> int:
        """Byte offset of a signal's samples within each record."""
        return 2 * sum(self.samples_per_record[:signal])

    @property
    def data_signals(self) -> list[int]:
        """File signal numbers of the signals that are not EDF+ annotations, in order (the
        numbering pyedflib, and so NEO, uses)."""
        return [i for i, label in enumerate(self.labels) if label != "EDF Annotations"]


def read_edf_layout(path: str) -> EdfLayout:
    """Parse the header of the EDF file at ``path``; BDF and discontinuous EDF+ are refused."""
    with open(path, "rb") as f:
        fixed = f.read(256)
        if fixed[:1] == b"\xff":
            raise NotVirtualizable(f"{path} is a BDF file: its 24-bit samples have no Zarr type")
        reserved = fixed[192:236].decode("ascii", "replace")
        if reserved.startswith("EDF+D"):
            raise NotVirtualizable(f"{path} is a discontinuous EDF+ file")
        header_bytes = int(fixed[184:192])
        n_records = int(fixed[236:244])
        ns = int(fixed[252:256])
        signal_header = f.read(256 * ns)
    fields: list[list[str]] = []
    position = 0
    for width in _SIGNAL_FIELDS:
        values = [
            signal_header[position + i * width : position + (i + 1) * width].decode("ascii").strip()
            for i in range(ns)
        ]
        fields.append(values)
        position += width * ns
    return EdfLayout(
        header_bytes=header_bytes,
        n_records=n_records,
        labels=tuple(fields[0]),
        samples_per_record=tuple(int(v) for v in fields[8]),
    )
