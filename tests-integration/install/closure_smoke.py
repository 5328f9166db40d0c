"""Run inside a closure's own environment: import every public module, then one small job of
the target's kind, comparing what the references read with what the native library wrote.

Standalone on purpose (no pytest, nothing from the workspace but the packages under test): the
environment holds only what the distribution declares. The one argument is a JSON request
``{"job", "extras", "members", "modules", "work"}``; the last line printed is a JSON report.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

GENERATORS = ["h5py", "tifffile", "neo", "hdmf", "pynwb", "icechunk", "virtualizarr"]
EXTRA_HINT = re.compile(r"pip install '(shadowzarr(?:-[a-z]+)?)\[([a-z0-9]+)\]'")


def import_public_modules(modules: list[str], extras: list[str]) -> list[str]:
    """Import each module; an umbrella module, or a module that exists only for an extra of
    its own distribution (the store's xarray engine), may refuse with the hint of an extra that
    is not installed here. Returns the modules refused that way."""
    refused = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            hint = EXTRA_HINT.search(str(exc))
            if hint is None:
                raise
            distribution, extra = hint.groups()
            own = distribution.replace("-", "_")
            if not (name.startswith("shadowzarr.") or name.startswith(own + ".")):
                raise
            if extra in extras or "all" in extras:
                raise AssertionError(f"{name} asks for {distribution}[{extra}]") from exc
            refused.append(name)
    return refused


def absent(*names: str) -> None:
    present = [n for n in names if importlib.util.find_spec(n) is not None]
    if present:
        raise AssertionError(f"installed although nothing declares them here: {present}")


def equal(got: object, expected: np.ndarray, what: str) -> None:
    got = np.asarray(got)
    if got.shape != expected.shape or got.dtype != expected.dtype:
        raise AssertionError(
            f"{what}: {got.shape} {got.dtype} != {expected.shape} {expected.dtype}"
        )
    if not np.array_equal(got, expected):
        raise AssertionError(f"{what}: values differ")


def cli(*argv: str) -> str:
    """Run the ``shadowzarr`` command in-process; returns what it printed (exit status 0)."""
    from shadowzarr.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            status = main(list(argv))
        except SystemExit as exc:  # argparse's --version
            status = int(exc.code or 0)
    if status != 0:
        raise AssertionError(f"shadowzarr {' '.join(argv)} exited {status}: {out.getvalue()}")
    return out.getvalue()


def cli_error(*argv: str) -> str:
    """Run the command expecting it to fail with one line on stderr; returns that line."""
    from shadowzarr.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(list(argv))
    if status != 1:
        raise AssertionError(f"shadowzarr {' '.join(argv)} exited {status}, not 1")
    return err.getvalue().strip()


# -- sources written with the native libraries ----------------------------------------------------


def raw_recording(work: Path) -> tuple[Path, np.ndarray]:
    """Interleaved int16 samples of 2 channels, what NEO's raw binary reader reads by default."""
    samples = np.random.default_rng(1).integers(-(2**15), 2**15, (3000, 2), dtype="<i2")
    path = work / "recording.raw"
    path.write_bytes(samples.tobytes())
    return path, samples


def references(work: Path, *, lzf_array: bool = False) -> tuple[Any, np.ndarray]:
    """References built with the spec's builder over a raw file; with ``lzf_array``, also an
    array whose codec (imagecodecs' LZF) a reader-only install lacks."""
    from shadowzarr_spec import RfsBuilder

    path, samples = raw_recording(work)
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array("samples", shape=samples.shape, data_type="<i2", chunk_shape=(1000, 2))
    builder.add_contiguous_chunks(
        "samples", url=str(path), start=0, shape=samples.shape, chunk_shape=(1000, 2), itemsize=2
    )
    if not lzf_array:
        return builder.build(), samples
    builder.add_array(
        "packed",
        shape=(10,),
        data_type="<i2",
        codecs=[
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "imagecodecs_lzf", "configuration": {}},
        ],
    )
    builder.add_chunk("packed", (0,), str(path), 0, 20)
    return builder.build(), samples


def hdf5_file(work: Path) -> tuple[Path, np.ndarray]:
    import h5py

    values = np.arange(6000, dtype="<f4").reshape(200, 30)
    path = work / "data.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("group/values", data=values, chunks=(50, 30), compression="gzip")
    return path, values


