"""``possibly compile``: the compiled kernels written into numba's cache (the Kalman filters'
loops and the change-point detector's kernels).

For a container image or a machine's set-up: every later process loads the loops instead of
compiling them on its first call (docs: "Numerics", compiling ahead of time). It writes
numba's cache files only, where every later process of this user reads them.
"""

from __future__ import annotations

import argparse

from possibly.cli.arguments import integer
from possibly.filters.precompile import CONSTANT_VELOCITY_SHAPES, MAX_STATES, compile_loops

DESCRIPTION = (
    "Compile into numba's cache the Kalman filters' loops (the filter with its robust start, "
    "the smoother, the learned noise scale, the streaming step) for models of the given "
    "shapes, and the change-point detector's kernels (the default models without and with "
    "cycles, the paper's model: fit, outliers, update, the anomaly calibration, a bank), so "
    "that later processes only load them. Needs numba (pip install possibly[fast]). Writes "
    "numba's cache files only.")


def run(args: argparse.Namespace) -> int:
    shapes = [tuple(s) for s in args.shape] if args.shape else list(CONSTANT_VELOCITY_SHAPES)
    for n, m in shapes:
        if m > n:
            raise ValueError(f"--shape {n} {m}: the observed components (M) must be at most "
                             "the states (N)")
    if args.only == "changepoint" and args.shape:
        raise ValueError("--shape applies to the Kalman filters' loops: drop --only "
                         "changepoint, or --shape")
    from possibly.changepoint.detector import numba_available

    if not numba_available():
        raise ValueError("possibly compile needs numba: pip install 'possibly[fast]'")
    if args.only in (None, "kalman"):
        done = compile_loops(shapes)
        print("compiled the Kalman filters' loops for "
              + ", ".join(f"{n} states and {m} observed" for n, m in done))
    if args.only in (None, "changepoint"):
        from possibly.changepoint import kernel_cache

        print("compiled the change-point detector's kernels for the models "
              + ", ".join(kernel_cache.compile_kernels()))
    return 0


def register(sub) -> None:
    p = sub.add_parser("compile", help="compile the Kalman filters' loops and the change-point "
                       "kernels into numba's cache", description=DESCRIPTION)
    p.add_argument("--only", choices=("kalman", "changepoint"),
                   help="compile only the Kalman filters' loops or only the change-point "
                        "kernels (default: both)")
    p.add_argument("--shape", nargs=2, type=integer(1, MAX_STATES), action="append",
                   metavar=("N", "M"),
                   help=f"a model of N states and M observed components, M <= N <= "
                        f"{MAX_STATES}; repeat for several (default: the constant-velocity "
                        "model of one and of two axes, 2 1 and 4 2)")
    p.set_defaults(func=run)
