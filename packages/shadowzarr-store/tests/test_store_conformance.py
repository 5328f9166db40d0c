"""zarr-python's own store conformance tests, for what applies to a read-only store.

The test helper ``set`` writes each value to a file next to the references and adds a
``[url, 0, size]`` reference to it, so every read goes through the file-reading path. Tests that
write through the store are replaced by tests that the store refuses to write; tests of the sync
surface by a test that the store has none (zarr would otherwise bypass request merging).
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from shadowzarr_spec import FileRef, InlineRef, ReferenceFileSystem
from zarr.abc.store import (
    OffsetByteRequest,
    RangeByteRequest,
    SuffixByteRequest,
    SupportsDeleteSync,
    SupportsGetSync,
    SupportsSetSync,
)
from zarr.core.buffer import cpu, default_buffer_prototype
from zarr.testing.store import StoreTests

from shadowzarr_store import RfsStore

if TYPE_CHECKING:
    from zarr.core.buffer import Buffer

READ_ONLY = "store was opened in read-only mode and does not support writing"


async def _collect(iterator: Any) -> list[str]:
    return [item async for item in iterator]


class TestRfsStore(StoreTests[RfsStore, cpu.Buffer]):
    store_cls = RfsStore
    buffer_cls = cpu.Buffer

    async def set(self, store: RfsStore, key: str, value: Buffer) -> None:
        assert store.rfs.base is not None
        data = value.to_bytes()
        if not data:  # [url, 0, 0] is a missing chunk in the format: an empty value is inline
            store.rfs.refs[key] = InlineRef(b"")
            return
        name = key.replace("/", "__")
        Path(store.rfs.base, name).write_bytes(data)
        store.rfs.refs[key] = FileRef(name, 0, len(data))

    async def get(self, store: RfsStore, key: str) -> Buffer:
        ref = store.rfs.refs[key]
        if isinstance(ref, InlineRef):
            return self.buffer_cls.from_bytes(ref.data)
        assert isinstance(ref, FileRef)
        return self.buffer_cls.from_bytes(Path(store.rfs.base, ref.url).read_bytes())

    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        return {"rfs": ReferenceFileSystem(base=str(tmp_path))}

    async def _fill(self, store: RfsStore, keys: list[str], data: bytes = b"0") -> None:
        for key in keys:
            await self.set(store, key, self.buffer_cls.from_bytes(data))

    # -- abstract in StoreTests -----------------------------------------------------------------

    def test_store_repr(self, store: RfsStore) -> None:
        assert repr(store).startswith("RfsStore(")

    def test_store_supports_writes(self, store: RfsStore) -> None:
        assert not store.supports_writes
        assert not store.supports_deletes

    def test_store_supports_listing(self, store: RfsStore) -> None:
        assert store.supports_listing

    # -- read-only versions of the writing tests -----------------------------------------------

    def test_store_read_only(self, store: RfsStore) -> None:
        assert store.read_only
        with pytest.raises(AttributeError):
            store.read_only = False  # type: ignore[misc]

    @pytest.mark.parametrize("read_only", [True, False])
    async def test_store_open_read_only(self, open_kwargs: dict[str, Any], read_only: bool) -> None:
        if not read_only:
            with pytest.raises(ValueError, match="read-only"):
                await self.store_cls.open(**open_kwargs, read_only=False)
            return
        store = await self.store_cls.open(**open_kwargs, read_only=True)
        assert store._is_open
        assert store.read_only

    async def test_serializable_store(self, store: RfsStore) -> None:
        await self.set(store, "foo", self.buffer_cls.from_bytes(b"\x01\x02\x03\x04"))
        new_store: RfsStore = pickle.loads(pickle.dumps(store))
        assert new_store == store
        assert new_store.read_only
        observed = await new_store.get("foo", prototype=default_buffer_prototype())
        assert observed is not None
        assert observed.to_bytes() == b"\x01\x02\x03\x04"

    @pytest.mark.parametrize(
        "key_ranges",
        [
            [],
            [("meta.json", RangeByteRequest(0, 2))],
            [("c/0", RangeByteRequest(0, 2)), ("meta.json", None)],
            [
                ("c/0/0", RangeByteRequest(0, 2)),
                ("c/0/1", SuffixByteRequest(2)),
                ("c/0/2", OffsetByteRequest(2)),
            ],
        ],
    )
    async def test_get_partial_values(
        self, store: RfsStore, key_ranges: list[tuple[str, Any]]
    ) -> None:
        """zarr's own test with its ``zarr.json`` keys renamed: this store serves a
        ``zarr.json`` only when it holds metadata zarr accepts (arbitrary bytes are refused,
        see test_hostile_input), and only from the references themselves."""
        await super().test_get_partial_values(store, key_ranges)

    @pytest.mark.parametrize("key", ["zarr.json", "c/0", "foo/c/0.0", "foo/0/0"])
    @pytest.mark.parametrize("data", [b"\x01\x02\x03\x04", b""])
    async def test_set(self, store: RfsStore, key: str, data: bytes) -> None:
        with pytest.raises(ValueError, match=READ_ONLY):
            await store.set(key, self.buffer_cls.from_bytes(data))

    async def test_set_not_open(self, store_not_open: RfsStore) -> None:
        with pytest.raises(ValueError, match=READ_ONLY):
            await store_not_open.set("c/0", self.buffer_cls.from_bytes(b"\x01"))

    async def test_set_many(self, store: RfsStore) -> None:
        with pytest.raises(ValueError, match=READ_ONLY):
            await store._set_many([("c/0", self.buffer_cls.from_bytes(b"\x01"))])

    async def test_set_if_not_exists(self, store: RfsStore) -> None:
        with pytest.raises(ValueError, match=READ_ONLY):
            await store.set_if_not_exists("k", self.buffer_cls.from_bytes(b"\x01"))

    async def test_delete(self, store: RfsStore) -> None:
        await self._fill(store, ["foo/zarr.json"], b"bar")
        with pytest.raises(ValueError, match=READ_ONLY):
            await store.delete("foo/zarr.json")
        assert await store.exists("foo/zarr.json")

    async def test_delete_dir(self, store: RfsStore) -> None:
        await self._fill(store, ["foo/zarr.json", "foo/c/0"], b"bar")
        with pytest.raises(ValueError, match=READ_ONLY):
            await store.delete_dir("foo")
        assert await store.exists("foo/c/0")

    async def test_delete_nonexistent_key_does_not_raise(self, store: RfsStore) -> None:
        with pytest.raises(ValueError, match=READ_ONLY):
            await store.delete("nonexistent_key")

    async def test_clear(self, store: RfsStore) -> None:
        await self._fill(store, ["key"], b"something")
        with pytest.raises(ValueError, match=READ_ONLY):
            await store.clear()
        assert not await store.is_empty("")

    async def test_exists(self, store: RfsStore) -> None:
        assert not await store.exists("foo")
        await self._fill(store, ["foo/zarr.json"], b"bar")
        assert await store.exists("foo/zarr.json")
        assert not await store.exists("foo")

    async def test_getsize_prefix(self, store: RfsStore) -> None:
        await self._fill(store, ["c/0/0", "c/0/1", "c/1/0", "c/1/1", "cc/0"], b"\x01\x02\x03\x04")
        assert await store.getsize_prefix("c") == 16

    async def test_list(self, store: RfsStore) -> None:
        assert await _collect(store.list()) == []
        keys = ["foo/zarr.json", *(f"foo/c/{i}" for i in range(10))]
        await self._fill(store, keys)
        assert sorted(await _collect(store.list())) == sorted(keys)

    async def test_list_prefix(self, store: RfsStore) -> None:
        prefixes = ("", "a/", "a/b/", "a/b/c/")
        keys = [p + "zarr.json" for p in prefixes]
        await self._fill(store, keys)
        for prefix in prefixes:
            observed = sorted(await _collect(store.list_prefix(prefix)))
            assert observed == sorted(k for k in keys if k.startswith(prefix))

    async def test_list_empty_path(self, store: RfsStore) -> None:
        keys = ["foo/bar/zarr.json", "foo/bar/c/1", "foo/baz/c/0"]
        await self._fill(store, keys)
        assert sorted(await _collect(store.list())) == sorted(keys)
        assert sorted(await _collect(store.list_prefix(""))) == sorted(keys)
        assert sorted(await _collect(store.list_prefix("foo/bar/"))) == sorted(keys[:2])

    async def test_list_dir(self, store: RfsStore) -> None:
        assert await _collect(store.list_dir("")) == []
        await self._fill(store, ["foo/zarr.json", "foo/c/1"])
        assert sorted(await _collect(store.list_dir("foo"))) == ["c", "zarr.json"]
        await self._fill(
            store, ["foo/bar/foobar_first_child", "foo/bar/foobar_second_child/zarr.json"]
        )
        expected = ["foobar_first_child", "foobar_second_child"]
        assert sorted(await _collect(store.list_dir("foo/bar"))) == expected
        assert sorted(await _collect(store.list_dir("foo/bar/"))) == expected
        assert sorted(await _collect(store.list_dir("foo"))) == ["bar", "c", "zarr.json"]

    # -- no sync surface, on purpose --------------------------------------------------------------

    def test_has_no_sync_surface(self, store: RfsStore) -> None:
        """zarr's fused pipeline would call get_sync from worker threads and skip merging."""
        assert not isinstance(store, SupportsGetSync | SupportsSetSync | SupportsDeleteSync)


for _name in (
    "test_get_sync",
    "test_get_sync_missing",
    "test_set_sync",
    "test_delete_sync",
    "test_delete_sync_missing",
    "test_sync_async_set_get_parity",
    "test_delete_sync_visible_to_async_get",
    "test_get_sync_byte_range_parity",
):
    setattr(TestRfsStore, _name, None)  # not applicable: RfsStore has no sync methods
