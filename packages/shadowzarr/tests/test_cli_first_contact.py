"""Issue 45's first contact: what a new user tripped on, run as they ran it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from shadowzarr.cli import main

if TYPE_CHECKING:
    from shadowzarr_testing import NginxServer

SCRIPT = Path(sys.executable).with_name("shadowzarr")

HEAVY = ("zarr", "h5py", "numpy", "aiohttp", "numcodecs", "matplotlib", "icechunk", "tifffile")
COMMANDS = ("generate", "info", "get", "layout", "check", "materialize", "convert", "cache", "demo")


class Interrupted(Exception):
    """Stands for a crash in the middle of a copy."""


LAYOUT = ("--dtype", "int16", "--channels", "8", "--sampling-rate", "30000")


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_help_imports_no_heavy_module() -> None:
    """``shadowzarr --help`` and every ``shadowzarr <cmd> --help`` answer without importing
    zarr, numpy, h5py or aiohttp (they took 1.2 s before the first line of help)."""
    probe = textwrap.dedent(
        f"""
        import sys
        from shadowzarr.cli import main
        for argv in [["--help"], *[[command, "--help"] for command in {COMMANDS!r}]]:
            try:
                main(argv)
            except SystemExit as done:
                assert done.code == 0, argv
        loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r}))
        print("LOADED", loaded, file=sys.stderr)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "LOADED []" in result.stderr, result.stderr
    assert "usage: shadowzarr generate" in result.stdout


def test_resumed_materialize_reports_what_was_done_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The steps of a resumed run say which part of ``done`` the interrupted run copied, so
    the bar's rate counts only what this run moves."""
    import numpy as np
    from shadowzarr_spec import RfsBuilder, write_rfs
    from shadowzarr_store import materialize
    from shadowzarr_store.materialize import engine

    values = np.arange(40_000, dtype="<i4").reshape(10_000, 4)
    raw = tmp_path / "raw.bin"
    raw.write_bytes(values.tobytes())
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array("a", shape=[10_000, 4], data_type="<i4", chunk_shape=[500, 4])
    builder.add_contiguous_chunks(
        "a", url=str(raw), start=0, shape=[10_000, 4], chunk_shape=[500, 4], itemsize=4
    )
    refs = write_rfs(builder.build(), tmp_path / "r.shadowzarr")
    dest = tmp_path / "out.zarr"
    real_copy = engine.copy_regions

    async def dying_copy(source, destination, regions, indices, *, concurrency=8, on_done=None):  # type: ignore[no-untyped-def]
        copied = 0

        async def counting(index: int) -> None:
            nonlocal copied
            copied += 1
            if on_done is not None:
                await on_done(index)
            if copied >= 3:
                raise Interrupted

        await real_copy(source, destination, regions, indices, concurrency=1, on_done=counting)

    module = sys.modules["shadowzarr_store.materialize.rewrite"]
    monkeypatch.setattr(module, "copy_regions", dying_copy)
    with pytest.raises(Interrupted):
        materialize(refs, dest, target_chunk_bytes=16_000)
    monkeypatch.setattr(module, "copy_regions", real_copy)
    steps: list = []
    materialize(refs, dest, target_chunk_bytes=16_000, progress=steps.append)
    copies = [step for step in steps if step.phase == "copy"]
    assert copies[0].resumed == copies[0].done == 3 * 16_000  # three regions of 16 kB before
    assert copies[-1].done == values.nbytes
    assert copies[-1].resumed == 3 * 16_000


def test_one_format_bytes() -> None:
    from shadowzarr_spec.units import format_bytes
    from shadowzarr_store.remote import info

    assert format_bytes(2**20) == "1 MiB"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(512) == "512 B"
    assert format_bytes(2**20 - 20) == "1 MiB"  # not "1024 KiB"
    assert format_bytes(1023) == "1023 B"
    assert not hasattr(info, "format_bytes") or info.format_bytes is format_bytes


