"""`sleuth`: the engine's command line, usable without the web app.

Each engine area adds its subcommands through a `register(subparsers)` function in the
modules listed in COMMAND_MODULES, so areas stay independent of one another.
"""

import argparse
import importlib
import os
import sys

from engine.process_env import apply_defaults

apply_defaults()  # before torch loads

COMMAND_MODULES: list[str] = [
    "engine.search.cli",
    "engine.documents.cli",
    "engine.rewards.cli",
    "engine.evaluation.cli",
    "engine.evaluation.compare",
    "engine.training.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sleuth", description="Train small, fast search agents on your own documents."
    )
    parser.add_argument("--version", action="version", version="sleuth 0.1.0")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args) or 0
    except BrokenPipeError:
        # The reader stopped reading (`sleuth search … | head`): not an error of ours. Point
        # stdout at nothing so that Python's own flush at exit does not raise it again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
