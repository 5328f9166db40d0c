"""The header reader agrees with h5py wherever it answers, and answers for NWB's common forms.

Every object of every corpus file is asked both ways: links (names, targets, order), each
attribute separately, and each dataset's type, shape, layout, chunks, filters, fill value,
address and values. A reader that answered wrongly for any of them would misdescribe a file.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import h5py
import numpy as np
import pytest
from shadowzarr_spec.attribute_conventions import ATTRIBUTE_TYPES_KEY

from shadowzarr_hdf5 import generate_rfs
from shadowzarr_hdf5.attributes import read_attributes
from shadowzarr_hdf5.format.errors import NotNative
from shadowzarr_hdf5.format.messages import stored_attributes
from shadowzarr_hdf5.header_reader import HeaderFile
from shadowzarr_hdf5.header_reader.attributes import json_attributes
from shadowzarr_hdf5.object_paths import ObjectPaths
from shadowzarr_hdf5.plan.chunks import read_filters
from shadowzarr_hdf5.plan.storage import storage_layout
from shadowzarr_hdf5.plan.values import read_whole
from shadowzarr_hdf5.walker import _links

_spec = importlib.util.spec_from_file_location("hdf5_corpus", Path(__file__).with_name("corpus.py"))
assert _spec is not None
assert _spec.loader is not None
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)


def _write(path: Path, writer: Any, **options: Any) -> Path:
    with h5py.File(path, "w", **options) as f:
        writer(f, path.parent)
    return path


def _edge_cases(f: h5py.File, _root: Path) -> None:
    """Forms the corpus does not write: null-terminated strings, empty arrays, big-endian
    contiguous data, fixed UTF-8 strings, a user fill value, several hard links."""
    nullterm = h5py.h5t.C_S1.copy()
    nullterm.set_size(6)
    nullterm.set_strpad(h5py.h5t.STR_NULLTERM)
    space = h5py.h5s.create_simple((3,))
    # Stored as is (no conversion): bytes after the first null must not be read.
    raw = np.array([b"ab\x00cd", b"abcde", b""], dtype="S6")
    dataset = h5py.h5d.create(f.id, b"nullterm", nullterm, space)
    dataset.write(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=nullterm)
    attr = h5py.h5a.create(f.id, b"nullterm_attr", nullterm, space)
    attr.write(raw, mtype=nullterm)
    f.attrs["fixed_utf8"] = np.array("héllo".encode(), dtype=h5py.string_dtype("utf-8", 8))
    f.attrs["vlen_ascii"] = np.array([b"x", b"yz"], dtype=h5py.string_dtype("ascii"))
    f.attrs["empty_array"] = np.zeros((0,), "i4")
    f.attrs["empty_strings"] = np.array([], dtype=h5py.string_dtype())
    f.create_dataset("big_endian", data=np.arange(300, dtype=">i4"))
    f.create_dataset("filled", shape=(5,), dtype="f4", fillvalue=2.5)
    f.create_dataset("compact", data=np.arange(4, dtype="u2"), chunks=None)
    f.create_dataset("vlen", data=["one", "", "thrée"], dtype=h5py.string_dtype())
    d = f.create_dataset("target", data=np.arange(3))
    f["alias"] = d
    f.create_dataset("refs", data=[d.ref, h5py.Reference()], dtype=h5py.ref_dtype)
    f.attrs[".specloc"] = f.create_group("specifications").ref  # NWB: a path, not an object
    f.create_dataset("unlimited", data=np.arange(10), maxshape=(None,), chunks=(4,))


def _corpus_files(root: Path) -> list[Any]:
    cases = []
    for name, writer in corpus.WRITERS.items():
        fixed = "libver" in corpus.FILE_OPTIONS[name]
        for libver in [None] if fixed else ["earliest", "latest"]:
            cases.append(pytest.param(name, writer, libver, id=f"{name}-{libver or 'fixed'}"))
    cases.append(pytest.param("edge_cases", _edge_cases, "earliest", id="edge_cases-earliest"))
    cases.append(pytest.param("edge_cases", _edge_cases, "latest", id="edge_cases-latest"))
    return cases


@pytest.mark.parametrize(("name", "writer", "libver"), _corpus_files(Path()))
def test_header_reader_agrees_with_h5py(
    tmp_path: Path, name: str, writer: Any, libver: str | None
) -> None:
    options = dict(corpus.FILE_OPTIONS.get(name, {}))
    if libver is not None and "libver" not in options:
        options["libver"] = libver
    path = _write(tmp_path / f"{name}.h5", writer, **options)
    with h5py.File(path, "r") as f:
        paths = ObjectPaths(f)
        expected_paths = dict(paths.by_address())
        headers = HeaderFile.open(str(path))
        if headers is None:
            assert f.userblock_size > 0, "only files with a user block are left to h5py"
            return
        for address, path_name in expected_paths.items():
            obj = f[path_name.encode("utf-8", "surrogateescape")] if path_name != "/" else f
            _compare_object(headers, paths, address, obj)
        _compare_walk(f, headers, expected_paths)


def _compare_object(headers: HeaderFile, paths: ObjectPaths, address: int, obj: Any) -> None:
    try:
        kind = headers.kind(address)
    except NotNative:
        return
    expected_kind = {h5py.Group: "group", h5py.Dataset: "dataset"}.get(type(obj), "other")
    if isinstance(obj, h5py.File):
        expected_kind = "group"
    assert kind == expected_kind, obj.name
    _compare_attributes(headers, paths, address, obj)
    if kind == "group":
        try:
            links = [(link.name, link.address) for link in headers.links(address)]
        except NotNative:
            return
        assert links == _links(obj), obj.name
    elif kind == "dataset":
        _compare_dataset(headers, paths, address, obj)


def _compare_attributes(headers: HeaderFile, paths: ObjectPaths, address: int, obj: Any) -> None:
    """Each attribute separately: one unreadable attribute must not hide the others."""
    expected = read_attributes(obj, paths)
    sizes = headers.superblock.offset_size, headers.superblock.length_size
    try:
        stored = stored_attributes(headers.messages(address), sizes[0])
    except NotNative:
        return
    for item in stored:
        try:
            got = json_attributes([item], headers.heap, paths, *sizes)
        except NotNative:
            continue
        for key, value in got.items():
            assert key in expected, (obj.name, key)
            if key == ATTRIBUTE_TYPES_KEY:  # this one attribute's type, of all h5py's
                assert value.items() <= expected[key].items(), (obj.name, value)
                continue
            _assert_same(value, expected[key], f"{obj.name} attribute {key}")
    try:
        whole = headers.attributes(address, paths)[0]
    except NotNative:
        return
    assert list(whole) == list(expected), obj.name
    assert whole.get(ATTRIBUTE_TYPES_KEY) == expected.get(ATTRIBUTE_TYPES_KEY), obj.name


def _compare_dataset(
    headers: HeaderFile, paths: ObjectPaths, address: int, d: h5py.Dataset
) -> None:
    try:
        native = headers.dataset(address, d.name, lambda: d, paths)
    except NotNative:
        return
    assert native.dtype == d.dtype, d.name
    assert native.dtype.metadata == d.dtype.metadata, d.name
    assert native.shape == d.shape, d.name
    assert native.maxshape == d.maxshape, d.name
    assert native.chunks == d.chunks, d.name
    assert native.layout.kind == storage_layout(d), d.name
    assert native.filters == read_filters(d), d.name
    if native.layout.kind == "contiguous":
        assert native.layout.address == d.id.get_offset(), d.name
    if native.datatype.kind.value in ("number", "fixed_string"):
        _assert_same(native.fillvalue, d.fillvalue, f"{d.name} fill value")
    values = native.read_whole(lambda a: paths.at_address(a) is not None)
    if values is None:
        return
    if h5py.check_ref_dtype(d.dtype) is not None:
        expected = np.zeros(d.shape, "<u8")
        d.id.read(h5py.h5s.ALL, h5py.h5s.ALL, expected, mtype=h5py.h5t.STD_REF_OBJ)
    else:
        expected = read_whole(d)
    assert values.dtype == expected.dtype, d.name
    assert values.shape == expected.shape, d.name
    if values.dtype.kind == "O":
        assert values.tolist() == expected.tolist(), d.name
    else:  # bit for bit (NaNs included)
        assert values.tobytes() == expected.tobytes(), d.name


def _compare_walk(f: h5py.File, headers: HeaderFile, expected: dict[int, str]) -> None:
    paths = ObjectPaths(f, headers)
    try:
        got = paths._walk_headers()
    except NotNative:
        return
    assert got == expected


def _assert_same(got: Any, expected: Any, where: str) -> None:
    assert type(got) is type(expected), (where, got, expected)
    if isinstance(got, float) and np.isnan(got):
        assert np.isnan(expected), where
    elif isinstance(got, list):
        assert len(got) == len(expected), where
        for a, b in zip(got, expected, strict=True):
            _assert_same(a, b, where)
    elif isinstance(got, np.generic):
        assert got.dtype == expected.dtype, where
        assert got.tobytes() == expected.tobytes(), where
    else:
        assert got == expected, where


def test_nwb_forms_are_read_without_h5py(tmp_path: Path) -> None:
    """Groups of attributes, vlen and fixed strings, references, contiguous and gzip-chunked
    numbers (the metadata of an NWB file as pynwb writes it): every object is answered by the
    header reader, and generation opens no dataset in h5py."""
    path = tmp_path / "nwb_forms.h5"
    with h5py.File(path, "w") as f:
        f.attrs["namespace"] = "core"
        targets = []
        for i in range(3):
            g = f.create_group(f"processing/table_{i}")
            g.attrs["neurodata_type"] = "DynamicTable"
            g.attrs["colnames"] = np.array(["id", "label"], dtype=object)
            g.attrs["rate"] = 30.0
            g.create_dataset("id", data=np.arange(5))
            g.create_dataset("label", data=["a", "b"], dtype=h5py.string_dtype())
            g.create_dataset("code", data=np.bytes_(b"fixed"))
            v = g.create_dataset("value", data=np.arange(500.0), chunks=(100,), compression="gzip")
            v.attrs["unit"] = "volts"
            targets.append(v)
            g.create_dataset("refs", data=[t.ref for t in targets], dtype=h5py.ref_dtype)
            g.attrs["previous"] = targets[0].ref
    with h5py.File(path, "r") as f:
        paths = ObjectPaths(f)
        headers = HeaderFile.open(str(path))
        assert headers is not None
        for address, name in paths.by_address().items():
            headers.attributes(address, paths)
            if headers.kind(address) == "group":
                headers.links(address)
            else:
                headers.dataset(
                    address, name, lambda name=name: pytest.fail(f"{name} opened in h5py"), paths
                )
    opened: list[str] = []
    original = h5py.h5o.open

    def counting_open(loc: Any, name: bytes, *args: Any, **kwargs: Any) -> Any:
        opened.append(name.decode())
        return original(loc, name, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(h5py.h5o, "open", counting_open)
        rfs = generate_rfs(path, progress=False)
    assert [name for name in opened if name != "/"] == []  # the root is the file itself
    assert "processing/table_2/refs/zarr.json" in rfs.refs


def test_damaged_headers_raise_only_not_native(tmp_path: Path) -> None:
    """Random damage to the metadata bytes never escapes as another exception: every question
    either answers or raises NotNative (then h5py reads the object and judges the damage)."""
    path = _write(tmp_path / "edge.h5", _edge_cases, libver="earliest")
    data = path.read_bytes()
    with h5py.File(path, "r") as f:
        paths = ObjectPaths(f)
        addresses = list(paths.by_address())
        reference = HeaderFile.open(str(path))
        assert reference is not None
        superblock = reference.superblock
        rng = np.random.default_rng(3)
        for _ in range(300):
            damaged = bytearray(data)
            for position in rng.integers(0, min(len(data), 4096), size=4):
                damaged[position] = int(rng.integers(0, 256))
            frozen = bytes(damaged)
            headers = HeaderFile(lambda o, n, d=frozen: d[o : o + n], superblock)
            for address in addresses:
                for ask in (headers.kind, headers.links):
                    with contextlib.suppress(NotNative):
                        ask(address)
                with contextlib.suppress(NotNative):
                    headers.attributes(address, paths)
                try:
                    dataset = headers.dataset(
                        address, "/x", lambda: SimpleNamespace(fillvalue=0), paths
                    )
                except NotNative:
                    continue
                assert dataset.fillvalue is not None
                dataset.read_whole(lambda _address: True)


def test_generation_leaves_no_h5py_object_to_the_cyclic_collector(tmp_path: Path) -> None:
    """Everything generation opens is freed when it returns, by reference counting. An h5py
    object kept alive by a reference cycle is freed later by the cyclic collector, in whatever
    thread allocates then; freeing it needs h5py's lock, and if that thread is one HDF5 is
    waiting on (zarr's event loop under kerchunk's visititems), the process deadlocks."""
    path = _write(tmp_path / "edge.h5", _edge_cases, libver="earliest")
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        generate_rfs(path, progress=False)
        gc.collect()
        left = [type(o).__name__ for o in gc.garbage if _holds_h5py(o)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert left == []


def _holds_h5py(obj: Any) -> bool:
    """h5py objects, and our objects that hold them or the header reader."""
    module = type(obj).__module__ or ""
    prefixes = ("h5py", "shadowzarr_hdf5.header_reader", "shadowzarr_hdf5.format.heaps")
    return module.startswith((*prefixes, "shadowzarr_hdf5.object_paths"))
