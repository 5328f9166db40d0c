"""A local folder becomes a catalog: every readable asset's references read back what h5py and
tifffile wrote, every other asset has a row that says why, and later runs redo only what
changed."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from catalog_archive import STATUSES, Expected, make_archive, write_hdf5
from neo_recordings.micromed import write_micromed
from neo_recordings.winwcp import write_winwcp
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_neo.generate import buffer_path
from shadowzarr_store import open_rfs
from shadowzarr_store.transport import redact
from shadowzarr_testing import assert_array_equal_exact

from shadowzarr_catalog import AssetLeftOutWarning, generate_catalog

EVERY_COLUMN = [
    "asset_id",
    "path",
    "source_url",
    "size",
    "etag",
    "format",
    "status",
    "error_class",
    "error_message",
    "retry",
    "datasets",
    "chunks",
    "unsupported",
    "reference",
    "reference_bytes",
    "generated_at",
    "generation_seconds",
    "requests",
    "bytes_read",
]


@pytest.fixture
def archive(tmp_path: Path) -> tuple[Path, Expected]:
    root = tmp_path / "archive"
    return root, make_archive(root)


def read_catalog(destination: Path) -> pd.DataFrame:
    return pd.read_parquet(destination / "catalog.parquet").set_index("asset_id")


def assert_published(destination: Path, expected: Expected) -> None:
    """Every expected asset's references, opened from the index, read its values exactly."""
    index = json.loads((destination / "index.json").read_text())
    assert sorted(index) == sorted(expected)
    for asset, datasets in expected.items():
        group = open_rfs(str(destination / index[asset]))
        for path, values in datasets.items():
            assert_array_equal_exact(group[path][:], values, f"{asset}:{path}")


def test_a_folder_becomes_a_catalog(archive: tuple[Path, Expected], tmp_path: Path) -> None:
    root, expected = archive
    destination = tmp_path / "catalog"
    summary = generate_catalog(root, destination, workers=4)

    assert summary.listed == len(expected) + len(STATUSES)
    assert summary.generated == summary.listed
    assert summary.statuses == {"failed": 2, "ok": len(expected), "skipped": 1}
    assert set(summary.failures) == {"broken.h5", "fake.nwb"}
    table = read_catalog(destination)
    assert list(table.reset_index().columns) == EVERY_COLUMN
    assert ".hidden.h5" not in table.index
    for asset, status in STATUSES.items():
        assert table.loc[asset, "status"] == status
    assert table.loc["fake.nwb", "error_class"] == "SourceFormatError"
    assert not table.loc["fake.nwb", "retry"]  # its bytes fail again until they change
    assert table.loc["broken.h5", "format"] == "hdf5"
    assert "NEO" in table.loc["notes.txt", "error_message"]

    published = table[table.status == "ok"]
    assert sorted(published.index) == sorted(expected)
    assert set(published.format) == {"hdf5", "tiff"}
    hdf5 = published[published.format == "hdf5"]
    assert (hdf5.datasets == 3).all()
    assert (hdf5.chunks > 0).all()
    assert (published.reference_bytes > 0).all()
    assert published.error_class.isna().all()
    assert table.requests.isna().all()
    assert table.bytes_read.isna().all()
    for asset in published.index:
        path = root / asset
        assert table.loc[asset, "size"] == path.stat().st_size
        assert table.loc[asset, "etag"] == f"mtime_ns:{path.stat().st_mtime_ns}"
        assert table.loc[asset, "source_url"] == str(path.resolve())
        assert table.loc[asset, "reference"] == f"refs/{asset}.shadowzarr"
        assert list(table.loc[asset, "unsupported"]) == []
    assert_published(destination, expected)


