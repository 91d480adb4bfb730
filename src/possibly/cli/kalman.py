"""``possibly kalman``: robust Kalman filtering of a column of position measurements.

Reads a CSV file or a plain column of numbers (an optional header line; empty cells, ``nan``
or ``NA`` are missing observations, filled by prediction) and writes, per time step, the
filtered (or smoothed) position and velocity with their standard deviations, and the
consistency and discount of each observation.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys

import numpy as np

from possibly.kalman import KalmanFilter
from possibly.models import constant_velocity

_MISSING = {"", "nan", "na", "n/a", "null", "none"}
_COLUMNS = ("t", "observation", "position", "velocity", "position_sd", "velocity_sd",
            "consistency", "discount")


def _cell(text: str, line: int, path: str) -> float | None:
    """The number in a cell, NaN if missing, None if not a number."""
    s = text.strip()
    if s.lower() in _MISSING:
        return math.nan
    try:
        value = float(s)
    except ValueError:
        return None
    if math.isinf(value):
        raise ValueError(f"{path}, line {line}: infinite value {s!r} (use an empty cell or "
                         "nan for a missing observation)")
    return value


def read_observations(path: str, column: str | None = None) -> np.ndarray:
    """Read one column of observations from a CSV or plain text file (NaN = missing).

    Raises ValueError with the file, line and cell for malformed input.
    """
    with open(path, newline="", encoding="utf-8") as fh:
        text = fh.read()
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise ValueError(f"{path} is empty: expected a column of observations")
    rows = list(csv.reader(lines))
    header = None
    first = [_cell(c, 1, path) for c in rows[0]]
    if rows[0] and all(v is None for v in first):
        header = [c.strip() for c in rows[0]]
        rows = rows[1:]
        start = 2
    else:
        start = 1
    if not rows:
        raise ValueError(f"{path} has a header but no observations")
    width = len(header) if header is not None else max(len(rows[0]), 1)
    if column is None:
        if width != 1:
            names = ", ".join(header) if header else f"{width} unnamed columns"
            raise ValueError(f"{path} has {width} columns ({names}); choose one with --column")
        index = 0
    elif header is not None and column in header:
        index = header.index(column)
    else:
        try:
            index = int(column)
        except ValueError:
            raise ValueError(f"--column {column!r} is neither a column name of {path} "
                             f"({', '.join(header) if header else 'no header'}) nor an "
                             "index") from None
        if not 0 <= index < width:
            raise ValueError(f"--column must be in [0, {width - 1}] for {path}, got {index}")
    values = []
    for offset, row in enumerate(rows):
        line = start + offset
        if not row:  # an empty line of a plain column: missing
            if width != 1:
                raise ValueError(f"{path}, line {line}: empty line, expected {width} cells")
            values.append(math.nan)
            continue
        if len(row) != width:
            raise ValueError(f"{path}, line {line}: expected {width} cell(s), got {len(row)}")
        value = _cell(row[index], line, path)
        if value is None:
            raise ValueError(f"{path}, line {line}: non-numeric cell {row[index].strip()!r}")
        values.append(value)
    return np.array(values, dtype=float)


def _format(x: float) -> str:
    return "nan" if math.isnan(x) else ("inf" if math.isinf(x) else f"{x:.10g}")


def run(args: argparse.Namespace) -> int:
    if args.model != "constant-velocity":  # argparse's choices already guard this
        raise ValueError(f"--model must be constant-velocity, got {args.model!r}")
    if args.standard and args.tau is not None:
        raise ValueError("--tau only applies to the robust filter (drop --standard)")
    for flag, value in (("--dt", args.dt), ("--accel-sd", args.accel_sd),
                        ("--obs-sd", args.obs_sd), ("--dim", args.dim)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ValueError(f"{flag} must be a finite number > 0, got {value:g}")
    if args.tau is not None and not 0 < args.tau <= 1:
        raise ValueError(f"--tau must be in (0, 1], got {args.tau:g}")
    ys = read_observations(args.file, args.column)
    model = constant_velocity(dt=args.dt, accel_sd=args.accel_sd, obs_sd=args.obs_sd)
    kf = KalmanFilter(*model, robust=not args.standard, tau=args.tau, dim=args.dim)
    if args.smooth:
        res = kf.smooth(ys)
        mean, cov, fr = res.mean, res.covariance, res.filtered
    else:
        fr = kf.filter(ys)
        mean, cov = fr.mean, fr.covariance
    sd = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1))
    table = np.column_stack([np.arange(1, ys.size + 1), ys, mean, sd, fr.consistency,
                             fr.discount])
    out = open(args.out, "w", newline="", encoding="utf-8") if args.out else sys.stdout
    try:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(_COLUMNS)
        for row in table:
            writer.writerow([str(int(row[0]))] + [_format(x) for x in row[1:]])
    finally:
        if args.out:
            out.close()
    if args.plot:
        from possibly.plotting.kalman import plot_filtered_series

        kind = "standard" if args.standard else "robust"
        plot_filtered_series(ys, mean[:, 0], fr.discount, args.plot,
                             title=f"{kind} Kalman {'smoother' if args.smooth else 'filter'}: "
                                   f"{args.file}")
    if args.out:
        missing = int(np.isnan(ys).sum())
        low = int(np.sum(fr.discount < 1e-3))
        print(f"{ys.size} time steps ({missing} missing); {low} observation(s) discounted "
              f"below 1e-3; wrote {args.out}" + (f" and {args.plot}" if args.plot else ""))
    return 0


def register(sub) -> None:
    p = sub.add_parser("kalman", help="robust Kalman filter of a column of measurements",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("file", metavar="FILE",
                   help="CSV or plain column of observations (empty/nan = missing)")
    p.add_argument("--model", choices=["constant-velocity"], default="constant-velocity",
                   help="state-space model (constant-velocity: position observed)")
    p.add_argument("--dt", type=float, default=1.0, help="time step (1)")
    p.add_argument("--accel-sd", type=float, default=0.05,
                   help="acceleration noise standard deviation (0.05)")
    p.add_argument("--obs-sd", type=float, default=1.0,
                   help="measurement noise standard deviation (1)")
    p.add_argument("--standard", action="store_true",
                   help="standard Kalman filter (no discount)")
    p.add_argument("--tau", type=float, default=None,
                   help="threshold: keep observations with discount > tau whole (off)")
    p.add_argument("--dim", type=float, default=None,
                   help="effective dimension of the discount c^(1/dim) (state dimension, 2)")
    p.add_argument("--smooth", action="store_true",
                   help="write smoothed instead of filtered states")
    p.add_argument("--column", default=None,
                   help="column name or 0-based index, for files with several columns")
    p.add_argument("--out", metavar="CSV", default=None, help="output CSV (default: stdout)")
    p.add_argument("--plot", metavar="PNG", default=None, help="also write a plot")
    p.set_defaults(func=run)
