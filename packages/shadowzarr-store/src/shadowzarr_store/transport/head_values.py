"""The one check of what goes into a request head, whichever client writes it.

Every value a request head carries may come from a reference file (a source's ETag, a URL or
a template's expansion), from a server (a redirect's Location, a DANDI answer) or from the
user (header rules, a token in the environment). A CR or LF in any of them would end a header
line early, so that the server reads lines, or whole requests, that the reference file wrote
(header injection, request smuggling). `check_request` refuses such a request before a byte of
it is sent: both our HTTP/1.1 head builder (`shadowzarr_store.transport.http1`) and the aiohttp
path call it. `escaped` shows such a value in a message without its control bytes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from shadowzarr_store.transport.errors import UnsafeRequestError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "check_connect",
    "check_request",
    "escaped",
    "has_control",
    "is_header_name",
    "refuse_control",
]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
"""Bytes no header value may hold: the C0 controls (CR, LF, NUL, tab ...) and DEL."""
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""A header name (RFC 9110 ``token``)."""
_TARGET = re.compile(r"(?:http://[\x21-\x2e\x30-\x7e]+)?/[\x21-\x7e]*")
"""A request target in origin form, or in absolute form (``http://host/path``, to a forward
proxy): visible ASCII, no whitespace (yarl percent-encodes the rest)."""
_HOST = re.compile(r"[\x21-\x7e]+")
_SHOWN_VALUES = frozenset({"if-match", "range"})
"""Headers whose values a message may show (the user's headers may be credentials)."""


def check_request(target: str, host: str, headers: Mapping[str, str], shown: str) -> None:
    """Refuse (`UnsafeRequestError`) a request whose target, ``Host`` or headers would not stay
    on their own lines of the head: a target with whitespace or a control byte, a header name
    that is not a token, a value with a byte below 0x20 or DEL."""
    if _TARGET.fullmatch(target) is None:
        raise UnsafeRequestError(
            f"{shown}: the request target {escaped(target)} holds whitespace or a control "
            "byte; refused before sending"
        )
    if _HOST.fullmatch(host) is None:
        raise UnsafeRequestError(f"{shown}: the host {escaped(host)} is not a usable Host value")
    _check_headers(headers, shown)


def check_connect(authority: str, headers: Mapping[str, str], shown: str) -> None:
    """`check_request` for a ``CONNECT host:port`` head to a proxy (its target is the
    authority, its headers the ``Host`` and ``Proxy-Authorization``)."""
    if _HOST.fullmatch(authority) is None:
        raise UnsafeRequestError(
            f"{shown}: the tunnel's authority {escaped(authority)} is not usable; refused"
        )
    _check_headers(headers, shown)


def _check_headers(headers: Mapping[str, str], shown: str) -> None:
    for name, value in headers.items():
        if _TOKEN.fullmatch(name) is None:
            raise UnsafeRequestError(
                f"{shown}: {escaped(name)} is not a header name; refused before sending"
            )
        found = _CONTROL.search(value)
        if found is not None:
            what = escaped(value) if name.lower() in _SHOWN_VALUES else "its value"
            raise UnsafeRequestError(
                f"{shown}: the {name} header's value holds the control byte "
                f"{ord(found[0]):#04x} ({what}); refused before sending"
            )


def has_control(value: str) -> bool:
    """Whether ``value`` holds a byte below 0x20 or DEL (no header value may)."""
    return _CONTROL.search(value) is not None


def is_header_name(name: str) -> bool:
    """Whether ``name`` is a header name (an RFC 9110 token)."""
    return _TOKEN.fullmatch(name) is not None


def refuse_control(value: str, what: str, shown: str) -> None:
    """`UnsafeRequestError` when ``value`` (``what``, shown escaped) holds a control byte."""
    if _CONTROL.search(value) is not None:
        raise UnsafeRequestError(f"{shown}: {what} {escaped(value)} holds a control byte; refused")


def escaped(value: str, limit: int = 120) -> str:
    """``value`` quoted with its control bytes escaped (``repr``), cut at ``limit`` characters:
    a value from a reference file or a server, shown in a message without breaking its line."""
    shown = repr(value[:limit])
    return shown if len(value) <= limit else f"{shown}..."
