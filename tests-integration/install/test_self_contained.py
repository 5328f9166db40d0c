"""The suite needs nothing outside the clone: no test file names a folder of the machine the
tests were written on (``../shared/data``, ``/work/...``, a home directory) or climbs above the
repository with ``Path(__file__).parents[n]``.

Paths of the operating system itself (``/tmp``, ``/proc``, ``/etc/passwd`` as hostile input)
are fine; what a test reads must be in the repository or written by the test.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from .workspace import REPO

MACHINE_ROOTS = ("work", "home", "root", "Users", "mnt", "media", "srv", "scratch", "shared")
_ROOTS = "|".join(MACHINE_ROOTS)
OUTSIDE = re.compile(rf"(^|[^\w.])(\.\./)+shared\b|shared/data/|^/({_ROOTS})(/|$)")
SCANNED = ("packages/*/tests", "packages/shadowzarr-testing/src", "tests-integration", "tools")
SCRIPT_SUFFIXES = (".mjs", ".js", ".ts", ".sh")


@dataclass(frozen=True, slots=True)
class Finding:
    path: Path
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


BUILT = frozenset({"node_modules", "dist", "test-output"})
"""Folders of js/ that hold installed or generated files (js/.gitignore), not test code."""


def scanned_files() -> list[Path]:
    found = []
    for pattern in SCANNED:
        for folder in REPO.glob(pattern):
            found += [p for p in folder.rglob("*.py") if "node_modules" not in p.parts]
    found += [
        p
        for p in (REPO / "js").rglob("*")
        if p.suffix in SCRIPT_SUFFIXES and not BUILT.intersection(p.parts) and p.is_file()
    ]
    found += [REPO / "tools" / "test", REPO / ".ci" / "run"]
    return sorted(set(found))


def findings(path: Path, root: Path = REPO) -> list[Finding]:
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return [
            Finding(path, number, line.strip())
            for number, line in enumerate(text.splitlines(), 1)
            if any(OUTSIDE.search(word.strip("'\"`()[],;")) for word in line.split())
        ]
    depth = len(path.relative_to(root).parts)  # parents[depth - 1] is the repository
    found = []
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if path.name == Path(__file__).name:
                continue  # this file's own patterns
            if OUTSIDE.search(node.value):
                found.append(Finding(path, node.lineno, f"names {node.value!r}"))
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "parents"
            and "__file__" in ast.unparse(node.value)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)
            and node.slice.value >= depth
        ):
            found.append(Finding(path, node.lineno, f"{ast.unparse(node)} is above the clone"))
    return found


def test_the_scan_covers_the_test_code() -> None:
    files = {p.relative_to(REPO).as_posix() for p in scanned_files()}
    assert "packages/shadowzarr-neo/tests/neo_recordings/_common.py" in files
    assert "tests-integration/install/closure_smoke.py" in files
    assert "js/test/run.mjs" in files
    assert len(files) > 100


@pytest.mark.parametrize("path", scanned_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_nothing_outside_the_clone(path: Path) -> None:
    assert [str(f) for f in findings(path)] == []


def test_what_used_to_be_there_is_found(tmp_path: Path) -> None:
    """The lookup this suite had before its recordings moved into the repository."""
    folder = tmp_path / "packages" / "shadowzarr-neo" / "tests" / "recordings"
    folder.mkdir(parents=True)
    sample = folder / "_common.py"
    sample.write_text(
        "from pathlib import Path\n"
        "A = Path(__file__).resolve().parents[5] / 'shared' / 'data' / 'ephys'\n"
        "B = '/work/shared/data/ephys'\n"
        "C = '../shared/data/ephys'\n"
        "D = Path(__file__).resolve().parents[4] / 'packages'\n"  # the repository: fine
        "E = '/etc/passwd'\n"  # the operating system's: fine
    )
    assert sorted(f.line for f in findings(sample, root=tmp_path)) == [2, 3, 4]
