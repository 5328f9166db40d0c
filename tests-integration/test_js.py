"""Run the JavaScript store's test suite (`npm test` in js/: Node tests, the format's conformance
cases and Chromium tests) and its release check (`npm run test:release`).

The JS tests read fixtures that js/test/make_fixtures.py writes with this interpreter (h5py,
numpy, shadowzarr_spec), and compare every array zarrita reads through the store with them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

JS_DIR = Path(__file__).resolve().parents[1] / "js"


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(600)
def test_npm_test_passes() -> None:
    npm = shutil.which("npm")
    assert npm is not None, "npm is not installed; the JS store's tests need Node 20+ and npm"
    assert (JS_DIR / "node_modules").is_dir(), (
        f"{JS_DIR / 'node_modules'} is missing: run `npm ci` in js/ first"
    )
    env = {**os.environ, "PYTHON": sys.executable}
    result = subprocess.run(
        [npm, "test"],
        cwd=JS_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=590,
        check=False,
    )
    if result.returncode != 0:
        print(result.stdout)
        print(result.stderr, file=sys.stderr)
    assert result.returncode == 0, (
        f"npm test failed:\n{result.stdout[-20000:]}\n{result.stderr[-5000:]}"
    )


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(900)
def test_release_tarball() -> None:
    """`npm run test:release`: the tarball from `npm pack` installs with one copy of zarrita, its
    types resolve under node10, bundler and nodenext, and a consumer project reads the fixtures'
    reference directories in Node (also from a folder install) and in a Web Worker in Chromium."""
    npm = shutil.which("npm")
    assert npm is not None, "npm is not installed; the JS store's tests need Node 20+ and npm"
    assert (JS_DIR / "node_modules").is_dir(), (
        f"{JS_DIR / 'node_modules'} is missing: run `npm ci` in js/ first"
    )
    result = subprocess.run(
        [npm, "run", "test:release"],
        cwd=JS_DIR,
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=880,
        check=False,
    )
    print(result.stdout[-5000:])
    assert result.returncode == 0, (
        f"release check failed:\n{result.stdout[-20000:]}\n{result.stderr[-5000:]}"
    )
    assert "release check passed" in result.stdout
