"""RobustNormalEstimator: API, vectorisation, NaN handling, bad input, robustness."""

import numpy as np
import pytest

import possibly as ps
from possibly.estimators.location_scale import location_scale_init, location_scale_step


def stream(rng, shape, eps=0.1):
    out = rng.uniform(size=shape) < eps
    return np.where(out, rng.standard_cauchy(size=shape), rng.normal(2.0, 2.0, size=shape))


def test_shapes_and_final_posterior(rng):
    y = stream(rng, (3, 5, 20))
    fit = ps.RobustNormalEstimator().fit(y)
    for arr in (fit.mean, fit.precision, fit.consistency, fit.gamma, fit.discount):
        assert arr.shape == (3, 5, 20)
    assert fit.trajectory.batch_shape == (3, 5, 20)
    assert fit.posterior.batch_shape == (3, 5)
    np.testing.assert_array_equal(fit.posterior.mode[0], fit.mean[..., -1])
    assert ((fit.consistency > 0) & (fit.consistency <= 1)).all()
    assert ((fit.discount > 0) & (fit.discount <= 1)).all()


def test_batch_equals_one_stream_at_a_time(rng):
    y = stream(rng, (6, 30), eps=0.2)
    est = ps.RobustNormalEstimator(tau=None)
    fit = est.fit(y)
    for i in range(6):
        one = est.fit(y[i])
        np.testing.assert_array_equal(one.mean, fit.mean[i])
        np.testing.assert_array_equal(one.precision, fit.precision[i])
        np.testing.assert_array_equal(one.discount, fit.discount[i])


def test_nan_is_skipped(rng):
    y = stream(rng, (25,), eps=0.2)
    holes = y.copy()
    holes[[0, 7, 8, 24]] = np.nan
    fit_holes = ps.RobustNormalEstimator().fit(holes)
    fit_clean = ps.RobustNormalEstimator().fit(y[~np.isnan(holes)])
    kept = ~np.isnan(holes)
    np.testing.assert_allclose(fit_holes.mean[kept], fit_clean.mean, rtol=1e-14)
    np.testing.assert_allclose(fit_holes.precision[kept], fit_clean.precision, rtol=1e-14)
    assert (fit_holes.discount[~kept] == 0).all()
    assert np.isnan(fit_holes.consistency[~kept]).all()
    # the estimate is carried over a hole
    assert fit_holes.mean[8] == fit_holes.mean[6]


def test_all_nan_stream_keeps_the_prior():
    fit = ps.RobustNormalEstimator(beta0=2.0, mu0=1.0).fit(np.full(4, np.nan))
    assert (fit.mean == 1.0).all() and (fit.precision == 0.0).all()


def test_gross_outlier_is_discounted_and_ignored(rng):
    y = rng.normal(2.0, 2.0, size=60)
    bad = y.copy()
    bad[40] = 1e4
    for tau in (None, 0.1):
        est = ps.RobustNormalEstimator(tau=tau)
        clean, dirty = est.fit(y), est.fit(bad)
        assert dirty.discount[40] < 1e-5
        assert abs(dirty.mean[-1] - clean.mean[-1]) < 0.05
        assert abs(dirty.precision[-1] / clean.precision[-1] - 1) < 0.1
    standard = ps.RobustNormalEstimator(robust=False).fit(bad)
    assert standard.precision[-1] < 1e-4          # the standard update is wrecked


def test_threshold_keeps_inliers_whole(rng):
    y = rng.normal(2.0, 2.0, size=200)
    fit = ps.RobustNormalEstimator(tau=0.1).fit(y)
    assert np.mean(fit.discount == 1.0) > 0.95
    plain = ps.RobustNormalEstimator(tau=None).fit(y)
    assert (plain.discount < 1).all()


def test_step_api_matches_fit(rng):
    y = stream(rng, (4, 10))
    est = ps.RobustNormalEstimator(beta0=0.5, omega=0.95, tau=0.2)
    state = est.init((4,))
    for t in range(10):
        state, info = est.step(state, y[:, t])
    fit = est.fit(y)
    np.testing.assert_array_equal(state.mean, fit.mean[:, -1])
    np.testing.assert_array_equal(info.discount, fit.discount[:, -1])
    # the step does not modify its input
    s0 = location_scale_init(1.0, batch_shape=(2,))
    location_scale_step(s0, np.array([1.0, 2.0]))
    assert (s0.k == 0).all()


@pytest.mark.parametrize("kwargs, name", [
    ({"omega": 0.0}, "omega"), ({"omega": 1.0}, "omega"), ({"omega": 1.2}, "omega"),
    ({"tau": 0.0}, "tau"), ({"tau": 1.5}, "tau"), ({"tau": -0.1}, "tau"),
    ({"beta0": 0.0}, "beta0"), ({"beta0": -1.0}, "beta0"), ({"beta0": np.inf}, "beta0"),
    ({"mu0": np.nan}, "mu0"),
])
def test_bad_parameters_rejected(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ps.RobustNormalEstimator(**kwargs)


def test_tau_one_is_accepted():
    fit = ps.RobustNormalEstimator(tau=1.0).fit([1.0, 2.0, 3.0])
    assert fit.mean.shape == (3,)


@pytest.mark.parametrize("y", [[1.0, np.inf], [-np.inf, 1.0], 3.0, ["a", "b"]])
def test_bad_observations_rejected(y):
    with pytest.raises(ValueError, match="y"):
        ps.RobustNormalEstimator().fit(y)


def test_pure_step_validates():
    state = location_scale_init(1.0)
    with pytest.raises(ValueError, match="omega"):
        location_scale_step(state, 1.0, omega=1.0)
    with pytest.raises(ValueError, match="tau"):
        location_scale_step(state, 1.0, tau=0.0)
    with pytest.raises(ValueError, match="y"):
        location_scale_step(state, np.inf)
    with pytest.raises(ValueError, match="beta0"):
        location_scale_init(0.0)
