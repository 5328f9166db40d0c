"""Fresh buffers' pages mapped by a helper thread (`transport.prefault`): counted in page faults
and buffers, never timed. A range's body is made when its request leaves and received into
only when the answer is as long as asked."""

from __future__ import annotations

import asyncio
import mmap
import resource
import time

import numpy as np
import pytest

from shadowzarr_store.transport import Transport, prefault_stats
from shadowzarr_store.transport import prefault as prefault_module

MiB = 1 << 20


def _faults_writing(buffer: np.ndarray) -> int:
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    buffer[...] = 7
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before


def _wait_populated(timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while prefault_stats().pending and time.monotonic() < deadline:
        time.sleep(0.01)
    assert prefault_stats().pending == 0


def test_a_populated_buffer_is_written_without_page_faults() -> None:
    assert prefault_module.supported()  # Linux 5.14 or later: MADV_POPULATE_WRITE
    # Fresh anonymous mappings: malloc may hand back memory an earlier test already touched.
    fresh = np.frombuffer(mmap.mmap(-1, 8 * MiB), dtype=np.uint8)
    populated = np.frombuffer(mmap.mmap(-1, 8 * MiB), dtype=np.uint8)
    assert prefault_module.populate_now(populated)
    assert _faults_writing(populated) <= 2  # the odd page of the interpreter's own
    assert _faults_writing(fresh) >= 4  # at least one per huge page, 512 per small one
    assert (populated == 7).all()


def test_the_helper_thread_populates_what_it_is_handed() -> None:
    stats = prefault_stats()
    before = (stats.submitted, stats.populated, stats.bytes)
    buffers = [np.empty(n * MiB + 100, dtype=np.uint8) for n in (5, 2, 2)]  # 5 MiB: 3 steps
    assert all(prefault_module.populate(b, later=i == 0) for i, b in enumerate(buffers))
    assert not prefault_module.populate(np.empty(MiB - 1, dtype=np.uint8))  # too small
    assert not prefault_module.populate(np.empty((4, MiB), dtype=np.uint8)[:, ::2])  # strided
    _wait_populated()
    assert stats.threads_started == 1
    assert (stats.submitted, stats.populated, stats.bytes) == (
        before[0] + 3,
        before[1] + 3,
        before[2] + 9 * MiB + 300,
    )
    assert sum(_faults_writing(b) for b in buffers) <= 8  # the buffers' first and last pages
    dropped = stats.dropped
    assert prefault_module.populate(np.empty(4 * MiB, dtype=np.uint8))  # no one keeps it
    _wait_populated()
    assert stats.dropped == dropped + 1


def test_a_body_too_large_for_memory_is_left_to_the_receiver() -> None:
    made = prefault_stats().prepared
    assert prefault_module.prepared(1 << 62) is None  # the receiver refuses it, typed
    assert prefault_module.prepared(MiB - 1) is None
    assert prefault_stats().prepared == made


@pytest.mark.network
def test_a_range_is_received_into_the_buffer_made_when_it_left(nginx) -> None:  # type: ignore[no-untyped-def]
    data = np.random.default_rng(5).integers(0, 256, 3 * MiB, dtype=np.uint8)
    nginx.path("prefault.bin").write_bytes(data.tobytes())
    url = nginx.url("prefault.bin")
    stats = prefault_stats()

    async def read(start: int, end: int) -> bytes:
        transport = Transport()
        try:
            answer = await transport.read(url, start, end, view=True)
            return bytes(answer.data)
        finally:
            await transport.aclose()

    before = (stats.prepared, stats.received_into)
    assert asyncio.run(read(0, 2 * MiB)) == data[: 2 * MiB].tobytes()
    assert (stats.prepared, stats.received_into) == (before[0] + 1, before[1] + 1)
    # a range running past the end: the answer is shorter than the buffer made for it
    assert asyncio.run(read(2 * MiB, 5 * MiB)) == data[2 * MiB :].tobytes()
    assert (stats.prepared, stats.received_into) == (before[0] + 2, before[1] + 1)
    assert asyncio.run(read(0, MiB - 1)) == data[: MiB - 1].tobytes()  # small: left alone
    assert (stats.prepared, stats.received_into) == (before[0] + 2, before[1] + 1)
    _wait_populated()
