"""gcsfs's ``storage_options`` for ``gs://`` and adlfs's for ``az://``, checked in the obstore
store they build (its ``config``); building a store contacts no endpoint."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from shadowzarr_spec import SourceError

from shadowzarr_store.transport.cloud_options import CloudOptionsError
from shadowzarr_store.transport.object_store import store_for

if TYPE_CHECKING:
    from pathlib import Path

SECRET = "SECRETVALUE-8c1f"
_KEY = {
    "type": "service_account",
    "client_email": "reader@project.iam.gserviceaccount.com",
    "private_key_id": SECRET,
    "private_key": "",
    "gcs_base_url": "http://127.0.0.1:9",
    "disable_oauth": True,
}


def _config(root: str, options: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = store_for(root, options).config
    return config


def test_gcsfs_token_as_a_key_file(tmp_path: Path) -> None:
    path = tmp_path / "key.json"
    path.write_text(json.dumps(_KEY))
    config = _config(
        "gs://bucket",
        {"token": str(path), "project": "p", "endpoint_url": "https://gcs.example.org"},
    )
    assert config["service_account"] == str(path)
    assert config["base_url"] == "https://gcs.example.org"
    assert config["bucket"] == "bucket"
    assert "project" not in config


def test_gcsfs_token_as_a_user_credentials_file(tmp_path: Path) -> None:
    path = tmp_path / "adc.json"
    user = {"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r"}
    path.write_text(json.dumps(user))
    assert _config("gs://bucket", {"token": path})["application_credentials"] == str(path)


def test_gcsfs_token_as_a_dict_and_anon() -> None:
    config = _config("gs://bucket", {"token": _KEY})
    assert json.loads(config["service_account_key"]) == _KEY
    assert _config("gs://bucket", {"token": "anon"})["skip_signature"] in (True, "true")
    assert "skip_signature" not in _config("gs://bucket", {"token": "google_default"})


def test_adlfs_account_key_sas_and_service_principal() -> None:
    config = _config(
        "az://container",
        {"account_name": "acct", "account_key": "a2V5", "sas_token": "?sv=2024&sig=abc"},
    )
    assert (config["account_name"], config["account_key"]) == ("acct", "a2V5")
    assert config["sas_key"] == "sv=2024&sig=abc"
    assert config["container_name"] == "container"
    principal = {"account_name": "acct", "tenant_id": "t", "client_id": "c", "client_secret": "s"}
    config = _config("az://container", principal)
    assert {k: config[k] for k in principal} == principal
    assert _config("az://container", {"account_name": "acct", "anon": True})["skip_signature"] in (
        True,
        "true",
    )


def test_adlfs_connection_string() -> None:
    config = _config(
        "az://container",
        {
            "connection_string": "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
            "AccountKey=a2V5a2V5aw==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
            "QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;"
        },
    )
    assert config["account_name"] == "devstoreaccount1"
    assert config["account_key"] == "a2V5a2V5aw=="
    assert config["endpoint"] == "http://127.0.0.1:10000/devstoreaccount1"
    config = _config(
        "az://container",
        {
            "connection_string": "AccountName=acct;SharedAccessSignature=sv=1&sig=x;"
            "EndpointSuffix=core.chinacloudapi.cn"
        },
    )
    assert config["sas_key"] == "sv=1&sig=x"
    assert config["endpoint"] == "https://acct.blob.core.chinacloudapi.cn"


@pytest.mark.parametrize(
    ("root", "options", "named"),
    [
        ("gs://bucket", {"projekt": SECRET}, "projekt"),
        ("az://container", {"account_name": "acct", "acount_key": SECRET}, "acount_key"),
        ("az://container", {"connection_string": f"AccountName=a;Foo={SECRET}"}, "foo"),
        ("az://container", {"connection_string": f"AccountName=a;{SECRET}"}, "part 2"),
        ("gs://bucket", {"token": {**_KEY, "client_email": 7}}, "client_email"),
        ("gs://bucket", {"token": "browser"}, "interactive"),
        ("az://container", {"credential": object()}, "credential"),
    ],
)
def test_refused_options_are_named_and_their_values_never_shown(
    root: str, options: dict[str, Any], named: str
) -> None:
    with pytest.raises(SourceError) as raised:
        store_for(root, options)
    said = str(raised.value)
    assert named in said
    assert SECRET not in said
    assert "7" not in said.replace(root, "")


def test_a_key_obstore_cannot_decode_is_not_quoted(tmp_path: Path) -> None:
    """obstore quotes a wrongly typed field's value; the file's values are cut out."""
    path = tmp_path / "key.json"
    path.write_text(json.dumps({**_KEY, "disable_oauth": SECRET}))
    with pytest.raises(SourceError) as raised:
        store_for("gs://bucket", {"token": str(path)})
    assert SECRET not in str(raised.value)
    with pytest.raises(CloudOptionsError, match="private_key"):
        store_for("gs://bucket", {"token": {**_KEY, "private_key": 12345}})
