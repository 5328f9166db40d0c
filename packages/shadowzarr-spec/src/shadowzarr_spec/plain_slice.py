"""A slice of ``refs`` read with numpy when it is nothing but chunk references of one array.

A file listing 10**6 chunks is almost all entries such as ``"data/c/12":["{{u0}}",4096,4096]``
(or kerchunk's ``"data/c/12": ["https://...", 4096, 4096]``). Decoding each into Python objects
and moving it into columns costs about a microsecond an entry; here a slice made only of such
entries (one array path, one URL as written, canonical chunk coordinates, integer offsets and
sizes, compact or ``json.dump``'s spacing, no escapes) is checked and read whole with numpy.
Anything else in a slice (other keys, other spacing, floats, another URL) returns None and the
slice is decoded entry by entry: this only ever reads text whose meaning is unambiguous.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shadowzarr_spec.keys import MAX_KEY_LENGTH

__all__ = ["PlainSlice", "plain_slice"]

_QUOTE, _SLASH, _BACKSLASH = ord('"'), ord("/"), ord("\\")
_ZERO, _NINE = ord("0"), ord("9")
_DIGITS = 18
"""Most digits of a number read here (10**18 < 2**63); a longer one is decoded entry by entry."""
_STYLES = ((b":[", b",", b"]"), (b": [", b", ", b"]"))
"""(after a key, between numbers and after the URL, the list's end) of compact and spaced JSON;
entries are separated by the middle one too."""


@dataclass(frozen=True, slots=True)
class PlainSlice:
    """``len(offsets)`` chunk references of array ``path``: chunk ``coords[i]``, ``sizes[i]``
    bytes at ``offsets[i]`` of ``url`` (as written, templates not expanded)."""

    path: str
    first_key: str
    url: str
    coords: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray


def plain_slice(piece: bytes) -> PlainSlice | None:
    """The entries of ``piece`` (the text between two entries of ``refs``, no braces) when they
    are all plain chunk references of one array (see the module); None otherwise."""
    if b"\\" in piece or not piece:
        return None
    text = np.frombuffer(piece, dtype=np.uint8)
    quotes = np.flatnonzero(text == _QUOTE)
    if not len(quotes) or len(quotes) % 4:
        return None
    q = quotes.reshape(-1, 4)
    count = len(q)
    for after_key, between, end in _STYLES:
        found = _read(piece, text, q, count, after_key, between, end)
        if found is not None:
            return found
    return None


def _read(
    piece: bytes,
    text: np.ndarray,
    q: np.ndarray,
    count: int,
    after_key: bytes,
    between: bytes,
    end: bytes,
) -> PlainSlice | None:
    lead = int(q[0, 0])  # spaced text starts with the blank after the cut comma
    if lead >= len(between) or piece[:lead] != between[1:][:lead]:
        return None
    # key, then after_key, then the URL: fixed distances
    if not (q[:, 2] - q[:, 1] == len(after_key) + 1).all() or not _equal_at(
        text, q[:, 1] + 1, after_key
    ):
        return None
    url_length = int(q[0, 3] - q[0, 2])
    if not (q[:, 3] - q[:, 2] == url_length).all():
        return None
    url_text = piece[int(q[0, 2]) + 1 : int(q[0, 3])]
    if not url_text or not _equal_at(text, q[:, 2] + 1, url_text):
        return None
    first_key = piece[int(q[0, 0]) + 1 : int(q[0, 1])]
    head, found, _ = first_key.rpartition(b"/c/")
    if not found:
        if not first_key.startswith(b"c/"):
            return None
        head = b""
    prefix = first_key[: len(head) + 3] if found else b"c/"
    if not _equal_at(text, q[:, 0] + 1, prefix):
        return None
    # the tails: numbers and slashes, the same count of each in every key
    tail_start = q[:, 0] + 1 + len(prefix)
    tail_end = q[:, 1]
    if not (tail_end > tail_start).all() or int((tail_end - q[:, 0]).max()) > MAX_KEY_LENGTH:
        return None
    flat = q.ravel()
    digit = (text >= _ZERO) & (text <= _NINE)
    edges = np.diff(digit.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    run_starts = np.flatnonzero(edges == 1)
    run_ends = np.flatnonzero(edges == -1)
    # where each run lies: 1 in a key, 3 in a URL, 0 after a URL (its entry: the one before)
    region = np.searchsorted(flat, run_starts, side="right")
    entry = (region - 1) // 4
    in_key = (region % 4 == 1) & (run_starts >= tail_start[np.minimum(entry, count - 1)])
    slash_at = np.flatnonzero(text == _SLASH)
    slash_region = np.searchsorted(flat, slash_at, side="right")
    slash_entry = (slash_region - 1) // 4
    in_tail = (slash_region % 4 == 1) & (slash_at >= tail_start[np.minimum(slash_entry, count - 1)])
    slashes = np.bincount(slash_entry[in_tail], minlength=count)
    rank = int(slashes[0]) + 1
    key_runs = np.flatnonzero(in_key)
    if len(key_runs) != count * rank or not (slashes == rank - 1).all():
        return None
    key_lengths = run_ends[key_runs] - run_starts[key_runs]
    per_key = key_lengths.reshape(count, rank).sum(axis=1) + (rank - 1)
    if (
        not (np.bincount(entry[key_runs], minlength=count) == rank).all()
        or not (per_key == tail_end - tail_start).all()
    ):
        return None
    coords = _values(text, run_starts[key_runs], key_lengths)
    if coords is None:
        return None
    coords = coords.reshape(count, rank)
    # after the URL: between N between N end [between]
    value_runs = np.flatnonzero((region % 4 == 0) & (region > 0))
    if len(value_runs) != 2 * count:
        return None
    v_starts = run_starts[value_runs]
    v_lengths = run_ends[value_runs] - v_starts
    numbers = _values(text, v_starts, v_lengths)
    if numbers is None:
        return None
    first, second = v_starts[0::2], v_starts[1::2]
    first_end = first + v_lengths[0::2]
    second_end = second + v_lengths[1::2]
    gap = len(between)
    if not (
        (first == q[:, 3] + 1 + gap).all()
        and (second == first_end + gap).all()
        and _equal_at(text, q[:, 3] + 1, between)
        and _equal_at(text, first_end, between)
        and _equal_at(text, second_end, end)
    ):
        return None
    closing = second_end + len(end)
    if not (closing[:-1] + gap == q[1:, 0]).all() or int(closing[-1]) != len(text):
        return None
    if count > 1 and not _equal_at(text, closing[:-1], between):
        return None
    try:
        path = head.decode("ascii")
        key = first_key.decode("ascii")
        url = url_text.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return PlainSlice(path, key, url, coords, numbers[0::2], numbers[1::2])


def _equal_at(text: np.ndarray, starts: np.ndarray, expected: bytes) -> bool:
    """Whether ``expected`` is at every one of ``starts`` of ``text``."""
    if not len(starts):
        return True
    width = len(expected)
    if int(starts.max()) + width > len(text) or int(starts.min()) < 0:
        return False
    return all(bool((text[starts + j] == byte).all()) for j, byte in enumerate(expected))


_POWERS = 10 ** np.arange(_DIGITS, dtype=np.int64)


def _values(text: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray | None:
    """The integers written at ``starts`` (``lengths`` digits each) of ``text``; None if one is
    longer than `_DIGITS` or has a leading zero."""
    if not len(starts):
        return np.zeros(0, dtype=np.int64)
    if bool((lengths > _DIGITS).any()) or bool(((text[starts] == _ZERO) & (lengths > 1)).any()):
        return None
    firsts = np.cumsum(lengths) - lengths
    where = np.repeat(starts - firsts, lengths) + np.arange(int(firsts[-1] + lengths[-1]))
    exponents = np.repeat(starts + lengths - 1, lengths) - where
    terms = (text[where].astype(np.int64) - _ZERO) * _POWERS[exponents]
    return np.add.reduceat(terms, firsts)
