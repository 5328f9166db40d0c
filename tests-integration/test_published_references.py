"""References written next to the data are served by a web server right away.

``shadowzarr generate`` writes a directory (refs.json and chunk manifests) and a single JSON
file under the usual umask 022; nginx, whose worker runs as an unprivileged user as deployed
servers do, answers 200 for every file, and the references read back over HTTP.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import stat
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.error import HTTPError

import h5py
import numpy as np
import pytest
from shadowzarr.cli import main
from shadowzarr_store import open_rfs
from shadowzarr_testing import NginxServer

pytestmark = pytest.mark.network


def _unprivileged_user() -> str | None:
    """nginx's worker user when this process can start one as root ("nobody" and its group)."""
    if os.geteuid() != 0:
        return None  # nginx then runs as this user; the mode checks below still hold
    nobody = pwd.getpwnam("nobody")
    return f"nobody {grp.getgrgid(nobody.pw_gid).gr_name}"


@pytest.fixture
def public_folder() -> Iterator[Path]:
    """A folder every user may enter, as a web server's document root is (pytest's tmp_path is
    private to its owner)."""
    folder = Path(tempfile.mkdtemp(prefix="shadowzarr-public-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=30) as response:
        response.read()
        return int(response.status)


def test_generated_references_are_served_by_nginx(public_folder: Path) -> None:
    values = np.arange(400 * 64, dtype="<i2").reshape(400, 64)
    source = public_folder / "data.h5"
    directory = public_folder / "data.shadowzarr"
    with NginxServer(public_folder, user=_unprivileged_user()) as server:
        previous = os.umask(0o022)
        try:
            with h5py.File(source, "w") as f:
                f.create_dataset("values", data=values, chunks=(10, 64))  # 40 chunks
            for output in (directory, public_folder / "data.json"):
                assert main(["generate", server.url("data.h5"), "--local-path", str(source),
                             "-o", str(output), "--manifest-threshold", "10"]) == 0  # fmt: skip
        finally:
            os.umask(previous)

        written = [public_folder / "data.json", directory, *directory.rglob("*")]
        assert any(p.is_file() and "/index/" in p.as_posix() for p in written), "no chunk manifest"
        assert {stat.S_IMODE(p.stat().st_mode) for p in written if p.is_dir()} == {0o755}
        assert {stat.S_IMODE(p.stat().st_mode) for p in written if p.is_file()} == {0o644}
        for path in written:
            if path.is_file():
                assert _get(server.url(path.relative_to(public_folder).as_posix())) == 200
        for output in ("data.shadowzarr", "data.json"):
            np.testing.assert_array_equal(open_rfs(server.url(output))["values"][...], values)
        served = {entry.uri for entry in server.entries() if entry.status in (200, 206)}
    assert "/data.shadowzarr/refs.json" in served
    assert any(uri.startswith("/data.shadowzarr/index/values/c/") for uri in served)
    assert "/data.h5" in served


def test_a_private_file_is_refused_by_the_unprivileged_worker(public_folder: Path) -> None:
    """What the references suffered before: a 0600 file answers 403 (the check above means
    something only because this one fails)."""
    user = _unprivileged_user()
    if user is None:
        pytest.skip("nginx can only serve as another user when started as root")
    private = public_folder / "private.json"
    private.write_text("{}")
    private.chmod(0o600)
    with NginxServer(public_folder, user=user) as server, pytest.raises(HTTPError) as refused:
        _get(server.url("private.json"))
    assert refused.value.code == 403
