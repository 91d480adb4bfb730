"""``possibly reproduce``: every figure and number of the paper, with a report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from possibly.cli.outputs import STDOUT
from possibly.cli.tables import display
from possibly.experiments.reproduce import STUDIES, reproduce


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if args.out == STDOUT or (out.exists() and not out.is_dir()):
        raise ValueError(f"--out {display(args.out)!r} is not a directory: reproduce writes "
                         "figures and a report into a directory")
    path = reproduce(args.study, args.out, repeats=args.repeats, seed=args.seed, quick=args.quick,
                     jobs=args.jobs, progress=sys.stderr.isatty() and not args.no_progress,
                     use_cache=not args.no_cache)
    print(f"report written to {path}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="reproduce the paper's figures and numbers",
                       description="Run the paper's studies, write PNG figures and "
                                   "DIR/report.md with the paper's values next to ours.")
    p.add_argument("study", choices=[*STUDIES, "all"], help="which study (or all)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--repeats", type=int, default=None,
                   help="number of repeats (default: the paper's)")
    p.add_argument("--seed", type=int, default=0, help="random seed (0)")
    p.add_argument("--quick", action="store_true", help="reduced run, seconds per study")
    p.add_argument("--jobs", type=int, default=1, help="studies run in parallel (1)")
    p.add_argument("--no-cache", action="store_true", help="recompute even if cached")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run)
