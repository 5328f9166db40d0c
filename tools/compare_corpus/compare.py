"""One file compared: h5py's read of every dataset and attribute against zarr's read through
the references, in both forms (one JSON file with every chunk listed and nothing inlined; a
directory with chunk manifests, generated with the default options)."""

from __future__ import annotations

import shutil
import traceback
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin  # noqa: F401 - registers the filters h5py needs to read the files
import numpy as np
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_hdf5.netcdf import is_netcdf4
from shadowzarr_spec import load_rfs, write_rfs
from shadowzarr_store import open_rfs
from shadowzarr_testing.hdf5_compare import (
    compare_attributes,
    compare_values,
    is_netcdf_placeholder,
)

FORMS = {
    "json": ("refs.json", {"inline_threshold": 0}),
    "directory": ("refs.shadowzarr", {}),
}
"""Form → (where it is written, generation options)."""


@dataclass
class FileResult:
    """What one file came to; every list holds ``"form path: message"`` lines."""

    file: str
    h5py_opens: bool = True
    datasets: int = 0
    unsupported: dict[str, str] = field(default_factory=dict)
    """Path → outcome and reason recorded in the references."""
    mismatches: list[str] = field(default_factory=list)
    refused_whole: str | None = None
    """Why generation (or a form) failed for the whole file, when it did."""
    h5py_unreadable: list[str] = field(default_factory=list)
    """Datasets h5py itself cannot open or read."""
    unrecorded_unreadable: list[str] = field(default_factory=list)
    """Of those, the ones the references neither hold nor record as unsupported."""
    placeholders: int = 0
    """netCDF dimensions without a variable: datasets in HDF5, no variable in netCDF."""
    attribute_nodes: int = 0
    attribute_mismatches: list[str] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)
    """Dataset → equal, unsupported, placeholder, unreadable or mismatch (worst of the forms)."""

    @property
    def refused_against_h5py(self) -> bool:
        """Refused whole while h5py reads at least one dataset."""
        return self.refused_whole is not None and self.datasets > len(self.h5py_unreadable)

    def to_json(self) -> dict[str, Any]:
        counts = {s: list(self.statuses.values()).count(s) for s in set(self.statuses.values())}
        return asdict(self) | {"refused_against_h5py": self.refused_against_h5py, "counts": counts}


def compare_file(path: Path, work: Path) -> FileResult:
    """Compare ``path``; ``work`` is an empty folder for the references (removed after)."""
    result = FileResult(file=str(path))
    try:
        with h5py.File(path, "r") as f:
            names, readable = _inventory(f)
    except OSError:
        result.h5py_opens = False
        return result
    datasets = [name for name, kind in names.items() if kind == "dataset"]
    result.datasets = len(datasets)
    result.h5py_unreadable = [name for name in datasets if name not in readable]
    work.mkdir(parents=True, exist_ok=True)
    statuses = result.statuses
    try:
        for form, (target, options) in FORMS.items():
            try:
                root, rfs = _references(path, work / target, options)
            except Exception as exc:  # anything: the whole file is lost, and that is the finding
                result.refused_whole = f"{form}: {type(exc).__name__}: {exc}"[:600]
                return result
            with h5py.File(path, "r") as f:
                _compare_form(f, form, names, readable, root, rfs, result, statuses)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result


def _inventory(f: h5py.File) -> tuple[dict[str, str], set[str]]:
    """Every object's path and kind (``"group"``, ``"dataset"`` or ``"unopened"``) and the
    datasets h5py reads whole."""
    paths: list[str] = []
    f.visit(paths.append)  # names only: HDF5 may fail to open some objects
    names: dict[str, str] = {}
    readable: set[str] = set()
    for name in paths:
        try:
            obj = f[name]
        except Exception:
            names[name] = "dataset"  # counted with the datasets h5py cannot read
            continue
        if isinstance(obj, h5py.Group):
            names[name] = "group"
        elif isinstance(obj, h5py.Dataset):
            names[name] = "dataset"
            try:
                if obj.shape is not None:
                    obj[()]
                readable.add(name)
            except Exception:
                pass
    return names, readable


