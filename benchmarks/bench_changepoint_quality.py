"""Change-point quality on the synthetic suite: F1 (margin 5) and covering, and time.

Run as ``python benchmarks/bench_changepoint_quality.py [--seeds N] [--scenario NAME ...]``.

Per scenario of :data:`possibly.datasets.SYNTHETIC_SUITE` and per seed, every method gets the
raw series (nothing is standardised for it) and its change points are scored with
:func:`possibly.changepoint.metrics.f1_score` and :func:`possibly.changepoint.metrics.covering`
(van den Burg & Williams, 2020). The table shows the mean over seeds and, in brackets, the
standard error of that mean; the time is the median over seeds of one fit (seconds, same
process).

Methods (each with its package's defaults, as a new user would call it):

* ``possibly default``: ``ps.ChangepointDetector()`` as it is on this branch (the default:
  ``model_family()`` with ``forgetting=1``, ``tol=0.4 hazard``; ``MultivariateNormalSegments()``
  on a vector series), so it should equal ``segments (new)``;
* ``possibly paper``: the paper's §5.3 model and recursion explicitly,
  ``model=NormalMean("auto", outliers="paper")`` (σ from the series), ``hazard=2.5e-3``,
  ``forgetting=0.9`` (an earlier default); ``possibly normal``: the same model with
  its default evidence floor (``NormalMean("auto")``);
* ``segments (new)``: ``ChangepointDetector(model=model_family(), forgetting=1.0, tol=1e-3)``
  (``model_family()`` = ``[NormalMeanVariance(), PolynomialTrend(1), PolynomialTrend(2)]``):
  constant level, linear and quadratic trends with unknown noise precision competing per
  segment, integrated evidence, scale-free priors, runs below ``0.4 hazard`` pruned;
  ``segments tol 1e-12``: the same with the paper model's pruning (every run kept);
  ``segments profile``: the family with the profile (sup) evidence; ``segments level+var``:
  ``NormalMeanVariance()`` alone (both with ``tol=1e-12``); on vector series ``segments (new)`` is
  ``MultivariateNormalSegments()``;
* ``ruptures Pelt`` / ``ruptures Binseg``: ``model="l2"`` (the default cost), with the
  BIC-style penalty ``pen = 2 σ̂² log(n) · dim`` for a mean change with noise variance σ̂²
  (σ̂ = MAD of first differences / √2, per dimension, the usual robust estimate);
* ``bocpd`` (PyPI ``bayesian-changepoint-detection``): the Adams & MacKay recursion with its
  README's Student-t prior (``alpha=0.1, beta=0.01, kappa=1, mu=0``) and hazard 1/250, change
  points read off by backtracking the MAP run length from the end.

Vector series are given to the methods that accept them (ruptures); the others are marked
``n/a``. Public annotated benchmark collections are NOT used here (they are reserved for
independent evaluation).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np

import possibly as ps
from possibly import datasets
from possibly.changepoint import (
    MultivariateNormalSegments,
    NormalMean,
    NormalMeanVariance,
    model_family,
)
from possibly.changepoint.metrics import covering, f1_score

MARGIN = 5


def _robust_noise_sd(y: np.ndarray) -> np.ndarray:
    d = np.diff(y, axis=0)
    mad = np.median(np.abs(d - np.median(d, axis=0)), axis=0)
    return np.maximum(1.4826 * mad / np.sqrt(2.0), 1e-12)


def possibly_default(y: np.ndarray) -> np.ndarray:
    return ps.ChangepointDetector().fit(y).changepoints


def possibly_paper(y: np.ndarray) -> np.ndarray:
    return ps.ChangepointDetector(model=NormalMean("auto", outliers="paper"), hazard=2.5e-3,
                                  forgetting=0.9).fit(y).changepoints


def possibly_normal(y: np.ndarray) -> np.ndarray:
    return ps.ChangepointDetector(model=NormalMean("auto"), hazard=2.5e-3,
                                  forgetting=0.9).fit(y).changepoints


#: the recommended configuration: runs below 0.4 hazard pruned (bounds the cost)
RECOMMENDED_TOL = 1e-3


def possibly_segments(y: np.ndarray) -> np.ndarray:
    if y.ndim == 2:
        return ps.ChangepointDetector(model=MultivariateNormalSegments(),
                                      forgetting=1.0).fit(y).changepoints
    return ps.ChangepointDetector(model=model_family(), forgetting=1.0,
                                  tol=RECOMMENDED_TOL).fit(y).changepoints


def possibly_segments_exact(y: np.ndarray) -> np.ndarray:
    return ps.ChangepointDetector(model=model_family(), forgetting=1.0,
                                  tol=1e-12).fit(y).changepoints


def possibly_segments_profile(y: np.ndarray) -> np.ndarray:
    return ps.ChangepointDetector(model=model_family(evidence="profile"),
                                  forgetting=1.0, tol=1e-12).fit(y).changepoints


def possibly_level_variance(y: np.ndarray) -> np.ndarray:
    return ps.ChangepointDetector(model=NormalMeanVariance(), forgetting=1.0,
                                  tol=1e-12).fit(y).changepoints


def _ruptures(algo_name: str) -> Callable[[np.ndarray], np.ndarray]:
    def run(y: np.ndarray) -> np.ndarray:
        import ruptures as rpt

        signal = y.reshape(len(y), -1)
        pen = float(2.0 * np.sum(_robust_noise_sd(signal) ** 2) * np.log(len(y)))
        algo = getattr(rpt, algo_name)(model="l2").fit(signal)
        bkps = algo.predict(pen=pen)
        return np.asarray(bkps[:-1], dtype=np.int64)  # the last one is len(y)

    run.__name__ = f"ruptures_{algo_name}"
    return run


def bocpd_package(y: np.ndarray) -> np.ndarray:
    from bayesian_changepoint_detection.online_changepoint_detection import (
        StudentT,
        constant_hazard,
        online_changepoint_detection,
    )

    lik = StudentT(alpha=0.1, beta=0.01, kappa=1.0, mu=0.0)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        R, _ = online_changepoint_detection(y, lambda r: constant_hazard(250, r), lik)
    # R[r, t]: run length r after t observations; backtrack the MAP run lengths from the end
    cps = []
    t = len(y)
    while t > 0:
        col = np.nan_to_num(R[: t + 1, t], nan=-1.0)
        start = t - int(np.argmax(col))
        if start <= 0 or start >= t:
            start = max(start, 0)
            if start == 0:
                break
            t -= 1  # a run of length 0 here: step back without a change point
            continue
        cps.append(start)
        t = start
    return np.asarray(sorted(cps), dtype=np.int64)


METHODS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], bool]] = {
    # name -> (function, accepts vector series)
    "possibly default": (possibly_default, True),
    "possibly paper": (possibly_paper, False),
    "possibly normal": (possibly_normal, False),
    "segments (new)": (possibly_segments, True),
    "segments tol 1e-12": (possibly_segments_exact, False),
    "segments profile": (possibly_segments_profile, False),
    "segments level+var": (possibly_level_variance, False),
    "ruptures Pelt": (_ruptures("Pelt"), True),
    "ruptures Binseg": (_ruptures("Binseg"), True),
    "bocpd (bcd)": (bocpd_package, False),
}


def evaluate(method: Callable[[np.ndarray], np.ndarray], y: np.ndarray,
             truth: datasets.ChangepointTruth) -> tuple[float, float, float, int]:
    start = time.perf_counter()
    cps = method(y)
    elapsed = time.perf_counter() - start
    n = len(y)
    cps = np.asarray(cps, dtype=np.int64)
    cps = cps[(cps > 0) & (cps < n)]
    return (f1_score(truth.changepoints, cps, margin=MARGIN),
            covering(truth.changepoints, cps, n), elapsed, int(cps.size))


def _fmt(values: list[float]) -> str:
    a = np.asarray(values)
    se = a.std(ddof=1) / np.sqrt(a.size) if a.size > 1 else 0.0
    return f"{a.mean():.2f} ({se:.2f})"


def well_log_table(repeats: int) -> None:
    """Change points, rapid events called, and the best-of-``repeats`` time of one fit on the
    well log, with the ratio to the paper's level-only model (``possibly paper``)."""
    from timing import best_of

    from possibly.experiments.changepoint_study import RAPID_EVENTS

    y = datasets.well_log()
    rows = {m: METHODS[m][0] for m in METHODS if not m.startswith("bocpd")}  # O(n²) memory
    for tol in (1e-6, 1e-4):
        rows[f"segments, tol {tol:g}"] = (
            lambda y, tol=tol: ps.ChangepointDetector(model=model_family(), forgetting=1.0,
                                                      tol=tol).fit(y).changepoints)
    for fn in rows.values():
        fn(y)  # compile / warm up
    base = best_of(lambda: possibly_paper(y), repeats)
    print(f"\n## well log (4050 points): rapid events called within 5 steps; best of {repeats} "
          f"fits; ratio to the paper's level-only model")
    for name, fn in rows.items():
        cps = np.asarray(fn(y))
        called = sum(bool(np.any(np.abs(cps - e) <= 5)) for e in RAPID_EVENTS)
        best = best_of(lambda fn=fn: fn(y), repeats)
        print(f"{name:<30} {cps.size:>4} change points, rapid events {called}/4, "
              f"{best * 1e3:9.1f} ms, {best / base:7.1f}x")


