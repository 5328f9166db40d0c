"""``storage_options`` as the ecosystem spells them, made into obstore's settings.

Users arrive with fsspec/s3fs options (``key``, ``secret``, ``token``, ``anon``,
``endpoint_url``, ``client_kwargs={"region_name": …, "endpoint_url": …}``, ``profile``,
``requester_pays``, ``config_kwargs``), with obstore's own keys (``access_key_id``,
``region``, ``endpoint``, ``skip_signature``, ``client_options``…), with an obstore store they
built, or with nothing but the environment and ``~/.aws``; for ``gs://`` and ``az://`` with
gcsfs's and adlfs's names (`shadowzarr_store.transport.cloud_options`). All of them are
accepted:

- a mapping of options (either spelling, mixed);
- an obstore store instance, for the bucket it was built for (refused for another: it would
  read the other bucket's keys);
- a mapping of URL prefixes (``"s3://bucket-a"``, ``"s3://bucket-b/raw/"``) to either of the
  above, the longest matching prefix winning, so two buckets can have different credentials;
- VirtualiZarr's registry (``obspec_utils.registry.ObjectStoreRegistry``) of obstore stores,
  read as that mapping of the URLs its stores were registered under.

S3 credentials are looked for as boto3 looks: the options; else the environment
(``AWS_ACCESS_KEY_ID``…, web identity and container credentials, which obstore reads); else the
profile (``profile`` option, ``AWS_PROFILE``, or ``default``) in ``AWS_SHARED_CREDENTIALS_FILE``
(``~/.aws/credentials``) and ``AWS_CONFIG_FILE`` (``~/.aws/config``), read with configparser.
With none found the read fails with our `MissingCredentialsError` before any request, rather
than obstore asking the EC2 instance metadata service (169.254.169.254) and failing there:
on EC2, pass ``instance_metadata=True`` to use the instance's role. An ``http://`` endpoint
allows plain HTTP. Values are credentials: never shown in a message or a repr.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shadowzarr_spec import SourceAccessError, SourceError

from shadowzarr_store.transport.cloud_options import azure_option, gcs_option

__all__ = [
    "MissingCredentialsError",
    "StorageOptionsError",
    "StorageSettings",
    "choose",
    "path_in",
    "settings_for",
    "storage_settings",
]

_ALIASES = {
    "key": "access_key_id",
    "secret": "secret_access_key",
    "token": "session_token",
    "endpoint_url": "endpoint",
    "aws_access_key_id": "access_key_id",
    "aws_secret_access_key": "secret_access_key",
    "aws_session_token": "session_token",
    "region_name": "region",
}
_COMMON_ALIASES = {"endpoint_url": "endpoint"}
"""The s3fs names that mean the same for every store (``token`` is S3's session token only)."""
_CLIENT_KWARGS = {
    "region_name": "region",
    "endpoint_url": "endpoint",
    "aws_access_key_id": "access_key_id",
    "aws_secret_access_key": "secret_access_key",
    "aws_session_token": "session_token",
}
_IGNORED = frozenset(
    {
        # fsspec's caching and listing knobs: no bearing on a range read through obstore
        "default_block_size",
        "default_fill_cache",
        "default_cache_type",
        "use_listings_cache",
        "listings_expiry_time",
        "max_paths",
        "skip_instance_cache",
        "cache_regions",
        "version_aware",
        "asynchronous",
        "loop",
        "max_concurrency",
        "fixed_upload_size",
    }
)
_CREDENTIAL_KEYS = ("access_key_id", "secret_access_key", "session_token")
_ENVIRONMENT_CREDENTIALS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)


class StorageOptionsError(SourceError, ValueError):
    """``storage_options`` that cannot be used (an unknown fsspec setting, a store for
    another bucket); the message names keys, never values."""


class MissingCredentialsError(SourceAccessError):
    """No credentials for an object store were found (options, environment, profile files),
    and the bucket was not declared public (``anon=True``)."""


@dataclass(frozen=True, slots=True)
class StorageSettings:
    """What `store_for` builds a store from (or the store itself)."""

    config: dict[str, Any] = field(default_factory=dict, repr=False)
    client: dict[str, Any] = field(default_factory=dict, repr=False)
    store: Any = field(default=None, repr=False)
    """An obstore store the user built (used as it is)."""
    credential_provider: Any = field(default=None, repr=False)


def choose(url: str, storage_options: Any) -> tuple[str, Any]:
    """The options for ``url`` and the URL prefix they were given under (``""``: the options
    are for every URL); a prefix mapping with none matching gives None (the environment)."""
    registered = _registry_prefixes(storage_options)
    if registered is not None:
        storage_options = registered
    if not isinstance(storage_options, Mapping) or not storage_options:
        return "", storage_options
    prefixes = [key for key in storage_options if isinstance(key, str) and "://" in key]
    if not prefixes:
        return "", storage_options
    if len(prefixes) != len(storage_options):
        raise StorageOptionsError(
            "storage_options mixes URL prefixes with option names; give either one set of "
            "options, or a mapping of URL prefixes to options"
        )
    matching = [p for p in prefixes if _under(url, p)]
    if not matching:
        return "", None  # no prefix names this URL: the environment's settings
    best = max(matching, key=len)
    return best, storage_options[best]