def _references(path: Path, target: Path, options: dict[str, Any]) -> tuple[Any, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rfs = generate_rfs(path, progress=False, **options)
        write_rfs(rfs, target)
        loaded = load_rfs(target)
        return open_rfs(loaded), loaded


def _compare_form(
    f: h5py.File,
    form: str,
    names: dict[str, str],
    readable: set[str],
    root: Any,
    rfs: Any,
    result: FileResult,
    statuses: dict[str, str],
) -> None:
    netcdf = is_netcdf4(f)  # the generator's rule (old netCDF-C wrote no _NCProperties)
    _attributes(f, root, netcdf, f"{form} /", result)
    root = _Tree(root)
    for name, kind in names.items():
        if kind == "group":
            if name not in root:
                result.mismatches.append(f"{form} {name}: group absent")
                continue
            _attributes(f[name], root[name], netcdf, f"{form} {name}", result)
            continue
        status = _dataset(f, name, name in readable, root, rfs, netcdf, form, result)
        if statuses.get(name) in (None, "equal"):
            statuses[name] = status


def _dataset(
    f: h5py.File,
    name: str,
    readable: bool,
    root: Any,
    rfs: Any,
    netcdf: bool,
    form: str,
    result: FileResult,
) -> str:
    """Compare one dataset; its status: equal, unsupported, placeholder, unreadable, mismatch."""
    unsupported = rfs.unsupported.get(name)
    if unsupported is not None:
        result.unsupported[name] = f"{unsupported.outcome}: {unsupported.reason}"
        if not unsupported.reason:
            result.mismatches.append(f"{form} {name}: recorded unsupported without a reason")
            return "mismatch"
        if unsupported.outcome == "omitted":
            if name in root:
                result.mismatches.append(f"{form} {name}: recorded omitted, yet present")
                return "mismatch"
            return "unsupported"
        if not readable:
            return "unsupported"
        return _values(f, name, root, netcdf, form, result, equal="unsupported")
    if not readable:
        if name not in root and name not in result.unrecorded_unreadable:
            result.unrecorded_unreadable.append(name)
        return "unreadable"
    if netcdf and is_netcdf_placeholder(f[name]):
        if form == "json":
            result.placeholders += 1
        return "placeholder"
    if name not in root:
        result.mismatches.append(f"{form} {name}: absent, and not recorded as unsupported")
        return "mismatch"
    return _values(f, name, root, netcdf, form, result, equal="equal")


def _values(
    f: h5py.File, name: str, root: Any, netcdf: bool, form: str, result: FileResult, equal: str
) -> str:
    dataset, array = f[name], root[name]
    try:
        _check_shape(dataset, array, netcdf)
        compare_values(f, dataset, array, root.group, name, netcdf=netcdf)
        _check_fill(dataset, array, netcdf)
    except Exception as exc:
        result.mismatches.append(f"{form} {name}: {_message(exc)}")
        return "mismatch"
    _attributes(dataset, array, netcdf, f"{form} {name}", result)
    return equal


class _Tree:
    """Every node of a zarr group, opened once (a file of MATLAB cells holds 15,000): a lookup
    by path each time parsed each array's metadata again."""

    def __init__(self, group: Any) -> None:
        self.group = group
        try:
            self.nodes: dict[str, Any] | None = dict(group.members(max_depth=None))
        except Exception:  # the listing failed: each path is looked up instead
            self.nodes = None

    def __contains__(self, name: str) -> bool:
        return name in self.nodes if self.nodes is not None else name in self.group

    def __getitem__(self, name: str) -> Any:
        return self.nodes[name] if self.nodes is not None else self.group[name]


def _check_shape(dataset: h5py.Dataset, array: Any, netcdf: bool) -> None:
    if dataset.shape is None:
        return
    extra = dataset.dtype.subdtype[1] if dataset.dtype.subdtype is not None else ()
    expected = tuple(dataset.shape) + tuple(extra)
    grown = netcdf and len(array.shape) == len(expected)  # a longer unlimited dimension
    if tuple(array.shape) != expected and not grown:
        raise AssertionError(f"shape {tuple(array.shape)} != h5py's {expected}")


def _check_fill(dataset: h5py.Dataset, array: Any, netcdf: bool) -> None:
    """Where HDF5 has no chunk, h5py gives the fill value: zarr must give the same bits."""
    dtype = dataset.dtype
    if dataset.shape is None or dtype.kind not in "iufb" or dtype.subdtype is not None:
        return
    if netcdf:
        return  # netCDF's fill is the _FillValue attribute's, checked with the attributes
    try:
        fillvalue = dataset.fillvalue
    except RuntimeError:  # "fill value is undefined" (HDF5 1.6 era): h5py gives zeros
        fillvalue = np.zeros((), dtype)
    if fillvalue is None:
        return
    native = dtype.newbyteorder("=")
    ours = np.asarray(array.fill_value).astype(native)
    theirs = np.asarray(fillvalue).astype(native)
    if ours.tobytes() != theirs.tobytes():
        raise AssertionError(f"fill value {ours!r} != h5py's {theirs!r}")


def _attributes(obj: Any, node: Any, netcdf: bool, what: str, result: FileResult) -> None:
    result.attribute_nodes += what.startswith("json")
    try:
        compare_attributes(obj, node, netcdf)
    except Exception as exc:
        result.attribute_mismatches.append(f"{what}: {_message(exc)}")


def _message(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    if not isinstance(exc, AssertionError):
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        text += f" ({Path(frame.filename).name}:{frame.lineno})"
    return text[:400]
