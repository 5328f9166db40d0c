"""Each distribution and extra works alone: a fresh environment holding exactly its locked
run-time closure imports every public module and runs a small job of its kind (see
`closure_smoke`). The closures' sizes are printed at the end of the run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .closures import TARGETS, Target, build, run_smoke
from .conftest import CLOSURE_REPORTS
from .workspace import distributions

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow


def test_every_distribution_and_extra_has_a_closure() -> None:
    wanted = {(name, ()) for name in distributions()}
    wanted |= {(name, (extra,)) for name, dist in distributions().items() for extra in dist.extras}
    assert {(t.package, t.extras) for t in TARGETS} == wanted


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_closure_installs_imports_and_runs(target: Target, tmp_path: Path) -> None:
    closure = build(target, tmp_path / "venv")
    known = distributions()
    modules = [m for member in closure.members for m in known[member].public_modules()]
    assert target.package in closure.members
    report = run_smoke(closure, tmp_path / "work", modules)
    assert report["imported"] == len(modules)
    CLOSURE_REPORTS.append((closure, report))