def test_a_rerun_regenerates_only_what_changed(
    archive: tuple[Path, Expected], tmp_path: Path
) -> None:
    root, expected = archive
    destination = tmp_path / "catalog"
    generate_catalog(root, destination, workers=4)
    first = read_catalog(destination)

    again = generate_catalog(root, destination, workers=4)
    assert (again.generated, again.unchanged, again.removed) == (0, again.listed, 0)
    assert again.failures == {}
    pd.testing.assert_frame_equal(read_catalog(destination), first)

    replaced = ["sub-0/raw-0.h5", "sub-1/ses-1.nwb", "matlab/data.mat"]
    for number, asset in enumerate(replaced):
        (root / asset).unlink()
        expected[asset] = write_hdf5(root / asset, 100 + number)
    os.remove(root / "sub-2/raw-2.h5")
    del expected["sub-2/raw-2.h5"]

    third = generate_catalog(root, destination, workers=4)
    assert (third.generated, third.removed) == (3, 1)
    table = read_catalog(destination)
    assert table.loc["sub-2/raw-2.h5", "status"] == "removed"
    changed = table.generated_at != first.generated_at
    assert sorted(table.index[changed]) == sorted(replaced)
    assert_published(destination, expected)

    shutil.copy(root / "sub-0/raw-0.h5", root / "sub-2/raw-2.h5")  # back, with other bytes
    fourth = generate_catalog(root, destination, workers=4)
    assert (fourth.generated, fourth.removed) == (1, 0)
    assert read_catalog(destination).loc["sub-2/raw-2.h5", "status"] == "ok"


def test_json_form_with_a_glob(archive: tuple[Path, Expected], tmp_path: Path) -> None:
    root, expected = archive
    destination = tmp_path / "catalog"
    summary = generate_catalog(root, destination, include="sub-1/*", form="json")
    wanted = {asset: v for asset, v in expected.items() if asset.startswith("sub-1/")}
    assert summary.listed == len(wanted)
    assert summary.statuses == {"ok": len(wanted)}
    for asset in wanted:
        assert (destination / "refs" / f"{asset}.shadowzarr.json").is_file()
    assert_published(destination, wanted)

    # The same catalog asked for directories: each asset is written again in that form.
    moved = generate_catalog(root, destination, include="sub-1/*")
    assert moved.generated == len(wanted)
    assert_published(destination, wanted)


def test_a_list_of_urls_and_paths(nginx, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """URLs (sizes and ETags from their generation; a signature never reaches the catalog) and
    local paths, from a CSV file and from a Python list."""
    served = {name: write_hdf5(nginx.path(name), i) for i, name in enumerate(["a.h5", "b.nwb"])}
    local = write_hdf5(tmp_path / "c.h5", 9)
    signed = nginx.url("b.nwb") + "?X-Amz-Signature=sekrit&X-Amz-Credential=me"
    listing = tmp_path / "assets.csv"
    listing.write_text(f"name,url\na,{nginx.url('a.h5')}\nb,{signed}\nc,{tmp_path / 'c.h5'}\n")

    for source in (listing, [nginx.url("a.h5"), signed, str(tmp_path / "c.h5")]):
        destination = tmp_path / f"catalog-{type(source).__name__}"
        summary = generate_catalog(source, destination)
        assert summary.statuses == {"ok": 3}
        table = read_catalog(destination)
        assert "sekrit" not in table.to_csv()
        assert "sekrit" not in summary.destination
        assert (table["size"] > 0).all()
        assert table.etag.notna().all()
        remote = table.index.str.startswith("http")
        assert (table.requests[remote] > 0).all()  # counted for URLs, not for local files
        assert table.requests[~remote].isna().all()
        index = json.loads((destination / "index.json").read_text())
        assert len(index) == 3
        for url, values in zip([nginx.url("a.h5"), signed], served.values(), strict=True):
            group = open_rfs(str(destination / index[redact(url)]))
            assert_array_equal_exact(group["signal"][:], values["signal"], url)
        group = open_rfs(str(destination / index[str((tmp_path / "c.h5").resolve())]))
        assert_array_equal_exact(group["counts"][:], local["counts"], "c.h5")


def test_an_upper_case_tsv_list_is_read_as_tab_separated(tmp_path: Path) -> None:
    values = write_hdf5(tmp_path / "c.h5", 9)
    listing = tmp_path / "ASSETS.TSV"
    listing.write_text(f"name\turl\nc\t{tmp_path / 'c.h5'}\n")
    assert generate_catalog(listing, tmp_path / "catalog").statuses == {"ok": 1}
    index = json.loads((tmp_path / "catalog" / "index.json").read_text())
    group = open_rfs(str(tmp_path / "catalog" / index[str((tmp_path / "c.h5").resolve())]))
    assert_array_equal_exact(group["counts"][:], values["counts"], "c.h5")


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("urls.txt", b"/data/caf\xe9.h5\n", r"urls.txt: a list of sources is UTF-8 text \(byte 9"),
        ("urls.csv", b"url\n" + b"a" * 200_000, r"urls.csv: not a readable csv file"),
        ("urls.txt", b"/data/a\x00b.h5\n", r"^/data/a\\x00b\.h5: a source holds a NUL byte"),
        ("urls.txt", b"http://[abc/a.h5\n", r"^http://\[abc/a\.h5: not a URL \(Invalid IPv6"),
    ],
)
def test_an_unreadable_list_of_sources_is_a_value_error_naming_it(
    tmp_path: Path, name: str, data: bytes, reason: str
) -> None:
    (tmp_path / name).write_bytes(data)
    with pytest.raises(ValueError, match=reason):
        generate_catalog(tmp_path / name, tmp_path / "catalog")


