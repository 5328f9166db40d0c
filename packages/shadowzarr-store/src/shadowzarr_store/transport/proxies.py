"""Which forward proxy a request goes through: one decision for every engine.

Our HTTP/1.1 connections (`http1`), aiohttp and obstore all ask `ProxyConfig.for_url`, so a
URL goes through the same proxy, or directly, whichever client sends it. The settings come
from the ``proxy`` option when given (a URL for every scheme; False or ``""``: none) and else
from the environment as curl reads it: ``http_proxy``, ``https_proxy``, ``all_proxy`` and
``no_proxy``, the lower-case name first, then the upper-case one (``HTTP_PROXY`` is not read
when ``REQUEST_METHOD`` says we run as a CGI script, where a client's ``Proxy:`` header would
set it: "httpoxy"). The environment is read once, when a transport is made.

``no_proxy`` follows curl, with requests' ports: entries separated by commas or spaces; ``*``
alone bypasses every host; a name matches itself and every name under it (``example.com`` and
``.example.com`` both match ``example.com`` and ``a.example.com``); an IP address matches
itself, a CIDR block (``10.0.0.0/8``, ``fd00::/8``) the addresses in it; ``host:port`` only
that port. It applies to an explicit ``proxy`` option too, as curl applies it to ``--proxy``.

A proxy's credentials (``http://user:pass@proxy:3128``) go only to the proxy, as
``Proxy-Authorization: Basic``; the proxy is shown everywhere without them (`Proxy.shown`).
"""

from __future__ import annotations

import base64
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, unquote, urlsplit

from shadowzarr_spec import SourceError

from shadowzarr_store.transport.head_values import has_control

__all__ = ["NoProxy", "Proxy", "ProxyConfig", "ProxyConfigError", "ProxySetting"]

type ProxySetting = str | bool | None
"""The ``proxy`` option: None reads the environment; a URL is the proxy of every request;
False or ``""`` sends every request directly."""


class ProxyConfigError(SourceError, ValueError):
    """A proxy setting that cannot be used (its scheme, its port, a control byte)."""


@dataclass(frozen=True, slots=True)
class Proxy:
    """One forward proxy: where it listens and who we are to it (never shown)."""

    host: str
    port: int
    user: str | None = field(default=None, repr=False)
    password: str = field(default="", repr=False)

    @property
    def shown(self) -> str:
        """The proxy as a message names it: no credentials."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def authorization(self) -> str | None:
        """The ``Proxy-Authorization`` value (Basic), from the URL's user info."""
        if self.user is None:
            return None
        pair = f"{self.user}:{self.password}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")

    @property
    def url_with_credentials(self) -> str:
        """The URL obstore is given (it sends the credentials as Basic itself)."""
        if self.user is None:
            return self.shown
        user, password = quote(self.user, safe=""), quote(self.password, safe="")
        return self.shown.replace("http://", f"http://{user}:{password}@", 1)

    def __repr__(self) -> str:
        return f"Proxy({self.shown})"

    @classmethod
    def parse(cls, url: str, where: str) -> Proxy:
        """A proxy URL (``http://[user:pass@]host[:port]``; no scheme means ``http://``)."""
        text = url.strip()
        if has_control(text):
            raise ProxyConfigError(f"{where}: the proxy URL holds a control byte")
        if "://" not in text:
            text = f"http://{text}"
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError as exc:
            raise ProxyConfigError(f"{where}: not a usable proxy URL ({_hidden(text)})") from exc
        if parts.scheme.lower() != "http":
            raise ProxyConfigError(
                f"{where}: a proxy reached over {parts.scheme}:// is not supported "
                f"({_hidden(text)}); give an http:// proxy (https:// URLs still go through it "
                "in a CONNECT tunnel)"
            )
        host = parts.hostname
        if not host:
            raise ProxyConfigError(f"{where}: the proxy URL names no host ({_hidden(text)})")
        user = None if parts.username is None else unquote(parts.username)
        password = unquote(parts.password or "")
        if has_control(f"{user or ''}:{password}"):
            raise ProxyConfigError(f"{where}: the proxy's credentials hold a control byte")
        return cls(host.lower(), port or 80, user, password)


