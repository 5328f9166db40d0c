"""The virtual chunk container a new repository declares for each place its chunks are in,
and the credential that authorizes it while the repository is written.

Object-store containers (``s3://``, ``gs://``, ``az://``) are configured from the same
``storage_options`` the store reads with (either spelling; see
`shadowzarr_store.transport.storage_settings`): region, endpoint and path style go into the
container (the repository keeps them), keys and tokens only into the credential (it does not).
"""

from __future__ import annotations

from typing import Any

from shadowzarr_store.transport import StorageSettings, split_object_url, storage_settings

from shadowzarr_icechunk.errors import MissingVirtualChunkContainerError
from shadowzarr_icechunk.locations import file_url_path

__all__ = ["container_for"]


def container_for(prefix: str, storage_options: Any = None) -> tuple[Any, Any]:
    """(Icechunk store config, credential) for the container prefix ``prefix``."""
    import icechunk

    folder = file_url_path(prefix)
    if folder is not None:
        return icechunk.local_filesystem_store(folder), icechunk.credentials.LocalFileSystemAccess
    if prefix.startswith(("http://", "https://")):
        # Headers are not given to Icechunk: it would write them into the repository's config.
        return icechunk.http_store(), icechunk.credentials.HttpAccess
    scheme = prefix.partition("://")[0].lower()
    if scheme not in ("s3", "gs", "az"):
        raise MissingVirtualChunkContainerError([prefix])
    root = split_object_url(prefix.rstrip("/"))[0]
    settings = storage_settings(root, storage_options)
    if settings.store is not None:
        config = {str(k): v for k, v in dict(getattr(settings.store, "config", {}) or {}).items()}
        settings = StorageSettings(config=config)
    if scheme == "s3":
        return _s3(settings)
    if scheme == "gs":
        return _gcs(settings)
    return _azure(settings)


def _s3(settings: StorageSettings) -> tuple[Any, Any]:
    import icechunk

    config, client = settings.config, settings.client
    endpoint = _text(config.get("endpoint"))
    anonymous = _flag(config.get("skip_signature"))
    store = icechunk.s3_store(
        region=_text(config.get("region")),
        endpoint_url=endpoint,
        allow_http=_flag(client.get("allow_http")),
        anonymous=anonymous,
        s3_compatible=endpoint is not None,
        # an endpoint of our own (MinIO, moto, Ceph) answers by path unless told otherwise
        force_path_style=endpoint is not None
        and not _flag(config.get("virtual_hosted_style_request")),
        requester_pays=_flag(config.get("request_payer")),
    )
    if anonymous:
        return store, icechunk.s3_credentials(anonymous=True)
    key, secret = _text(config.get("access_key_id")), _text(config.get("secret_access_key"))
    if key and secret:
        token = _text(config.get("session_token") or config.get("token"))
        return store, icechunk.s3_credentials(
            access_key_id=key, secret_access_key=secret, session_token=token
        )
    return store, icechunk.s3_credentials(from_env=True)


def _gcs(settings: StorageSettings) -> tuple[Any, Any]:
    import icechunk

    config = settings.config
    anonymous = _flag(config.get("skip_signature"))
    account_file = _first(config, ("service_account", "google_service_account"))
    account_key = _first(config, ("service_account_key", "google_service_account_key"))
    application = _first(config, ("application_credentials",))
    token = _first(config, ("token",))
    store = icechunk.gcs_store()
    if anonymous:
        return store, icechunk.gcs_credentials(anonymous=True)
    if account_file or account_key or application or token:
        return store, icechunk.gcs_credentials(
            service_account_file=account_file,
            service_account_key=account_key,
            application_credentials=application,
            bearer_token=token,
        )
    return store, icechunk.gcs_credentials(from_env=True)


def _azure(settings: StorageSettings) -> tuple[Any, Any]:
    import icechunk
    from icechunk.storage import azure_store  # not re-exported at the top

    config = settings.config
    account = _first(config, ("account_name", "azure_storage_account_name"))
    if account is None:
        raise MissingVirtualChunkContainerError(
            ["az:// (storage_options name no account_name for the container)"]
        )
    anonymous = _flag(config.get("skip_signature"))
    access_key = _first(config, ("account_key", "access_key", "azure_storage_account_key"))
    sas_token = _first(config, ("sas_token", "sas_key", "azure_storage_sas_key"))
    # Only settings that are not secrets go into the container (the repository keeps it).
    public = {k: str(config[k]) for k in _AZURE_PUBLIC if config.get(k) is not None}
    store = azure_store(account=account, config=public or None)
    if anonymous:
        return store, icechunk.azure_credentials(anonymous=True)
    if access_key or sas_token:
        return store, icechunk.azure_credentials(access_key=access_key, sas_token=sas_token)
    return store, icechunk.azure_credentials(from_env=True)


_AZURE_PUBLIC = ("endpoint", "use_emulator", "use_fabric_endpoint")


def _first(config: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = _text(config.get(key))
        if value is not None:
            return value
    return None


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)
