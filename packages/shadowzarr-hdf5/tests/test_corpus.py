"""Every dataset and attribute of the corpus reads back through the references equal to h5py."""

from __future__ import annotations

import importlib.util
import math
import socket
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import zarr
from shadowzarr_spec import ConventionTypeWarning, UnsupportedFeatureError, decode_attributes
from shadowzarr_spec.hdf5_types import convention_datasets
from shadowzarr_testing.compare import assert_array_equal_exact
from shadowzarr_testing.hdf5_compare import check_number_type

from shadowzarr_hdf5 import generate_rfs

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")

_spec = importlib.util.spec_from_file_location("hdf5_corpus", Path(__file__).with_name("corpus.py"))
assert _spec is not None
assert _spec.loader is not None
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)

RESERVED = {
    "_DTYPE",
    "_REFERENCE_FIELDS",
    "_LINKS",
    "_ENUM",
    "_VLEN_DTYPE",
    "_STRUCTURED_DTYPE",
    "_ATTRIBUTE_TYPES",
    "zarr_conventions",
}
LIBVERS = ["earliest", "latest"]


def write(tmp_path: Path, name: str, writer: Any, libver: str | None = None) -> Path:
    options = dict(corpus.FILE_OPTIONS.get(name, {}))
    if libver is not None and "libver" not in options:
        options["libver"] = libver
    path = tmp_path / f"{name}.h5"
    with h5py.File(path, "w", **options) as f:
        writer(f, tmp_path)
    return path


