"""``period="auto"`` against ``period=None``: same results off cycles, quality, and its cost.

Run as ``python benchmarks/bench_period_auto.py [--seeds N] [--repeats R]``.

For every scenario of :data:`possibly.datasets.SYNTHETIC_SUITE` (seeds ``0..N-1``), the well
log, and every stream of :data:`possibly.datasets.STREAMING_SUITE` (seed 0, with its time
index), ``ChangepointDetector(period="auto").fit(y)`` is compared with
``ChangepointDetector().fit(y)``: the periods inferred, whether every output (change points,
outliers, discounts, anomaly) is bit for bit the same, and the change-point F1 (margin 5) and
covering of both on the synthetic suite (the scores of ``bench_changepoint_quality.py``). The
cost of the inference: ``infer_period`` timed alone and the fit without it (best of
``repeats``), their ratio per series. Public annotated collections are NOT used.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from timing import best_of

import possibly as ps
from possibly import datasets
from possibly.changepoint import infer_period
from possibly.changepoint.metrics import covering, f1_score

MARGIN = 5


def same(a: ps.ChangepointResult, b: ps.ChangepointResult) -> bool:
    """Whether two results agree bit for bit on every per-record output."""
    pairs = [(a.changepoints, b.changepoints), (a.outliers, b.outliers),
             (a.discount, b.discount), (a.log_consistency, b.log_consistency),
             (a.mean, b.mean), (a.log_online_change_possibility,
                                b.log_online_change_possibility),
             (a.anomaly, b.anomaly)]
    return all(np.array_equal(x, y, equal_nan=True) for x, y in pairs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    ps.ChangepointDetector().fit(np.arange(300.0) % 7)  # compile/load once

    print(f"## synthetic suite, seeds 0..{args.seeds - 1}: default vs period='auto'")
    print(f"{'scenario':<24} {'periods found':>14} {'identical':>10} {'F1 none':>8} "
          f"{'F1 auto':>8} {'cov none':>9} {'cov auto':>9} {'infer/fit':>10}")
    for name, gen in datasets.SYNTHETIC_SUITE.items():
        found, identical, f1 = 0, 0, {"none": [], "auto": []}
        cov: dict[str, list[float]] = {"none": [], "auto": []}
        ratios = []
        for seed in range(args.seeds):
            y, truth = gen(seed=seed)
            res = {kind: ps.ChangepointDetector(period=None if kind == "none" else "auto").fit(y)
                   for kind in ("none", "auto")}
            found += res["auto"].period is not None
            identical += same(res["none"], res["auto"])
            for kind, r in res.items():
                f1[kind].append(f1_score(truth.changepoints, r.changepoints, margin=MARGIN))
                cov[kind].append(covering(truth.changepoints, r.changepoints, len(y)))
            if y.ndim == 1:
                t_inf = best_of(lambda y=y: infer_period(y), args.repeats)
                t_fit = best_of(lambda y=y: ps.ChangepointDetector().fit(y), args.repeats)
                ratios.append(t_inf / t_fit)
        ratio = f"{np.median(ratios):>10.3f}" if ratios else f"{'n/a':>10}"
        print(f"{name:<24} {found:>8d}/{args.seeds:<5d} {identical:>5d}/{args.seeds:<4d} "
              f"{np.mean(f1['none']):>8.3f} {np.mean(f1['auto']):>8.3f} "
              f"{np.mean(cov['none']):>9.3f} {np.mean(cov['auto']):>9.3f} {ratio}")

    y = np.asarray(datasets.well_log(), dtype=float)
    a, b = ps.ChangepointDetector().fit(y), ps.ChangepointDetector(period="auto").fit(y)
    t_inf = best_of(lambda: infer_period(y), args.repeats)
    t_fit = best_of(lambda: ps.ChangepointDetector().fit(y), args.repeats)
    print(f"\nwell log: period {b.period}, identical {same(a, b)}, infer {t_inf * 1e3:.2f} ms, "
          f"fit {t_fit * 1e3:.2f} ms, ratio {t_inf / t_fit:.3f}")

    print("\n## streaming suite, seed 0, with the time index: the periods inferred")
    print(f"{'scenario':<22} {'n':>6} {'periods':>16} {'period_':>8} {'infer ms':>9} "
          f"{'fit ms':>8} {'ratio':>6} {'#cp none':>9} {'#cp auto':>9}")
    for name, gen in datasets.STREAMING_SUITE.items():
        series, _ = gen(seed=0)
        s = series.to_pandas()
        det = ps.ChangepointDetector(period="auto")
        r_auto = det.fit(s)
        r_none = ps.ChangepointDetector().fit(s)
        t_inf = best_of(lambda s=s: infer_period(s.to_numpy(), s.index), args.repeats)
        t_fit = best_of(lambda s=s: ps.ChangepointDetector().fit(s), args.repeats)
        periods = "none" if det.periods_ is None else "/".join(f"{p:g}" for p in det.periods_)
        print(f"{name:<22} {len(s):>6d} {periods:>16} {det.period_!s:>8} "
              f"{t_inf * 1e3:>9.2f} {t_fit * 1e3:>8.2f} {t_inf / t_fit:>6.3f} "
              f"{r_none.changepoints.size:>9d} {r_auto.changepoints.size:>9d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
