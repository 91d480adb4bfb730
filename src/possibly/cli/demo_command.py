"""``possibly demo``: robust change-point detection on a generated series with outliers.

A seeded piecewise-constant series with known change points and outliers (no download) is
analysed by the default detector, by the paper's robust normal-mean model and by its standard
(non-robust) version; found and true change points are printed and a PNG of the default's
result is written. ``possibly demo --stream`` runs the earlier demo instead: the mean
of N(mu, 1) data with gross outliers, estimated sequentially with the standard and the robust
update. The generated series are bounded (:data:`MAX_N` observations) so that a typo cannot
exhaust the memory.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TypedDict

import numpy as np

from possibly import Normal, likelihood, update_sequence
from possibly.cli.arguments import integer, number
from possibly.cli.changepoint_command import HAZARD
from possibly.cli.outputs import check_plot, save_plot

DESCRIPTION = (
    "Robust change-point detection on a generated piecewise-constant series with outliers (no "
    "download): the default detector, the paper's robust model and its standard version "
    "against the true change points, and a plot. With --stream: the earlier demo, the mean "
    "of N(mean, 1) data with gross outliers estimated sequentially by the standard and the "
    "robust update.")

#: the largest generated series (a few seconds and about 100 MB at most)
MAX_N = 1_000_000


def simulate(n: int, outlier_rate: float, seed: int, mean: float = 3.0, outlier_sd: float = 30.0):
    """Return ``(y, is_outlier)``: N(mean, 1) values, a fraction replaced by N(mean, sd²)."""
    rng = np.random.default_rng(seed)
    y = rng.normal(mean, 1.0, n)
    out = rng.random(n) < outlier_rate
    out[0] = False  # the paper's standing assumption: the first observation is an inlier
    y[out] = rng.normal(mean, outlier_sd, out.sum())
    return y, out


def run(args: argparse.Namespace) -> int:
    if args.stream:
        return run_stream(args)
    return run_changepoint(args)


class _SeriesDefaults(TypedDict):
    n: int
    n_changes: int
    outlier_rate: float


#: the demo series: 1500 points, 7 change points, 1.5% outliers (seed 1 unless --seed)
CHANGEPOINT_DEFAULTS: _SeriesDefaults = {"n": 1500, "n_changes": 7, "outlier_rate": 0.015}
TOLERANCE = 3  # a found change point within this many steps of a true one counts as a hit


def _match(found: np.ndarray, true: np.ndarray) -> dict[int, int | None]:
    """Each true change point -> the nearest found one within TOLERANCE (or None)."""
    out = {}
    for c in true:
        near = found[np.abs(found - c) <= TOLERANCE]
        out[int(c)] = int(near[np.argmin(np.abs(near - c))]) if near.size else None
    return out


def _short(values: list, limit: int = 12) -> str:
    if len(values) <= limit:
        return str(values)
    return "[" + ", ".join(map(str, values[:limit])) + f", ... ({len(values) - limit} more)]"


def _demo_plot(path: str) -> Path | None:
    """The checked plot path, or None (no plot asked, or no matplotlib: the demo runs without
    its plot)."""
    if not path:
        return None
    try:
        return check_plot(path)
    except ImportError as exc:
        print(f"no plot: {exc}")
        return None


def _print_models(n: int, true_cps: np.ndarray, true_out: np.ndarray, seed: int,
                  hazard: float, sigma: float | str) -> None:
    """The demo series and the detectors compared."""
    print(f"{n} observations: piecewise-constant mean, N(0, 1) noise, {true_cps.size} change "
          f"points, {true_out.size} outliers of 6-12 sd (seed {seed})")
    print(f"default: ChangepointDetector(): constant-level, linear- and quadratic-trend "
          f"segments with unknown noise, priors from the median and MAD, hazard = "
          f"{hazard:g}")
    print(f"paper:   ChangepointDetector(model=NormalMean(sigma, outliers='paper')): the "
          f"paper's constant level and recursion, sigma = {sigma:.3f} (MAD of first "
          f"differences / sqrt 2), forgetting = 0.9; standard: the same without the robust "
          f"discount")


def _print_changepoints(results: dict, true_cps: np.ndarray, n: int) -> None:
    """Each detector's change points against the true ones."""
    print(f"  true change points     {true_cps.tolist()}")
    for name, res in results.items():
        found = res.changepoints
        hits = _match(found, true_cps)
        n_hit = sum(v is not None for v in hits.values())
        extra = [int(c) for c in found
                 if np.min(np.abs(true_cps - c), initial=n) > TOLERANCE]
        print(f"  {name:8s} found {found.size:3d}  {_short(found.tolist())}")
        print(f"           {n_hit}/{true_cps.size} true change points found (within "
              f"{TOLERANCE} steps), {len(extra)} false alarms"
              + (f" {_short(extra)}" if extra else ""))


def _print_outliers(results: dict, true_out: np.ndarray) -> None:
    """The robust detectors' outliers against the true ones."""
    print(f"  true outliers          {true_out.tolist()}")
    for name, res in results.items():
        flagged = res.outliers
        caught = np.isin(flagged, true_out).sum()
        print(f"  {name:8s} outliers      {_short(flagged.tolist(), 30)}")
        print(f"           {caught}/{true_out.size} true outliers flagged, "
              f"{flagged.size - caught} other observations flagged")


