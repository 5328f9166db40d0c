"""Files compared in a child process, one after another: a file that crashes the process or
hangs costs itself only (the child is replaced) and is reported as refused whole."""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def _serve(tasks: Any, answers: Any, work: str) -> None:
    from .compare import compare_file

    for index, path in iter(tasks.get, None):
        answers.put(compare_file(Path(path), Path(work) / str(index)).to_json())


class _Worker:
    def __init__(self, work: Path) -> None:
        context = multiprocessing.get_context("spawn")
        self.tasks = context.Queue()
        self.answers = context.Queue()
        self.process = context.Process(
            target=_serve, args=(self.tasks, self.answers, str(work)), daemon=True
        )
        self.process.start()

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        else:
            self.tasks.put(None)
        self.process.join(10)


def compare_all(files: list[Path], work: Path, timeout: float) -> Iterator[dict[str, Any]]:
    """Each file's result (``FileResult.to_json``), in order."""
    worker: _Worker | None = None
    try:
        for index, path in enumerate(files):
            if worker is None:
                worker = _Worker(work)
            worker.tasks.put((index, str(path)))
            answer = _wait(worker, timeout)
            if isinstance(answer, str):
                worker.stop(kill=True)
                worker = None
                answer = _lost(path, answer)
            yield answer
    finally:
        if worker is not None:
            worker.stop()


def _wait(worker: _Worker, timeout: float) -> dict[str, Any] | str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return worker.answers.get(timeout=1)  # type: ignore[no-any-return]
        except queue.Empty:
            if not worker.process.is_alive():
                return f"the comparing process died (exit code {worker.process.exitcode})"
    return f"no answer within {timeout:.0f} s"


def _lost(path: Path, why: str) -> dict[str, Any]:
    return {
        "file": str(path), "h5py_opens": True, "datasets": 0, "unsupported": {},
        "mismatches": [], "refused_whole": why, "h5py_unreadable": [],
        "unrecorded_unreadable": [], "placeholders": 0, "attribute_nodes": 0,
        "attribute_mismatches": [], "statuses": {}, "refused_against_h5py": True, "counts": {},
    }  # fmt: skip
