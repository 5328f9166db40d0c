"""Object-store URLs (``s3://``, ``gs://``, ``az://``) through obstore.

obstore (Rust ``object_store``, what zarr-python's ``ObjectStore`` and VirtualiZarr use) signs
requests, finds credentials in the environment and retries; we add nothing to that but the
ETag check and our error types. ``storage_options`` takes obstore's own configuration keys
and the fsspec/s3fs spellings, an obstore store, or a mapping of URL prefixes to either (see
`shadowzarr_store.transport.storage_options`). Values are credentials: they never appear in a
repr or a message, and nothing is written with them.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from shadowzarr_spec import (
    SourceAccessError,
    SourceChangedError,
    SourceError,
    SourceNotFoundError,
)

from shadowzarr_store.transport.answer import Answer
from shadowzarr_store.transport.errors import ProxyError
from shadowzarr_store.transport.locations import redact
from shadowzarr_store.transport.proxies import ProxyConfig
from shadowzarr_store.transport.storage_options import (
    StorageSettings,
    choose,
    path_in,
    settings_for,
)

if TYPE_CHECKING:
    from obstore.store import ObjectStore
    from zarr.abc.store import Store

    from shadowzarr_store.transport.options import TransportOptions

__all__ = [
    "ListedObject",
    "ObjectStoreBackend",
    "delete_objects",
    "get_object",
    "list_objects",
    "put_objects",
    "split_object_url",
    "store_for",
    "zarr_store_for",
]


def split_object_url(url: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` → (``s3://bucket``, ``a/b``)."""
    parts = urlsplit(url)
    if not parts.netloc:
        raise SourceError(f"{redact(url)}: an object-store URL needs a bucket (s3://bucket/key)")
    return f"{parts.scheme.lower()}://{parts.netloc}", parts.path.lstrip("/")


def store_for(
    root: str,
    storage_options: Any,
    *,
    retries: int = 5,
    deadline: float = 300,
    proxies: ProxyConfig | None = None,
) -> ObjectStore:
    """An obstore store for ``scheme://bucket`` configured by ``storage_options`` (any of the
    forms `storage_options` takes), through the proxy ``proxies`` choose for its endpoint."""
    _, chosen = choose(root, storage_options)
    return build_store(root, settings_for(root, chosen), retries, deadline, proxies)


def build_store(
    root: str,
    settings: StorageSettings,
    retries: int,
    deadline: float,
    proxies: ProxyConfig | None,
) -> ObjectStore:
    """The store ``settings`` describe (the user's own store as it is)."""
    from obstore.exceptions import BaseError
    from obstore.store import from_url

    if settings.store is not None:
        store: ObjectStore = settings.store
        return store
    config, client = dict(settings.config), dict(settings.client)
    if proxies is not None:
        endpoint = config.get("endpoint") or config.get("base_url") or _environment_endpoint(root)
        scheme = root.partition("://")[0]
        for name, value in _proxy_options(proxies, endpoint, scheme).items():
            client.setdefault(name, value)
    retry = {
        "max_retries": retries,
        "retry_timeout": datetime.timedelta(seconds=deadline),
    }
    extra: dict[str, Any] = {}
    if settings.credential_provider is not None:
        extra["credential_provider"] = settings.credential_provider
    try:
        # Empty settings are left out: obstore then reads them (AWS_ALLOW_HTTP…) from the
        # environment, which an empty mapping would override.
        make: Any = from_url  # its overloads are per scheme; ours is known at run time
        built: ObjectStore = make(
            root,
            config=config or None,
            client_options=client or None,
            retry_config=retry,
            **extra,
        )
        return built
    except (BaseError, ValueError, TypeError) as exc:
        # obstore reports an unknown key by its name; a credential it could not decode may be
        # quoted in its message, so every value given is cut out of it.
        said = _without_values(_first_line(exc), config)
        raise SourceError(f"{root}: cannot configure the object store: {said}") from exc


def _without_values(text: str, config: Mapping[str, Any]) -> str:
    """``text`` with every configured value, and every value inside a JSON key given (as
    text or as a file), shown as ``…``: an error message must not carry a credential."""
    values: list[str] = []
    for name, value in config.items():
        values.append(str(value))
        key_text = _key_file_text(value) if name in _KEY_FILES else str(value)
        if key_text.lstrip().startswith("{"):
            with contextlib.suppress(ValueError, AttributeError):
                values.extend(str(v) for v in json.loads(key_text).values())
    for value in sorted((v for v in values if len(v) >= 4), key=len, reverse=True):
        text = text.replace(value, "…")
    return text


_KEY_FILES = frozenset({"service_account", "application_credentials"})


def _key_file_text(path: Any) -> str:
    try:
        with open(str(path), encoding="utf-8") as file:
            return file.read(1 << 20)
    except (OSError, ValueError):
        return ""


