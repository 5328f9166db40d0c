"""Running a script of ``tools/`` as a user would, for the tests that check it end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["run_script"]


def run_script(
    script: Path, *args: str, timeout: float, returncode: int = 0
) -> subprocess.CompletedProcess[str]:
    """``python script args…`` in a child process; fails the test, showing the ends of its
    output, unless it exits with ``returncode``."""
    completed = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert completed.returncode == returncode, completed.stdout[-3000:] + completed.stderr[-3000:]
    return completed