def tiff_file(work: Path) -> tuple[Path, np.ndarray]:
    import tifffile

    pages = np.random.default_rng(2).integers(0, 2**16, (3, 40, 30), dtype="<u2")
    path = work / "stack.tif"
    tifffile.imwrite(path, pages, photometric="minisblack", compression="lzw")
    return path, pages


# -- jobs ----------------------------------------------------------------------------------------


def job_spec(work: Path) -> None:
    """Build, write (a directory and one JSON) and load references: numpy, numcodecs, msgspec."""
    absent("zarr", *GENERATORS)
    from shadowzarr_spec import read_local_rfs, rfs_to_json, write_rfs

    rfs, _ = references(work, lzf_array=True)
    expected = rfs_to_json(rfs, expand=True)["refs"]
    for target in (work / "refs.shadowzarr", work / "refs.json"):
        write_rfs(rfs, target)
        if rfs_to_json(read_local_rfs(target), expand=True)["refs"] != expected:
            raise AssertionError(f"{target.name}: the loaded references differ")

    from shadowzarr_spec import VirtualArray

    try:
        VirtualArray.from_rfs(rfs, "samples")
    except ImportError as exc:
        if "shadowzarr-spec[zarr]" not in str(exc):
            raise AssertionError(f"the error names no extra: {exc}") from exc
    else:
        raise AssertionError("VirtualArray.from_rfs ran without zarr-python")


def job_spec_zarr(work: Path) -> None:
    """With zarr-python: the builder checks metadata with it (a codec it lacks is the reader's
    to provide), and VirtualArray.from_rfs works."""
    absent(*GENERATORS, "imagecodecs")
    from shadowzarr_spec import VirtualArray

    rfs, samples = references(work, lzf_array=True)
    virtual = VirtualArray.from_rfs(rfs, "samples")
    if virtual.shape != samples.shape or virtual.dtype != samples.dtype:
        raise AssertionError(f"from_rfs: {virtual.shape} {virtual.dtype}")


def job_store(work: Path) -> None:
    """Read references whose other array needs a codec this install lacks: only that array
    fails, at its first read, with the install hint."""
    absent(*GENERATORS, "imagecodecs", "distributed", "xarray")
    from shadowzarr_spec import UnsupportedFeatureError, write_rfs
    from shadowzarr_store import open_rfs

    rfs, samples = references(work, lzf_array=True)
    write_rfs(rfs, work / "refs.shadowzarr")
    root = open_rfs(work / "refs.shadowzarr")
    equal(root["samples"][...], samples, "samples")
    packed = root["packed"]  # opens: metadata alone needs no codec
    try:
        packed[...]
    except UnsupportedFeatureError as exc:
        if "imagecodecs_lzf" not in str(exc) or "imagecodecs-zarr" not in str(exc):
            raise AssertionError(f"the error does not say what to install: {exc}") from exc
    else:
        raise AssertionError("an array whose codec is missing was read")
    equal(root["samples"][1500:2500], samples[1500:2500], "samples after the refusal")


def job_store_codecs(work: Path) -> None:
    """The store's HDF5 codecs with their decoding library: chunks framed as HDF5's bitshuffle
    filter with LZ4 writes them (imagecodecs encodes), read back through RfsStore."""
    import imagecodecs
    from shadowzarr_spec import RfsBuilder
    from shadowzarr_store import open_rfs

    values = np.arange(4096, dtype="<i4") * 7 - 3000
    path = work / "bitshuffle.bin"
    spans = []
    with path.open("wb") as stream:
        for chunk in values.reshape(4, 1024):
            shuffled = imagecodecs.bitshuffle_encode(chunk.tobytes(), itemsize=4, blocksize=1024)
            block = imagecodecs.lz4_encode(bytes(shuffled))
            framed = (
                chunk.nbytes.to_bytes(8, "big")
                + (1024 * 4).to_bytes(4, "big")
                + len(block).to_bytes(4, "big")
                + bytes(block)
            )
            spans.append((stream.tell(), len(framed)))
            stream.write(framed)
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array(
        "values",
        shape=values.shape,
        data_type="<i4",
        chunk_shape=(1024,),
        codecs=[
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "shadowzarr.hdf5_bitshuffle", "configuration": {"cd_values": [0, 2, 4, 0, 2]}},
        ],
    )
    for i, (offset, size) in enumerate(spans):
        builder.add_chunk("values", (i,), str(path), offset, size)
    equal(open_rfs(builder.build())["values"][...], values, "bitshuffle + LZ4 chunks")


