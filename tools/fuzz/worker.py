"""One fuzzing worker: a child process that opens and reads one case at a time.

Reads one JSON case a line from stdin and answers one JSON result a line on stdout. A crash
(a signal) kills only this process, and the parent sees it; a hang is the parent's timeout.
Within a case: every exception must be a ``ShadowzarrError`` (or zarr's ``KeyError`` for a
node that is absent), arrays the mutation did not touch must read exactly their values (and
every array of a ``must_read`` case: faults that retries overcome; a case's
``allowed_errors`` are the only errors it may raise, as `SourceChangedError` for a replaced
source), no
planted secret may appear in an error, Python's heap may not grow past the case's budget
(``tracemalloc``; the address space is capped too), nothing may be printed to stderr about
pending tasks or unretrieved errors, and no task may be left running on zarr's loop.
"""

from __future__ import annotations

import asyncio
import faulthandler
import json
import os
import resource
import sys
import tempfile
import time
import traceback
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

ADDRESS_SPACE = 8 << 30
"""The worker's address-space cap: far above any case's budget, it turns a runaway allocation
into a MemoryError (an untyped error) instead of the machine's memory."""
NOISE = (
    "Task was destroyed",
    "never retrieved",
    "Event loop is closed",
    "Exception ignored",
    "Fatal Python error",
    "did not finish cleanly",
)
STORE_OPTIONS: dict[str, Any] = {
    "max_chunk_bytes": 32 << 20,
    "retries": 1,
    "timeout": 2.0,
    "backoff": 0.01,
    "max_backoff": 0.05,
}
READ_WHOLE_BELOW = 64 << 20
READ_WHOLE_CHUNKS = 4096
SECRET = "FUZZSECRET"


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    faulthandler.enable()
    warnings.simplefilter("ignore")
    import zarr  # noqa: F401  (import everything before the first case is timed)
    from shadowzarr_store import open_rfs  # noqa: F401

    for line in sys.stdin:
        case = json.loads(line)
        result = _run_isolated(case)
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


def _run_isolated(case: dict[str, Any]) -> dict[str, Any]:
    """Run a case with fd 2 sent to a file of its own, so its stray output is its own."""
    result: dict[str, Any] = {"id": case["id"], "untyped": [], "wrong": [], "collateral": []}
    result.update(leaks=[], noise=[], typed=0, read=0, peak=0)
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        started = time.perf_counter()
        tracemalloc.start()
        try:
            _run(case, result)
        except BaseException as exc:  # the harness itself must not die with the case
            result["untyped"].append(f"harness: {type(exc).__name__}: {exc}"[:300])
        finally:
            result["peak"] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            leftover = _pending_tasks()
            if leftover:
                result["leaks"].append(f"{leftover} tasks still pending on zarr's loop")
            result["seconds"] = time.perf_counter() - started
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        text = capture.read().decode("utf-8", "replace")
    result["noise"] = [n for n in NOISE if n in text]
    if SECRET in text:
        result["leaks"].append("secret in stderr")
    return result


def _run(case: dict[str, Any], result: dict[str, Any]) -> None:
    from shadowzarr_spec import ShadowzarrError
    from shadowzarr_store import open_rfs

    expected = _expected(case)
    touched = None if case.get("touched") is None else set(case["touched"])

    def outcome(name: str, call: Any) -> Any:
        try:
            return call()
        except ShadowzarrError as exc:
            result["typed"] += 1
            if SECRET in str(exc) or SECRET in repr(exc.args):
                result["leaks"].append(f"{name}: secret in {type(exc).__name__}")
            untouched = touched is not None and name not in touched
            allowed = case.get("allowed_errors")
            if name in expected and (
                untouched
                or case.get("must_read")
                or (allowed is not None and type(exc).__name__ not in allowed)
            ):
                result["collateral"].append(f"{name}: {type(exc).__name__}: {exc}"[:300])
            return None
        except KeyError as exc:
            # zarr's answer for a node that is not there: a mutation may delete one
            if touched is not None and name in expected and name not in touched:
                result["collateral"].append(f"{name}: absent ({exc})"[:300])
            return None
        except Exception as exc:
            result["untyped"].append(_describe(name, exc))
            return None

    options = _options(case)
    for _ in range(case.get("passes", 1)):
        root = outcome("<open>", lambda: open_rfs(case["path"], **options))
        if root is None:
            break
        for action in case.get("actions", ()):
            outcome(f"<{action}>", lambda action=action, root=root: _action(action, root, case))
        _read_arrays(case, root, expected, touched, result, outcome)
        replace = case.get("replace_between_reads")
        if replace is not None:  # the same store, which has read the old file, reads again
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
            from fuzz.replace import replace_source

            replace_source(replace["path"], replace["how"])
            _read_arrays(case, root, expected, touched, result, outcome)
    if case.get("cache_files"):
        result["bad_cache_rows"] = _bad_cache_rows(case)


