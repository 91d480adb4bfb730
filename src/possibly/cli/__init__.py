"""The ``possibly`` command: one sub-command per module of this package.

Each sub-command module exposes ``register(subparsers)``, which adds its parser and sets
``func(args) -> int``. Errors in user input exit with status 2 and one readable line.
"""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["main"]

#: modules providing sub-commands, in the order of ``possibly --help``
SUBCOMMANDS = [
    "possibly.cli.demo",
    "possibly.cli.kalman",
    "possibly.cli.changepoint",
    "possibly.cli.reproduce",
    "possibly.cli.scaleout",
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit status 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from possibly import __version__

    parser = _Parser(prog="possibly",
                     description="Robust Bayesian inference with possibility theory.")
    parser.add_argument("--version", action="version", version=f"possibly {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in SUBCOMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # output piped into `head`: not an error
        sys.stderr.close()
        return 0
    except (ValueError, TypeError, OSError, ImportError) as exc:
        print(f"possibly {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
