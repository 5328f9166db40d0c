"""Every ``zarr.json`` passes here before zarr sees it; every chunk before zarr decodes it.

Metadata is validated once per node (`ArrayChecks`). A bad array fails when it is opened (the
store's ``get`` of its ``zarr.json`` raises our error naming it) and its chunks are refused;
the other arrays stay readable. Consolidated metadata would make zarr parse every array when
the group opens, so a group whose consolidated metadata holds a bad array, or an entry that is
not the child's own ``zarr.json`` (the one the store checks), is served without it: zarr then
opens each child from its own ``zarr.json``, and only the bad one fails. Metadata must be held
in the references themselves (inline); a ``zarr.json`` pointing into a source file is refused.
"""

from __future__ import annotations

import threading
import warnings
from typing import TYPE_CHECKING, Any

from shadowzarr_spec import InlineRef, ReferenceFormatError, ShadowzarrError, parse_json
from shadowzarr_spec.json_text import dumps_strict
from shadowzarr_spec.keys import array_of_chunk_key, join, metadata_key
from zarr.core.group import GroupMetadata

from shadowzarr_store.array_checks import METADATA_ERRORS, ArrayChecks

if TYPE_CHECKING:
    from shadowzarr_spec import ReferenceFileSystem
    from shadowzarr_spec.keys import ParsedKey

    from shadowzarr_store.missing_codecs import MissingCodecs

__all__ = ["MetadataGate", "is_metadata_key"]


def is_metadata_key(key: str) -> bool:
    return key == "zarr.json" or key.endswith("/zarr.json")


class MetadataGate:
    """The validated arrays of one reference file system, each checked once; ``missing_codecs``:
    the arrays that need a codec this install lacks (noted as their metadata is served)."""

    def __init__(
        self, rfs: ReferenceFileSystem, max_chunk_bytes: int, missing_codecs: MissingCodecs
    ) -> None:
        self._rfs = rfs
        self._max_chunk_bytes = max_chunk_bytes
        self._missing_codecs = missing_codecs
        self._lock = threading.Lock()
        self._arrays: dict[str, ArrayChecks | ShadowzarrError | None] = {}
        self._served: dict[str, bytes] = {}

    def array(self, path: str) -> ArrayChecks | None:
        """The checks of the array at ``path`` (None if there is no array there); raises the
        array's error, every time it is asked, if its metadata is refused."""
        with self._lock:
            known = self._arrays.get(path, _UNSEEN)
        if known is _UNSEEN:
            known = self._check_array(path)
            with self._lock:
                self._arrays[path] = known
        if isinstance(known, ShadowzarrError):
            raise type(known)(str(known)) from known
        assert known is None or isinstance(known, ArrayChecks)
        return known

    def chunk_checks(self, key: str) -> ArrayChecks | None:
        """The checks of the array holding chunk ``key``; None if ``key`` is not a chunk key of
        an array; the array's error if it is refused."""
        split = array_of_chunk_key(key)
        if split is None:
            return None
        return self.array(split[0])

    def checks_of(self, parsed: ParsedKey) -> ArrayChecks | None:
        """The checks of the array of chunk key ``parsed`` (None if it is no chunk key); the
        array's error if it is refused: a codec it needs is not installed, or its metadata."""
        if parsed.array is None:
            return None
        checks = self.array(parsed.array)
        self._missing_codecs.check_array(parsed.array)
        return checks

    def serve(self, key: str, ref: object) -> bytes:
        """What the store answers for metadata ``key`` held in ``ref``: the document itself for
        an array (or its error) and for a group (without consolidated metadata that holds an
        array refused here)."""
        if not isinstance(ref, InlineRef):
            raise ReferenceFormatError(
                f"{key!r} must be held in the references themselves, not in a source file"
            )
        # stand-ins for codecs this install lacks, before zarr or the gate parses it
        self._missing_codecs.note_metadata(key, ref.data)
        with self._lock:
            served = self._served.get(key)
        if served is not None:
            return served
        path = key[: -len("zarr.json")].rstrip("/")
        document = parse_json(ref.data)
        if isinstance(document, dict) and document.get("node_type") == "array":
            self.array(path)
            served = bytes(ref.data)
        else:
            served = self._group(path, document, bytes(ref.data))
        with self._lock:
            self._served[key] = served
        return served

    def _check_array(self, path: str) -> ArrayChecks | ShadowzarrError | None:
        ref = self._rfs.refs.get(metadata_key(path))
        if not isinstance(ref, InlineRef):
            return None
        try:
            document = parse_json(ref.data)
            if not isinstance(document, dict) or document.get("node_type") != "array":
                return None
            return ArrayChecks.from_document(path, document, self._max_chunk_bytes)
        except ShadowzarrError as exc:
            return exc

    def _group(self, path: str, document: Any, raw: bytes) -> bytes:
        """A group's document as served: zarr must parse it, and its consolidated metadata
        only stays when every array in it passes here too."""
        if not isinstance(document, dict) or document.get("node_type") not in ("group", None):
            raise ReferenceFormatError(f"node {path!r}: its zarr.json is neither group nor array")
        if "consolidated_metadata" in document:
            if _zarr_accepts_group(document) and self._members_pass(path, document):
                return raw
            document = {k: v for k, v in document.items() if k != "consolidated_metadata"}
            raw = dumps_strict(document).encode("utf-8")
        _parse_group(path, document)
        return raw

    def _members_pass(self, path: str, document: dict[str, Any]) -> bool:
        consolidated = document["consolidated_metadata"]
        members = consolidated.get("metadata") if isinstance(consolidated, dict) else None
        if not isinstance(members, dict):
            return not members
        for child, child_document in members.items():
            # zarr opens a child from its consolidated entry: it must be the child's own
            # zarr.json, which is what the store checks (and serves when opened alone).
            own = self._rfs.refs.get(metadata_key(join(path, str(child))))
            if not isinstance(own, InlineRef) or _node(_parsed(own.data)) != _node(child_document):
                return False
            if isinstance(child_document, dict) and child_document.get("node_type") == "array":
                try:
                    ArrayChecks.from_document(
                        join(path, str(child)), child_document, self._max_chunk_bytes
                    )
                except ShadowzarrError:
                    return False
        return True


def _node(document: Any) -> Any:
    """A node's document without the consolidated metadata a group entry may carry."""
    if isinstance(document, dict) and "consolidated_metadata" in document:
        return {k: v for k, v in document.items() if k != "consolidated_metadata"}
    return document


def _parsed(data: bytes) -> Any:
    try:
        return parse_json(data)
    except ShadowzarrError:
        return _UNSEEN


def _parse_group(path: str, document: dict[str, Any]) -> None:
    """zarr-python's own validation of a group document, its errors made ours."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zarr warns again when it opens the group itself
            GroupMetadata.from_dict(document, path=path)
    except METADATA_ERRORS as exc:
        raise ReferenceFormatError(
            f"group {path!r} has metadata zarr refuses: {type(exc).__name__}: {exc}"
        ) from exc


def _zarr_accepts_group(document: dict[str, Any]) -> bool:
    try:
        _parse_group("", document)
    except ReferenceFormatError:
        return False
    return True


_UNSEEN: Any = object()
