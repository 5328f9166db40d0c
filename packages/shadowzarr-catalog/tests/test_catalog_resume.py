"""A run killed at any moment (SIGKILL, nothing flushed) and started again ends with the catalog
a clean run makes: rows committed before the kill stay, the rest is generated, and no reference
is left half written."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from catalog_archive import make_archive
from test_catalog_local import assert_published

from shadowzarr_catalog import generate_catalog

SCRIPT = Path(sys.executable).with_name("shadowzarr")
TIMING = ["generated_at", "generation_seconds"]


def _rows_committed(destination: Path) -> int:
    try:
        with sqlite3.connect(f"file:{destination / 'catalog.sqlite'}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT count(*) FROM assets").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def _without_timing(destination: Path) -> pd.DataFrame:
    table = pd.read_parquet(destination / "catalog.parquet").drop(columns=TIMING)
    return table.sort_values("asset_id").reset_index(drop=True)


def test_killed_mid_run_then_resumed_equals_a_clean_run(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    expected = make_archive(root, count=10)
    total = len(expected) + 3
    clean = tmp_path / "clean"
    generate_catalog(root, clean, workers=1)

    resumed = tmp_path / "resumed"
    command = [str(SCRIPT), "catalog", str(root), str(resumed), "--workers", "1", "-q"]
    running = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while _rows_committed(resumed) < 3 and running.poll() is None:
        assert time.monotonic() < deadline, "the catalog run never committed a row"
        time.sleep(0.01)
    running.send_signal(signal.SIGKILL)
    assert running.wait(timeout=30) == -signal.SIGKILL, "the run ended before it was killed"
    done = _rows_committed(resumed)
    assert 3 <= done < total
    assert not (resumed / "catalog.parquet").exists()  # published only at the end of a run

    finished = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    # broken.h5 and fake.nwb come first (jobs go in asset order) and failed before the kill;
    # their failures are of their bytes, so the resumed run does not try them again.
    assert finished.returncode == 0, finished.stderr
    pd.testing.assert_frame_equal(_without_timing(resumed), _without_timing(clean))
    assert_published(resumed, expected)
    assert f"{total - done} generated" in finished.stdout, finished.stdout


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # it ended meanwhile
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def test_a_killed_worker_process_loses_only_its_jobs(tmp_path: Path) -> None:
    """SIGKILL of the default pool's worker processes mid-run: the jobs they had in flight are
    failed rows the next run tries again, new workers finish the rest, and the rerun ends with
    the catalog a clean run makes."""
    root = tmp_path / "archive"
    expected = make_archive(root, count=40)
    clean = tmp_path / "clean"
    generate_catalog(root, clean, processes=0)

    destination = tmp_path / "catalog"
    command = [str(SCRIPT), "catalog", str(root), str(destination), "--processes", "2", "-q"]
    command += ["--workers", "4"]
    running = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while _rows_committed(destination) < 2 and running.poll() is None:
        assert time.monotonic() < deadline, "the catalog run never committed a row"
        time.sleep(0.005)
    workers = _children(running.pid)
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    assert running.wait(timeout=300) == 1  # the lost jobs are failures of this run
    assert len(workers) == 2  # the jobs ran in two worker processes
    table = pd.read_parquet(destination / "catalog.parquet").set_index("asset_id")
    lost = table[table.error_class == "WorkerDied"]
    assert 1 <= len(lost) <= 4  # what the killed workers had in flight (4 at most), no more
    assert lost.retry.all()
    assert (table.status != "failed").sum() + 2 + len(lost) == len(table)  # the rest done

    again = generate_catalog(root, destination, processes=0)
    assert again.generated == len(lost)
    pd.testing.assert_frame_equal(_without_timing(destination), _without_timing(clean))
    assert_published(destination, expected)


def test_no_worker_is_forked_once_obstore_ran(tmp_path: Path) -> None:
    """A process whose object-store runtime may run (its threads would be missing in a forked
    child, whose first object-store request would hang) runs the jobs on threads; a fresh
    process forks its workers before its first object-store request."""
    root = tmp_path / "archive"
    make_archive(root, count=4)
    script = (
        "import multiprocessing, sys\n"
        "from shadowzarr_catalog import generate_catalog\n"
        "seen = set()\n"
        "def watch(row):\n"
        "    seen.update(c.pid for c in multiprocessing.active_children())\n"
        "root, first, second = sys.argv[1:]\n"
        "generate_catalog(root, first, processes=2, progress=watch)\n"
        "print(len(seen))\n"
        "seen.clear()\n"
        "import obstore, obstore.store\n"
        "obstore.put(obstore.store.MemoryStore(), 'key', b'starts the runtime')\n"
        "generate_catalog(root, second, processes=2, progress=watch)\n"
        "print(len(seen))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script, str(root), str(tmp_path / "a"), str(tmp_path / "b")],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert ran.stdout.split() == ["2", "0"]
    pd.testing.assert_frame_equal(_without_timing(tmp_path / "a"), _without_timing(tmp_path / "b"))