def test_a_url_list_costs_no_request_more_than_generate_rfs(  # type: ignore[no-untyped-def]
    nginx, proxy, tmp_path: Path
) -> None:
    """A URL of a list has no listing to say its size and ETag: a new one's generation learns
    them from its own answers (no probe on top), a failed one's cost one probe (so an unchanged
    failure is left alone), and a later run probes each URL once to tell what changed."""
    names = ["a.h5", "b.nwb", "c.h5"]
    served = {name: write_hdf5(nginx.path(name), i) for i, name in enumerate(names)}
    Path(nginx.path("broken.h5")).write_bytes(b"not an HDF5 file, though named one\n" * 40)
    urls = [proxy.url(name) for name in [*names, "broken.h5"]]
    alone = {}
    for name in names:
        proxy.reset()
        generate_rfs(proxy.url(name), progress=False)
        alone[proxy.url(name)] = proxy.requests

    destination = tmp_path / "catalog"
    proxy.reset()
    first = generate_catalog(urls, destination)
    table = read_catalog(destination)
    assert first.statuses == {"ok": 3, "failed": 1}
    assert table.loc[urls[3], "error_class"] == "SourceFormatError"
    assert table.loc[urls[3], "requests"] == 2  # the format's refusal, then one probe
    assert proxy.requests == sum(alone.values()) + 2
    for url, requests in alone.items():
        assert table.loc[url, "requests"] == requests, url
    assert table.etag.notna().all()
    for name, url in zip([*names, "broken.h5"], urls, strict=True):
        assert table.loc[url, "size"] == Path(nginx.path(name)).stat().st_size, name

    proxy.reset()
    again = generate_catalog(urls, destination)
    assert (again.generated, again.unchanged) == (0, 4)
    assert proxy.requests == 4  # one probe a URL: the failure is not tried again

    served["b.nwb"] = write_hdf5(nginx.path("b.nwb"), 7)
    later = Path(nginx.path("b.nwb")).stat().st_mtime + 10  # nginx's ETag: size and mtime (s)
    os.utime(nginx.path("b.nwb"), (later, later))
    proxy.reset()
    changed = generate_catalog(urls, destination)
    assert (changed.generated, changed.unchanged) == (1, 3)
    assert proxy.requests == 4 + read_catalog(destination).loc[urls[1], "requests"]
    index = json.loads((destination / "index.json").read_text())
    for name, url in zip(names, urls[:3], strict=True):
        group = open_rfs(str(destination / index[url]))
        assert_array_equal_exact(group["signal"][:], served[name]["signal"], name)


def test_a_misspelt_option_is_refused_before_any_asset(
    archive: tuple[Path, Expected], tmp_path: Path
) -> None:
    root, _ = archive
    with pytest.raises(TypeError, match="chunk_index_treshold"):
        generate_catalog(root, tmp_path / "catalog", chunk_index_treshold=10)
    assert not (tmp_path / "catalog").exists()


