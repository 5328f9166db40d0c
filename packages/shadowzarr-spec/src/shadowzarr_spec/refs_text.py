"""Large reference files parsed a slice of ``refs`` at a time, so their objects never all exist.

Decoding a file that lists 10**6 chunks into one dict makes about 5 million Python objects
(keys, lists, URL strings, integers: 300 MB) that live only until the chunks are copied into
columns (`shadowzarr_spec.listed_refs`). Here the top level is decoded with each value left as
raw text (msgspec validates all of it), and the text of ``refs`` is cut between entries into
slices of about 256 KiB, each decoded and moved to columns before the next: the peak is the file's
text, the columns and one slice's objects. It is faster too: a slice of one array's chunk
references is read with numpy (`plain_slice`), so files from 64 KiB up take this path.

A slice ends after a ``],`` found past its target size. A cut anywhere but between two entries
(inside a string, or a nested value) leaves a slice that is not valid JSON (an open string or
bracket), so it is cut again further on. A key met in two slices could not keep JSON's rule (the
last value, in the first one's place): then, and whenever the text holds anything msgspec
refuses (bare ``NaN``…), this returns None and the caller parses the whole document, so values
and errors are always those of `rfs_from_json`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import numpy as np

from shadowzarr_spec.errors import ShadowzarrError
from shadowzarr_spec.gc_pause import paused_gc
from shadowzarr_spec.json_text import parse_json
from shadowzarr_spec.model import ReferenceFileSystem
from shadowzarr_spec.parse import PLAIN_SLICE, DuplicateRefsKey, rfs_from_parts
from shadowzarr_spec.plain_slice import plain_slice

__all__ = ["SLICED_FROM_BYTES", "rfs_from_json_text"]

SLICED_FROM_BYTES = 1 << 16
"""Texts whose ``refs`` are at least this long are parsed a slice at a time; smaller ones whole
(a file of 25,000 chunk references, 1 MB, opens in 0.05 s so where whole it took 0.19 s)."""
_SLICE_BYTES = 1 << 18
_DECODED_BYTES = 1 << 14
"""The first slice decoded entry by entry after numpy could not read one (then twice as long)."""
_TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])
_VALUES = msgspec.json.Decoder()
_SEARCH_BYTES = 1 << 16
_CLOSE, _COMMA, _OPEN, _END = ord("]"), ord(","), ord("{"), ord("}")


class _Refused(Exception):
    """A slice that is not a JSON object (cut in the wrong place)."""


def rfs_from_json_text(text: bytes, base: str | None = None) -> ReferenceFileSystem | None:
    """The references of reference-file ``text`` with large ``refs`` parsed a slice at a time;
    None when the text is small or the slicing does not apply (the caller parses it whole)."""
    if len(text) < SLICED_FROM_BYTES:
        return None
    try:
        with paused_gc():
            top = _TOP_LEVEL.decode(text)
    except (msgspec.DecodeError, RecursionError, UnicodeError):
        return None
    raw_refs = top.get("refs")
    if raw_refs is None or ("version" not in top and len(top) == 1):
        return None
    refs_text = memoryview(raw_refs)
    if len(refs_text) < SLICED_FROM_BYTES or refs_text[0] != _OPEN or refs_text[-1] != _END:
        return None
    document: dict[str, Any] = {
        key: {} if key == "refs" else parse_json(bytes(value)) for key, value in top.items()
    }
    try:
        return rfs_from_parts(document, base, _entries(refs_text))
    except (_Refused, DuplicateRefsKey, ShadowzarrError):
        # an invalid file is refused by the whole parse: a later repeat of the key at fault
        # would replace it there, and its error is the one a user sees either way
        return None


def _entries(text: memoryview) -> Iterator[tuple[Any, Any]]:
    """The (key, value) pairs of object ``text``, a slice at a time: a slice of nothing but
    one array's chunk references is read with numpy (`plain_slice`); where one is not (the
    metadata at the top, where one array's chunks end and the next one's begin), a shorter
    slice is decoded entry by entry, twice as long after each miss (up to a whole slice), and
    numpy tried again after it. A slice that does not decode was cut inside a value (a string
    holding ``],``): it is cut again further on, each time twice as far, until it ends between
    two entries (at worst at the end)."""
    characters = np.frombuffer(text, dtype=np.uint8)
    start, end = 1, len(text) - 1  # inside the braces
    decoded_reach = min(_DECODED_BYTES, _SLICE_BYTES)
    while start < end:
        stop = _cut_after(characters, start + _SLICE_BYTES, end)
        plain = plain_slice(bytes(text[start:stop]))
        if plain is not None:  # chunk references of one array only: read with numpy
            yield PLAIN_SLICE, plain
            start = stop + 1
            continue
        reach = decoded_reach
        decoded_reach = min(2 * decoded_reach, _SLICE_BYTES)
        while True:
            stop = _cut_after(characters, start + reach, end)
            try:
                decoded = _VALUES.decode(b"{" + bytes(text[start:stop]) + b"}")
                break
            except (msgspec.DecodeError, RecursionError, UnicodeError) as exc:
                if stop >= end:
                    raise _Refused from exc
                reach = 2 * (stop - start)
        if not isinstance(decoded, dict):
            raise _Refused
        yield from decoded.items()
        del decoded
        start = stop + 1  # past the comma


def _cut_after(characters: np.ndarray, position: int, end: int) -> int:
    """Where the first ``],`` at or after ``position`` has its comma; ``end`` if none."""
    while position < end:
        window = characters[position : min(position + _SEARCH_BYTES, end) + 1]
        found = np.flatnonzero((window[:-1] == _CLOSE) & (window[1:] == _COMMA))
        if len(found):
            return position + int(found[0]) + 1
        position += _SEARCH_BYTES
    return end