def job_store_dask(work: Path) -> None:
    """materialize over a local Dask cluster (threads, no worker processes)."""
    import zarr
    from distributed import Client, LocalCluster
    from shadowzarr_spec import write_rfs
    from shadowzarr_store import materialize

    rfs, samples = references(work)
    write_rfs(rfs, work / "refs.shadowzarr")
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        materialize(work / "refs.shadowzarr", work / "copy.zarr", client=client)
    equal(zarr.open_group(work / "copy.zarr", mode="r")["samples"][...], samples, "copy")


def job_store_xarray(work: Path) -> None:
    """``xr.open_dataset`` of a reference directory picks the engine ``shadowzarr`` by itself
    (the entry point this extra makes loadable) and reads what the raw file holds."""
    import xarray as xr
    from shadowzarr_spec import RfsBuilder, write_rfs

    path, samples = raw_recording(work)
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array(
        "samples",
        shape=samples.shape,
        data_type="<i2",
        chunk_shape=(1000, 2),
        dimension_names=["time", "channel"],
    )
    builder.add_contiguous_chunks(
        "samples", url=str(path), start=0, shape=samples.shape, chunk_shape=(1000, 2), itemsize=2
    )
    write_rfs(builder.build(), work / "refs.shadowzarr")
    with xr.open_dataset(work / "refs.shadowzarr") as dataset:
        equal(dataset["samples"].values, samples, "xarray")


def job_hdf5(work: Path) -> None:
    """An HDF5 file with an LZF dataset (h5py's own filter): the generator checks one of its
    chunks decoded through imagecodecs against h5py, and both datasets read back."""
    absent("tifffile", "neo", "pynwb", "icechunk")
    import h5py
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_store import open_rfs

    path, values = hdf5_file(work)
    with h5py.File(path, "a") as f:
        f.create_dataset("packed", data=values, chunks=(50, 30), compression="lzf")
    root = open_rfs(generate_rfs(path))
    equal(root["group/values"][...], values, "group/values")
    equal(root["packed"][...], values, "packed")


def job_tiff(work: Path) -> None:
    absent("h5py", "neo", "pynwb", "icechunk")
    from shadowzarr_store import open_rfs
    from shadowzarr_tiff import generate_rfs_tiff

    path, pages = tiff_file(work)
    equal(open_rfs(generate_rfs_tiff(path))["0"][...], pages, "0")


def job_neo(work: Path) -> None:
    absent("tifffile", "pynwb", "icechunk")
    from neo.rawio import RawBinarySignalRawIO
    from shadowzarr_neo import generate_rfs_neo, virtual_arrays_neo
    from shadowzarr_store import open_rfs

    path, samples = raw_recording(work)
    reader = RawBinarySignalRawIO(filename=str(path))
    reader.parse_header()
    equal(reader.get_analogsignal_chunk(0, 0, stream_index=0), samples, "NEO's own read")
    equal(open_rfs(generate_rfs_neo(reader))["0"][...], samples, "0")
    if virtual_arrays_neo(reader)["0"].shape != samples.shape:
        raise AssertionError("virtual_arrays_neo: wrong shape")


def virtual_nwb(work: Path) -> None:
    """A virtual NWB file over a raw recording, read back through NWBZarrIO."""
    from datetime import UTC, datetime

    from hdmf_zarr import NWBZarrIO
    from pynwb import NWBFile, TimeSeries
    from shadowzarr_nwb import write_virtual_nwb
    from shadowzarr_spec import VirtualArray, read_local_rfs
    from shadowzarr_store import RfsStore

    path, samples = raw_recording(work)
    recording = VirtualArray.from_memmap(
        np.memmap(path, dtype="<i2", mode="r", shape=samples.shape)
    )
    nwbfile = NWBFile(
        session_description="closure smoke test",
        identifier="closure-smoke",
        session_start_time=datetime(2026, 1, 1, tzinfo=UTC),
    )
    nwbfile.add_acquisition(
        TimeSeries(name="recording", data=recording.placeholder(), unit="uV", rate=30_000.0)
    )
    target = write_virtual_nwb(nwbfile, work / "session.nwb.shadowzarr")
    with NWBZarrIO(RfsStore(read_local_rfs(target)), mode="r") as nwb_io:
        equal(nwb_io.read().acquisition["recording"].data[:], samples, "acquisition/recording")


