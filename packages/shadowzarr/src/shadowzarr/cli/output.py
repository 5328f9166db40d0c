"""What a command prints: text or one JSON document on stdout, messages on stderr.

stdout carries only results, so ``--json`` output (or the ``wrote …`` lines) can be piped into
another program; failures, warnings and progress go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["add_json_option", "emit", "error", "output_folder_ready"]


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print one JSON document on stdout instead of text"
    )


def emit(args: argparse.Namespace, document: Any, lines: Iterable[str]) -> None:
    """``document`` as JSON with ``--json``, else the text ``lines``."""
    if getattr(args, "json", False):
        print(json.dumps(document, indent=2, default=str))
    else:
        for line in lines:
            print(line)


def error(message: str) -> None:
    print(message, file=sys.stderr)


def output_folder_ready(output: str, *, create: bool) -> None:
    """Refuse an output whose parent folder does not exist (a typo in the path should not
    become a new folder tree), unless ``create`` (``--parents``): then make it and say so."""
    parent = Path(output).absolute().parent
    if parent.is_dir():
        return
    if not create:
        raise FileNotFoundError(
            f"the folder {parent} for {output} does not exist (create it, or pass --parents)"
        )
    parent.mkdir(parents=True, exist_ok=True)
    print(f"created folder {parent}", file=sys.stderr)
