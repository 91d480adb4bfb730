"""The linear Kalman family: one class (the learned noise scale is an option of KalmanFilter),
the same verbs, one result type, and filters/ free of import cycles and private imports."""

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

import possibly as ps
from possibly.filters.kalman import KalmanFilter
from possibly.filters.state_space import LinearGaussianModel, constant_velocity

CV = constant_velocity(dt=1.0, accel_sd=0.1, obs_sd=1.0)
VERBS = ("fit", "filter", "smooth", "update", "step", "predict", "reset", "init")


def _series(T=60, seed=3):
    rng = np.random.default_rng(seed)
    y = np.cumsum(0.3 + 0.1 * rng.standard_normal(T)) + 2.0 * rng.standard_normal(T)
    y[[9, 33]] += 40.0  # outliers
    y[[5, 20, 21]] = np.nan  # missing
    return y


def test_the_learned_scale_filter_is_a_kalman_filter():
    from possibly.filters.kalman import NoiseScaleKalmanFilter

    kf = KalmanFilter(CV, learn_noise_scale=True)
    assert isinstance(kf, KalmanFilter) and type(kf) is KalmanFilter
    assert isinstance(NoiseScaleKalmanFilter(CV), KalmanFilter)
    assert "__new__" not in vars(KalmanFilter)
    assert kf.learn_noise_scale and not KalmanFilter(CV).learn_noise_scale


def test_constructor_arguments_after_the_model_are_keyword_only():
    with pytest.raises(TypeError):
        KalmanFilter(CV, None, None, None, False)
    with pytest.raises(ValueError, match="scale_prior"):
        KalmanFilter(CV, scale_prior=(2.0, 1.0))  # only with learn_noise_scale=True
    kf = KalmanFilter(CV, learn_noise_scale=True, prior=ps.MultivariateNormal(
        np.zeros(2), np.eye(2)))
    with pytest.raises(ValueError, match="prior"):
        kf.filter(np.zeros(5), prior=ps.MultivariateNormal(np.zeros(2), np.eye(2)))


def test_the_learned_scale_filter_has_every_verb():
    from possibly.filters.noise_scale import NoiseScaleResult, NoiseScaleState

    kf = KalmanFilter(CV, learn_noise_scale=True, robust_start=False)
    assert all(callable(getattr(kf, verb, None)) for verb in VERBS)
    y = _series()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit, filt, sm = kf.fit(y), kf.filter(y), kf.smooth(y)
    assert isinstance(fit, NoiseScaleResult) and isinstance(fit, ps.filters.FilterResult)
    np.testing.assert_array_equal(fit.mean, filt.mean)
    np.testing.assert_array_equal(fit.noise_scale, filt.noise_scale)
    assert filt.predicted_mean.shape == filt.mean.shape and sm.mean.shape == filt.mean.shape
    state = kf.init()
    assert isinstance(state, NoiseScaleState)
    state, info = kf.step(state, y[0])
    predicted = kf.predict(state)
    np.testing.assert_allclose(predicted.mean, CV.F @ state.mean)
    assert predicted.alpha == state.alpha and predicted.beta == state.beta
    for v in y[:10]:
        kf.update(v)
    np.testing.assert_array_equal(kf.state.mean, kf.fit(y[:10]).mean[-1])
    assert kf.reset().state is None


