"""Seeded mutations of reference files, and which arrays each one touched.

A mutation works on the document's structure where that is where bugs hide: inside an array's
inline ``zarr.json`` (shapes, chunk shapes, data types, fill values, codecs and their
configurations), a chunk reference (URL, offset, size; the bytes of an inline chunk, with
Blosc, zstd and deflate header fields set to extremes), the gen entries, selections, sources
and templates, the keys themselves; in a directory also an index array's ``zarr.json`` and its
chunk files. Some mutations damage the file's text instead. Every value comes from the case's
own ``random.Random``, so a case number replays exactly.

`Mutation.touched` names the arrays whose values the mutation may change (``None``: all of
them); every other array must still read exactly as before.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shadowzarr_spec.keys import array_of_chunk_key

__all__ = ["SECRET", "Mutation", "mutate_case"]

SECRET = "FUZZSECRET"
"""Planted in credential-like strings; it must never appear in an error message."""

_INTS = [
    0,
    1,
    -1,
    2,
    3,
    7,
    8,
    255,
    256,
    65535,
    2**31 - 1,
    2**31,
    2**32 - 1,
    2**32,
    2**53,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    10**12,
    10**15,
    10**18,
    -(2**63),
    -(2**31),
]
_STRINGS = [
    "",
    "x",
    "..",
    "/",
    "a/../b",
    "\x00",
    "NaN",
    "Infinity",
    "-Infinity",
    "bytes",
    "blosc",
    "zstd",
    "gzip",
    "crc32c",
    "transpose",
    "imagecodecs_brotli",
    "imagecodecs_zlib",
    "imagecodecs_lzw",
    "imagecodecs_jpeg",
    "sharding_indexed",
    "numcodecs.zlib",
    "numcodecs.lz4",
    "numcodecs.bz2",
    "numcodecs.lzma",
    "numcodecs.fletcher32",
    "numcodecs.shuffle",
    "numcodecs.pcodec",
    "vlen-utf8",
    "vlen-bytes",
    "uint8",
    "int64",
    "float16",
    "float64",
    "complex128",
    "bool",
    "r16",
    "r0",
    "string",
    "big",
    "little",
    "v2",
    "default",
    ".",
    "regular",
    "rectilinear",
    "{{u0}}",
    "{{missing}}",
    "{{i * 99999999999999999999}}",
    "{{i // 0}}",
    "{{}}",
    "{{",
    f"http://user:{SECRET}@127.0.0.1:9/x",
    f"https://127.0.0.1:9/x?X-Amz-Signature={SECRET}",
    "/dev/zero",
    "/etc",
    "/nonexistent/x",
    "file:///etc/passwd",
    "ftp://127.0.0.1/x",
    "ws://127.0.0.1:9/x",
    "gopher://127.0.0.1:9/x",
    "unix:///tmp/x.sock",
    "http://127.0.0.1:99999/x",
    "http://[::1/x",
    "http:///x",
    "http://127.0.0.1:9/public/%2e%2e/private/x",
    "base64:AAAA",
    "base64:!!",
    "x" * 3000,
    "c/0",
    "zarr.json",
]
_OTHERS: list[Any] = [None, True, False, [], {}, [1] * 40, {"name": "x"}, 1.5, -0.0, 1e308, [[]]]
_FIELDS = [0, 1, 2, 0x7F, 0x80, 0xFF, 0xFFFF, 2**31 - 1, 2**31, 2**32 - 1, 16, 100000, 2**30]


@dataclass
class Mutation:
    """What was changed in one case."""

    kinds: list[str] = field(default_factory=list)
    touched: set[str] | None = field(default_factory=set)

    def touch(self, array: str | None) -> None:
        if array is None:
            self.touched = None
        elif self.touched is not None:
            self.touched.add(array)


def mutate_case(form: str, source: Path, target: Path, rng: random.Random) -> Mutation:
    """Copy reference file or directory ``source`` to ``target`` with 1 to 3 mutations."""
    mutation = Mutation()
    if source.is_dir():
        shutil.copytree(source, target)
        refs = target / "refs.json"
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        refs = target
        shutil.copyfile(source, refs)
    for _ in range(rng.choice((1, 1, 2, 3))):
        choice = rng.random()
        if form == "directory" and choice < 0.15:
            _mutate_index(target, rng, mutation)
        elif choice < 0.22:
            refs.write_bytes(_mutate_bytes(refs.read_bytes(), rng, text=True))
            mutation.kinds.append("text")
            mutation.touch(None)
        else:
            try:
                document = json.loads(refs.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError):
                continue  # an earlier text mutation broke it: leave it broken
            _mutate_document(document, rng, mutation)
            refs.write_text(json.dumps(document), encoding="utf-8")
    return mutation


def _mutate_document(document: Any, rng: random.Random, mutation: Mutation) -> None:
    if not isinstance(document, dict) or not isinstance(document.get("refs"), dict):
        _mutate_node(document, rng)
        mutation.kinds.append("document")
        mutation.touch(None)
        return
    refs: dict[str, Any] = document["refs"]
    choice = rng.random()
    keys = sorted(refs)
    if choice < 0.40:
        metadata = [k for k in keys if k.endswith("zarr.json")]
        key = rng.choice(metadata)
        try:
            inner = json.loads(refs[key])
        except (TypeError, ValueError):
            inner = None
        if inner is None:
            refs[key] = _mutate_value(refs[key], rng)
        else:
            _mutate_node(inner, rng)
            refs[key] = json.dumps(inner)
        mutation.kinds.append("metadata")
        array = key.removesuffix("zarr.json").rstrip("/")
        mutation.touch(array or None)
    elif choice < 0.70:
        chunks = [k for k in keys if not k.endswith("zarr.json")]
        key = rng.choice(chunks)
        refs[key] = _mutate_reference(refs[key], rng)
        mutation.kinds.append("reference")
        split = array_of_chunk_key(key)
        mutation.touch(split[0] if split else None)
    elif choice < 0.80:
        key = rng.choice(keys)
        new = rng.choice(["..", "/abs", key + "/..", "a" * 5000, key.replace("c/", "c/9"), "", key])
        refs[new] = refs.pop(key)
        mutation.kinds.append("key")
        mutation.touch(None)
    else:
        sections = [
            s
            for s in ("gen", "selections", "sources", "templates", "version", "indexes")
            if s in document
        ] or ["version"]
        section = rng.choice(sections)
        if section == "version" or not isinstance(document.get(section), dict | list):
            document[section] = _mutate_value(document.get(section), rng)
            mutation.touch(None)
        else:
            _mutate_node(document[section], rng)
            touched = _section_array(document, section)
            mutation.touch(touched)
        mutation.kinds.append(section)


def _section_array(document: dict[str, Any], section: str) -> str | None:
    """The one array a mutated section may affect, when there is exactly one."""
    value = document.get(section)
    if section in ("selections", "indexes") and isinstance(value, dict) and len(value) == 1:
        return str(next(iter(value)))
    return None


def _mutate_reference(value: Any, rng: random.Random) -> Any:
    if isinstance(value, str) and value.startswith("base64:") and rng.random() < 0.8:
        try:
            raw = base64.b64decode(value[7:], validate=True)
        except (binascii.Error, ValueError):
            return _mutate_value(value, rng)
        return "base64:" + base64.b64encode(_mutate_bytes(raw, rng)).decode()
    if isinstance(value, list) and value and rng.random() < 0.8:
        copy = list(value)
        position = rng.randrange(len(copy))
        copy[position] = _mutate_value(copy[position], rng)
        if rng.random() < 0.1:
            copy = copy[: rng.randrange(len(copy) + 1)]
        return copy
    return _mutate_value(value, rng)


def _mutate_node(node: Any, rng: random.Random) -> None:
    """Change one place somewhere inside a JSON container, in place."""
    places: list[tuple[Any, Any]] = []

    def walk(value: Any, depth: int) -> None:
        if depth > 12:
            return
        if isinstance(value, dict):
            for key in list(value):
                places.append((value, key))
                walk(value[key], depth + 1)
        elif isinstance(value, list):
            for index in range(len(value)):
                places.append((value, index))
                walk(value[index], depth + 1)

    walk(node, 0)
    if not places:
        return
    container, key = rng.choice(places)
    action = rng.random()
    if action < 0.08 and isinstance(container, dict):
        del container[key]
    elif action < 0.12 and isinstance(container, list):
        container.insert(key, container[key])
    elif action < 0.16 and isinstance(container, list):
        del container[key]
    elif action < 0.20 and isinstance(container, dict):
        container[rng.choice(["extra", "must_understand", "configuration", "name", key + "_"])] = (
            _mutate_value(None, rng)
        )
    else:
        container[key] = _mutate_value(container[key], rng)


def _mutate_value(value: Any, rng: random.Random) -> Any:
    if isinstance(value, str) and value and value.startswith("{") and rng.random() < 0.5:
        try:
            inner = json.loads(value)
        except ValueError:
            inner = None
        if isinstance(inner, dict | list):
            _mutate_node(inner, rng)
            return json.dumps(inner)
    choice = rng.random()
    if isinstance(value, bool) or choice < 0.1:
        return rng.choice(_OTHERS + _INTS[:6] + _STRINGS[:6])
    if isinstance(value, int):
        if choice < 0.5:
            return rng.choice(_INTS)
        return rng.choice([value + 1, value - 1, value * 2, value // 2, value * 1000, -value, 0])
    if isinstance(value, float):
        return rng.choice([0.0, -1.0, 1e308, 2.5, value * 2])
    if isinstance(value, str):
        if choice < 0.55:
            return rng.choice(_STRINGS)
        chars = list(value)
        if chars:
            position = rng.randrange(len(chars))
            chars[position] = rng.choice("0189/.{}\\x\u00e9 ")
        return "".join(chars[: rng.randrange(len(chars) + 1)] if rng.random() < 0.3 else chars)
    if isinstance(value, list):
        return rng.choice([[], value[:1], value * 2, [*value, rng.choice(_INTS)], None])
    if isinstance(value, dict):
        return rng.choice([{}, None, [], "x"])
    return rng.choice(_OTHERS + _INTS + _STRINGS)


def _mutate_bytes(data: bytes, rng: random.Random, *, text: bool = False) -> bytes:
    out = bytearray(data)
    choice = rng.random()
    if not out:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
    if choice < 0.3:
        for _ in range(rng.randrange(1, 8)):
            position = rng.randrange(len(out))
            out[position] = (
                rng.choice(b'{}[]",:0 \\') if text else out[position] ^ (1 << rng.randrange(8))
            )
    elif choice < 0.6 and not text and len(out) >= 4:
        # a header field (Blosc's nbytes/blocksize/cbytes, zstd's sizes, LZ4's size) at an extreme
        position = rng.randrange(0, min(len(out) - 3, 40))
        out[position : position + 4] = rng.choice(_FIELDS).to_bytes(4, "little")
    elif choice < 0.75:
        out = out[: rng.randrange(len(out))]
    elif choice < 0.85:
        out += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    else:
        start = rng.randrange(len(out))
        end = min(len(out), start + rng.randrange(1, 64))
        out[start:end] = bytes(end - start)
    return bytes(out)


def _mutate_index(directory: Path, rng: random.Random, mutation: Mutation) -> None:
    """An index array's zarr.json, or one of its chunk files."""
    arrays = sorted(p for p in (directory / "index").iterdir() if p.is_dir())
    if not arrays:
        return
    root = rng.choice(arrays)
    mutation.touch(root.name)
    if rng.random() < 0.4:
        metadata = root / "zarr.json"
        document = json.loads(metadata.read_text())
        _mutate_node(document, rng)
        metadata.write_text(json.dumps(document))
        mutation.kinds.append("index-metadata")
        return
    chunk_files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != "zarr.json")
    if chunk_files:
        chunk = rng.choice(chunk_files)
        chunk.write_bytes(_mutate_bytes(chunk.read_bytes(), rng))
        mutation.kinds.append("index-chunk")
