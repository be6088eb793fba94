"""Console script `prm-lessons`. Each stage module registers its subcommands via `add_cli(subparsers)`."""
from __future__ import annotations

import argparse
import importlib
import sys

# Modules that contribute subcommands (each defines add_cli(subparsers)); order = help order.
CLI_MODULES = ["grading", "metrics"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="prm-lessons", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in CLI_MODULES:
        module = importlib.import_module(f"prm_lessons.{name}")
        module.add_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError) as exc:  # user errors: one clear line, no traceback
        print(f"prm-lessons: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