def settings_for(
    root: str, chosen: Any, environ: Mapping[str, str] | None = None
) -> StorageSettings:
    """The settings of a store for ``root`` (``scheme://bucket``) from the options `choose`
    found for it."""
    if _is_store(chosen):
        return StorageSettings(store=chosen)
    if chosen is not None and not isinstance(chosen, Mapping):
        raise StorageOptionsError(
            f"{root}: storage_options must be a mapping of options, an obstore store or a "
            f"mapping of URL prefixes to either, not {type(chosen).__name__}"
        )
    return _normalised(root, chosen or {}, os.environ if environ is None else environ)


def storage_settings(root: str, storage_options: Any) -> StorageSettings:
    """The settings of a store for ``root`` from the user's ``storage_options`` (either
    spelling, or URL prefixes mapped to options): `choose` then `settings_for`."""
    return settings_for(root, choose(root, storage_options)[1])


def path_in(settings: StorageSettings, root: str, path: str) -> str:
    """The key under which the store finds ``root/path``."""
    if settings.store is None:
        return path
    return _path_in_store(settings.store, root, path)


def _registry_prefixes(registry: Any) -> dict[str, Any] | None:
    """An ``ObjectStoreRegistry`` (obspec-utils, as VirtualiZarr passes it) as a mapping of the
    URL prefixes its stores are registered under to the stores; None for anything else."""
    tree = getattr(registry, "map", None)
    if isinstance(registry, Mapping) or not isinstance(tree, Mapping):
        return None
    if not callable(getattr(registry, "resolve", None)):
        return None
    prefixes: dict[str, Any] = {}

    def walk(base: str, entry: Any) -> None:
        if getattr(entry, "store", None) is not None:
            prefixes[base] = entry.store
        for segment, child in dict(getattr(entry, "children", None) or {}).items():
            walk(f"{base}/{segment}", child)

    for key, entry in tree.items():
        scheme, netloc = getattr(key, "scheme", None), getattr(key, "netloc", None)
        if not isinstance(scheme, str) or not isinstance(netloc, str):
            raise StorageOptionsError(
                f"storage_options: a {type(registry).__name__} whose entries are not keyed by "
                "URL scheme and host"
            )
        walk(f"{scheme}://{netloc}", entry)
    return prefixes


def _under(url: str, prefix: str) -> bool:
    if url == prefix.rstrip("/"):
        return True
    return url.startswith(prefix if prefix.endswith("/") else prefix + "/")


def _is_store(value: Any) -> bool:
    return type(value).__module__.startswith("obstore") and hasattr(value, "config")


def _path_in_store(store: Any, root: str, path: str) -> str:
    """``path`` as ``store`` names it; a store for another bucket is refused (it would read
    that bucket's object of the same key: wrong bytes, silently)."""
    config = getattr(store, "config", None) or {}
    bucket = config.get("bucket") or config.get("container_name") or config.get("container")
    wanted = root.split("://", 1)[1]
    if bucket is None or str(bucket) != wanted:
        raise StorageOptionsError(
            f"{root}: the obstore store given in storage_options is for "
            f"{'an unknown bucket' if bucket is None else repr(str(bucket))}, not {wanted!r}"
        )
    prefix = (getattr(store, "prefix", None) or "").strip("/")
    if prefix:
        if not path.startswith(prefix + "/"):
            raise StorageOptionsError(f"{root}: the store given covers {prefix}/, not {path}")
        return path[len(prefix) + 1 :]
    return path


