"""What a command prints: text or one JSON document on stdout, messages on stderr.

stdout carries only results, so ``--json`` output (or the ``wrote …`` lines) can be piped into
another program; failures, warnings and progress go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["add_json_option", "emit", "error"]


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
