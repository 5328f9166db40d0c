"""catalog.html in headless Chromium: served over loopback HTTP as a user would serve the
destination folder, every row shown, sorted by a column, one asset's group tree read through
the JS store equal to what h5py sees in the file; from file:// the table alone works. The
screenshot goes to docs/screenshots/catalog.png. The same served folder's reference sets read
over HTTP by the Python store equal the native readers."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import h5py
import pandas as pd
import pytest
import tifffile
from catalog_archive import make_archive
from PIL import Image
from shadowzarr_catalog import generate_catalog
from shadowzarr_store import open_rfs
from shadowzarr_testing import assert_array_equal_exact

ROOT = Path(__file__).resolve().parents[1]
JS_DIR = ROOT / "js"
DRIVER = Path(__file__).with_name("catalog_page.mjs")
SCREENSHOT = ROOT / "docs" / "screenshots" / "catalog.png"
ASSET = "sub-1/ses-1.nwb"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def served_catalog(tmp_path: Path) -> Iterator[tuple[Path, Path, str]]:
    root = tmp_path / "archive"
    make_archive(root, count=4)
    destination = tmp_path / "catalog"
    generate_catalog(root, destination, workers=2)
    handler = functools.partial(_QuietHandler, directory=str(destination))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, destination, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _h5py_tree(path: Path) -> dict[str, tuple[int, ...] | None]:
    found: dict[str, tuple[int, ...] | None] = {}
    with h5py.File(path, "r") as f:
        f.visititems(
            lambda name, node: found.__setitem__(
                name, tuple(node.shape) if isinstance(node, h5py.Dataset) else None
            )
        )
    return found


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(300)
def test_the_catalog_page_in_chromium(
    served_catalog: tuple[Path, Path, str], tmp_path: Path
) -> None:
    root, destination, url = served_catalog
    node = shutil.which("node")
    assert node is not None, "node is not installed (the JS store's tests need Node 20+)"
    assert (JS_DIR / "node_modules/playwright-core").is_dir(), "run `npm ci` in js/ first"
    shot = tmp_path / "catalog.png"
    result = subprocess.run(
        [
            node,
            str(DRIVER),
            str(JS_DIR),
            f"{url}/catalog.html",
            (destination / "catalog.html").as_uri(),
            ASSET,
            "size",
            str(shot),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert not [line for line in seen["console"] if "error" in line.lower()], seen["console"]

    table = pd.read_parquet(destination / "catalog.parquet")
    assert sorted(seen["rows"]) == sorted(table.asset_id)
    assert seen["rows"] == sorted(table.path)  # by path at first
    by_size = table.sort_values(["size", "path"])
    assert seen["sortedAscending"] == list(by_size.asset_id)
    assert seen["sortedDescending"][0] == by_size.asset_id.iloc[-1]
    assert seen["sortState"] == "descending"
    statuses = {row[0]: row[1] for row in seen["cells"]}
    assert statuses == dict(zip(table.path, table.status, strict=True))
    errors = {row[0]: row[-1] for row in seen["cells"]}
    broken = table.set_index("path").loc["broken.h5"]
    assert broken.error_class == "SourceFormatError"
    shown = errors["broken.h5"].removesuffix("…")  # a long message is cut, whole in its title
    assert f"{broken.error_class}: {broken.error_message}".startswith(shown)
    assert len(shown) >= 200

    # each published asset's row links to its reference set, which the server hands out
    index = json.loads((destination / "index.json").read_text())
    links = {asset: link for asset, link in seen["links"] if link is not None}
    assert links == {asset: f"{url}/{location}" for asset, location in index.items()}
    for link in links.values():
        with urllib.request.urlopen(f"{link}/refs.json", timeout=30) as answer:
            assert json.loads(answer.read())["refs"], link

    assert seen["treeState"] == "shown", seen["treeText"]
    tree = {item["path"]: item for item in seen["tree"]}
    expected = _h5py_tree(root / ASSET)
    assert sorted(tree) == sorted(expected)
    for name, shape in expected.items():
        if shape is None:
            assert tree[name]["kind"] == "group", name
        else:
            assert tree[name]["kind"] == "array", name
            assert tree[name]["shape"] == ",".join(map(str, shape)), name
    assert f"refs/{ASSET}.shadowzarr" in seen["treeText"]
    # Everything the page loaded came from the destination folder: no CDN.
    assert all(r.startswith(url) for r in seen["requests"]), seen["requests"]
    assert any("/catalog-viewer/shadowzarr/" in r for r in seen["requests"])

    assert seen["fileRows"] == len(table)  # the table works from file:// as well
    assert "python -m http.server" in seen["fileTreeText"]

    with Image.open(shot) as image:
        rgb = image.convert("RGB")
        assert rgb.size == (1400, 900)
        assert len(rgb.resize((350, 225)).getcolors(maxcolors=350 * 225) or []) > 20
    SCREENSHOT.parent.mkdir(exist_ok=True)
    shutil.copyfile(shot, SCREENSHOT)


def test_the_page_embeds_rows_as_text(tmp_path: Path) -> None:
    """An asset path or error that looks like markup or ends the script stays a string."""
    root = tmp_path / "archive"
    (root / "<").mkdir(parents=True)  # the asset path is "</script><img …>.txt"
    (root / "<" / "script><img src=x onerror=alert(1)>.txt").write_text("x")
    generate_catalog(root, tmp_path / "catalog")
    page = (tmp_path / "catalog" / "catalog.html").read_text()
    assert "<img src=x" not in page
    assert page.count("</script>") == 3  # the import map, the data, the page's script
    assert (tmp_path / "catalog" / "catalog-viewer/shadowzarr/index.js").is_file()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_shipped_viewer_modules_are_the_built_js_store() -> None:
    """The modules the package ships for the page are js/'s current build (and zarrita's)."""
    npx = shutil.which("npx")
    assert npx is not None, "npx is not installed (the JS store's tests need Node 20+)"
    built = subprocess.run(
        [npx, "tsc", "-p", "tsconfig.json"],
        cwd=JS_DIR,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    check = subprocess.run(
        [sys.executable, str(ROOT / "tools/catalog_viewer_modules.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert check.returncode == 0, check.stderr


@pytest.mark.network
def test_published_references_read_over_http_by_the_python_store(
    served_catalog: tuple[Path, Path, str],
) -> None:
    """Every reference set of the destination, served as plain files over HTTP and opened by
    its URL, reads what h5py and tifffile read from the asset (the assets are local files
    here: references from a URL read them only when allowed to)."""
    root, destination, url = served_catalog
    index = json.loads((destination / "index.json").read_text())
    assert len(index) >= 5
    for asset, location in index.items():
        group = open_rfs(f"{url}/{location}", allow_local_files=True)
        if asset.endswith(".tif"):
            assert_array_equal_exact(group["0"][...], tifffile.imread(root / asset), asset)
            continue
        with h5py.File(root / asset, "r") as f:
            datasets = _h5py_tree(root / asset)
            assert any(shape is not None for shape in datasets.values()), asset
            for name, shape in datasets.items():
                if shape is not None:
                    assert_array_equal_exact(group[name][...], f[name][()], f"{asset}:{name}")
