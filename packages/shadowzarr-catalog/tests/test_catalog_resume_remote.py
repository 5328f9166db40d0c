"""A run publishing to an object store (moto's real S3 server), killed with SIGKILL before it
ever copied its progress database there, and started again: every asset it had finished is kept
(its row object under ``catalog.rows/``), none of them is asked for again (the log of the proxy
in front of the S3 server says so), the catalog equals a clean run's, and row objects that are
garbage, of another asset than their name says, or of an asset that is not the catalog's are
ignored with a warning; and the checks a row object must pass, case by case."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pytest
from catalog_archive import write_hdf5
from shadowzarr_store import open_rfs
from shadowzarr_testing import assert_array_equal_exact

from shadowzarr_catalog import CatalogRowWarning, generate_catalog
from shadowzarr_catalog import run as run_module
from shadowzarr_catalog.row_objects import read_row_object, row_object, row_object_key

if TYPE_CHECKING:
    from collections.abc import Callable

    from shadowzarr_testing import LatencyProxy, MotoS3

TIMING = ["generated_at", "generation_seconds"]
ASSETS = 24
KILL_AFTER = 3
ROWS = "cat/catalog.rows/"

RUN = """
import json, sys
from shadowzarr_catalog import generate_catalog
source, destination, options = sys.argv[1:]
generate_catalog(source, destination, storage_options=json.loads(options), workers=1,
                 processes=0)
