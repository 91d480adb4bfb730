"""``period="auto"`` (the default) against ``period=None``: same results off cycles, quality,
the rates of false and found periods, and the cost of the inference.

Run as ``python benchmarks/bench_period_auto.py [--seeds N] [--repeats R] [--rates N]
[--big]``.

For every scenario of :data:`possibly.datasets.SYNTHETIC_SUITE` (seeds ``0..N-1``), the well
log, and every stream of :data:`possibly.datasets.STREAMING_SUITE` (seed 0, with its time
index), ``ChangepointDetector().fit(y)`` (``period="auto"``) is compared with
``ChangepointDetector(period=None).fit(y)``: the periods inferred, whether every output (change
points, outliers, discounts, anomaly) is bit for bit the same, and the change-point F1 (margin
5) and covering of both on the synthetic suite (the scores of ``bench_changepoint_quality.py``).
The cost of the inference: ``infer_period`` timed alone against the fit with ``period=None``
(best of ``repeats`` each, same process), their ratio per series: the median and the range
over the seeds. Then the same ratio on a random walk with a level shift of 10⁴ to 10⁶ points
(10⁷ with ``--big``) without a time index. Last, the rates (``--rates`` series each): periods
found on series without a cycle (white noise, AR(1), random walks with and without level
shifts, of 100 to 4096 points), periods found on sinusoids and square waves in noise, and
how often the week is accepted in hourly data with a daily cycle, with and without a weekly
change of the daily swing.
Public annotated collections are NOT used.
"""

from __future__ import annotations

import argparse
import datetime
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


def spread(ratios: list[float]) -> str:
    """The median ratio and its range, as ``0.05 [0.03–0.08]``."""
    if not ratios:
        return "n/a"
    return f"{np.median(ratios):.3f} [{min(ratios):.3f}–{max(ratios):.3f}]"


def cost_ratio(y: np.ndarray, repeats: int, index=None) -> tuple[float, float]:
    """``infer_period`` and the fit with ``period=None``, seconds (best of ``repeats``)."""
    t_inf = best_of(lambda: infer_period(y, index), repeats)
    data = y if index is None else _series(y, index)
    t_fit = best_of(lambda: ps.ChangepointDetector(period=None).fit(data), repeats)
    return t_inf, t_fit


def _series(y, index):
    import pandas as pd

    return pd.Series(y, index=index)


def suite_table(seeds: int, repeats: int) -> None:
    print(f"## synthetic suite, seeds 0..{seeds - 1}: period=None vs the default 'auto'")
    print(f"{'scenario':<24} {'periods found':>14} {'identical':>10} {'F1 none':>8} "
          f"{'F1 auto':>8} {'cov none':>9} {'cov auto':>9}  infer/fit [range]")
    for name, gen in datasets.SYNTHETIC_SUITE.items():
        found, identical, f1 = 0, 0, {"none": [], "auto": []}
        cov: dict[str, list[float]] = {"none": [], "auto": []}
        ratios = []
        for seed in range(seeds):
            y, truth = gen(seed=seed)
            res = {"none": ps.ChangepointDetector(period=None).fit(y),
                   "auto": ps.ChangepointDetector().fit(y)}
            found += res["auto"].period is not None
            identical += same(res["none"], res["auto"])
            for kind, r in res.items():
                f1[kind].append(f1_score(truth.changepoints, r.changepoints, margin=MARGIN))
                cov[kind].append(covering(truth.changepoints, r.changepoints, len(y)))
            if y.ndim == 1:
                t_inf, t_fit = cost_ratio(y, repeats)
                ratios.append(t_inf / t_fit)
        print(f"{name:<24} {found:>8d}/{seeds:<5d} {identical:>5d}/{seeds:<4d} "
              f"{np.mean(f1['none']):>8.3f} {np.mean(f1['auto']):>8.3f} "
              f"{np.mean(cov['none']):>9.3f} {np.mean(cov['auto']):>9.3f}  {spread(ratios)}")

    y = np.asarray(datasets.well_log(), dtype=float)
    a, b = ps.ChangepointDetector(period=None).fit(y), ps.ChangepointDetector().fit(y)
    ratios, t_inf, t_fit = [], 0.0, 0.0
    for _ in range(3):
        t_inf, t_fit = cost_ratio(y, repeats)
        ratios.append(t_inf / t_fit)
    print(f"\nwell log: period {b.period}, identical {same(a, b)}, infer {t_inf * 1e3:.2f} ms, "
          f"fit {t_fit * 1e3:.2f} ms, ratio {spread(ratios)} (3 runs)")


def streaming_table(repeats: int) -> None:
    print("\n## streaming suite, seed 0, with the time index: the periods inferred")
    print(f"{'scenario':<22} {'n':>6} {'periods':>16} {'period_':>8} {'infer ms':>9} "
          f"{'fit ms':>8} {'ratio':>6} {'#cp none':>9} {'#cp auto':>9}")
    for name, gen in datasets.STREAMING_SUITE.items():
        series, _ = gen(seed=0)
        s = series.to_pandas()
        det = ps.ChangepointDetector()
        r_auto = det.fit(s)
        r_none = ps.ChangepointDetector(period=None).fit(s)
        t_inf, t_fit = cost_ratio(s.to_numpy(), repeats, s.index)
        periods = "none" if det.periods_ is None else "/".join(f"{p:g}" for p in det.periods_)
        print(f"{name:<22} {len(s):>6d} {periods:>16} {det.period_!s:>8} "
              f"{t_inf * 1e3:>9.2f} {t_fit * 1e3:>8.2f} {t_inf / t_fit:>6.3f} "
              f"{r_none.changepoints.size:>9d} {r_auto.changepoints.size:>9d}")


