"""Streaming anomaly detection on the synthetic streaming suite: one threshold for all streams.

Run as ``python benchmarks/bench_streaming.py [--tune 0 1 2 3 4] [--test 5 6 7 8 9]
[--method NAME ...] [--scenario NAME ...]``.

Every method turns each stream of :data:`possibly.datasets.STREAMING_SUITE` into a causal
per-record score (the score of record t uses records 0..t only), in one process, on the raw
values. The first eighth of each stream is its warm-up: its scores are not scored (NaN), and
the methods that need a scale or a baseline (CAPA, the river drift detectors, BOCPD's prior)
take it from the warm-up only (the windows start after the first quarter). An alarm is an
upward crossing of the threshold; :func:`possibly.changepoint.metrics.best_threshold` picks
the one threshold, for all streams of all scenarios together, that maximises
:func:`possibly.changepoint.metrics.streaming_score` (scaled-sigmoid reward, standard weights
1 / 0.11 / 1) on the tuning seeds; the held-out seeds are scored at that threshold (``sd``:
the standard deviation of the score of each held-out seed's streams at that threshold). Window
precision/recall: a window is detected when an alarm falls inside it; precision counts the
alarms outside every window. ``quiet threshold``: a second protocol, the lowest threshold at
which the tuning seeds' clean streams (those without a window) raise no alarm, applied to the
held-out seeds (what a team does that sets its threshold on streams it knows are clean).
``top in window``: the fraction of labelled held-out streams whose
highest score falls in a window (the ranking within a stream, whatever the threshold). Cost:
µs per record of the whole per-stream computation (median over the streams; vectorised
methods are cheap here, streaming per-record calls cost more: ``update()`` is timed apart).

Methods:

* ``windowed gaussian``: |y − mean| / sd over the trailing 500 records (current one excluded);
* ``|y - past mean| pct``: the causal percentile rank, within the stream, of |y − mean of all
  past records| among the past values of the same statistic;
* ``bocpd``: Adams & MacKay's recursion (Normal-Gamma segments, Student-t predictive, hazard
  1/250, prior centred and scaled on the warm-up, the 300 most probable run lengths kept);
  score: the drop of the MAP run length, ``max(0, 1 − m_t / (m_{t−1} + 1))``;
* ``skchange CAPA``: fitted on the standardised warm-up (its baseline), run once on the
  standardised stream; score of record t: the largest penalised saving of the segment and
  point anomalies ending at t that its dynamic programme evaluated (only records ≤ t enter);
* ``river HST``: ``MinMaxScaler() | HalfSpaceTrees(seed=42)``, ``score_one`` then ``learn_one``;
* ``river ADWIN / PageHinkley / KSWIN``: on the standardised stream, default parameters;
  score 1 where ``drift_detected``, else 0 (so the threshold only switches them on or off);
* ``possibly 1-discount``, ``possibly change poss.``, ``possibly max``: today's default
  family with its priors from the warm-up, ``ChangepointDetector(model=model_family(
  prior=automatic_prior(warm_up))).fit(y)`` (the same numbers as ``update`` record by record):
  1 − the discount, the online change possibility (the possibility, right after record t,
  that a segment starts at t), and their maximum; ``possibly max, not causal``: the same
  with ``ChangepointDetector().fit(y)``, whose default priors come from the whole stream
  (a reference only: it sees the future);
* ``possibly anomaly``: the calibrated anomaly signal (``info.anomaly`` of ``update``) of the
  default detector with ``period="auto"``: ``ChangepointDetector(period="auto").fit(warm_up)``
  on the warm-up as a pandas Series with its time stamps (the priors and the periods come from
  it: a period only when the warm-up holds two full cycles; the periods are inferred again as
  the stream grows), then ``update`` with each record of the rest;
  ``possibly anomaly, day given``: the streaming detector above with ``period`` = a day in
  records given by hand (from the series' time step); ``possibly anomaly, no period``: the
  same without a period (the segment model's surprise, ranked).

Public annotated anomaly collections are NOT used (they are reserved for independent
evaluation).
"""