"""


def _table(moto_s3: MotoS3, bucket: str, prefix: str) -> pd.DataFrame:
    data = moto_s3.get(bucket, f"{prefix}/catalog.parquet")
    table = pd.read_parquet(io.BytesIO(data)).drop(columns=TIMING)
    return table.sort_values("asset_id").reset_index(drop=True)


def _destination_requests(front: LatencyProxy, bucket: str) -> dict[str, int]:
    """What a run asked of the destination bucket, by kind."""
    counts = {"list rows": 0, "get rows": 0, "get database": 0, "delete": 0}
    for entry in front.log:
        path, query = entry["path"], entry["query"]
        if entry["method"] == "GET" and path.rstrip("/") == f"/{bucket}" and "list-type" in query:
            counts["list rows"] += f"prefix={ROWS}" in query.replace("%2F", "/")
        elif entry["method"] == "GET" and path.startswith(f"/{bucket}/{ROWS}"):
            counts["get rows"] += 1
        elif entry["method"] == "GET" and path == f"/{bucket}/cat/catalog.sqlite":
            counts["get database"] += 1
        elif entry["method"] == "POST" and "delete" in query:
            counts["delete"] += 1
    return counts


def _source_requests(front: LatencyProxy, bucket: str, name: str) -> list[dict[str, Any]]:
    return [e for e in front.log if e["path"] == f"/{bucket}/archive/{name}"]


@pytest.mark.network
def test_killed_run_to_s3_keeps_every_finished_asset(
    moto_s3: MotoS3,
    s3_bucket_name: str,
    make_proxy: Callable[..., LatencyProxy],
    tmp_path: Path,
) -> None:
    source_bucket = moto_s3.create_bucket(s3_bucket_name)
    bucket = moto_s3.create_bucket(f"{s3_bucket_name}-out")
    front = make_proxy(moto_s3.endpoint, latency=0.01)
    options = {**moto_s3.storage_options(), "endpoint": front.base_url}
    names = [f"a{i:02d}.h5" for i in range(ASSETS)]
    expected = {}
    for i, name in enumerate(names):
        expected[name] = write_hdf5(tmp_path / name, i)
        moto_s3.put(source_bucket, f"archive/{name}", (tmp_path / name).read_bytes())
    source = f"s3://{source_bucket}/archive/"
    generate_catalog(source, f"s3://{bucket}/clean", storage_options=options, processes=0)

    destination = f"s3://{bucket}/cat"
    command = [sys.executable, "-c", RUN, source, destination, json.dumps(options)]
    running = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    started = time.monotonic()
    while len(moto_s3.keys(bucket, ROWS)) < KILL_AFTER and running.poll() is None:
        assert time.monotonic() - started < 120, "the catalog run never finished an asset"
        time.sleep(0.01)
    running.send_signal(signal.SIGKILL)
    assert running.stderr is not None
    assert running.wait(timeout=30) == -signal.SIGKILL, running.stderr.read()
    running.stderr.close()
    keys = moto_s3.keys(bucket, "cat/")
    assert "cat/catalog.sqlite" not in keys  # killed before the database was ever copied there
    assert "cat/catalog.parquet" not in keys
    row_keys = [k for k in keys if k.startswith(ROWS)]
    rows = [json.loads(moto_s3.get(bucket, k))["row"] for k in row_keys]
    finished = {row["asset_id"] for row in rows}
    assert KILL_AFTER <= len(finished) == len(row_keys) < ASSETS
    assert finished <= set(names)
    # each finished asset's reference set is whole at the destination
    assert all(f"cat/{row['reference']}/refs.json" in keys for row in rows)

    # Row objects that must be ignored: garbage; a row under the name of another asset; a
    # well-formed row of an asset the source does not list (written as a run writes one).
    garbage = f"{ROWS}00000000000000000001-0123456789abcdef.json"
    moto_s3.put(bucket, garbage, b"\x00garbage{")
    misnamed = row_object_key("a-name-of-another-asset.h5")
    moto_s3.put(bucket, f"cat/{misnamed}", moto_s3.get(bucket, row_keys[0]))
    outsider = {**rows[0], "asset_id": "x.h5", "path": "x.h5", "reference": "refs/x.h5.shadowzarr"}
    foreign = row_object_key("x.h5")
    moto_s3.put(bucket, f"cat/{foreign}", row_object(outsider))
    moto_s3.put(bucket, f"{ROWS}not-a-row.txt", b"{}")
    front.wait_idle()
    front.reset()
    with pytest.warns(CatalogRowWarning) as warned:
        summary = generate_catalog(
            source, destination, storage_options=options, workers=1, processes=0
        )
    messages = sorted(str(w.message) for w in warned)
    assert len(messages) == 4, messages
    relative = garbage.removeprefix("cat/")
    assert any("DecodeError" in m and relative in m for m in messages), messages
    assert any("another asset than its name" in m and misnamed in m for m in messages), messages
    assert any("the source does not list" in m and foreign in m for m in messages), messages
    assert any("not a row object's name" in m for m in messages), messages
    assert summary.generated == ASSETS - len(finished)

    # The source's log: a finished asset is not asked for again, every other one is generated.
    for name in names:
        mine = _source_requests(front, source_bucket, name)
        assert (len(mine) == 0) == (name in finished), (name, mine)
    # What resuming cost at the destination: the database (not there), one listing page of the
    # row objects, one GET for each row object with a row's name (the finished assets' and the
    # three planted ones); at the end one request deleted the rows the uploaded database holds.
    cost = _destination_requests(front, bucket)
    assert cost == {
        "list rows": 1,
        "get rows": len(finished) + 3,
        "get database": 1,
        "delete": 1,
    }, cost

    pd.testing.assert_frame_equal(_table(moto_s3, bucket, "cat"), _table(moto_s3, bucket, "clean"))
    index = json.loads(moto_s3.get(bucket, "cat/index.json"))
    for name in sorted(finished)[:2] + sorted(set(names) - finished)[:2]:
        group = open_rfs(f"{destination}/{index[name]}", storage_options=options)
        for path, values in expected[name].items():
            assert_array_equal_exact(group[path][:], values, f"{name}:{path}")
    # The rows are in the uploaded database now and their objects deleted; the ignored stay.
    assert moto_s3.keys(bucket, ROWS) == sorted(
        [garbage, f"cat/{misnamed}", f"cat/{foreign}", f"{ROWS}not-a-row.txt"]
    )

    # Nothing changed: nothing generated, no request to any asset (the source's one listing).
    front.reset()
    with pytest.warns(CatalogRowWarning):
        again = generate_catalog(source, destination, storage_options=options, processes=0)
    assert (again.generated, again.unchanged) == (0, ASSETS)
    assert not any(e["path"].startswith(f"/{source_bucket}/archive/") for e in front.log)
    assert _destination_requests(front, bucket)["list rows"] == 1
    pd.testing.assert_frame_equal(_table(moto_s3, bucket, "cat"), _table(moto_s3, bucket, "clean"))


@pytest.mark.network
def test_row_objects_a_failed_delete_left_are_not_read_again(
    moto_s3: MotoS3,
    s3_bucket_name: str,
    make_proxy: Callable[..., LatencyProxy],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The row objects an uploaded database holds are deleted after the upload; when that
    delete fails (as when a run is killed between the two) they stay, listed but not read by
    the next run, which deletes them. With a database copied after every row, each row's
    object is deleted as it is folded in."""
    source_bucket = moto_s3.create_bucket(s3_bucket_name)
    bucket = moto_s3.create_bucket(f"{s3_bucket_name}-out")
    front = make_proxy(moto_s3.endpoint)
    options = {**moto_s3.storage_options(), "endpoint": front.base_url}
    names = [f"a{i}.h5" for i in range(4)]
    for i, name in enumerate(names):
        write_hdf5(tmp_path / name, i)
        moto_s3.put(source_bucket, f"archive/{name}", (tmp_path / name).read_bytes())
    source = f"s3://{source_bucket}/archive/"
    destination = f"s3://{bucket}/cat"
    front.fail_matching(f"^/{bucket}/?$", "500", method="POST")  # every delete of objects
    first = generate_catalog(source, destination, storage_options=options, processes=0)
    assert first.generated == len(names)
    assert _destination_requests(front, bucket)["delete"] >= 2  # tried, and tried again
    assert len(moto_s3.keys(bucket, ROWS)) == len(names)
    assert "cat/catalog.sqlite" in moto_s3.keys(bucket, "cat/")

    front.clear_faults()
    front.reset()
    second = generate_catalog(source, destination, storage_options=options, processes=0)
    assert (second.generated, second.unchanged) == (0, len(names))
    cost = _destination_requests(front, bucket)
    assert cost == {"list rows": 1, "get rows": 0, "get database": 1, "delete": 1}, cost
    assert moto_s3.keys(bucket, ROWS) == []
    assert not any(e["path"].startswith(f"/{source_bucket}/archive/") for e in front.log)

    changed = ["a1.h5", "a3.h5"]
    for name in changed:
        write_hdf5(tmp_path / name, 9)
        moto_s3.put(source_bucket, f"archive/{name}", (tmp_path / name).read_bytes())
    monkeypatch.setattr(run_module, "STATE_UPLOAD_SECONDS", 0.0)
    front.reset()
    third = generate_catalog(source, destination, storage_options=options, processes=0)
    assert third.generated == len(changed)
    uploads = [e for e in front.log if e["method"] == "PUT" and e["path"].endswith(".sqlite")]
    assert len(uploads) == len(changed) + 1  # after each row, and at the end
    assert _destination_requests(front, bucket)["delete"] == len(changed)  # none left at the end
    assert moto_s3.keys(bucket, ROWS) == []
    table = _table(moto_s3, bucket, "cat").set_index("asset_id")
    assert sorted(table.index) == names
    assert (table.status == "ok").all()


