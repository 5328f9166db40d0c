"""materialize writes an ordinary Zarr store equal to what the references read, resumably."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import distributed
import numpy as np
import pytest
import zarr
from shadowzarr_spec import RfsBuilder, write_rfs
from zarr.codecs import BloscCodec

from shadowzarr_store import materialize
from shadowzarr_store.materialize import MaterializeError
from shadowzarr_store.materialize.plan import default_chunks
from shadowzarr_store.materialize.progress_log import PROGRESS_PREFIX

REWRITE_MODULE = sys.modules["shadowzarr_store.materialize.rewrite"]


class Interrupted(Exception):
    """Stands for a crash in the middle of a copy."""


def make_refs(tmp_path: Path, rows: int = 5000) -> tuple[Path, dict[str, np.ndarray]]:
    rng = np.random.default_rng(3)
    signal = rng.integers(-1000, 1000, size=(rows, 8), dtype=np.int16)
    times = np.cumsum(rng.random(rows)).astype(">f8")
    raw = tmp_path / "raw.bin"
    header = b"\x00" * 100
    raw.write_bytes(header + signal.tobytes() + times.tobytes())
    builder = RfsBuilder()
    builder.add_group("", {"nan": float("nan"), "title": "session"})
    builder.add_group("acq")
    builder.add_array(
        "acq/signal",
        shape=signal.shape,
        data_type=signal.dtype,
        chunk_shape=[700, 8],
        attributes={"unit": "uV"},
    )
    builder.add_contiguous_chunks(
        "acq/signal", url=str(raw), start=100, shape=signal.shape, chunk_shape=[700, 8], itemsize=2
    )
    builder.add_array("acq/times", shape=times.shape, data_type=times.dtype, chunk_shape=[rows])
    builder.add_chunk("acq/times", (0,), str(raw), 100 + signal.nbytes, times.nbytes)
    labels = np.array([3, 1, 4], dtype="<i8")
    builder.add_array("labels", shape=[3], data_type=labels.dtype)
    builder.add_inline_chunk("labels", (0,), labels.tobytes())
    path = write_rfs(builder.build(), tmp_path / "refs.shadowzarr")
    return path, {"acq/signal": signal, "acq/times": times, "labels": labels}


def test_materialized_store_reads_back_without_sources(tmp_path: Path) -> None:
    refs, expected = make_refs(tmp_path)
    dest = tmp_path / "out.zarr"
    report = materialize(refs, dest, verify=True, target_chunk_bytes=16_000)
    assert report.verified
    assert report["acq/signal"].action == "rewritten"
    assert report["acq/signal"].chunks == (1000, 8)
    assert report["labels"].action == "copied"
    assert 0 < report["acq/signal"].stored_bytes <= report["acq/signal"].nbytes
    (tmp_path / "raw.bin").unlink()
    root = zarr.open_group(dest, mode="r")
    for path, values in expected.items():
        np.testing.assert_array_equal(root[path][:], values)
    assert root["acq/signal"].compressors, "rewritten arrays get zarr's default compressor"
    assert root.attrs["title"] == "session"
    assert root["acq/signal"].attrs["unit"] == "uV"
    assert not (tmp_path / ".out.zarr.materialize-progress").exists()


def test_layout_chooses_chunks_and_codecs(tmp_path: Path) -> None:
    refs, expected = make_refs(tmp_path)

    def layout(path: str, array: object) -> dict[str, object] | None:
        if path == "acq/signal":
            return {"chunks": (500, 4), "compressors": BloscCodec(cname="zstd", clevel=5)}
        return None

    dest = tmp_path / "custom.zarr"
    report = materialize(refs, dest, layout=layout)
    assert report["acq/signal"].chunks == (500, 4)
    assert report["acq/times"].action == "copied"
    signal = zarr.open_array(dest, path="acq/signal", mode="r")
    assert signal.chunks == (500, 4)
    np.testing.assert_array_equal(signal[:], expected["acq/signal"])
    np.testing.assert_array_equal(
        zarr.open_array(dest, path="acq/times", mode="r")[:], expected["acq/times"]
    )


def test_interrupted_run_resumes_to_the_same_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refs, expected = make_refs(tmp_path, rows=20_000)
    dest = tmp_path / "resumed.zarr"
    from shadowzarr_store.materialize import engine

    real_copy = engine.copy_regions
    calls = {"regions": 0}

    async def dying_copy(source, destination, regions, indices, *, concurrency=8, on_done=None):  # type: ignore[no-untyped-def]
        async def counting(index: int) -> None:
            calls["regions"] += 1
            if on_done is not None:
                await on_done(index)
            if calls["regions"] >= 7:
                raise Interrupted("simulated interruption")

        await real_copy(source, destination, regions, indices, concurrency=1, on_done=counting)

    monkeypatch.setattr(REWRITE_MODULE, "copy_regions", dying_copy)
    with pytest.raises(Interrupted):
        materialize(refs, dest, target_chunk_bytes=16_000)
    progress_dir = tmp_path / ".resumed.zarr.materialize-progress" / PROGRESS_PREFIX
    progress = json.loads((progress_dir / "acq%2Fsignal.json").read_text())
    assert 0 < len(progress["done"]) < 20
    assert not progress["complete"]
    monkeypatch.setattr(REWRITE_MODULE, "copy_regions", real_copy)
    report = materialize(refs, dest, target_chunk_bytes=16_000, verify=True)
    assert report.resumed_regions >= len(progress["done"])
    for path, values in expected.items():
        np.testing.assert_array_equal(zarr.open_array(dest, path=path, mode="r")[:], values)
    fresh = tmp_path / "fresh.zarr"
    materialize(refs, fresh, target_chunk_bytes=16_000)
    for path in expected:
        resumed_chunks = sorted(
            p.relative_to(dest).as_posix() for p in (dest / path).rglob("*") if p.is_file()
        )
        fresh_chunks = sorted(
            p.relative_to(fresh).as_posix() for p in (fresh / path).rglob("*") if p.is_file()
        )
        assert resumed_chunks == fresh_chunks


def test_verify_catches_a_wrong_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refs, _ = make_refs(tmp_path)
    from shadowzarr_store.materialize import engine

    real_copy = engine.copy_regions

    async def corrupting(source, destination, regions, indices, *, concurrency=8, on_done=None):  # type: ignore[no-untyped-def]
        await real_copy(
            source, destination, regions, indices, concurrency=concurrency, on_done=on_done
        )
        await destination.setitem(regions[0], np.zeros_like(await source.getitem(regions[0])))

    monkeypatch.setattr(REWRITE_MODULE, "copy_regions", corrupting)
    with pytest.raises(MaterializeError, match="differ"):
        materialize(refs, tmp_path / "bad.zarr", verify=True, target_chunk_bytes=16_000)


def test_zip_destination(tmp_path: Path) -> None:
    refs, expected = make_refs(tmp_path)
    dest = tmp_path / "out.zip"
    materialize(refs, dest)
    store = zarr.storage.ZipStore(dest, mode="r")
    np.testing.assert_array_equal(
        zarr.open_array(store, path="acq/signal", mode="r")[:], expected["acq/signal"]
    )
    store.close()


def test_default_chunks_are_about_four_mebibytes() -> None:
    assert default_chunks((10_000_000, 384), np.int16, 4 * 2**20) == (5461, 384)
    rows, channels = default_chunks((100, 3), np.float64, 4 * 2**20)
    assert (rows, channels) == (100, 3)
    assert math.prod(default_chunks((10**9,), np.float32, 4 * 2**20)) * 4 == 4 * 2**20


def test_same_result_on_a_local_dask_cluster(tmp_path: Path) -> None:
    refs, expected = make_refs(tmp_path, rows=20_000)
    single = tmp_path / "single.zarr"
    materialize(refs, single, target_chunk_bytes=16_000)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        clustered = tmp_path / "cluster.zarr"
        report = materialize(refs, clustered, target_chunk_bytes=16_000, client=client, verify=True)
    assert report.verified
    for path in expected:
        a = zarr.open_array(single, path=path, mode="r")
        b = zarr.open_array(clustered, path=path, mode="r")
        np.testing.assert_array_equal(a[:], b[:])
        assert _files(single, path) == _files(clustered, path)


@pytest.mark.timeout(120)
def test_an_in_process_cluster_does_not_deadlock(tmp_path: Path) -> None:
    """Workers in threads of this process (processes=False) share zarr's event loop with the
    caller, which must not block it while it waits for them."""
    refs, expected = make_refs(tmp_path, rows=5_000)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        materialize(refs, tmp_path / "copy.zarr", target_chunk_bytes=16_000, client=client)
    for path, values in expected.items():
        np.testing.assert_array_equal(zarr.open_array(tmp_path / "copy.zarr", path=path)[:], values)


def test_chunks_copied_as_stored_ignore_a_sharded_view(tmp_path: Path) -> None:
    """A sharded view serves an index before each chunk's data: a copy of the stored bytes must
    never take those, whatever store options the caller passes."""
    refs, expected = make_refs(tmp_path)
    dest = tmp_path / "as-stored.zarr"
    report = materialize(refs, dest, layout=lambda path, array: None, sharded_view=2048)
    assert {report[path].action for path in expected} == {"copied"}
    root = zarr.open_group(dest, mode="r")
    for path, values in expected.items():
        np.testing.assert_array_equal(root[path][:], values)


def _files(root: Path, path: str) -> list[tuple[str, bytes]]:
    """Every stored file of array ``path`` under ``root``, with its bytes."""
    return sorted(
        (p.relative_to(root).as_posix(), p.read_bytes())
        for p in (root / path).rglob("*")
        if p.is_file()
    )
