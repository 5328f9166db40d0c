#!/usr/bin/env bash
# Build a virtual environment holding NeuroConv and shadowzarr (from this checkout), with zarr 3.
#
#   [PYTHON=/path/to/python3.12] tools/neuroconv-env/build.sh <venv-dir>
#
# SpikeInterface (and so NeuroConv) requires zarr<3; shadowzarr needs zarr 3. They install together
# only with that requirement overridden (uv pip install --override overrides.txt).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${1:?usage: build.sh <venv-dir>}"
# An interpreter given by path, so uv never downloads one (only package registries are reachable).
python="${PYTHON:-$(command -v python3.12 || command -v python3)}"
uv venv --python "$python" "$venv"
uv pip install --python "$venv/bin/python" \
    -r "$here/requirements.txt" \
    --override "$here/overrides.txt" \
    -e "$root/packages/shadowzarr-spec" \
    -e "$root/packages/shadowzarr-store" \
    -e "$root/packages/shadowzarr-hdf5" \
    -e "$root/packages/shadowzarr-tiff" \
    -e "$root/packages/shadowzarr-neo" \
    -e "$root/packages/shadowzarr-nwb" \
    pytest
