"""Each distribution and extra works alone: a fresh environment holding exactly its locked
run-time closure imports every public module and runs a small job of its kind (see
`closure_smoke`). The closures are built and run two at a time (each job is mostly imports);
what they weigh is printed at the end of the run."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pytest

from .closures import TARGETS, Closure, Target, build, run_smoke
from .conftest import CLOSURE_REPORTS
from .workspace import distributions

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

type Outcome = tuple[Closure, dict[str, Any]] | BaseException


def _check(target: Target, folder: Path) -> tuple[Closure, dict[str, Any]]:
    closure = build(target, folder / "venv")
    known = distributions()
    modules = [m for member in closure.members for m in known[member].public_modules()]
    if target.package not in closure.members:
        raise AssertionError(f"{target.name}: {target.package} is not in its own closure")
    report = run_smoke(closure, folder / "work", modules)
    if report["imported"] != len(modules):
        raise AssertionError(f"{target.name}: imported {report['imported']} of {len(modules)}")
    return closure, report


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    root = tmp_path_factory.mktemp("closures")

    def run(numbered: tuple[int, Target]) -> Outcome:
        number, target = numbered
        try:
            return _check(target, root / str(number))
        except Exception as exc:  # reported by the target's own test
            return exc

    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        results = dict(
            zip((t.name for t in TARGETS), pool.map(run, enumerate(TARGETS)), strict=True)
        )
    CLOSURE_REPORTS.extend(r for r in results.values() if not isinstance(r, BaseException))
    return results


def test_every_distribution_and_extra_has_a_closure() -> None:
    wanted = {(name, ()) for name in distributions()}
    wanted |= {(name, (extra,)) for name, dist in distributions().items() for extra in dist.extras}
    assert {(t.package, t.extras) for t in TARGETS} == wanted


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_closure_installs_imports_and_runs(target: Target, outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[target.name]
    if isinstance(outcome, BaseException):
        raise outcome
