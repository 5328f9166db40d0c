"""The shadowzarr command driven as a user drives it: a subprocess, real files, real servers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from shadowzarr_spec import RfsBuilder, read_local_rfs, write_rfs

SCRIPT = Path(sys.executable).with_name("shadowzarr")


def shadowzarr(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=300, cwd=cwd, check=False
    )


def assert_clean_error(result: subprocess.CompletedProcess[str], *, contains: str) -> None:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert contains in lines[0]


@pytest.fixture
def raw_refs(tmp_path: Path) -> tuple[Path, np.ndarray]:
    values = np.arange(400, dtype="<i4").reshape(100, 4)
    raw = tmp_path / "raw.bin"
    raw.write_bytes(values.tobytes())
    builder = RfsBuilder()
    builder.add_group("", {"title": "raw"})
    builder.add_array("signal", shape=[100, 4], data_type="<i4", chunk_shape=[10, 4])
    builder.add_contiguous_chunks(
        "signal", url=str(raw), start=0, shape=[100, 4], chunk_shape=[10, 4], itemsize=4
    )
    builder.add_source(str(raw), size=raw.stat().st_size)
    path = write_rfs(builder.build(), tmp_path / "raw.shadowzarr")
    return path, values


def test_help_lists_every_subcommand() -> None:
    result = shadowzarr("--help")
    assert result.returncode == 0
    for command in ("generate", "info", "get", "check", "materialize", "convert", "cache", "demo"):
        assert command in result.stdout
    assert "examples:" in result.stdout


def test_info_tree_and_json(raw_refs: tuple[Path, np.ndarray]) -> None:
    path, _ = raw_refs
    result = shadowzarr("info", str(path))
    assert result.returncode == 0, result.stderr
    assert "signal  int32 (100, 4) chunks (10, 4) [bytes] 10 of 10 chunks" in result.stdout
    document = json.loads(shadowzarr("info", str(path), "--json").stdout)
    (signal,) = [n for n in document["nodes"] if n["path"] == "signal"]
    assert signal["shape"] == [100, 4]
    assert document["version"] == 2


def test_convert_round_trip(raw_refs: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    path, _ = raw_refs
    single = tmp_path / "one.json"
    assert shadowzarr("convert", str(path), str(single)).returncode == 0
    assert json.loads(single.read_text())["version"] == 1
    back = tmp_path / "back.shadowzarr"
    assert shadowzarr("convert", str(single), str(back)).returncode == 0
    assert read_local_rfs(back).refs.keys() == read_local_rfs(single).refs.keys()


def test_get_prints_and_saves(raw_refs: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    path, values = raw_refs
    out = tmp_path / "x.npy"
    result = shadowzarr("get", str(path), "signal", "5:25, 1", "-o", str(out))
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(out), values[5:25, 1])
    printed = shadowzarr("get", str(path), "signal", "0, :")
    assert printed.stdout.split() == ["[0", "1", "2", "3]"]


def test_check_notices_a_changed_local_source(
    raw_refs: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    path, _ = raw_refs
    ok = shadowzarr("check", str(path))
    assert ok.returncode == 0
    assert ok.stdout.startswith("ok")
    with open(tmp_path / "raw.bin", "ab") as stream:
        stream.write(b"more")
    changed = shadowzarr("check", str(path))
    assert changed.returncode == 1
    assert "CHANGED" in changed.stdout
    assert "size 1604 != recorded 1600" in changed.stdout


def test_check_and_get_over_nginx(nginx, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    values = np.arange(64, dtype="<u2")
    nginx.write_file("data.bin", values.tobytes())
    url = nginx.url("data.bin")
    etag = __import__("urllib.request").request.urlopen(url).headers["ETag"]
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array("v", shape=[64], data_type="<u2", chunk_shape=[16])
    builder.add_contiguous_chunks("v", url=url, start=0, shape=[64], chunk_shape=[16], itemsize=2)
    builder.add_source(url, size=128, etag=etag)
    refs = write_rfs(builder.build(), tmp_path / "v.json")
    assert shadowzarr("check", str(refs)).returncode == 0
    out = tmp_path / "v.npy"
    assert shadowzarr("get", str(refs), "v", "::3", "-o", str(out)).returncode == 0
    np.testing.assert_array_equal(np.load(out), values[::3])
    nginx.write_file("data.bin", values[::-1].tobytes())
    assert shadowzarr("check", str(refs)).returncode == 1
    assert_clean_error(shadowzarr("get", str(refs), "v"), contains="changed")


@pytest.mark.parametrize(
    ("args", "contains"),
    [
        (("info", "no/such/refs.json"), "no reference file"),
        (("get", "no/such/refs.json", "x"), "no reference file"),
        (("convert", "no/such/refs.json", "out.json"), "no reference file"),
        (("generate", "no/such/file.h5", "-o", "out.json"), "no such source file"),
    ],
)
def test_missing_files_are_one_line_errors(
    args: tuple[str, ...], contains: str, tmp_path: Path
) -> None:
    assert_clean_error(shadowzarr(*args, cwd=tmp_path), contains=contains)


def test_corrupt_refs_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "refs": {"a": ["f", -3, 4]}}')
    assert_clean_error(shadowzarr("info", str(bad)), contains="out of range")
    bad.write_text("{not json")
    assert_clean_error(shadowzarr("info", str(bad)), contains="not valid JSON")


def test_url_that_404s(nginx, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert_clean_error(
        shadowzarr("info", nginx.url("missing/refs.json")), contains="no reference file"
    )
    failed = shadowzarr("generate", nginx.url("missing.h5"), "-o", str(tmp_path / "o.json"))
    assert_clean_error(failed, contains="not found (HTTP 404)")
    assert nginx.url("missing.h5") in failed.stderr  # the message names the URL


def test_usage_errors_exit_2() -> None:
    assert shadowzarr("get").returncode == 2
    assert shadowzarr("nonsense").returncode == 2


def write_h5(path: Path, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    data = {"a": rng.normal(size=(50, 3)), "b/c": rng.integers(0, 100, size=(20,), dtype=np.int16)}
    with h5py.File(path, "w") as handle:
        handle.create_dataset("a", data=data["a"], chunks=(10, 3), compression="gzip")
        handle.create_dataset("b/c", data=data["b/c"])
    return data


def test_generate_one_file_then_read(tmp_path: Path) -> None:
    values = write_h5(tmp_path / "one.h5", 1)
    out = tmp_path / "one.shadowzarr"
    result = shadowzarr("generate", str(tmp_path / "one.h5"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    npy = tmp_path / "a.npy"
    assert shadowzarr("get", str(out), "a", "-o", str(npy)).returncode == 0
    np.testing.assert_array_equal(np.load(npy), values["a"])


@pytest.mark.parametrize("version", [1, 2])
def test_generate_a_netcdf3_file(tmp_path: Path, version: int) -> None:
    """A ``.nc`` file holding netCDF-3 (not HDF5) is told by its magic and generated."""
    from scipy.io import netcdf_file

    values = np.arange(30, dtype="i2").reshape(10, 3)
    with netcdf_file(tmp_path / "classic.nc", "w", version=version) as nc:
        nc.createDimension("time", None)
        nc.createDimension("x", 3)
        nc.createVariable("counts", "i2", ("time", "x"))[:] = values
        nc.createVariable("other", "f8", ("time",))[:] = np.arange(10.0)
    out = tmp_path / "classic.shadowzarr"
    result = shadowzarr("generate", str(tmp_path / "classic.nc"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    npy = tmp_path / "counts.npy"
    assert shadowzarr("get", str(out), "counts", "-o", str(npy)).returncode == 0
    np.testing.assert_array_equal(np.load(npy), values)


def test_generate_a_folder_in_parallel(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    expected = {f"f{i}": write_h5(folder / f"f{i}.h5", i) for i in range(3)}
    out = tmp_path / "refs"
    result = shadowzarr("generate", str(folder), "-o", str(out), "--workers", "2")
    assert result.returncode == 0, result.stderr
    for name, values in expected.items():
        npy = tmp_path / f"{name}.npy"
        assert (
            shadowzarr("get", str(out / f"{name}.shadowzarr"), "b/c", "-o", str(npy)).returncode
            == 0
        )
        np.testing.assert_array_equal(np.load(npy), values["b/c"])


def test_materialize_then_read_without_sources(
    raw_refs: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    path, values = raw_refs
    dest = tmp_path / "out.zarr"
    result = shadowzarr("materialize", str(path), str(dest), "--verify")
    assert result.returncode == 0, result.stderr
    assert "rewritten signal" in result.stdout
    (tmp_path / "raw.bin").unlink()
    import zarr

    np.testing.assert_array_equal(zarr.open_array(dest, path="signal", mode="r")[:], values)


def test_cache_info_and_clear(tmp_path: Path) -> None:
    info = shadowzarr("cache", "info", "--path", str(tmp_path / "cache"))
    assert info.returncode == 0, info.stderr
    assert "0 chunks" in info.stdout
    assert shadowzarr("cache", "clear", "--path", str(tmp_path / "cache")).returncode == 0


@pytest.mark.slow
def test_demo_runs_offline() -> None:
    result = shadowzarr("demo", "--seconds", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "values equal to h5py's: yes" in result.stdout
    assert "NWBZarrIO(RfsStore(read_local_rfs(refs)))" in result.stdout


def test_generate_from_a_list_file(tmp_path: Path) -> None:
    sources = [tmp_path / f"l{i}.h5" for i in range(2)]
    expected = [write_h5(path, 10 + i) for i, path in enumerate(sources)]
    listing = tmp_path / "sources.txt"
    listing.write_text("# two files\n" + "\n".join(str(p) for p in sources) + "\n")
    out = tmp_path / "listed"
    result = shadowzarr("generate", f"@{listing}", "-o", str(out), "--json-files", "--workers", "1")
    assert result.returncode == 0, result.stderr
    for path, values in zip(sources, expected, strict=True):
        npy = tmp_path / f"{path.stem}.npy"
        refs = out / f"{path.stem}.shadowzarr.json"
        assert shadowzarr("get", str(refs), "a", "-o", str(npy)).returncode == 0
        np.testing.assert_array_equal(np.load(npy), values["a"])


def test_generate_every_asset_of_a_dandiset(nginx, make_proxy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    proxy = make_proxy()
    expected = {}
    for i in range(2):
        name = f"sub-{i}.nwb"
        expected[f"asset-{i}"] = write_h5(nginx.path(name), 20 + i)
        proxy.add_asset(f"asset-{i}", name)
    dandiset = proxy.url("api/dandisets/000001/versions/draft/")
    out = tmp_path / "dandiset"
    result = shadowzarr("generate", dandiset, "-o", str(out), "--workers", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    for asset, values in expected.items():
        npy = tmp_path / f"{asset}.npy"
        got = shadowzarr("get", str(out / f"{asset}.shadowzarr"), "b/c", "-o", str(npy))
        assert got.returncode == 0, got.stderr
        np.testing.assert_array_equal(np.load(npy), values["b/c"])


def test_convert_to_icechunk(raw_refs: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    import icechunk
    import zarr

    path, values = raw_refs
    repo_path = tmp_path / "raw.icechunk"
    result = shadowzarr("convert", str(path), str(repo_path))
    assert result.returncode == 0, result.stderr
    storage = icechunk.local_filesystem_storage(str(repo_path))
    config = icechunk.RepositoryConfig.default()
    container = f"file://{tmp_path}/"
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(container, icechunk.local_filesystem_store(str(tmp_path)))
    )
    repo = icechunk.Repository.open(
        storage,
        config=config,
        authorize_virtual_chunk_access={container: icechunk.credentials.LocalFileSystemAccess},
    )
    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    np.testing.assert_array_equal(root["signal"][:], values)


def test_version_lists_every_sub_package() -> None:
    import importlib.metadata

    result = shadowzarr("--version")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"shadowzarr {importlib.metadata.version('shadowzarr')}"
    listed = {line.split()[0]: line.split()[1] for line in lines[1:]}
    names = ["spec", "store", "hdf5", "tiff", "neo", "nwb", "icechunk", "catalog"]
    assert listed == {
        f"shadowzarr-{n}": importlib.metadata.version(f"shadowzarr-{n}") for n in names
    }
