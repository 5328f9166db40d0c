"""User-supplied HTTP headers, each bound to one origin (and optionally a path prefix on it).

A header such as ``Authorization`` is a credential: it goes only to requests whose scheme, host
and port equal those of its URL prefix and whose path lies under the prefix's path. A redirect
is a new request, so a redirect to another host, port or scheme (or out of the path) carries no
header. Values never appear in a repr, an error message or anything the store writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from shadowzarr_store.transport.head_values import has_control, is_header_name
from shadowzarr_store.transport.locations import DEFAULT_PORTS, normalise_path, under

__all__ = ["HeaderRule", "HeaderRules"]

_DEFAULT_PORTS = DEFAULT_PORTS
_RESERVED = frozenset(
    {"range", "if-match", "host", "content-length", "transfer-encoding", "connection"}
)
"""Headers the store sets itself or that change how a response is framed."""


@dataclass(frozen=True, slots=True)
class HeaderRule:
    """Headers for requests to ``scheme://host:port`` whose path starts with ``path``."""

    scheme: str
    host: str
    port: int
    path: str
    """A prefix of whole path segments: ``/api`` covers ``/api`` and ``/api/x``, not ``/apix``."""
    headers: tuple[tuple[str, str], ...] = field(repr=False)

    def covers(self, scheme: str, host: str, port: int, path: str) -> bool:
        return (scheme, host, port) == (self.scheme, self.host, self.port) and under(
            path, self.path
        )

    @property
    def prefix(self) -> str:
        """The URL prefix, for messages (never the values)."""
        default = _DEFAULT_PORTS[self.scheme] == self.port
        where = self.host if default else f"{self.host}:{self.port}"
        return f"{self.scheme}://{where}{self.path}"


@dataclass(frozen=True, slots=True)
class HeaderRules:
    """The rules of one store; `for_url` picks the most specific one covering a URL."""

    rules: tuple[HeaderRule, ...] = ()

    @classmethod
    def parse(cls, headers: Mapping[str, Mapping[str, str]] | HeaderRules | None) -> HeaderRules:
        """Validate ``{"https://host[:port][/path]": {"Name": "value"}}``.

        Raises ValueError or TypeError naming the prefix and header, never the value.
        """
        if headers is None:
            return cls()
        if isinstance(headers, HeaderRules):
            return headers
        if not isinstance(headers, Mapping):
            raise TypeError("headers must map URL prefixes to {name: value} mappings")
        rules = [_rule(prefix, values) for prefix, values in headers.items()]
        seen: set[tuple[str, str, int, str]] = set()
        for rule in rules:
            place = (rule.scheme, rule.host, rule.port, rule.path.rstrip("/"))
            if place in seen:
                raise ValueError(f"headers: two entries for {rule.prefix!r}")
            seen.add(place)
        rules.sort(key=lambda rule: len(rule.path.rstrip("/")), reverse=True)
        return cls(tuple(rules))

    def for_url(self, url: str) -> dict[str, str]:
        """The headers to send with a request to ``url`` (empty when no rule covers it)."""
        if not self.rules:
            return {}
        place = _place(url)
        if place is None:
            return {}
        for rule in self.rules:
            if rule.covers(*place):
                return dict(rule.headers)
        return {}

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{rule.prefix!r}: [{', '.join(name for name, _ in rule.headers)}]"
            for rule in self.rules
        )
        return f"HeaderRules({{{shown}}})"


def _rule(prefix: object, values: object) -> HeaderRule:
    if not isinstance(prefix, str):
        raise TypeError(f"headers: keys must be URL prefixes, not {type(prefix).__name__}")
    parts = urlsplit(prefix)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(
            f"headers: {prefix!r} is not an http(s) URL prefix with a host "
            "(write 'https://host[:port][/path]')"
        )
    if parts.username is not None or parts.query or parts.fragment:
        raise ValueError(f"headers: {prefix!r} may hold no user name, query or fragment")
    try:
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError as exc:
        raise ValueError(f"headers: {prefix!r} has an invalid port") from exc
    if not isinstance(values, Mapping):
        raise TypeError(f"headers for {prefix!r} must be a {{name: value}} mapping")
    pairs: list[tuple[str, str]] = []
    for name, value in values.items():
        if not isinstance(name, str) or not is_header_name(name):
            raise ValueError(f"headers for {prefix!r}: {str(name)[:40]!r} is not a header name")
        if name.lower() in _RESERVED:
            raise ValueError(f"headers for {prefix!r}: {name!r} is set by the store itself")
        if not isinstance(value, str):
            raise TypeError(f"headers for {prefix!r}: the value of {name!r} must be a string")
        if has_control(value):
            raise ValueError(
                f"headers for {prefix!r}: the value of {name!r} holds a control byte "
                "(a line break, a tab, NUL or DEL)"
            )
        pairs.append((name, value))
    path = normalise_path(parts.path) or "/"
    return HeaderRule(scheme, parts.hostname.lower(), port, path, tuple(pairs))


def _place(url: str) -> tuple[str, str, int, str] | None:
    """``(scheme, host, port, path)`` of an http(s) URL, the path without dot segments."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            return None
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError:
        return None
    return scheme, parts.hostname.lower(), port, normalise_path(parts.path)