def generate_named(path: Path, **options: Any) -> Any:
    """generate_rfs, checking that its ConventionTypeWarning names exactly the datasets stored
    under a type convention (and that there is none when no dataset is)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConventionTypeWarning)
        rfs = generate_rfs(path, **options)
    named = [str(w.message) for w in caught if issubclass(w.category, ConventionTypeWarning)]
    found = convention_datasets(rfs)
    assert len(named) == (1 if found else 0)
    for dataset, attribute in found.items():
        assert f"{dataset} ({attribute})" in named[0]
    return rfs


def _cases() -> list[Any]:
    cases = []
    for name in corpus.WRITERS:
        fixed = "libver" in corpus.FILE_OPTIONS[name]
        for libver in [None] if fixed else LIBVERS:
            cases.append(pytest.param(name, libver, id=f"{name}-{libver or 'fixed'}"))
    return cases


@pytest.mark.parametrize(("name", "libver"), _cases())
def test_corpus_file_reads_back_equal(
    tmp_path: Path, open_refs: Any, name: str, libver: str
) -> None:
    path = write(tmp_path, name, corpus.WRITERS[name], libver)
    # Everything referenced (nothing inlined), with chunk manifests for all but the smallest.
    rfs = generate_named(path, inline_threshold=0, manifest_threshold=50)
    compare_file(path, open_refs(rfs))


@pytest.mark.parametrize(
    "name", ["attributes", "numeric_f8", "compound", "strings_vlen", "links", "index_kinds"]
)
def test_default_options_inline_small_datasets(tmp_path: Path, open_refs: Any, name: str) -> None:
    path = write(tmp_path, name, corpus.WRITERS[name])
    rfs = generate_rfs(path, manifest_threshold=None)
    compare_file(path, open_refs(rfs))


@pytest.mark.parametrize("name", sorted(corpus.WRITERS))
def test_independent_reader_agrees(tmp_path: Path, materialize_refs: Any, name: str) -> None:
    """Every chunk listed (version 1), read without RfsStore: what any kerchunk reader sees."""
    path = write(tmp_path, name, corpus.WRITERS[name])
    rfs = generate_named(path, inline_threshold=0, manifest_threshold=None)
    compare_file(path, materialize_refs(rfs))


@pytest.mark.parametrize(
    "name", ["index_kinds", "btree_v1", "partial_chunks", "filter_mask_skipped", "many_chunks"]
)
def test_chunk_iter_path_matches_parsed_indexes(tmp_path: Path, name: str) -> None:
    """h5py's chunk_iter (no index parsing) gives the same chunks, including the extensible
    array whose unlimited axis is second, where HDF5 mislabels chunks and we relabel them."""
    path = write(tmp_path, name, corpus.WRITERS[name])
    parsed = generate_rfs(path, inline_threshold=0, manifest_threshold=None)
    walked = generate_rfs(path, inline_threshold=0, manifest_threshold=None, parse_indexes=False)
    assert parsed.refs == walked.refs


@pytest.mark.parametrize("name", sorted(corpus.REFUSALS))
def test_unsupported_features_are_refused_by_name(tmp_path: Path, name: str) -> None:
    writer, message = corpus.REFUSALS[name]
    path = write(tmp_path, name, writer)
    with pytest.raises(UnsupportedFeatureError, match=message) as caught:
        generate_rfs(path, strict=True)
    dataset = next(iter(_dataset_names(path)))
    assert repr(dataset) in str(caught.value) or dataset in str(caught.value)


def test_refused_small_dataset_inlined_on_request(tmp_path: Path, open_refs: Any) -> None:
    path = write(tmp_path, "unknown_filter", corpus.REFUSALS["unknown_filter"][0])
    rfs = generate_rfs(path, inline_unsupported_below=100_000)
    compare_file(path, open_refs(rfs))


def test_contiguous_slabs_are_one_gen_entry_with_dividing_height(tmp_path: Path) -> None:
    path = write(tmp_path, "contiguous_slabs", corpus.WRITERS["contiguous_slabs"])
    rfs = generate_rfs(path, contiguous_chunk_bytes=4096)
    keys = {entry.key.split("/c/")[0]: entry for entry in rfs.gen}
    assert set(keys) == {"divisible", "prime_rows", "one_d", "tail"}
    with h5py.File(path) as f:
        offset = f["divisible"].id.get_offset()
    divisible = keys["divisible"]
    assert divisible.count == 1200 // 30  # 30 rows of 128 bytes divide 1200, 32 do not
    assert str(offset) in divisible.offset


def test_sources_record_local_size(tmp_path: Path) -> None:
    path = write(tmp_path, "bool", corpus.WRITERS["bool"])
    rfs = generate_rfs(path)
    ((url, info),) = rfs.sources.items()
    assert url == str(path)
    assert (info.size, info.etag) == (path.stat().st_size, None)


def test_progress_callback_sees_every_dataset(tmp_path: Path) -> None:
    path = write(tmp_path, "groups", corpus.WRITERS["groups"])
    seen: list[tuple[int, int, str]] = []
    generate_rfs(path, progress=lambda done, total, p: seen.append((done, total, p)))
    assert [s[0] for s in seen] == [1, 2, 3, 4]
    assert {s[1] for s in seen} == {4}


def test_links_are_recorded(tmp_path: Path, open_refs: Any) -> None:
    path = write(tmp_path, "links", corpus.WRITERS["links"])
    root = open_refs(generate_rfs(path))
    links = {link["name"]: link for link in root.attrs["_LINKS"]}
    assert links["soft"] == {"name": "soft", "source": ".", "path": "/a/b/data"}
    assert links["dangling"]["path"] == "/nowhere"
    assert links["external"] == {"name": "external", "source": "other.h5", "path": "/some/path"}
    assert root["a"].attrs["_LINKS"] == [{"name": "relative", "source": ".", "path": "/a/b"}]
    assert root["a/b"].attrs["_LINKS"] == [{"name": "loop", "source": ".", "path": "/a"}]
    assert np.array_equal(root["hard_copy"][...], root["a/b/data"][...])


@pytest.mark.parametrize("libver", LIBVERS)
def test_creation_order_is_kept_for_links_and_attributes(
    tmp_path: Path, open_refs: Any, libver: str
) -> None:
    """Groups and attributes that track creation order list it in h5py's order, not by name."""
    writer = corpus.WRITERS["creation_order_and_dangling"]
    path = write(tmp_path, "creation_order_and_dangling", writer, libver)
    root = open_refs(generate_rfs(path))
    links = [link["name"] for link in root["ordered"].attrs["_LINKS"]]
    assert links == ["zeta_link", "alpha_link", "mid_link"]
    assert list(root["node"].attrs)[:3] == ["z", "a", "m"]
    attrs = decode_attributes(dict(root["node"].attrs))
    assert attrs["to_hidden"] == {"_REFERENCE": {"source": ".", "path": ""}}
    assert [r["_REFERENCE"]["path"] for r in attrs["mixed"]] == ["/ordered/alpha", ""]
    assert root["refs"][...].tolist() == ["/ordered/alpha", "", "/ordered/alpha", ""]


