"""Byte counts as people read them (binary units: a chunk of 1 MiB is 1,048,576 bytes)."""

from __future__ import annotations

__all__ = ["format_bytes"]

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def format_bytes(count: float, digits: int = 1) -> str:
    """``1536`` → ``"1.5 KiB"``; whole bytes below 1 KiB."""
    value = float(count)
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            if unit == "B":
                return f"{int(value)} B"
            text = f"{value:.{digits}f}"
            return f"{text.rstrip('0').rstrip('.') if '.' in text else text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
