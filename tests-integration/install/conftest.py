"""Prints what each closure weighs after the run (for the release notes and the CI log)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .closures import Closure

CLOSURE_REPORTS: list[tuple[Closure, dict[str, Any]]] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not CLOSURE_REPORTS:
        return
    write = terminalreporter.write_line
    terminalreporter.section("closures: locked run-time closure of each distribution and extra")
    write(f"{'target':36} {'packages':>8} {'installed':>10} {'build':>7} {'smoke':>7}  refused")
    for closure, report in CLOSURE_REPORTS:
        refused = ", ".join(report["refused"]) or "-"
        write(
            f"{closure.target.name:36} {closure.packages:>8} "
            f"{closure.installed_bytes / 1e6:>8.1f} MB {closure.build_seconds:>6.1f}s "
            f"{report['seconds']:>6.1f}s  {refused}"
        )
