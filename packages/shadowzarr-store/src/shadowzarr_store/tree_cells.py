"""The text of the tree's cells, shared by its text and its HTML (`store_tree`,
`store_tree_html`): shapes with thousands separators, referenced bytes, a source's file name."""

from __future__ import annotations

from typing import Any

from shadowzarr_spec.units import format_bytes

__all__ = ["referenced_text", "shape_text", "short_source"]


def shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(f"{n:,}" for n in shape) + ("," if len(shape) == 1 else "") + ")"


def referenced_text(node: Any) -> str:
    """``1.7 KiB``, ``in a chunk manifest`` (read on demand), ``8 B inline``."""
    parts = []
    if node.referenced_bytes or not (node.indexed or node.inline_bytes):
        parts.append(format_bytes(node.referenced_bytes))
    if node.indexed:
        parts.append("in a chunk manifest")
    if node.inline_bytes:
        parts.append(f"{format_bytes(node.inline_bytes)} inline")
    return " + ".join(parts)


def short_source(url: str) -> str:
    """The file name of a source URL (the whole redacted URL is in the header's list)."""
    return url.rstrip("/").rsplit("/", 1)[-1] or url
