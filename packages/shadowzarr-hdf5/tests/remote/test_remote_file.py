"""RemoteFile under h5py over loopback HTTP: values, rounds and requests of chunk_iter."""

from __future__ import annotations

from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
from shadowzarr_store.transport import RangeSource

from shadowzarr_hdf5.h5py_glue import dataset_address, read_chunk_tables
from shadowzarr_hdf5.remote import RemoteFile, read_chunk_table

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def all_values(f: h5py.File) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    f.visititems(
        lambda name, obj: out.__setitem__(name, obj[...]) if isinstance(obj, h5py.Dataset) else None
    )
    return out


def count_chunks(dset: h5py.Dataset) -> int:
    found = [0]

    def seen(_info: object) -> None:
        found[0] += 1

    dset.id.chunk_iter(seen)
    return found[0]


@pytest.mark.parametrize(
    ("writer", "libver", "filters"),
    [
        ("appended", "earliest", "gzip"),
        ("appended", "latest", "shuffle+gzip+fletcher32"),
        ("two_unlimited", "latest", "gzip"),
        ("fixed_array", "latest", "none"),
        ("partial_2d", "earliest", "none"),
        ("implicit", "latest", "none"),
        ("unlimited_not_first", "latest", "gzip"),
    ],
)
def test_h5py_values_through_remote_file_equal_local(
    write_h5: Callable[..., Path],
    tmp_path: Path,
    range_server,
    writer: str,
    libver: str,
    filters: str,
) -> None:
    path = write_h5(tmp_path / "f.h5", writer, libver, filters)
    with h5py.File(path, "r") as f:
        expected = all_values(f)
    with (
        RemoteFile(range_server.url("f.h5"), whole_file_below=0) as remote,
        h5py.File(remote, "r") as f,
    ):
        got = all_values(f)
        for dset in f.values():
            count_chunks(dset)
        index_reads = remote.read_stats.index_hits
    assert got.keys() == expected.keys()
    for name, values in expected.items():
        np.testing.assert_array_equal(got[name], values, err_msg=name)
    if writer in ("appended", "two_unlimited", "fixed_array"):
        assert index_reads > 0


def write_fragmented(path: Path, libver: str, pieces: int = 250, piece: int = 800) -> None:
    """>= 20,000 chunks of dataset a, appended in turn with b, so index nodes are scattered."""
    with h5py.File(path, "w", libver=libver) as f:
        a = f.create_dataset("a", (0,), maxshape=(None,), chunks=(10,), dtype="i4")
        b = f.create_dataset("b", (0,), maxshape=(None,), chunks=(10,), dtype="i4")
        for _ in range(pieces):
            for d in (a, b):
                n = d.shape[0]
                d.resize((n + piece,))
                d[n:] = np.arange(n, n + piece)


@pytest.mark.slow
@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_chunk_iter_of_20000_chunks_costs_few_rounds(
    tmp_path: Path,
    range_server,
    libver: str,
) -> None:
    path = tmp_path / "frag.h5"
    write_fragmented(path, libver)
    with h5py.File(path, "r") as f:
        local_values = f["a"][...]
    with (
        RemoteFile(range_server.url("frag.h5"), whole_file_below=0) as remote,
        h5py.File(remote, "r") as f,
    ):
        dset = f["a"]
        assert count_chunks(dset) == 20_000
        stats = remote.stats
        nodes = remote.read_stats.index_hits
        # Every index node h5py read came from the prefetched ranges, fetched a level at a time.
        assert remote.read_stats.prefetches == 1
        assert stats.rounds <= 10
        if libver == "earliest":
            # One request per node at most (this server answers one range per request), and
            # nodes are not joined across the chunk data between them: the bytes moved stay
            # within twice the nodes' (2,096 bytes each, K = 32) plus the first 64 KiB block.
            assert nodes >= 20_000 // 64
            assert stats.requests <= nodes + 5
            assert stats.bytes <= 2 * nodes * 2096 + 64 * 1024
        requests_before = stats.requests
        table = read_chunk_table(remote, dset)
        assert remote.stats.requests == requests_before  # all served from the caches
        assert len(table) == 20_000
        np.testing.assert_array_equal(dset[...], local_values)


