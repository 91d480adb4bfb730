"""Benchmark: appendices A and B (location-scale, soft uniform, minimum MMD).

Three tables, each with a baseline timed in this process, best of N interleaved runs:

1. ``ps.RobustNormalEstimator`` (unknown mean and precision, ω = 0.99, τ = 0.1), with and
   without its robust start, on 1000 series × T = 100 of the appendix-A scenario (ε = 0.1
   Cauchy outliers), batched and one series, against
   the generic ``ps.update_sequence(..., omega=0.99, lend="precision", tau=0.1)`` (baseline,
   batched) and median/MAD with numpy. The script first checks that both paths agree.
2. ``ps.SoftUniformEstimator(decay=10)`` (appendix B: θ* = 100, ε = 0.25), 1000 repeats × T = 100,
   10 × T = 1000 and one repeat; baseline: the standard soft-uniform update (``robust=False``)
   on the 1000 repeats; the hard uniform (``max``) for scale.
3. Time per repeat of the known-precision study (T = 100): median, Bayes, the generic robust
   update on ``ps.Normal`` and the minimum-MMD estimator (``baselines.mmd``), vectorised over
   1000 repeats and one repeat at a time, next to the paper's orders of magnitude.

Then the whole ``normal.run()``, ``normal_mmd.run()`` and ``soft_uniform.run()`` once each.

Run: .venv/bin/python benchmarks/bench_appendices.py [--repeats 5] [--no-runs]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from timing import best_of

import possibly as ps
from possibly.experiments import normal_mmd_study as normal_mmd
from possibly.experiments import normal_study as normal
from possibly.experiments import soft_uniform_study as soft_uniform
from possibly.experiments.baselines.mmd import mmd_location

SERIES, T = 1000, 100
SD = normal_mmd.SD




def interleaved(rows: dict, repeats: int) -> dict:
    """Best time of each row over ``repeats`` rounds; each round runs every row once."""
    best = dict.fromkeys(rows, np.inf)
    for _ in range(repeats):
        for name, (_, fn) in rows.items():
            best[name] = min(best[name], best_of(fn, 1))
    return best


def table(title: str, rows: dict, best: dict, base: str, unit: str = "us") -> None:
    """Print ``rows`` (name -> (count, fn)) with time per series/repeat and ratio to ``base``."""
    scale = {"us": 1e6, "ms": 1e3}[unit]
    per_base = best[base] / rows[base][0]
    print(title)
    print(f"{'method':<56} {'count':>6} {'time (ms)':>10} {'each (' + unit + ')':>10} "
          f"{'vs base':>8}")
    for name, (count, _) in rows.items():
        t = best[name]
        ratio = t / count / per_base
        print(f"{name:<56} {count:6d} {1e3 * t:10.2f} {scale * t / count:10.2f} "
              f"{ratio:8.{3 if ratio < 10 else 0}f}")
    print()


def median_mad(y: np.ndarray):
    med = np.median(y, axis=-1)
    mad = np.median(np.abs(y - med[..., None]), axis=-1)
    return med, 1.0 / (1.4826 * mad) ** 2


def generic_location_scale(y: np.ndarray, tau=normal.TAU):
    """The generic algebra on the normal-gamma (time along the last axis of ``y``)."""
    return ps.update_sequence(ps.NormalGamma(0.0, 0.0, 0.0, normal.BETA0),
                              ps.likelihood.normal_unknown(y),
                              omega=normal.OMEGA, lend="precision", tau=tau)


def generic_known_precision(y: np.ndarray, tau=None):
    """Generic robust update on ``ps.Normal``, keeping only the final mean (as normal_mmd)."""
    post = ps.Normal.uninformative(y.shape[:-1])
    for t in range(y.shape[-1]):
        post = ps.robust_update(post, ps.likelihood.normal(y[..., t], sd=SD), tau=tau).posterior
    return post.mean


def bayes_known_precision(y: np.ndarray):
    post = ps.combine(ps.Normal.uninformative(y.shape[:-1]),
                      ps.Normal(np.mean(y, axis=-1), y.shape[-1] / SD**2))
    return post.mean


def one_at_a_time(fn, y: np.ndarray):
    return lambda: [fn(y[i]) for i in range(y.shape[0])]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="best of, interleaved")
    parser.add_argument("--single", type=int, default=50,
                        help="repeats timed one at a time in table 3")
    parser.add_argument("--no-runs", action="store_true",
                        help="skip timing the whole experiments")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    y = normal.simulate(rng, [0.1], SERIES, T)[0][0]                 # (1000, 100)
    u = soft_uniform.simulate(np.random.default_rng(1), SERIES, T)[0]  # (1000, 100)
    u_long = soft_uniform.simulate(np.random.default_rng(2), 10, 1000)[0]
    print(f"{os.cpu_count()} cores; best of {args.repeats} interleaved runs per row")
    print()

    # 1. location-scale: the estimator (fast path of the algebra) vs the checked generic
    # update_sequence; without the robust start both must agree
    # the paper's beta0 (the generic baseline's prior), not the automatic one set from the data
    est = ps.RobustNormalEstimator(beta0=normal.BETA0, robust_start=False)
    start = ps.RobustNormalEstimator(beta0=normal.BETA0)
    std = ps.RobustNormalEstimator(beta0=normal.BETA0, robust=False)
    fit, res = est.fit(y), generic_location_scale(y)
    assert np.allclose(fit.mean, res.trajectory.mode[0], rtol=1e-9, atol=1e-12)
    assert np.allclose(fit.discount, res.discount, rtol=1e-9, atol=1e-300)
    base = f"generic update_sequence, {SERIES} series (baseline)"
    rows = {
        base: (SERIES, lambda: generic_location_scale(y)),
        f"RobustNormalEstimator(robust_start=False).fit, {SERIES} series":
            (SERIES, lambda: est.fit(y)),
        f"RobustNormalEstimator().fit (robust start), {SERIES} series":
            (SERIES, lambda: start.fit(y)),
        f"same, robust=False (standard), {SERIES} series": (SERIES, lambda: std.fit(y)),
        f"median/MAD (numpy), {SERIES} series": (SERIES, lambda: median_mad(y)),
        "generic update_sequence, 1 series": (1, lambda: generic_location_scale(y[0])),
        "RobustNormalEstimator(robust_start=False).fit, 1 series": (1, lambda: est.fit(y[0])),
        "RobustNormalEstimator().fit (robust start), 1 series": (1, lambda: start.fit(y[0])),
        "median/MAD (numpy), 1 series": (1, lambda: median_mad(y[0])),
    }
    table(f"1. location-scale (appendix A), T = {T}, eps = 0.1, omega = {normal.OMEGA}, "
          f"tau = {normal.TAU}; per series", rows, interleaved(rows, args.repeats), base)

    # 2. soft uniform
    robust = ps.SoftUniformEstimator(decay=soft_uniform.DECAY)
    standard = ps.SoftUniformEstimator(decay=soft_uniform.DECAY, robust=False)
    base = f"standard soft uniform, {SERIES} x T = {T} (baseline)"
    rows = {
        base: (SERIES, lambda: standard.fit(u)),
        f"SoftUniformEstimator(decay=10).fit, {SERIES} x T = {T}": (SERIES, lambda: robust.fit(u)),
        "SoftUniformEstimator(decay=10).fit, 10 x T = 1000": (10, lambda: robust.fit(u_long)),
        f"SoftUniformEstimator(decay=10).fit, 1 x T = {T}": (1, lambda: robust.fit(u[0])),
        f"hard uniform (max, numpy), {SERIES} x T = {T}": (SERIES, lambda: u.max(-1)),
    }
    table("2. soft uniform (appendix B), theta* = 100, eps = 0.25; per repeat", rows,
          interleaved(rows, args.repeats), base)

    # 3. known precision: time per repeat, vectorised and one at a time
    k = args.single
    methods = {
        "median": lambda a: np.median(a, axis=-1),
        "Bayes": bayes_known_precision,
        "robust (generic robust_update on Normal)": generic_known_precision,
        "robust tau=0.1 (generic)": lambda a: generic_known_precision(a, normal_mmd.TAU),
        "MMD (baselines.mmd.mmd_location)": lambda a: mmd_location(a, sd=SD).location,
    }
    rows = {}
    for name, fn in methods.items():
        rows[f"{name}, vectorised"] = (SERIES, lambda fn=fn: fn(y))
        rows[f"{name}, one at a time"] = (k, one_at_a_time(fn, y[:k]))
    best = interleaved(rows, args.repeats)
    table(f"3. known precision (appendix A, MMD figure), T = {T}, eps = 0.1; vectorised over "
          f"{SERIES} repeats, one at a time over {k}; per repeat; baseline: median, vectorised",
          rows, best, "median, vectorised")
    paper = normal_mmd.PAPER["seconds_per_repeat"]
    paper_of = {"median": paper["median"], "Bayes": paper["bayes_all"],
                "robust (generic robust_update on Normal)": paper["robust_discount"],
                "robust tau=0.1 (generic)": paper["robust_threshold"],
                "MMD (baselines.mmd.mmd_location)": paper["mmd"]}
    print(f"per repeat, paper ({normal_mmd.PAPER['machine']}) vs ours:")
    print(f"{'method':<42} {'paper':>9} {'one at a time':>14} {'vectorised':>11}")
    for name in methods:
        one = best[f"{name}, one at a time"] / k
        vec = best[f"{name}, vectorised"] / SERIES
        print(f"{name:<42} {paper_of[name] * 1e3:6.0f} ms {one * 1e3:11.4f} ms "
              f"{vec * 1e3:8.4f} ms")
    mmd = best["MMD (baselines.mmd.mmd_location), vectorised"]
    print(f"MMD vectorised vs median vectorised: {mmd / best['median, vectorised']:.0f}x; "
          f"MMD iterations on the {SERIES} repeats: {mmd_location(y, sd=SD).iterations}")

    if not args.no_runs:
        print()
        print("whole experiments at the paper's repeat counts (1000), one run each:")
        for name, fn in (("normal.run() (T = 100, 50, 500; 13 eps; 6 methods)", normal.run),
                         ("normal_mmd.run() (T = 100; 13 eps; with its timing loops)",
                          normal_mmd.run),
                         ("soft_uniform.run()", soft_uniform.run)):
            start = time.perf_counter()
            fn()
            print(f"  {name}: {time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
