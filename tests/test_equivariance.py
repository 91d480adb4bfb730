"""Defaults that do not depend on the data's units: every estimator's default settings are
equivariant under a change of units ``y → a·y + b``.

Locations map to ``a·m + b``, scales to ``|a|·s`` (variances to ``a²·v``, precisions to
``λ / a²``); consistencies, discounts, change points and outlier flags do not change. The
soft-uniform model has its support at ``[0, θ]``: only ``a > 0`` and ``b = 0`` keep it, and θ
maps to ``a·θ``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import possibly as ps

PROPERTY = settings(max_examples=15, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
UNITS = [(a, b) for a in (1e-3, -2.0, 1e4) for b in (0.0, 1e3)]


def contaminated(seed: int, shape, eps: float) -> np.ndarray:
    """N(loc, sd²) with a random location and scale, a fraction ``eps`` of gross outliers."""
    rng = np.random.default_rng(seed)
    loc, sd = rng.uniform(-5.0, 5.0), 10.0 ** rng.uniform(-1.0, 1.0)
    y = rng.normal(loc, sd, size=shape)
    bad = rng.uniform(size=shape) < eps
    return np.where(bad, loc + sd * rng.choice([-1.0, 1.0], size=shape)
                    * rng.uniform(10.0, 60.0, size=shape), y)


def close_discounts(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=1e-6, atol=1e-9, equal_nan=True)


@PROPERTY
@given(seed=st.integers(0, 2**32 - 1), eps=st.sampled_from([0.0, 0.1, 0.3]),
       first_outlier=st.booleans())
def test_robust_normal_estimator_defaults(seed, eps, first_outlier):
    y = contaminated(seed, (2, 40), eps)
    if first_outlier:
        y[:, 0] += 80.0 * np.std(y)
    y[1, 7] = np.nan                                     # a missing value
    ref = ps.RobustNormalEstimator().fit(y)
    scale = 1.0 / np.sqrt(ref.precision[..., -1])
    for a, b in UNITS:
        fit = ps.RobustNormalEstimator().fit(a * y + b)
        # the data themselves are rounded at about 1e-16 (|a| |y| + |b|)
        tol = 1e-7 * (abs(a) * (np.nanmax(np.abs(y)) + scale) + abs(b))
        np.testing.assert_allclose(fit.mean, a * ref.mean + b, rtol=0, atol=float(tol.max()))
        np.testing.assert_allclose(fit.precision, ref.precision / a**2, rtol=1e-5)
        close_discounts(fit.discount, ref.discount)
        close_discounts(fit.log_consistency, ref.log_consistency)


@PROPERTY
@given(seed=st.integers(0, 2**32 - 1), eps=st.sampled_from([0.0, 0.1, 0.25]),
       order=st.sampled_from(["increasing", "given"]))
def test_soft_uniform_estimator_defaults(seed, eps, order):
    rng = np.random.default_rng(seed)
    theta = 10.0 ** rng.uniform(-2.0, 2.0)
    y = np.where(rng.uniform(size=(2, 60)) < eps, rng.uniform(1.5, 3.0, (2, 60)) * theta,
                 rng.uniform(0.0, theta, (2, 60)))
    ref = ps.SoftUniformEstimator(order=order).fit(y)
    for a in (1e-3, 2.0, 1e4):
        fit = ps.SoftUniformEstimator(order=order).fit(a * y)
        # the estimate is one of the observations: a·y exactly
        np.testing.assert_allclose(fit.estimate, a * ref.estimate, rtol=1e-13)
        np.testing.assert_allclose(fit.mode, a * ref.mode, rtol=1e-13)
        close_discounts(fit.discount, ref.discount)


@PROPERTY
@given(seed=st.integers(0, 2**32 - 1), tau=st.sampled_from([None, 0.25]))
def test_robust_covariance_estimator_defaults(seed, tau):
    rng = np.random.default_rng(seed)
    batches = rng.normal(size=(15, 8, 2)) @ np.array([[2.0, 0.0], [0.7, 0.5]])
    batches[rng.integers(15)] *= 12.0                    # an outlier batch
    ref = ps.RobustCovarianceEstimator(tau=tau).fit(batches)
    for a, b in UNITS:
        fit = ps.RobustCovarianceEstimator(tau=tau).fit(a * batches + b)
        tol = 1e-7 * (abs(a) * np.abs(batches).max() + abs(b))
        np.testing.assert_allclose(fit.mean, a * ref.mean + b, rtol=0, atol=tol)
        np.testing.assert_allclose(fit.covariance, a**2 * ref.covariance, rtol=1e-6,
                                   atol=1e-9 * a**2)
        close_discounts(fit.discount, ref.discount)
    # and any invertible linear map of the vectors: Σ → A Σ Aᵀ
    A = np.array([[0.0, -3e3], [2e-2, 5.0]])
    fit = ps.RobustCovarianceEstimator(tau=tau).fit(batches @ A.T + 7.0)
    np.testing.assert_allclose(fit.covariance, A @ ref.covariance @ A.T, rtol=1e-6,
                               atol=1e-9 * np.abs(A).max() ** 2)
    close_discounts(fit.discount, ref.discount)


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16))
def test_changepoint_detector_default_family(seed):
    y, _, _ = ps.datasets.piecewise_constant(240, n_changes=2, outlier_rate=0.02, seed=seed)
    y = y + 0.01 * np.arange(240.0)                      # a slope: the trend models compete
    ref = ps.ChangepointDetector().fit(y)
    for a, b in UNITS:
        res = ps.ChangepointDetector().fit(a * y + b)
        np.testing.assert_array_equal(res.changepoints, ref.changepoints)
        np.testing.assert_array_equal(res.outliers, ref.outliers)
        np.testing.assert_array_equal(res.segment_models, ref.segment_models)
        tol = 1e-6 * (abs(a) * np.abs(y).max() + abs(b))
        np.testing.assert_allclose(res.mean, a * ref.mean + b, rtol=0, atol=tol)
