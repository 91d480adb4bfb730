"""The ``possibly`` command: one sub-command per module of this package.

Each sub-command module exposes ``register(subparsers)``, which adds its parser and sets
``func(args) -> int``. Errors in user input exit with status 2 and one readable line naming
the argument or the file; Ctrl-C exits with status 130 and one line; a closed standard output
(``possibly ... | head``) is not an error. Files are read by :mod:`possibly.cli.tables` (one
reader, one set of conventions: rows numbered from 0, blank = missing) and written by
:mod:`possibly.cli.outputs` (checked first, written atomically).
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import re
import sys

import numpy as np

from possibly.cli.tables import display

__all__ = ["main"]

#: modules providing sub-commands, in the order of ``possibly --help``
SUBCOMMANDS = [
    "possibly.cli.demo_command",
    "possibly.cli.kalman_command",
    "possibly.cli.changepoint_command",
    "possibly.cli.reproduce_command",
    "possibly.cli.many_command",
    "possibly.cli.compile_command",
]


_NUMPY_SCALAR = re.compile(r"np\.(?:float|int|uint|bool_?|complex)\d*\(([^()]*)\)")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit status 2
        self.exit(2, f"{self.prog}: error: {' '.join(display(message).split())}\n")


def build_parser() -> argparse.ArgumentParser:
    from possibly import __version__

    parser = _Parser(prog="possibly",
                     description="Robust Bayesian inference with possibility theory.")
    parser.add_argument("--version", action="version", version=f"possibly {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in SUBCOMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def _message(exc: BaseException) -> str:
    """One readable line: no newlines, no numpy scalar reprs, no undecodable-byte escapes."""
    text = _NUMPY_SCALAR.sub(r"\1", str(exc))
    return " ".join(display(text).split())


def _quiet_stdout() -> None:
    """After a closed pipe (``| head``): send further output to /dev/null, quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    0: success; 1: some series of a ``*-many`` command failed, or an internal error (a bug,
    reported in one line; ``POSSIBLY_DEBUG=1`` shows the traceback); 2: bad input or arguments,
    one line naming the argument or file; 130: interrupted (Ctrl-C).
    """
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (already printed)
        return exc.code if isinstance(exc.code, int) else 2
    except KeyboardInterrupt:
        print("possibly: interrupted", file=sys.stderr)
        return 130
    if args.command is None:
        parser.print_help()
        return 2
    name = f"possibly {args.command}"
    try:
        # numpy's floating-point warnings are not shown: every command checks that what it
        # reports is finite and refuses otherwise, in one line
        with np.errstate(all="ignore"):
            return int(args.func(args) or 0)
    except BrokenPipeError:  # output piped into `head`: not an error, files are written
        _quiet_stdout()
        return 0
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError, ImportError) as exc:
        if os.environ.get("POSSIBLY_DEBUG"):
            raise
        print(f"{name}: error: {_message(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: one line, and the way to see more
        if os.environ.get("POSSIBLY_DEBUG"):
            raise
        print(f"{name}: internal error: {type(exc).__name__}: {_message(exc)} (please report "
              "it; POSSIBLY_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
