"""``shadowzarr catalog``'s options of its own: ``--scheduler`` refuses what is not a reachable
Dask scheduler with a one-line error (no catalog started), and the local sizing options with
it. (The command on a `LocalCluster` is tested over the DANDI-like archive, in the catalog
package's tests.)"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from shadowzarr.cli import catalog as catalog_command
from shadowzarr.cli import main


def _folder(root: Path) -> Path:
    root.mkdir()
    with h5py.File(root / "a.h5", "w") as f:
        f.create_dataset("x", data=np.arange(4800, dtype="<i4"), chunks=(4,))  # 1,200 chunks
    return root


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--scheduler", "no-port-here"], "missing port number"),
        (["--scheduler", "http://127.0.0.1:1"], "unknown address scheme"),
        (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "not with --scheduler"),
        (["--scheduler", "tcp://127.0.0.1:1", "--processes", "0"], "not with --scheduler"),
    ],
)
def test_a_bad_scheduler_is_one_line_and_no_catalog(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _folder(tmp_path / "in")
    assert main(["catalog", str(source), str(tmp_path / "out"), *extra]) == 1
    err = capsys.readouterr().err
    assert err.startswith("shadowzarr catalog: error: "), err
    assert message in err, err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_an_unreachable_scheduler_times_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog_command, "SCHEDULER_TIMEOUT", 1)
    source = _folder(tmp_path / "in")
    code = main(["catalog", str(source), str(tmp_path / "out"), "--scheduler", "tcp://127.0.0.1:9"])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("shadowzarr catalog: error: "), err
    assert "127.0.0.1:9" in err, err
    assert not (tmp_path / "out").exists()
