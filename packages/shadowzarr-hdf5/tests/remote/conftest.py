"""Files written by h5py for the remote-layer tests, one writer per index kind and situation."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import re
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import h5py
import numpy as np
import pytest
from aiohttp import web

# (low, high) bounds: "v110" pins layout message version 4 (HDF5 2.0 writes 5 when filtered).
LIBVER = {
    "earliest": (h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_LATEST),
    "v110": (h5py.h5f.LIBVER_V110, h5py.h5f.LIBVER_V110),
    "latest": (h5py.h5f.LIBVER_LATEST, h5py.h5f.LIBVER_LATEST),
}
FILTERS = {
    "none": {},
    "gzip": {"compression": "gzip"},
    "shuffle+gzip+fletcher32": {"compression": "gzip", "shuffle": True, "fletcher32": True},
}


def _set_istore_k(fcpl: h5py.h5p.PropFCID, k: int) -> None:
    """h5py does not wrap H5Pset_istore_k; call it in the HDF5 library h5py loaded."""
    libs = sorted((Path(h5py.__file__).parent.parent / "h5py.libs").glob("libhdf5-*"))
    if not libs:  # a system HDF5 build: h5py links it dynamically
        libs = [Path(ctypes.util.find_library("hdf5") or "libhdf5.so")]
    status = ctypes.CDLL(str(libs[0])).H5Pset_istore_k(ctypes.c_int64(fcpl.id), ctypes.c_uint(k))
    assert status >= 0


def create(
    path: Path,
    libver: str,
    *,
    sizes: tuple[int, int] | None = None,
    istore_k: int | None = None,
    userblock: int = 0,
    meta_block_size: int | None = None,
) -> h5py.File:
    """Create a file through the low-level API so field sizes, B-tree K and the metadata
    aggregation block (0: each metadata object placed on its own) can be chosen."""
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    if sizes:
        fcpl.set_sizes(*sizes)
    if istore_k:
        _set_istore_k(fcpl, istore_k)
    if userblock:
        fcpl.set_userblock(userblock)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(*LIBVER[libver])
    if meta_block_size is not None:
        fapl.set_meta_block_size(meta_block_size)
    fid = h5py.h5f.create(str(path).encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    return h5py.File(fid)


def appended(f: h5py.File, filters: str, pieces: int = 40, piece: int = 23) -> None:
    """Two 1-D datasets appended in turn, so index nodes end up scattered between chunks."""
    a = f.create_dataset("a", (0,), maxshape=(None,), chunks=(10,), dtype="i4", **FILTERS[filters])
    b = f.create_dataset("b", (0,), maxshape=(None,), chunks=(7,), dtype="i2")
    for _i in range(pieces):
        for d in (a, b):
            n = d.shape[0]
            d.resize((n + piece,))
            d[n:] = np.arange(n, n + piece)


def partial_2d(f: h5py.File, filters: str) -> None:
    d = f.create_dataset("a", (50, 40), chunks=(7, 6), dtype="f8", **FILTERS[filters])
    d[3:20, 5:33] = np.arange(17 * 28).reshape(17, 28)
    d[44:, 30:] = 1.5
    f.create_dataset("never", (20, 20), chunks=(5, 5), dtype="u1", **FILTERS[filters])


def two_unlimited(f: h5py.File, filters: str) -> None:
    d = f.create_dataset(
        "a", (0, 0), maxshape=(None, None), chunks=(3, 4), dtype="i4", **FILTERS[filters]
    )
    for i in range(1, 25):
        d.resize((3 * i, 2 * i + 1))
        d[-3:, :] = np.arange(3 * (2 * i + 1)).reshape(3, -1) + i


def unlimited_not_first(f: h5py.File, filters: str) -> None:
    d = f.create_dataset(
        "a", (12, 0), maxshape=(12, None), chunks=(4, 4), dtype="i4", **FILTERS[filters]
    )
    for i in range(1, 9):
        d.resize((12, 5 * i))
        d[:, -5:] = np.arange(60).reshape(12, 5) + 100 * i
    e = f.create_dataset("b", (6, 0, 5), maxshape=(6, None, 5), chunks=(2, 3, 2), dtype="u2")
    e.resize((6, 20, 5))
    e[...] = np.arange(600).reshape(6, 20, 5)


def fixed_array(f: h5py.File, filters: str) -> None:
    d = f.create_dataset(
        "small", (100, 30), maxshape=(120, 30), chunks=(10, 10), dtype="i8", **FILTERS[filters]
    )
    d[5:60, :] = np.arange(55 * 30).reshape(55, 30)
    # > 1024 entries: a paged data block; pages in the middle stay uninitialised.
    p = f.create_dataset("paged", (6000,), chunks=(2,), dtype="i2", **FILTERS[filters])
    p[:100] = np.arange(100)
    p[5000:] = np.arange(1000)


def single_chunk(f: h5py.File, filters: str) -> None:
    f.create_dataset("a", data=np.arange(60.0).reshape(6, 10), chunks=(6, 10), **FILTERS[filters])
    f.create_dataset("never", (4, 4), chunks=(4, 4), dtype="i4", **FILTERS[filters])


def implicit(f: h5py.File, filters: str) -> None:
    del filters  # implicit indexes allow no filters
    space = h5py.h5s.create_simple((30, 30), (50, 50))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((10, 10))
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    h5py.h5d.create(f.id, b"a", h5py.h5t.NATIVE_INT32, space, dcpl=dcpl)
    f["a"][...] = np.arange(900).reshape(30, 30)


def direct_chunks(f: h5py.File, filters: str) -> None:
    """Chunks written raw with filter_mask=1: stored without their first filter."""
    d = f.create_dataset("a", (40,), maxshape=(None,), chunks=(10,), dtype="i4", **FILTERS[filters])
    d[:20] = np.arange(20)
    d.id.write_direct_chunk((20,), np.arange(10, dtype="i4").tobytes(), filter_mask=1)
    d.id.write_direct_chunk((30,), np.arange(10, 20, dtype="i4").tobytes(), filter_mask=1)


WRITERS: dict[str, Callable[[h5py.File, str], None]] = {
    "appended": appended,
    "partial_2d": partial_2d,
    "two_unlimited": two_unlimited,
    "unlimited_not_first": unlimited_not_first,
    "fixed_array": fixed_array,
    "single_chunk": single_chunk,
    "implicit": implicit,
    "direct_chunks": direct_chunks,
}


def write(path: Path, writer: str, libver: str, filters: str, **create_args: object) -> Path:
    with create(path, libver, **create_args) as f:  # type: ignore[arg-type]
        WRITERS[writer](f, filters)
    return path


WriteH5 = Callable[..., Path]


@pytest.fixture
def write_h5() -> WriteH5:
    """``write_h5(path, writer, libver, filters, **create_args)`` -> path."""
    return write


class RangeServer:
    """A loopback HTTP server of one directory that answers single range requests with 206.

    Counts requests, and can be told to fail the next requests (status or dropped connection)
    or to ignore ranges (answer 200 with the whole file), to exercise the fetcher's checks.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests = 0
        self.fail_next: list[int | str] = []
        self.ignore_ranges = False
        self.reject_multi_range = False
        self.etag = '"v1"'
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._runner: web.AppRunner | None = None
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        asyncio.run_coroutine_threadsafe(self._start(sock), self._loop).result()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    async def _start(self, sock: socket.socket) -> None:
        app = web.Application()
        app.router.add_route("*", "/{name}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = self.root / request.match_info["name"]
        if not path.is_file():
            return web.Response(status=404)
        data = path.read_bytes()
        headers = {"ETag": self.etag, "Accept-Ranges": "bytes"}
        if request.method == "HEAD":
            return web.Response(headers={**headers, "Content-Length": str(len(data))})
        self.requests += 1
        if self.fail_next:
            failure = self.fail_next.pop(0)
            if failure == "drop":
                assert request.transport is not None
                request.transport.close()
                return web.Response(status=500)
            return web.Response(status=int(failure))
        if "," in request.headers.get("Range", "") and self.reject_multi_range:
            return web.Response(status=416)
        match = re.fullmatch(r"bytes=(\d+)-(\d+)", request.headers.get("Range", ""))
        if match is None or self.ignore_ranges:
            return web.Response(body=data, headers=headers)
        first, last = int(match[1]), min(int(match[2]), len(data) - 1)
        if first >= len(data):
            return web.Response(status=416)
        headers["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
        return web.Response(status=206, body=data[first : last + 1], headers=headers)

    def close(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


@pytest.fixture
def range_server(tmp_path: Path) -> Iterator[RangeServer]:
    """Serves ``tmp_path`` over loopback HTTP with range support."""
    server = RangeServer(tmp_path)
    yield server
    server.close()
