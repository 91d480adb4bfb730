"""The calibrated anomaly signal: the calibration against a reference written from its
definition, fit = update = extend, numpy = numba, invariance, missing records, clean
streams, and bad periods."""

from __future__ import annotations

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest
import scipy.special
from scipy.stats import genpareto

import possibly as ps
from possibly.changepoint import anomaly, automatic_prior, model_family
from possibly.changepoint.detector import numba_available

needs_numba = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


def tail_reference(kept, level):
    """``beyond_p_value`` from its definition: the PWM estimates of Hosking & Wallis (1987)
    written on the sorted excesses, the scale floored by the whole window's exponential
    scale, the conditional survival from scipy's generalised Pareto."""
    n = len(kept)
    k = min(anomaly.TAIL, n - 1)
    if k < 10:
        return 1.0 / (n + 1)
    top = np.sort(np.asarray(kept, dtype=float))[::-1][:k + 1]
    u = top[k]
    e = np.sort(top[:k] - u)  # increasing
    a0 = e.mean()
    a1 = np.mean(e * (1.0 - (np.arange(1, k + 1) - 0.35) / k))
    if a0 <= 0:
        return 1.0 / (n + 1)
    shape = 2.0 - a0 / (a0 - 2.0 * a1) if a0 - 2.0 * a1 > 0 else anomaly.MAX_SHAPE
    shape = float(np.clip(shape, 0.0, anomaly.MAX_SHAPE))
    scale = a0 * (1.0 - shape)
    # the exponential scale from the window's mean (survival 1/e) to its maximum (1/(n+1))
    scale = max(scale, (top[0] - np.mean(kept)) / (math.log(n + 1) - 1.0))
    ratio = (genpareto.sf(level - u, shape, scale=scale)
             / genpareto.sf(top[0] - u, shape, scale=scale))
    return ratio / (n + 1)


def upper_reference(kept, level):
    """The conformal p-value (exact fractions), extrapolated beyond the maximum."""
    n = len(kept)
    at_least = sum(1 for u in kept if u >= level)
    if n == 0:
        return 1.0
    if at_least:
        return float(Fraction(1 + at_least, n + 1))
    return tail_reference(kept, level)


def repeat_reference(run, c):
    """The repeats channel from its definition (math §6): the rank within the earlier runs;
    beyond them, the top rank times the Beta predictive of the further repeats (when enough
    records reached the longest earlier run); beyond REPEATS, the last ratio's, floored."""
    top, total = anomaly.REPEATS, 1 + c[0]
    if run <= top and c[run] >= 0.5:
        return (1 + c[run]) / total
    longest = max(j for j in range(min(run, top) + 1) if j == 0 or c[j] >= 0.5)
    if longest == top:
        further = np.cumprod([(c[top] + 1 + i) / (c[top - 1] + 2 + i) for i in range(run - top)])
        return max((1 + c[top]) / total * further[-1], 1 / total)
    if c[longest] < anomaly.MIN_TRIALS:
        return (1 + c[min(run, top)]) / total
    a, b, m = c[longest + 1] + 1, c[longest] - c[longest + 1] + 1, run - longest - 1
    predictive = scipy.special.beta(a + m, b) / scipy.special.beta(a, b)
    return (1 + c[min(run, top)]) / total * predictive


def reference(ys, surprises, period, window, cycles):
    """The anomalies from the definition: three p-values (the record's surprise, Fisher's
    sum over the last SPAN records, the run of repeats), anomaly = 1 - min(1, 3 min p)."""
    ys = [float(v) for v in ys]
    out, residuals, kept, fisher, terms = [], [], [], [], []
    last, run = math.nan, 0
    counts = np.zeros(anomaly.REPEATS + 1)
    before_run = counts  # the counts at the start of the current run
    keep = 1.0 - 1.0 / window
    for t, (v, r) in enumerate(zip(ys, surprises, strict=True)):
        if v != v:
            out.append(0.0)
            continue
        run = run + 1 if v == last else 0
        last = v
        p = 1.0
        if run:
            p = repeat_reference(run, before_run)
        counts = keep * counts + (run >= np.arange(anomaly.REPEATS + 1))
        if run == 0:
            before_run = counts
        combined = p
        if period:
            same = [ys[t - j * period] for j in range(1, cycles + 1)
                    if t - j * period >= 0 and ys[t - j * period] == ys[t - j * period]]
            if not same:
                out.append(1.0 - min(1.0, anomaly.CHANNELS * combined))
                continue
            x = v - float(np.median(same))
            if not residuals:
                residuals.append(x)
                out.append(1.0 - min(1.0, anomaly.CHANNELS * combined))
                continue
            s = abs(x - float(sum(Fraction(q) for q in residuals) / len(residuals)))
            residuals.append(x)
        else:
            s = float(r)
        window_s, window_f = kept[-window:], fisher[-window:]
        n = len(window_s)
        body = float(Fraction(1 + sum(1 for u in window_s if u >= s), n + 1))
        terms.append(-math.log(body))
        f = sum(terms[-anomaly.SPAN:])
        combined = min(combined, upper_reference(window_s, s), upper_reference(window_f, f))
        kept.append(s)
        fisher.append(f)
        out.append(1.0 - min(1.0, anomaly.CHANNELS * combined))
    return np.array(out)


