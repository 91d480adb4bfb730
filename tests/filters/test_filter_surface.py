"""The learned-scale smoother's robust start, the EKF/UKF's argument checks and warning advice."""

import warnings

import numpy as np
import pytest

from possibly.filters.filter_result import MostlyDiscountedWarning
from possibly.filters.kalman import KalmanFilter
from possibly.filters.state_space import constant_velocity


def _series(seed: int, T: int = 40, sd: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.normal(0, 0.1 * sd, T)) + rng.normal(0, sd, T)


@pytest.mark.parametrize("engine", ["numpy", "auto"])
def test_learned_scale_smoother_masks_the_rejected_start_observation(engine, auto_compiles):
    """An outlier at t=0 that the robust start rejects: the smoother is that of the plain
    learned-scale recursion with y0 missing, and reports y0 with discount 0."""
    y = _series(0)
    y[0] += 40.0
    model = constant_velocity()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MostlyDiscountedWarning)
        res = KalmanFilter(*model, learn_noise_scale=True).smooth(y, engine=engine)
        masked = y.copy()
        masked[0] = np.nan
        ref = KalmanFilter(*model, learn_noise_scale=True, robust_start=False).smooth(
            masked, engine=engine)
    np.testing.assert_allclose(res.mean, ref.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.covariance, ref.covariance, rtol=1e-12, atol=1e-12)
    assert res.filtered.discount[0] == 0.0
    np.testing.assert_array_equal(res.filtered.discount[1:], ref.filtered.discount[1:])
    # y0 is 40 noise sds from the smoothed path: consistency far below the inliers'
    assert res.filtered.log_consistency[0] < -100


def test_learned_scale_smoother_settled_scale_hypothesis_batch():
    """A noise 100 times the prior's sd (scale hypothesis 10⁴) and outliers at t=0 and t=2 in
    one series of a batch: each series is smoothed as the plain recursion from the scale
    hypothesis the start settled on, with the rejected observations missing."""
    a = _series(1, sd=100.0)
    b = _series(2, sd=100.0)
    b[0] += 5000.0
    b[2] -= 5000.0
    model = constant_velocity()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MostlyDiscountedWarning)
        res = KalmanFilter(*model, learn_noise_scale=True).smooth(np.stack([a, b]))
        plain = KalmanFilter(*model, learn_noise_scale=True, robust_start=False,
                             scale_prior=(1.0, 1e4))
        bm = b.copy()
        bm[[0, 2]] = np.nan
        refs = [plain.smooth(a), plain.smooth(bm)]
    for i, ref in enumerate(refs):
        np.testing.assert_allclose(res.mean[i], ref.mean, rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(res.covariance[i], ref.covariance, rtol=1e-10, atol=1e-9)
    np.testing.assert_array_equal(res.filtered.discount[1, [0, 2]], 0.0)
    assert (res.filtered.discount[0] > 0).all()


def _nonlinear_model():
    from possibly.filters.nonlinear import NonlinearModel

    F, Q, H, R = constant_velocity()
    return NonlinearModel(f=lambda x: x @ F.T, h=lambda x: x @ H.T, Q=Q, R=R)


@pytest.mark.parametrize("name", ["ExtendedKalmanFilter", "UnscentedKalmanFilter"])
@pytest.mark.parametrize("value", ["no", 0.5, None, np.array([True, False])])
def test_nonlinear_robust_must_be_a_bool(name, value):
    from possibly.filters import nonlinear

    # as KalmanFilter (check_bool): a TypeError naming the argument
    with pytest.raises(TypeError, match="^robust must be a bool"):
        getattr(nonlinear, name)(_nonlinear_model(), robust=value)


@pytest.mark.parametrize("name", ["ExtendedKalmanFilter", "UnscentedKalmanFilter"])
@pytest.mark.parametrize("verb", ["filter", "smooth", "fit"])
def test_nonlinear_empty_series_is_refused_by_name(name, verb):
    from possibly.filters import nonlinear

    flt = getattr(nonlinear, name)(_nonlinear_model())
    arg = "y" if verb == "fit" else "ys"
    with pytest.raises(ValueError, match=f"^{arg} must contain at least one time step"):
        getattr(flt, verb)(np.empty((0, 1)))
    with pytest.raises(ValueError, match=f"^{arg} must contain at least one time step"):
        getattr(flt, verb)(np.empty((3, 0, 1)))


@pytest.mark.parametrize("name", ["ExtendedKalmanFilter", "UnscentedKalmanFilter"])
def test_nonlinear_warning_advises_checking_r_and_q(name):
    """Noise 100 times R: the EKF/UKF's warning asks to check R and Q in the data's units,
    not for options these filters lack."""
    from possibly.filters import nonlinear

    y = _series(3, sd=100.0)
    flt = getattr(nonlinear, name)(_nonlinear_model())
    with pytest.warns(MostlyDiscountedWarning) as caught:
        flt.filter(y)
    text = str(caught[0].message)
    assert text.endswith("check R and Q in the data's units"), text
    assert "learn_noise_scale" not in text and "constant_velocity_noise" not in text


def test_kalman_warning_text_unchanged():
    y = _series(3, sd=100.0)
    with pytest.warns(MostlyDiscountedWarning) as caught:
        KalmanFilter(*constant_velocity()).filter(y)
    assert str(caught[0].message).endswith(
        "the model does not fit the data, most likely its noise scale R (in other units than "
        "the data?): set it from the data (possibly.filters.constant_velocity_noise) or learn "
        "its scale (learn_noise_scale=True)")


def _filters_with_start():
    from possibly.filters.nonlinear import ExtendedKalmanFilter, UnscentedKalmanFilter

    model = constant_velocity()
    return [KalmanFilter(*model), KalmanFilter(*model, learn_noise_scale=True),
            ExtendedKalmanFilter(_nonlinear_model()), UnscentedKalmanFilter(_nonlinear_model())]


@pytest.mark.parametrize("index", range(4))
def test_predict_refuses_the_start_mixture_and_names_the_fix(index):
    flt = _filters_with_start()[index]
    state, _ = flt.step(flt.init(), 0.5)
    with pytest.raises(ValueError, match=r"robust start's mixture.*predict\(state\.current\)"):
        flt.predict(state)
    predicted = flt.predict(state.current)
    # the leader's state after one observation at 0.5, predicted one step (velocity unknown
    # but its mean 0): the position's mean stays at 0.5
    assert np.allclose(predicted.mean[..., 0], 0.5)


def test_learned_scale_final_inside_the_start_continues_the_whole_series():
    """A series ending inside the start: with a learned scale ``final`` is the start's state,
    so ``step`` from it gives the filter of the whole series."""
    y = _series(4)
    y[1] += 30.0
    kf = KalmanFilter(*constant_velocity(), learn_noise_scale=True)
    whole = kf.fit(y[:12], engine="numpy")
    state = kf.fit(y[:6], engine="numpy").final
    for t in range(6, 12):
        state, info = kf.step(state, y[t])
        assert info.discount == whole.discount[t]
    np.testing.assert_array_equal(state.current.mean, whole.mean[-1])