def _hidden(url: str) -> str:
    """A proxy URL without its user info, for a message."""
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    return f"{scheme}://{authority}{slash}{path}"


@dataclass(frozen=True, slots=True)
class NoProxy:
    """The hosts requests reach directly (``no_proxy``)."""

    everything: bool = False
    names: tuple[tuple[str, int | None], ...] = ()
    networks: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, int | None], ...] = ()
    text: str = ""
    """The list as given (for obstore's ``proxy_excludes``)."""

    @classmethod
    def parse(cls, text: str) -> NoProxy:
        entries = [e for e in text.replace(",", " ").split() if e]
        if entries == ["*"]:
            return cls(everything=True, text=text)
        names: list[tuple[str, int | None]] = []
        networks: list[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, int | None]] = []
        for entry in entries:
            host, port = _split_port(entry.lower())
            try:
                networks.append((ipaddress.ip_network(host.strip("[]"), strict=False), port))
                continue
            except ValueError:
                pass
            host = host.lstrip(".").rstrip(".")
            if host:
                names.append((host, port))
        return cls(False, tuple(names), tuple(networks), text)

    def bypasses(self, host: str, port: int) -> bool:
        """Whether a request to ``host:port`` goes directly."""
        if self.everything:
            return True
        host = host.lower().strip("[]").rstrip(".")
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            address = None
        if address is not None:
            return any(
                address in network and (wanted is None or wanted == port)
                for network, wanted in self.networks
            )
        return any(
            (host == name or host.endswith(f".{name}")) and (wanted is None or wanted == port)
            for name, wanted in self.names
        )


def _split_port(entry: str) -> tuple[str, int | None]:
    """``host:port`` → (host, port); an IPv6 address keeps its colons (``[::1]:80`` has a port)."""
    if entry.startswith("["):
        host, _, rest = entry.partition("]")
        port = rest.removeprefix(":")
        return host + "]", int(port) if port.isdigit() else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        if port.isdigit():
            return host, int(port)
    return entry, None


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    """The proxies of one transport: per scheme of the target, and the hosts reached directly."""

    http: Proxy | None = None
    https: Proxy | None = None
    no_proxy: NoProxy = field(default_factory=NoProxy)

    @classmethod
    def resolve(
        cls, setting: ProxySetting, environ: Mapping[str, str] | None = None
    ) -> ProxyConfig:
        """The configuration for the ``proxy`` option (see the module docstring)."""
        environ = os.environ if environ is None else environ
        no_proxy = NoProxy.parse(_variable(environ, "no_proxy") or "")
        if setting is False or setting == "":
            return cls()
        if isinstance(setting, str):
            proxy = Proxy.parse(setting, "the proxy option")
            return cls(proxy, proxy, no_proxy)
        if setting is not None and setting is not True:
            raise TypeError(f"proxy must be a URL, False or None, not {type(setting).__name__}")
        every = _variable(environ, "all_proxy")
        http = _variable(environ, "http_proxy", cgi_safe=True) or every
        https = _variable(environ, "https_proxy") or every
        return cls(
            Proxy.parse(http, "HTTP_PROXY") if http else None,
            Proxy.parse(https, "HTTPS_PROXY") if https else None,
            no_proxy,
        )

    @property
    def any(self) -> bool:
        return self.http is not None or self.https is not None

    def for_url(self, scheme: str, host: str, port: int | None) -> Proxy | None:
        """The proxy a request to ``scheme://host:port`` goes through (None: directly)."""
        scheme = scheme.lower()
        proxy = self.https if scheme == "https" else self.http if scheme == "http" else None
        if proxy is None:
            return None
        if self.no_proxy.bypasses(host, port or (443 if scheme == "https" else 80)):
            return None
        return proxy


def _variable(environ: Mapping[str, str], name: str, *, cgi_safe: bool = False) -> str | None:
    """``name`` in lower case, else in upper case (curl's order); an empty value is unset."""
    value = environ.get(name)
    if value:
        return value
    if cgi_safe and environ.get("REQUEST_METHOD"):
        return None
    return environ.get(name.upper()) or None
