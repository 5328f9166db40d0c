"""A selection written as text (``"0:30000, 17"``, ``"::2, ..."``), parsed without ``eval``:
the command line's and ``shadowzarr.plot.layout(select="…")``'s."""

from __future__ import annotations

import re

__all__ = ["parse_selection"]

_INT = re.compile(r"-?\d+")


def parse_selection(text: str | None) -> tuple[int | slice | type(Ellipsis), ...]:  # type: ignore[valid-type]
    if text is None or not text.strip():
        return (Ellipsis,)
    parts: list[int | slice | type(Ellipsis)] = []  # type: ignore[valid-type]
    for raw in text.strip().strip("[]()").split(","):
        item = raw.strip()
        if item in ("...", "…"):
            parts.append(Ellipsis)
        elif ":" in item:
            pieces = item.split(":")
            if len(pieces) > 3 or not all(
                p.strip() == "" or _INT.fullmatch(p.strip()) for p in pieces
            ):
                raise ValueError(
                    f"cannot read {item!r} as a slice (use start:stop:step with integers)"
                )
            numbers = [int(p) if p.strip() else None for p in pieces]
            parts.append(slice(*numbers))
        elif _INT.fullmatch(item):
            parts.append(int(item))
        else:
            raise ValueError(f"cannot read {item!r} in the selection {text!r}")
    return tuple(parts)
