"""The shared progress display: plain lines in a log, tqdm on a terminal, nothing when asked."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from shadowzarr_store.progress_display import format_seconds, progress_display


def test_a_log_gets_a_line_at_the_start_each_tenth_and_the_end() -> None:
    log = io.StringIO()
    with progress_display(
        "generate data.h5", total=5_000, unit="datasets", show=True, file=log, seconds=3600
    ) as display:
        for index in range(5_000):
            display.update(detail=f"/d{index}")
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert lines[0].startswith("generate data.h5: 0/5,000 datasets (0%)")
    assert len(lines) == 11, lines  # start, then one per tenth (the last one is the end)
    assert lines[3].startswith("generate data.h5: 1,500/5,000 datasets (30%), /d1499, ")
    assert re.search(r"\d+ s elapsed, ~\d+ s left$", lines[3]), lines[3]
    assert lines[-1].startswith("generate data.h5: 5,000/5,000 datasets (100%), /d4999")
    assert "left" not in lines[-1]


def test_a_log_line_names_resumed_bytes_apart_and_rates_this_run_only() -> None:
    log = io.StringIO()
    display = progress_display("copy", total=10 * 2**30, bytes_=True, show=True, file=log)
    display.started -= 1.0  # one second into the run
    display.moveto(9 * 2**30 + 2**20, resumed=9 * 2**30, detail="1/2 arrays")
    display.close()
    last = log.getvalue().splitlines()[-1]
    assert last.startswith("copy: 9 GiB of 10 GiB (90%), 9 GiB resumed from an earlier run, ")
    assert re.search(r", 1/2 arrays, (1 MiB|10[0-2]\d(\.\d)? KiB)/s, 1 s elapsed, ~", last), last
    assert "GB" not in last.replace("GiB", "")


def test_a_terminal_gets_a_tqdm_bar_whose_rate_is_this_runs() -> None:
    """A resumed copy on a terminal: 9 GiB were done before, 1 MiB moved in this run's first
    second; the bar says ~1 MiB/s (not 9 GiB/s) and labels 2**20 bytes MiB."""
    leader, follower = os.openpty()
    with open(follower, "w") as terminal:
        display = progress_display("copy", total=10 * 2**30, bytes_=True, file=terminal)
        bar = display.bar  # type: ignore[attr-defined]
        display.moveto(9 * 2**30 + 2**20, resumed=9 * 2**30)
        bar.start_t = bar._time() - 1.0
        shown = str(bar)
        display.close()
    os.close(leader)
    assert "9 GiB of 10 GiB" in shown, shown
    assert re.search(r", (1 MiB|10[0-2]\d(\.\d)? KiB)/s\]", shown), shown
    assert "GB" not in shown.replace("GiB", "")


def test_silent_when_asked_or_when_nobody_watches() -> None:
    log = io.StringIO()
    for show in (False, None):
        with progress_display("x", total=3, show=show, file=log) as display:
            display.update(3)
    assert log.getvalue() == ""


def test_durations_read_as_people_say_them() -> None:
    assert [format_seconds(s) for s in (0.4, 12.4, 754, 7384)] == [
        "0 s",
        "12 s",
        "12 min 34 s",
        "2 h 3 min",
    ]


def test_materialize_with_progress_true_writes_lines_to_a_redirected_stderr(
    tmp_path: Path,
) -> None:
    """stderr a file (a batch job's log): progress=True gives plain lines per phase."""
    script = textwrap.dedent(
        """
        import sys
        import numpy as np
        from shadowzarr_spec import RfsBuilder, write_rfs
        from shadowzarr_store import materialize

        folder = sys.argv[1]
        values = np.arange(40_000, dtype="<i4").reshape(10_000, 4)
        open(folder + "/raw.bin", "wb").write(values.tobytes())
        builder = RfsBuilder()
        builder.add_group("")
        builder.add_array("a", shape=[10_000, 4], data_type="<i4", chunk_shape=[500, 4])
        builder.add_contiguous_chunks(
            "a", url=folder + "/raw.bin", start=0, shape=[10_000, 4], chunk_shape=[500, 4],
            itemsize=4,
        )
        refs = write_rfs(builder.build(), folder + "/r.shadowzarr")
        materialize(refs, folder + "/out.zarr", verify=True, progress=True,
                    target_chunk_bytes=16_000)
        """
    )
    log = tmp_path / "stderr.log"
    with log.open("w") as stderr:
        subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)], stderr=stderr, timeout=120, check=True
        )
    assert "\r" not in log.read_text()
    lines = [line for line in log.read_text().splitlines() if line.startswith("materialize")]
    assert lines[0].startswith("materialize copy: 0 B of 156.2 KiB (0%)"), lines
    assert "materialize copy: 156.2 KiB of 156.2 KiB (100%), 1/1 arrays" in "\n".join(lines)
    assert lines[-1].startswith("materialize verify: 156.2 KiB of 156.2 KiB (100%)"), lines