def job_nwb(work: Path) -> None:
    """Virtual NWB alone; the bridge names its extra when it needs a generator."""
    absent("shadowzarr_neo", "shadowzarr_tiff", "tifffile", "neo")
    virtual_nwb(work)
    from shadowzarr_nwb.neuroconv_bridge.recordings import recording_array

    class NeoRecording:  # what the bridge reads of a SpikeInterface NEO-based recording
        neo_reader = None
        stream_id = "0"

        def get_channel_ids(self) -> list[str]:
            return ["0", "1"]

        def get_num_samples(self, _segment_index: int) -> int:
            return 3000

    recording = NeoRecording()
    try:
        recording_array(recording)
    except ImportError as exc:
        if "shadowzarr-nwb[neuroconv]" not in str(exc):
            raise AssertionError(f"the bridge's error names no extra: {exc}") from exc
    else:
        raise AssertionError("the bridge ran without shadowzarr-neo")


def job_nwb_neuroconv(work: Path) -> None:
    virtual_nwb(work)
    from shadowzarr_neo import virtual_arrays_neo  # what the bridge calls for recordings
    from shadowzarr_tiff.codecs import codec_chain  # and for TIFF imaging

    del virtual_arrays_neo, codec_chain


def job_icechunk(work: Path) -> None:
    """References → a local Icechunk repository → references again; both read the data."""
    import zarr
    from shadowzarr_icechunk import icechunk_to_rfs, write_icechunk_repository
    from shadowzarr_spec import write_rfs
    from shadowzarr_store import open_rfs

    rfs, samples = references(work)
    write_rfs(rfs, work / "refs.shadowzarr")
    repo = write_icechunk_repository(work / "refs.shadowzarr", work / "refs.icechunk")
    session = repo.readonly_session("main")
    equal(zarr.open_group(session.store, mode="r")["samples"][...], samples, "icechunk")
    equal(open_rfs(icechunk_to_rfs(session))["samples"][...], samples, "icechunk_to_rfs")


def catalog_of(work: Path) -> tuple[Path, dict[str, Any]]:
    """A folder with an HDF5 file, a TIFF file and a text file, and its catalog's rows."""
    import pyarrow.parquet as pq
    from shadowzarr_catalog import generate_catalog
    from shadowzarr_store import open_rfs

    folder = work / "archive"
    folder.mkdir()
    _path, values = hdf5_file(folder)
    if importlib.util.find_spec("tifffile") is not None:
        tiff_file(folder)
    else:  # a TIFF header is all the base install looks at before it skips the file
        (folder / "stack.tif").write_bytes(b"II*\x00\x08\x00\x00\x00" + bytes(64))
    (folder / "notes.txt").write_text("not data")
    summary = generate_catalog(folder, work / "catalog")
    if summary.failures:
        raise AssertionError(f"catalog failures: {summary.failures}")
    rows = {r["asset_id"]: r for r in pq.read_table(work / "catalog/catalog.parquet").to_pylist()}
    if rows["data.h5"]["status"] != "ok":
        raise AssertionError(f"data.h5: {rows['data.h5']}")
    root = open_rfs(work / "catalog" / rows["data.h5"]["reference"])
    equal(root["group/values"][...], values, "data.h5 through the catalog")
    return work / "catalog", rows


def job_catalog(work: Path) -> None:
    """The catalog without extras: HDF5 published, TIFF and text skipped with the hint."""
    absent("tifffile", "neo", "pynwb", "icechunk", "distributed")
    _, rows = catalog_of(work)
    for asset in ("stack.tif", "notes.txt"):
        reason = rows[asset]["error_message"]
        if rows[asset]["status"] != "skipped" or "shadowzarr-catalog[" not in reason:
            raise AssertionError(f"{asset}: {rows[asset]}")


def job_catalog_tiff(work: Path) -> None:
    absent("neo", "pynwb", "icechunk")
    _, rows = catalog_of(work)
    if rows["stack.tif"]["status"] != "ok":
        raise AssertionError(f"stack.tif: {rows['stack.tif']}")


def job_catalog_neo(work: Path) -> None:
    absent("pynwb", "icechunk")
    _, rows = catalog_of(work)
    if "no NEO reader recognises it" not in rows["notes.txt"]["error_message"]:
        raise AssertionError(f"notes.txt: {rows['notes.txt']}")


