"""The transport's own event-loop thread, where every connection of the process lives.

Our HTTP/1.1 connections and aiohttp's sessions are asyncio transports, bound to the loop that
opened them. Requests come from several loops: the synchronous face (`run_blocking`, used by
generators, ``open_rfs``'s reference load, the command line, catalog workers), zarr's loop
thread (its synchronous API and dask's threads go through it), and any loop a user runs zarr's
async API on. So that a process has one pool per origin, not one per loop, every HTTP request
runs here: a coroutine awaited on another loop is sent to this one
(`asyncio.run_coroutine_threadsafe`) and awaited from there through `asyncio.wrap_future`, so
cancelling the caller cancels the request here too (its connection is then closed or returned
by the pool as usual). The thread is started at first use, is a daemon, and is forgotten in a
forked child (which starts its own, with its own connections).
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine

__all__ = ["at_home", "home_loop", "home_running", "is_home_thread"]

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def home_loop() -> asyncio.AbstractEventLoop:
    """The transport's loop (its thread started at first use)."""
    global _loop, _thread
    loop = _loop
    if loop is not None and not loop.is_closed():
        return loop
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(
                target=_loop.run_forever, name="shadowzarr-transport", daemon=True
            )
            _thread.start()
        return _loop


def home_running() -> bool:
    """Whether the transport's loop was started (in this process) and still runs."""
    loop = _loop
    return loop is not None and loop.is_running()


def is_home_thread() -> bool:
    return _thread is not None and threading.current_thread() is _thread


def at_home[**P, T](method: Callable[P, Awaitable[T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """Decorate an async method whose requests use the process's connections: it runs on the
    transport's loop whichever loop awaits it. The method's coroutine is made on that loop, not
    the caller's."""

    @functools.wraps(method)
    async def hopped(*args: P.args, **kwargs: P.kwargs) -> T:
        loop = home_loop()
        if asyncio.get_running_loop() is loop:
            return await method(*args, **kwargs)

        async def there() -> T:
            return await method(*args, **kwargs)

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(there(), loop))

    return hopped


def _forget() -> None:
    global _loop, _lock, _thread
    _lock = threading.Lock()
    _loop = _thread = None


os.register_at_fork(after_in_child=_forget)
