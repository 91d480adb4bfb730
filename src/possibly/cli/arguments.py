"""Argument types and argument groups shared by the sub-commands.

The types check each number's range while the command line is parsed, so that a bad value
fails before any file is read or anything is computed, with one line naming the flag and the
accepted range (``argument --hazard: must be a number in (1e-12, 0.25], got '0.3'``).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from possibly.cli.tables import Table, display, read_table

__all__ = ["add_input", "add_robust", "check_finite", "check_robust", "integer", "number",
           "numeric_range", "read_input", "sigma"]

#: ``--header``: detect it by content, or say whether the first row is a header
HEADER = {"auto": None, "yes": True, "no": False}


def _interval(low: float, high: float, low_open: bool, high_open: bool) -> str:
    return f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def number(low: float, high: float, *, low_open: bool = False,
           high_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite float in the interval from ``low`` to ``high``.

    Examples
    --------
    >>> number(0, 1, low_open=True)("0.5")
    0.5
    >>> number(0, 1, low_open=True)("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a number in (0, 1], got '0'
    """
    span = _interval(low, high, low_open, high_open)

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        inside = (math.isfinite(value) and (low < value if low_open else low <= value)
                  and (value < high if high_open else value <= high))
        if not inside:
            raise argparse.ArgumentTypeError(f"must be a number in {span}, got "
                                             f"{display(text)!r}")
        return value

    parse.__name__ = "number"  # argparse names the type in some messages
    return parse


def integer(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer in ``[low, high]``.

    Examples
    --------
    >>> integer(1, 10)("3")
    3
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer in [{low}, {high}], got "
                                             f"{display(text)!r}")
        return value

    parse.__name__ = "integer"
    return parse


#: range accepted for noise scales given on the command line (their squares stay finite)
SCALE = (1e-100, 1e100)
_scale = number(*SCALE)


def sigma(text: str) -> float | str:
    """An argparse type: ``auto`` or a noise scale in :data:`SCALE`."""
    if text == "auto":
        return text
    try:
        return _scale(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be 'auto' or a number in [{SCALE[0]:g}, {SCALE[1]:g}], got "
            f"{display(text)!r}") from None


def add_input(p: argparse.ArgumentParser, *, several: bool = False,
              required: bool = True) -> None:
    """FILE, ``--column`` and ``--time``: how a command reads its table."""
    p.add_argument("file", metavar="FILE", nargs=None if required else "?",
                   help="CSV, TSV or text file (delimiter and header detected; blank cell or "
                        "line = missing), or - for standard input")
    if several:
        # "extend": --column x y and --column x --column y both give [x, y]
        p.add_argument("--column", nargs="+", action="extend", metavar="COLUMN", default=None,
                       help="value column(s), by header name or 0-based index; several "
                            "columns (--column x y, or --column x --column y) are one vector "
                            "observation (give FILE before --column)")
    else:
        p.add_argument("--column", metavar="COLUMN", default=None,
                       help="value column, by header name or 0-based index (needed when the "
                            "file has several columns besides the time column)")
    p.add_argument("--time", metavar="COLUMN", default=None,
                   help="column of time stamps to report results with (default: the one "
                        "column of ISO dates/times, if any; rows are numbered from 0); rows "
                        "not in time order are sorted by it, with a note")
    p.add_argument("--header", choices=list(HEADER), default="auto",
                   help="whether the first row is a header: auto detects it by content (a "
                        "row of text over numbers, or pandas' 0, 1, ... with a note) (auto)")


def read_input(args: argparse.Namespace, columns: Sequence[str] | None, *,
               several: bool = False) -> tuple[Table, list[int], int | None]:
    """The table of ``args.file``, its value columns and time column (or None).

    The rows are put in time order (:meth:`~possibly.cli.tables.Table.in_time_order`); what the
    reader decided for the user (a numeric header, a sort) is printed on standard error as
    ``possibly COMMAND: note: ...``.
    """
    table = read_table(args.file, header=HEADER[args.header])
    idx, t = table.choose(columns, args.time, several=several)
    notes = list(table.notes)
    if t is not None:
        table, sorted_notes = table.in_time_order(t)
        notes.extend(sorted_notes)
    for note in notes:
        print(f"possibly {args.command}: note: {note}", file=sys.stderr)
    return table, idx, t


def add_robust(p: argparse.ArgumentParser) -> None:
    """``--standard`` and ``--tau``, with the same meaning in every command."""
    p.add_argument("--standard", action="store_true",
                   help="the standard (non-robust) version: no discount")
    p.add_argument("--tau", type=number(0, 1, low_open=True), default=None,
                   help="threshold variant of the robust version: discount an observation only "
                        "when its discount would be <= tau, in (0, 1] (off)")


def check_robust(args: argparse.Namespace) -> None:
    """``--standard --tau`` is refused by every command (tau only acts on the robust version)."""
    if getattr(args, "standard", False) and getattr(args, "tau", None) is not None:
        raise ValueError("--tau applies to the robust version only: drop --standard or --tau")


def check_finite(source: str, y: np.ndarray, estimate: np.ndarray, what: str) -> None:
    """Refuse to report a non-finite estimate after the first observation (never silently).

    ``y`` has shape ``(T, ...)``, ``estimate`` ``(T, ...)``; rows before the first observed
    value may hold the prior (any value).
    """
    observed = ~np.isnan(y.reshape(y.shape[0], -1)).all(axis=1)
    if not observed.any():
        return
    first = int(np.argmax(observed))
    bad = ~np.isfinite(estimate[first:].reshape(estimate.shape[0] - first, -1)).all(axis=1)
    if bad.any():
        t = first + int(np.argmax(bad))
        size = float(np.nanmax(np.abs(y)))
        raise ValueError(f"{source}: the {what} became non-finite at row {t} (observations up "
                         f"to {size:.3g} in magnitude): rescale the data, e.g. to units near 1")


@contextlib.contextmanager
def numeric_range(source: str, y: np.ndarray) -> Iterator[None]:
    """Turn an arithmetic failure of the computation on ``y`` into one line asking to rescale.

    Values of extreme magnitude (e.g. an estimated noise scale of 1e-239) can still break a
    computation; the user gets a readable refusal rather than an internal error.
    """
    try:
        yield
    except (ArithmeticError, np.linalg.LinAlgError) as exc:
        finite = y[np.isfinite(y)]
        size = float(np.max(np.abs(finite))) if finite.size else math.nan
        raise ValueError(f"{source}: the computation failed on these numbers (largest "
                         f"magnitude {size:.3g}; {type(exc).__name__}: {exc}): rescale the "
                         "data, e.g. to units near 1") from None
