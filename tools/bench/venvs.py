"""Peers whose requirements conflict with the workspace (lindi needs zarr 2) run in their own
virtual environment, built with uv under a cache folder and driven through `venv_worker`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

WORKER = Path(__file__).with_name("venv_worker.py")
ENVIRONMENTS = {
    "lindi": ("lindi", "remfile", "h5py", "numpy"),
    "parquet": ("kerchunk", "fastparquet", "fsspec", "aiohttp", "requests", "zarr", "numpy"),
    "async-hdf5": ("async-hdf5", "obstore", "virtualizarr", "zarr", "numpy"),
}
"""Each peer environment and what it installs: lindi (zarr 2) with remfile; kerchunk's Parquet
references, whose writer and reader need fastparquet (not in the workspace); async-hdf5 (a Rust
HDF5 metadata reader on obstore, with its own zarr v3 store), kept apart so that its pins never
move the workspace's lock."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "shadowzarr-bench"


def peer_pythons(*, build: bool) -> dict[str, Path | str]:
    return {name: peer_python(name, build=build) for name in ENVIRONMENTS}


def peer_python(name: str, *, build: bool) -> Path | str:
    """The python of peer environment ``name``, built if missing and ``build``; else the
    reason it is not available (a string)."""
    venv = cache_dir() / f"{name}-venv"
    python = venv / "bin" / "python"
    if (venv / "ready").exists():
        return python
    if not build:
        return f"its environment is not built ({venv}); pass --build-venvs"
    uv = shutil.which("uv")
    if uv is None:
        return "uv is not on PATH to build its environment"
    import sys

    base = os.path.realpath(sys.executable)
    try:
        subprocess.run([uv, "venv", "-q", "--python", base, str(venv)], check=True)
        subprocess.run(
            [uv, "pip", "install", "-q", *ENVIRONMENTS[name]],
            check=True,
            env={**os.environ, "VIRTUAL_ENV": str(venv)},
        )
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(venv, ignore_errors=True)
        return f"building its environment failed: {exc}"
    (venv / "ready").touch()
    return python


class VenvPeer:
    """One worker process; ``call`` sends a command and returns its answer."""

    def __init__(self, python: Path) -> None:
        self._process = subprocess.Popen(
            [str(python), str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.call_raw()

    def call(self, **command: Any) -> dict[str, Any]:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(command) + "\n")
        self._process.stdin.flush()
        return self.call_raw()

    def call_raw(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"peer worker exited with {self._process.wait()}")
        return json.loads(line)

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            self._process.wait(timeout=60)

    def __enter__(self) -> VenvPeer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
