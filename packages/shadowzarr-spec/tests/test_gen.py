"""Gen entries look up one key at a time and never expand."""

from __future__ import annotations

import time

import pytest

from shadowzarr_spec.errors import GenExpressionError, ReferenceFormatError
from shadowzarr_spec.gen import Dimension, GenEntry
from shadowzarr_spec.model import FileRef


def test_lookup_evaluates_one_key() -> None:
    entry = GenEntry.from_json(
        {
            "key": "ts/c/{{i}}",
            "url": "{{u0}}",
            "offset": "{{2048 + i * 4194304}}",
            "length": "4194304",
            "dimensions": {"i": {"stop": 58}},
        },
        {"u0": "https://example.org/f.h5"},
    )
    assert entry.lookup("ts/c/57") == FileRef(
        "https://example.org/f.h5", 2048 + 57 * 4194304, 4194304
    )
    assert entry.lookup("ts/c/58") is None
    assert entry.lookup("ts/c/-1") is None
    assert entry.lookup("ts/c/007") is None
    assert entry.lookup("ts/c/1/0") is None
    assert entry.lookup("other/c/1") is None
    assert entry.count == 58


def test_huge_entries_are_never_expanded() -> None:
    entry = GenEntry(
        "a/c/{{i}}/{{j}}",
        "f.bin",
        "{{i * 1000000 + j * 10}}",
        "10",
        {"i": Dimension(stop=10**9), "j": Dimension(stop=10**6)},
    )
    started = time.perf_counter()
    assert entry.lookup("a/c/999999999/999999") == FileRef(
        "f.bin", 999999999 * 1000000 + 9999990, 10
    )
    assert time.perf_counter() - started < 0.1
    assert entry.count == 10**15


def test_list_and_stepped_dimensions() -> None:
    entry = GenEntry(
        "a/c/{{i}}/{{j}}",
        "f_{{j}}.bin",
        "{{i}}",
        "1",
        {"i": Dimension(values=(3, 5, 9)), "j": Dimension(0, 10, 3)},
    )
    assert entry.lookup("a/c/5/9") == FileRef("f_9.bin", 5, 1)
    assert entry.lookup("a/c/4/9") is None
    assert entry.lookup("a/c/5/8") is None
    assert sorted(k for k, _ in entry.items())[:2] == ["a/c/3/0", "a/c/3/3"]


@pytest.mark.parametrize(
    "entry",
    [
        {
            "key": "a/c/{{i + 1}}",
            "url": "f",
            "offset": "0",
            "length": "1",
            "dimensions": {"i": {"stop": 2}},
        },
        {
            "key": "a/c/{{i}}",
            "url": "f",
            "offset": "{{k}}",
            "length": "1",
            "dimensions": {"i": {"stop": 2}},
        },
        {
            "key": "a/c/{{i}}",
            "url": "f",
            "offset": "{{open(1)}}",
            "length": "1",
            "dimensions": {"i": {"stop": 2}},
        },
    ],
)
def test_bad_templates_are_refused(entry: dict[str, object]) -> None:
    with pytest.raises(GenExpressionError):
        GenEntry.from_json(entry, {})


@pytest.mark.parametrize(
    "entry",
    [
        [],
        {"key": "a/c/{{i}}"},
        {
            "key": "a/c/{{i}}",
            "url": "f",
            "offset": "0",
            "length": "1",
            "dimensions": {"i": {"start": 0}},
        },
        {
            "key": "a/c/{{i}}",
            "url": "f",
            "offset": "0",
            "length": "1",
            "dimensions": {"i": {"stop": 2, "step": 0}},
        },
        {"key": "a/c/{{i}}", "url": "f", "offset": "0", "length": "1", "dimensions": {"i": "x"}},
        {"key": 3, "url": "f", "offset": "0", "length": "1", "dimensions": {"i": 2}},
    ],
)
def test_malformed_entries_are_refused(entry: object) -> None:
    with pytest.raises(ReferenceFormatError):
        GenEntry.from_json(entry, {})
