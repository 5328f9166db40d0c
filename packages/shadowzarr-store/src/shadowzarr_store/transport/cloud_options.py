"""gcsfs's ``storage_options`` for ``gs://`` and adlfs's for ``az://``, as obstore's keys.

Users of gcsfs pass ``token`` (a service-account or user JSON file, its contents as a dict,
``"anon"``, ``"google_default"``), ``project`` and ``endpoint_url``; users of adlfs pass
``account_name``, ``account_key``, ``sas_token``, ``connection_string``, ``anon`` and the
service principal's ``tenant_id``/``client_id``/``client_secret``. Each becomes the obstore key
that means the same; obstore's own keys pass through. Values are credentials: a message names
an option, never its value.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from shadowzarr_spec import SourceError

__all__ = ["CloudOptionsError", "azure_option", "gcs_option"]

_GCS_IGNORED = frozenset(
    {
        # no bearing on reading an object by range through obstore
        "project",
        "access",
        "consistency",
        "cache_timeout",
        "check_connection",
        "secure_serialize",
        "default_location",
        "block_size",
        "session_kwargs",
    }
)
_GCS_TOKENS_IGNORED = frozenset({"google_default", "cloud"})
"""Tokens meaning "the environment's credentials": obstore's own default chain."""
_SERVICE_ACCOUNT_STRINGS = ("private_key", "private_key_id", "client_email")
_AZURE_IGNORED = frozenset(
    {"blocksize", "location_mode", "assume_container_exists", "socket_timeout"}
)
_AZURE_TIMEOUTS = {
    "timeout": "timeout",
    "read_timeout": "timeout",
    "connection_timeout": "connect_timeout",
}
_CONNECTION_PARTS = {
    "accountname": "account_name",
    "accountkey": "account_key",
    "sharedaccesssignature": "sas_key",
    "blobendpoint": "endpoint",
}


class CloudOptionsError(SourceError, ValueError):
    """A gcsfs or adlfs option that cannot be given to obstore; names the option only."""


def gcs_option(root: str, name: str, value: Any) -> dict[str, Any] | None:
    """obstore's GCS keys for gcsfs's option ``name`` (empty: ignored; ``client_options``:
    the HTTP client's), or None when ``name`` is no gcsfs spelling (the common names then
    apply)."""
    if name in _GCS_IGNORED:
        return {}
    if name == "token":
        return _gcs_token(root, value)
    if name == "endpoint_url":
        return {"base_url": value}
    if name == "requester_pays":
        if value:
            raise CloudOptionsError(f"{root}: requester_pays is not supported for gs:// buckets")
        return {}
    if name == "requests_timeout":
        return {"client_options": {"timeout": f"{float(value)}s"}}
    return None


def azure_option(root: str, name: str, value: Any) -> dict[str, Any] | None:
    """obstore's Azure keys for adlfs's option ``name`` (empty: ignored), or None when
    ``name`` is no adlfs spelling."""
    if name in _AZURE_IGNORED:
        return {}
    if name == "sas_token":
        return {"sas_key": str(value).lstrip("?")}
    if name == "connection_string":
        return _connection_string(root, str(value))
    if name == "account_host":
        return {"endpoint": f"https://{value}"}
    if name in _AZURE_TIMEOUTS:
        return {"client_options": {_AZURE_TIMEOUTS[name]: f"{float(value)}s"}}
    if name == "credential":
        if value is None:
            return {}
        raise CloudOptionsError(
            f"{root}: a credential ({type(value).__name__}) cannot be given to obstore: give "
            "account_key, sas_token, connection_string or tenant_id/client_id/client_secret"
        )
    return None


def _gcs_token(root: str, token: Any) -> dict[str, Any]:
    if isinstance(token, Mapping):
        return {"service_account_key": _service_account_text(root, token)}
    if token is None or token in _GCS_TOKENS_IGNORED:
        return {}
    if token == "anon":
        return {"skip_signature": True}
    if token in ("cache", "browser"):
        raise CloudOptionsError(
            f"{root}: token={token!r} is gcsfs's interactive login: give the path of a JSON "
            "key file, its contents as a dict, or sign in with gcloud (application default "
            "credentials)"
        )
    if isinstance(token, str | os.PathLike):
        path = os.fspath(token)
        key = "application_credentials" if _is_user_credentials(path) else "service_account"
        return {key: path}
    raise CloudOptionsError(
        f"{root}: token of type {type(token).__name__} cannot be given to obstore: give the "
        "path of a JSON key file or its contents as a dict"
    )


def _service_account_text(root: str, token: Mapping[str, Any]) -> str:
    """The key as the JSON text obstore reads, checked first: obstore's decoding error would
    quote a wrongly typed value."""
    if token.get("type") == "authorized_user":
        raise CloudOptionsError(
            f"{root}: obstore reads a user's (authorized_user) credentials only from a file: "
            "give token as the path of that JSON file"
        )
    for field in _SERVICE_ACCOUNT_STRINGS:
        if not isinstance(token.get(field), str):
            raise CloudOptionsError(f"{root}: token[{field!r}] must be a string")
    return json.dumps(dict(token))


def _is_user_credentials(path: str) -> bool:
    """Whether the JSON file at ``path`` holds a user's credentials (``gcloud auth
    application-default login``), which obstore takes as application credentials; anything
    else is left to obstore to read as a service-account key, and to report."""
    try:
        with open(path, encoding="utf-8") as file:
            content = json.load(file)
    except (OSError, ValueError):
        return False
    return isinstance(content, dict) and content.get("type") == "authorized_user"


def _connection_string(root: str, text: str) -> dict[str, Any]:
    """``AccountName=…;AccountKey=…;BlobEndpoint=…`` as obstore's keys; the queue, table and
    file endpoints are not ours to use."""
    parts: dict[str, str] = {}
    for number, segment in enumerate(text.split(";"), start=1):
        if not segment.strip():
            continue
        name, equals, value = segment.partition("=")
        if not equals:
            raise CloudOptionsError(f"{root}: connection_string part {number} has no '='")
        parts[name.strip().lower()] = value.strip()
    found: dict[str, Any] = {}
    for name, value in parts.items():
        if name in _CONNECTION_PARTS:
            found[_CONNECTION_PARTS[name]] = value
        elif name == "usedevelopmentstorage":
            found["use_emulator"] = value.lower() == "true"
        elif name in ("defaultendpointsprotocol", "endpointsuffix") or name.endswith("endpoint"):
            continue
        else:
            raise CloudOptionsError(f"{root}: connection_string part {name!r} is not supported")
    suffix = parts.get("endpointsuffix")
    account = parts.get("accountname")
    if "endpoint" not in found and suffix and account:
        protocol = parts.get("defaultendpointsprotocol") or "https"
        found["endpoint"] = f"{protocol}://{account}.blob.{suffix}"
    if "sas_key" in found:
        found["sas_key"] = found["sas_key"].lstrip("?")
    return found