def test_materialize_of_several_arrays_counts_both_phases_to_the_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Arrays are copied and verified in turn: each phase's lines go on to its total."""
    from shadowzarr_spec import RfsBuilder, write_rfs

    from shadowzarr_store import materialize

    values = np.arange(40_000, dtype="<i4").reshape(10_000, 4)
    (tmp_path / "raw.bin").write_bytes(values.tobytes())
    builder = RfsBuilder()
    builder.add_group("")
    for name in ("a", "b", "c"):
        builder.add_array(name, shape=[10_000, 4], data_type="<i4", chunk_shape=[500, 4])
        builder.add_contiguous_chunks(
            name,
            url=str(tmp_path / "raw.bin"),
            start=0,
            shape=[10_000, 4],
            chunk_shape=[500, 4],
            itemsize=4,
        )
    refs = write_rfs(builder.build(), tmp_path / "r.shadowzarr")
    materialize(refs, tmp_path / "out.zarr", verify=True, progress=True, target_chunk_bytes=16_000)
    lines = capsys.readouterr().err.splitlines()
    for phase in ("copy", "verify"):
        last = [line for line in lines if line.startswith(f"materialize {phase}: ")][-1]
        assert last.startswith(f"materialize {phase}: 468.8 KiB of 468.8 KiB (100%), 3/3 arrays")


def test_remote_array_fetch_with_progress_true_writes_lines_to_a_redirected_stderr(
    tmp_path: Path,
) -> None:
    """A RemoteArray's prefetch in a batch job: plain lines counting its chunks; False: none."""
    script = textwrap.dedent(
        """
        import sys
        import numpy as np
        from shadowzarr_spec import RfsBuilder, write_rfs
        from shadowzarr_store.remote import open_remote_array

        folder, show = sys.argv[1], sys.argv[2] == "True"
        values = np.arange(40_000, dtype="<i4").reshape(10_000, 4)
        open(folder + "/raw.bin", "wb").write(values.tobytes())
        builder = RfsBuilder()
        builder.add_group("")
        builder.add_array("a", shape=[10_000, 4], data_type="<i4", chunk_shape=[500, 4])
        builder.add_contiguous_chunks(
            "a", url=folder + "/raw.bin", start=0, shape=[10_000, 4], chunk_shape=[500, 4],
            itemsize=4,
        )
        refs = write_rfs(builder.build(), folder + "/r.shadowzarr")
        remote = open_remote_array(refs, dataset="a", cache="memory", reference_cache=False)
        remote.fetch(slice(0, 6_000), progress=show)
        assert remote.read_cached(slice(0, 6_000))[0]
        """
    )
    for show in (True, False):
        log = tmp_path / f"stderr-{show}.log"
        with log.open("w") as stderr:
            subprocess.run(
                [sys.executable, "-c", script, str(tmp_path), str(show)],
                stderr=stderr,
                timeout=120,
                check=True,
            )
        text = log.read_text()
        if not show:
            assert text == ""
            continue
        assert "\r" not in text
        lines = text.splitlines()
        assert lines[0].startswith("fetch: 0/12 chunks (0%)"), lines
        assert lines[-1].startswith("fetch: 12/12 chunks (100%)"), lines