def _calibrated(ys, surprises, period, window=anomaly.WINDOW, cycles=anomaly.CYCLES):
    state, out = anomaly.new_calibration(period, window, cycles), np.empty(len(ys))
    anomaly.calibrate(state, np.asarray(ys, float), np.asarray(surprises, float), out)
    return out


def _test_stream(n=400, seed=1):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    y = 10.0 * np.sin(2 * np.pi * t / 5) + rng.standard_t(3, size=n)
    y[[17, 18, 90, 250]] = np.nan
    y[300] += 30.0
    y[200:207] = y[199]  # a frozen reading
    surprises = np.abs(rng.standard_t(2, size=n))
    surprises[300] = 1e3
    surprises[320:330] += 5.0  # a sustained rise
    return y, surprises


@pytest.mark.parametrize("period", [None, 5])
def test_calibration_matches_the_definition(period):
    y, surprises = _test_stream()
    out = _calibrated(y, surprises, period, window=37, cycles=3)
    np.testing.assert_allclose(out, reference(y, surprises, period, 37, 3), rtol=0,
                               atol=1e-12)
    assert out[300] > 1.0 - 1e-4  # far beyond every kept surprise: extrapolated
    # seven repeats of a value never repeated before: beyond every earlier run, extrapolated
    assert out[206] > 1.0 - 1e-6


def test_tail_of_a_known_window_by_hand():
    """The window 1..100 (n = 100, k = 50): the excesses over 50 are 1..50, whose PWM tail
    index is negative (cut to 0), so the tail is exponential with the mean excess 25.5 (above
    the window's own scale, (100 - 50.5) / (log 101 - 1) = 13.7)."""
    window = np.arange(1.0, 101.0)
    scratch = np.empty(anomaly.TAIL + 1)
    for level, want in [(100.5, math.exp(-0.5 / 25.5) / 101), (130.0, math.exp(-30 / 25.5) / 101)]:
        assert anomaly.upper_p_value(window, level, scratch) == pytest.approx(want, rel=1e-14)
    # in the body, exact ranks: 100 is the only one at least 100, 1 + 1 over 101
    assert anomaly.upper_p_value(window, 100.0, scratch) == 2 / 101
    assert anomaly.upper_p_value(window, 0.0, scratch) == 1.0


@pytest.mark.parametrize("seed", range(4))
def test_tail_matches_scipy_on_heavy_windows(seed):
    rng = np.random.default_rng(seed)
    window = rng.pareto(1.0 + seed, size=300 + 100 * seed)
    scratch = np.empty(anomaly.TAIL + 1)
    for level in window.max() * np.array([1.01, 2.0, 30.0]):
        got = anomaly.upper_p_value(window, level, scratch)
        assert got == pytest.approx(tail_reference(window, level), rel=1e-10)
        assert 0.0 < got < 1.0 / (len(window) + 1)