def add_spikes(y: np.ndarray, truth: datasets.ChangepointTruth, rate: float, seed: int
               ) -> np.ndarray:
    """A copy of the scalar series ``y`` with ``rate · n`` spikes of 10 to 100 times its
    1.4826 · MAD (random sign, log-uniform size), away from the change points and the ends."""
    rng = np.random.default_rng(500 + seed)
    n = len(y)
    finite = y[np.isfinite(y)]
    scale = 1.4826 * float(np.median(np.abs(finite - np.median(finite))))
    starts = np.r_[0, truth.changepoints]
    allowed = np.setdiff1d(np.arange(1, n - 1), np.r_[starts, starts - 1, starts + 1])
    at = rng.choice(allowed, size=max(1, int(rate * n)), replace=False)
    out = np.array(y, dtype=np.float64)
    out[at] += rng.choice([-1.0, 1.0], at.size) * 10.0 ** rng.uniform(1.0, 2.0, at.size) * scale
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per scenario (0..N-1)")
    parser.add_argument("--scenario", nargs="*", default=sorted(datasets.SYNTHETIC_SUITE),
                        choices=sorted(datasets.SYNTHETIC_SUITE))
    parser.add_argument("--method", nargs="*", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--well-log", action="store_true", help="also run the well log")
    parser.add_argument("--repeats", type=int, default=5, help="timing repeats (well log)")
    parser.add_argument("--spikes", type=float, default=0.0,
                        help="add this fraction of gross spikes to the scalar series (add_spikes)")
    args = parser.parse_args()

    totals: dict[str, dict[str, list[float]]] = {m: {"f1": [], "cover": []} for m in args.method}
    print(f"F1 (margin {MARGIN}) and covering: mean over seeds 0..{args.seeds - 1} "
          f"(standard error); time: median seconds per fit; #cp: mean number found")
    for name in args.scenario:
        gen = datasets.SYNTHETIC_SUITE[name]
        data = [gen(seed=s) for s in range(args.seeds)]
        if args.spikes > 0:
            data = [(add_spikes(y, t, args.spikes, s) if y.ndim == 1 else y, t)
                    for s, (y, t) in enumerate(data)]
        n_true = np.mean([t.changepoints.size for _, t in data])
        print(f"\n## {name}  (n = {data[0][0].shape[0]}, {n_true:g} true change points)")
        print(f"{'method':<20} {'F1':>12} {'covering':>12} {'time s':>9} {'#cp':>6}")
        for m in args.method:
            fn, vector_ok = METHODS[m]
            if data[0][0].ndim > 1 and not vector_ok:
                print(f"{m:<20} {'n/a':>12} {'n/a':>12}")
                continue
            rows = [evaluate(fn, y, truth) for y, truth in data]
            f1s, covs, times, ncp = (list(c) for c in zip(*rows, strict=True))
            totals[m]["f1"].append(float(np.mean(f1s)))
            totals[m]["cover"].append(float(np.mean(covs)))
            print(f"{m:<20} {_fmt(f1s):>12} {_fmt(covs):>12} {np.median(times):>9.4f} "
                  f"{np.mean(ncp):>6.1f}")
    print("\n## mean over the scenarios each method ran")
    for m in args.method:
        if totals[m]["f1"]:
            print(f"{m:<20} F1 {np.mean(totals[m]['f1']):.3f}  covering "
                  f"{np.mean(totals[m]['cover']):.3f}  ({len(totals[m]['f1'])} scenarios)")
    if args.well_log:
        well_log_table(args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