def test_prefetch_off_reads_node_by_node(tmp_path: Path, range_server) -> None:
    path = tmp_path / "frag.h5"
    write_fragmented(path, "earliest", pieces=40, piece=400)
    url = range_server.url("frag.h5")
    with (
        RemoteFile(
            url, prefetch=False, block_size=2048, max_run_blocks=1, whole_file_below=0
        ) as remote,
        h5py.File(remote, "r") as f,
    ):
        assert count_chunks(f["a"]) == 1_600
        assert remote.read_stats.prefetches == 0
        slow_rounds = remote.stats.rounds
        # Small blocks, no read-ahead: about one round per B-tree node (>= 25 leaves).
        assert slow_rounds >= 1_600 // 64
    with (
        RemoteFile(url, block_size=2048, max_run_blocks=1, whole_file_below=0) as remote,
        h5py.File(remote, "r") as f,
    ):
        assert count_chunks(f["a"]) == 1_600
        assert remote.read_stats.prefetches == 1
        assert remote.stats.rounds < 12


def test_prefetch_many_datasets_in_lockstep(
    write_h5: Callable[..., Path],
    tmp_path: Path,
    range_server,
) -> None:
    write_h5(tmp_path / "f.h5", "fixed_array", "latest", "gzip")
    write_h5(tmp_path / "g.h5", "appended", "earliest", "none")
    with (
        RemoteFile(range_server.url("f.h5"), whole_file_below=0) as remote,
        h5py.File(remote, "r") as f,
    ):
        datasets = [f["small"], f["paged"]]
        rounds = remote.stats.rounds
        tables = remote.prefetch_dataset_indexes(datasets)
        # header (cached), FAHD of both, then both data blocks: two rounds in all.
        assert remote.stats.rounds - rounds <= 2
        assert [len(t) for t in tables] == [d.id.get_num_chunks() for d in datasets]
        requests = remote.stats.requests
        for d in datasets:
            count_chunks(d)
        assert len(remote.prefetch_dataset_indexes([f["small"]])[0]) == len(tables[0])
        assert remote.stats.requests == requests
    with h5py.File(tmp_path / "g.h5", "r") as f:
        with RemoteFile(tmp_path / "g.h5") as local:
            tables = read_chunk_tables(local, [f["a"], f["b"]])
        assert [len(t) for t in tables] == [count_chunks(f["a"]), count_chunks(f["b"])]


def test_raw_data_that_looks_like_an_index_header(tmp_path: Path, range_server) -> None:
    """Chunks whose bytes start with 'FAHD' or 'TREE' must not derail reading."""
    path = tmp_path / "f.h5"
    fake = np.frombuffer(b"FAHD\x00\x01\x14\x0a" + bytes(range(24)), np.uint8)
    # A level-1 chunk-tree node of the right size whose children (address 0) are not nodes.
    tree = np.frombuffer(b"TREE\x01\x01\x02\x00" + bytes(2088), np.uint8)
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("fake", data=np.tile(fake, 4), chunks=(32,))
        f.create_dataset("tree", data=tree, chunks=(2096,))
    with (
        RemoteFile(range_server.url("f.h5"), whole_file_below=0) as remote,
        h5py.File(remote, "r") as f,
    ):
        np.testing.assert_array_equal(f["fake"][...], np.tile(fake, 4))
        np.testing.assert_array_equal(f["tree"][...], tree)
        # Only the real fixed-array index of "fake" was prefetched.
        assert remote.read_stats.prefetches == 1


def test_many_datasets_cost_rounds_per_level_not_per_dataset(
    tmp_path: Path,
    range_server,
) -> None:
    """30 two-level v1 B-trees parsed straight over HTTP: headers and index levels in lockstep."""
    path = tmp_path / "many.h5"
    with h5py.File(path, "w", libver="earliest") as f:
        dsets = [
            f.create_dataset(f"d{i}", (0,), maxshape=(None,), chunks=(4,), dtype="i2")
            for i in range(30)
        ]
        for step in range(4):
            for d in dsets:
                d.resize((d.shape[0] + 120,))
                d[-120:] = step
    with h5py.File(path, "r") as f:
        addresses = [dataset_address(f[f"d{i}"]) for i in range(30)]
        expected = [count_chunks(f[f"d{i}"]) for i in range(30)]
    with RangeSource(range_server.url("many.h5")) as fetcher:
        tables = read_chunk_tables(fetcher, addresses)
        # Superblock, first header blocks, continuations, roots, leaves: one batch each (one
        # dataset after another would take >= 90 rounds).
        assert fetcher.stats.rounds <= 5
    assert [len(t) for t in tables] == expected == [120] * 30