def test_repeats_by_hand():
    counts = np.zeros(anomaly.REPEATS + 1)
    counts[:4] = [50.0, 10.0, 4.0, 1.0]
    # up to REPEATS = 10: the rank (1 + counts[run]) / 51; beyond, that rank at 10 (1/51) times
    # the k-th further step (0 + k) / (0 + 1 + k), at least 1/51: 1/51
    want = [Fraction(11, 51), Fraction(5, 51), Fraction(2, 51)] + [Fraction(1, 51)] * 10
    for run in range(1, 14):
        assert anomaly.repeat_p_value(float(run), counts) == pytest.approx(
            float(want[run - 1]), rel=1e-13)
    assert anomaly.repeat_p_value(0.0, counts) == 1.0
    # a stream that has repeated at length 10 before: the predictive beyond it decays, down to
    # the floor 1 / (1 + counts[0])
    counts[:] = [500.0, 200.0, 150.0, 120.0, 100.0, 90.0, 80.0, 70.0, 60.0, 50.0, 40.0]
    rank = Fraction(41, 501)
    for run in range(11, 40):
        further = math.prod(Fraction(41 + k, 52 + k) for k in range(run - 10))
        assert anomaly.repeat_p_value(float(run), counts) == pytest.approx(
            float(max(rank * further, Fraction(1, 501))), rel=1e-13)


def test_calibration_ties_count_as_not_below():
    # quantised surprises (many equal values): a tie is not below
    values = np.array([0.0, 0.0, 1.0, 0.0, 1.0, 2.0, 0.0, 2.0, 3.0])
    ys = np.arange(len(values), dtype=float)  # no repeats
    out = _calibrated(ys, values, None, window=4)
    np.testing.assert_allclose(out, reference(ys, values, None, 4, 7), rtol=0, atol=1e-15)


def test_calibration_state_is_bounded():
    sizes = {anomaly.new_calibration(24).size}
    state = anomaly.new_calibration(24)
    anomaly.calibrate(state, np.arange(5000.0), np.zeros(5000), np.empty(5000))
    sizes.add(state.size)
    assert sizes == {anomaly.calibration_size(24)}


@needs_numba
@pytest.mark.parametrize("period", [None, 24])
def test_numba_equals_numpy(period):
    from possibly.changepoint import anomaly_numba

    rng = np.random.default_rng(2)
    y = np.round(rng.standard_t(2, size=3000), 1)  # heavy tails and ties
    y[rng.random(3000) < 0.02] = np.nan
    y[2500:2530] = 100.0  # frozen far away
    surprises = np.abs(rng.standard_t(2, size=3000))
    a, b = anomaly.new_calibration(period), anomaly.new_calibration(period)
    out_a, out_b = np.empty(len(y)), np.empty(len(y))
    anomaly.calibrate(a, y, surprises, out_a)
    anomaly_numba.calibrate(b, y, surprises, out_b)
    np.testing.assert_array_equal(out_a, out_b)
    np.testing.assert_array_equal(a, b)
    assert out_a[2503:2530].min() > 0.99  # the frozen run: its repeats channel
    assert anomaly_numba.calibrate_one(b, 50.0, 40.0) == anomaly.calibrate_one(a, 50.0, 40.0)


def _stream(seed=0):
    series, windows = ps.datasets.STREAMING_SUITE["cycle_level_shift"](seed=seed)
    y = series.values.copy()
    y[[40, 41, 500]] = np.nan
    return y[:1200], series.steps_per(np.timedelta64(1, "D"))


def _detector(y, period, engine="auto"):
    return ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:150])),
                                  period=period, engine=engine)


@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
@pytest.mark.parametrize("with_period", [False, True])
def test_fit_equals_update_extend_and_resume(engine, with_period):
    y, day = _stream()
    period = day if with_period else None
    res = _detector(y, period, engine).fit(y)
    assert res.anomaly is not None and res.anomaly.shape == y.shape
    det = _detector(y, period, engine)
    first = [det.update(v).anomaly for v in y[:700]]
    det = pickle.loads(pickle.dumps(det))  # resumed mid-stream
    rest = [det.update(v).anomaly for v in y[700:]]
    np.testing.assert_array_equal(np.r_[first, rest], res.anomaly)
    np.testing.assert_array_equal(det.result().anomaly, res.anomaly)
    ext = _detector(y, period, engine)
    parts = [ext.extend(y[:333])["anomaly"], ext.extend(y[333:])["anomaly"]]
    np.testing.assert_array_equal(np.concatenate(parts), res.anomaly)
    # the change points, outliers and discounts do not depend on the period
    other = _detector(y, None if with_period else day, engine).fit(y)
    np.testing.assert_array_equal(other.discount, res.discount)
    np.testing.assert_array_equal(other.changepoints, res.changepoints)


