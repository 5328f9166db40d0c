"""zarr groups and arrays read through an `RfsStore` shown as the store's tree in IPython (HTML
in a notebook, text in a terminal).

Why a display formatter and not a subclass of zarr's `Group`: `open_rfs` returns zarr's own
`Group`, unchanged, so isinstance checks, pickling, xarray and every zarr API see exactly what
they expect; a subclass would be lost at the first child (``group["a"]`` is built by zarr and is
a plain `zarr.Array`), and would have to follow zarr's internals from release to release. IPython
formatters dispatch on the type of each displayed object, children included, and one that returns
None leaves zarr's own display in place, so groups and arrays of other stores are unaffected.
The formatter is registered by `open_rfs` and `open_rfs_array` when they run under IPython.
"""

from __future__ import annotations

import html
import sys
from typing import Any

import zarr

__all__ = ["node_html", "node_text", "register_notebook_display"]


def register_notebook_display() -> None:
    """Show `zarr.Group` and `zarr.Array` over an `RfsStore` as its tree in this IPython
    session (nothing outside IPython)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return
    formatter = shell.display_formatter.formatters["text/html"]
    formatter.for_type(zarr.Group, node_html)
    formatter.for_type(zarr.Array, node_html)
    plain = shell.display_formatter.formatters["text/plain"]
    plain.for_type(zarr.Group, _pretty)
    plain.for_type(zarr.Array, _pretty)


def node_text(node: Any) -> str | None:
    """The text of a group or array over an `RfsStore`: zarr's one-line repr, then the store's
    tree below it; None for other stores."""
    from shadowzarr_store.rfs_store import RfsStore

    store = getattr(node, "store", None)
    if not isinstance(store, RfsStore):
        return None
    return f"{node!r}\n{store.tree(prefix=node.path).text()}"


def _pretty(node: Any, printer: Any, cycle: bool) -> None:
    """IPython's text display (a terminal, or a notebook's text/plain): `node_text`, or zarr's
    own repr for other stores."""
    text = None if cycle else node_text(node)
    printer.text(repr(node) if text is None else text)


def node_html(node: Any) -> str | None:
    """The HTML of a group or array over an `RfsStore` (its subtree, and for an array the call
    that draws where its chunks lie); None for other stores (zarr's display then)."""
    from shadowzarr_store.rfs_store import RfsStore

    store = getattr(node, "store", None)
    if not isinstance(store, RfsStore):
        return None
    tree = store.tree(prefix=node.path)
    shown = tree._repr_html_()
    if isinstance(node, zarr.Array):
        hint = f"shadowzarr.plot.layout(array): where the chunks of {node.path!r} lie"
        shown += f"<div class=szr><div class=sub>{html.escape(hint)}</div></div>"
    return shown