def job_catalog_dask(work: Path) -> None:
    """The catalog's jobs on a local Dask cluster (threads, no worker processes)."""
    import json as json_module

    from distributed import Client, LocalCluster
    from shadowzarr_catalog import generate_catalog

    (work / "archive").mkdir()
    hdf5_file(work / "archive")
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        summary = generate_catalog(work / "archive", work / "catalog", client=client)
    index = json_module.loads((work / "catalog/index.json").read_text())
    if summary.statuses != {"ok": 1} or list(index) != ["data.h5"]:
        raise AssertionError(f"catalog on a cluster: {summary}")


def cli_checks(work: Path, extras: list[str], members: list[str]) -> None:
    """The umbrella's command: versions, HDF5 generation and reading, the hints for extras."""
    listed = cli("--version")
    if not listed.startswith("shadowzarr ") or "shadowzarr-store 0." not in listed:
        raise AssertionError(f"--version printed {listed!r}")
    path, values = hdf5_file(work)
    cli("generate", str(path), "-o", str(work / "data.shadowzarr"))
    cli("get", str(work / "data.shadowzarr"), "group/values", "10:20", "-o", str(work / "v.npy"))
    equal(np.load(work / "v.npy"), values[10:20], "shadowzarr get")
    if "distributed" not in sys.modules and importlib.util.find_spec("distributed") is None:
        said = cli_error(
            "materialize",
            str(work / "data.shadowzarr"),
            str(work / "m.zarr"),
            "--scheduler",
            "tcp://127.0.0.1:1",
        )
        if "shadowzarr[dask]" not in said:
            raise AssertionError(f"materialize --scheduler without dask said {said!r}")
    if importlib.util.find_spec("matplotlib") is None:
        said = cli_error(
            "layout", str(work / "data.shadowzarr"), "group/values", "--png", str(work / "l.png")
        )
        if "shadowzarr[plot]" not in said:
            raise AssertionError(f"layout --png without matplotlib said {said!r}")
    if "shadowzarr-tiff" not in members:
        import shadowzarr

        try:
            shadowzarr.generate_rfs_tiff  # noqa: B018 - the lazy attribute's import is the test
        except ImportError as exc:
            if "shadowzarr[tiff]" not in str(exc):
                raise AssertionError(f"no hint: {exc}") from exc
        else:
            raise AssertionError("generate_rfs_tiff without shadowzarr-tiff")
    if "shadowzarr-catalog" not in members:
        said = cli_error("catalog", str(work), str(work / "catalog"))
        if "shadowzarr[catalog]" not in said:
            raise AssertionError(f"catalog without shadowzarr-catalog said {said!r}")


def part_tiff(work: Path) -> None:
    from shadowzarr import open_rfs

    path, pages = tiff_file(work)
    cli("generate", str(path), "-o", str(work / "stack.shadowzarr"))
    equal(open_rfs(work / "stack.shadowzarr")["0"][...], pages, "stack")


def part_neo(work: Path) -> None:
    from shadowzarr import open_rfs

    path, samples = raw_recording(work)
    layout = [
        "--dtype",
        "int16",
        "--channels",
        "2",
        "--sampling-rate",
        "10000",
        "--byte-offset",
        "0",
    ]
    cli(
        "generate",
        str(path),
        "--format",
        "neo:RawBinarySignalRawIO",
        *layout,
        "-o",
        str(work / "r.json"),
    )
    equal(open_rfs(work / "r.json")["0"][...], samples, "recording")


def part_nwb(work: Path) -> None:
    virtual_nwb(work)
    from shadowzarr.neuroconv_bridge import virtualize

    del virtualize


def part_icechunk(work: Path) -> None:
    import icechunk
    import zarr
    from shadowzarr.icechunk import icechunk_to_rfs, required_containers
    from shadowzarr_store import open_rfs

    refs = work.parent / "data.shadowzarr"
    cli("convert", str(refs), str(work / "data.icechunk"))
    storage = icechunk.local_filesystem_storage(str(work / "data.icechunk"))
    readable = dict.fromkeys(required_containers(refs), icechunk.credentials.LocalFileSystemAccess)
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=readable)
    session = repo.readonly_session("main")
    expected = open_rfs(refs)["group/values"][...]
    equal(zarr.open_group(session.store, mode="r")["group/values"][...], expected, "icechunk")
    equal(open_rfs(icechunk_to_rfs(session))["group/values"][...], expected, "icechunk_to_rfs")