@pytest.mark.parametrize("period", [None, 5])
def test_peek_is_the_next_anomaly_of_the_definition_and_changes_nothing(period):
    y, surprises = _test_stream(n=340, seed=3)
    want = reference(y, surprises, period, 37, 3)
    state = anomaly.new_calibration(period, window=37, cycles=3)
    for k, (v, r) in enumerate(zip(y, surprises, strict=True)):
        before = state.copy()
        assert anomaly.peek_one(state, v, r) == pytest.approx(want[k], abs=1e-12), k
        np.testing.assert_array_equal(state, before)  # nothing learnt
        assert anomaly.calibrate_one(state, v, r) == pytest.approx(want[k], abs=1e-12), k


@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
@pytest.mark.parametrize("with_period", [False, True])
def test_peek_anomaly_is_what_update_reports_without_learning(engine, with_period):
    y, day = _stream(seed=1)
    y = y[:500]
    period = day if with_period else None
    det = _detector(y, period, engine)
    det.fit(y[:150])
    peeks, got = [], []
    for k, v in enumerate(y[150:], 150):
        for probe in (1e6, -3e3, float("nan")):  # leave no trace
            det.peek_anomaly(probe)
        peeks.append(det.peek_anomaly(v))
        assert det.t == k
        got.append(det.update(v).anomaly)
    assert peeks == got  # exactly
    np.testing.assert_array_equal(got, _detector(y, period, engine).fit(y).anomaly[150:])
    assert max(got) > 0.99


def test_missing_records_have_anomaly_zero_and_are_not_ranked():
    y, day = _stream()
    res = _detector(y, day).fit(y)
    assert not np.isnan(res.anomaly).any()
    assert np.all((0.0 <= res.anomaly) & (res.anomaly <= 1.0))
    assert res.anomaly[[40, 41, 500]].tolist() == [0.0, 0.0, 0.0]
    # without a period the missing records leave the calibration as if they were absent
    rng = np.random.default_rng(7)
    ys = np.round(rng.normal(size=300))  # repeats too
    surprises = np.abs(rng.standard_t(2, size=300))
    ys[rng.random(300) < 0.1] = np.nan
    seen = ~np.isnan(ys)
    out_gap = _calibrated(ys, surprises, None)
    np.testing.assert_array_equal(out_gap[seen], _calibrated(ys[seen], surprises[seen], None))
    assert np.all(out_gap[~seen] == 0.0)


@pytest.mark.parametrize("with_period", [False, True])
def test_invariant_under_affine_maps(with_period):
    y, day = _stream(3)
    period = day if with_period else None
    base = ps.ChangepointDetector(period=period).fit(y).anomaly
    moved = ps.ChangepointDetector(period=period).fit(3.7 * y - 120.0).anomaly
    # ranks of continuous surprises: equal, up to a rare tie broken by rounding
    assert np.mean(base != moved) < 0.005
    np.testing.assert_allclose(moved, base, atol=2e-3)


@pytest.mark.parametrize(("scenario", "with_period"),
                         [("cycle_idle", True), ("idle_stream", False), ("idle_stream", True)])
def test_clean_streams_alarm_at_most_at_the_calibrated_rate(scenario, with_period):
    """A stream with no anomaly: the anomaly exceeds ``1 - alpha`` on at most a fraction
    ``alpha`` of its records (plus sampling slack), and never reaches ``1 - 1e-5``."""
    series, windows = ps.datasets.STREAMING_SUITE[scenario](seed=11)
    assert windows.size == 0
    y = series.values
    period = series.steps_per(np.timedelta64(1, "D")) if with_period else None
    a = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:len(y) // 8])),
                               period=period).fit(y).anomaly
    for alpha in (0.05, 0.01):
        assert np.mean(a >= 1.0 - alpha) <= 1.5 * alpha
    assert a.max() < 1.0 - 1e-5


def _noise(kind, rng, n):
    if kind == "white":
        return rng.normal(size=n)
    if kind == "ar1":  # y_t = 0.8 y_{t-1} + e_t
        e, y = rng.normal(size=n), np.empty(n)
        y[0] = e[0]
        for t in range(1, n):
            y[t] = 0.8 * y[t - 1] + e[t]
        return y
    if kind == "quantised":
        return np.round(rng.normal(3.0, 0.7, n))
    return rng.standard_t(2, size=n)  # heavy tails


