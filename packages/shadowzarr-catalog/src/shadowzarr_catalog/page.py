"""``catalog.html``: the catalog as a page that opens in a browser from the destination.

The rows are embedded in the page (so its table works from ``file://``) and the CSS and script
are inline (no CDN). An asset's group tree is read through the JS store, whose ES modules (and
zarrita's) are written next to the page under ``catalog-viewer/`` and found through the page's
import map; browsers load modules over HTTP only, so trees need the folder served
(``python -m http.server`` in it, or any web server or bucket website).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from importlib import resources
from typing import Any

__all__ = ["PAGE_FILE", "VIEWER_FOLDER", "catalog_page", "viewer_files"]

PAGE_FILE = "catalog.html"
VIEWER_FOLDER = "catalog-viewer"
SHOWN = (
    "asset_id",
    "path",
    "status",
    "format",
    "size",
    "datasets",
    "chunks",
    "unsupported",
    "reference",
    "reference_bytes",
    "requests",
    "bytes_read",
    "error_class",
    "error_message",
    "generated_at",
)


def _viewer() -> Any:
    return resources.files("shadowzarr_catalog") / "viewer"


def viewer_files() -> dict[str, bytes]:
    """The JS store's modules, as ``catalog-viewer/…`` → bytes (the page's import map
    resolves ``shadowzarr`` and ``zarrita`` to them)."""
    found: dict[str, bytes] = {}
    pending = [(_viewer() / "modules", VIEWER_FOLDER)]
    while pending:
        folder, prefix = pending.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                pending.append((entry, f"{prefix}/{entry.name}"))
            elif entry.name != "importmap.json":
                found[f"{prefix}/{entry.name}"] = entry.read_bytes()
    return dict(sorted(found.items()))


def _import_map() -> str:
    mapping = json.loads((_viewer() / "modules" / "importmap.json").read_text())
    imports = {spec: f"./{VIEWER_FOLDER}/{path}" for spec, path in mapping["imports"].items()}
    return json.dumps({"imports": imports}, indent=1)


def _script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element: no ``</script>``, ``<!--`` or line separators
    can end or change it, whatever an asset path or error message holds."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def catalog_page(rows: Iterable[dict[str, Any]], title: str) -> bytes:
    """The page for ``rows`` (the catalog's rows, any order), titled ``title``."""
    shown = [
        {key: row.get(key) for key in SHOWN} for row in sorted(rows, key=lambda r: r["asset_id"])
    ]
    data = _script_json({"title": title, "rows": shown})
    style = (_viewer() / "catalog.css").read_text()
    script = (_viewer() / "catalog.js").read_text()
    heading = html.escape(title)
    page = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{heading}</title>
<link rel="icon" href="data:,">
<style>
{style}</style>
<script type="importmap">
{_import_map()}
</script>
</head>
<body>
<header>
<h1>{heading}</h1>
<div id="counts" class="counts"></div>
<div class="controls">
<input id="filter" type="search" placeholder="filter by path, status or error">
<span id="shown"></span>
<span>· click an asset to see its groups and arrays · <a href="catalog.parquet">catalog.parquet</a>
· <a href="index.json">index.json</a></span></div>
</header>
<main>
<div class="table-wrap"><table id="catalog"><thead></thead><tbody></tbody></table></div>
<aside id="tree"><p class="hint">Click a published asset to read its group tree through the
JS store (the page must be served over HTTP for that: <code>python -m http.server</code> in this
folder).</p></aside>
</main>
<script type="application/json" id="catalog-data">{data}</script>
<script>
{script}</script>
</body>
</html>
"""
    return page.encode()