def test_missing_url_and_closed_file(tmp_path: Path, range_server) -> None:
    with pytest.raises(FileNotFoundError):
        RemoteFile(range_server.url("missing.h5"))
    with pytest.raises(FileNotFoundError):
        RemoteFile(tmp_path / "missing.h5")
    (tmp_path / "x.bin").write_bytes(b"0123456789")
    remote = RemoteFile(range_server.url("x.bin"))
    assert remote.seek(-4, 2) == 6
    assert remote.read() == b"6789"
    assert remote.seek(3) == 3
    assert remote.read(2) == b"34"
    assert remote.tell() == 5
    remote.close()
    with pytest.raises(ValueError, match="closed"):
        remote.read(1)


def test_a_small_file_is_read_whole_in_one_batch(tmp_path: Path, range_server) -> None:
    """Below ``whole_file_below`` the first batch loads everything: h5py's reads cost nothing."""
    path = tmp_path / "frag.h5"
    write_fragmented(path, "earliest", pieces=40, piece=400)
    with h5py.File(path, "r") as f:
        expected = f["a"][...]
    size = path.stat().st_size
    with RemoteFile(range_server.url("frag.h5"), block_size=2048) as remote:
        after_open = remote.stats.requests
        with h5py.File(remote, "r") as f:
            np.testing.assert_array_equal(f["a"][...], expected)
        assert remote.stats.requests == after_open
        assert remote.stats.rounds == 2  # the first block (and the size), then the rest
        assert remote.stats.bytes == size
    with RemoteFile(range_server.url("frag.h5"), block_size=2048, whole_file_below=size - 1) as r:
        assert r.stats.bytes == 2048  # a larger file: only the first block at open
        with h5py.File(r, "r") as f:
            np.testing.assert_array_equal(f["a"][...], expected)
        assert r.stats.rounds > 2


@pytest.mark.network
def test_index_nodes_close_together_move_at_most_twice_their_bytes(
    nginx_root: Path, nginx, make_proxy
) -> None:
    """On a server answering one range per request, nodes a few kB apart are not joined across
    the chunk data between them: a level moves at most twice its nodes' bytes."""
    from shadowzarr_store.transport import TransportOptions
    from shadowzarr_store.transport.coalesce import coalesce

    path = nginx_root / "close.h5"
    with h5py.File(path, "w", libver="earliest") as f:
        a = f.create_dataset("a", (0,), maxshape=(None,), chunks=(64,), dtype="i4")
        b = f.create_dataset("b", (0,), maxshape=(None,), chunks=(64,), dtype="i4")
        for start in range(0, 400 * 64 * 30, 64 * 30):
            a.resize((start + 64 * 30,))
            a[start:] = np.arange(start, start + 64 * 30)
            b.resize((b.shape[0] + 64,))
            b[-64:] = 1
        address = dataset_address(f["a"])
        expected = {info.chunk_offset[0] // 64: info.byte_offset for info in _chunks(f["a"])}
    asked: list[tuple[int, int]] = []

    class Recording(RangeSource):
        def fetch_many(self, ranges, *, max_gap=None):  # type: ignore[no-untyped-def]
            asked.extend(ranges)
            return super().fetch_many(ranges, max_gap=max_gap)

    with Recording(path) as local:
        read_chunk_table(local, address)
    nodes = [(o, o + n) for o, n in asked if n == asked[-1][1]]  # whole B-tree nodes
    node_bytes = sum(b - a for a, b in nodes)
    # Joined across gaps of up to 16 kB, these nodes would cost several times their bytes.
    joined = sum(r.end - r.start for r in coalesce(nodes, 16 * 1024))
    assert joined > 3 * node_bytes
    proxy = make_proxy(nginx.url(""), ranges="s3", root=nginx_root)
    options = TransportOptions(multi_range=False)
    with RemoteFile(proxy.url("close.h5"), transport=options, whole_file_below=0) as remote:
        remote.read_at(0, 4096)
        proxy.wait_idle()
        proxy.reset()
        table = read_chunk_table(remote, address)
        proxy.wait_idle()
        moved = proxy.bytes_sent()
    assert dict(zip(table.coords[:, 0].tolist(), table.offsets.tolist(), strict=True)) == expected
    assert len(nodes) > 100
    assert moved <= 2 * node_bytes


def _chunks(dataset: h5py.Dataset) -> list[object]:
    found: list[object] = []
    dataset.id.chunk_iter(found.append)
    return found
