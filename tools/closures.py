"""Build the locked run-time closure of every distribution and extra in a fresh environment, run
its smoke job, and print what each weighs (the table of the release notes).

    uv run python tools/closures.py                 # every target
    uv run python tools/closures.py shadowzarr-store 'shadowzarr[nwb]'

The same environments and jobs as ``tests-integration/install/test_closures.py``, one at a time,
in a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests-integration"))

from install.closures import TARGETS, build, run_smoke
from install.workspace import distributions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help="target names, e.g. shadowzarr[nwb]")
    args = parser.parse_args()
    chosen = [t for t in TARGETS if not args.targets or t.name in args.targets]
    unknown = set(args.targets) - {t.name for t in TARGETS}
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; known: {[t.name for t in TARGETS]}")
    known = distributions()
    print(f"{'target':28} {'packages':>8} {'installed':>10} {'build':>7} {'smoke':>7}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="shadowzarr-closures-") as scratch:
        for number, target in enumerate(chosen):
            folder = Path(scratch) / str(number)
            closure = build(target, folder / "venv")
            modules = [m for member in closure.members for m in known[member].public_modules()]
            report = run_smoke(closure, folder / "work", modules)
            print(
                f"{target.name:28} {closure.packages:>8} {closure.installed_bytes / 1e6:>7.1f} MB"
                f" {closure.build_seconds:>6.1f}s {report['seconds']:>6.1f}s",
                flush=True,
            )
    print(f"{len(chosen)} closures in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
