"""``possibly demo``: a stream of normal observations with gross outliers.

The mean of N(mu, 1) data is estimated sequentially from an uninformative prior, with the
standard possibilistic (= Bayesian MAP) update and with the robust update, which discounts
each observation by its consistency with what came before.
"""

from __future__ import annotations

import argparse

import numpy as np

from possibly import Normal, likelihood, update_sequence


def simulate(n: int, outlier_rate: float, seed: int, mean: float = 3.0, outlier_sd: float = 30.0):
    """Return ``(y, is_outlier)``: N(mean, 1) values, a fraction replaced by N(mean, sd²)."""
    rng = np.random.default_rng(seed)
    y = rng.normal(mean, 1.0, n)
    out = rng.random(n) < outlier_rate
    out[0] = False  # the paper's standing assumption: the first observation is an inlier
    y[out] = rng.normal(mean, outlier_sd, out.sum())
    return y, out


def run(args: argparse.Namespace) -> int:
    if args.n < 2:
        raise ValueError(f"--n must be >= 2, got {args.n}")
    if not 0 <= args.outlier_rate < 1:
        raise ValueError(f"--outlier-rate must be in [0, 1), got {args.outlier_rate}")
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
    p = sub.add_parser("demo", help="robust vs standard estimation of a mean with outliers",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=200, help="number of observations (200)")
    p.add_argument("--outlier-rate", type=float, default=0.1, help="fraction of outliers (0.1)")
    p.add_argument("--mean", type=float, default=3.0, help="true mean (3)")
    p.add_argument("--seed", type=int, default=1, help="random seed (1)")
    p.add_argument("--tau", type=float, default=None, help="threshold variant (off)")
    p.add_argument("--flag", type=float, default=1e-3,
                   help="list observations whose discount fell below this (1e-3)")
    p.set_defaults(func=run)