def test_raw_binary_by_its_layout_alone(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Item 1: the help's own example, no --format: a .bin file with its layout is read as a
    raw binary recording (NEO names no reader for .bin)."""
    import numpy as np
    from shadowzarr_store import open_rfs

    samples = np.arange(8 * 3000, dtype="<i2").reshape(3000, 8)
    (tmp_path / "rec.bin").write_bytes(samples.tobytes())
    out = tmp_path / "rec.shadowzarr"
    result = subprocess.run(
        [str(SCRIPT), "generate", "rec.bin", *LAYOUT, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"wrote {out}"
    root = open_rfs(out)
    ((_, array),) = list(root.arrays())
    np.testing.assert_array_equal(array[:], samples)
    assert array.attrs["neo"]["streams"][0]["sampling_rate"] == 30000.0


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("notes.txt", b"sample,value\n1,2\n", "(looks like text)"),
        ("page", b"<html><body>Not found</body></html>\n", "(looks like text)"),
        ("blob.dat", bytes(range(256)) * 8, "(looks like an unknown binary format)"),
    ],
)
def test_a_file_of_no_format_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, content: bytes, says: str
) -> None:
    """Item 2: no NEO message for a text file; the file is named, and what it looks like."""
    source = tmp_path / name
    source.write_bytes(content)
    code, out, err = run_main(capsys, "generate", str(source), "-o", str(tmp_path / "o.json"))
    assert code == 1
    assert out == ""
    assert f"not a format shadowzarr generates: {source} {says}" in err
    assert "NEO raw reader" not in err
    assert not (tmp_path / "o.json").exists()


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_a_truncated_hdf5_file_says_partial_download(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, libver: str
) -> None:
    """Item 2: h5py's "truncated file: eof = …" named neither the file nor the likely cause."""
    import h5py
    import numpy as np

    whole = tmp_path / "whole.h5"
    with h5py.File(whole, "w", libver=libver, userblock_size=512) as file:
        file.create_dataset("x", data=np.arange(20_000))
    cut = tmp_path / "cut.nwb"
    cut.write_bytes(whole.read_bytes()[:30_000])
    code, _, err = run_main(capsys, "generate", str(cut), "-o", str(tmp_path / "o.json"))
    assert code == 1
    assert f"{cut} is 30,000 bytes but its HDF5 superblock says the file has " in err
    assert "truncated or partial download?" in err
    code, _, err = run_main(capsys, "generate", str(whole), "-o", str(tmp_path / "o.json"))
    assert code == 0, err


def test_generate_into_a_missing_folder_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Item 9: a typo in -o's folder is an error naming the folder, not a new folder tree;
    --parents creates it and says so."""
    import h5py
    import numpy as np

    source = tmp_path / "s.h5"
    with h5py.File(source, "w") as file:
        file.create_dataset("x", data=np.arange(10))
    missing = tmp_path / "missing-dir" / "deeper"
    code, out, err = run_main(capsys, "generate", str(source), "-o", str(missing / "x.json"))
    assert code == 1
    assert out == ""
    assert f"the folder {missing} for {missing / 'x.json'} does not exist" in err
    assert "--parents" in err
    assert not (tmp_path / "missing-dir").exists()
    code, out, err = run_main(
        capsys, "generate", str(source), "-o", str(missing / "x.json"), "--parents"
    )
    assert code == 0, err
    assert f"created folder {missing}" in err
    assert (missing / "x.json").is_file()


def test_demo_keeps_its_files_where_it_says_and_ends_with_what_to_try(tmp_path: Path) -> None:
    """Item 7: ``--keep DIR`` keeps demo.nwb and demo.shadowzarr there; without it the demo
    says they were temporary; both end with the line to try one's own file."""
    kept = tmp_path / "demo-files"
    result = subprocess.run(
        [str(SCRIPT), "demo", "--seconds", "2", "--latency", "0", "--keep", str(kept)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "now try your own file: shadowzarr generate <url> -o x.shadowzarr"
    assert f"kept in {kept}: demo.nwb and demo.shadowzarr" in result.stdout
    assert (kept / "demo.nwb").is_file()
    assert (kept / "demo.shadowzarr" / "refs.json").is_file()
    assert " MB " not in result.stdout  # binary units, labelled so
    assert "MiB" in result.stdout
    import h5py

    with h5py.File(kept / "demo.nwb", "r") as file:
        assert "acquisition/ElectricalSeries/data" in file
    temporary = subprocess.run(
        [str(SCRIPT), "demo", "--seconds", "2", "--latency", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert temporary.returncode == 0, temporary.stderr
    assert "were in a temporary folder, deleted now (shadowzarr demo --keep DIR" in (
        temporary.stdout
    )
    assert temporary.stdout.strip().splitlines()[-1].startswith("now try your own file:")


def test_convert_to_icechunk_then_info_get_and_the_printed_python(tmp_path: Path) -> None:
    """Item 5: what convert writes, info and get open (its containers authorized for
    reading), and the Python that convert prints opens it too."""
    import json

    import numpy as np
    from shadowzarr_spec import RfsBuilder, write_rfs

    values = np.arange(400, dtype="<i4").reshape(100, 4)
    raw = tmp_path / "data" / "raw.bin"
    raw.parent.mkdir()
    raw.write_bytes(values.tobytes())
    builder = RfsBuilder()
    builder.add_group("", {"title": "raw"})
    builder.add_array("acq/signal", shape=[100, 4], data_type="<i4", chunk_shape=[10, 4])
    builder.add_contiguous_chunks(
        "acq/signal", url=str(raw), start=0, shape=[100, 4], chunk_shape=[10, 4], itemsize=4
    )
    builder.add_source(str(raw), size=raw.stat().st_size)
    refs = write_rfs(builder.build(), tmp_path / "x.json")
    repo = tmp_path / "y.icechunk"

    def shadowzarr(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SCRIPT), *args], capture_output=True, text=True, timeout=300, check=False
        )

    converted = shadowzarr("convert", str(refs), str(repo))
    assert converted.returncode == 0, converted.stderr
    assert f"file://{raw.parent}/" in converted.stdout
    assert "authorize_virtual_chunk_access" in converted.stdout
    info = shadowzarr("info", str(repo))
    assert info.returncode == 0, info.stderr
    assert "signal  int32 (100, 4) chunks (10, 4)" in info.stdout
    got = shadowzarr("get", str(repo), "acq/signal", "5:25, 1", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["values"] == values[5:25, 1].tolist()
    code = converted.stdout.split("authorizes):\n", 1)[1]
    program = "\n".join(line[4:] for line in code.splitlines())
    program += '\nprint(root["acq/signal"][:].sum())'
    ran = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == str(values.sum())


def _small_h5(path: Path) -> Any:
    import h5py
    import numpy as np

    values = np.arange(2000, dtype="<i4").reshape(200, 10)
    with h5py.File(path, "w") as file:
        file.create_dataset("g/d", data=values, chunks=(20, 10))
    return values


def test_blosc2_option_names(tmp_path: Path) -> None:
    """Item 4: blosc2's cache_policy=, cache_path= and refs= work; an unknown name says which
    function refused it and what to use."""
    import numpy as np
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_store import LocalCache
    from shadowzarr_store.remote import CachePolicy

    import shadowzarr

    source = tmp_path / "f.h5"
    values = _small_h5(source)
    folder = tmp_path / "chunk-cache"
    array = shadowzarr.open_array(
        f"{source}::g/d", cache_policy=CachePolicy.DISK, cache_path=folder, reference_cache=False
    )
    assert array.cache_policy == "disk"
    np.testing.assert_array_equal(array[:40], values[:40])
    cache = LocalCache(folder)
    try:
        assert len(cache) == 2  # the two chunks read, kept in the folder named
    finally:
        cache.close()
    none = shadowzarr.open_array(f"{source}::g/d", cache_policy="none", reference_cache=False)
    assert none.cache_policy == "none"
    made = generate_rfs(str(source), progress=False)
    # The address names the container and dataset; the references stand for it, so nothing is
    # asked of that URL (loopback's discard port: a request would fail).
    opened = shadowzarr.open_array("http://127.0.0.1:9/f.h5::g/d", refs=made)
    np.testing.assert_array_equal(opened[5:50], values[5:50])
    with pytest.raises(TypeError) as refused:
        shadowzarr.open_array(f"{source}::g/d", cache_polcy="disk")
    message = str(refused.value)
    assert message.startswith("shadowzarr.open_array() got unknown option cache_polcy")
    assert "did you mean cache_policy=?" in message
    assert "cache='none'|'memory'|'disk'" in message
    assert "RfsStore" not in message
    with pytest.raises(ValueError, match=r"cache=True: use 'none', 'memory' or 'disk'"):
        shadowzarr.open_array(f"{source}::g/d", cache=True, reference_cache=False)


def test_open_rfs_says_where_caching_options_belong(tmp_path: Path) -> None:
    """open_rfs given open_array's (blosc2's) caching names, or a typo, says what to use."""
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_spec import write_rfs
    from shadowzarr_store import open_rfs

    source = tmp_path / "f.h5"
    _small_h5(source)
    refs = tmp_path / "f.json"
    write_rfs(generate_rfs(str(source), progress=False), refs)
    for name in ("cache", "cache_policy", "cache_path"):
        with pytest.raises(TypeError) as refused:
            open_rfs(refs, **{name: "disk"})
        message = str(refused.value)
        assert f"{name}: a store caches chunks with local_cache=LocalCache(folder)" in message
        assert "shadowzarr.open_array(url, cache=" in message
    with pytest.raises(TypeError, match=r"merge_gapp: did you mean merge_gap=\?"):
        open_rfs(refs, merge_gapp=0)


def test_open_array_of_a_reference_folder_url(nginx: NginxServer, nginx_root: Path) -> None:
    """Item 3: a reference folder over HTTP (``….shadowzarr``, or a name the server redirects
    to ``…/``) opens as references, as open_rfs opens it; the folder's own URL is asked only to
    learn that it is a folder."""
    import numpy as np
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_spec import write_rfs
    from shadowzarr_store import open_rfs

    import shadowzarr

    values = _small_h5(nginx_root / "f.h5")
    rfs = generate_rfs(nginx.url("f.h5"), progress=False)
    write_rfs(rfs, nginx_root / "refs" / "f.shadowzarr")
    write_rfs(rfs, nginx_root / "refs" / "session")  # no suffix: nginx redirects to …/
    url = nginx.url("refs/f.shadowzarr")
    np.testing.assert_array_equal(open_rfs(url)["g/d"][:], values)
    nginx.reset()
    array = shadowzarr.open_array(f"{url}::g/d", cache="none", reference_cache=False)
    np.testing.assert_array_equal(array[3:77], values[3:77])
    asked = [entry.uri for entry in nginx.entries()]
    assert "/refs/f.shadowzarr" not in asked, asked
    assert "/refs/f.shadowzarr/" not in asked, asked
    assert asked.count("/refs/f.shadowzarr/refs.json") == 2, asked  # identity, then the file
    nginx.reset()
    bare = shadowzarr.open_array(
        nginx.url("refs/session") + "::g/d", cache="none", reference_cache=False
    )
    np.testing.assert_array_equal(bare[:], values)
    assert all(entry.status < 500 for entry in nginx.entries())
    assert len(nginx.entries()) <= 8, [(e.uri, e.status) for e in nginx.entries()]
