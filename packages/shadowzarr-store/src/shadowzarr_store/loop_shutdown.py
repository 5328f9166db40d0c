"""At exit, the event loops stores ran on are shut down gracefully, as ``asyncio.run`` would.

When one chunk read fails, zarr-python raises at once and leaves the reads it started for the
other chunks running on its event loop (thousands of tasks for a large selection). If the
program then ends, zarr stops and closes that loop with them pending, and Python prints a
"Task was destroyed but it is pending!" or "Event loop is closed" traceback for each: dozens to
thousands of lines after the one error that matters. So before zarr's own exit hook runs, every
task still pending on a loop a store used is cancelled and awaited (what ``asyncio.run`` does
with the tasks left when its main coroutine ends); the error the program printed stays the
only output. Likewise ``Group.members()`` raises the first member's error and abandons the
others' tasks: when they fail too, asyncio reports "Task exception was never retrieved" for
each when it is collected. A loop a store reads on drops that report for the project's own
errors (the caller already has one); every other report goes to the loop's handler as before.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import weakref
from typing import Any

from shadowzarr_spec import ShadowzarrError

__all__ = ["note_loop", "shut_down_loops"]

_LOOPS: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
_WAIT_SECONDS = 5.0


def note_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Remember a loop a store reads on, to shut it down gracefully at exit (and keep it from
    reporting our errors in the tasks zarr abandoned)."""
    if loop in _LOOPS:
        return
    _LOOPS.add(loop)
    previous = loop.get_exception_handler()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        abandoned = "never retrieved" in str(context.get("message", ""))
        if abandoned and isinstance(context.get("exception"), ShadowzarrError):
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


def shut_down_loops() -> None:
    """Cancel and await the pending tasks of every remembered loop still running elsewhere."""
    for loop in list(_LOOPS):
        if loop.is_closed() or not loop.is_running() or _is_current(loop):
            continue
        with contextlib.suppress(RuntimeError, TimeoutError, asyncio.CancelledError):
            asyncio.run_coroutine_threadsafe(_cancel_pending(), loop).result(_WAIT_SECONDS * 2)


async def _cancel_pending() -> None:
    """Cancel every other task until none is left (cancelled tasks may start new ones)."""
    current = asyncio.current_task()
    deadline = asyncio.get_running_loop().time() + _WAIT_SECONDS
    while True:
        pending = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        left = deadline - asyncio.get_running_loop().time()
        if not pending or left <= 0:
            return
        for task in pending:
            task.cancel()
        done, _ = await asyncio.wait(pending, timeout=left)
        for task in done:
            if not task.cancelled():
                task.exception()  # retrieved, so none is reported as "never retrieved"


def _is_current(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


# Registered after zarr is imported (this module is imported by the store, which imports zarr
# first), so it runs before zarr's own exit hook stops and closes its loop.
atexit.register(shut_down_loops)
