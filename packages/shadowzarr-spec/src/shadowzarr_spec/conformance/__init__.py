"""The conformance suite of the reference format: cases every reader of it must pass.

The cases are JSON files next to this module (their format is described in ``README.md``), so
that the Python reader (``shadowzarr_store``) and the JavaScript store (``js/``) run the very
same cases; a case one passes and the other fails is a failing test on one side. This module
loads them and holds the few pieces of harness both sides implement identically: the contents
of test files, the expansion of metadata shorthands in a case's document, the bytes a read must
return, and the name of the error a reader must raise.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Final

import numpy as np

from shadowzarr_spec import errors

__all__ = [
    "CONFORMANCE_DIR",
    "SUITES",
    "case_count",
    "document_text",
    "error_class_name",
    "expected_bytes",
    "expression_text",
    "file_bytes",
    "js_error_name",
    "load",
    "native_form",
    "tagged_attribute",
    "write_case_directory",
]

CONFORMANCE_DIR: Final = Path(__file__).parent
SUITES: Final = ("gen_expressions", "documents", "malformed", "attributes", "types")
MISSING_ENTRY: Final = 2**64 - 1
_PUBLIC_ERRORS: Final = tuple(getattr(errors, name) for name in errors.__all__)


def tagged_attribute(value: Any) -> Any:
    """A decoded attribute value in the suite's JSON form: NaN, infinities, bytes and complex
    numbers (``{"$complex": [real, imag]}``) as tagged objects, numpy numbers and arrays (the
    Attribute Types convention) as their Python values, so both readers' outcomes compare with
    a case's ``expect``."""
    if isinstance(value, np.ndarray | np.generic):
        return tagged_attribute(value.tolist())
    if isinstance(value, complex):
        return {"$complex": [tagged_attribute(value.real), tagged_attribute(value.imag)]}
    if isinstance(value, float) and value != value:
        return {"$float": "NaN"}
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return {"$float": "Infinity" if value > 0 else "-Infinity"}
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if isinstance(value, dict):
        return {k: tagged_attribute(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [tagged_attribute(v) for v in value]
    return value


def native_form(values: Any) -> dict[str, Any]:
    """An array read as h5py reads it (`hdf5_types.read_native`), in the suite's JSON form:
    records as ``{"shape", "fields"}`` (each field's values flat in C order, a nested struct as
    records, bytes as ``{"$bytes": hex}`` of the whole value); sequences as ``{"shape", "dtype",
    "sequences"}`` (each a list, in C order; ``dtype`` the values' type, "mixed" if they differ)."""
    array = np.asarray(values)
    if array.dtype.names is not None:
        return _records_form(array)
    sequences = [np.asarray(s) for s in array.ravel()]
    dtypes = {s.dtype.name for s in sequences}
    return {
        "shape": list(array.shape),
        "dtype": dtypes.pop() if len(dtypes) == 1 else "mixed",
        "sequences": [s.tolist() for s in sequences],
    }


def _records_form(records: np.ndarray) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name in records.dtype.names or ():
        column = np.ascontiguousarray(records[name])
        if column.dtype.names is not None:
            fields[name] = _records_form(column)
        elif column.dtype.kind in "SV":
            raw = column.tobytes()
            size = column.dtype.itemsize
            fields[name] = [{"$bytes": raw[i : i + size].hex()} for i in range(0, len(raw), size)]
        else:
            fields[name] = (
                column.astype(int if column.dtype.kind == "b" else column.dtype).ravel().tolist()
            )
    return {"shape": list(records.shape), "fields": fields}


def load(name: str) -> dict[str, Any]:
    """One file of the suite (``limits``, ``errors`` or one of `SUITES`), parsed."""
    return json.loads((CONFORMANCE_DIR / f"{name}.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def case_count() -> int:
    """Cases in the suite; a document case counts each of its reads."""
    total = 0
    for suite in SUITES:
        for case in load(suite)["cases"]:
            total += len(case["reads"]) if "reads" in case else 1
    return total


def js_error_name(python_name: str) -> str:
    """The name of the class the JavaScript store raises where Python raises ``python_name``."""
    return load("errors")["js"][python_name]  # type: ignore[no-any-return]


def error_class_name(exc: BaseException) -> str | None:
    """The most specific public class of `shadowzarr_spec.errors` ``exc`` is an instance of."""
    matching = [c for c in _PUBLIC_ERRORS if isinstance(exc, c)]
    specific = [c for c in matching if not any(o is not c and issubclass(o, c) for o in matching)]
    return specific[0].__name__ if len(specific) == 1 else None


def expression_text(case: dict[str, Any]) -> str:
    """A gen expression case's text: ``expression``, or ``expression_repeat`` pieces joined."""
    if "expression" in case:
        return case["expression"]  # type: ignore[no-any-return]
    return "".join(text * count for text, count in case["expression_repeat"])


def pattern(size: int) -> bytes:
    """The bytes of a ``{"pattern": size}`` file: a position can be told from its neighbours."""
    return bytes((i * 31 + (i >> 8) * 17 + (i >> 16) * 13 + 7) & 0xFF for i in range(size))


def file_bytes(spec: dict[str, Any]) -> bytes:
    """The contents of one file of a case."""
    if "pattern" in spec:
        return pattern(spec["pattern"])
    if "hex" in spec:
        return bytes.fromhex(spec["hex"])
    if "base64" in spec:
        return base64.b64decode(spec["base64"])
    if "text" in spec:
        return spec["text"].encode("utf-8")  # type: ignore[no-any-return]
    if "json" in spec:
        return _compact(spec["json"]).encode("utf-8")
    raise ValueError(f"unknown file spec {sorted(spec)}")


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _array_metadata(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": spec["shape"],
        "data_type": spec.get("data_type", "int32"),
        "chunk_grid": {
            "name": "regular",
            "configuration": {"chunk_shape": spec.get("chunks", spec["shape"])},
        },
        "chunk_key_encoding": spec.get(
            "chunk_key_encoding", {"name": "default", "configuration": {"separator": "/"}}
        ),
        "fill_value": spec.get("fill_value", 0),
        "codecs": spec.get("codecs", [{"name": "bytes", "configuration": {"endian": "little"}}]),
        "attributes": spec.get("attributes", {}),
    }


def _expand_value(value: Any) -> Any:
    """Metadata text shorthands in refs: ``{"$array": …}``, ``{"$group": …}``, ``{"$json": …}``."""
    if isinstance(value, dict) and len(value) == 1:
        ((tag, body),) = value.items()
        if tag == "$array":
            return _compact(_array_metadata(body))
        if tag == "$group":
            return _compact(
                {
                    "zarr_format": 3,
                    "node_type": "group",
                    **body,
                    "attributes": body.get("attributes", {}),
                }
            )
        if tag == "$json":
            return _compact(body)
    return value


def document_text(case: dict[str, Any]) -> str:
    """The reference file of a case: ``document_text`` as is (``document_text_repeat``: pieces
    repeated and joined, as for expressions), or ``document`` expanded."""
    if "document_text" in case:
        return case["document_text"]  # type: ignore[no-any-return]
    if "document_text_repeat" in case:
        return "".join(text * count for text, count in case["document_text_repeat"])
    document = case["document"]
    if not isinstance(document, dict):
        return _compact(document)
    if "refs" in document or "version" in document:
        refs = document.get("refs")
        if isinstance(refs, dict):
            document = {**document, "refs": {k: _expand_value(v) for k, v in refs.items()}}
    else:  # version 0: the refs alone
        document = {k: _expand_value(v) for k, v in document.items()}
    return _compact(document)


def write_case_directory(case: dict[str, Any], directory: Path) -> dict[str, bytes]:
    """Write a case's files and its ``refs.json`` into ``directory``; returns the files' bytes."""
    contents: dict[str, bytes] = {}
    directory.mkdir(parents=True, exist_ok=True)
    for name, spec in case.get("files", {}).items():
        data = file_bytes(spec)
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        contents[name] = data
    (directory / "refs.json").write_text(document_text(case), encoding="utf-8")
    return contents


def expected_bytes(pieces: list[Any], files: dict[str, bytes]) -> bytes:
    """The bytes a read must return: ``[file, offset, length]`` pieces and ``{"hex": …}``."""
    out = bytearray()
    for piece in pieces:
        if isinstance(piece, list):
            name, offset, length = piece
            out += files[name][offset : offset + length]
        else:
            out += bytes.fromhex(piece["hex"])
    return bytes(out)