def _environment_endpoint(root: str) -> str | None:
    """The endpoint obstore would take from the environment for ``root`` (S3 only)."""
    if not root.startswith("s3://"):
        return None
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


_CLOUD_DOMAINS = {
    "s3": "amazonaws.com,.amazonaws.com",
    "gs": "googleapis.com,.googleapis.com",
    "az": "windows.net,.windows.net",
}
_NEVER_USED = "http://127.0.0.1:9"
"""A proxy URL given with every host excluded from it: obstore's HTTP client (reqwest) reads
``HTTP_PROXY`` and ``NO_PROXY`` itself unless a proxy is configured, and our decision to go
directly must hold for it too (port 9 discards: were it ever used, the read would fail)."""
_ENVIRONMENT_PROXIES = ("http_proxy", "https_proxy", "all_proxy")


def _proxy_options(proxies: ProxyConfig, endpoint: str | None, scheme: str) -> dict[str, str]:
    """obstore's ``proxy_url`` (and ``proxy_excludes``) for a store at ``endpoint``, decided
    as for every other request (`ProxyConfig.for_url`). Without an endpoint the store talks
    to its cloud's HTTPS hosts: the HTTPS proxy, with ``no_proxy`` for obstore to apply."""
    host = ""
    if endpoint:
        try:
            parts = urlsplit(str(endpoint))
            host = parts.hostname or ""
            proxy = proxies.for_url(parts.scheme, host, parts.port)
        except ValueError:
            return {}  # obstore refuses the endpoint itself, by name
        if proxy is not None:
            return {"proxy_url": proxy.url_with_credentials}
    elif proxies.https is not None and not proxies.no_proxy.everything:
        options = {"proxy_url": proxies.https.url_with_credentials}
        if proxies.no_proxy.text.strip():
            options["proxy_excludes"] = ",".join(proxies.no_proxy.text.replace(",", " ").split())
        return options
    if not any(os.environ.get(n) or os.environ.get(n.upper()) for n in _ENVIRONMENT_PROXIES):
        return {}
    excluded = host.strip("[]") if host else _CLOUD_DOMAINS.get(scheme, "")
    return {"proxy_url": _NEVER_USED, "proxy_excludes": excluded} if excluded else {}


def obstore_for(prefix: str, storage_options: Mapping[str, Any] | None = None) -> ObjectStore:
    """An obstore store serving the locations under ``prefix`` (``file://``, ``http(s)://host/``
    or ``s3://``/``gs://``/``az://bucket``), for libraries that read through obstore themselves
    (VirtualiZarr's registries); our own reads go through `Transport`."""
    scheme = prefix.split("://", 1)[0].lower()
    if scheme == "file":
        from obstore.store import LocalStore

        return LocalStore()
    if scheme in ("http", "https"):
        from obstore.store import HTTPStore

        return HTTPStore.from_url(prefix)
    return store_for(split_object_url(prefix)[0], storage_options)


def zarr_store_for(url: str, storage_options: Any = None, *, read_only: bool) -> Store:
    """zarr-python's ``ObjectStore`` at ``s3://bucket/prefix`` (``gs://``, ``az://``) over the
    obstore store `store_for` configures from ``storage_options``: the one way a package of
    ours hands zarr a remote store (materialize writes through it)."""
    from zarr.storage import ObjectStore as ZarrObjectStore

    return ZarrObjectStore(store_for(url.rstrip("/"), storage_options), read_only=read_only)


@dataclass(frozen=True, slots=True)
class ListedObject:
    """One object of a listing: its key, size and ETag as the store's listing gives them."""

    key: str
    size: int
    etag: str | None


def list_objects(
    url: str, storage_options: Mapping[str, Any] | None = None
) -> Iterator[ListedObject]:
    """Every object under ``scheme://bucket/prefix/`` (sorted by key), through obstore's
    paginated listing: one request per page of keys, none to the objects themselves."""
    import obstore

    root, prefix = split_object_url(url)
    store = store_for(root, storage_options)
    prefix = prefix.rstrip("/")
    try:
        for batch in obstore.list(store, prefix=prefix or None, chunk_size=1000):
            for meta in sorted(batch, key=lambda m: m["path"]):
                yield ListedObject(meta["path"], int(meta["size"]), meta.get("e_tag"))
    except Exception as exc:
        raise _translated(exc, redact(url)) from exc


def get_object(url: str, storage_options: Mapping[str, Any] | None = None) -> bytes | None:
    """The whole object at ``url``, None when there is none (for a writer reading back its own
    small files, such as a catalog's progress database)."""
    import obstore

    root, key = split_object_url(url)
    store = store_for(root, storage_options)
    try:
        return bytes(obstore.get(store, key).bytes())
    except Exception as exc:
        translated = _translated(exc, redact(url))
        if isinstance(translated, SourceNotFoundError) or isinstance(exc, FileNotFoundError):
            return None
        raise translated from exc


