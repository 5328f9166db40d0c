"""Which files to generate references for, and what format each one is in."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

__all__ = ["HDF5_SIGNATURE", "detect_format", "expand_sources", "read_head"]

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
TIFF_SIGNATURES = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")
HDF5_SUFFIXES = frozenset({".h5", ".hdf5", ".nwb", ".mat", ".he5", ".nc", ".hdf"})
TIFF_SUFFIXES = frozenset({".tif", ".tiff", ".btf"})
SOURCE_SUFFIXES = HDF5_SUFFIXES | TIFF_SUFFIXES
DANDISET_MARKER = "/api/dandisets/"


def read_head(source: str, size: int = 4096) -> bytes:
    """The first ``size`` bytes of a local file or URL (one range request)."""
    if source.startswith(("http://", "https://")):
        request = urllib.request.Request(source, headers={"Range": f"bytes=0-{size - 1}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return bytes(response.read(size))
    with open(source, "rb") as stream:
        return stream.read(size)


def detect_format(source: str) -> str:
    """``hdf5``, ``tiff`` or ``neo`` (a directory, or a file no other generator reads), from the
    first bytes; a file whose name says HDF5 or TIFF but whose bytes do not is refused."""
    from shadowzarr_store.remote.errors import SourceFormatError
    from shadowzarr_store.remote.sniff import read_head, sniff_format

    if not source.startswith(("http://", "https://")) and Path(source).is_dir():
        return "neo"
    kind = sniff_format(read_head(source))
    if kind in ("hdf5", "tiff"):
        return kind
    named = _named_format(source)
    if named is not None:
        raise SourceFormatError(
            f"{source} is not an {named.upper()} file: its first bytes are not the {named.upper()} "
            "signature (a text or HTML page, or a partial download?)"
        )
    return "neo"


def _named_format(source: str) -> str | None:
    suffix = Path(source.split("?", 1)[0].rstrip("/")).suffix.lower()
    if suffix in HDF5_SUFFIXES:
        return "hdf5"
    if suffix in TIFF_SUFFIXES:
        return "tiff"
    return None


def expand_sources(source: str) -> list[str]:
    """One source, the files of a folder, the lines of an ``@list`` file, or a dandiset's assets."""
    if source.startswith("@"):
        lines = Path(source[1:]).read_text(encoding="utf-8").splitlines()
        return [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    if DANDISET_MARKER in source and "/assets/" not in source.split(DANDISET_MARKER, 1)[1]:
        return _dandiset_assets(source)
    path = Path(source)
    if not source.startswith(("http://", "https://")) and path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in SOURCE_SUFFIXES)
        return [str(p) for p in files] or [source]
    return [source]


def _dandiset_assets(url: str) -> list[str]:
    """Download URLs of every asset of a dandiset version (follows the API's pagination)."""
    api = url.split(DANDISET_MARKER, 1)[0]
    listing = url.rstrip("/") + "/assets/?page_size=1000"
    headers = {}
    token = os.environ.get("DANDI_API_KEY")
    if token and "api.dandiarchive.org" in api:
        headers["Authorization"] = f"token {token}"
    urls: list[str] = []
    while listing:
        request = urllib.request.Request(listing, headers=headers)
        with urllib.request.urlopen(request, timeout=60) as response:
            page = json.loads(response.read())
        for asset in page.get("results", []):
            urls.append(f"{api}/api/assets/{asset['asset_id']}/download/")
        listing = page.get("next")
    return urls
