"""The documentation site: `mkdocs build --strict` (every tutorial executed, every warning an
error), then the built home page and the NWB tutorial opened in headless Chromium over a
loopback server, their text checked and their screenshots written to `docs/screenshots/`.

Nothing here needs the internet: the theme's web fonts are off and the tutorials serve their
own files on loopback.
"""

from __future__ import annotations

import functools
import html
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "docs" / "screenshots"

# What each executed page must show: output that only running its code can print.
TUTORIAL_OUTPUT = {
    "getting-started": ["StoreStats(requests=", "(1000, 10) {'rate': 30000.0}"],
    "tutorials/nwb": ["equal to h5py: True", "ElectricalSeries: (300000, 32) int16 30000 Hz"],
    "tutorials/netcdf": ["identical to engine='netcdf4'", "dask.array<open_dataset"],
    "tutorials/tiff": ["equal to tifffile's", "(40, 512, 512) uint16"],
    "tutorials/neo": ["equal to NEO's get_analogsignal_chunk", "sharded_view='auto': 1 request"],
    "tutorials/javascript": [
        "templates:",
        "a chunk:",
        # the page, run in headless Chromium while the site is built
        "the page shows: shape 100000,6, first rows 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17",
    ],
    "tutorials/catalog": [
        "catalog now: 1 failed, 8 ok, 1 skipped",
        "equal to h5py: True",
        "one file replaced: 1 generated, 9 unchanged",
    ],
    "reference-format": ['"indexes": {', '"key": "contiguous/c/{{i}}/0"'],
    "performance": ["2026-12-02-generation.json", "2,745", "2026-12-03-reads-slab.json"],
    "api/shadowzarr": [
        "shadowzarr.generate_rfs_tiff | shadowzarr_tiff | shadowzarr[tiff]",
        "usage: shadowzarr",
    ],
}


@dataclass(frozen=True, slots=True)
class Build:
    site: Path
    output: str


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    site = tmp_path_factory.mktemp("docs") / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{output[-20000:]}"
    return Build(site, output)


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(1000)
def test_site_builds_strict_with_every_tutorial_executed(build: Build) -> None:
    assert "WARNING" not in build.output, build.output[-20000:]
    for page, expected in TUTORIAL_OUTPUT.items():
        text = _text(build.site / page / "index.html")
        for snippet in expected:
            assert snippet in text, f"{page}: {snippet!r} not in the built page"
    api = (build.site / "api" / "store" / "index.html").read_text(encoding="utf-8")
    assert 'id="shadowzarr_store.RfsStore"' in api
    assert 'id="shadowzarr_store.open_rfs.open_rfs"' in api
    assert 'id="shadowzarr_store.materialize.materialize"' in api


def _text(page: Path) -> str:
    """A built page's text: tags dropped (code highlighting splits tokens), entities decoded,
    table cells joined by " | "."""
    markup = page.read_text(encoding="utf-8")
    markup = re.sub(r"</t[dh]>\s*<t[dh][^>]*>", " | ", markup)
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


@pytest.fixture
def served(build: Build) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(build.site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(1000)
@pytest.mark.parametrize(
    ("page", "screenshot", "expected"),
    [
        ("", "index.png", ["Read huge remote HDF5/NWB files", "Where to start", "shadowzarr-spec"]),
        (
            "tutorials/nwb/",
            "tutorial-nwb.png",
            ["An NWB file over HTTP", "Generate references over HTTP", "equal to h5py: True"],
        ),
    ],
)
def test_page_renders_in_chromium(
    served: str, tmp_path: Path, page: str, screenshot: str, expected: list[str]
) -> None:
    url = f"{served}/{page}"
    dom = _chromium(tmp_path, "--dump-dom", url).stdout
    for snippet in expected:
        assert snippet in dom, f"{url}: {snippet!r} not in the rendered page"
    # The theme's stylesheet and script loaded from the site itself (no CDN).
    assert "assets/stylesheets/main." in dom
    assert "fonts.googleapis" not in dom

    target = tmp_path / screenshot
    _chromium(tmp_path, f"--screenshot={target}", "--window-size=1280,900", url)
    with Image.open(target) as image:
        rgb = image.convert("RGB")
        assert rgb.size == (1280, 900)
        header = rgb.getpixel((640, 10))
        colours = len(rgb.resize((320, 225)).getcolors(maxcolors=320 * 225) or [])
    # Material's indigo header bar is drawn only when the stylesheet applied.
    assert header[2] > 150, f"header pixel {header}: no theme styles"
    assert header[0] < 120, f"header pixel {header}: no theme styles"
    assert colours > 50, "the screenshot is nearly blank"
    SCREENSHOTS.mkdir(exist_ok=True)
    shutil.copyfile(target, SCREENSHOTS / screenshot)


def _chromium(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    result = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--virtual-time-budget=5000",
            *arguments,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    return result
