"""A pool of fuzzing workers, each a child process: crashes and hangs are seen, not suffered.

Each worker runs cases one at a time (`fuzz.worker`). A worker that dies mid-case is a crash
(its signal recorded) and one that does not answer within the timeout is a hang (it is killed);
either way a new worker takes its place. `Tally` adds up the results per class of cases.
"""

from __future__ import annotations

import json
import queue
import select
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["COLUMNS", "MEMORY_BUDGET", "Pool", "Tally", "run_sequential"]

WORKER = Path(__file__).with_name("worker.py")
MEMORY_BUDGET = 256 << 20
"""Most Python heap one case may use (its chunks are capped at 32 MiB)."""
COLUMNS = (
    "cases",
    "crashes",
    "hangs",
    "untyped",
    "wrong/filled",
    "bad cache rows",
    "leaks",
    "over memory",
    "others refused",
    "injected requests",
)


@dataclass
class Tally:
    """Counts per class of cases, and the first few examples of each failure."""

    rows: dict[str, dict[str, int]] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, cls: str, case: dict[str, Any], result: dict[str, Any]) -> None:
        row = self.rows.setdefault(cls, dict.fromkeys(COLUMNS, 0))
        row["cases"] += 1
        label = f"{cls} #{case['id']} {case.get('name', '')} {case.get('kinds', '')}".strip()
        for column, items in (
            ("crashes", result.get("crash")),
            ("hangs", result.get("hang")),
            ("untyped", result.get("untyped")),
            ("wrong/filled", result.get("wrong")),
            ("bad cache rows", result.get("bad_cache_rows")),
            ("leaks", (result.get("leaks") or []) + (result.get("noise") or [])),
            ("over memory", result.get("over_memory")),
            ("others refused", result.get("collateral")),
            ("injected requests", result.get("injected")),
        ):
            if not items:
                continue
            row[column] += len(items) if isinstance(items, list) else int(items)
            examples = self.examples.setdefault(column, [])
            if len(examples) < 12:
                detail = items[0] if isinstance(items, list) else items
                examples.append(f"{label}: {detail}")

    def add_result(self, cls: str, case: dict[str, Any], result: dict[str, Any]) -> None:
        if result.get("peak", 0) > MEMORY_BUDGET:
            result["over_memory"] = [f"peak {result['peak']} bytes"]
        self.add(cls, case, result)

    def failures(self) -> int:
        return sum(
            row[column] for row in self.rows.values() for column in COLUMNS if column != "cases"
        )

    def table(self) -> str:
        width = max([len("class"), *map(len, self.rows)])
        header = " | ".join([f"{'class':<{width}}", *COLUMNS])
        lines = [header, "-" * len(header)]
        for cls, row in self.rows.items():
            cells = [f"{row[c]:>{len(c)}}" for c in COLUMNS]
            lines.append(" | ".join([f"{cls:<{width}}", *cells]))
        total = {c: sum(r[c] for r in self.rows.values()) for c in COLUMNS}
        lines.append(
            " | ".join([f"{'total':<{width}}", *[f"{total[c]:>{len(c)}}" for c in COLUMNS]])
        )
        return "\n".join(lines)


class _Worker:
    def __init__(self, log: Path) -> None:
        self._log = log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
        )

    def run(self, case: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps(case) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            return self._crashed(case)
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            self.process.kill()
            self.process.wait()
            return {"id": case["id"], "hang": [f"no answer within {timeout:.0f} s"]}
        line = self.process.stdout.readline()
        if not line:
            return self._crashed(case)
        return json.loads(line)  # type: ignore[no-any-return]

    def _crashed(self, case: dict[str, Any]) -> dict[str, Any]:
        code = self.process.wait()
        return {"id": case["id"], "crash": [f"worker died with exit status {code}"]}

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        if self.alive:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def run_sequential(
    cases: Iterable[tuple[str, dict[str, Any], Any]], timeout: float, log: Path
) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """One worker, one case at a time, ``prepare()`` called just before each (for cases that
    share a server whose faults or files the case sets)."""
    worker = _Worker(log)
    try:
        for cls, case, prepare in cases:
            if not worker.alive:
                worker.close()
                worker = _Worker(log)
            prepare()
            yield cls, case, worker.run(case, case.get("timeout", timeout))
    finally:
        worker.close()


class Pool:
    """``workers`` child processes running cases with a per-case ``timeout``."""

    def __init__(self, workers: int, timeout: float, log: Path) -> None:
        self._workers = max(1, workers)
        self._timeout = timeout
        self._log = log

    def run(
        self, cases: Iterable[dict[str, Any]]
    ) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """Each case with its result, in completion order."""
        todo: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=4 * self._workers)
        done: queue.Queue[tuple[dict[str, Any], dict[str, Any]] | None] = queue.Queue()

        def serve() -> None:
            worker = _Worker(self._log)
            try:
                while (case := todo.get()) is not None:
                    if not worker.alive:
                        worker.close()
                        worker = _Worker(self._log)
                    done.put((case, worker.run(case, case.get("timeout", self._timeout))))
            finally:
                worker.close()
                done.put(None)

        threads = [threading.Thread(target=serve, daemon=True) for _ in range(self._workers)]
        for thread in threads:
            thread.start()

        def feed() -> None:
            for case in cases:
                todo.put(case)
            for _ in threads:
                todo.put(None)

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        finished = 0
        while finished < len(threads):
            item = done.get()
            if item is None:
                finished += 1
                continue
            yield item
