"""The format's conformance suite (``shadowzarr_spec.conformance``) through RfsStore.

Every case is also run by the JavaScript store (``js/test/node/conformance.test.mjs``): both read
the same reference directories, written from the same case files, and must return the same bytes
or raise the same error. Sources are local files, so ``within`` is checked from the bytes the
store says it read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import zarr
from shadowzarr_spec import ShadowzarrError, conformance, decode_attributes, read_local_rfs
from zarr.abc.store import RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import default_buffer_prototype

from shadowzarr_store import RfsStore, read_native

if TYPE_CHECKING:
    from pathlib import Path

DOCUMENTS = conformance.load("documents")["cases"]
MALFORMED = conformance.load("malformed")["cases"]
ATTRIBUTES = conformance.load("attributes")["cases"]
TYPES = conformance.load("types")["cases"]


def _byte_request(spec: dict[str, int] | None) -> RangeByteRequest | SuffixByteRequest | None:
    if spec is None:
        return None
    if "suffix" in spec:
        return SuffixByteRequest(spec["suffix"])
    return RangeByteRequest(spec["offset"], spec["offset"] + spec["length"])


def _raised(error: BaseException) -> str:
    name = conformance.error_class_name(error)
    assert name is not None, f"not an error of shadowzarr_spec.errors: {error!r}"
    return name


@pytest.mark.parametrize(
    "case", DOCUMENTS, ids=[f"{i}-{c['name'][:50]}" for i, c in enumerate(DOCUMENTS)]
)
async def test_documents(case: dict[str, Any], tmp_path: Path) -> None:
    files = conformance.write_case_directory(case, tmp_path)
    store = RfsStore(read_local_rfs(tmp_path), grouped_view=0)  # keys as stored
    failures = []
    for read in case["reads"]:
        expect = read["expect"]
        before = store.stats.snapshot()
        try:
            buffer = await store.get(
                read["key"], default_buffer_prototype(), _byte_request(read.get("range"))
            )
        except ShadowzarrError as exc:
            got: object = {"error": _raised(exc)}
        else:
            if buffer is None:
                got = {"missing": True}
            else:
                got = buffer.to_bytes()
                if "bytes" in expect:
                    expect = conformance.expected_bytes(expect["bytes"], files)
        if got != expect:
            failures.append((read["key"], read.get("range"), got, expect))
            continue
        if "within" in read:
            _name, start, end = read["within"]
            fetched = (store.stats.snapshot() - before).bytes
            if fetched > end - start:
                failures.append((read["key"], read.get("range"), f"read {fetched} bytes", read))
    assert failures == []


@pytest.mark.parametrize(
    "case", MALFORMED, ids=[f"{i}-{c['name'][:50]}" for i, c in enumerate(MALFORMED)]
)
async def test_malformed(case: dict[str, Any], tmp_path: Path) -> None:
    conformance.write_case_directory(case, tmp_path)

    async def open_and_read() -> None:
        store = RfsStore(read_local_rfs(tmp_path), grouped_view=0)  # keys as stored
        if "read" in case:
            await store.get(case["read"], default_buffer_prototype())

    with pytest.raises(ShadowzarrError) as caught:
        await open_and_read()
    assert _raised(caught.value) == case["error"], case.get("why")


@pytest.mark.parametrize(
    "case", ATTRIBUTES, ids=[f"{i}-{c['name'][:50]}" for i, c in enumerate(ATTRIBUTES)]
)
def test_attributes_through_zarr(case: dict[str, Any], tmp_path: Path) -> None:
    """Open the node with zarr-python over RfsStore and decode its attributes."""
    conformance.write_case_directory(case, tmp_path)
    store = RfsStore(read_local_rfs(tmp_path), grouped_view=0)  # keys as stored
    try:
        node = zarr.open(store, path=case["node"], mode="r", zarr_format=3)
        got: object = conformance.tagged_attribute(decode_attributes(node.attrs.asdict()))
    except ShadowzarrError as exc:
        got = {"error": _raised(exc)}
    assert got == case["expect"]


@pytest.mark.parametrize("case", TYPES, ids=[f"{i}-{c['name'][:50]}" for i, c in enumerate(TYPES)])
@pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")
def test_types_through_zarr(case: dict[str, Any], tmp_path: Path) -> None:
    """Open the array with zarr-python over RfsStore and read it as h5py would (read_native)."""
    conformance.write_case_directory(case, tmp_path)
    store = RfsStore(read_local_rfs(tmp_path), grouped_view=0)  # keys as stored
    try:
        array = zarr.open_array(store, path=case["node"], mode="r", zarr_format=3)
        got: object = conformance.native_form(read_native(array))
    except ShadowzarrError as exc:
        got = {"error": _raised(exc)}
    assert got == case["expect"]
