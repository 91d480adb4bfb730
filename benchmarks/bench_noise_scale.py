"""Benchmark: the Kalman filter with a learned noise scale, on WoLF's 2-D tracking
experiment (Student-t noise, R given 10x too small; ``bench_filtering.py`` has the accuracy).

Every ratio is against a baseline timed in this process, best of ``--repeats``:

1. the learned-scale filter (engine "auto": compiled for one trial, numpy's batched step for
   ``--trials``; and engine "numpy" for one trial), against the default robust Kalman filter
   given the true R (its fixed-scale counterpart) on the same data;
2. κ, the Fisher-consistency factor of the scale's update: read from its table over log α
   against the 48-node quadrature it replaces (per call, and in the whole numpy filter, whose
   outputs must agree to 1e-8).

Run: .venv/bin/python benchmarks/bench_noise_scale.py [--trials 100] [--steps 1000]
     [--repeats 5]
"""

from __future__ import annotations

import argparse
from unittest import mock

import numpy as np
from bench_filtering import model, simulate
from timing import best_of, load_kalman_loops

import possibly as ps
from possibly.filters import noise_scale


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1000)
    args = parser.parse_args(argv)
    F, Q, H, R = model()
    load_kalman_loops((F, Q, H, R))  # "auto": the compiled loops, as once they are loaded
    _, ys = simulate("student", args.trials, args.steps, args.seed)
    learn = ps.KalmanFilter(F, Q, H, 0.1 * R, learn_noise_scale=True)
    default = ps.KalmanFilter(F, Q, H, R)
    reps = args.repeats

    print(f"1. {args.trials} trials x {args.steps} steps, best of {reps} (ms)")
    print(f"{'filter':<42} {'1 trial':>9} {'batched':>9}")
    rows = {"default robust filter, true R (baseline)": lambda y: default.filter(y).mean,
            "learned scale, given R/10": lambda y: learn.fit(y).mean,
            "learned scale, given R/10, numpy engine": lambda y: learn.fit(y, engine="numpy").mean}
    times = {}
    for name, fn in rows.items():
        fn(ys[:1])  # warm-up (compilation, tables)
        times[name] = (best_of(lambda f=fn: f(ys[:1]), reps), best_of(lambda f=fn: f(ys), reps))
        print(f"{name:<42} {1e3 * times[name][0]:9.1f} {1e3 * times[name][1]:9.1f}")
    base, ours, ours_np = times.values()
    print(f"ratio learned / default: {ours[0] / base[0]:.1f}x (1 trial), "
          f"{ours[1] / base[1]:.1f}x (batched); compiled / numpy engine, 1 trial: "
          f"{ours[0] / ours_np[0]:.3f}")

    print(f"\n2. κ: table against quadrature, best of {reps}")
    rng = np.random.default_rng(0)
    for size in (1, args.trials):
        alpha = np.exp(rng.uniform(0.0, 8.0, size))
        table = noise_scale._kappa_table(2, learn.scale_dim)
        t_tab = best_of(lambda a=alpha, k=table: [k(a) for _ in range(1000)], reps) / 1000
        t_dir = best_of(lambda a=alpha: [noise_scale.kappa_direct(a, 2, learn.scale_dim)
                                         for _ in range(1000)], reps) / 1000
        print(f"  {size:4d} values per call: table {1e6 * t_tab:7.1f} µs, quadrature "
              f"{1e6 * t_dir:7.1f} µs ({t_dir / t_tab:.1f}x)")

    def direct_table(dof, scale_dim):
        return lambda a: noise_scale.kappa_direct(a, dof, scale_dim)

    fast = learn.fit(ys, engine="numpy")
    with mock.patch.object(noise_scale, "_kappa_table", direct_table):
        slow = learn.fit(ys, engine="numpy")
        t_slow = best_of(lambda: learn.fit(ys[:1], engine="numpy"), reps)
    err = np.max(np.abs(fast.noise_scale / slow.noise_scale - 1))
    assert err < 1e-8, err
    print(f"  whole numpy filter, 1 trial: table {1e3 * ours_np[0]:.1f} ms, quadrature "
          f"{1e3 * t_slow:.1f} ms ({t_slow / ours_np[0]:.2f}x); learned scales agree to "
          f"{err:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