@pytest.mark.parametrize("kind", ["white", "ar1", "quantised", "heavy"])
def test_false_alarm_rate_on_clean_noise(kind):
    """Seeded, loose: on clean noise the share of records at or above ``1 - alpha`` stays
    near ``alpha`` or below (Bonferroni over the three channels makes it conservative in the
    body), and the extrapolated tail reaches ``1 - 1e-5`` at most once in 30000 records."""
    rng = np.random.default_rng(123)
    a = []
    for _ in range(10):
        y = _noise(kind, rng, 3300)
        det = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:300])))
        a.append(det.fit(y).anomaly[300:])
    a = np.concatenate(a)
    for alpha in (0.05, 0.01, 0.002):
        assert np.mean(a >= 1.0 - alpha) <= 1.25 * alpha + 3.0 * math.sqrt(alpha / a.size)
    assert np.sum(a >= 1.0 - 1e-5) <= 1


def test_a_record_beyond_every_kept_one_is_extrapolated():
    """Regression: the rank alone stops at ``W / (W + 1)``; a record far beyond the
    window's largest surprise now reaches an anomaly near 1."""
    rng = np.random.default_rng(8)
    t = np.arange(3000)
    y = 5.0 * np.sin(2 * np.pi * t / 24) + rng.normal(size=t.size)
    y[2500] += 15.0
    a = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:300])),
                               period=24).fit(y).anomaly
    assert a[2500] > 1.0 - 1e-6
    assert np.sort(a)[-2] < 1.0 - 1e-4  # the clean records stay far below


def test_a_frozen_reading_raises_the_signal_within_a_few_records():
    """Regression: a reading that freezes (the same value repeated, its noise gone) is a
    pattern anomaly that breaks no level; the run of repeats raises the signal."""
    rng = np.random.default_rng(9)
    y = rng.normal(size=2400)
    y[2000:2060] = y[1999]
    a = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:300]))).fit(y).anomaly
    assert a[2000:2010].max() > 1.0 - 1e-4
    assert a[300:2000].max() < 1.0 - 1e-4


def test_a_sustained_moderate_rise_is_seen_by_the_sum_channel():
    """Surprises that rise by 3 for 20 records: none of them beyond the window's largest (each
    record's own p-value stays above 1 / (W + 1)), but their sum over the last SPAN records is
    far beyond every earlier sum."""
    rng = np.random.default_rng(10)
    surprises = rng.exponential(size=3000)
    top = surprises[500:2500].max()
    surprises[2500:2520] = np.minimum(surprises[2500:2520] + 3.0, 0.9 * top)  # no single record
    ys = np.arange(3000.0)  # no repeats
    a = _calibrated(ys, surprises, None)
    # beyond what the record's own rank gives (at most 1 - 3 / (W + 1) = 1 - 1.5e-3 there)
    assert a[2500:2515].max() > 1.0 - 3e-4
    assert np.mean(a[:2500] > 1.0 - 3e-4) < 1e-3


def test_a_level_shift_raises_the_signal_within_a_few_records():
    rng = np.random.default_rng(5)
    t = np.arange(24 * 60)
    y = 10.0 * np.sin(2 * np.pi * t / 24) + rng.normal(size=t.size)
    y[1000:] += 6.0
    a = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:200])),
                               period=24).fit(y).anomaly
    # within three records, one beyond every earlier surprise, extrapolated
    assert a[1000:1003].max() > 1.0 - 1e-4
    assert np.mean(a[200:1000] >= 0.998) < 0.005


@pytest.mark.parametrize("period", [0, 1, -24, 2.5, "24", True, 10**7])
def test_bad_period_is_refused(period):
    with pytest.raises(ValueError, match="period must be None or a whole number"):
        ps.ChangepointDetector(period=period)


@pytest.mark.parametrize("period", [24.0, np.float64(24), np.float32(24.0), 24.0 + 1e-12])
def test_a_whole_float_period_is_that_integer(period):
    """Floats as :func:`infer_period` returns them: the same signal as the integer period,
    in the detector and in the bank (which share the check)."""
    y, _ = _stream(2)
    y = y[:400]
    det = ps.ChangepointDetector(sigma=1.0, period=period)
    assert det.period_ == 24
    expected = ps.ChangepointDetector(sigma=1.0, period=24).fit(y).anomaly
    np.testing.assert_array_equal(det.fit(y).anomaly, expected)
    assert ps.DetectorBank(sigma=1.0, period=period).period == 24