def _options(case: dict[str, Any]) -> dict[str, Any]:
    """The store options of a case: the defaults, the case's own, its cache."""
    from shadowzarr_store import LocalCache

    options = {**STORE_OPTIONS, **case.get("options", {})}
    if "local_cache" in options:
        options["local_cache"] = LocalCache(options["local_cache"])
    return options


def _read_arrays(
    case: dict[str, Any],
    root: Any,
    expected: dict[str, Any],
    touched: set[str] | None,
    result: dict[str, Any],
    outcome: Any,
) -> None:
    for name in case.get("arrays", ()):
        node = outcome(name, lambda name=name: root[name])
        if node is None or not hasattr(node, "shape"):
            continue
        values = outcome(name, lambda node=node: _bounded_read(node))
        if values is None:
            continue
        result["read"] += 1
        untouched = name in expected and touched is not None and name not in touched
        strict = case.get("strict_values") and name in expected
        if (untouched or strict) and not _equal(values, expected[name]):
            result["wrong"].append(f"{name}: read values differ from the source's")
        want = case.get("expect", {}).get(name)
        if want == "typed":
            result["wrong"].append(f"{name}: read although it must be refused")
        elif want == "equal" and name in expected and not _equal(values, expected[name]):
            result["wrong"].append(f"{name}: read values differ from the source's")


def _bad_cache_rows(case: dict[str, Any]) -> list[str]:
    """Cache rows whose bytes are not the source's bytes at their range."""
    import sqlite3

    bad: list[str] = []
    database = Path(case["options"]["local_cache"]) / "chunks.sqlite3"
    if not database.exists():
        return bad
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT source, start, stop, data FROM chunks").fetchall()
    for source, start, stop, data in rows:
        url = source.split("\x00", 1)[0]
        for prefix, local in case["cache_files"].items():
            if url.startswith(prefix):
                truth = Path(local, url[len(prefix) :].lstrip("/")).read_bytes()
                if bytes(data) != (truth if stop == -1 else truth[start:stop]):
                    bad.append(f"{url} [{start}, {stop}) holds other bytes than the source")
        if SECRET.encode() in bytes(data) or SECRET in source:
            bad.append(f"{url}: a secret in the cache")
    return bad


def _action(action: str, root: Any, case: dict[str, Any]) -> None:
    from zarr.core.sync import sync

    if action == "members":
        list(root.members(max_depth=None))
    elif action == "list":

        async def collect() -> int:
            count = 0
            async for _ in root.store.list():
                count += 1
                if count >= 100_000:
                    break
            return count

        sync(collect())
    elif action == "segfault":  # the harness's own check that a crash is seen as one
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
    elif action == "sleep":  # ... and a hang as one
        time.sleep(3600)
    elif action == "materialize":
        from shadowzarr_store import materialize

        with tempfile.TemporaryDirectory() as destination:
            materialize(case["path"], Path(destination) / "copy", progress=False, **STORE_OPTIONS)


def _bounded_read(node: Any) -> Any:
    """The whole array when small and of few chunks, else its first element (zarr allocates
    what is asked for, and reads every chunk of it)."""
    import math

    if node.nbytes <= READ_WHOLE_BELOW and math.prod(node.cdata_shape) <= READ_WHOLE_CHUNKS:
        return node[...]
    return node[(0,) * node.ndim]


def _equal(values: Any, expected: Any) -> bool:
    import numpy as np

    actual = np.asarray(values)
    if expected.dtype == object or actual.dtype.kind in "OTU":
        return [str(v) for v in actual.ravel()] == [str(v) for v in expected.ravel()]
    return (
        actual.shape == expected.shape
        and actual.dtype == expected.dtype
        and actual.tobytes() == expected.tobytes()
    )


def _expected(case: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    values: dict[str, Any] = {}
    if case.get("expected"):
        with np.load(case["expected"]) as stored:
            values.update({name: stored[name] for name in stored.files})
    if case.get("strings"):
        values["strings"] = np.array(json.loads(Path(case["strings"]).read_text()), dtype=object)
    return values


def _describe(name: str, exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "shadowzarr" in f.filename] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    return f"{name}: {type(exc).__name__} at {where}: {exc}"[:400]


def _pending_tasks() -> int:
    """Tasks left on zarr's loop after the case, given 30 seconds to finish (after an error zarr
    leaves the reads of the other chunks running; they end by themselves)."""
    from zarr.core import sync as zarr_sync

    loop = zarr_sync.loop[0]
    if loop is None or loop.is_closed():
        return 0

    async def count() -> int:
        current = asyncio.current_task()
        return len([t for t in asyncio.all_tasks() if t is not current and not t.done()])

    deadline = time.monotonic() + 30
    while True:
        left = asyncio.run_coroutine_threadsafe(count(), loop).result(10)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


if __name__ == "__main__":
    main()
