"""A store's tree and traffic as notebook HTML, in the style of the remote array's summary
(`remote.summary_html`): plain HTML with its own class names, no JavaScript, every string
escaped (group and array names come from files)."""

from __future__ import annotations

import html
from typing import Any

from shadowzarr_spec.units import format_bytes

from shadowzarr_store.summary_style import STYLE
from shadowzarr_store.tree_cells import referenced_text, shape_text, short_source

__all__ = ["traffic_html", "tree_html"]

_COLUMNS = ("name", "shape", "dtype", "chunks", "shown as", "codecs", "referenced", "in")


def tree_html(tree: Any) -> str:
    """A `StoreTree` as a table: one row per group or array, indented by depth."""
    rows = ["<tr>" + "".join(f"<th>{name}</th>" for name in _COLUMNS) + "</tr>"]
    for node in tree.nodes:
        pad = f"padding-left:{12 * node.depth}px"
        name = html.escape(node.name.rstrip("/") + "/" if node.kind == "group" else node.name)
        if node.kind == "group":
            rows.append(f"<tr><td class=p style='{pad}'>{name}</td></tr>")
            continue
        cells = [
            shape_text(node.shape),
            node.dtype,
            shape_text(node.chunks),
            "" if node.shown_chunks == node.chunks else shape_text(node.shown_chunks),
            " + ".join(node.codecs),
            referenced_text(node),
            ", ".join(short_source(s) for s in node.sources),
        ]
        rows.append(
            f"<tr><td class=p style='{pad}'>{name}</td>"
            + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells)
            + "</tr>"
        )
    more = f"<div class=more>… and {tree.more:,} more</div>" if tree.more else ""
    sources = "".join(f"<div>{html.escape(url)}</div>" for url in tree.sources[:20])
    if len(tree.sources) > 20:
        sources += f"<div class=more>… and {len(tree.sources) - 20:,} more</div>"
    summary = (
        f"{tree.groups:,} groups, {tree.arrays:,} arrays, "
        f"{format_bytes(tree.referenced_bytes)} referenced"
    )
    return (
        STYLE
        + "<div class=szr>"
        + f"<h4>RfsStore {html.escape(tree.where)}</h4>"
        + f"<div class=sub>{html.escape(summary)}</div>"
        + f"<table class=t>{''.join(rows)}</table>{more}"
        + f"<table><tr><th>sources</th></tr></table><div class=sub>{sources}</div>"
        + "</div>"
    )


def traffic_html(traffic: Any) -> str:
    """A `Traffic`: the store's counters as a two-column table."""
    s = traffic.stats
    items = (
        ("requests", f"{s.requests:,}"),
        ("bytes received", format_bytes(s.bytes)),
        ("rounds of batched reads", f"{s.rounds:,}"),
        ("merged requests", f"{s.merged_requests:,} (serving {s.merged_chunks:,} chunks)"),
        ("cache hits", f"{s.cache_hits:,}"),
        ("index chunk reads", f"{s.index_chunk_reads:,}"),
        ("retries", f"{s.retries:,}"),
    )
    rows = "".join(
        f"<tr><td class=k>{html.escape(name)}</td><td>{html.escape(value)}</td></tr>"
        for name, value in items
    )
    title = html.escape(traffic.title)
    return STYLE + f"<div class=szr><h4>{title}</h4><table>{rows}</table></div>"