def test_the_inferred_period_is_accepted():
    t = np.arange(24 * 20)
    y = 5.0 * np.sin(2 * np.pi * t / 24) + np.random.default_rng(0).normal(size=t.size)
    periods = ps.changepoint.infer_period(y)
    assert periods is not None and isinstance(periods[0], float)
    assert ps.ChangepointDetector(period=periods[0]).period_ == 24


@pytest.mark.parametrize("period", [24.5, 365.2425, np.float64(52.1775), float("nan"),
                                    float("inf"), 1.0, 2e6])
def test_a_period_that_is_not_a_whole_number_is_refused(period):
    with pytest.raises(ValueError, match=r"period must be None or a whole number .*got"):
        ps.ChangepointDetector(period=period)
    with pytest.raises(ValueError, match=r"period must be None or a whole number"):
        ps.DetectorBank(period=period)


def test_period_needs_a_scalar_series():
    with pytest.raises(ValueError, match="period applies to a scalar series"):
        ps.ChangepointDetector(period=24).fit(np.zeros((50, 2)))


def test_bad_calibration_settings_are_refused():
    with pytest.raises(ValueError, match="window must be a whole number"):
        anomaly.new_calibration(None, window=0)
    with pytest.raises(ValueError, match="cycles must be a whole number"):
        anomaly.new_calibration(24, cycles=2.0)


@pytest.mark.parametrize("where", ["recursion", "calibration"])
def test_an_interrupted_extend_leaves_the_anomalies_of_fit(monkeypatch, where):
    from possibly.changepoint import detector as detector_module

    y, day = _stream(4)
    det = _detector(y, day, "numpy")
    det.fit(y[:600])
    with monkeypatch.context() as patch:
        def interrupted(*args, **kwargs):
            raise KeyboardInterrupt

        if where == "recursion":
            patch.setattr(detector_module, "_run_numpy", interrupted)
        else:
            patch.setattr(detector_module, "_batch_calibration", lambda engine, n: interrupted)
        with pytest.raises(KeyboardInterrupt):
            det.extend(y[600:700] + 50.0)  # never stored
    det.extend(y[600:900])
    for x in y[900:]:
        det.update(x)
    np.testing.assert_array_equal(det.result().anomaly, _detector(y, day, "numpy").fit(y).anomaly)


def test_update_without_history_reports_the_same_anomalies():
    y, day = _stream(6)
    ref = _detector(y, day).fit(y).anomaly
    det = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:150])),
                                 period=day, history=False)
    np.testing.assert_array_equal([det.update(v).anomaly for v in y], ref)


class _WithoutOverloads:
    """numba's dispatcher of calibrate_one, as a numba whose dispatchers keep their compiled
    versions elsewhere: ``overloads`` missing (AttributeError) or keyed otherwise."""

    def __init__(self, dispatcher, overloads):
        self._dispatcher = dispatcher
        if overloads is not None:
            self.overloads = overloads

    def __call__(self, *args):
        return self._dispatcher(*args)


@needs_numba
@pytest.mark.parametrize("overloads", [None, {}])
def test_the_compiled_update_without_numba_entry_points(monkeypatch, overloads):
    """``update()``'s compiled calibration falls back to numba's dispatcher when the
    compiled version's entry point cannot be found: the same anomalies."""
    from possibly.changepoint import anomaly_numba

    y, day = _stream(4)
    y = y[:300]

    def streamed(period):
        det = _detector(y, period, engine="numba")
        return np.array([det.update(float(x)).anomaly for x in y])

    want = {p: streamed(p) for p in (None, day)}
    monkeypatch.setattr(anomaly_numba, "calibrate_one",
                        _WithoutOverloads(anomaly_numba.calibrate_one, overloads))
    assert anomaly_numba.calibrate_one_entry() is anomaly_numba.calibrate_one
    for p, w in want.items():
        np.testing.assert_array_equal(streamed(p), w)
    numpy_engine = _detector(y, day, engine="numpy")
    np.testing.assert_array_equal([numpy_engine.update(float(x)).anomaly for x in y],
                                  want[day])



