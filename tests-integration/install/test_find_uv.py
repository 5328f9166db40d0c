"""tools/find-uv names a uv that runs, even when the first ``uv`` on PATH is a broken pyenv shim
(``command -v uv`` finds the shim, which then fails for a Python version without uv)."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import TYPE_CHECKING

from .closures import uv_command
from .workspace import REPO

if TYPE_CHECKING:
    from pathlib import Path

FIND_UV = REPO / "tools" / "find-uv"


def _broken_shim(folder: Path) -> Path:
    shim = folder / "uv"
    shim.write_text('#!/bin/sh\necho "pyenv: uv: command not found" >&2\nexit 127\n')
    shim.chmod(0o755)
    return shim


def test_a_broken_uv_first_on_path_is_passed_over(tmp_path: Path) -> None:
    shim = _broken_shim(tmp_path)
    working = uv_command()[0]  # the uv running these tests
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "UV": working}
    found = subprocess.run(
        [str(FIND_UV), "--no-install"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert found != str(shim)
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("uv ")


def test_without_any_uv_it_says_so_instead_of_guessing(tmp_path: Path) -> None:
    """Only a broken uv, and a python3 without uv: nothing to name (tools/test then installs)."""
    _broken_shim(tmp_path)
    python = tmp_path / "python3"
    python.write_text("#!/bin/sh\nexit 1\n")
    python.chmod(0o755)
    (tmp_path / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    missing = subprocess.run(
        [str(FIND_UV), "--no-install"], env=env, capture_output=True, text=True, check=False
    )
    assert missing.returncode == 1, missing.stderr
    assert missing.stdout == ""
