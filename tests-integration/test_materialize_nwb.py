"""A real NWB file → references → materialize → an NWB Zarr file that NWBZarrIO opens from its
folder with no source files, and that zarrita.js reads too."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hdmf.backends.hdf5 import H5DataIO
from hdmf_zarr import NWBZarrIO
from pynwb import NWBHDF5IO, NWBFile, TimeSeries
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs
from shadowzarr_store import materialize

REPO = Path(__file__).resolve().parents[1]
# Plain zarrita on the folder; NWB attributes such as resolution=NaN are bare JSON tokens there
# (what hdmf-zarr 0.14 reads), so metadata goes through shadowzarr's normalizer when asked.
NODE_READER = """
import FileSystemStore from "@zarrita/storage/fs";
import * as zarr from "zarrita";
import { normalizeMetadataText } from "./dist/index.js";
const [root, path, normalize] = process.argv.slice(2);
const plain = new FileSystemStore(root);
const store = normalize !== "normalize" ? plain : {
  async get(key, options) {
    const bytes = await plain.get(key, options);
    if (!bytes || !key.endsWith("zarr.json")) return bytes;
    return new TextEncoder().encode(normalizeMetadataText(new TextDecoder().decode(bytes)));
  },
};
const array = await zarr.open.v3(zarr.root(store).resolve(path), { kind: "array" });
const chunk = await zarr.get(array, null);
console.log(JSON.stringify({ shape: chunk.shape, data: Array.from(chunk.data, Number) }));
"""


def write_nwb(path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    signal = rng.integers(-500, 500, size=(6000, 6), dtype=np.int16)
    nwbfile = NWBFile(
        session_description="materialize",
        identifier="m-1",
        session_start_time=datetime(2026, 1, 1, tzinfo=UTC),
    )
    nwbfile.add_acquisition(
        TimeSeries(
            name="signal",
            data=H5DataIO(signal, chunks=(500, 6), compression="gzip"),
            unit="uV",
            rate=1000.0,
            resolution=float("nan"),
        )
    )
    for trial in range(4):
        nwbfile.add_trial(start_time=float(trial), stop_time=trial + 0.5)
    with NWBHDF5IO(str(path), "w") as io:
        io.write(nwbfile)
    return {"signal": signal}


def test_materialized_nwb_opens_without_sources(tmp_path: Path) -> None:
    source = tmp_path / "session.nwb"
    expected = write_nwb(source)
    refs = write_rfs(generate_rfs(str(source)), tmp_path / "session.shadowzarr")
    dest = tmp_path / "session.nwb.zarr"
    report = materialize(refs, dest, verify=True, target_chunk_bytes=24_000)
    assert report["acquisition/signal/data"].action == "rewritten"
    assert report["acquisition/signal/data"].chunks == (2000, 6)
    with NWBHDF5IO(str(source), "r") as io:
        original = io.read()
        want_trials = original.trials.to_dataframe()
        want_description = original.session_description
    source.unlink()
    with NWBZarrIO(str(dest), mode="r") as io:
        nwbfile = io.read()
        np.testing.assert_array_equal(nwbfile.acquisition["signal"].data[:], expected["signal"])
        assert nwbfile.session_description == want_description
        assert nwbfile.trials.to_dataframe().equals(want_trials)


def test_zarrita_reads_the_materialized_store(tmp_path: Path) -> None:
    if not (REPO / "js" / "node_modules" / "zarrita").exists():
        pytest.fail("js/node_modules is missing: run `npm ci` in js/ (tools/test does)")
    source = tmp_path / "session.nwb"
    expected = write_nwb(source)
    refs = write_rfs(generate_rfs(str(source)), tmp_path / "session.shadowzarr")
    dest = tmp_path / "out.zarr"
    materialize(refs, dest, target_chunk_bytes=24_000)
    npm = shutil.which("npm") or "npm"
    built = subprocess.run(
        [npm, "run", "build"], cwd=REPO / "js", capture_output=True, text=True, check=False
    )
    assert built.returncode == 0, built.stdout + built.stderr
    script = REPO / "js" / ".materialize-check.mjs"
    script.write_text(NODE_READER)

    def node_read(path: str, *extra: str) -> dict[str, list[int]]:
        result = subprocess.run(
            [shutil.which("node") or "node", str(script), str(dest), path, *extra],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO / "js",
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    try:
        starts = node_read(
            "intervals/trials/start_time" if (dest / "intervals").exists() else "trials/start_time"
        )
        signal = node_read("acquisition/signal/data", "normalize")
    finally:
        script.unlink()
    np.testing.assert_array_equal(starts["data"], [0, 1, 2, 3])
    assert signal["shape"] == [6000, 6]
    np.testing.assert_array_equal(np.array(signal["data"]).reshape(6000, 6), expected["signal"])
