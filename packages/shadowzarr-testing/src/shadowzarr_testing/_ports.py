"""Free loopback ports for servers that cannot report the port they bound."""

from __future__ import annotations

import socket

__all__ = ["free_port"]


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago.

    Another process may take it before the caller binds it, so callers retry on failure.
    Servers that can bind port 0 and report the port (our aiohttp proxy) should do that instead.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
