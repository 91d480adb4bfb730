"""Benchmark: robust Kalman filter, 500 series × 250 steps of the paper's §5.2 scenario.

Rows: our standard and robust filters batched over the 500 series, and filterpy's
KalmanFilter looping over the same series (predict/update per step). Ratios are against
baselines timed in this process: the robust overhead against our standard batched filter
(target <= 1.2) and the speed-up against filterpy (target >= 50).

Run: .venv/bin/python benchmarks/bench_kalman.py [--series 500] [--steps 250]
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import best_of

import possibly as ps
from possibly.experiments.kalman import simulate


def filterpy_loop(ys: np.ndarray, model, x0: np.ndarray, P0: np.ndarray) -> np.ndarray:
    from filterpy.kalman import KalmanFilter as FPKalman

    F, Q, H, R = model
    out = np.empty(ys.shape[:2] + (2,))
    for b in range(ys.shape[0]):
        kf = FPKalman(dim_x=2, dim_z=1)
        kf.x, kf.P, kf.F, kf.Q, kf.H, kf.R = x0.copy(), P0.copy(), F, Q, H, R
        for t in range(ys.shape[1]):
            if t:
                kf.predict()
            kf.update(ys[b, t])
            out[b, t] = kf.x
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=500)
    parser.add_argument("--steps", type=int, default=250)
    parser.add_argument("--repeats", type=int, default=15, help="best of (ours)")
    args = parser.parse_args(argv)
    model = ps.models.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    _, ys, _ = simulate(args.series, seed=0, T=args.steps)
    x0, P0 = np.array([0.0, 0.1]), np.diag([1.0, 0.1])
    prior = ps.MultivariateNormal(x0, np.linalg.inv(P0))
    standard = ps.KalmanFilter(*model, robust=False)
    robust = ps.KalmanFilter(*model)
    threshold = ps.KalmanFilter(*model, tau=0.1)

    ours = {
        "standard, batched (baseline)": lambda: standard.filter(ys, prior=prior),
        "robust, batched": lambda: robust.filter(ys, prior=prior),
        "robust τ=0.1, batched": lambda: threshold.filter(ys, prior=prior),
        "robust, batched, uninformative prior": lambda: robust.filter(ys),
        "robust smoother, batched": lambda: robust.smooth(ys, prior=prior),
    }
    # interleaved, best of: the machine is shared, so load drifts between consecutive runs
    best = dict.fromkeys(ours, np.inf)
    for _ in range(args.repeats):
        for name, fn in ours.items():
            best[name] = min(best[name], best_of(fn, 1))
    rows = list(best.items())
    t_std, t_rob = best["standard, batched (baseline)"], best["robust, batched"]
    t_fp = best_of(lambda: filterpy_loop(ys, model, x0, P0), 1)
    rows.append(("filterpy KalmanFilter, loop over series", t_fp))

    # the standard rows must agree with filterpy, or the timing compares different work
    ours = standard.filter(ys, prior=prior).mean
    ref = filterpy_loop(ys[:5], model, x0, P0)
    assert np.allclose(ours[:5], ref, rtol=1e-9, atol=1e-9)

    print(f"Kalman filter, {args.series} series x {args.steps} steps "
          f"(NCV model, 10% outliers); best of {args.repeats} (filterpy: 1 run)")
    print(f"{'method':<42} {'time (ms)':>10} {'per step (us)':>14} {'vs standard':>12}")
    for name, t in rows:
        per = 1e6 * t / args.steps
        print(f"{name:<42} {1e3 * t:10.1f} {per:14.1f} {t / t_std:12.2f}")
    print()
    print(f"robust overhead (robust / standard, batched): {t_rob / t_std:.2f}  (target <= 1.2)")
    print(f"speed-up of robust batched over filterpy loop: {t_fp / t_rob:.0f}x  (target >= 50)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
