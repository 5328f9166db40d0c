"""Byte counts as people read them, one convention everywhere (the command's summaries and
progress, the layout plots, ``RemoteArray.info``): binary units, labelled as such (a chunk of
1 MiB is 1,048,576 bytes; "MB" is never printed for 2**20 bytes)."""

from __future__ import annotations

__all__ = ["BINARY_UNITS", "format_bytes", "format_rate"]

BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def format_bytes(count: float, digits: int = 1) -> str:
    """``1536`` → ``"1.5 KiB"``, ``2**20`` → ``"1 MiB"``; whole bytes below 1 KiB."""
    value = float(count)
    for unit in BINARY_UNITS:
        # Rounded first: 1023.97 KiB is shown as 1 MiB, not as "1024 KiB".
        if abs(round(value, digits)) < 1024 or unit == BINARY_UNITS[-1]:
            if unit == "B":
                return f"{int(value)} B"
            text = f"{value:.{digits}f}"
            return f"{text.rstrip('0').rstrip('.') if '.' in text else text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_rate(count: float, seconds: float) -> str:
    """Bytes moved in ``seconds`` as a rate (``"12.5 MiB/s"``); ``"?"`` before any time passed."""
    if seconds <= 0:
        return "? B/s"
    return f"{format_bytes(count / seconds)}/s"
