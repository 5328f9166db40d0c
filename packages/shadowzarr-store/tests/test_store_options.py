"""`StoreOptions` holds one `TransportOptions`: the transport's settings by their own names in
the keyword form, their defaults the transport's own, and every one reaching the store's
transport."""

from __future__ import annotations

import pickle
from dataclasses import fields

import pytest

from shadowzarr_store import RfsStore, StoreOptions, load_rfs
from shadowzarr_store.remote import open_remote_array
from shadowzarr_store.source_reader import SourceReader
from shadowzarr_store.transport import StoreStats, TransportOptions

EVERY_SETTING = {
    "headers": {"https://host/": {"X-Key": "k"}},
    "allowed_urls": ["https://host/"],
    "storage_options": {"anon": True},
    "max_connections": 3,
    "max_total_connections": 7,
    "timeout": 2.5,
    "deadline": 9.0,
    "retries": 1,
    "backoff": 0.01,
    "max_backoff": 0.2,
    "max_retry_after": 4.0,
    "resolve_url": str.upper,
    "dandi_api_hosts": {"api.example.org": "EXAMPLE_KEY"},
    "presigned_url_ttl": 60.0,
    "multi_range": False,
    "max_ranges_per_request": 5,
    "proxy": False,
    "max_whole_file_bytes": 1234,
}


def test_every_transport_setting_is_a_store_keyword_reaching_the_transport() -> None:
    names = {f.name for f in fields(TransportOptions)} - {"allow_local_files"}
    assert names == set(EVERY_SETTING)  # a new transport setting is a new store keyword
    options = StoreOptions.from_kwargs({**EVERY_SETTING, "merge_gap": 10})
    assert options.merge_gap == 10
    given = options.transport(allow_local_files=False)
    assert given == TransportOptions(**EVERY_SETTING, allow_local_files=False)  # type: ignore[arg-type]
    rfs = load_rfs({"version": 1, "refs": {}})
    reader = SourceReader(rfs, StoreOptions.from_kwargs(EVERY_SETTING), StoreStats())
    assert reader.transport.options == TransportOptions(**EVERY_SETTING)  # type: ignore[arg-type]


def test_defaults_are_the_transports_own() -> None:
    options = StoreOptions()
    assert options.transport_options == TransportOptions()
    assert options.transport(allow_local_files=True) is options.transport_options  # no copy
    assert options.transport(allow_local_files=False).allow_local_files is False


def test_keywords_refine_a_given_transport_options() -> None:
    base = TransportOptions(timeout=3.0, retries=2)
    options = StoreOptions.from_kwargs({"transport_options": base, "retries": 0})
    assert options.transport_options == TransportOptions(timeout=3.0, retries=0)
    with pytest.raises(TypeError, match="TransportOptions"):
        StoreOptions.from_kwargs({"transport_options": {"timeout": 1}})
    with pytest.raises(TypeError, match="TransportOptions"):
        StoreOptions.from_kwargs({"transport_options": {"timeout": 1}, "retries": 0})


def test_a_stores_options_round_trip_by_their_fields_and_by_pickle() -> None:
    store = RfsStore({"version": 1, "refs": {}}, timeout=4.0, merge_gap=0, allow_local_files=False)
    again = StoreOptions.from_kwargs(
        {f.name: getattr(store.options, f.name) for f in fields(StoreOptions)}
    )
    assert again == store.options
    assert pickle.loads(pickle.dumps(store)).options == store.options
    assert store.options.allow_local_files is False


@pytest.mark.parametrize(
    ("given", "error", "words"),
    [
        ({"retries": -1}, ValueError, "retries"),
        ({"max_connections": 0}, ValueError, "max_connections"),
        ({"allowed_urls": "https://host/"}, TypeError, "allowed_urls"),
        ({"merge_gap": -1}, ValueError, "merge_gap"),
        ({"timeout_s": 1}, TypeError, "timeout_s"),
    ],
)
def test_bad_settings_are_refused_by_name(given: dict, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        StoreOptions.from_kwargs(given)


def test_open_remote_array_knows_the_transports_names() -> None:
    with pytest.raises(TypeError, match="did you mean multi_range"):
        open_remote_array({"version": 1, "refs": {}}, multi_rang=False)