from __future__ import annotations

import argparse
import bisect
import time
import warnings
from collections.abc import Callable

import numpy as np

import possibly as ps
from possibly import datasets
from possibly.changepoint import automatic_prior, model_family
from possibly.changepoint.metrics import (
    StreamingScore,
    alarm_indices,
    best_threshold,
    streaming_score,
)

WARMUP_FRACTION = 8  # the first n // 8 records of each stream are its warm-up
GAUSSIAN_WINDOW = 500
BOCPD_HAZARD = 1.0 / 250.0
BOCPD_MAX_RUNS = 300


def _warmup(n: int) -> int:
    return n // WARMUP_FRACTION


def _standardised(y: np.ndarray) -> np.ndarray:
    """``(y − median) / scale`` with the median and scale of the warm-up (MAD, else sd, else
    1: quantised metrics often have a MAD of 0)."""
    w = y[:_warmup(len(y))]
    med = float(np.median(w))
    scale = 1.4826 * float(np.median(np.abs(w - med)))
    if scale <= 0:
        scale = float(np.std(w)) or 1.0
    return (y - med) / scale


# ----------------------------------------------------------------------------------------------
# baselines written here


def windowed_gaussian(y: np.ndarray) -> np.ndarray:
    n = len(y)
    c1 = np.concatenate([[0.0], np.cumsum(y)])
    c2 = np.concatenate([[0.0], np.cumsum(y * y)])
    t = np.arange(n)
    lo = np.maximum(t - GAUSSIAN_WINDOW, 0)
    count = t - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (c1[t] - c1[lo]) / count
        var = np.maximum((c2[t] - c2[lo]) / count - mean * mean, 0.0)
        z = np.abs(y - mean) / np.sqrt(var)
    z[np.isnan(z)] = 0.0  # 0 / 0: a value equal to a constant window
    return np.minimum(z, 1e6)  # x / 0: capped (a plateau left)


def past_mean_percentile(y: np.ndarray) -> np.ndarray:
    n = len(y)
    past_mean = np.concatenate([[y[0]], np.cumsum(y)[:-1] / np.arange(1, n)])
    dev = np.abs(y - past_mean)
    seen: list[float] = []
    out = np.empty(n)
    for t, d in enumerate(dev):
        if seen:
            below = bisect.bisect_left(seen, d)
            ties = bisect.bisect_right(seen, d) - below
            out[t] = (below + 0.5 * ties) / len(seen)
        else:
            out[t] = 0.5
        bisect.insort(seen, d)
    return out


def bocpd_run_length_drop(y: np.ndarray) -> np.ndarray:
    """Adams & MacKay (2007) with Normal-Gamma segments; the MAP run length's drop."""
    from scipy.special import gammaln

    w = y[:_warmup(len(y))]
    mu0 = float(np.median(w))
    var0 = float(np.var(w)) or 1.0
    kappa0, alpha0, beta0 = 1.0, 1.0, var0
    log_h, log_1h = np.log(BOCPD_HAZARD), np.log1p(-BOCPD_HAZARD)
    # hypotheses: run length, log probability and Normal-Gamma parameters
    runs = np.array([0])
    logp = np.array([0.0])
    mu, kappa = np.array([mu0]), np.array([kappa0])
    alpha, beta = np.array([alpha0]), np.array([beta0])
    out = np.empty(len(y))
    prev_map = 0
    for t, x in enumerate(y):
        # Student-t predictive of each run
        scale2 = beta * (kappa + 1.0) / (alpha * kappa)
        nu = 2.0 * alpha
        logpred = (gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(np.pi * nu * scale2)
                   - (nu + 1) / 2 * np.log1p((x - mu) ** 2 / (nu * scale2)))
        grow = logp + logpred + log_1h
        change = np.logaddexp.reduce(logp + logpred + log_h)
        logp = np.concatenate([[change], grow])
        logp -= np.logaddexp.reduce(logp)
        runs = np.concatenate([[0], runs + 1])
        # the runs that grow absorb x; a new run (a change after x) starts from the prior
        beta = np.concatenate([[beta0], beta + kappa * (x - mu) ** 2 / (2.0 * (kappa + 1.0))])
        mu = np.concatenate([[mu0], (kappa * mu + x) / (kappa + 1.0)])
        kappa = np.concatenate([[kappa0], kappa + 1.0])
        alpha = np.concatenate([[alpha0], alpha + 0.5])
        if runs.size > BOCPD_MAX_RUNS:
            keep = np.sort(np.argpartition(-logp, BOCPD_MAX_RUNS)[:BOCPD_MAX_RUNS])
            runs, logp, mu, kappa = runs[keep], logp[keep], mu[keep], kappa[keep]
            alpha, beta = alpha[keep], beta[keep]
        m = int(runs[int(np.argmax(logp))])
        out[t] = max(0.0, 1.0 - m / (prev_map + 1.0))
        prev_map = m
    return out


