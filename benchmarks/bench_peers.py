"""The fits against the peers users would otherwise reach for, side by side in one process.

Three tables; every ratio is the peer's median over ours, timed in this process:

1. the well log (4050 points): our default detector and the paper's model against skchange's
   PELT, FPOP and CAPA, ruptures' Pelt (l2 cost) and the ``bocpd`` package;
2. a long series (``--n``, 10⁶ points by default, a change every 10⁴ points, 1% outliers): the
   same, a peer run only when its time at a tenth of the length predicts less than
   ``--budget`` seconds (linear extrapolation, which flatters the quadratic ones);
3. the Kalman filter, 500 series × 250 steps of the paper's §5.2 scenario: our standard and
   robust filters batched against simdkalman (batched, its filter only), filterpy and pykalman
   (a loop over the series; pykalman timed on a subset and scaled).

A peer that is not installed (``pip install -e ".[bench]"``; pykalman pins an old
scikit-base that sktime refuses, so it is left out of the extra) is reported, not hidden.
Medians over ``--repeats`` runs with the min–max spread in brackets; compare ratios, not
absolute times, across runs: the machine is shared.

Run: ``.venv/bin/python benchmarks/bench_peers.py [--repeats 5] [--n 1000000] [--budget 120]``
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from bench_changepoint import bocpd_package, fmt, ruptures_pelt, timed
from timing import load_kalman_loops

import possibly as ps
from possibly.changepoint import ChangepointDetector, NormalMean

Timing = tuple[float, float, float]


def skchange_detector(name: str, y: np.ndarray, sigma: float) -> np.ndarray:
    """skchange's detector on ``y / sigma`` (its costs and penalties assume unit noise), its
    default (BIC-like) penalty; returns the change points."""
    import pandas as pd
    from skchange import detectors

    det = getattr(detectors, name)()
    out = det.fit_predict(pd.DataFrame(y / sigma))
    return np.asarray(out.iloc[:, 0] if hasattr(out, "iloc") else out)


def changepoint_peers(y: np.ndarray, sigma: float) -> dict[str, Callable[[], object]]:
    return {
        "skchange PELT (L2, default penalty)": lambda: skchange_detector("PELT", y, sigma),
        "skchange FPOP (default penalty)": lambda: skchange_detector("FPOP", y, sigma),
        "skchange CAPA (default savings)": lambda: skchange_detector("CAPA", y, sigma),
        "ruptures Pelt (l2, BIC-like penalty)": lambda: ruptures_pelt(y, sigma),
        "bocpd 0.0.4 (Student-t, dense)": lambda: bocpd_package(y, sigma, 2.5e-3),
    }


def report(title: str, base: Timing, rows: list[tuple[str, Timing | None, str]]) -> None:
    print(f"## {title}")
    print(f"{'method':44s} {'time':>28s} {'peer / ours':>12s}  note")
    for name, t, note in rows:
        if t is None:
            print(f"{name:44s} {'-':>28s} {'-':>12s}  {note}")
        else:
            print(f"{name:44s} {fmt(t):>28s} {t[0] / base[0]:11.1f}x  {note}")
    print()


def run_peer(fn: Callable[[], object], repeats: int) -> tuple[Timing | None, str]:
    try:
        fn()  # first call: imports and any compilation of the peer, not timed
        return timed(fn, repeats), ""
    except ImportError as exc:
        return None, f"not installed: {exc.name}"
    except Exception as exc:  # report, do not hide, a peer that fails
        return None, f"failed: {type(exc).__name__}: {exc}"[:80]


def well_log_table(repeats: int) -> None:
    y = ps.datasets.well_log()
    ours = ChangepointDetector()
    paper = ChangepointDetector(NormalMean(2500.0, outliers="paper"), hazard=2.5e-3,
                                forgetting=0.9)
    ours.fit(y), paper.fit(y)  # compiled (or loaded from the cache) before timing
    base = timed(lambda: ours.fit(y), repeats)
    rows: list[tuple[str, Timing | None, str]] = [
        ("possibly, default detector (baseline)", base, ""),
        ("possibly, the paper's model", timed(lambda: paper.fit(y), repeats), "")]
    sigma = float(ps.changepoint.estimate_sigma(y))
    for name, fn in changepoint_peers(y, sigma).items():
        t, note = run_peer(fn, 1 if name.startswith("bocpd") else repeats)
        rows.append((name, t, note))
    report(f"well log, {y.size} points; medians of {repeats}", base, rows)


def long_series_table(n: int, repeats: int, budget: float) -> None:
    y, _, _ = ps.datasets.piecewise_constant(n, n_changes=max(1, n // 10_000),
                                             outlier_rate=0.01, seed=1)
    small = y[: n // 10]
    det = ChangepointDetector()
    det.fit(small)
    base = timed(lambda: det.fit(y), repeats)
    rows: list[tuple[str, Timing | None, str]] = [("possibly, default detector", base, "")]
    for name, fn in changepoint_peers(y, 1.0).items():
        probe, note = run_peer(changepoint_peers(small, 1.0)[name], 1)
        if probe is None:
            rows.append((name, None, note))
        elif 10 * probe[0] > budget:
            rows.append((name, None, f"skipped: {probe[0]:.1f} s at {small.size} points "
                                     f"predicts > {budget:g} s"))
        else:
            rows.append((name, timed(fn, 1), "1 run"))
    report(f"{n} points, a change every 10⁴, 1% outliers; ours: medians of {repeats}",
           base, rows)


def kalman_table(repeats: int, series: int = 500, steps: int = 250) -> None:
    from possibly.experiments.kalman_study import simulate

    model = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    F, Q, H, R = (np.asarray(m, dtype=float) for m in model)
    _, ys, _ = simulate(series, seed=0, T=steps)
    x0, P0 = np.array([0.0, 0.1]), np.diag([1.0, 0.1])
    prior = ps.MultivariateNormal(x0, np.linalg.inv(P0))
    standard = ps.KalmanFilter(F, Q, H, R, robust=False)
    robust = ps.KalmanFilter(F, Q, H, R)
    load_kalman_loops(model)  # "auto": the compiled loops, as once they are loaded
    standard.filter(ys, prior=prior), robust.filter(ys, prior=prior)
    base = timed(lambda: standard.filter(ys, prior=prior), repeats)
    rows: list[tuple[str, Timing | None, str]] = [
        ("possibly standard, batched (baseline)", base, ""),
        ("possibly robust, batched", timed(lambda: robust.filter(ys, prior=prior), repeats),
         ""),
        ("possibly robust default (robust start)", timed(lambda: robust.filter(ys), repeats),
         "no prior given")]
    ref = standard.filter(ys, prior=prior).mean

    def simd() -> np.ndarray:
        import simdkalman

        kf = simdkalman.KalmanFilter(F, Q, H, R)
        r = kf.compute(ys, 0, initial_value=x0, initial_covariance=P0, smoothed=False,
                       filtered=True, states=True, covariances=False, observations=False)
        return r.filtered.states.mean

    def filterpy_loop(k: int = series) -> np.ndarray:
        from filterpy.kalman import KalmanFilter as FP

        out = np.empty((k, steps, 2))
        for i in range(k):
            kf = FP(dim_x=2, dim_z=1)
            kf.F, kf.Q, kf.H, kf.R, kf.x, kf.P = F, Q, H, R, x0.copy(), P0.copy()
            for t in range(steps):
                if t:  # the prior is on the first state
                    kf.predict()
                kf.update(ys[i, t])
                out[i, t] = kf.x
        return out

    def pykalman_loop(k: int) -> np.ndarray:
        from pykalman import KalmanFilter as PK

        kf = PK(F, H, Q, R, initial_state_mean=x0, initial_state_covariance=P0)
        return np.stack([kf.filter(ys[i])[0] for i in range(k)])

    for name, fn, reps, scale in (
            ("simdkalman, batched (filter only)", simd, repeats, 1.0),
            ("filterpy, loop over series", filterpy_loop, 1, 1.0),
            ("pykalman, loop (50 series, scaled)", lambda: pykalman_loop(50), 1, series / 50)):
        t, note = run_peer(fn, reps)
        if t is not None:
            got = fn()
            agree = np.allclose(got, ref[: len(got)], rtol=1e-6, atol=1e-6)
            note = f"agrees with ours: {agree}"
            t = (t[0] * scale, t[1] * scale, t[2] * scale)
        rows.append((name, t, note))
    report(f"Kalman filter, {series} series × {steps} steps (NCV, 10% outliers); "
           f"ours: medians of {repeats}", base, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--budget", type=float, default=120.0)
    parser.add_argument("--skip", choices=["well-log", "long", "kalman"], action="append",
                        default=[])
    args = parser.parse_args(argv)
    if "well-log" not in args.skip:
        well_log_table(args.repeats)
    if "long" not in args.skip:
        long_series_table(args.n, max(1, args.repeats // 2), args.budget)
    if "kalman" not in args.skip:
        kalman_table(args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