def _reference_smoother(model, y, scale_before, rho, prior_mean, prior_cov):
    """Textbook Kalman filter with observation noise R₀ s / ρ at each step (no update where
    ρ s = 0 or y is missing), then the textbook RTS smoother."""
    F, Q, H, R0 = (np.asarray(a, dtype=float) for a in model)
    T = len(y)
    m, P = prior_mean.copy(), prior_cov.copy()
    fm, fP, pm, pP = [], [], [], []
    for t in range(T):
        if t:
            m, P = F @ m, F @ P @ F.T + Q
        pm.append(m)
        pP.append(P)
        if not np.isnan(y[t]) and rho[t] > 0:
            R = R0 * scale_before[t] / rho[t]
            S = H @ P @ H.T + R
            K = P @ H.T @ np.linalg.inv(S)
            m = m + K @ (np.atleast_1d(y[t]) - H @ m)
            P = P - K @ H @ P
        fm.append(m)
        fP.append(P)
    sm, sP = [fm[-1]], [fP[-1]]
    for t in range(T - 2, -1, -1):
        G = fP[t] @ F.T @ np.linalg.inv(pP[t + 1])
        sm.insert(0, fm[t] + G @ (sm[0] - pm[t + 1]))
        sP.insert(0, fP[t] + G @ (sP[0] - pP[t + 1]) @ G.T)
    return np.array(fm), np.array(sm), np.array(sP)


@pytest.mark.parametrize("robust", [True, False])
@pytest.mark.parametrize("factor", [1.0, 10.0, 0.1])
def test_learned_scale_smoother_matches_a_hand_written_reference(robust, factor):
    model = LinearGaussianModel(CV.F, CV.Q, CV.H, factor * np.asarray(CV.R))
    prior = ps.MultivariateNormal(np.array([0.0, 0.3]), np.diag([4.0, 1.0]))
    kf = KalmanFilter(model, learn_noise_scale=True, robust=robust, robust_start=False,
                      prior=prior, scale_prior=(2.0, 3.0))
    y = _series()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = kf.smooth(y, engine="numpy")
    fr = res.filtered
    # the scale each step's update used: the one learned before it (the prior's mode β/α at
    # the first step)
    scale_before = np.concatenate([[3.0 / 2.0], fr.noise_scale[:-1]])
    rho = np.nan_to_num(fr.discount, nan=0.0) if robust else np.where(np.isnan(y), 0.0, 1.0)
    rho = np.where(rho / scale_before > 1e-12, rho, 0.0)  # an update below that is skipped
    f_ref, s_ref, p_ref = _reference_smoother(model, y, scale_before, rho, prior.mean,
                                              np.linalg.inv(prior.precision))
    np.testing.assert_allclose(fr.mean, f_ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(res.mean, s_ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(res.covariance, p_ref, rtol=1e-8, atol=1e-10)


def test_learned_scale_smoother_from_no_prior_is_the_standard_one_when_the_scale_is_known():
    """A scale prior of 10¹⁵ pseudo-observations keeps the scale at 1: the standard filter's
    smoother, from the uninformative prior (the information-form start)."""
    y = _series()
    known = KalmanFilter(CV, learn_noise_scale=True, robust=False,
                         scale_prior=(1e15, 1e15)).smooth(y, engine="numpy")
    std = KalmanFilter(CV, robust=False).smooth(y, engine="numpy")
    assert np.isinf(known.filtered.covariance[0]).all()  # the start is in information form
    np.testing.assert_allclose(known.mean, std.mean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(known.covariance[1:], std.covariance[1:], rtol=1e-8)


def test_learned_scale_result_frames_keep_a_datetime_index():
    index = pd.date_range("2024-01-01", periods=40, freq="h")
    ys = pd.Series(_series(40), index=index)
    kf = KalmanFilter(CV, learn_noise_scale=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = kf.fit(ys).to_frame()
        smoothed = kf.smooth(ys).to_frame()
        filtered = kf.filter(ys)
    assert isinstance(frame.index, pd.DatetimeIndex) and frame.index.equals(index)
    assert smoothed.index.equals(index) and "noise_scale" in frame.columns
    np.testing.assert_array_equal(frame["noise_scale"].to_numpy(), filtered.noise_scale)
    assert filtered.to_xarray()["noise_scale"].sizes["time"] == 40


def test_kalman_state_is_a_frozen_dataclass():
    state = KalmanFilter(CV, robust_start=False).init()
    assert dataclasses.is_dataclass(state) and not isinstance(state, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.t = 3  # type: ignore[misc]
