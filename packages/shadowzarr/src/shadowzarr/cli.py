"""The ``shadowzarr`` command (subcommands grow with the project)."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="shadowzarr", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="generate references for an NWB file over loopback HTTP and read them")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from shadowzarr.demo import run_demo

        return run_demo()
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
