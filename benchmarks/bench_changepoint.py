"""Change-point detection: possibly's detector against the PyPI BOCPD packages.

Prints a table. All timings are best-of-N wall-clock times in this process on the same data;
ratios are against the robust detector (numba engine when installed). The PyPI packages
``bocpd`` and ``bayesian-changepoint-detection`` implement the standard probabilistic BOCPD of
Adams & MacKay with a normal-gamma (Student-t predictive) model, a dense (T+1)² run-length
matrix and no truncation; they are timed once on the same series with hazard 1/400.

Run: ``.venv/bin/python benchmarks/bench_changepoint.py [--quick]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import sys
import time

import numpy as np
from timing import best_of

import possibly as ps
from possibly.changepoint import ChangepointDetector, numba_available

SIGMA, HAZARD, FORGETTING = 2500.0, 2.5e-3, 0.9




def detector(**kw) -> ChangepointDetector:
    base = dict(sigma=SIGMA, hazard=HAZARD, forgetting=FORGETTING)
    base.update(kw)
    return ChangepointDetector(**base)


def bocpd_package(y: np.ndarray):
    """``bocpd`` (PyPI): online_changepoint_detection with a Student-t model."""
    with contextlib.redirect_stdout(io.StringIO()):  # it prints on import
        from bocpd.bayesian_models import online_changepoint_detection
        from bocpd.hazard_functions import constant_hazard
        from bocpd.online_likelihoods import StudentT
    lik = StudentT(alpha=1.0, beta=SIGMA**2, kappa=1.0, mu=float(np.mean(y)))
    return online_changepoint_detection(y, lambda r: constant_hazard(1 / HAZARD, r), lik)


def bcd_package(y: np.ndarray):
    """``bayesian-changepoint-detection`` (PyPI): the same algorithm, its own Student-t."""
    from bayesian_changepoint_detection.online_changepoint_detection import (
        StudentT,
        constant_hazard,
        online_changepoint_detection,
    )

    lik = StudentT(alpha=1.0, beta=SIGMA**2, kappa=1.0, mu=float(np.mean(y)))
    return online_changepoint_detection(y, lambda r: constant_hazard(1 / HAZARD, r), lik)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, 10^5 streamed points")
    args = ap.parse_args()
    repeats = 3 if args.quick else 20
    y = ps.datasets.well_log()
    n = y.size
    engine = "numba" if numba_available() else "numpy"
    rows = []  # (name, seconds or None, note)

    # exactness first: pruning at 1e-12 gives the unpruned results, bit for bit
    pruned = detector(engine=engine).fit(y)
    full = detector(engine=engine, tol=0.0).fit(y)
    exact = all(np.array_equal(getattr(pruned, f), getattr(full, f), equal_nan=True)
                for f in ("map_run_length", "mean", "consistency", "discount"))

    det = detector(engine=engine)
    det.fit(y[:10])  # compile / warm up
    base = best_of(lambda: det.fit(y), repeats)
    rows.append((f"possibly robust ({engine}, tol 1e-12)", base,
                 f"{pruned.changepoints.size} change points; identical to unpruned: {exact}"))
    std = detector(engine=engine, robust=False)
    std.fit(y[:10])
    rows.append((f"possibly standard ({engine}, tol 1e-12)", best_of(lambda: std.fit(y), repeats),
                 f"{std.fit(y).changepoints.size} change points"))
    unpruned = detector(engine=engine, tol=0.0)
    rows.append((f"possibly robust ({engine}, unpruned)",
                 best_of(lambda: unpruned.fit(y), max(1, repeats // 5)), "every run length kept"))
    if engine == "numba":
        npdet = detector(engine="numpy")
        rows.append(("possibly robust (numpy engine)", best_of(lambda: npdet.fit(y), 2),
                     "pure numpy step function"))

    for name, fn in (("bocpd 0.0.4 (PyPI)", bocpd_package),
                     ("bayesian-changepoint-detection (PyPI)", bcd_package)):
        try:
            t0 = time.perf_counter()
            R, _ = fn(y)
            secs = time.perf_counter() - t0
            # column t + 1 of R is after observation t; its run length counts observation t
            # (0: a change right after it), ours does not: shift by one, clip at 0
            r = np.maximum(np.argmax(R[:, 1:], axis=0) - 1, 0)
            cps = ps.changepoint.backtrack(r)
            del R
            rows.append((name, secs, f"standard BOCPD, Student-t; {cps.size} change points "
                                     f"(its MAP run lengths backtracked)"))
        except Exception as exc:  # report, do not hide, a package that fails
            rows.append((name, None, f"failed: {type(exc).__name__}: {exc}"[:90]))

    print(f"well log: {n} observations, sigma={SIGMA:g}, hazard={HAZARD:g}, "
          f"forgetting={FORGETTING:g}; best of {repeats}; {os.cpu_count()} cores, one used")
    print(f"{'method':44s} {'total':>11s} {'per obs':>11s} {'ratio':>9s}  note")
    for name, secs, note in rows:
        if secs is None:
            print(f"{name:44s} {'-':>11s} {'-':>11s} {'-':>9s}  {note}")
            continue
        print(f"{name:44s} {secs * 1e3:8.2f} ms {secs / n * 1e6:8.2f} µs "
              f"{secs / base:8.1f}x  {note}")

    # streaming in bounded memory
    n_stream = 10**5 if args.quick else 10**6
    sig, true_cps, _ = ps.datasets.piecewise_constant(
        n_stream, n_changes=n_stream // 400, outlier_rate=0.01, seed=0)
    lean = ChangepointDetector(sigma=1.0, hazard=HAZARD, forgetting=FORGETTING, engine=engine,
                               history=False)
    lean.extend(sig[:10])
    lean.reset()
    rss0 = rss_mib()
    max_active = 0
    t0 = time.perf_counter()
    for chunk in np.array_split(sig, n_stream // 1000):
        out = lean.extend(chunk)
        max_active = max(max_active, int(out.n_active.max()))
    secs = time.perf_counter() - t0
    found = lean.changepoints
    hit = np.mean([np.min(np.abs(found - c)) <= 3 for c in true_cps]) if found.size else 0.0
    print()
    print(f"streamed {n_stream:,} points in chunks of 1000 (history=False, {engine}): "
          f"{secs:.2f} s, {secs / n_stream * 1e6:.2f} µs/obs; at most {max_active} run lengths "
          f"kept; {len(lean._trace.times)} MAP resets stored; max RSS grew by "
          f"{rss_mib() - rss0:.1f} MiB; {found.size} change points found, "
          f"{100 * hit:.1f}% of the {true_cps.size} true ones within 3 steps")
    single = ChangepointDetector(sigma=1.0, hazard=HAZARD, engine=engine, history=False)
    m = 20000
    t0 = time.perf_counter()
    for v in sig[:m]:
        single.update(v)
    secs = time.perf_counter() - t0
    print(f"one value at a time with update(): {secs / m * 1e6:.1f} µs/obs (call overhead)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
