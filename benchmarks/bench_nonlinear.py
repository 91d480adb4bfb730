"""Range-bearing tracking with outliers: robust EKF and UKF against the robust particle filter.

The scenario and the particle filter are those of ``possibly.experiments.particle_study`` (study 2:
a target passes a sensor at the origin, bearing sd 0.05 rad, range sd 1, 10% outliers with 10x
the noise, T = 60, prior centred on the truth plus a draw of sd (5, 0.2, 5, 0.2)). The EKF and
the UKF run on the same model (``NonlinearModel``, Jacobians by finite differences for the EKF),
batched over the repeats; the particle filter loops over them. Score: time-averaged Euclidean
position error of E* per repeat; median and mean; time per repeat.

Run: .venv/bin/python benchmarks/bench_nonlinear.py [--repeats 100] [--particles 500]
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np

import possibly as ps
from possibly.experiments.particle_study import (
    BEARING_SD,
    PRIOR_SD,
    RANGE_SD,
    range_bearing_model,
    simulate_range_bearing,
)
from possibly.filters import constant_velocity
from possibly.filters.nonlinear import NonlinearState, _observation

F, Q, _, _ = constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0, ndim=2)


def transition(x):
    return x @ F.T


def measurement(x):  # (bearing, range) of (x, vx, y, vy)
    return np.stack([np.arctan2(x[..., 2], x[..., 0]), np.hypot(x[..., 0], x[..., 2])], -1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--particles", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-particles", action="store_true",
                        help="skip the particle filters (slow)")
    args = parser.parse_args(argv)
    states, ys, outlier, m0 = simulate_range_bearing(args.repeats, args.seed)
    prior = ps.MultivariateNormal(m0, np.diag(1.0 / np.asarray(PRIOR_SD) ** 2))
    model = ps.filters.nonlinear.NonlinearModel(f=transition, h=measurement, Q=Q,
                                        R=np.diag([BEARING_SD**2, RANGE_SD**2]))
    truth = states[..., [0, 2]]
    rows = {}
    variants = {"standard": {"robust": False},
                "robust (default, coverage 0.9)": {},
                "robust, paper's discount": {"coverage": None},
                "robust τ = 0.1 (paper's)": {"tau": 0.1, "coverage": None}}
    for label, cls in (("EKF", ps.ExtendedKalmanFilter), ("UKF", ps.UnscentedKalmanFilter)):
        for variant, kw in variants.items():
            name = f"{label}, {variant}"
            start = time.perf_counter()
            mean = cls(model, prior=prior, **kw).fit(ys).mean
            rows[name] = (np.linalg.norm(mean[..., [0, 2]] - truth, axis=-1).mean(-1),
                          (time.perf_counter() - start) / args.repeats)
    for name, kw in {} if args.no_particles else {
            "particle filter, standard": {"robust": False},
            "particle filter, robust": {},
            "particle filter, robust τ = 0.1": {"tau": 0.1}}.items():
        pf = range_bearing_model(args.particles, **kw)
        err = np.empty(args.repeats)
        start = time.perf_counter()
        for i in range(args.repeats):
            p = ps.MultivariateNormal(m0[i], np.diag(1.0 / np.asarray(PRIOR_SD) ** 2))
            mode = pf.filter(ys[i], p, seed=args.seed + 2000 + i).mode
            err[i] = np.linalg.norm(mode[:, [0, 2]] - truth[i], axis=-1).mean()
        rows[name] = (err, (time.perf_counter() - start) / args.repeats)
    print(f"range-bearing, {args.repeats} repeats x {ys.shape[1]} steps, seed {args.seed}, "
          f"{args.particles} particles; outliers {outlier.mean():.1%}")
    print(f"{'method':<38} {'median':>7} {'mean':>7} {'q90':>7} {'ms/repeat':>10}")
    for name, (err, t) in rows.items():
        print(f"{name:<38} {np.median(err):7.3f} {err.mean():7.3f} "
              f"{np.quantile(err, 0.9):7.3f} {1e3 * t:10.2f}")
    _validation_cost(model, prior, ys)
    return 0


def _checking_step(unchecked, obs_dim, state, y):
    if not isinstance(state, NonlinearState):
        raise ValueError("state must be a NonlinearState")
    return unchecked(state, _observation(y, obs_dim))


def _validation_cost(model, prior, ys, timings: int = 15) -> None:
    """``fit`` (observations checked once) against the same ``fit`` stepping with the public,
    checking ``step`` (what it did before): time ratio, median [min, max] over ``timings``
    alternating runs in this process, for the batch and for one series."""
    print(f"\nchecking the observations once: fit / (fit checking at each step), "
          f"median [min, max] of {timings} runs")
    for name, cls in (("EKF", ps.ExtendedKalmanFilter), ("UKF", ps.UnscentedKalmanFilter)):
        for label, y, p in (("batch", ys, prior),
                            ("one series", ys[0], ps.MultivariateNormal(
                                prior.mean[0], prior.precision[0]))):
            once, each = cls(model, prior=p), cls(model, prior=p)
            # the baseline: every step checks its observation, as the public step does
            each._plain_step = partial(_checking_step, each._plain_step, model.obs_dim)
            ratios, fit_ms = [], []
            for _ in range(timings):
                t0 = time.perf_counter()
                once.fit(y)
                t1 = time.perf_counter()
                each.fit(y)
                t2 = time.perf_counter()
                ratios.append((t1 - t0) / (t2 - t1))
                fit_ms.append(1e3 * (t1 - t0))
            print(f"{name}, robust, {label:<11} fit {np.median(fit_ms):6.2f} ms  ratio "
                  f"{np.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]")


if __name__ == "__main__":
    raise SystemExit(main())