def test_dimension_scales_become_dimension_names(tmp_path: Path, open_refs: Any) -> None:
    path = write(tmp_path, "dimension_scales", corpus.WRITERS["dimension_scales"])
    root = open_refs(generate_rfs(path))
    assert root["signal"].metadata.dimension_names == ("time", "channel")
    assert root["time"].metadata.dimension_names == ("time",)
    assert root["labelled"].metadata.dimension_names == ("rows", None)
    assert "DIMENSION_LIST" not in root["signal"].attrs


def test_large_string_chunks_are_zstd_compressed(tmp_path: Path, open_refs: Any) -> None:
    path = write(tmp_path, "strings_large", corpus.WRITERS["strings_large"])
    root = open_refs(generate_rfs(path))
    for name in ["many", "text"]:
        codecs = [c.to_dict()["name"] for c in root[name].metadata.codecs]
        assert codecs == ["vlen-utf8", "zstd"], name
    small = open_refs(generate_rfs(write(tmp_path, "strings_vlen", corpus.WRITERS["strings_vlen"])))
    assert [c.to_dict()["name"] for c in small["utf8"].metadata.codecs] == ["vlen-utf8"]


# -- comparison ----------------------------------------------------------------------------------
def _dataset_names(path: Path) -> list[str]:
    names: list[str] = []
    with h5py.File(path) as f:
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    return names


def _hard_paths(f: h5py.File) -> list[str]:
    """Every path reached through hard links (hard-linked objects at each of their names)."""
    paths: list[str] = []
    stack: list[tuple[str, tuple[int, ...]]] = [("", (h5py.h5o.get_info(f.id).addr,))]
    while stack:
        prefix, ancestors = stack.pop()
        group = f[prefix or "/"]
        for name in group:
            if not isinstance(group.get(name, getlink=True), h5py.HardLink):
                continue
            path = f"{prefix}/{name}" if prefix else name
            address = h5py.h5o.get_info(group[name].id).addr
            if address in ancestors:
                continue
            paths.append(path)
            if isinstance(group[name], h5py.Group):
                stack.append((path, (*ancestors, address)))
    return paths


def _compare_regions(actual: Any, expected: Any, f: h5py.File, what: str, array: Any) -> None:
    """Each region reference names its target and reads its selection as h5py does."""
    from shadowzarr_spec.region_references import region_references

    assert array.attrs["_DTYPE"] == "region_reference"
    root = zarr.open_group(array.store, mode="r", zarr_format=3)
    for ours, ref in zip(region_references(actual).ravel(), expected.ravel(), strict=True):
        if not ref:
            assert ours.path == "", what
            continue
        assert ours.path == f[ref].name, what
        got = ours.apply(root[ours.path.lstrip("/")])
        assert_array_equal_exact(got, f[ref][ref], what)


def compare_file(path: Path, root: Any) -> None:
    with h5py.File(path) as f:
        compare_attributes(f, root, f)
        # Collect first: reading zarr inside visititems holds h5py's lock while zarr's threads
        # may need it (garbage-collected h5py objects), a deadlock.
        checked = 0
        for name in _hard_paths(f):
            obj = f[name]
            compare_attributes(obj, root[name], f)
            if isinstance(obj, h5py.Dataset):
                compare_dataset(obj, root[name], f)
                checked += 1
        assert checked or not _dataset_names(path)