def long_table(repeats: int, big: bool) -> None:
    print("\n## a random walk with a level shift, no time index: infer_period / fit(None)")
    print(f"{'n':>10} {'infer ms':>9} {'fit ms':>10} {'ratio':>7} {'period':>7}")
    for n in (10**4, 10**5, 10**6) + ((10**7,) if big else ()):
        rng = np.random.default_rng(n)
        y = np.cumsum(rng.normal(size=n))
        y[n // 2:] += 20.0
        reps = repeats if n <= 10**5 else 1
        t_inf, t_fit = cost_ratio(y, reps)
        print(f"{n:>10d} {t_inf * 1e3:>9.2f} {t_fit * 1e3:>10.1f} {t_inf / t_fit:>7.4f} "
              f"{infer_period(y)!s:>7}")


def _ar1(e: np.ndarray, phi: float) -> np.ndarray:
    out = np.empty_like(e)
    out[0] = e[0]
    for i in range(1, e.size):
        out[i] = phi * out[i - 1] + e[i]
    return out


def rates_table(count: int) -> None:
    print(f"\n## periods found, {count} series each (values only, no time index)")
    print(f"{'series':<26} " + " ".join(f"{n:>6d}" for n in (100, 300, 1000, 4096)))
    kinds = {
        "white noise": lambda e, rng: e,
        "AR(1) 0.5": lambda e, rng: _ar1(e, 0.5),
        "AR(1) 0.9": lambda e, rng: _ar1(e, 0.9),
        "random walk": lambda e, rng: np.cumsum(e),
        "level shifts": lambda e, rng: e + np.repeat(rng.normal(0, 5, 5), e.size // 5 + 1)[
            :e.size],
        "random walk + shifts": lambda e, rng: np.cumsum(e) + np.repeat(
            rng.normal(0, 5, 5), e.size // 5 + 1)[:e.size],
    }
    for name, make in kinds.items():
        row = []
        for n in (100, 300, 1000, 4096):
            rng = np.random.default_rng(n)
            row.append(sum(infer_period(make(rng.normal(size=n), rng)) is not None
                           for _ in range(count)))
        print(f"{name:<26} " + " ".join(f"{c:>6d}" for c in row))
    print(f"\n{'cycle in noise (found right)':<26} " + " ".join(
        f"{n:>6d}" for n in (100, 300, 1000, 4096)))
    for shape in ("sine", "square"):
        for amplitude in (0.5, 1.0, 3.0):
            row = []
            for n in (100, 300, 1000, 4096):
                rng = np.random.default_rng(n + 7)
                right = 0
                for _ in range(count):
                    period = int(rng.integers(4, n // 4 + 1))
                    wave = np.sin(2 * np.pi * np.arange(n) / period + rng.uniform(0, 6.3))
                    if shape == "square":
                        wave = np.sign(wave)
                    found = infer_period(amplitude * wave + rng.normal(size=n))
                    right += found is not None and abs(found[0] - period) <= 1
                row.append(right)
            print(f"{shape + f' amplitude {amplitude:g} sd':<26} "
                  + " ".join(f"{c:>6d}" for c in row))


def week_table(count: int) -> None:
    """Hourly series with a daily cycle (5 noise sd): how often the week is accepted, without
    a weekly cycle (false) and with a daily swing 40% smaller on weekends (found)."""
    step = datetime.timedelta(hours=1)
    weeks = (2, 3, 4, 8, 16)
    print(f"\n## the week found in hourly data with a daily cycle, {count} series each; "
          "columns: weeks of data")
    print(f"{'series':<32} " + " ".join(f"{w:>6d}" for w in weeks))

    def day_amplitude(e: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.repeat(rng.normal(0.0, 0.3, e.size // 24 + 1), 24)[:e.size]

    kinds = {
        "white noise": (lambda e, rng: e, None),
        "AR(1) 0.9": (lambda e, rng: _ar1(e, 0.9), None),
        "random walk (steps 0.2 sd)": (lambda e, rng: e + np.cumsum(rng.normal(0, 0.2, e.size)),
                                       None),
        "level shifts every 100 steps": (lambda e, rng: e + np.repeat(
            rng.normal(0, 3, e.size // 100 + 1), 100)[:e.size], None),
        "day's swing random (30% sd)": (lambda e, rng: e, day_amplitude),
        "Student t3 noise": (lambda e, rng: rng.standard_t(3, e.size), None),
        "weekends 40% smaller (found)": (lambda e, rng: e, "weekend"),
    }
    for name, (noise, swing) in kinds.items():
        row = []
        for w in weeks:
            rng = np.random.default_rng(1000 + w)
            t = np.arange(168 * w)
            found = 0
            for _ in range(count):
                amplitude = np.ones(t.size)
                if swing == "weekend":
                    amplitude = np.where((t // 24) % 7 >= 5, 0.6, 1.0)
                elif swing is not None:
                    amplitude = 1.0 + swing(t, rng)
                y = 10 + 5 * amplitude * np.sin(2 * np.pi * t / 24) + noise(
                    rng.normal(size=t.size), rng)
                periods = infer_period(y, step)
                found += periods is not None and 168.0 in periods
            row.append(found)
        print(f"{name:<32} " + " ".join(f"{c:>6d}" for c in row))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rates", type=int, default=100, help="series per rate (0: none)")
    parser.add_argument("--big", action="store_true", help="also 10^7 points")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    ps.ChangepointDetector().fit(np.arange(300.0) % 7)  # compile/load once
    suite_table(args.seeds, args.repeats)
    streaming_table(args.repeats)
    long_table(args.repeats, args.big)
    if args.rates:
        rates_table(args.rates)
        week_table(args.rates)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
