"""The files the repository's tests write: every writer of the HDF5 corpus (both library
versions, and the files whose datasets are refused), of the writers' corpus (netCDF4,
h5netcdf, xarray, pandas, PyTables, anndata, h5py, hdf5plugin, SNIRF) and of the HDF5-based
NEO recordings (BioCam, Maxwell, MEArec), written into one folder."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import h5py

from .signature import is_hdf5

REPO = Path(__file__).resolve().parents[2]
HDF5_CORPUS = REPO / "packages" / "shadowzarr-hdf5" / "tests" / "corpus.py"
WRITERS_CORPUS = REPO / "tests-integration" / "test_writers_corpus.py"
NEO_RECORDINGS = REPO / "packages" / "shadowzarr-neo" / "tests" / "neo_recordings"
NEO_HDF5 = {"biocam": "write_biocam", "maxwell": "write_maxwell", "mearec": "write_mearec"}


def _load(name: str, path: Path, package: bool = False) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    location = path / "__init__.py" if package else path
    search = [str(path)] if package else None
    spec = importlib.util.spec_from_file_location(name, location, submodule_search_locations=search)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def write_all(folder: Path) -> list[Path]:
    """Write every file into ``folder`` (one subfolder per file: some writers leave side files
    such as external storage or virtual sources next to theirs); return the HDF5 files."""
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, write in _writers():
            place = folder / name
            marker = place / ".main"  # the file's name, written once the writer finished
            if not marker.exists():
                place.mkdir(exist_ok=True)
                path = write(place)
                marker.write_text(str(path.relative_to(place)))
            written.append(place / marker.read_text())
    return written


def _writers() -> Iterator[tuple[str, Callable[[Path], Path]]]:
    corpus = _load("_compare_hdf5_corpus", HDF5_CORPUS)
    for name, writer in corpus.WRITERS.items():
        options = corpus.FILE_OPTIONS.get(name, {})
        for libver in ["earliest", "latest"] if "libver" not in options else [None]:
            label = f"hdf5-corpus/{name}" + (f"-{libver}" if libver else "")
            yield label.replace("/", "__"), _h5py_writer(name, writer, options, libver)
    for name, (writer, _message) in corpus.REFUSALS.items():
        yield f"hdf5-corpus__refused-{name}", _h5py_writer(name, writer, {}, None)
    writers = _load("_compare_writers_corpus", WRITERS_CORPUS)
    for name, write in writers.WRITERS.items():
        yield f"writers__{name}", write
    neo = _load("_compare_neo_recordings", NEO_RECORDINGS, package=True)
    for module, function in NEO_HDF5.items():
        loaded = importlib.import_module(f"{neo.__name__}.{module}")
        yield f"neo__{module}", _neo_writer(getattr(loaded, function))


def _h5py_writer(
    name: str, writer: Any, options: dict[str, Any], libver: str | None
) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        path = folder / f"{name}.h5"
        extra = dict(options)
        if libver is not None:
            extra["libver"] = libver
        with h5py.File(path, "w", **extra) as f:
            writer(f, folder)
        return path

    return write


def _neo_writer(write: Callable[..., Any]) -> Callable[[Path], Path]:
    def run(folder: Path) -> Path:
        write(folder)
        files = [p for p in sorted(folder.rglob("*")) if p.is_file() and is_hdf5(p)]
        assert len(files) == 1, files
        return files[0]

    return run
