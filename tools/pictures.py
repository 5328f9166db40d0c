"""Render the pictures committed under docs/: the layout picture of an NWB-like file written
in pieces (its chunks interleaved with headers and chunk-index nodes, as a long recording
appended to over hours is), and the notebook summary of an open array.

    uv run python tools/pictures.py    # docs/*.png (chromium for the HTML),
                                       # docs/cli-progress.txt (tmux)

Everything is generated here; nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

DOCS = Path(__file__).resolve().parent.parent / "docs"
RATE = 30_000
CHANNELS = 32
SECONDS = 40
BLOCK = 30_000  # rows appended at a time: one second, like an acquisition system's buffer


def write_recording(path: Path) -> None:
    """An HDF5 file grown one second at a time: data, timestamps and a log of events appended
    in turns, so chunks, chunk-index nodes and heaps are spread through the file."""
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as file:
        file.attrs["session_description"] = "a recording appended to one second at a time"
        series = file.create_group("acquisition/ElectricalSeries")
        data = series.create_dataset(
            "data",
            shape=(0, CHANNELS),
            maxshape=(None, CHANNELS),
            dtype="<i2",
            chunks=(BLOCK, 1),
        )
        stamps = series.create_dataset(
            "timestamps", shape=(0,), maxshape=(None,), dtype="<f8", chunks=(BLOCK,)
        )
        events = file.create_group("processing/behavior").create_dataset(
            "events", shape=(0,), maxshape=(None,), dtype="<f8", chunks=(64,)
        )
        for second in range(SECONDS):
            start = second * BLOCK
            data.resize(start + BLOCK, axis=0)
            data[start:] = (rng.standard_normal((BLOCK, CHANNELS)) * 200).astype("<i2")
            stamps.resize(start + BLOCK, axis=0)
            stamps[start:] = (start + np.arange(BLOCK)) / RATE
            events.resize(events.shape[0] + 3, axis=0)
            events[-3:] = second + rng.random(3)
            file.create_group(f"processing/notes/second_{second:03d}").attrs["ok"] = True
            file.flush()  # what an acquisition system does each second: chunks hit the disk


def render_layout(refs: Path) -> None:
    import shadowzarr.plot

    figure = shadowzarr.plot.layout(
        refs, "acquisition/ElectricalSeries/data", select="615000:645000, 12:16"
    )
    figure.savefig(DOCS / "layout-selection.png", dpi=100, facecolor="white")
    figure = shadowzarr.plot.layout(refs, "acquisition/ElectricalSeries/data")
    figure.savefig(DOCS / "layout-start.png", dpi=100, facecolor="white")


def render_notebook_summary(refs: Path, work: Path) -> None:
    import os

    import shadowzarr

    os.chdir(work)  # short, stable names in the picture: session.shadowzarr, session.nwb
    remote = shadowzarr.open_array(refs.name, "acquisition/ElectricalSeries/data", cache="memory")
    remote[615_000:645_000, 12:16]
    page = work / "summary.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><style>"
        "body{font-family:system-ui,sans-serif;margin:24px;background:#fff}"
        ".cell{border-left:3px solid #1f77b4;padding:4px 12px;margin:12px 0}"
        "pre{color:#555;margin:0 0 8px}</style></head><body>"
        "<div class='cell'><pre>remote = shadowzarr.open_array(\"session.shadowzarr\", "
        '"acquisition/ElectricalSeries/data")\nremote[615_000:645_000, 12:16]\nremote</pre>'
        + remote._repr_html_()
        + "</div></body></html>",
        encoding="utf-8",
    )
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    profile = work / "chromium-profile"
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--hide-scrollbars",
            f"--screenshot={DOCS / 'notebook-summary.png'}",
            "--window-size=960,580",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def write_folder(folder: Path, files: int = 6, datasets: int = 150) -> None:
    """Sessions with many small datasets each, so generation takes a few seconds per file."""
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(files):
        with h5py.File(folder / f"session{number}.nwb", "w") as file:
            for index in range(datasets):
                rows = 1000 * (1 + index % 3)
                file.create_dataset(
                    f"acquisition/series{index}/data",
                    data=np.arange(rows * 2).reshape(rows, 2),
                    chunks=(100, 2),
                )


def capture_progress(work: Path) -> str:
    """What a terminal shows while ``generate folder/ --workers 2`` runs, and at its end: the
    screen of a tmux pane (100 x 14), captured twice."""
    tmux = shutil.which("tmux")
    if tmux is None:
        raise SystemExit("capturing the terminal needs tmux")
    write_folder(work / "recordings")
    command = f"cd {work} && shadowzarr generate recordings/ -o refs/ --workers 2; sleep 30"
    session = f"shadowzarr-capture-{os.getpid()}"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    subprocess.run(
        [tmux, "new-session", "-d", "-s", session, "-x", "100", "-y", "14", command],
        check=True,
        env=env,
    )
    screens = []
    try:
        for middle in (True, False):
            if middle:  # once two of six files are written
                deadline = time.monotonic() + 120
                while not (work / "refs").is_dir() or len(list((work / "refs").iterdir())) < 2:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
            else:
                deadline = time.monotonic() + 120
                while not (work / "refs").is_dir() or len(list((work / "refs").iterdir())) < 6:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.5)
                time.sleep(1.5)
            shown = subprocess.run(
                [tmux, "capture-pane", "-p", "-t", session],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            screens.append(shown.rstrip())
    finally:
        subprocess.run([tmux, "kill-session", "-t", session], check=False)
    return (
        "$ shadowzarr generate recordings/ -o refs/ --workers 2\n\n"
        "--- while it runs (the workers send their counts to the parent, which draws) ---\n"
        + screens[0]
        + "\n\n--- at the end ---\n"
        + screens[1]
        + "\n"
    )


def main() -> int:
    from shadowzarr import generate_rfs, write_rfs

    DOCS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="shadowzarr-pictures-") as folder:
        work = Path(folder)
        source = work / "session.nwb"
        write_recording(source)
        os.chdir(work)
        refs = write_rfs(generate_rfs(source.name, progress=False), work / "session.shadowzarr")
        render_layout(refs)
        if "--no-html" not in sys.argv:
            render_notebook_summary(refs, work)
        if "--no-terminal" not in sys.argv:
            (DOCS / "cli-progress.txt").write_text(capture_progress(work), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
