"""The HDF5 corpus: small files written by h5py, one per feature of the Coverage list.

Each writer gets an open ``h5py.File`` and fills it; ``FILE_OPTIONS`` gives the h5py.File
arguments a writer needs (libver, userblock). Loaded by the corpus test with importlib, since
test modules are not importable by name in importlib mode.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin
import numpy as np

Writer = Callable[[h5py.File, Path], None]
WRITERS: dict[str, Writer] = {}
FILE_OPTIONS: dict[str, dict[str, Any]] = {}
REFUSALS: dict[str, tuple[Writer, str]] = {}


def corpus(name: str, **file_options: Any) -> Callable[[Writer], Writer]:
    def register(writer: Writer) -> Writer:
        WRITERS[name] = writer
        FILE_OPTIONS[name] = file_options
        return writer

    return register


def refusal(name: str, message: str) -> Callable[[Writer], Writer]:
    def register(writer: Writer) -> Writer:
        REFUSALS[name] = (writer, message)
        return writer

    return register


RNG = np.random.default_rng(7)


def _numbers(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    native = np.dtype(dtype)
    if native.kind == "f":
        values = RNG.standard_normal(shape) * 1000
        values.flat[0] = np.nan
        values.flat[-1] = -np.inf
        return values.astype(native)
    if native.kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    info = np.iinfo(native)
    return RNG.integers(info.min, info.max, shape, dtype=native.newbyteorder("="), endpoint=True)


# -- numeric types: every width and both byte orders, contiguous and chunked ----------------------
for _kind in ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"]:

    def _write_numbers(f: h5py.File, _root: Path, kind: str = _kind) -> None:
        for order in "<>":
            dtype = order + kind
            data = _numbers(dtype, (37, 5))
            f.create_dataset(f"contiguous_{order == '<'}", data=data, dtype=dtype)
            f.create_dataset(f"chunked_{order == '<'}", data=data, dtype=dtype, chunks=(8, 2))
            f.create_dataset(f"scalar_{order == '<'}", data=data.flat[1], dtype=dtype)

    corpus(f"numeric_{_kind}")(_write_numbers)


@corpus("bool")
def _bool(f: h5py.File, _root: Path) -> None:
    f.create_dataset("flags", data=_numbers("?", (50,)))
    f.create_dataset("flags_chunked", data=_numbers("?", (50, 3)), chunks=(7, 3))


@corpus("enum")
def _enum(f: h5py.File, _root: Path) -> None:
    dtype = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="i2")
    f.create_dataset("colors", data=np.array([0, 1, 42, 1] * 10, dtype="i2"), dtype=dtype)
    big = h5py.enum_dtype({"A": 1, "B": 2}, basetype=">u4")
    f.create_dataset("big", data=np.array([1, 2] * 9, dtype=">u4"), dtype=big, chunks=(4,))


@corpus("complex")
def _complex(f: h5py.File, _root: Path) -> None:
    values = RNG.standard_normal(40) + 1j * RNG.standard_normal(40)
    f.create_dataset("c8", data=values.astype("<c8"))
    f.create_dataset("c16", data=values.astype("<c16"), chunks=(7,))
    f.create_dataset("c16_big", data=values.astype(">c16"))


@corpus("strings_fixed")
def _strings_fixed(f: h5py.File, _root: Path) -> None:
    f.create_dataset("ascii", data=np.array([b"alpha", b"be", b"", b"gamma!"], dtype="S6"))
    utf8 = h5py.string_dtype("utf-8", 12)
    dset = f.create_dataset("utf8", shape=(3,), dtype=utf8)
    encoded = np.array([t.encode() for t in ["é", "日本", "x"]], dtype="S12")
    dset.id.write(h5py.h5s.ALL, h5py.h5s.ALL, encoded, mtype=dset.id.get_type())
    f.create_dataset("scalar", data=np.bytes_(b"just one"))
    f.create_dataset("chunked", data=np.array([b"%03d" % i for i in range(50)]), chunks=(16,))


@corpus("strings_vlen")
def _strings_vlen(f: h5py.File, _root: Path) -> None:
    f.create_dataset("utf8", data=["héllo", "wörld", "", "日本語"], dtype=h5py.string_dtype())
    ascii_type = h5py.string_dtype("ascii")
    f.create_dataset("ascii", data=[b"a", b"bc", b"def"], dtype=ascii_type)
    f.create_dataset("scalar", data="a scalar string", dtype=h5py.string_dtype())
    f.create_dataset("matrix", data=[["a", "b"], ["c", "d"], ["e", ""]], dtype=h5py.string_dtype())


@corpus("strings_large")
def _strings_large(f: h5py.File, _root: Path) -> None:
    words = [f"word number {i} " * (i % 7 + 1) for i in range(2000)]
    f.create_dataset("many", data=words, dtype=h5py.string_dtype(), chunks=(500,))
    f.create_dataset("text", data="x" * 10_000, dtype=h5py.string_dtype())


@corpus("opaque")
def _opaque(f: h5py.File, _root: Path) -> None:
    raw = np.frombuffer(RNG.bytes(7 * 20), dtype="V7")
    f.create_dataset("blobs", data=raw)
    f.create_dataset("blobs_chunked", data=raw, chunks=(6,))


@corpus("array_type")
def _array_type(f: h5py.File, _root: Path) -> None:
    dtype = np.dtype(("<f4", (3,)))
    data = RNG.standard_normal((10, 3)).astype("<f4")
    dset = f.create_dataset("vectors", shape=(10,), dtype=dtype)
    dset[...] = data
    dset = f.create_dataset(
        "vectors_chunked", shape=(10,), dtype=np.dtype((">i2", (2, 2))), chunks=(4,)
    )
    dset[...] = np.arange(40, dtype=">i2").reshape(10, 2, 2)


@corpus("compound")
def _compound(f: h5py.File, _root: Path) -> None:
    dtype = np.dtype([("id", "<i4"), ("x", "<f8"), ("flag", "u1")])
    data = np.array([(i, i / 3, i % 2) for i in range(25)], dtype=dtype)
    f.create_dataset("table", data=data)
    f.create_dataset("table_chunked", data=data, chunks=(6,), compression="gzip")
    f.create_dataset("record", data=data[3])


@corpus("compound_nested")
def _compound_nested(f: h5py.File, _root: Path) -> None:
    point = np.dtype([("x", "<f4"), ("y", "<f4")])
    dtype = np.dtype([("name_id", "<u2"), ("where", point), ("when", "<i8")])
    data = np.zeros(12, dtype=dtype)
    data["name_id"] = np.arange(12)
    data["where"]["x"] = np.linspace(0, 1, 12)
    data["where"]["y"] = -data["where"]["x"]
    data["when"] = 10**12 + np.arange(12)
    f.create_dataset("nested", data=data, chunks=(5,))


@corpus("compound_strings")
def _compound_strings(f: h5py.File, _root: Path) -> None:
    dtype = np.dtype([("label", h5py.string_dtype()), ("fixed", "S4"), ("value", "<f8")])
    data = np.array([("first", b"ab", 1.5), ("sécond", b"cdef", -2.0), ("", b"", 0.0)], dtype=dtype)
    f.create_dataset("labels", data=data)


@corpus("compound_padded")
def _compound_padded(f: h5py.File, _root: Path) -> None:
    dtype = np.dtype([("a", "u1"), ("b", "<f8"), ("c", "<i2")], align=True)
    data = np.zeros(9, dtype=dtype)
    data["a"], data["b"], data["c"] = np.arange(9), np.arange(9) / 2, -np.arange(9)
    f.create_dataset("aligned", data=data)
    mixed = np.dtype([("le", "<i4"), ("be", ">i4")])
    values = np.zeros(5, dtype=mixed)
    values["le"], values["be"] = np.arange(5), np.arange(5) * 1000
    f.create_dataset("mixed_order", data=values)


@corpus("references")
def _references(f: h5py.File, _root: Path) -> None:
    group = f.create_group("targets/group")
    dset = f.create_dataset("targets/data", data=np.arange(30).reshape(6, 5))
    refs = f.create_dataset("refs", shape=(3,), dtype=h5py.ref_dtype)
    refs[0], refs[1], refs[2] = group.ref, dset.ref, f.ref
    f.create_dataset("scalar_ref", data=dset.ref, dtype=h5py.ref_dtype)
    regions = f.create_dataset("regions", shape=(2,), dtype=h5py.regionref_dtype)
    regions[0] = dset.regionref[1:3, 2:4]
    regions[1] = dset.regionref[...]
    f.attrs["ref_attr"] = dset.ref
    f.attrs.create("ref_list", data=[group.ref, dset.ref], dtype=h5py.ref_dtype)


@corpus("compound_references")
def _compound_references(f: h5py.File, _root: Path) -> None:
    target = f.create_dataset("series/a", data=np.arange(10.0))
    other = f.create_group("series/b")
    dtype = np.dtype([("idx_start", "<i4"), ("count", "<i4"), ("timeseries", h5py.ref_dtype)])
    table = f.create_dataset("table", shape=(3,), dtype=dtype)
    table[0] = (0, 5, target.ref)
    table[1] = (5, 5, other.ref)
    table[2] = (-1, -1, target.ref)


@corpus("attributes")
def _attributes(f: h5py.File, _root: Path) -> None:
    node = f.create_group("node")
    attrs = node.attrs
    for kind in ["i1", "u2", "<i4", ">i8", "<f2", ">f4", "f8"]:
        attrs[f"scalar_{kind}"] = np.array(3, dtype=kind)[()]
        attrs[f"array_{kind}"] = np.arange(4, dtype=kind)
    attrs["matrix"] = np.arange(6.0).reshape(2, 3)
    attrs["nan"] = np.nan
    attrs["inf_list"] = np.array([1.0, np.inf, -np.inf, np.nan])
    attrs["text"] = "plain text"
    attrs["text_like_nan"] = "NaN"
    attrs["text_like_bytes"] = "base64:not really"
    attrs["fixed_ascii"] = np.bytes_(b"fixed")
    attrs["non_utf8"] = np.bytes_(b"\xff\xfe latin")
    attrs["vlen_list"] = np.array(["a", "bé"], dtype=h5py.string_dtype())
    attrs["bool"] = np.bool_(True)
    attrs["complex"] = np.complex128(1 + 2j)
    attrs.create("opaque", data=np.void(b"\x00\x01\x02\xff"))
    attrs.create("empty", data=h5py.Empty("f4"))
    compound = np.dtype([("a", "<i4"), ("b", "<f8")])
    attrs.create("compound", data=np.array((1, 2.5), dtype=compound))
    attrs.create("compound_list", data=np.array([(1, 2.5), (3, 4.5)], dtype=compound))
    attrs.create(
        "enum", data=np.array(2, dtype="i1"), dtype=h5py.enum_dtype({"a": 1, "b": 2}, "i1")
    )
    f.attrs["root_attr"] = 1
    f.create_dataset("with_attrs", data=np.arange(3)).attrs["unit"] = "volt"


# -- filters -------------------------------------------------------------------------------------
_FILTERS: dict[str, dict[str, Any]] = {
    "gzip": {"compression": "gzip", "compression_opts": 9},
    "shuffle_gzip": {"compression": "gzip", "shuffle": True},
    "fletcher32": {"fletcher32": True},
    "shuffle_gzip_fletcher32": {"compression": "gzip", "shuffle": True, "fletcher32": True},
    "lzf": {"compression": "lzf"},
    "shuffle_lzf": {"compression": "lzf", "shuffle": True},
    "blosc_lz4": dict(hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE)),
    "blosc_zstd_bitshuffle": dict(
        hdf5plugin.Blosc(cname="zstd", clevel=3, shuffle=hdf5plugin.Blosc.BITSHUFFLE)
    ),
    "zstd": dict(hdf5plugin.Zstd(clevel=5)),
    "lz4": dict(hdf5plugin.LZ4()),
}
for _name, _kwargs in _FILTERS.items():

    def _write_filtered(f: h5py.File, _root: Path, kwargs: dict[str, Any] = _kwargs) -> None:
        # Chunks that divide the shape: LZF compresses zero-padded edge chunks beyond 8:1.
        ints = RNG.integers(-(2**30), 2**30, (100, 50), dtype="<i4")
        f.create_dataset("i4", data=ints, chunks=(25, 10), **kwargs)
        f.create_dataset("f8", data=RNG.standard_normal((80,)), chunks=(16,), **kwargs)

    corpus(f"filter_{_name}")(_write_filtered)


@corpus("lzf_highly_compressible")
def _lzf_compressible(f: h5py.File, _root: Path) -> None:
    """Zeros, constant runs and zero-padded edge chunks: compressed beyond 8:1."""
    f.create_dataset("zeros", data=np.zeros(5000, dtype="<i4"), chunks=(1000,), compression="lzf")
    ramp = np.arange(100 * 50, dtype="<i4").reshape(100, 50)
    f.create_dataset("edges", data=ramp, chunks=(30, 20), compression="lzf", shuffle=True)
    runs = np.repeat(np.arange(10, dtype="<f8"), 500)
    f.create_dataset("runs", data=runs, chunks=(700,), compression="lzf", fillvalue=np.nan)
    sparse = f.create_dataset("sparse", shape=(4000,), chunks=(500,), dtype="<i2", fillvalue=7,
                              compression="lzf")  # fmt: skip
    sparse[1000:1500] = 7
    sparse[2000:2010] = 1


@corpus("filter_mask_skipped")
def _filter_mask(f: h5py.File, _root: Path) -> None:
    dset = f.create_dataset(
        "data", shape=(40,), dtype="<i4", chunks=(10,), compression="gzip", shuffle=True,
        fillvalue=-1,
    )  # fmt: skip
    dset[0:10] = np.arange(10)
    raw = np.arange(10, 20, dtype="<i4").tobytes()
    # shuffle (filter 0) applied by hand, deflate (filter 1) skipped: mask bit 1.
    shuffled = np.frombuffer(raw, dtype="u1").reshape(-1, 4).T.tobytes()
    dset.id.write_direct_chunk((10,), shuffled, filter_mask=0b10)
    dset.id.write_direct_chunk((20,), raw, filter_mask=0b11)


# -- layouts -------------------------------------------------------------------------------------
@corpus("btree_v1", libver="earliest")
def _btree_v1(f: h5py.File, _root: Path) -> None:
    f.create_dataset("grid", data=np.arange(60 * 70).reshape(60, 70), chunks=(7, 9))
    f.create_dataset("grown", shape=(5, 5), maxshape=(None, None), chunks=(2, 2), dtype="f4")
    f["grown"].resize((13, 6))
    f["grown"][...] = np.arange(78, dtype="f4").reshape(13, 6)


@corpus("index_kinds", libver="latest")
def _index_kinds(f: h5py.File, _root: Path) -> None:
    data = np.arange(50 * 40, dtype="<i2").reshape(50, 40)
    f.create_dataset("fixed_array", data=data, chunks=(6, 7))
    f.create_dataset("single_chunk", data=data, chunks=(50, 40), compression="gzip")
    f.create_dataset("implicit_like", data=data, chunks=(10, 10))
    ea = f.create_dataset(
        "extensible_first", shape=(0, 40), maxshape=(None, 40), chunks=(4, 8), dtype="<i2"
    )
    for start in range(0, 50, 9):
        ea.resize((min(50, start + 9), 40))
        ea[start : start + 9] = data[start : start + 9]
    eb = f.create_dataset(
        "extensible_second", shape=(12, 0), maxshape=(12, None), chunks=(4, 4), dtype="<i2"
    )
    eb.resize((12, 30))
    eb[...] = data[:12, :30]
    bt = f.create_dataset(
        "btree_v2",
        shape=(0, 0),
        maxshape=(None, None),
        chunks=(5, 5),
        dtype="<i2",
        compression="gzip",
    )
    bt.resize((50, 40))
    bt[...] = data
    cube = f.create_dataset(
        "extensible_middle", shape=(6, 0, 5), maxshape=(6, None, 5), chunks=(2, 2, 2), dtype="<f4"
    )
    for step in range(1, 4):
        cube.resize((6, 3 * step, 5))
        cube[:, 3 * (step - 1) : 3 * step] = np.arange(90, dtype="<f4").reshape(6, 3, 5) + step


@corpus("partial_chunks")
def _partial(f: h5py.File, _root: Path) -> None:
    dset = f.create_dataset(
        "sparse", shape=(100, 100), chunks=(10, 10), dtype="<f4", fillvalue=np.float32(-7.5)
    )
    dset[0:10, 0:10] = 1.0
    dset[55:57, 91:99] = 2.0
    dset = f.create_dataset("edges", data=np.arange(23 * 17).reshape(23, 17), chunks=(5, 4))
    f.create_dataset("never_written", shape=(30,), chunks=(10,), dtype="i8", fillvalue=99)
    shrink = f.create_dataset("shrunk", data=np.arange(50), chunks=(10,), maxshape=(None,))
    shrink.resize((25,))


@corpus("fill_values")
def _fill_values(f: h5py.File, _root: Path) -> None:
    f.create_dataset("int_fill", shape=(20,), dtype="<u2", chunks=(5,), fillvalue=65535)[:5] = 1
    f.create_dataset("nan_fill", shape=(20,), dtype="<f8", chunks=(5,), fillvalue=np.nan)[5:10] = 2
    f.create_dataset("contiguous_unallocated", shape=(1000,), dtype="<i4", fillvalue=3)
    compound = np.dtype([("a", "<i4"), ("b", "<f4")])
    f.create_dataset(
        "compound_fill", shape=(8,), dtype=compound, chunks=(4,),
        fillvalue=np.array((5, 1.5), dtype=compound),
    )[:4] = np.zeros(4, dtype=compound)  # fmt: skip


@corpus("contiguous_slabs")
def _contiguous(f: h5py.File, _root: Path) -> None:
    f.create_dataset("divisible", data=np.arange(1200 * 16, dtype="<f8").reshape(1200, 16))
    f.create_dataset("prime_rows", data=np.arange(1009 * 8, dtype=">i4").reshape(1009, 8))
    f.create_dataset("one_d", data=np.arange(50_000, dtype="<u2"))
    f.create_dataset("tail", data=np.arange(4099, dtype="<i8"))


@corpus("compact")
def _compact(f: h5py.File, _root: Path) -> None:
    for name, data in [("ints", np.arange(20, dtype="<i4")), ("floats", np.linspace(0, 1, 9))]:
        space = h5py.h5s.create_simple(data.shape)
        plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        plist.set_layout(h5py.h5d.COMPACT)
        tid = h5py.h5t.py_create(data.dtype)
        h5py.h5d.create(f.id, name.encode(), tid, space, plist).write(
            h5py.h5s.ALL, h5py.h5s.ALL, data
        )


@corpus("empty_and_null")
def _empty(f: h5py.File, _root: Path) -> None:
    f.create_dataset("zero_rows", shape=(0, 4), dtype="<f4")
    f.create_dataset("zero_chunked", shape=(0,), maxshape=(None,), chunks=(10,), dtype="<i4")
    f.create_dataset("null", data=h5py.Empty("<f8"))
    f.create_dataset("empty_strings", shape=(0,), dtype=h5py.string_dtype())


@corpus("scalars")
def _scalars(f: h5py.File, _root: Path) -> None:
    f.create_dataset("int", data=np.int32(-5))
    f.create_dataset("float_be", data=np.array(2.5, dtype=">f8"))
    f.create_dataset("bool", data=np.bool_(True))
    f.create_dataset("compound", data=np.array((1, 2.0), dtype=[("a", "<i2"), ("b", "<f4")]))


@corpus("external_storage")
def _external(f: h5py.File, root: Path) -> None:
    data = np.arange(1000, dtype="<i4")
    (root / "external_one.bin").write_bytes(b"HEADER" + data.tobytes())
    f.create_dataset(
        "one", shape=(1000,), dtype="<i4", external=[(str(root / "external_one.bin"), 6, 4000)]
    )
    rows = np.arange(60 * 4, dtype="<f8").reshape(60, 4)
    parts = [rows[i : i + 20] for i in range(0, 60, 20)]
    external = []
    for i, part in enumerate(parts):
        path = root / f"external_part{i}.bin"
        path.write_bytes(b"\0" * 16 + part.tobytes())
        external.append((str(path), 16, part.nbytes))
    f.create_dataset("segments", shape=(60, 4), dtype="<f8", external=external)


@corpus("many_chunks")
def _many_chunks(f: h5py.File, _root: Path) -> None:
    f.create_dataset(
        "grid",
        data=np.arange(80 * 100, dtype="<i4").reshape(80, 100),
        chunks=(4, 5),
        compression="gzip",
    )
    sparse = f.create_dataset("sparse", shape=(1200,), chunks=(1,), dtype="<i2", fillvalue=-2)
    sparse[::7] = 11


@corpus("matlab_userblock", userblock_size=512)
def _matlab(f: h5py.File, _root: Path) -> None:
    f.attrs["MATLAB_class"] = np.bytes_(b"struct")
    f.create_dataset(
        "x", data=np.arange(300.0).reshape(3, 100).T, chunks=(50, 3), compression="gzip"
    )
    f["x"].attrs["MATLAB_class"] = np.bytes_(b"double")
    f.create_dataset("y", data=np.arange(2000, dtype="<u2"))
    chars = np.array([[ord(c)] for c in "hello"], dtype="<u2")
    f.create_dataset("s", data=chars).attrs["MATLAB_class"] = np.bytes_(b"char")


@corpus("links")
def _links(f: h5py.File, _root: Path) -> None:
    g = f.create_group("a/b")
    d = g.create_dataset("data", data=np.arange(10))
    f["soft"] = h5py.SoftLink("/a/b/data")
    f["a/relative"] = h5py.SoftLink("b")
    f["hard_copy"] = d
    f["a/hard_group"] = g
    f["dangling"] = h5py.SoftLink("/nowhere")
    f["external"] = h5py.ExternalLink("other.h5", "/some/path")
    g["loop"] = f["a"]


@corpus("creation_order_and_dangling")
def _creation_order_and_dangling(f: h5py.File, _root: Path) -> None:
    """Links and attributes kept in creation order (not name order), and references to an
    anonymous dataset, which HDF5 deletes when the file closes: they read as null."""
    ordered = f.create_group("ordered", track_order=True)
    for name in ["zeta", "alpha", "mid"]:
        ordered.create_dataset(name, data=np.arange(3))
        ordered[f"{name}_link"] = h5py.SoftLink(f"/ordered/{name}")
    node = f.create_dataset("node", data=np.arange(4), track_order=True)
    for name in ["z", "a", "m"]:
        node.attrs[name] = len(name)
    hidden = f.create_dataset(None, data=np.arange(5))  # anonymous: deleted at close
    target = ordered["alpha"]
    node.attrs["to_hidden"] = hidden.ref
    node.attrs["mixed"] = np.array([target.ref, hidden.ref], dtype=h5py.ref_dtype)
    refs = f.create_dataset("refs", shape=(4,), dtype=h5py.ref_dtype)  # element 3 stays null
    refs[0], refs[1], refs[2] = target.ref, hidden.ref, target.ref


@corpus("groups")
def _groups(f: h5py.File, _root: Path) -> None:
    for i in range(4):
        g = f.create_group(f"level0_{i}/level1/level2")
        g.attrs["depth"] = 2
        g.attrs["i"] = i
        g.create_dataset("leaf", data=np.full(3, i))
    f.create_group("empty_group")


@corpus("dimension_scales")
def _dimension_scales(f: h5py.File, _root: Path) -> None:
    time = f.create_dataset("time", data=np.arange(10.0))
    time.make_scale("time")
    channel = f.create_dataset("channel", data=np.arange(3))
    channel.make_scale("channel")
    data = f.create_dataset("signal", data=np.arange(30.0).reshape(10, 3))
    data.dims[0].attach_scale(time)
    data.dims[1].attach_scale(channel)
    labelled = f.create_dataset("labelled", data=np.zeros((2, 2)))
    labelled.dims[0].label = "rows"


@corpus("big_endian_chunked_filters")
def _big_endian(f: h5py.File, _root: Path) -> None:
    data = np.arange(3000, dtype=">f4").reshape(100, 30)
    f.create_dataset(
        "be", data=data, chunks=(9, 30), compression="gzip", shuffle=True, fletcher32=True
    )
    f.create_dataset("be_i8", data=np.arange(500, dtype=">i8"), chunks=(64,), compression="lzf")


# -- refused -------------------------------------------------------------------------------------
@corpus("scaleoffset")
def _scaleoffset(f: h5py.File, _root: Path) -> None:
    f.create_dataset("packed", data=np.arange(5000, dtype="i4"), chunks=(1000,), scaleoffset=0)


@corpus("szip")
def _szip(f: h5py.File, _root: Path) -> None:
    f.create_dataset(
        "szipped", data=np.arange(5000, dtype="i4"), chunks=(1000,), compression="szip"
    )


@corpus("zfp")
def _zfp(f: h5py.File, _root: Path) -> None:
    f.create_dataset(
        "zfp", data=np.arange(5000, dtype="f4"), chunks=(1000,), **hdf5plugin.Zfp(rate=8)
    )


@refusal("unknown_filter", r"HDF5 filter 32024 \(SZ3\)")
def _unknown(f: h5py.File, _root: Path) -> None:
    data = np.arange(5000, dtype="f4")
    f.create_dataset("sz3", data=data, chunks=(1000,), **hdf5plugin.SZ3(absolute=1e-2))


@corpus("blosc2")
def _blosc2(f: h5py.File, _root: Path) -> None:
    data = np.arange(5000, dtype="i4")
    f.create_dataset("b2", data=data, chunks=(1000,), **hdf5plugin.Blosc2())


@corpus("vlen_sequence")
def _vlen(f: h5py.File, _root: Path) -> None:
    dset = f.create_dataset("ragged", shape=(2,), dtype=h5py.vlen_dtype("i4"))
    dset[0], dset[1] = [1, 2, 3], [4]
    many = f.create_dataset("ragged_2d", shape=(30, 40), dtype=h5py.vlen_dtype("f8"))
    for i in range(30):
        many[i, i] = np.arange(i * 10) / 7  # big enough for zstd; most elements empty


@corpus("compound_array_fields")
def _compound_arrays(f: h5py.File, _root: Path) -> None:
    """pandas' table format: an index and blocks of values as array fields; netCDF-4's
    character arrays in a compound."""
    table = np.dtype([("index", "<i8"), ("values_block_0", "<f8", (3,)), ("code", "S1", (4,))])
    values = np.zeros(700, table)
    values["index"] = np.arange(700)
    values["values_block_0"] = RNG.standard_normal((700, 3))
    values["code"] = [list(b"abcd")] * 700
    f.create_dataset("table", data=values, chunks=(128,), compression="gzip", shuffle=True)
    nested = np.dtype([("id", ">u2"), ("inner", [("xy", "<f4", (2,)), ("t", "<i2")])])
    f.create_dataset("nested", data=np.ones(5, nested))


@corpus("bitshuffle_lz4")
def _bitshuffle_lz4(f: h5py.File, _root: Path) -> None:
    f.create_dataset(
        "b", data=np.arange(5000, dtype="i4"), chunks=(1000,), **hdf5plugin.Bitshuffle(cname="lz4")
    )


@refusal("long_double", "long double")
def _long_double(f: h5py.File, _root: Path) -> None:
    f.create_dataset("extended", data=np.arange(5, dtype=np.longdouble))


@refusal("lzf_fletcher32_too_compressible", "followed by numcodecs.fletcher32")
def _lzf_fletcher_zeros(f: h5py.File, _root: Path) -> None:
    data = np.zeros(5000, dtype="i4")
    f.create_dataset("zeros", data=data, chunks=(1000,), compression="lzf", fletcher32=True)


@corpus("virtual")
def _virtual(f: h5py.File, root: Path) -> None:
    source = root / "vds_source.h5"
    with h5py.File(source, "w") as s:
        s.create_dataset("x", data=np.arange(10))
    layout = h5py.VirtualLayout(shape=(10,), dtype="i8")
    layout[:] = h5py.VirtualSource(str(source), "x", shape=(10,))
    f.create_virtual_dataset("vds", layout)