def compare_dataset(dset: h5py.Dataset, array: Any, f: h5py.File) -> None:
    what = dset.name
    if dset.shape is None:
        assert array.shape == (0,), what
        return
    dtype = dset.dtype
    extra = dtype.subdtype[1] if dtype.subdtype is not None else ()
    assert array.shape == tuple(dset.shape) + tuple(extra), what
    actual = array[...] if array.ndim else array[()]
    expected = np.asarray(dset[()])
    if h5py.check_string_dtype(dtype) is not None:
        want = np.vectorize(_text, otypes=[object])(expected) if expected.size else expected
        got = np.asarray(actual, dtype=object)
        if array.ndim == 0 and dset.ndim == 1:
            got = got.reshape(1)
        assert got.tolist() == np.asarray(want, dtype=object).tolist(), what
        assert array.attrs["_DTYPE"] == "str"
        return
    if h5py.check_vlen_dtype(dtype) is not None and h5py.check_string_dtype(dtype) is None:
        from shadowzarr_spec.hdf5_types import as_sequences

        got = as_sequences(actual, array.attrs)
        for index, want in np.ndenumerate(expected):
            assert_array_equal_exact(got[index], np.asarray(want), f"{what}{index}")
        return
    if "_STRUCTURED_DTYPE" in array.attrs:
        from shadowzarr_spec.hdf5_types import as_structured

        records = as_structured(actual, array.attrs)
        assert records.dtype == dtype, what
        assert records.tobytes() == expected.tobytes(), what
        return
    if h5py.check_ref_dtype(dtype) is h5py.RegionReference:
        _compare_regions(np.asarray(actual), expected, f, what, array)
        return
    if h5py.check_ref_dtype(dtype) is not None:
        want = [_ref_path(f, r) for r in np.asarray(expected).ravel()]
        assert np.asarray(actual, dtype=object).ravel().tolist() == want, what
        assert array.attrs["_DTYPE"] == "object_reference"
        return
    if dtype.names is not None:
        _compare_struct(np.asarray(actual), np.asarray(expected), f, what, array)
        return
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    assert actual.dtype.kind == expected.dtype.kind, what
    native = expected.dtype.newbyteorder("=") if expected.dtype.kind != "V" else expected.dtype
    assert_array_equal_exact(actual.astype(native), expected.astype(native), what)
    if dset.fillvalue is not None and dtype.kind in "iufb" and not extra:
        fill = np.asarray(array.fill_value).astype(native)
        assert_array_equal_exact(fill, np.asarray(dset.fillvalue).astype(native), f"{what} fill")
    assert array.attrs["_DTYPE"] == native.type.__name__


def _compare_struct(
    actual: np.ndarray, expected: np.ndarray, f: h5py.File, what: str, array: Any
) -> None:
    assert actual.shape == expected.shape, what
    assert list(actual.dtype.names or ()) == list(expected.dtype.names or ()), what
    for name in expected.dtype.names or ():
        field = expected.dtype.fields[name][0]
        got, want = actual[name], expected[name]
        if h5py.check_ref_dtype(field) is not None:
            assert [str(v) for v in got.ravel()] == [_ref_path(f, r) for r in want.ravel()], what
            assert name in array.attrs["_REFERENCE_FIELDS"]
        elif h5py.check_string_dtype(field) is not None:
            assert [str(v) for v in got.ravel()] == [_text(v) for v in want.ravel()], what
        elif field.names is not None:
            _compare_struct(got, want, f, f"{what}[{name}]", array)
        else:
            native = field.newbyteorder("=")
            assert_array_equal_exact(got.astype(native), want.astype(native), f"{what}[{name}]")


def _text(value: Any) -> str:
    if isinstance(value, bytes | np.bytes_):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(value).decode("latin-1")
    return str(value)


def _ref_path(f: h5py.File, ref: Any) -> str:
    if not ref:
        return ""
    try:
        return f[ref].name or ""
    except KeyError:  # a dangling reference (its target was deleted) reads as null
        return ""


