"""Fresh environments holding exactly the locked run-time closure of one distribution (and
extras), and what they weigh.

``uv export --frozen --no-dev`` lists the closure from ``uv.lock`` (workspace members as
editable paths); ``uv pip install --no-deps`` installs exactly that list into a new virtual
environment, hardlinked from the shared uv cache, offline when the cache has everything.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .workspace import REPO

SMOKE = Path(__file__).with_name("closure_smoke.py")


@dataclass(frozen=True, slots=True)
class Target:
    """A distribution and the extras a user installs it with, and the smoke job to run."""

    package: str
    extras: tuple[str, ...]
    job: str

    @property
    def name(self) -> str:
        return f"{self.package}[{','.join(self.extras)}]" if self.extras else self.package


TARGETS = (
    Target("shadowzarr-spec", (), "spec"),
    Target("shadowzarr-spec", ("zarr",), "spec-zarr"),
    Target("shadowzarr-store", (), "store"),
    Target("shadowzarr-store", ("dask",), "store-dask"),
    Target("shadowzarr-store", ("xarray",), "store-xarray"),
    Target("shadowzarr-store", ("codecs",), "store-codecs"),
    Target("shadowzarr-hdf5", (), "hdf5"),
    Target("shadowzarr-tiff", (), "tiff"),
    Target("shadowzarr-neo", (), "neo"),
    Target("shadowzarr-nwb", (), "nwb"),
    Target("shadowzarr-nwb", ("neuroconv",), "nwb-neuroconv"),
    Target("shadowzarr-icechunk", (), "icechunk"),
    Target("shadowzarr-catalog", (), "catalog"),
    Target("shadowzarr-catalog", ("tiff",), "catalog-tiff"),
    Target("shadowzarr-catalog", ("neo",), "catalog-neo"),
    Target("shadowzarr-catalog", ("dask",), "catalog-dask"),
    Target("shadowzarr", (), "cli"),
    Target("shadowzarr", ("hdf5",), "cli"),
    Target("shadowzarr", ("tiff",), "cli"),
    Target("shadowzarr", ("neo",), "cli"),
    Target("shadowzarr", ("nwb",), "cli"),
    Target("shadowzarr", ("icechunk",), "cli"),
    Target("shadowzarr", ("virtualizarr",), "cli"),
    Target("shadowzarr", ("dask",), "cli"),
    Target("shadowzarr", ("demo",), "cli"),
    Target("shadowzarr", ("plot",), "cli"),
    Target("shadowzarr", ("xarray",), "cli"),
    Target("shadowzarr", ("catalog",), "cli"),
    Target("shadowzarr", ("all",), "cli"),
)


@dataclass(frozen=True, slots=True)
class Closure:
    """A built environment: its python, what it holds and what building it cost."""

    target: Target
    python: Path
    members: tuple[str, ...]  # workspace members installed (editable)
    packages: int  # distributions installed, workspace members included
    installed_bytes: int
    build_seconds: float


def uv_command() -> list[str]:
    """A uv that runs: ``$UV`` (set by ``uv run``), uv on PATH, or ``python -m uv``.

    A pyenv shim named ``uv`` can exist on PATH and fail for the selected Python version, so
    each candidate must answer ``--version``."""
    candidates = [[os.environ["UV"]]] if os.environ.get("UV") else []
    if found := shutil.which("uv"):
        candidates.append([found])
    candidates.append([sys.executable, "-m", "uv"])
    for command in candidates:
        try:
            answered = subprocess.run(
                [*command, "--version"], capture_output=True, timeout=60, check=False
            )
        except OSError:
            continue
        if answered.returncode == 0:
            return command
    raise RuntimeError("these tests need uv (https://docs.astral.sh/uv/): none of PATH runs")


def locked_requirements(target: Target) -> list[str]:
    """The target's locked run-time closure as requirement lines (members as ``-e`` paths)."""
    extras = [arg for extra in target.extras for arg in ("--extra", extra)]
    exported = subprocess.run(
        [
            *uv_command(),
            "export",
            "--package",
            target.package,
            *extras,
            "--no-dev",
            "--frozen",
            "--no-hashes",
            "--no-header",
            "--no-annotate",
            "--quiet",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in exported.stdout.splitlines() if line and not line.startswith("#")]


def build(target: Target, venv: Path) -> Closure:
    """A new virtual environment at ``venv`` holding exactly the target's locked closure."""
    started = time.perf_counter()
    uv = uv_command()
    requirements = locked_requirements(target)
    venv.parent.mkdir(parents=True, exist_ok=True)
    listing = venv.with_suffix(".requirements.txt")
    listing.write_text("\n".join(requirements) + "\n", encoding="utf-8")
    base = os.path.realpath(sys.executable)
    subprocess.run(
        [*uv, "venv", "--quiet", "--python", base, str(venv)],
        capture_output=True,
        check=True,
    )
    python = venv / "bin" / "python"
    install = [*uv, "pip", "install", "--quiet", "--no-deps", "--python", str(python)]
    install += ["-r", str(listing)]
    offline = subprocess.run([*install, "--offline"], cwd=REPO, capture_output=True, check=False)
    if offline.returncode != 0:  # the uv cache lacks something: fetch it from the index
        subprocess.run(install, cwd=REPO, capture_output=True, text=True, check=True)
    members = tuple(
        sorted(
            Path(line.removeprefix("-e").strip()).name for line in requirements if line[:2] == "-e"
        )
    )
    packages, size = _weigh(python)
    return Closure(target, python, members, packages, size, time.perf_counter() - started)


def _weigh(python: Path) -> tuple[int, int]:
    """Distributions installed, and the bytes of everything under site-packages."""
    found = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    site = Path(found.stdout.strip())
    count = sum(1 for _ in site.glob("*.dist-info"))
    size = sum(p.lstat().st_size for p in site.rglob("*") if p.is_file() and not p.is_symlink())
    return count, size


def run_smoke(closure: Closure, work: Path, public_modules: list[str]) -> dict[str, object]:
    """Run the target's smoke job in its environment; returns the job's JSON report."""
    work.mkdir(parents=True, exist_ok=True)
    request = {
        "job": closure.target.job,
        "extras": list(closure.target.extras),
        "members": list(closure.members),
        "modules": public_modules,
        "work": str(work),
    }
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    started = time.perf_counter()
    completed = subprocess.run(
        [str(closure.python), str(SMOKE), json.dumps(request)],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=600,
        check=False,
    )
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        raise AssertionError(
            f"{closure.target.name}: smoke job {closure.target.job!r} failed "
            f"(exit {completed.returncode})\n{completed.stdout[-4000:]}\n{completed.stderr[-6000:]}"
        )
    report: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    report["seconds"] = seconds
    return report
