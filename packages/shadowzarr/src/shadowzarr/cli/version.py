"""``shadowzarr --version``: the umbrella's version and that of each sub-package installed.

Bug reports need the version of every piece; the sub-packages are released separately, so the
umbrella's number alone says little.
"""

from __future__ import annotations

import argparse
import importlib.metadata
from typing import Any

from shadowzarr._lazy import EXTRAS

__all__ = ["VersionAction", "versions_text"]


def versions_text() -> str:
    lines = [f"shadowzarr {_version('shadowzarr')}"]
    for module, extra in EXTRAS.items():
        distribution = module.replace("_", "-")
        version = _version(distribution)
        if version is None:
            hint = f"pip install 'shadowzarr[{extra}]'" if extra else f"pip install {distribution}"
            lines.append(f"  {distribution} not installed ({hint})")
        else:
            lines.append(f"  {distribution} {version}")
    return "\n".join(lines)


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


class VersionAction(argparse.Action):
    """Prints `versions_text` and exits, looking the versions up only when asked."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any) -> None:
        print(versions_text())
        parser.exit()