def test_a_clustered_tail_is_not_extrapolated_from_its_spread():
    """Regression: the largest surprises of a quantised metric cluster at one level (here
    4.2 +- 0.05, from the values two steps away); the next level (6.6) is one step further,
    not hundreds of the cluster's spreads: the window's own scale bounds the tail's."""
    rng = np.random.default_rng(4)
    window = np.concatenate([rng.exponential(0.5, 1950), 4.2 + rng.uniform(-0.05, 0.05, 50)])
    p = anomaly.upper_p_value(window, 6.6, np.empty(anomaly.TAIL + 1))
    scale = (window.max() - window.mean()) / (math.log(2001) - 1.0)
    assert p == pytest.approx(math.exp(-(6.6 - window.max()) / scale) / 2001, rel=1e-12)
    assert p > 1e-6 / 2001  # the cluster's own spread would say about 1e-21 / 2001


def test_a_state_of_another_layout_is_refused_on_loading():
    # the previous version's state (2015 floats without a period) was read and written past
    # its end by the compiled step, which checks no bounds
    from possibly.changepoint import DetectorBank

    rng = np.random.default_rng(0)
    det = ps.ChangepointDetector(sigma=1.0)
    for x in rng.normal(size=30):
        det.update(x)
    det.__dict__["_calibration"] = det.__dict__["_calibration"][:2015].copy()
    with pytest.raises(ValueError, match="another version"):
        pickle.loads(pickle.dumps(det))
    bank = DetectorBank(sigma=1.0, period=24)
    bank.update_many(["a"], [0.5])
    bank.__dict__["_post"] = bank.__dict__["_post"][:, :2015].copy()
    with pytest.raises(ValueError, match="another version"):
        pickle.loads(pickle.dumps(bank))
    if numba_available():  # the compiled pools' runs, one column short (an older kernel)
        bank = DetectorBank(sigma=1.0)
        bank.update_many(["a"], [0.5])
        bank.__dict__["_runs"] = bank.__dict__["_runs"][:, :-1].copy()
        with pytest.raises(ValueError, match="another version.*columns"):
            pickle.loads(pickle.dumps(bank))


@pytest.mark.skipif(not numba_available(), reason="numba not installed")
def test_a_batch_calibrates_in_python_until_compiling_it_pays(monkeypatch):
    # with the compiled calibration not at hand, a short batch runs the Python calibration,
    # until the process has calibrated COMPILED_CALIBRATION_FROM records that way; a long
    # batch, or compiled code at hand, the compiled one: the same anomalies bit for bit
    import possibly.compiled as compiled_module
    from possibly.changepoint import anomaly_numba
    from possibly.changepoint import detector as detector_module

    used = []
    python = anomaly.calibrate

    def recorded(state, ys, surprises, out):
        used.append("python")
        return python(state, ys, surprises, out)

    monkeypatch.setattr(anomaly, "calibrate", recorded)
    at_hand, asked = [False], []

    def has_cached_code(dispatcher):
        asked.append(dispatcher)
        return dispatcher is anomaly_numba.calibrate and at_hand[0]

    monkeypatch.setattr(compiled_module, "has_cached_code", has_cached_code)
    counter, memo = [0], []
    monkeypatch.setattr(detector_module, "_python_calibrated", counter)
    monkeypatch.setattr(detector_module, "_calibration_at_hand", memo)
    limit = detector_module.COMPILED_CALIBRATION_FROM
    y = np.random.default_rng(3).normal(size=700)
    y[[100, 400]] += 30.0

    def fit() -> tuple[list[str], np.ndarray]:
        used.clear()
        anomalies = ps.ChangepointDetector(sigma=1.0).fit(y).anomaly
        return used or ["compiled"], anomalies

    way, python_anomaly = fit()
    assert way == ["python"] and counter[0] == y.size
    assert fit()[0] == ["python"] and len(asked) == 1  # asked once in a process
    counter[0] = limit - y.size  # this batch reaches the limit: compiled
    way, compiled_anomaly = fit()
    assert way == ["compiled"] and counter[0] == limit - y.size
    np.testing.assert_array_equal(compiled_anomaly, python_anomaly)
    counter[0] = 0
    assert fit()[0] == ["compiled"] and counter[0] == 0  # compiled now: a short batch too
    counter[0], at_hand[0] = 0, True  # compiled code at hand: compiled from the first record
    memo.clear()  # a new process
    assert fit()[0] == ["compiled"] and counter[0] == 0
    at_hand[0] = False
    memo.clear()
    assert ps.ChangepointDetector(sigma=1.0, engine="numpy").fit(y).anomaly is not None
    assert used[-1:] == ["python"] and counter[0] == 0  # the numpy engine: always Python