# ----------------------------------------------------------------------------------------------
# peers


def capa(y: np.ndarray) -> np.ndarray:
    from skchange.detectors import CAPA

    z = _standardised(y).reshape(-1, 1)
    det = CAPA(max_segment_length=500, include_point_anomalies=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = det.fit(z[:_warmup(len(y))]).predict_all(z)
    out = np.full(len(y), -1e6)
    ends = np.asarray(res["segment_ends"], dtype=np.int64) - 1
    np.maximum.at(out, ends, np.asarray(res["segment_savings"], dtype=float).ravel())
    idx = np.asarray(res["point_indices"], dtype=np.int64)
    np.maximum.at(out, idx, np.asarray(res["point_savings"], dtype=float).ravel())
    return out


def river_hst(y: np.ndarray) -> np.ndarray:
    from river import anomaly, preprocessing

    model = preprocessing.MinMaxScaler() | anomaly.HalfSpaceTrees(seed=42)
    out = np.empty(len(y))
    for t, x in enumerate(y.tolist()):
        features = {"y": x}
        out[t] = model.score_one(features)
        model.learn_one(features)
    return out


def _river_drift(name: str) -> Callable[[np.ndarray], np.ndarray]:
    def run(y: np.ndarray) -> np.ndarray:
        from river import drift

        kwargs = {"seed": 42} if name == "KSWIN" else {}
        det = getattr(drift, name)(**kwargs)
        out = np.zeros(len(y))
        for t, x in enumerate(_standardised(y).tolist()):
            det.update(x)
            if det.drift_detected:
                out[t] = 1.0
        return out

    run.__name__ = f"river_{name}"
    return run


def streaming_detector(y: np.ndarray, history: bool = True) -> ps.ChangepointDetector:
    """Today's default family with its priors set from the warm-up only (streamable)."""
    prior = automatic_prior(y[:_warmup(len(y))])
    return ps.ChangepointDetector(model=model_family(prior=prior), history=history)


def _possibly(kind: str, causal: bool = True) -> Callable[[np.ndarray], np.ndarray]:
    def run(y: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            det = streaming_detector(y) if causal else ps.ChangepointDetector()
            res = det.fit(y)
        outlier = 1.0 - res.discount
        change = np.exp(res.log_online_change_possibility)
        return {"discount": outlier, "change": change,
                "max": np.maximum(outlier, change)}[kind]

    run.__name__ = f"possibly_{kind}"
    return run


def possibly_anomaly_auto(y: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The default detector with ``period="auto"``, fitted on the warm-up (values and time
    stamps), then updated with each record of the rest."""
    import pandas as pd

    w = _warmup(len(y))
    det = ps.ChangepointDetector(period="auto")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det.fit(pd.Series(y[:w], index=pd.DatetimeIndex(index[:w])))
        # record by record as a live stream (its periods are revisited as it grows), the
        # anomalies as signalled (result() gives a revisit's refit for the records before it)
        rest = [det.update(x).anomaly for x in y[w:].tolist()]
    return np.r_[np.full(w, np.nan), rest]


possibly_anomaly_auto.uses_index = True  # type: ignore[attr-defined]


def _possibly_anomaly(with_period: bool) -> Callable[..., np.ndarray]:
    def run(y: np.ndarray, period: int | None = None) -> np.ndarray:
        prior = automatic_prior(y[:_warmup(len(y))])
        det = ps.ChangepointDetector(model=model_family(prior=prior),
                                     period=period if with_period else None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = det.fit(y)
        assert res.anomaly is not None
        return res.anomaly

    run.__name__ = "possibly_anomaly" + ("_day_given" if with_period else "_no_period")
    run.uses_period = with_period  # type: ignore[attr-defined]
    return run


METHODS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "windowed gaussian": windowed_gaussian,
    "|y - past mean| pct": past_mean_percentile,
    "bocpd": bocpd_run_length_drop,
    "skchange CAPA": capa,
    "river HST": river_hst,
    "river ADWIN": _river_drift("ADWIN"),
    "river PageHinkley": _river_drift("PageHinkley"),
    "river KSWIN": _river_drift("KSWIN"),
    "possibly 1-discount": _possibly("discount"),
    "possibly change poss.": _possibly("change"),
    "possibly max": _possibly("max"),
    "possibly max, not causal": _possibly("max", causal=False),
    "possibly anomaly": possibly_anomaly_auto,
    "possibly anomaly, day given": _possibly_anomaly(True),
    "possibly anomaly, no period": _possibly_anomaly(False),
}
#: the package each peer needs (skipped with a message when it is missing)
NEEDS = {"skchange CAPA": "skchange", "river HST": "river", "river ADWIN": "river",
         "river PageHinkley": "river", "river KSWIN": "river"}


def _available(name: str) -> bool:
    package = NEEDS.get(name)
    if package is None:
        return True
    try:
        __import__(package)
    except ImportError:
        print(f"skipped {name}: {package} is not installed (pip install 'possibly[bench]')")
        return False
    return True


#: scenario, seed, values, windows, records per day, time stamps
Stream = tuple[str, int, np.ndarray, np.ndarray, int, np.ndarray]


def load(scenarios: list[str], seeds: list[int]) -> list[Stream]:
    out = []
    for name in scenarios:
        for seed in seeds:
            series, windows = datasets.STREAMING_SUITE[name](seed=seed)
            out.append((name, seed, series.values, windows,
                        series.steps_per(np.timedelta64(1, "D")), series.index))
    return out


def _call(fn: Callable[..., np.ndarray], y: np.ndarray, day: int, index: np.ndarray
          ) -> np.ndarray:
    """``fn`` on a stream, with the day in records or the time stamps when it takes them."""
    if getattr(fn, "uses_period", False):
        return fn(y, day)
    if getattr(fn, "uses_index", False):
        return fn(y, index)
    return fn(y)


def score_streams(fn: Callable[..., np.ndarray], streams: list[Stream]
                  ) -> tuple[list[np.ndarray], list[float]]:
    """Per-record scores (warm-up set to NaN) and µs per record, per stream."""
    scores, costs = [], []
    for _, _, y, _, day, index in streams:
        start = time.perf_counter()
        s = np.asarray(_call(fn, y, day, index), dtype=np.float64)
        costs.append((time.perf_counter() - start) / len(y) * 1e6)
        s = s.copy()
        s[:_warmup(len(y))] = np.nan
        s[~np.isfinite(s)] = np.nan  # an infinite score is no score (none of them gives one)
        scores.append(s)
    return scores, costs


def top_in_window(scores: list[np.ndarray], streams: list[Stream]) -> float:
    hits, labelled = 0, 0
    for s, (_, _, _, w, _, _) in zip(scores, streams, strict=True):
        if w.size == 0 or not np.isfinite(s).any():
            continue
        labelled += 1
        t = int(np.nanargmax(s))
        hits += bool(np.any((w[:, 0] <= t) & (t < w[:, 1])))
    return hits / labelled if labelled else float("nan")


def _quiet(s_tune: list[np.ndarray], tune: list[Stream], s_test: list[np.ndarray],
           test: list[Stream]) -> tuple[float, StreamingScore, int]:
    """The quiet threshold (the next float above every clean tuning stream's highest score),
    the held-out score at it, and the held-out clean streams' alarms at it."""
    tops = [float(np.nanmax(s)) for s, st in zip(s_tune, tune, strict=True)
            if len(st[3]) == 0 and np.isfinite(s).any()]
    threshold = float(np.nextafter(max(tops), np.inf)) if tops else -np.inf
    held = streaming_score(s_test, [st[3] for st in test], threshold)
    clean = sum(alarm_indices(s, threshold).size
                for s, st in zip(s_test, test, strict=True) if len(st[3]) == 0)
    return threshold, held, clean


def update_cost(streams: list[Stream], limit: int = 2000) -> float:
    """Median µs per ``update()`` call over the first ``limit`` records of each stream."""
    costs = []
    for _, _, y, _, _, _ in streams:
        det = streaming_detector(y, history=False)
        x = y[:limit].tolist()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            for v in x:
                det.update(v)
        costs.append((time.perf_counter() - start) / len(x) * 1e6)
    return float(np.median(costs))


def update_cost_auto(streams: list[Stream], limit: int = 2000) -> dict[str, float]:
    """Median µs per ``update()`` call of the ``period="auto"`` detector after its warm-up
    fit (``possibly anomaly``), over the next ``limit`` records of each stream, apart for
    the streams given a period and the others."""
    import pandas as pd

    costs: dict[str, list[float]] = {"with a period": [], "without": []}
    for _, _, y, _, _, index in streams:
        w = _warmup(len(y))
        det = ps.ChangepointDetector(period="auto", history=False)
        x = y[w:w + limit].tolist()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            det.fit(pd.Series(y[:w], index=pd.DatetimeIndex(index[:w])))
            start = time.perf_counter()
            for v in x:
                det.update(v)
        kind = "with a period" if det.period_ is not None else "without"
        costs[kind].append((time.perf_counter() - start) / len(x) * 1e6)
    return {k: float(np.median(v)) for k, v in costs.items() if v}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", type=int, nargs="*", default=[0, 1, 2, 3, 4],
                        help="seeds the threshold is tuned on")
    parser.add_argument("--test", type=int, nargs="*", default=[5, 6, 7, 8, 9],
                        help="held-out seeds")
    parser.add_argument("--scenario", nargs="*", default=list(datasets.STREAMING_SUITE),
                        choices=list(datasets.STREAMING_SUITE))
    parser.add_argument("--method", nargs="*", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--update-cost", action="store_true",
                        help="also time possibly's update() per record (first seed)")
    args = parser.parse_args()

    tune = load(args.scenario, args.tune)
    test = load(args.scenario, args.test)
    n_windows = sum(len(st[3]) for st in test)
    print(f"{len(args.scenario)} scenarios; tuning seeds {args.tune}, held-out seeds "
          f"{args.test} ({len(test)} streams, {n_windows} windows, "
          f"{sum(len(st[2]) for st in test)} records)")
    # one warm-up call so that no method pays its compilation or import in the timings
    for name in args.method:
        if _available(name):
            fn = METHODS[name]
            _call(fn, tune[0][2][:600], tune[0][4], tune[0][5][:600])
    rows, per_scenario, quiet = [], {}, {}
    own: dict[str, dict[str, float | None]] = {}  # a threshold per scenario (diagnostic)
    for name in args.method:
        if not _available(name):
            continue
        fn = METHODS[name]
        s_tune, _ = score_streams(fn, tune)
        best = best_threshold(s_tune, [st[3] for st in tune])
        s_test, costs = score_streams(fn, test)
        held = streaming_score(s_test, [st[3] for st in test], best.threshold)
        by_seed = [streaming_score([s for s, st in zip(s_test, test, strict=True)
                                    if st[1] == seed],
                                   [st[3] for st in test if st[1] == seed], best.threshold).score
                   for seed in args.test]
        spread = float(np.std([v for v in by_seed if v is not None], ddof=1)) \
            if len(args.test) > 1 else float("nan")
        rows.append((name, best, held, spread, top_in_window(s_test, test),
                     float(np.median(costs))))
        print(f"  done {name}: held-out score {held.score:.3f}", flush=True)
        quiet[name] = _quiet(s_tune, tune, s_test, test)
        per_scenario[name] = {
            sc: streaming_score([s for s, st in zip(s_test, test, strict=True) if st[0] == sc],
                                [st[3] for st in test if st[0] == sc], best.threshold)
            for sc in args.scenario}
        own[name] = {}
        for sc in args.scenario:
            if not any(len(st[3]) for st in test if st[0] == sc):
                continue
            mine = best_threshold([s for s, st in zip(s_tune, tune, strict=True)
                                   if st[0] == sc], [st[3] for st in tune if st[0] == sc])
            own[name][sc] = streaming_score(
                [s for s, st in zip(s_test, test, strict=True) if st[0] == sc],
                [st[3] for st in test if st[0] == sc], mine.threshold).score

    print("\n## one threshold for all streams: tuned on the tuning seeds, scored held out")
    print(f"{'method':<24} {'threshold':>10} {'tune':>7} {'held-out':>9} {'sd':>6} {'P':>6} "
          f"{'R':>6} {'FA':>5} {'top in w':>9} {'us/rec':>8}")
    for name, best, held, spread, top, cost in rows:
        print(f"{name:<24} {best.threshold:>10.4g} {best.score:>7.3f} {held.score:>9.3f} "
              f"{spread:>6.3f} {held.precision:>6.2f} {held.recall:>6.2f} "
              f"{held.false_alarms:>5d} {top:>9.2f} {cost:>8.2f}")
    print("\n## quiet threshold: the lowest one at which no clean tuning stream raises an "
          "alarm, scored held out")
    print(f"{'method':<24} {'threshold':>10} {'held-out':>9} {'P':>6} {'R':>6} {'FA':>5} "
          f"{'FA clean':>9}")
    for name, (threshold, held, clean) in quiet.items():
        print(f"{name:<24} {threshold:>10.8g} {held.score:>9.3f} {held.precision:>6.2f} "
              f"{held.recall:>6.2f} {held.false_alarms:>5d} {clean:>9d}")
    print("\n## held out, per scenario at the one threshold: windows detected / windows, "
          "false alarms")
    names = [r[0] for r in rows]
    print(f"{'scenario':<20} " + " ".join(f"{n[:13]:>13}" for n in names))
    for sc in args.scenario:
        cells = []
        for n in names:
            r = per_scenario[n][sc]
            cells.append(f"{r.detected:>2d}/{r.detected + r.missed:<2d} fa{r.false_alarms:<4d}")
        print(f"{sc:<20} " + " ".join(f"{c:>13}" for c in cells))
    print("\n## diagnostic, not the benchmark: held-out score per scenario with a threshold "
          "tuned on that scenario alone (detection without the calibration across streams)")
    print(f"{'scenario':<20} " + " ".join(f"{n[:13]:>13}" for n in names))
    for sc in args.scenario:
        if all(sc in own[n] for n in names):
            print(f"{sc:<20} " + " ".join(f"{own[n][sc]:>13.2f}" for n in names))
    if args.update_cost:
        first = [st for st in test if st[1] == args.test[0]]
        print(f"\npossibly update(): {update_cost(first):.1f} us per record (median over "
              f"{len(first)} streams, first 2000 records each)")
        for kind, cost in update_cost_auto(first).items():
            print(f"possibly update(), period='auto' after the warm-up fit, streams {kind}: "
                  f"{cost:.1f} us per record (median, 2000 records after the warm-up)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
