"""``possibly changepoint-many`` and ``possibly kalman-many``: many series on a Dask cluster.

Both read a long Parquet table (a column naming the series, value columns, rows in time order
within each series) and run the detector or the filter per series with
:mod:`possibly.scaleout`: on a local cluster bound to 127.0.0.1 by default, or on a running
scheduler given by ``--scheduler ADDRESS``. With ``--out DIR`` they write one Parquet file per
series under ``DIR/series/`` and the tables described in :mod:`possibly.scaleout`; without it
they print the change points (or the filtered states) as CSV on stdout. A one-line summary goes
to stderr. The exit status is 1 when some series could not be processed (their error is in the
summary), 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["register"]


def _sigma(text: str) -> float | str:
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or a number, got {text!r}") from None


def _cluster_args(args: argparse.Namespace) -> dict:
    if args.workers is not None:
        if args.scheduler is not None:
            raise ValueError("--workers sizes the local cluster; it cannot be combined with "
                             "--scheduler")
        if args.workers < 1:
            raise ValueError(f"--workers must be >= 1, got {args.workers}")
    return {"scheduler": args.scheduler, "n_workers": args.workers, "out": args.out,
            "overwrite": args.overwrite, "progress": True,
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
    from possibly.scaleout import changepoints_many

    t0 = time.perf_counter()
    res = changepoints_many(args.input, args.id, args.value, **_cluster_args(args),
                            sigma=args.sigma, hazard=args.hazard, forgetting=args.forgetting,
                            robust=not args.standard, tau=args.tau)
    seconds = time.perf_counter() - t0
    if res.out is None:
        res.events.to_csv(sys.stdout, index=False)
    ok = res.summary[res.summary["error"].isna()]
    extra = (f", {int(ok['n_points'].sum())} points: {int(ok['n_changepoints'].sum())} change "
             f"points, {int(ok['n_outliers'].sum())} outliers")
    return _report("series", res, seconds, extra)


def run_kalman(args: argparse.Namespace) -> int:
    from possibly import models
    from possibly.scaleout import kalman_many

    cols = args.value
    model = models.constant_velocity(dt=args.dt, accel_sd=args.accel_sd, obs_sd=args.obs_sd,
                                     ndim=len(cols))
    if len(cols) == 1:
        names = ["position", "velocity"]
    else:
        names = [f"{q}_{c}" for c in cols for q in ("position", "velocity")]
    t0 = time.perf_counter()
    res = kalman_many(args.input, args.id, cols, model, robust=not args.standard, tau=args.tau,
                      state_names=names, **_cluster_args(args))
    seconds = time.perf_counter() - t0
    if res.out is None and res.states is not None:
        res.states.to_csv(sys.stdout, index=False)
    ok = res.summary[res.summary["error"].isna()]
    extra = (f", {int(ok['n_steps'].sum())} steps, {int(ok['n_discounted'].sum())} "
             f"discounted below 0.1")
    return _report("tracks", res, seconds, extra)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", metavar="INPUT.parquet",
                   help="Parquet file or dataset directory, one row per observation")
    p.add_argument("--id", required=True, metavar="COLUMN", help="column naming the series")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address of a running Dask scheduler (tcp://host:port); default: a "
                        "local cluster on 127.0.0.1; 'synchronous': this process only")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes of the local cluster (Dask's default)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write DIR/series/id=<id>.parquet per series and DIR/summary.parquet "
                        "(default: print CSV on stdout)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the results of a previous run in --out")
    p.add_argument("--connect-timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for --scheduler (10)")
    p.add_argument("--standard", action="store_true", help="the standard, non-robust version")
    p.add_argument("--tau", type=float, default=None, help="threshold variant (off)")


def register(sub) -> None:
    doc = __doc__.split("\n\n")[0]
    p = sub.add_parser("changepoint-many", help="change points of many series with Dask",
                       description=doc)
    _common(p)
    p.add_argument("--value", required=True, metavar="COLUMN", help="column of observations")
    p.add_argument("--sigma", type=_sigma, default="auto",
                   help="noise scale, or 'auto' per series (auto)")
    p.add_argument("--hazard", type=float, default=2.5e-3, help="hazard (2.5e-3)")
    p.add_argument("--forgetting", type=float, default=0.9, help="forgetting factor (0.9)")
    p.set_defaults(func=run_changepoints)

    p = sub.add_parser("kalman-many", help="robust Kalman filter over many tracks with Dask",
                       description=doc)
    _common(p)
    p.add_argument("--value", required=True, nargs="+", metavar="COLUMN",
                   help="observed position column(s), one per axis")
    p.add_argument("--model", choices=["constant-velocity"], default="constant-velocity",
                   help="state-space model (constant-velocity)")
    p.add_argument("--dt", type=float, default=1.0, help="time step (1)")
    p.add_argument("--accel-sd", type=float, default=0.05, help="acceleration sd (0.05)")
    p.add_argument("--obs-sd", type=float, default=1.0, help="observation sd (1)")
    p.set_defaults(func=run_kalman)
