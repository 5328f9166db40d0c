"""Run by the tests inside lindi's own environment (lindi needs zarr 2): compares every dataset
and attribute of an HDF5 file, as h5py reads it, with what ``lindi.LindiH5pyFile`` reads from
a ``.lindi.json``, and prints one JSON line: counts and the mismatches found.

    python lindi_compare.py FILE.h5 FILE.lindi.json

Values are compared as LINDI's users see them: strings as text (h5py gives bytes, LINDI str),
object references by the path of their target, compounds field by field (LINDI reads a
compound only by field), numeric datasets with their dtype. Attribute values and shapes are
compared, not their widths (LINDI's attributes are JSON: int64, float64).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import h5py
import lindi
import numpy as np


def main(source: str, lindi_path: str) -> None:
    report: dict[str, Any] = {"datasets": 0, "attributes": 0, "missing": [], "mismatches": []}
    theirs = lindi.LindiH5pyFile.from_lindi_file(lindi_path)
    with h5py.File(source, "r") as native:
        names: list[str] = []
        native.visit(names.append)
        for name in ["", *names]:
            node = native[name] if name else native
            try:
                other = theirs[name] if name else theirs
            except Exception as exc:
                report["missing"].append([name, f"{type(exc).__name__}: {exc}"[:300]])
                continue
            if other is None:  # LINDI's answer for a name it does not have
                report["missing"].append([name, "absent"])
                continue
            _attributes(native, theirs, name, node, other, report)
            if isinstance(node, h5py.Dataset):
                problem = _dataset(native, theirs, node, other)
                report["datasets"] += 1
                if problem:
                    report["mismatches"].append([name, problem])
    print(json.dumps(report))


def _attributes(native: Any, theirs: Any, name: str, node: Any, other: Any, report: Any) -> None:
    ours, lindis = dict(node.attrs), dict(other.attrs)
    if set(ours) != set(lindis):
        report["mismatches"].append(
            [name, f"attribute names differ: {sorted(set(ours) ^ set(lindis))}"]
        )
    for key in set(ours) & set(lindis):
        report["attributes"] += 1
        expected, actual = ours[key], lindis[key]
        if isinstance(expected, h5py.Reference):
            same = (
                isinstance(actual, h5py.Reference) and native[expected].name == theirs[actual].name
            )
        else:
            same = _same(expected, actual)
        if not same:
            report["mismatches"].append(
                [name, f"attribute {key}: {expected!r:.80} != {actual!r:.80}"]
            )


def _dataset(native: Any, theirs: Any, node: Any, other: Any) -> str | None:
    if node.shape != other.shape:
        return f"shape {node.shape} != {other.shape}"
    if node.dtype.names is not None:
        for field in node.dtype.names:
            expected, actual = node[field][()], other[field][:]
            if h5py.check_dtype(ref=node.dtype[field]) is not None:
                expected = [native[r].name for r in np.ravel(expected)]
                actual = [theirs[r].name for r in np.ravel(actual)]
            if not _same(expected, actual):
                return f"field {field} differs"
        return None
    expected, actual = node[()], other[()]
    if h5py.check_dtype(ref=node.dtype) is not None:
        targets = [native[r].name for r in np.ravel(expected)]
        return (
            None if targets == [theirs[r].name for r in np.ravel(actual)] else "references differ"
        )
    if node.dtype.kind in "biufc" and node.dtype != other.dtype:
        return f"dtype {node.dtype} != {other.dtype}"
    return None if _same(expected, actual) else f"values {expected!r:.80} != {actual!r:.80}"


def _same(expected: Any, actual: Any) -> bool:
    a, b = np.asarray(expected), np.asarray(actual)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "OSU" or b.dtype.kind in "OSU":
        return [_text(v) for v in a.reshape(-1).tolist()] == [
            _text(v) for v in b.reshape(-1).tolist()
        ]
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def _text(value: Any) -> Any:
    return value.decode("utf-8") if isinstance(value, bytes) else value


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
