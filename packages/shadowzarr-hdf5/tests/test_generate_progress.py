"""``generate_rfs(progress=True)`` in a batch job: stderr a file gets plain progress lines."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np


def test_progress_true_writes_lines_to_a_redirected_stderr(tmp_path: Path) -> None:
    source = tmp_path / "data.h5"
    with h5py.File(source, "w") as file:
        for index in range(30):
            file.create_dataset(f"group/d{index:02}", data=np.arange(index + 1))
    script = textwrap.dedent(
        """
        import sys
        from shadowzarr_hdf5 import generate_rfs
        generate_rfs(sys.argv[1], progress=True)
        """
    )
    log = tmp_path / "stderr.log"
    with log.open("w") as stderr:
        subprocess.run(
            [sys.executable, "-c", script, str(source)], stderr=stderr, timeout=120, check=True
        )
    text = log.read_text()
    assert "\r" not in text  # lines, not a bar redrawn in place
    lines = text.splitlines()
    assert lines[0].startswith("generate data.h5: 0/30 datasets (0%)"), lines
    assert any(
        line.startswith("generate data.h5: 15/30 datasets (50%), group/d14, ") for line in lines
    )
    assert lines[-1].startswith("generate data.h5: 30/30 datasets (100%), group/d29"), lines


def test_progress_false_writes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "data.h5"
    with h5py.File(source, "w") as file:
        file["d"] = np.arange(3)
    script = "import sys\nfrom shadowzarr_hdf5 import generate_rfs\n"
    script += "generate_rfs(sys.argv[1], progress=False)\n"
    done = subprocess.run(
        [sys.executable, "-c", script, str(source)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stderr == ""
