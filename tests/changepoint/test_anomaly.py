"""The calibrated anomaly signal: the calibration against a reference written from its
definition, fit = update = extend, numpy = numba, invariance, missing records, clean
streams, and bad periods."""

from __future__ import annotations

import pickle
from fractions import Fraction

import numpy as np
import pytest

import possibly as ps
from possibly.changepoint import anomaly, automatic_prior, model_family
from possibly.changepoint.detector import numba_available

needs_numba = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


def reference(values, period, window, cycles):
    """The anomalies from the definition: residual against the same phase's median over the
    previous ``cycles`` periods (observed ones), surprise |residual - mean of the earlier
    residuals| (exact means), anomaly = #{earlier kept surprises below} / (kept + 1)."""
    values = [float(v) for v in values]
    out, residuals, surprises = [], [], []
    for t, v in enumerate(values):
        if v != v:
            out.append(0.0)
            continue
        if period:
            same = [values[t - j * period] for j in range(1, cycles + 1)
                    if t - j * period >= 0 and values[t - j * period] == values[t - j * period]]
            if not same:
                out.append(0.0)
                continue
            x = v - float(np.median(same))
            if not residuals:
                residuals.append(x)
                out.append(0.0)
                continue
            mean = sum(Fraction(r) for r in residuals) / len(residuals)
            s = abs(Fraction(x) - mean)
            residuals.append(x)
        else:
            s = Fraction(v)
        kept = surprises[-window:]
        below = sum(1 for u in kept if u < s)
        out.append(below / (len(kept) + 1.0))
        surprises.append(s)
    return np.array(out)


@pytest.mark.parametrize("period", [None, 5])
def test_calibration_matches_the_definition(period):
    rng = np.random.default_rng(1)
    t = np.arange(400)
    y = 10.0 * np.sin(2 * np.pi * t / 5) + rng.normal(size=400)
    y[[17, 18, 90, 250]] = np.nan
    y[300] += 30.0
    state, out = anomaly.new_calibration(period, window=37, cycles=3), np.empty(len(y))
    anomaly.calibrate(state, y, out)
    np.testing.assert_array_equal(out, reference(y, period, 37, 3))
    assert out[300] == 37 / 38  # above every kept surprise


def test_calibration_ties_count_as_not_below():
    # quantised surprises (many equal values): a tie is not below
    values = np.array([0.0, 0.0, 1.0, 0.0, 1.0, 2.0, 0.0, 2.0, 3.0])
    state, out = anomaly.new_calibration(None, window=4), np.empty(len(values))
    anomaly.calibrate(state, values, out)
    np.testing.assert_array_equal(out, reference(values, None, 4, 7))
    assert out.tolist()[:3] == [0.0, 0.0, 2 / 3]


def test_calibration_state_is_bounded():
    sizes = {anomaly.new_calibration(24).size}
    state = anomaly.new_calibration(24)
    anomaly.calibrate(state, np.arange(5000.0), np.empty(5000))
    sizes.add(state.size)
    assert sizes == {anomaly.calibration_size(24)}


@needs_numba
@pytest.mark.parametrize("period", [None, 24])
def test_numba_equals_numpy(period):
    from possibly.changepoint import anomaly_numba

    rng = np.random.default_rng(2)
    y = np.round(rng.standard_t(2, size=3000), 1)  # heavy tails and ties
    y[rng.random(3000) < 0.02] = np.nan
    a, b = anomaly.new_calibration(period), anomaly.new_calibration(period)
    out_a, out_b = np.empty(len(y)), np.empty(len(y))
    anomaly.calibrate(a, y, out_a)
    anomaly_numba.calibrate(b, y, out_b)
    np.testing.assert_array_equal(out_a, out_b)
    np.testing.assert_array_equal(a, b)
    assert anomaly_numba.calibrate_one(b, 50.0) == anomaly.calibrate_one(a, 50.0)


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
    rng = np.random.default_rng(3)
    t = np.arange(160)
    y = np.round(10.0 * np.sin(2 * np.pi * t / 5) + rng.normal(size=160), 1)  # ties too
    y[[17, 18, 90]] = np.nan
    y[120] += 30.0
    want = reference(y, period, 37, 3)
    state = anomaly.new_calibration(period, window=37, cycles=3)
    for k, v in enumerate(y):
        before = state.copy()
        assert anomaly.peek_one(state, v) == want[k], k
        assert anomaly.peek_one(state, 1e6) >= anomaly.peek_one(state, v)
        np.testing.assert_array_equal(state, before)  # nothing learnt
        assert anomaly.calibrate_one(state, v) == want[k], k
    assert want[120] == 37 / 38


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
    assert np.all((0.0 <= res.anomaly) & (res.anomaly < 1.0))
    assert res.anomaly[[40, 41, 500]].tolist() == [0.0, 0.0, 0.0]
    # without a period the missing records leave the calibration as if they were absent
    surprises = np.array([3.0, 1.0, np.nan, 2.0, np.nan, 5.0])
    out_gap, out = np.empty(6), np.empty(4)
    anomaly.calibrate(anomaly.new_calibration(None), surprises, out_gap)
    anomaly.calibrate(anomaly.new_calibration(None), surprises[~np.isnan(surprises)], out)
    np.testing.assert_array_equal(out_gap[~np.isnan(surprises)], out)


@pytest.mark.parametrize("with_period", [False, True])
def test_invariant_under_affine_maps(with_period):
    y, day = _stream(3)
    period = day if with_period else None
    base = ps.ChangepointDetector(period=period).fit(y).anomaly
    moved = ps.ChangepointDetector(period=period).fit(3.7 * y - 120.0).anomaly
    # ranks of continuous surprises: equal, up to a rare tie broken by rounding
    assert np.mean(base != moved) < 0.005
    np.testing.assert_allclose(moved, base, atol=2e-3)


@pytest.mark.parametrize("scenario", ["cycle_idle", "idle_stream"])
def test_clean_streams_alarm_at_most_at_the_calibrated_rate(scenario):
    """A stream with no anomaly: the anomaly exceeds ``1 - alpha`` on at most a fraction
    ``alpha`` of its records (plus sampling slack), and never exceeds the largest value
    (``W / (W + 1)``) more than once per ``W`` records on average."""
    series, windows = ps.datasets.STREAMING_SUITE[scenario](seed=11)
    assert windows.size == 0
    y = series.values
    a = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:len(y) // 8])),
                               period=series.steps_per(np.timedelta64(1, "D"))).fit(y).anomaly
    for alpha in (0.05, 0.01):
        assert np.mean(a >= 1.0 - alpha) <= 1.5 * alpha
    top = anomaly.WINDOW / (anomaly.WINDOW + 1.0)
    assert np.sum(a >= top) <= 3 * len(y) / anomaly.WINDOW + 1


def test_a_level_shift_raises_the_signal_within_a_few_records():
    rng = np.random.default_rng(5)
    t = np.arange(24 * 60)
    y = 10.0 * np.sin(2 * np.pi * t / 24) + rng.normal(size=t.size)
    y[1000:] += 6.0
    a = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:200])),
                               period=24).fit(y).anomaly
    # within three records, one ranks above every earlier surprise (record t has t - 25 of
    # them: none in the first period, none for the first residual)
    assert any(a[t] == (t - 25) / (t - 24) for t in range(1000, 1003))
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
            patch.setattr(det, "_calibrators", (anomaly.calibrate_one, interrupted))
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