def part_virtualizarr(work: Path) -> None:
    from shadowzarr.virtualizarr import manifest_store_to_rfs, virtual_array

    del manifest_store_to_rfs, virtual_array
    job_icechunk(work)


def part_dask(work: Path) -> None:
    import zarr
    from distributed import LocalCluster
    from shadowzarr_store import open_rfs

    refs = work.parent / "data.shadowzarr"
    with LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
    ) as cluster:
        address = cluster.scheduler_address
        cli("materialize", str(refs), str(work / "copy.zarr"), "--scheduler", address)
    copied = zarr.open_group(work / "copy.zarr", mode="r")["group/values"][...]
    equal(copied, open_rfs(refs)["group/values"][...], "materialized")


def part_plot(work: Path) -> None:
    """``shadowzarr layout --png``: the picture of where an array's chunks lie (matplotlib)."""
    refs = work.parent / "data.shadowzarr"
    cli("layout", str(refs), "group/values", "--select", "10:20", "--png", str(work / "l.png"))
    if not (work / "l.png").read_bytes().startswith(b"\x89PNG"):
        raise AssertionError("shadowzarr layout --png wrote no PNG")


def part_xarray(work: Path) -> None:
    """The xarray engine, through the umbrella's extra."""
    job_store_xarray(work)


def part_catalog(work: Path) -> None:
    import json as json_module

    from shadowzarr import open_rfs

    (work / "archive").mkdir()
    _path, values = hdf5_file(work / "archive")
    tiff_file(work / "archive")
    printed = cli("catalog", str(work / "archive"), str(work / "catalog"), "-q")
    index = json_module.loads((work / "catalog/index.json").read_text())
    if sorted(index) != ["data.h5", "stack.tif"] or "2 ok" not in printed:
        raise AssertionError(f"catalog printed {printed!r}, index {index}")
    root = open_rfs(work / "catalog" / index["data.h5"])
    equal(root["group/values"][...], values, "data.h5 through shadowzarr catalog")


def part_demo(_work: Path) -> None:
    printed = cli("demo", "--seconds", "12", "--latency", "0")
    if "requests" not in printed:
        raise AssertionError(f"the demo printed {printed!r}")


PARTS = {
    "tiff": part_tiff,
    "neo": part_neo,
    "nwb": part_nwb,
    "icechunk": part_icechunk,
    "virtualizarr": part_virtualizarr,
    "dask": part_dask,
    "demo": part_demo,
    "plot": part_plot,
    "xarray": part_xarray,
    "catalog": part_catalog,
}
"""What each extra of the umbrella adds to the command's checks (``all``: every one)."""


def job_cli(work: Path, extras: list[str], members: list[str]) -> None:
    if not extras or extras == ["hdf5"]:
        absent("tifffile", "neo", "pynwb", "icechunk", "distributed", "matplotlib", "xarray")
    cli_checks(work, extras, members)
    for extra in list(PARTS) if "all" in extras else extras:
        if extra in PARTS:
            folder = work / extra
            folder.mkdir()
            PARTS[extra](folder)


JOBS = {
    "spec": job_spec,
    "spec-zarr": job_spec_zarr,
    "store": job_store,
    "store-dask": job_store_dask,
    "store-xarray": job_store_xarray,
    "store-codecs": job_store_codecs,
    "hdf5": job_hdf5,
    "tiff": job_tiff,
    "neo": job_neo,
    "nwb": job_nwb,
    "nwb-neuroconv": job_nwb_neuroconv,
    "icechunk": job_icechunk,
    "catalog": job_catalog,
    "catalog-tiff": job_catalog_tiff,
    "catalog-neo": job_catalog_neo,
    "catalog-dask": job_catalog_dask,
}


def main() -> None:
    request = json.loads(sys.argv[1])
    work = Path(request["work"])
    refused = import_public_modules(request["modules"], request["extras"])
    job = request["job"]
    if job == "cli":
        job_cli(work, request["extras"], request["members"])
    else:
        JOBS[job](work)
    print(json.dumps({"job": job, "imported": len(request["modules"]), "refused": refused}))


if __name__ == "__main__":
    main()