def compare_attributes(obj: Any, node: Any, f: h5py.File) -> None:
    actual = decode_attributes(dict(node.attrs))
    for key in RESERVED:
        actual.pop(key, None)
    expected = {}
    for key in obj.attrs:
        if key in ("DIMENSION_LIST", "REFERENCE_LIST"):
            continue
        expected[key] = _expected_attribute(obj.attrs[key], f)
        # numbers keep h5py's type and shape (the Attribute Types convention)
        check_number_type(actual.get(key), obj.attrs[key], f"{obj.name} attribute {key!r}")
    plain = {
        k: v.tolist() if isinstance(v, np.ndarray | np.generic) else v for k, v in actual.items()
    }
    assert _same(plain, expected), f"{obj.name}: {actual} != {expected}"
    assert list(actual) == list(expected), f"{obj.name}: attribute order differs from h5py"


def _expected_attribute(value: Any, f: h5py.File) -> Any:
    if isinstance(value, h5py.Empty):
        return None
    if isinstance(value, h5py.Reference):
        return {"_REFERENCE": {"source": ".", "path": _ref_path(f, value)}}
    if isinstance(value, bytes | np.bytes_):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw
    if isinstance(value, np.void) and value.dtype.names is None:
        return bytes(value)
    if isinstance(value, np.void) or (isinstance(value, np.ndarray) and value.dtype.names):
        array = np.asarray(value)
        rows = [{n: _expected_attribute(r[n], f) for n in array.dtype.names} for r in array.ravel()]
        return rows[0] if array.ndim == 0 else rows
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "c":
            return [complex(v) for v in value.ravel()]
        if value.dtype.kind in "OS":
            return [_expected_attribute(v, f) for v in value.ravel()]
        return value.tolist()
    if isinstance(value, complex | np.complexfloating):
        return complex(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return (type(a) is type(b) and a == b) or (
        isinstance(a, int | float) and a == b and not isinstance(a, bool)
    )


REMOTE_CASES = [
    "index_kinds",
    "partial_chunks",
    "strings_vlen",
    "compound_references",
    "contiguous_slabs",
    "matlab_userblock",
    "filter_shuffle_gzip_fletcher32",
    "attributes",
    "many_chunks",
]


@pytest.mark.network
@pytest.mark.parametrize("name", REMOTE_CASES)
def test_generated_over_http_reads_back_equal(
    nginx: Any, nginx_root: Path, open_refs: Any, name: str
) -> None:
    """Headers read over HTTP (nginx): the same references, sizes and ETags recorded."""
    path = write(nginx_root, name, corpus.WRITERS[name], "latest")
    url = nginx.url(path.name)
    rfs = generate_rfs(url, inline_threshold=0, manifest_threshold=50)
    local = generate_rfs(path, inline_threshold=0, manifest_threshold=50)
    info = rfs.sources[url]
    assert info.size == path.stat().st_size
    assert info.etag
    for key, ref in local.refs.items():
        remote_ref = rfs.refs[key]
        if hasattr(ref, "url"):
            assert (remote_ref.offset, remote_ref.size) == (ref.offset, ref.size), key
            assert remote_ref.url == url
    assert rfs.indexes.keys() == local.indexes.keys()
    for array, index in local.indexes.items():
        assert np.array_equal(rfs.indexes[array].table, index.table), array
    compare_file(path, open_refs(rfs))


def test_netcdf4_file_opens_in_xarray_identical(tmp_path: Path) -> None:
    """A netCDF-4 file written by h5netcdf: xarray over the references equals xarray over HDF5."""
    import xarray as xr
    from shadowzarr_store import RfsStore

    dataset = xr.Dataset(
        {
            "temperature": (("time", "x"), np.arange(20.0).reshape(5, 4), {"units": "K"}),
            "no_coordinate": (("y",), np.arange(3.0)),
            "counts": (("x",), np.arange(4, dtype="i4")),
        },
        coords={"time": np.arange(5.0), "x": [10, 20, 30, 40]},
        attrs={"title": "netCDF through shadowzarr"},
    )
    path = tmp_path / "climate.nc"
    dataset.to_netcdf(path, engine="h5netcdf", encoding={"counts": {"_FillValue": -1}})
    rfs = generate_rfs(path)
    with xr.open_dataset(path, engine="h5netcdf") as expected:
        actual = xr.open_dataset(RfsStore(rfs), engine="shadowzarr")
        xr.testing.assert_identical(actual.load(), expected.load())


@pytest.mark.network
def test_local_copy_with_remote_url(nginx: Any, nginx_root: Path, open_refs: Any) -> None:
    """Headers read from a local copy, references and source check pointing at the URL,
    which generation never asks (the copy's size is recorded; the ETag stays unknown)."""
    served = write(nginx_root, "partial_chunks", corpus.WRITERS["partial_chunks"])
    url = nginx.url(served.name)
    nginx.reset()
    rfs = generate_rfs(url, local_hdf5_path=served, inline_threshold=0)
    assert nginx.count() == 0
    assert {ref.url for ref in rfs.refs.values() if hasattr(ref, "url")} == {url}
    assert rfs.sources[url].size == served.stat().st_size
    assert rfs.sources[url].etag is None
    compare_file(served, open_refs(rfs))


def test_local_copy_of_a_dead_url_is_used_without_asking_it(tmp_path: Path) -> None:
    """A URL whose server is gone cost six retries with backoff per file before the copy's
    size was used; now nothing connects to it at all."""
    path = write(tmp_path, "bool", corpus.WRITERS["bool"])
    with _CountingListener() as listener:
        url = f"http://127.0.0.1:{listener.port}/gone.h5"
        started = time.monotonic()
        rfs = generate_rfs(url, local_hdf5_path=path, inline_threshold=0)
        elapsed = time.monotonic() - started
    assert listener.accepted == 0
    assert elapsed < 2
    assert {ref.url for ref in rfs.refs.values() if hasattr(ref, "url")} == {url}
    assert rfs.sources[url].size == path.stat().st_size
    assert rfs.sources[url].etag is None


class _CountingListener:
    """A loopback port that counts the connections made to it and closes each at once."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.05)
        self.port = self._socket.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            connection.close()

    def __enter__(self) -> _CountingListener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._socket.close()


def test_members_keep_creation_order(tmp_path: Path, open_refs: Any) -> None:
    """A group that tracks creation order lists its members in that order in zarr too."""
    path = tmp_path / "ordered.h5"
    names = ["zeta", "alpha", "mid", "beta"]
    with h5py.File(path, "w", track_order=True) as f:
        group = f.create_group("ordered", track_order=True)
        for index, name in enumerate(names):
            if index % 2:
                group.create_group(name, track_order=True)
            else:
                group.create_dataset(name, data=np.arange(3))
        expected = list(f["ordered"])
    assert expected == names
    root = open_refs(generate_rfs(path))
    assert [name for name, _ in root["ordered"].members()] == names


def test_netcdf_attributes_of_one_element_are_scalars(tmp_path: Path) -> None:
    """scale_factor [0.5] is 0.5, as h5netcdf gives it: xarray decodes it the same way."""
    import xarray as xr
    from shadowzarr_store import RfsStore

    values = np.arange(24.0).reshape(4, 6) / 4
    dataset = xr.Dataset({"packed": (("y", "x"), values, {"valid_range": [0.0, 10.0]})})
    path = tmp_path / "packed.nc"
    encoding = {
        "packed": {"dtype": "i2", "scale_factor": 0.25, "add_offset": 1.0, "_FillValue": -1}
    }
    dataset.to_netcdf(path, engine="h5netcdf", encoding=encoding)
    rfs = generate_rfs(path)
    store = RfsStore(rfs)
    raw = xr.open_zarr(store, consolidated=True, zarr_format=3, mask_and_scale=False)
    assert raw["packed"].attrs["scale_factor"] == 0.25
    assert raw["packed"].attrs["valid_range"] == [0.0, 10.0]
    with xr.open_dataset(path, engine="h5netcdf") as expected:
        actual = xr.open_dataset(store, engine="shadowzarr")
        assert actual["packed"].dtype == expected["packed"].dtype == np.float64
        xr.testing.assert_identical(actual.load(), expected.load())