def run_changepoint(args: argparse.Namespace) -> int:
    from possibly.changepoint import ChangepointDetector, NormalMean, estimate_sigma
    from possibly.datasets import piecewise_constant

    n = CHANGEPOINT_DEFAULTS["n"] if args.n is None else args.n
    rate = CHANGEPOINT_DEFAULTS["outlier_rate"] if args.outlier_rate is None else args.outlier_rate
    n_changes = args.changes
    if not 20 * (n_changes + 1) <= n <= MAX_N:
        raise ValueError(f"--n must be in [20 * (--changes + 1), {MAX_N}] = "
                         f"[{20 * (n_changes + 1)}, {MAX_N}], got {n}")
    plot = _demo_plot(args.plot)
    y, true_cps, is_out = piecewise_constant(n, n_changes, outlier_rate=rate, seed=args.seed)
    default = ChangepointDetector(hazard=args.hazard, tau=args.tau).fit(y)
    # the paper's model and recursion exactly (no evidence floor), sigma estimated as
    # model="normal" does
    paper_model = NormalMean(estimate_sigma(y), outliers="paper")
    paper = ChangepointDetector(model=paper_model, hazard=args.hazard, tau=args.tau).fit(y)
    standard = ChangepointDetector(model=paper_model, hazard=args.hazard, robust=False).fit(y)
    true_out = np.flatnonzero(is_out)
    _print_models(n, true_cps, true_out, args.seed, args.hazard, paper_model.sigma)
    _print_changepoints({"default": default, "paper": paper, "standard": standard}, true_cps, n)
    _print_outliers({"default": default, "paper": paper}, true_out)
    print("which to pick: the default for a series of unknown shape (trends, changes of "
          "variance, any scale);\n  the paper's model (sigma=...) for piecewise-constant "
          "levels with a known noise scale or streaming from the first value; its exact "
          "recursion,\n  NormalMean(sigma, outliers='paper'), for the paper's results")
    if plot is not None:
        from possibly.plotting.changepoint_plots import plot_changepoints

        save_plot(plot_changepoints, plot, default, truth=true_cps,
                  title="possibly demo: ChangepointDetector() (dashed: true change points)")
        print(f"plot written to {plot}")
    return 0


def run_stream(args: argparse.Namespace) -> int:
    args.n = 200 if args.n is None else args.n
    args.outlier_rate = 0.1 if args.outlier_rate is None else args.outlier_rate
    if not 2 <= args.n <= MAX_N:
        raise ValueError(f"--n must be in [2, {MAX_N}], got {args.n}")
    y, out = simulate(args.n, args.outlier_rate, args.seed, mean=args.mean)
    lik = likelihood.normal(y, sd=1.0)
    prior = Normal(0.0, 0.0)
    std = update_sequence(prior, lik, robust=False)
    rob = update_sequence(prior, lik, robust=True, tau=args.tau)
    print(f"{args.n} observations of N({args.mean:g}, 1), {out.sum()} gross outliers "
          f"(N({args.mean:g}, 30^2), seed {args.seed})")
    print(f"  true mean                 {args.mean:10.4f}")
    print(f"  standard update           {float(std.posterior.mode):10.4f}"
          f"   (sd {float(np.sqrt(std.posterior.variance)):.4f})")
    print(f"  robust update             {float(rob.posterior.mode):10.4f}"
          f"   (sd {float(np.sqrt(rob.posterior.variance)):.4f})")
    print(f"  mean of the inliers only  {y[~out].mean():10.4f}")
    flagged = np.flatnonzero(rob.discount < args.flag)
    print(f"observations the robust update discounted below {args.flag:g} "
          f"({flagged.size}; {np.sum(out[flagged])} of them true outliers):")
    for t in flagged:
        tag = "outlier" if out[t] else "inlier"
        print(f"  t={t:4d}  y={y[t]:9.3f}  consistency={rob.consistency[t]:.2e}  "
              f"discount={rob.discount[t]:.2e}  ({tag})")
    missed = np.flatnonzero(out & (rob.discount >= args.flag))
    if missed.size:
        print(f"outliers kept (close to the truth, so harmless): "
              f"{', '.join(f't={t} y={y[t]:.2f}' for t in missed)}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("demo", help="robust change-point detection on a generated series",
                       description=DESCRIPTION)
    p.add_argument("--stream", action="store_true",
                   help="the earlier demo: robust vs standard estimation of a mean")
    p.add_argument("--n", type=integer(2, MAX_N), default=None,
                   help=f"number of observations, at most {MAX_N} (1500; 200 with --stream)")
    p.add_argument("--outlier-rate", type=number(0, 1, high_open=True), default=None,
                   help="fraction of outliers, in [0, 1) (0.015; 0.1 with --stream)")
    p.add_argument("--seed", type=integer(0, 2**32 - 1), default=1, help="random seed (1)")
    p.add_argument("--tau", type=number(0, 1, low_open=True), default=None,
                   help="threshold variant of the robust version, in (0, 1] (off)")
    p.add_argument("--changes", type=integer(0, MAX_N // 20 - 1),
                   default=CHANGEPOINT_DEFAULTS["n_changes"], help="number of change points (7)")
    p.add_argument("--hazard", type=number(*HAZARD, low_open=True), default=1e-3,
                   help="possibility of a change at each step, in (1e-12, 0.25] (1e-3)")
    p.add_argument("--plot", metavar="IMAGE", default="demo_changepoints.png",
                   help="where to write the plot (demo_changepoints.png; '' for none)")
    p.add_argument("--mean", type=number(-1e100, 1e100), default=3.0,
                   help="--stream: true mean (3)")
    p.add_argument("--flag", type=number(0, 1, low_open=True), default=1e-3,
                   help="--stream: list observations whose discount fell below this (1e-3)")
    p.set_defaults(func=run)