def _row(asset_id: str = "sub/a.nwb", **changes: Any) -> dict[str, Any]:
    row = {
        "asset_id": asset_id,
        "path": asset_id,
        "source_url": f"s3://bucket/{asset_id}",
        "size": 10,
        "etag": '"e"',
        "format": "hdf5",
        "status": "ok",
        "error_class": None,
        "error_message": None,
        "retry": False,
        "datasets": 1,
        "chunks": 2,
        "unsupported": [],
        "reference": f"refs/{asset_id}.shadowzarr",
        "reference_bytes": 100,
        "generated_at": "2026-12-07T12:00:00+00:00",
        "generation_seconds": 0.5,
        "requests": 3,
        "bytes_read": 4000,
    }
    return {**row, **changes}


def _document(row: dict[str, Any], **changes: Any) -> bytes:
    return json.dumps({"format": "shadowzarr-catalog-row/1", "row": row, **changes}).encode()


HOSTILE = {
    "not JSON": b"\xff\xfe{",
    "JSON nested too deep": b"[" * 100_000,
    "not an object": b"[1, 2]",
    "another format": _document(_row(), format="shadowzarr-catalog-row/2"),
    "a column missing": _document({k: v for k, v in _row().items() if k != "etag"}),
    "a column more": _document(_row(password="x")),
    "an unknown status": _document(_row(status="done\r\n")),
    "a reference outside refs/": _document(_row(reference="../../elsewhere.shadowzarr")),
    "another asset's reference": _document(_row(reference="refs/sub/b.nwb.shadowzarr")),
    "a size that is text": _document(_row(size="10")),
    "a path that is a number": _document(_row(path=7)),
    "unsupported not a list": _document(_row(unsupported={"a": 1})),
    "a time that is not one": _document(_row(generated_at="yesterday")),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_row_object_is_ignored_with_a_warning(case: str) -> None:
    key = row_object_key("sub/a.nwb")
    with pytest.warns(CatalogRowWarning, match="ignored 'catalog.rows/"):
        assert read_row_object(key, HOSTILE[case], {"sub/a.nwb"}) is None


def test_a_row_object_is_read_back_only_for_its_own_known_asset() -> None:
    row = _row()
    assert read_row_object(row_object_key("sub/a.nwb"), row_object(row), {"sub/a.nwb"}) == row
    json_form = _row(reference="refs/sub/a.nwb.shadowzarr.json")
    assert read_row_object(row_object_key("sub/a.nwb"), row_object(json_form), {"sub/a.nwb"})
    failed = _row(status="failed", reference=None, error_class="SourceError", error_message="x")
    assert read_row_object(row_object_key("sub/a.nwb"), row_object(failed), {"sub/a.nwb"})
    with pytest.warns(CatalogRowWarning, match="another asset than its name"):
        assert read_row_object(row_object_key("sub/b.nwb"), row_object(row), {"sub/a.nwb"}) is None
    with pytest.warns(CatalogRowWarning, match="the source does not list"):
        assert read_row_object(row_object_key("sub/a.nwb"), row_object(row), {"b"}) is None
    with pytest.warns(CatalogRowWarning, match="not a row object's name"):
        assert read_row_object("catalog.rows/../x.json", row_object(row), {"sub/a.nwb"}) is None
