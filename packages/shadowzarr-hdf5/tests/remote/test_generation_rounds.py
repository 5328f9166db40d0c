"""Generation's round trips at high latency, counted from the proxy's own log: a chunk index is
read a level at a time (a wave per level, one more for the connections it opens, a few for a
level wider than the connections), never node by node or dataset by dataset."""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest

from shadowzarr_hdf5 import generate_rfs
from shadowzarr_hdf5.generate import GENERATION_CONNECTIONS
from shadowzarr_hdf5.h5py_glue import dataset_address
from shadowzarr_hdf5.remote import RemoteFile

from .conftest import create

if TYPE_CHECKING:
    from pathlib import Path

LATENCY = 0.2
"""Seconds per request and per connection set-up: long next to the CPU that sends a level's
requests, so that a wave the proxy counts is a round trip the generator waited for."""
CHUNKS = 8_000


def _deep_file(path: Path) -> None:
    """A v1 B-tree of K = 4 (8 entries a node) over 8,000 chunks of 256 bytes: five levels, the
    widest of about 1,100 leaves. Chunks appended 16 at a time, each append followed by a chunk
    of another dataset, scatter the leaves through the file, as in the benchmark's fragmented
    file, and without metadata aggregation each leaf is a request of its own. A 9 MB
    contiguous dataset keeps the file above the size read whole."""
    step = 64 * 16
    with create(path, "earliest", istore_k=4, meta_block_size=0) as f:
        f.create_dataset("padding", data=np.zeros(9 * 2**20, "u1"))
        a = f.create_dataset("a", (0,), maxshape=(None,), chunks=(64,), dtype="i4")
        b = f.create_dataset("b", (0,), maxshape=(None,), chunks=(64,), dtype="i4")
        for start in range(0, CHUNKS * 64, step):
            a.resize((start + step,))
            a[start:] = np.arange(start, start + step, dtype="i4")
            b.resize((b.shape[0] + 64,))
            b[-64:] = 1


def _warm_up(entry: dict) -> bool:
    """Whether a request of the proxy's log is a one-byte read opening a connection ahead."""
    return entry["range"] == "bytes=0-0"


def _levels(path: Path) -> list[int]:
    """Nodes per level of the index of "a", as the prefetching walk reads them."""
    widths: list[int] = []
    with RemoteFile(path, whole_file_below=0) as remote, h5py.File(remote, "r") as f:
        address = dataset_address(f["a"])

        def recording(ranges: list[tuple[int, int]]) -> list[bytes]:
            widths.append(len(ranges))
            return RemoteFile.fetch_nodes(remote, ranges)

        remote.fetch_nodes = recording  # type: ignore[method-assign]
        remote.prefetch_dataset_indexes([address])
    return widths


@pytest.mark.network
@pytest.mark.slow
def test_generation_costs_a_few_round_trips_per_index_level(
    nginx_root: Path, nginx, make_proxy
) -> None:
    path = nginx_root / "deep.h5"
    _deep_file(path)
    levels = _levels(path)
    assert len(levels) >= 4, levels  # a deep index ...
    assert max(levels) > 256, levels  # ... whose widest level outnumbers the connections
    proxy = make_proxy(
        nginx.url(""), ranges="s3", root=nginx_root, latency=LATENCY, connect_latency=LATENCY
    )
    rfs = generate_rfs(proxy.url("deep.h5"), progress=False, manifest_threshold=None)
    proxy.wait_idle()
    with h5py.File(path, "r") as f:
        expected = {}
        f["a"].id.chunk_iter(lambda info: expected.__setitem__(info.chunk_offset[0] // 64, info))
    refs = {int(k.split("/")[-1]): v for k, v in rfs.refs.items() if k.startswith("a/c/")}
    assert {k: (v.offset, v.size) for k, v in refs.items()} == {
        k: (info.byte_offset, info.size) for k, info in expected.items()
    }
    # At most 3 round trips a level on average (its requests, the new connections they need,
    # the waves of a level wider than the connections) and 3 more: the head, the metadata past
    # it, the multi-range probe S3 answers whole.
    # Reading the index node by node would cost one per node (over 1,000), dataset by dataset
    # or connection wave by connection wave several per level.
    waves = proxy.round_trips()
    assert waves <= 3 * len(levels) + 3, (waves, levels)


@pytest.mark.network
@pytest.mark.slow
def test_connections_are_opened_in_one_round_ahead_of_the_widest_level(
    nginx_root: Path, nginx, make_proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each connection's set-up costs a round trip (``connect_latency``); opened when a level
    needs them, every level wider than the one before pays one more. The first index round
    opens the connections the widest level will use, so the later rounds open (almost) none:
    connection set-up is paid once, beside a round already paid for. The multi-range question
    goes beside that round too."""
    path = nginx_root / "deep.h5"
    _deep_file(path)
    levels = _levels(path)
    proxy = make_proxy(
        nginx.url(""), ranges="s3", root=nginx_root, latency=LATENCY, connect_latency=LATENCY
    )
    rounds: list[int] = []  # the proxy's request count when each index round starts
    fetch_nodes = RemoteFile.fetch_nodes

    def counted(remote: RemoteFile, ranges: list[tuple[int, int]]) -> list[bytes]:
        rounds.append(proxy.requests)
        return fetch_nodes(remote, ranges)

    monkeypatch.setattr(RemoteFile, "fetch_nodes", counted)
    rfs = generate_rfs(proxy.url("deep.h5"), progress=False, manifest_threshold=None)
    proxy.wait_idle()
    assert len([k for k in rfs.refs if k.startswith("a/c/")]) == CHUNKS
    assert len(rounds) == len(levels), (rounds, levels)
    log = proxy.log
    warm_ups = [i for i, e in enumerate(log) if _warm_up(e)]
    bounds = pairwise([*rounds, len(log)])
    opened = [sum(e["new_connection"] for e in log[a:b] if not _warm_up(e)) for a, b in bounds]
    first = next(i for i, n in enumerate(opened) if n)
    # Before: the rounds of levels of 24, 164 and 1,143 nodes opened 29, 191 and 32
    # connections, each round a set-up longer. Now the one-byte reads sent beside the first
    # round open them, all before the widest round starts ...
    widest = rounds[levels.index(max(levels))]
    assert sum(log[i]["new_connection"] for i in warm_ups) >= 200, len(warm_ups)
    assert max(warm_ups) < widest, (rounds, warm_ups)
    # ... and once they are back, the later rounds' nodes open a few at most: the one the
    # multi-range probe closed (S3 answers it with the whole object), those warm-ups found
    # idle instead of opening them (3 to 7 in runs). (On a loaded machine some warm-ups are
    # still out when the next round starts; its nodes then open their own meanwhile.)
    back = max(log[i]["started"] + log[i]["duration"] for i in warm_ups)
    later = [e for e in log[rounds[first + 1] :] if not _warm_up(e) and e["started"] >= back]
    assert sum(e["new_connection"] for e in later) <= 8, opened
    assert proxy.connections <= GENERATION_CONNECTIONS + 2, proxy.connections
    # Whether the server answers multi-range requests (S3 does not) is asked beside that first
    # round, not in a round trip of its own before it: its nodes are asked for before the
    # question is answered.
    (probe,) = [e for e in log if "," in (e["range"] or "")]
    a, b = [*rounds, len(log)][first : first + 2]
    beside = [e for e in log[a:b] if e is not probe and not _warm_up(e)]
    assert beside, opened
    assert min(e["started"] for e in beside) < probe["started"] + probe["duration"]
