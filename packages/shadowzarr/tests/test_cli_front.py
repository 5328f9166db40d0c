"""The command as issue 22 wants it: a readable tree, options anywhere, JSON from every command
that reports, clean stdout and stderr, raw binary recordings described, and one progress
display across workers.

Most tests call ``main()`` in this process (quick); those about pipes, terminals and worker
processes run the installed command as a subprocess.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
from shadowzarr_spec import RfsBuilder, write_rfs

from shadowzarr.cli import build_parser, main

if TYPE_CHECKING:
    from shadowzarr_testing import NginxServer

SCRIPT = Path(sys.executable).with_name("shadowzarr")


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def in_terminal(*args: str, cwd: Path) -> tuple[int, str, str]:
    """Run the command with stderr on a pseudo-terminal (as a person at a terminal sees it)."""
    parent, child = pty.openpty()
    process = subprocess.Popen(
        [str(SCRIPT), *args], cwd=cwd, stdout=subprocess.PIPE, stderr=child, text=True
    )
    os.close(child)
    seen = bytearray()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        ready, _, _ = select.select([parent], [], [], 0.5)
        if ready:
            try:
                block = os.read(parent, 65536)
            except OSError:  # the child closed its end
                break
            if not block:
                break
            seen += block
        elif process.poll() is not None:
            break
    out = process.stdout.read() if process.stdout else ""
    process.wait(timeout=60)
    os.close(parent)
    return process.returncode, out, seen.decode("utf-8", "replace")


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    raw = tmp_path / "raw.bin"
    raw.write_bytes(np.arange(64, dtype="<i4").tobytes())
    builder = RfsBuilder()
    for group in ("", "a", "a/b"):
        builder.add_group(group)
    for path in ("a/b/x", "a/y", "z"):
        builder.add_array(path, shape=[16], data_type="<i4", chunk_shape=[8])
        builder.add_contiguous_chunks(
            path, url=str(raw), start=0, shape=[16], chunk_shape=[8], itemsize=4
        )
    builder.add_source(str(raw), size=raw.stat().st_size)
    return write_rfs(builder.build(), tmp_path / "nested.shadowzarr")


def _h5(path: Path, rows: int = 4000) -> np.ndarray:
    data = np.arange(rows * 4, dtype="<i2").reshape(rows, 4)
    with h5py.File(path, "w") as file:
        file.create_dataset("acq/data", data=data, chunks=(250, 4))
        file.create_dataset("acq/meta", data=np.arange(3))
    return data


def test_info_tree_parents_first_root_once(
    capsys: pytest.CaptureFixture[str], nested: Path
) -> None:
    code, out, _ = run_main(capsys, "info", str(nested))
    assert code == 0
    tree = [line for line in out.splitlines()[1:] if not line.startswith("source")]
    assert tree[0] == "/"
    assert [line.split()[0] for line in tree] == ["/", "a/", "b/", "x", "y", "z"]
    depth = [len(line) - len(line.lstrip()) for line in tree]
    assert depth == [0, 2, 4, 6, 4, 2]
    assert "//" not in out


def test_verbosity_before_or_after_the_subcommand(
    capsys: pytest.CaptureFixture[str], nested: Path
) -> None:
    parser = build_parser()
    assert parser.parse_args(["-v", "info", "x"]).verbose == 1
    assert parser.parse_args(["info", "x", "-vv"]).verbose == 2
    assert parser.parse_args(["info", "-q", "x"]).quiet is True
    assert parser.parse_args(["-q", "info", "x"]).quiet is True
    assert parser.parse_args(["info", "x"]).verbose == 0
    assert run_main(capsys, "info", str(nested), "-q")[0] == 0
    with pytest.raises(FileNotFoundError):  # -v shows the real error, after the subcommand too
        main(["info", str(nested.parent / "missing.json"), "-v"])


def test_every_option_has_help() -> None:
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    assert set(subparsers.choices) >= {"generate", "info", "layout", "materialize", "convert"}
    for name, command in subparsers.choices.items():
        for action in command._actions:
            if action.dest == "help":
                continue
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
    generate = " ".join(subparsers.choices["generate"].format_help().split())
    assert "processes generating at once" in generate  # --workers
    assert "chunk manifest" in generate  # --manifest-threshold


def test_json_from_every_command_that_reports(
    capsys: pytest.CaptureFixture[str], nested: Path, tmp_path: Path
) -> None:
    source = tmp_path / "s.h5"
    data = _h5(source)
    documents = {}
    commands = {
        "info": ["info", str(nested)],
        "check": ["check", str(nested)],
        "convert": ["convert", str(nested), str(tmp_path / "one.json")],
        "get": ["get", str(nested), "a/y", "0:4"],
        "cache": ["cache", "info", "--path", str(tmp_path / "cache")],
        "generate": ["generate", str(source), "-o", str(tmp_path / "s.shadowzarr")],
        "materialize": ["materialize", str(nested), str(tmp_path / "m.zarr"), "--verify"],
        "layout": ["layout", str(tmp_path / "s.shadowzarr"), "acq/data", "--select", "0:300"],
    }
    for name, args in commands.items():
        code, out, _ = run_main(capsys, *args, "--json")
        assert code == 0, name
        documents[name] = json.loads(out)
    assert documents["get"]["values"] == [0, 1, 2, 3]
    assert documents["check"]["sources"][0]["ok"] is True
    assert documents["generate"]["written"] == [str(tmp_path / "s.shadowzarr")]
    assert documents["materialize"]["verified"] is True
    assert documents["layout"]["selection"]["chunks"] == 2
    assert documents["cache"]["chunks"] == 0
    assert data.shape == (4000, 4)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("shadowzarr 0.")


def test_a_text_file_named_h5_and_a_url_that_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nginx: NginxServer
) -> None:
    bad = tmp_path / "bad.h5"
    bad.write_text("this is not HDF5\n")
    code, out, err = run_main(capsys, "generate", str(bad), "-o", str(tmp_path / "o.json"))
    assert code == 1
    assert out == ""
    assert "bad.h5 is not an HDF5 file" in err
    assert "NEO" not in err
    url = nginx.url("gone.nwb")
    code, _, err = run_main(capsys, "generate", url, "-o", str(tmp_path / "o.json"))
    assert code == 1
    assert url in err
    assert "404" in err


def test_raw_binary_needs_its_layout(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    samples = np.arange(8 * 1000, dtype="<i2").reshape(1000, 8)
    recording = tmp_path / "rec.bin"
    recording.write_bytes(b"HEADER--" + samples.tobytes())
    base = ["generate", str(recording), "--format", "neo:RawBinarySignalRawIO"]
    code, _, err = run_main(capsys, *base, "-o", str(tmp_path / "r.shadowzarr"))
    assert code == 1
    assert "--dtype, --channels and --sampling-rate" in err
    code, _, err = run_main(
        capsys, *base, "--dtype", "int16", "--channels", "8", "-o", str(tmp_path / "r.shadowzarr")
    )
    assert code == 1
    assert "needs --sampling-rate as well" in err
    layout = ["--dtype", "<i2", "--channels", "8", "--sampling-rate", "30000", "--byte-offset", "8"]
    code, _, err = run_main(capsys, *base, *layout, "-o", str(tmp_path / "r.shadowzarr"))
    assert code == 0, err
    from shadowzarr_store import open_rfs

    root = open_rfs(tmp_path / "r.shadowzarr")
    (path,) = [name for name, _ in root.arrays()]
    np.testing.assert_array_equal(root[path][:], samples)
    assert root[path].attrs["neo"]["streams"][0]["sampling_rate"] == 30000.0
    h5 = tmp_path / "f.h5"
    _h5(h5)
    code, _, err = run_main(capsys, "generate", str(h5), *layout, "-o", str(tmp_path / "x.json"))
    assert code == 1
    assert "raw binary recording" in err


def test_batch_failures_go_to_stderr_and_bars_come_from_the_parent(tmp_path: Path) -> None:
    folder = tmp_path / "recordings"
    folder.mkdir()
    for number in range(3):
        _h5(folder / f"good{number}.h5")
    (folder / "broken.h5").write_text("<html>not found</html>")
    code, out, terminal = in_terminal(
        "generate", "recordings/", "-o", "refs", "--workers", "2", cwd=tmp_path
    )
    assert code == 1
    assert sorted(out.splitlines()) == [f"wrote refs/good{n}.shadowzarr" for n in range(3)]
    assert "failed recordings/broken.h5" in terminal
    assert "is not an HDF5 file" in terminal
    lines = [line.strip() for line in terminal.replace("\r", "\n").splitlines() if "%|" in line]
    assert lines, terminal
    assert {line.split(":")[0].strip("\x1b[A ") for line in lines} == {"files", "datasets"}
    assert any("4/4 files" in line for line in lines)
    assert any("datasets" in line and "6/6" in line for line in lines)  # 2 datasets x 3 files


def test_piped_output_is_clean(tmp_path: Path, nested: Path) -> None:
    """No BrokenPipe traceback; no warnings, bars or colours in a pipe."""
    big = tmp_path / "big.json"
    builder = RfsBuilder()
    builder.add_group("")
    for index in range(300):
        builder.add_array(f"g/a{index}", shape=[4], data_type="<i4", chunk_shape=[4])
    write_rfs(builder.build(), big)
    process = subprocess.Popen(
        [str(SCRIPT), "info", str(big), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    process.stdout.readline()
    process.stdout.close()  # what `| head -1` does
    _, err = process.communicate(timeout=120)
    assert b"Traceback" not in err
    assert b"BrokenPipe" not in err
    assert process.returncode == 141
    for args in (
        ["materialize", str(nested), str(tmp_path / "m.zarr"), "--verify"],
        ["convert", str(nested), str(tmp_path / "r.icechunk")],
    ):
        result = subprocess.run(
            [str(SCRIPT), *args], capture_output=True, text=True, timeout=300, check=False
        )
        assert result.returncode == 0, result.stderr
        assert result.stderr == "", result.stderr
        assert "\x1b[" not in result.stdout


def test_materialize_shows_copy_then_verify_in_bytes(tmp_path: Path, nested: Path) -> None:
    code, out, terminal = in_terminal(
        "materialize", str(nested), str(tmp_path / "m.zarr"), "--verify", cwd=tmp_path
    )
    assert code == 0, terminal
    assert "verified" in out
    bars = terminal.replace("\r", "\n")
    assert "copy: 100%" in bars
    assert "verify: 100%" in bars
    assert "B of " in bars  # bytes, not a bare count
    assert "3/3 arrays" in bars


@pytest.mark.network
def test_one_file_over_http_shows_progress(nginx: NginxServer, nginx_root: Path) -> None:
    _h5(nginx_root / "one.h5")
    code, out, terminal = in_terminal(
        "generate", nginx.url("one.h5"), "-o", "one.shadowzarr", cwd=nginx_root
    )
    assert code == 0, terminal
    assert out.strip() == "wrote one.shadowzarr"
    assert "generate: 100%" in terminal.replace("\r", "\n")
    assert "2/2 datasets" in terminal


OLD_FLAG = "--chunk-index-threshold"
"""The old name of ``--manifest-threshold``, kept as a hidden alias."""


def test_the_old_threshold_flag_still_works_but_is_not_offered(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    raw = tmp_path / "raw.bin"
    raw.write_bytes(np.arange(40, dtype="<i4").tobytes())
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array("signal", shape=[40], data_type="<i4", chunk_shape=[4])
    for i in range(10):
        builder.add_chunk("signal", (i,), str(raw), 16 * i, 16)
    single = write_rfs(builder.build(), tmp_path / "one.json")
    written: dict[tuple[str, str], bytes] = {}
    for flag in ("--manifest-threshold", OLD_FLAG):
        for threshold, name in (("5", "small"), ("50", "large")):
            out = tmp_path / f"{flag.strip('-')}-{name}.shadowzarr"
            assert run_main(capsys, "convert", str(single), str(out), flag, threshold)[0] == 0
            written[flag, name] = (out / "refs.json").read_bytes()
    assert written["--manifest-threshold", "small"] == written[OLD_FLAG, "small"]
    assert written["--manifest-threshold", "large"] == written[OLD_FLAG, "large"]
    assert b'"indexes"' in written[OLD_FLAG, "small"]  # the wire key keeps its name
    assert b'"indexes"' not in written[OLD_FLAG, "large"]
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    for command in ("generate", "convert"):
        help_text = subparsers.choices[command].format_help()
        assert "--manifest-threshold" in help_text
        assert OLD_FLAG not in help_text
