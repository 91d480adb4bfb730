"""LogTrend: segments of log y whose evidence, with its Jacobian, is a density of y, so that
they compete with the models on y in one family."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import possibly as ps
from possibly.changepoint import (
    LogTrend,
    NormalMeanVariance,
    SegmentPrior,
    automatic_prior,
    model_family,
)


def _state(model, ys):
    """The run of ``model`` after the observations ``ys`` (exponent 1)."""
    runs = model.new_runs(1)
    for i, y in enumerate(ys):
        if i:
            runs = model.forget(runs, 1.0)
        _, runs = model.update(model.prepare(runs, y), 1.0)
    return model.forget(runs, 1.0)


def _increment(model, runs, y):
    return float(model.update(model.prepare(runs, y), 1.0)[0][0])


PAST = [2.0, 2.6, 1.7, 2.2, 3.1, 1.9]


@pytest.mark.parametrize("degree", [0, 1])
def test_increment_is_the_student_t_density_of_log_y_with_its_jacobian(degree):
    ref = 0.8
    model = LogTrend(degree, prior=SegmentPrior(0.7, 0.4, 50.0), reference_scale=ref,
                     outlier_cost=1e9)
    runs = _state(model, PAST)
    a, b = float(runs["a"][0]), float(runs["b"][0])
    m, q = float(runs["m"][0, 0]), float(runs["cov"][0, 0, 0])
    for y in (0.3, 2.0, 2.4, 9.0):
        # the normal-gamma predictive of z = (log y - 0.7) / 0.4: Student-t, 2a degrees of
        # freedom, scale √(b (1 + q) / a); as a density of log y its scale is 0.4 times that
        logpdf = stats.t.logpdf(math.log(y), df=2 * a, loc=0.7 + 0.4 * m,
                                scale=0.4 * math.sqrt(b * (1 + q) / a))
        expected = logpdf - math.log(y) + math.log(ref)  # the density of y, times ref
        assert _increment(model, runs, y) == pytest.approx(expected, rel=1e-10, abs=1e-10)


def test_increments_of_both_scales_integrate_to_the_same_constant():
    # exp(increment) = s · p(y) for the models on y and on log y alike: ∫ dy = s for both
    ys = np.array(PAST)
    ref = automatic_prior(ys)
    on_y = NormalMeanVariance(prior=ref, outlier_cost=1e9)
    on_log = LogTrend(0, prior=automatic_prior(np.log(ys)), reference_scale=ref.scale,
                      outlier_cost=1e9)
    runs_y, runs_log = _state(on_y, ys), _state(on_log, ys)
    total_y, _ = integrate.quad(lambda y: math.exp(_increment(on_y, runs_y, y)),
                                -np.inf, np.inf, limit=200)
    # y = e^u; the Student-t tails of log y are negligible past |u| = 60
    total_log, _ = integrate.quad(
        lambda u: math.exp(_increment(on_log, runs_log, math.exp(u)) + u), -60.0, 60.0,
        limit=400, points=[0.0, 1.0], epsabs=1e-12)
    assert total_y == pytest.approx(ref.scale, rel=1e-6)
    assert total_log == pytest.approx(ref.scale, rel=1e-6)


def test_the_evidence_picks_the_scale_of_the_data():
    rng = np.random.default_rng(1)
    shift = np.r_[np.zeros(200), np.ones(200)]
    lognormal = np.exp(rng.normal(0.0, 0.6, 400) + 1.5 * shift)
    normal = 20.0 + rng.normal(0.0, 3.0, 400) + 15.0 * shift
    family = model_family() + [LogTrend(0)]
    res = ps.ChangepointDetector(model=family).fit(lognormal)
    assert res.changepoints.tolist() == [200]
    assert res.segment_model_names == ["log level", "log level"]
    fit, low, _ = res.segment_fit()  # the fit of y (exp of that of log y), no band
    assert np.isfinite(fit).all() and np.isnan(low).all()
    assert np.median(fit[:200]) == pytest.approx(np.exp(np.median(np.log(lognormal[:200]))),
                                                 rel=0.1)
    res = ps.ChangepointDetector(model=family).fit(normal)
    assert res.changepoints.tolist() == [200]
    assert res.segment_model_names == ["level", "level"]


@pytest.mark.parametrize("a", [1e-3, 7.0, 4e4])
def test_family_with_log_models_is_invariant_under_scaling(a):
    rng = np.random.default_rng(2)
    y = np.exp(rng.normal(0.0, 0.5, 300) + np.r_[np.zeros(150), np.full(150, 1.0)])
    y[[40, 220]] *= 30.0  # heavy-tail spikes
    family = model_family() + [LogTrend(0)]
    ref = ps.ChangepointDetector(model=family).fit(y)
    res = ps.ChangepointDetector(model=family).fit(a * y)
    np.testing.assert_array_equal(res.changepoints, ref.changepoints)
    assert res.segment_models == ref.segment_models
    np.testing.assert_array_equal(res.outliers, ref.outliers)
    np.testing.assert_allclose(res.mean, a * ref.mean, rtol=1e-9)


def test_streaming_equals_fit():
    rng = np.random.default_rng(3)
    y = np.exp(rng.normal(0.0, 0.4, 240) + np.r_[np.zeros(120), np.full(120, 0.8)])
    warm = y[:60]
    family = model_family(prior=automatic_prior(warm)) + [
        LogTrend(0, prior=automatic_prior(np.log(warm)),
                 reference_scale=automatic_prior(warm).scale)]
    ref = ps.ChangepointDetector(model=family).fit(y)
    det = ps.ChangepointDetector(model=family)
    for v in y:
        det.update(v)
    np.testing.assert_array_equal(det.result().changepoints, ref.changepoints)
    np.testing.assert_allclose(det.result().discount, ref.discount, rtol=1e-12)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="y must be > 0"):
        ps.ChangepointDetector(model=[LogTrend(0)]).fit([1.0, 2.0, 0.0, 3.0])
    with pytest.raises(ValueError, match="evidence='integrated'"):
        LogTrend(0, evidence="profile")
    with pytest.raises(ValueError, match="reference_scale"):
        LogTrend(0, reference_scale=-1.0)
    det = ps.ChangepointDetector(model=[LogTrend(0, prior=SegmentPrior(0.0, 1.0, 10.0),
                                                 reference_scale=1.0)])
    with pytest.raises(ValueError, match="y must be"):  # update() names y, not the range
        det.update(-2.0)
    # missing values are predict-only steps
    res = ps.ChangepointDetector(model=[LogTrend(0)]).fit([1.0, np.nan, 2.0, 1.5, 1.2])
    assert np.isnan(res.discount[1]) and np.isfinite(res.discount[[0, 2, 3, 4]]).all()
