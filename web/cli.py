"""The ``kclab`` command line: ``kclab <command> [options]``.

Each command lives in its own module under ``web/commands/`` and exposes ``register(subparsers)``;
add a command by writing such a module and naming it in ``COMMAND_MODULES``. Every module is
imported to build ``--help``, so keep heavy imports (Flask, kazoo, pyspark) inside the command's
function rather than at module top.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = ("web.commands.zk", "web.commands.run", "web.commands.serve", "web.commands.stats",
                   "web.commands.lessons", "web.commands.check")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kclab", description="Kafka Controller Lab: Kafka's ZooKeeper-mode controller, live.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command and return its exit code (the console script passes it to ``sys.exit``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