def _normalised(
    root: str, options: Mapping[str, Any], environ: Mapping[str, str]
) -> StorageSettings:
    config: dict[str, Any] = {}
    client: dict[str, Any] = {}
    provider = None
    profile: str | None = None
    instance_metadata = False
    scheme = root.partition("://")[0]
    cloud_option = {"gs": gcs_option, "az": azure_option}.get(scheme)
    aliases = _ALIASES if scheme == "s3" else _COMMON_ALIASES
    for name, value in options.items():
        if name in _IGNORED:
            continue
        mapped = cloud_option(root, name, value) if cloud_option is not None else None
        if mapped is not None:
            client.update(mapped.pop("client_options", {}))
            config.update(mapped)
        elif name == "anon":
            config["skip_signature"] = bool(value)
        elif name == "allow_http":
            client["allow_http"] = bool(value)
        elif name == "use_ssl":
            if not value:
                client["allow_http"] = True
        elif name == "client_options":
            client.update(value)
        elif name == "client_kwargs":
            for inner, inner_value in dict(value).items():
                if inner not in _CLIENT_KWARGS:
                    raise StorageOptionsError(
                        f"{root}: client_kwargs[{inner!r}] is not supported (supported: "
                        f"{', '.join(sorted(_CLIENT_KWARGS))})"
                    )
                config.setdefault(_CLIENT_KWARGS[inner], inner_value)
        elif name == "config_kwargs":
            _config_kwargs(root, dict(value), config, client)
        elif name == "profile":
            profile = str(value)
        elif name == "requester_pays":
            if value:
                config["request_payer"] = True
        elif name == "credential_provider":
            provider = value
        elif name == "instance_metadata":
            instance_metadata = bool(value)
        else:
            config[aliases.get(name, name)] = value
    endpoint = config.get("endpoint") or config.get("base_url")
    if isinstance(endpoint, str) and endpoint.lower().startswith("http://"):
        client.setdefault("allow_http", True)
    if root.startswith("s3://"):
        _s3_credentials(root, config, environ, profile, provider, instance_metadata)
    return StorageSettings(config, client, credential_provider=provider)


def _config_kwargs(
    root: str, values: dict[str, Any], config: dict[str, Any], client: dict[str, Any]
) -> None:
    """botocore ``Config`` arguments that mean something for a read."""
    for name, value in values.items():
        if name == "region_name":
            config.setdefault("region", value)
        elif name == "signature_version":
            if str(value).upper() == "UNSIGNED" or getattr(value, "__name__", "") == "UNSIGNED":
                config["skip_signature"] = True
        elif name == "s3":
            style = dict(value).get("addressing_style")
            if style is not None:
                config["virtual_hosted_style_request"] = style == "virtual"
        elif name == "connect_timeout":
            client["connect_timeout"] = f"{float(value)}s"
        elif name == "read_timeout":
            client["timeout"] = f"{float(value)}s"
        elif name in ("retries", "max_pool_connections", "user_agent_extra", "tcp_keepalive"):
            continue  # our own retries and pools apply
        else:
            raise StorageOptionsError(f"{root}: config_kwargs[{name!r}] is not supported")


def _s3_credentials(
    root: str,
    config: dict[str, Any],
    environ: Mapping[str, str],
    profile: str | None,
    provider: Any,
    instance_metadata: bool,
) -> None:
    """Fill ``config`` with the profile's credentials where boto3 would take them; raise
    `MissingCredentialsError` when there are none to take."""
    if config.get("skip_signature") or provider is not None:
        return
    explicit = any(config.get(key) for key in _CREDENTIAL_KEYS[:2])
    from_environment = profile is None and any(environ.get(n) for n in _ENVIRONMENT_CREDENTIALS)
    if explicit or from_environment:
        return
    name = profile or environ.get("AWS_PROFILE") or environ.get("AWS_DEFAULT_PROFILE") or "default"
    found = _profile(name, environ)
    if found is None and (profile is not None or environ.get("AWS_PROFILE")):
        raise MissingCredentialsError(
            f"{root}: the AWS profile {name!r} is in neither the credentials nor the config file"
        )
    found = found or {}
    region = found.get("region")
    if region and not (
        config.get("region") or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    ):
        config.setdefault("region", region)
    if found.get("endpoint_url") and not config.get("endpoint"):
        config["endpoint"] = found["endpoint_url"]
    if found.get("aws_access_key_id") and found.get("aws_secret_access_key"):
        config["access_key_id"] = found["aws_access_key_id"]
        config["secret_access_key"] = found["aws_secret_access_key"]
        if found.get("aws_session_token"):
            config["session_token"] = found["aws_session_token"]
        return
    if instance_metadata:
        return
    raise MissingCredentialsError(
        f"{root}: no credentials found: give key and secret (or profile) in storage_options, "
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or AWS_PROFILE, or pass anon=True for "
        "a public bucket (on EC2, instance_metadata=True uses the instance's role)"
    )


def _profile(name: str, environ: Mapping[str, str]) -> dict[str, str] | None:
    """The profile's settings from the shared credentials file, then the config file (as
    boto3 merges them: the credentials file's keys win); None when neither has it."""
    home = Path(environ.get("HOME") or Path.home())
    credentials_file = Path(environ.get("AWS_SHARED_CREDENTIALS_FILE") or home / ".aws/credentials")
    config_file = Path(environ.get("AWS_CONFIG_FILE") or home / ".aws/config")
    merged: dict[str, str] = {}
    seen = False
    for path, section in (
        (config_file, "default" if name == "default" else f"profile {name}"),
        (credentials_file, name),
    ):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError) as exc:
            raise StorageOptionsError(
                f"the AWS file {path} cannot be read ({type(exc).__name__})"
            ) from exc
        if parser.has_section(section):
            seen = True
            merged.update({k: v.strip() for k, v in parser.items(section) if v.strip()})
    return merged if seen else None
