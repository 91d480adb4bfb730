"""Unknown-variance and trend segments competing per segment (possibly.segment_models)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from possibly import datasets
from possibly.segment_models import (
    NormalMeanVariance,
    PolynomialTrend,
    SegmentPrior,
    _observe,
    automatic_prior,
    detect_segments,
)


@pytest.mark.parametrize("a, b", [(3.0, 7.0), (1e-3, -2.0), (250.0, 1e4)])
def test_change_points_are_invariant_under_affine_maps(a, b):
    y, _ = datasets.level_shifts(300, n_changes=3, seed=11)
    y2, _ = datasets.trend_jumps(300, n_changes=2, seed=4)
    for series in (y, y2):
        ref = detect_segments(series)
        res = detect_segments(a * series + b)
        np.testing.assert_array_equal(res.changepoints, ref.changepoints)
        np.testing.assert_array_equal(res.segment_models, ref.segment_models)
        np.testing.assert_array_equal(res.outliers, ref.outliers)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("size", [8.0, 25.0, 1e8, -25.0, -1e8])
@pytest.mark.parametrize("burst", [1, 2])
def test_a_spike_or_a_burst_of_two_is_an_outlier_never_two_change_points(seed, size, burst):
    y = np.random.default_rng(seed).normal(size=200)
    y[100:100 + burst] += size  # in units of the noise sd (1)
    res = detect_segments(y)
    assert res.changepoints.size == 0
    assert res.outliers[100:100 + burst].all()


def test_level_shift_in_the_middle_is_a_change_point_not_an_outlier():
    y = np.random.default_rng(3).normal(size=200)
    y[100:] += 25.0
    res = detect_segments(y)
    assert res.changepoints.tolist() == [100]
    assert not res.outliers[100:105].any()


def test_each_segment_gets_its_model():
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(80), 10.0 + 0.5 * np.arange(80)] + rng.normal(size=160)
    res = detect_segments(y, model=[NormalMeanVariance(), PolynomialTrend(1)])
    assert res.changepoints.tolist() == [80]
    assert res.segment_models.tolist() == [0, 1]


def test_variance_change_is_found_with_the_level_unchanged():
    rng = np.random.default_rng(5)
    y = np.r_[rng.normal(0, 1, 150), rng.normal(0, 5, 150)]
    res = detect_segments(y, model=NormalMeanVariance())
    assert res.changepoints.size == 1 and abs(int(res.changepoints[0]) - 150) <= 5


def test_integrated_evidence_is_the_student_t_predictive():
    # with g = 1 the integrated evidence of one observation is the log density of the
    # normal-gamma prior predictive, a Student t with 2a dof, location m, scale² b(1+q)/a
    m, q, a, b, y = 1.5, 0.8, 2.5, 3.0, 4.2
    _, _, _, _, ev, out = _observe(np.array([[m]]), np.array([[[q]]]), np.array([a]),
                                   np.array([b]), y, 1.0, True, -1e9)
    ref = stats.t.logpdf(y, df=2 * a, loc=m, scale=math.sqrt(b * (1 + q) / a))
    assert not out[0]
    assert ev[0] == pytest.approx(ref, rel=1e-12)
    # tempered (g = 0.3): (2π)^(-g/2) Γ(a+g/2)/Γ(a) b^a (1+gq)^(-1/2) / (b + g r²/(2(1+gq)))^(a+g/2)
    g, r = 0.3, y - m
    ref_g = (-0.5 * g * math.log(2 * math.pi) + gammaln(a + g / 2) - gammaln(a)
             + a * math.log(b) - 0.5 * math.log(1 + g * q)
             - (a + g / 2) * math.log(b + g * r * r / (2 * (1 + g * q))))
    _, _, _, _, ev_g, _ = _observe(np.array([[m]]), np.array([[[q]]]), np.array([a]),
                                   np.array([b]), y, g, True, -1e9)
    assert ev_g[0] == pytest.approx(ref_g, rel=1e-12)


def test_trend_state_is_shifted_forward():
    # noise-free line y = 2 + 0.5 t: after a few observations the linear model's state predicts
    # the next value exactly and nothing is an outlier
    y = 2.0 + 0.5 * np.arange(60)
    y = y + np.random.default_rng(1).normal(scale=1e-3, size=60)
    res = detect_segments(y, model=PolynomialTrend(1))
    assert res.changepoints.size == 0 and not res.outliers.any()


def test_change_possibility_and_intervals():
    y, truth = datasets.level_shifts(400, n_changes=3, outlier_rate=0.0, seed=2)
    res = detect_segments(y)
    p = res.change_possibility
    assert p.shape == (400,) and np.all((p >= 0) & (p <= 1))
    assert p[0] == 1.0 and np.all(p[res.changepoints] == 1.0)
    for (lo, hi), c in zip(res.changepoint_intervals(0.5), res.changepoints, strict=True):
        assert lo <= c < hi and np.all(p[lo:hi] >= 0.5)
    # far from any change point a new segment is not possible
    far = np.ones(400, bool)
    for c in truth.changepoints:
        far[max(c - 20, 0):c + 20] = False
    far[:20] = False
    assert np.median(p[far]) < 0.1


def test_missing_values_are_predict_only():
    y, _ = datasets.level_shifts(200, n_changes=1, outlier_rate=0.0, seed=7)
    y = y.copy()
    y[[30, 31, 150]] = np.nan
    res = detect_segments(y, prior=automatic_prior(y))
    assert np.isnan(res.log_consistency[[30, 31, 150]]).all()
    assert np.isnan(res.discount[[30, 31, 150]]).all()
    assert res.changepoints.size == 1


def test_automatic_prior_is_robust():
    p = automatic_prior([1.0, 2.0, 3.0, 4.0, 1e9])
    assert p == SegmentPrior(3.0, 1.4826, 5.0)
    assert automatic_prior([5.0, 5.0, 5.0, 6.0]).scale > 0


@pytest.mark.parametrize("call, name", [
    (lambda: detect_segments(np.zeros(10), model=[]), "model"),
    (lambda: detect_segments(np.zeros(10), model=["normal"]), "model"),
    (lambda: detect_segments(np.zeros(10), model=[object()]), "model"),
    (lambda: PolynomialTrend(-1), "degree"),
    (lambda: PolynomialTrend(3), "degree"),
    (lambda: PolynomialTrend(1, slope_scale=0.0), "slope_scale"),
    (lambda: detect_segments(np.zeros((10, 2))), "y"),
    (lambda: detect_segments(np.zeros(10), hazard=1.5), "hazard"),
    (lambda: detect_segments(np.zeros(10), evidence="sup"), "evidence"),
    (lambda: detect_segments(np.zeros(10), outlier_cost=0), "outlier_cost"),
    (lambda: detect_segments([np.nan, np.nan]), "y"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
