"""``possibly changepoint-many`` and ``possibly kalman-many``: many series on a Dask cluster.

Both read a long table (a column naming the series, value columns, rows in time order within each
series, or sorted by ``--time`` with a note): a Parquet file or dataset directory, or a CSV/TSV/text
file (or ``-``, standard input) read by :mod:`possibly.cli.tables` like every command's input. They
run the detector or the filter per series with :mod:`possibly.integrations.scaleout`: by default in
this process for a small table and on a local cluster bound to 127.0.0.1 for a large one, or on a
running scheduler given by ``--scheduler ADDRESS``. With ``--out DIR`` they write one Parquet file
per series under ``DIR/series/`` (Hive partitions ``id=<id>/``) and the tables described in
docs/integrations.md ("Output layout"); without it they print the change points (or the filtered
states) as CSV on stdout. A one-line summary goes to stderr. The exit status is 1 when some series
could not be processed (their error is in the summary), 2 on bad input.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from possibly.cli.arguments import add_robust, check_robust, integer, number
from possibly.cli.changepoint_command import add_model, detector_options
from possibly.cli.kalman_command import add_coverage, add_state_space_model, model_from_data
from possibly.cli.outputs import STDOUT
from possibly.cli.tables import display
from possibly.filters.filter_result import (
    DISCOUNTED_BELOW,
    MOSTLY_DISCOUNTED,
    MostlyDiscountedWarning,
)

__all__ = ["register"]

CHANGEPOINT_DESCRIPTION = (
    "Change points and outliers of many series at once: a long table (Parquet, or CSV/TSV/"
    "text read like every command's input) with a column naming the series and a column of "
    "values, rows in time order within each series. Each series goes through the robust "
    "change-point detector (as 'possibly changepoint' would run it, with the same --model "
    "rules), in this process for a small table, on a local Dask cluster for a large one, or on "
    "--scheduler. Prints the change "
    "points and outliers as CSV (id, index from 0, kind, value), or writes them under --out.")
KALMAN_DESCRIPTION = (
    "Robust Kalman filtering of many tracks at once: a long table (Parquet, or CSV/TSV/text "
    "read like every command's input) with a column naming the track and one position column "
    "per axis, rows in time order within each track. Each track goes through the robust "
    "constant-velocity filter (as 'possibly kalman' would run it), in this process for a small "
    "table, on a local Dask cluster for a large one, or on --scheduler. Prints the filtered "
    "states as CSV (step from 0, means, consistency, discount, id), or writes them under --out.")
#: extensions of the inputs read as text by possibly.cli.tables (others are read as Parquet)
TEXT_SUFFIXES = (".csv", ".tsv", ".txt", ".dat")


def _input(args: argparse.Namespace, value_columns: list[str]):
    """The input for the scale-out: a Parquet path as given, or a text table as a frame."""
    path = Path(args.input)
    if path.is_dir() and not any(f.is_file() for f in path.rglob("*.parquet")):
        raise ValueError(f"input {display(args.input)!r} is a folder without Parquet files "
                         f"(give a Parquet file or dataset folder, or a {'/'.join(TEXT_SUFFIXES)} "
                         "file)")
    if args.input != "-" and path.suffix.lower() not in TEXT_SUFFIXES:
        return args.input
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("reading many series needs pandas and dask: pip install "
                          "'possibly[dask]'") from None
    from possibly.cli.tables import read_table

    table = read_table(args.input)
    for note in table.notes:  # e.g. pandas' header 0, 1, ...: said, never silently dropped
        print(f"possibly {args.command}: note: {note}", file=sys.stderr)
    ids = table.column(table.column_index(args.id, "--id"))
    frame: dict[str, list[str | None] | np.ndarray] = {
        args.id: [None if c == "" else c for c in ids]}
    values = table.numbers(value_columns, "--value")
    for k, c in enumerate(value_columns):
        frame[c] = values[:, k]
    if args.time is None:
        return pd.DataFrame(frame)
    j = table.column_index(args.time, "--time")
    frame[args.time] = [None if c == "" else c for c in table.column(j)]
    return _in_time_order(args, pd.DataFrame(frame), table.time_axis(j).values,
                          list(table.lines))


def _in_time_order(args: argparse.Namespace, frame: Any, keys: np.ndarray | None,
                   lines: list[int]) -> Any:
    """The rows of ``frame`` with each series sorted by its time stamps ``keys`` (numbers or
    dates/times; None for labels, which have no order: kept), stably, with a note on stderr
    when one was out of order. The stamps stay as written in the file."""
    if keys is None:
        return frame
    missing = np.isnat(keys) if keys.dtype.kind == "M" else np.isnan(keys)
    order, moved = [], []
    for key, rows in frame.groupby(args.id, sort=False, dropna=False).indices.items():
        known = rows[~missing[rows]]
        if (keys[known][1:] < keys[known][:-1]).any():
            if known.size < rows.size:
                line = lines[rows[missing[rows]][0]]
                raise ValueError(f"series {key!r} is not in time order (--time "
                                 f"{display(args.time)!r}) and line {line} has no time stamp "
                                 "to sort it by: sort the file by time, or fill in its stamp")
            rows = rows[np.argsort(keys[rows], kind="stable")]
            moved.append(key)
        order.append(rows)
    if not moved:
        return frame
    print(f"possibly {args.command}: note: {len(moved)} series were not in time order (--time "
          f"{display(args.time)}, e.g. {moved[0]!r}): each was sorted by its time stamps (rows "
          "sharing a stamp kept in file order); positions count from 0 in time order",
          file=sys.stderr)
    return frame.iloc[np.concatenate(order)].reset_index(drop=True)


def _cluster_args(args: argparse.Namespace) -> dict:
    check_robust(args)
    if args.out == STDOUT:  # standard output: the tables are printed, as without --out
        args.out = None
    if args.workers is not None and args.scheduler is not None:
        raise ValueError("--workers sizes the local cluster; it cannot be combined with "
                         "--scheduler")
    if args.out is not None and args.input != "-":  # a text input is read before --out is
        src, dst = Path(args.input).resolve(), Path(args.out).resolve()
        if src == dst or dst in src.parents or src in dst.parents:
            raise ValueError(f"--out {display(args.out)!r} holds the input or lies inside it: "
                             "choose an output directory apart from the input")
    if args.time is not None and args.time in (args.id, *args.value):
        raise ValueError(f"--time {display(args.time)!r} is also the --id or a --value column")
    return {"scheduler": args.scheduler, "n_workers": args.workers, "out": args.out,
            "overwrite": args.overwrite, "progress": not args.no_progress,
            "connect_timeout": args.connect_timeout}


def _report(kind: str, res, seconds: float, extra: str) -> int:
    n = len(res.summary)
    where = f"; wrote {res.out}" if res.out is not None else ""
    failed = res.n_failed
    print(f"{n} {kind} in {seconds:.1f} s{extra}{where}"
          + (f"; {failed} failed (see the summary's 'error' column)" if failed else ""),
          file=sys.stderr)
    if failed:
        first = res.summary[res.summary["error"].notna()].iloc[0]
        print(f"first failure: {first['id']!r}: {first['error']}", file=sys.stderr)
    return 1 if failed else 0


def run_changepoints(args: argparse.Namespace) -> int:
    from possibly.integrations.scaleout import changepoints_many

    t0 = time.perf_counter()
    cluster = _cluster_args(args)
    options = detector_options(args)  # the model as 'possibly changepoint' chooses it
    data = _input(args, [args.value])
    # --time: the events table (printed, or DIR/events.parquet) has the stamps after 'index'
    res = changepoints_many(data, args.id, args.value, **cluster, hazard=args.hazard,
                            robust=not args.standard, tau=args.tau, time_column=args.time,
                            **options)
    seconds = time.perf_counter() - t0
    if res.out is None:
        res.events.to_csv(sys.stdout, index=False)
    ok = res.summary[res.summary["error"].isna()]
    extra = (f", {int(ok['n_points'].sum())} points: {int(ok['n_changepoints'].sum())} change "
             f"points, {int(ok['n_outliers'].sum())} outliers")
    return _report("series", res, seconds, extra)


def run_kalman(args: argparse.Namespace) -> int:
    from possibly.filters.state_space import constant_velocity
    from possibly.integrations.scaleout import kalman_many

    cols = args.value
    if args.accel_sd is not None and args.obs_sd is not None:
        model: Any = constant_velocity(dt=args.dt, accel_sd=args.accel_sd,
                                              obs_sd=args.obs_sd, ndim=len(cols))
    else:  # the noise scales not given are set from each track's data
        model = functools.partial(model_from_data, dt=args.dt, accel_sd=args.accel_sd,
                                  obs_sd=args.obs_sd)
    if len(cols) == 1:
        names = ["position", "velocity"]
    else:
        names = [f"{q}_{c}" for c in cols for q in ("position", "velocity")]
    t0 = time.perf_counter()
    cluster = _cluster_args(args)
    data = _input(args, cols)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MostlyDiscountedWarning)  # reported below, in one line
        res = kalman_many(data, args.id, cols, model, robust=not args.standard,
                          tau=args.tau, coverage=args.coverage, state_names=names,
                          time_column=args.time, **cluster)
    seconds = time.perf_counter() - t0
    if res.out is None and res.states is not None:
        res.states.to_csv(sys.stdout, index=False)
    ok = res.summary[res.summary["error"].isna()]
    extra = (f", {int(ok['n_steps'].sum())} steps, {int(ok['n_discounted'].sum())} "
             f"discounted below 0.1")
    status = _report("tracks", res, seconds, extra)
    mostly = int((ok["discounted_fraction"] > MOSTLY_DISCOUNTED).sum())
    if mostly:
        print(f"possibly kalman-many: warning: {mostly} track(s) had more than half their "
              f"observations discounted below {DISCOUNTED_BELOW:g} (summary column "
              "discounted_fraction): the model does not fit them; give --obs-sd and "
              "--accel-sd in the data's units, or leave them out to set them per track from "
              "the data", file=sys.stderr)
    return status


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", metavar="INPUT",
                   help="Parquet file or dataset directory, or a .csv/.tsv/.txt/.dat file (or "
                        "- for standard input), one row per observation")
    p.add_argument("--id", required=True, metavar="COLUMN", help="column naming the series")
    p.add_argument("--time", default=None, metavar="COLUMN",
                   help="column of time stamps: the results (printed, or the files under "
                        "--out) get a 'time' column next to their 0-based position in the "
                        "series")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address of a running Dask scheduler (tcp://host:port); 'synchronous': "
                        "this process only; default: this process for a table of fewer than "
                        "2 million rows, else a local cluster on 127.0.0.1")
    p.add_argument("--workers", type=integer(1, 1024), default=None, metavar="N",
                   help="start a local cluster of N worker processes, whatever the size")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write DIR/series/id=<id>/part-0.parquet per series (a Hive "
                        "partitioned dataset) and DIR/summary.parquet (default, or -: print "
                        "CSV on stdout)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the results of a previous run in --out (the files listed in "
                        "its DIR/.possibly-manifest.json; nothing else is deleted)")
    p.add_argument("--connect-timeout", type=number(0, 3600, low_open=True), default=10.0,
                   metavar="S", help="seconds to wait for --scheduler, in (0, 3600] (10)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (one is shown on a terminal when tqdm is installed)")
    add_robust(p)


def register(sub) -> None:
    p = sub.add_parser("changepoint-many", help="change points of many series (Dask)",
                       description=CHANGEPOINT_DESCRIPTION)
    _common(p)
    p.add_argument("--value", required=True, metavar="COLUMN", help="column of observations")
    add_model(p, "noise scale within a segment (auto: estimated per series)")
    p.set_defaults(func=run_changepoints)

    p = sub.add_parser("kalman-many", help="robust Kalman filter of many tracks (Dask)",
                       description=KALMAN_DESCRIPTION)
    _common(p)
    p.add_argument("--value", required=True, nargs="+", metavar="COLUMN",
                   help="observed position column(s), one per axis")
    add_state_space_model(p)
    add_coverage(p)
    p.set_defaults(func=run_kalman)