def put_objects(
    url: str, files: Mapping[str, bytes], storage_options: Mapping[str, Any] | None = None
) -> None:
    """Write ``files`` (relative key → bytes) under ``scheme://bucket/prefix``, one PUT each,
    in the mapping's order: a reader sees each object whole or not at all (an S3 PUT is
    atomic), and the last file written is the one that makes the set visible."""
    import obstore

    root, prefix = split_object_url(url)
    store = store_for(root, storage_options)
    for relative, data in files.items():
        key = f"{prefix.rstrip('/')}/{relative}" if prefix.rstrip("/") else relative
        try:
            obstore.put(store, key, data)
        except Exception as exc:
            raise _translated(exc, redact(f"{root}/{key}")) from exc


def delete_objects(
    url: str, keys: list[str], storage_options: Mapping[str, Any] | None = None
) -> None:
    """Delete ``keys`` (whole keys in the bucket of ``url``); keys already gone are no error.
    S3 takes up to 1,000 keys a request."""
    import obstore

    root, _ = split_object_url(url)
    store = store_for(root, storage_options)
    if not keys:
        return
    try:
        obstore.delete(store, keys)
    except Exception as exc:
        raise _translated(exc, redact(root)) from exc


class ObjectStoreBackend:
    """One transport's object-store reads; one obstore store per bucket, shared by all loops."""

    def __init__(self, options: TransportOptions) -> None:
        self._options = options
        self._lock = threading.Lock()
        self._stores: dict[tuple[str, str], tuple[ObjectStore, StorageSettings]] = {}
        self._proxies = ProxyConfig.resolve(options.proxy)
        self._via: dict[str, str] = {}
        """The proxy each store's requests go through (by root), for messages."""

    def _store(self, url: str) -> tuple[ObjectStore, str, str]:
        """The store for ``url``, the key it finds the object under, and its root."""
        root, path = split_object_url(url)
        prefix, chosen = choose(url, self._options.storage_options)
        with self._lock:
            kept = self._stores.get((root, prefix))
            if kept is None:
                settings = settings_for(root, chosen)
                store = build_store(
                    root,
                    settings,
                    self._options.retries,
                    self._options.deadline,
                    self._proxies,
                )
                kept = self._stores[(root, prefix)] = (store, settings)
                used = getattr(store, "client_options", None) or {}
                proxy_url = used.get("proxy_url") if isinstance(used, Mapping) else None
                if proxy_url and proxy_url != _NEVER_USED:
                    self._via[root] = redact(str(proxy_url))
        store, settings = kept
        return store, path_in(settings, root, path), root

    async def get(
        self, url: str, start: int, end: int | None, etag: str | None, shown: str
    ) -> Answer:
        """Bytes ``[start, end)`` of the object (``0, None``: all of it), with its size and ETag."""
        import obstore

        store, path, root = self._store(url)
        options: dict[str, Any] = {}
        if not (start == 0 and end is None):
            options["range"] = {"offset": start} if end is None else (start, end)
        if etag:
            options["if_match"] = etag
        try:
            result = await obstore.get_async(store, path, options=options)  # type: ignore[arg-type]
            data = bytes(await result.bytes_async())
        except Exception as exc:
            raise _translated(exc, shown, self._via.get(root)) from exc
        meta = result.meta
        return Answer(data, int(meta["size"]), meta.get("e_tag"))


def _translated(exc: Exception, shown: str, via: str | None = None) -> Exception:
    """obstore's error as ours (its message's first line, with URLs redacted, naming the
    proxy the request went through)."""
    from obstore import exceptions as errors

    said = _first_line(exc)
    if isinstance(exc, errors.NotFoundError):
        return SourceNotFoundError(f"{shown}: not found ({said})")
    if isinstance(exc, errors.PreconditionError):
        return SourceChangedError(f"{shown}: the ETag no longer matches: it has changed")
    if isinstance(exc, errors.PermissionDeniedError | errors.UnauthenticatedError):
        return SourceAccessError(
            f"{shown}: access refused; give credentials in storage_options or the "
            "environment, or anon=True for a public bucket"
        )
    if via is not None and "error sending request" in said:
        # through a proxy, a server that cannot be reached is the proxy's 502: the request
        # never left our side, so the proxy itself did not answer
        return ProxyError(f"{shown}: cannot connect to the proxy {via}: {said}")
    if via is not None:
        return SourceError(f"{shown}: {type(exc).__name__} through the proxy {via}: {said}")
    return SourceError(f"{shown}: {type(exc).__name__}: {said}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return " ".join(redact(word) if "://" in word else word for word in text.split())[:300]
