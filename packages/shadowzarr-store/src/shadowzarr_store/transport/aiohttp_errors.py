"""aiohttp's failures in our words: a proxy's refusal named by the proxy (never its
credentials), and any URL in an error's text redacted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowzarr_spec import SourceError

from shadowzarr_store.transport.errors import ProxyError, TransientError
from shadowzarr_store.transport.locations import redact

if TYPE_CHECKING:
    import aiohttp

    from shadowzarr_store.transport.proxies import Proxy

__all__ = ["proxy_error", "said"]


def proxy_error(exc: aiohttp.ClientError, proxy: Proxy | None, shown: str) -> SourceError:
    """aiohttp's failure at the proxy as ours: naming the proxy, never its credentials."""
    import aiohttp  # only once aiohttp has failed, so it is imported already

    named = proxy.shown if proxy is not None else "the proxy"
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        if exc.status == 407:
            return ProxyError(f"{shown}: the proxy {named} asks for credentials (407)")
        if exc.status >= 500:
            return TransientError(
                f"{shown}: the proxy {named} could not reach the server (HTTP {exc.status})"
            )
        return ProxyError(f"{shown}: the proxy {named} refused the request (HTTP {exc.status})")
    cause = exc.os_error if isinstance(exc, aiohttp.ClientConnectorError) else exc
    return ProxyError(f"{shown}: cannot connect to the proxy {named}: {type(cause).__name__}")


def said(exc: BaseException) -> str:
    """What an aiohttp error says, with any URL in it redacted."""
    return " ".join(redact(word) if "://" in word else word for word in str(exc).split())
