"""Range-bearing tracking with outliers: robust EKF and UKF against the robust particle filter.

The scenario and the particle filter are those of ``possibly.experiments.particle_study`` (study 2:
a target passes a sensor at the origin, bearing sd 0.05 rad, range sd 1, 10% outliers with 10x
the noise, T = 60, prior centred on the truth plus a draw of sd (5, 0.2, 5, 0.2)). The EKF and
the UKF run on the same model (``NonlinearModel``, Jacobians by finite differences for the EKF),
batched over the repeats; the particle filter loops over them. Score: time-averaged Euclidean
position error of E* per repeat; median and mean; time per repeat.

Second table, smoother against filter: ``smooth`` / ``filter`` of the same EKF or UKF on the
same series, from no prior (the robust start) and from a prior; the range-bearing batch above
and one series of 10^3 and 10^5 steps (``--smoother-lengths``) of a scalar model observed
through ``h(x) = x³`` with 5% outliers; the ratio of each interleaved pair of runs, median
[min, max] over ``--smoother-repeats``, and the ratio of the best times. Target: at most 2.

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
    parser.add_argument("--smoother-lengths", default="1000,100000",
                        help="comma-separated lengths of the one-series smoother rows")
    parser.add_argument("--smoother-repeats", type=int, default=3)
    parser.add_argument("--only-smoother", action="store_true",
                        help="only the smoother-against-filter table")
    args = parser.parse_args(argv)
    states, ys, outlier, m0 = simulate_range_bearing(args.repeats, args.seed)
    prior = ps.MultivariateNormal(m0, np.diag(1.0 / np.asarray(PRIOR_SD) ** 2))
    model = ps.filters.nonlinear.NonlinearModel(f=transition, h=measurement, Q=Q,
                                        R=np.diag([BEARING_SD**2, RANGE_SD**2]))
    if args.only_smoother:
        _smoother_table(model, prior, ys, [int(k) for k in args.smoother_lengths.split(",")],
                        args.smoother_repeats)
        return 0
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
    _smoother_table(model, prior, ys, [int(k) for k in args.smoother_lengths.split(",")],
                    args.smoother_repeats)
    return 0


def _smoother_table(model, prior, ys, lengths: list[int], repeats: int) -> None:
    rng = np.random.default_rng(4)
    cubic = ps.filters.nonlinear.NonlinearModel(f=lambda x: x, h=lambda x: x ** 3,
                                                Q=[[1e-4]], R=[[0.01]])
    cubic_prior = ps.MultivariateNormal([1.0], [[100.0]])
    # the batch from its prior only (without one, the finite differences of the EKF's
    # information-form start fail on this model)
    series = [(f"batch {ys.shape[0]} x {ys.shape[1]}", model, ys, prior, None)]
    for T in lengths:
        x = 1.1 + np.cumsum(1e-2 * rng.normal(size=T))
        y = x ** 3 + 0.1 * rng.normal(size=T)
        y[rng.random(T) < 0.05] += 20.0
        series.append((f"one series, {T}", cubic, y, cubic_prior, np.array([1.0])))
    print(f"\nsmoother against filter: smooth / filter, the same filter and series; median "
          f"[min, max] of {repeats} interleaved pairs")
    print(f"{'filter':<18} {'series':<24} {'filter (ms)':>12} {'smooth (ms)':>12} "
          f"{'smooth / filter':>22} {'best / best':>11}")
    for label, mdl, y, p, guess in series:
        for name, cls in (("EKF", ps.ExtendedKalmanFilter), ("UKF", ps.UnscentedKalmanFilter)):
            starts = [("prior", {"prior": p})]
            if guess is not None:
                starts.insert(0, ("no prior", {"initial_guess": guess}))
            for start, kw in starts:
                flt = cls(mdl, **kw)
                f_t, s_t = [], []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    flt.filter(y)
                    t1 = time.perf_counter()
                    flt.smooth(y)
                    f_t.append(t1 - t0)
                    s_t.append(time.perf_counter() - t1)
                ratio = np.array(s_t) / np.array(f_t)
                print(f"{name + ', ' + start:<18} {label:<24} {1e3 * np.median(f_t):12.1f} "
                      f"{1e3 * np.median(s_t):12.1f} {np.median(ratio):8.2f} "
                      f"[{ratio.min():.2f}, {ratio.max():.2f}] {min(s_t) / min(f_t):9.2f}")


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