def test_a_destination_inside_the_folder_is_not_an_asset(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    values = write_hdf5(root / "a.h5", 1)
    first = generate_catalog(root, root / "catalog")
    second = generate_catalog(root, root / "catalog")
    assert first.statuses == second.statuses == {"ok": 1}
    assert (second.listed, second.generated) == (1, 0)
    assert_published(root / "catalog", {"a.h5": values})


def test_a_file_whose_name_is_not_utf8_is_a_skipped_row(tmp_path: Path) -> None:
    """A name of bytes that are not UTF-8 (an old Latin-1 file system's) can be written in no
    reference set, row or URL: that asset is skipped with the reason, and its neighbours are
    published as usual, now and in the next run."""
    root = tmp_path / "archive"
    values = write_hdf5(root / "a.h5", 1)
    shutil.copy(root / "a.h5", os.fsdecode(os.fsencode(root) + b"/caf\xe9.h5"))
    first = generate_catalog(root, tmp_path / "catalog")
    second = generate_catalog(root, tmp_path / "catalog")
    assert first.statuses == second.statuses == {"ok": 1, "skipped": 1}
    assert second.generated == 0
    table = read_catalog(tmp_path / "catalog")
    assert table.loc["caf\\xe9.h5", "status"] == "skipped"
    assert "not UTF-8" in table.loc["caf\\xe9.h5", "error_message"]
    assert table.loc["caf\\xe9.h5", "source_url"].endswith("/archive/caf\\xe9.h5")
    assert_published(tmp_path / "catalog", {"a.h5": values})


def test_a_name_shown_like_another_files_is_left_out_not_alternated(tmp_path: Path) -> None:
    """A Latin-1 name shown with ``\\x`` escapes beside a file named with those characters:
    both would be the asset ``caf\\xe9.h5``. The UTF-8 one keeps the row and its references,
    run after run (before, each run regenerated the other one over the same row)."""
    root = tmp_path / "archive"
    values = write_hdf5(root / "caf\\xe9.h5", 1)
    write_hdf5(tmp_path / "other.h5", 2)
    shutil.copy(tmp_path / "other.h5", os.fsdecode(os.fsencode(root) + b"/caf\xe9.h5"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AssetLeftOutWarning)
        first = generate_catalog(root, tmp_path / "catalog")
        second = generate_catalog(root, tmp_path / "catalog")
    assert first.statuses == second.statuses == {"ok": 1}
    assert (first.generated, second.generated, second.unchanged) == (1, 0, 1)
    left_out = [str(w.message) for w in caught if w.category is AssetLeftOutWarning]
    assert len(left_out) == 2
    assert all(m.startswith(f"{root}/caf\\xe9.h5 (id") for m in left_out)
    table = read_catalog(tmp_path / "catalog")
    assert table.loc["caf\\xe9.h5", "source_url"] == str(root / "caf\\xe9.h5")
    assert_published(tmp_path / "catalog", {"caf\\xe9.h5": values})


def test_an_empty_folder_makes_an_empty_catalog(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    summary = generate_catalog(tmp_path / "empty", tmp_path / "catalog")
    assert (summary.listed, summary.generated, summary.statuses) == (0, 0, {})
    assert read_catalog(tmp_path / "catalog").empty
    assert json.loads((tmp_path / "catalog" / "index.json").read_text()) == {}


@pytest.mark.parametrize(
    ("write", "reader"),
    [
        (partial(write_micromed, segments=1, bytes_per_sample=1), "MicromedRawIO"),
        (write_micromed, "MicromedRawIO"),
        (write_winwcp, "WinWcpRawIO"),
    ],
)
def test_a_recording_neo_reads_is_published(
    write: Callable[[Path], Any], reader: str, tmp_path: Path
) -> None:
    """A single-file recording a NEO reader recognises (by its suffix and header) goes to
    generate_rfs_neo; every stream of every segment reads back what NEO reads."""
    root = tmp_path / "archive"
    written = write(root / "ephys")
    write_hdf5(root / "beside.h5", 1)
    summary = generate_catalog(root, tmp_path / "catalog")
    assert summary.statuses == {"ok": 2}
    table = read_catalog(tmp_path / "catalog")
    (name,) = [str(f.relative_to(root)) for f in written.files]
    assert table.loc[name, "format"] == f"neo:{reader}"
    assert table.loc[name, "datasets"] >= 1
    index = json.loads((tmp_path / "catalog/index.json").read_text())
    group = open_rfs(str(tmp_path / "catalog" / index[name]))
    neo_reader = written.open()
    header = neo_reader.header
    segments = [int(n) for n in header["nb_segment"]]
    checked = 0
    for block, count in enumerate(segments):
        for segment in range(count):
            for buffer in header["signal_buffers"]:
                path = buffer_path(str(buffer["id"]), block, segment, single=segments == [1])
                array = group[path]
                values = array[:]
                for stream in dict(array.attrs)["neo"]["streams"]:
                    at = list(header["signal_streams"]["id"]).index(stream["id"])
                    expected = neo_reader.get_analogsignal_chunk(block, segment, None, None, at)
                    assert_array_equal_exact(
                        values[:, stream["columns"]],
                        expected.astype(expected.dtype.newbyteorder("=")),
                        f"{name}:{path}",
                    )
                    checked += 1
    assert checked >= 1
