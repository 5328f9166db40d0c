"""The NeuroConv bridge, tested in its own environment: NeuroConv needs zarr<3, shadowzarr zarr 3.

``tools/neuroconv-env/build.sh`` builds a virtual environment with NeuroConv, SpikeInterface and
roiextractors installed with their zarr requirement overridden (``uv pip install --override``) and
shadowzarr installed from this checkout. The environment is cached under the temporary directory,
keyed by a hash of its requirement files, the packages' ``pyproject.toml`` files (an editable
install writes their entry points, such as zarr's codec registrations, at install time) and this
checkout's path; building it needs PyPI.
Inside it, every ``tools/neuroconv-env/bridge_checks*.py`` file runs (one pytest run). They
compare the virtual files with NeuroConv's own conversions: SpikeGLX AP, LF and NIDQ, Open Ephys
binary and legacy, Intan, Blackrock, SpikeGadgets, MCS raw, Neuralynx (inverted input refused),
EDF, WhiteMatter, WAV audio, MEArec (contiguous, and chunked with gzip through the HDF5
generator; a filter without a codec refused or left to NeuroConv), BioCam (contiguous, and
chunked with gzip; inverted input refused), Neuroscope (the spike-detection channels of the
file), CellExplorer, a TIFF stack, an HDF5 movie, and the imaging formats of
``bridge_checks_imaging.py``; and they run nwbinspector, which installs there (not in the
workspace lock), on virtual files.

The one-line workaround NeuroConv 0.10 needs with zarr 3 (it reads ``zarr.codec_registry`` at
import) is :func:`shadowzarr_nwb.neuroconv_bridge.allow_zarr3`, called before importing it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV_TOOLS = ROOT / "tools" / "neuroconv-env"
KEYED_FILES = ("requirements.txt", "overrides.txt", "build.sh")
CHECK_FILES = sorted(ENV_TOOLS.glob("bridge_checks*.py"))


def _uv() -> str:
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None:
        pytest.fail("uv is needed to build the NeuroConv environment")
    return uv


def _environment() -> Path:
    """The NeuroConv environment for this checkout, built once per requirements."""
    digest = hashlib.sha256(str(ROOT).encode())
    for name in KEYED_FILES:
        digest.update((ENV_TOOLS / name).read_bytes())
    # Editable installs read their metadata (entry points, dependencies) once, when installed.
    for project in sorted((ROOT / "packages").glob("*/pyproject.toml")):
        digest.update(project.read_bytes())
    digest.update(sys.version.encode())
    env = Path(tempfile.gettempdir()) / f"shadowzarr-neuroconv-env-{digest.hexdigest()[:16]}"
    ready = env / ".complete"
    if ready.is_file():
        return env
    building = env.with_name(env.name + f".building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    path = os.environ.get("PATH", "")
    uv_dir = str(Path(_uv()).parent)
    environ = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    environ["PATH"] = uv_dir + os.pathsep + path
    # This interpreter's base, so that uv does not look for (or download) another Python.
    environ["PYTHON"] = getattr(sys, "_base_executable", sys.executable)
    result = subprocess.run(
        ["bash", str(ENV_TOOLS / "build.sh"), str(building)],
        capture_output=True,
        text=True,
        env=environ,
        timeout=900,
        check=False,
    )
    if result.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        pytest.fail(f"building the NeuroConv environment failed:\n{result.stdout}\n{result.stderr}")
    # Built aside and renamed, so a half-built environment is never taken for a cached one; the
    # venv is run as ``<env>/bin/python -m …``, which does not depend on its folder's name.
    (building / ".complete").write_text("built by tests-integration/test_neuroconv_bridge.py\n")
    try:
        building.rename(env)
    except OSError:  # another run finished first
        shutil.rmtree(building, ignore_errors=True)
    return env


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_bridge_equals_neuroconv_conversion() -> None:
    assert ENV_TOOLS / "bridge_checks.py" in CHECK_FILES
    env = _environment()
    environ = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    result = subprocess.run(
        [
            str(env / "bin" / "python"),
            "-m",
            "pytest",
            "-c",
            str(ENV_TOOLS / "pytest.ini"),
            "--rootdir",
            str(ENV_TOOLS),
            "-q",
            "-rA",
            *(str(path) for path in CHECK_FILES),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=environ,
        timeout=1200,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    passed_lines = [line for line in lines if line.startswith("PASSED")]
    passed = {line.split("::")[-1] for line in passed_lines}
    # every check file ran (a file that failed to import would not show up here)
    ran = {Path(line.split()[1].split("::")[0]).name for line in passed_lines}
    assert {path.name for path in CHECK_FILES} <= ran, (ran, result.stdout[-3000:])
    expected = {
        "test_spikeglx[imec0.ap]",
        "test_spikeglx[imec0.lf]",
        "test_spikeglx_nidq",
        "test_openephys_binary",
        "test_intan",
        "test_tiff_stack",
        "test_blackrock",
        "test_whitematter",
        "test_wav_audio",
        "test_openephys_legacy",
        "test_spikegadgets",
        "test_mcs_raw",
        "test_hdf5_movie",
        "test_neuralynx[True]",
        "test_neuralynx[False]",
        "test_edf",
        "test_mearec[contiguous]",
        "test_mearec[chunked-gzip]",
        "test_mearec_filter_without_codec_is_refused_or_copied",
        "test_biocam[contiguous]",
        "test_biocam[chunked-gzip]",
        "test_inverted_biocam_is_refused_or_copied",
        "test_neuroscope",
        "test_cellexplorer",
        "test_scanimage_one_channel",
        "test_scanimage_both_channels_in_one_file",
        "test_scanimage_several_files",
        "test_scanimage_volume",
        "test_thor",
        "test_bruker[1]",
        "test_bruker[3]",
        "test_micromanager[1]",
        "test_micromanager[2]",
        "test_compressed_bruker_is_refused_or_copied",
        "test_write_virtual_nwb_inspection[spikeglx]",
        "test_write_virtual_nwb_inspection[tiff-stack]",
    }
    assert expected <= passed, result.stdout[-3000:]
