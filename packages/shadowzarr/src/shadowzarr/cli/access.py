"""The command line's access options: headers bound to URL prefixes, allowed URL prefixes and
object-store settings, the same ones ``open_rfs`` and the generators take."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shadowzarr_store.transport import TransportOptions

__all__ = ["access_kwargs", "add_access_arguments", "transport_options"]


def add_access_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--header",
        nargs=2,
        action="append",
        default=[],
        metavar=("PREFIX", "HEADER"),
        help="send 'Name: value' with requests under the URL PREFIX only (repeatable)",
    )
    parser.add_argument(
        "--allowed-url",
        action="append",
        default=None,
        metavar="PREFIX",
        help="only request URLs under PREFIX (repeatable; others are refused before any request)",
    )
    parser.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="object-store setting, e.g. anon=true, region=eu-west-1, endpoint=http://… "
        "(repeatable; credentials are better left in the environment)",
    )


def access_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """``headers``, ``allowed_urls`` and ``storage_options`` as the library takes them."""
    headers: dict[str, dict[str, str]] = {}
    for prefix, header in args.header:
        name, colon, value = header.partition(":")
        if not colon or not name.strip():
            raise ValueError(f"--header {prefix} takes 'Name: value', not {header[:40]!r}")
        headers.setdefault(prefix, {})[name.strip()] = value.strip()
    storage: dict[str, Any] = {}
    for item in args.storage_option:
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise ValueError(f"--storage-option takes KEY=VALUE, not {key!r}")
        storage[key] = _value(value)
    return {
        "headers": headers or None,
        "allowed_urls": args.allowed_url,
        "storage_options": storage or None,
    }


def transport_options(args: argparse.Namespace) -> TransportOptions:
    from shadowzarr_store.transport import TransportOptions

    return TransportOptions(**access_kwargs(args))


def _value(text: str) -> Any:
    """``true``/``false``/numbers as JSON, anything else as the string itself."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, bool | int | float) else text
