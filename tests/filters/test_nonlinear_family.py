"""The EKF and UKF as members of the state-space family: the KalmanFilter's verbs, the
FilterResult, the start from no prior (robust start) and the extended / unscented RTS
smoothers, checked against the linear Kalman filter, filterpy and textbook recursions."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import warnings

import numpy as np
import pytest
from filterpy.kalman import MerweScaledSigmaPoints
from filterpy.kalman import UnscentedKalmanFilter as FPUKF

import possibly as ps
from possibly.filters.filter_result import FilterResult
from possibly.filters.kalman import KalmanFilter
from possibly.filters.nonlinear import (
    ExtendedKalmanFilter,
    NonlinearModel,
    NonlinearState,
    UnscentedKalmanFilter,
)
from possibly.filters.robust_start import KalmanStartState
from possibly.filters.state_space import constant_velocity

FILTERS = [ExtendedKalmanFilter, UnscentedKalmanFilter]

# -- a linear model, written as a nonlinear one ------------------------------------------------
F, Q, H, R = constant_velocity(dt=1.0, accel_sd=0.3, obs_sd=1.0)


def linear_model() -> NonlinearModel:
    # exact Jacobians: finite differences would differ from F and H by ~1e-10
    return NonlinearModel(f=lambda x: x @ F.T, h=lambda x: x @ H.T, Q=Q, R=R,
                          f_jacobian=lambda x: np.broadcast_to(F, x.shape[:-1] + F.shape),
                          h_jacobian=lambda x: np.broadcast_to(H, x.shape[:-1] + H.shape))


def linear_series(seed: int = 0, T: int = 30) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ys = np.cumsum(np.cumsum(0.3 * rng.normal(size=T))) + rng.normal(size=T)
    ys[[0, 9]] += 25.0          # an outlier first (the robust start's case) and a later one
    ys[[4, 15]] = np.nan        # missing, one of them inside the start
    return ys


def assert_same(a, b, tol=1e-10):
    """Equal to ``tol`` (relative to 1 + |b|), infinities (not yet informed) at the same
    places, NaN (missing) at the same places."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    fin = np.isfinite(b)
    np.testing.assert_array_less(np.abs(a[fin] - b[fin]), tol * (1.0 + np.abs(b[fin])))


FIELDS = ("mean", "variance", "covariance", "log_consistency", "discount", "predicted_mean",
          "predicted_covariance")


@pytest.mark.filterwarnings("ignore::possibly.filters.filter_result.MostlyDiscountedWarning")
@pytest.mark.parametrize("cls", FILTERS)
@pytest.mark.parametrize("kw", [{}, {"robust_start": False}, {"robust": False},
                                {"coverage": None, "dim": 1.0}],
                         ids=["robust start", "plain", "standard", "paper"])
def test_linear_model_from_no_prior_is_the_kalman_filter(cls, kw):
    """From no prior (the uninformative start, with the robust start by default), a linear
    model through the EKF/UKF is the linear KalmanFilter: filter and smoother, outliers and
    missing observations included."""
    ys = linear_series()
    kf = KalmanFilter(F, Q, H, R, **kw)
    ref, ref_s = kf.filter(ys, engine="numpy"), kf.smooth(ys, engine="numpy")
    flt = cls(linear_model(), **kw)
    res, sm = flt.filter(ys), flt.smooth(ys)
    assert np.isinf(res.variance[0, 1])  # the velocity is not informed by one observation
    for name in FIELDS:
        assert_same(getattr(res, name), getattr(ref, name))
    assert_same(sm.mean, ref_s.mean)
    assert_same(sm.covariance, ref_s.covariance)
    assert_same(sm.filtered.discount, ref_s.filtered.discount)
    assert_same(sm.filtered.log_consistency, ref_s.filtered.log_consistency)
    assert_same(res.precision, ref.precision)  # finite also where covariances are inf
    assert_same(res.predicted_precision, ref.predicted_precision)
    if kw == {}:  # the first observation is the outlier the start rejects, looking back
        assert sm.filtered.discount[0] == 0.0 and res.discount[9] < 1e-6


@pytest.mark.parametrize("cls", FILTERS)
def test_linear_model_robust_start_from_a_proper_prior(cls):
    """``robust_start=True`` runs the start from a proper prior, as the KalmanFilter does."""
    ys = linear_series(seed=2)
    prior = ps.MultivariateNormal([0.0, 0.0], np.diag([0.01, 0.1]))
    ref = KalmanFilter(F, Q, H, R, prior=prior).filter(ys, engine="numpy")
    ref_s = KalmanFilter(F, Q, H, R, prior=prior).smooth(ys, engine="numpy")
    flt = cls(linear_model(), prior=prior, robust_start=True)
    res, sm = flt.filter(ys), flt.smooth(ys)
    for name in FIELDS:
        assert_same(getattr(res, name), getattr(ref, name))
    assert_same(sm.mean, ref_s.mean)
    assert_same(sm.covariance, ref_s.covariance)


@pytest.mark.parametrize("cls", FILTERS)
def test_no_prior_batch_and_streaming_are_the_series_run(cls):
    """A batch from no prior equals each series run alone; streaming ``update`` (through the
    start's mixture state) equals ``filter``."""
    ys = np.stack([linear_series(seed=s, T=20) for s in range(3)])[..., None]
    flt = cls(linear_model())
    batch = flt.filter(ys)
    for b in range(3):
        one = flt.filter(ys[b])
        for name in ("mean", "covariance", "log_consistency", "discount"):
            assert_same(getattr(batch, name)[b], getattr(one, name), tol=1e-12)
    stream = cls(linear_model())
    one = stream.filter(ys[0])
    for t, y_t in enumerate(ys[0]):
        info = stream.update(y_t)
        assert_same(info.discount, one.discount[t], tol=1e-12)
        assert_same(info.log_consistency, one.log_consistency[t], tol=1e-12)
        assert_same(stream.state.mean, one.mean[t], tol=1e-12)
    assert isinstance(stream.state, NonlinearState)  # the start collapsed after 14 steps
    np.testing.assert_array_equal(stream.state.mean, one.final.mean)
    assert stream.reset().state is None
    assert isinstance(stream.init(), KalmanStartState)


# -- nonlinear models ----------------------------------------------------------------------
def test_no_prior_first_observation_defines_the_state_scalar():
    """h(θ) = θ³ from no prior: the first filtered state is the mode of the first
    observation's likelihood, ∛y_1 (Gauss-Newton from the guess), whatever the guess."""
    model = NonlinearModel(f=lambda x: x, h=lambda x: x ** 3, Q=[[1e-4]], R=[[0.01]])
    ys = np.array([8.3, 8.1, 7.9, 8.0])
    for guess in (1.0, 3.5):
        for cls in FILTERS:
            res = cls(model, initial_guess=[guess], robust_start=False).filter(ys)
            assert abs(res.mean[0, 0] - np.cbrt(8.3)) < 1e-10
            # its variance is that of the likelihood linearised at the mode: R / h'(θ)²
            assert np.isclose(res.variance[0, 0], 0.01 / (3 * np.cbrt(8.3) ** 2) ** 2,
                              rtol=1e-9)
            assert res.log_consistency[0] == 0.0 and res.discount[0] == 1.0


def test_no_prior_extended_smoother_is_the_limit_of_a_diffuse_prior():
    """With a nonlinear transition, the extended filter and smoother from no prior
    (information form, ``f`` linearised at the filtered mean) are the limit of those from a
    proper prior of precision ε I (covariance form throughout) as ε -> 0: the difference
    shrinks with ε."""
    def f(x):
        return np.stack([x[..., 0] + x[..., 1], 0.9 * x[..., 1] + 0.3 * np.sin(x[..., 1])], -1)

    model = NonlinearModel(f=f, h=lambda x: x[..., :1], Q=np.diag([0.01, 0.04]), R=[[0.25]])
    rng = np.random.default_rng(0)
    x, ys = np.array([0.0, 1.0]), []
    for t in range(25):
        if t:
            x = f(x) + rng.normal(size=2) * [0.1, 0.2]
        ys.append(x[0] + 0.5 * rng.normal())
    ys = np.array(ys)
    flat = ExtendedKalmanFilter(model, robust_start=False).smooth(ys)
    assert np.isinf(flat.filtered.covariance[0, 1, 1])  # velocity not informed at first
    for eps in (1e-4, 1e-6):
        diffuse = ExtendedKalmanFilter(model, prior=ps.MultivariateNormal(
            [0.0, 0.0], eps * np.eye(2))).smooth(ys)
        assert np.abs(flat.mean - diffuse.mean).max() < 100 * eps
        assert np.abs(flat.covariance - diffuse.covariance).max() < 100 * eps
        assert np.abs(flat.filtered.mean[1:] - diffuse.filtered.mean[1:]).max() < 100 * eps


LANDMARK = np.array([5.0, -3.0])


def range_bearing(x):
    dx, dy = x[..., 0] - LANDMARK[0], x[..., 1] - LANDMARK[1]
    return np.stack([np.hypot(dx, dy), np.arctan2(dy, dx)], axis=-1)


def test_no_prior_range_and_bearing_recover_the_position():
    """A static 2-D position seen by range and bearing from no prior: the first observation
    defines it exactly (the inverse of h in closed form), and an outlier first is rejected
    by the robust start where the plain recursion keeps it."""
    model = NonlinearModel(f=lambda x: x, h=range_bearing, Q=1e-6 * np.eye(2),
                           R=np.diag([0.01, 1e-4]))
    rng = np.random.default_rng(4)
    truth = np.array([2.0, 1.0])
    ys = range_bearing(truth) + rng.normal(size=(20, 2)) * [0.1, 0.01]
    r, b = ys[0]
    for cls in FILTERS:
        res = cls(model, initial_guess=[0.0, 0.0]).filter(ys)
        np.testing.assert_allclose(res.mean[0], LANDMARK + r * np.array([np.cos(b), np.sin(b)]),
                                   rtol=0, atol=1e-9)
        assert np.abs(res.mean[-1] - truth).max() < 0.05
    bad = ys.copy()
    bad[0, 0] += 6.0  # a range outlier first
    for cls in FILTERS:
        rob = cls(model, initial_guess=[0.0, 0.0]).filter(bad)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plain = cls(model, initial_guess=[0.0, 0.0], robust_start=False).filter(bad)
        assert np.abs(rob.mean[-1] - truth).max() < 0.05
        assert cls(model, initial_guess=[0.0, 0.0]).smooth(bad).filtered.discount[0] == 0.0
        assert np.abs(plain.mean[-1] - truth).max() > 1.0  # the track is lost


DT = 0.5
F_CV = np.eye(4)
F_CV[0, 2] = F_CV[1, 3] = DT


def f_cv(x):
    """Constant velocity in 2-D, state (px, py, vx, vy)."""
    return x @ F_CV.T

Q_CV = 0.01 * np.eye(4)
R_RB = np.diag([0.1, 0.01])
M0 = np.array([0.0, 0.0, 1.0, 0.5])
PRIOR = ps.MultivariateNormal(M0, np.linalg.inv(np.diag([1.0, 1.0, 0.1, 0.1])))


def cv_model():
    return NonlinearModel(f=f_cv, h=range_bearing, Q=Q_CV, R=R_RB,
                          f_jacobian=lambda x: np.broadcast_to(F_CV, x.shape[:-1] + (4, 4)))


def simulate(seed, T=60, outliers=()):
    rng = np.random.default_rng(seed)
    x, xs, ys = M0.copy(), [], []
    for t in range(T):
        if t:
            x = f_cv(x) + rng.multivariate_normal(np.zeros(4), Q_CV)
        xs.append(x)
        ys.append(range_bearing(x) + rng.multivariate_normal(np.zeros(2), R_RB))
    ys = np.array(ys)
    ys[list(outliers), 0] += 30.0
    return np.array(xs), ys


def textbook_eks(fr):
    """Extended RTS smoother (Särkkä, Bayesian Filtering and Smoothing, alg. 9.2) on the
    filter's stored filtered and predicted moments, in plain numpy."""
    m, P = fr.mean, fr.covariance
    mp, Pp = fr.predicted_mean, fr.predicted_covariance
    ms, Ps = m.copy(), P.copy()
    for t in range(len(m) - 2, -1, -1):
        G = P[t] @ F_CV.T @ np.linalg.inv(Pp[t + 1])
        ms[t] = m[t] + G @ (ms[t + 1] - mp[t + 1])
        Ps[t] = P[t] + G @ (Ps[t + 1] - Pp[t + 1]) @ G.T
    return ms, Ps


def test_extended_smoother_is_the_textbook_one():
    _, ys = simulate(seed=1, outliers=(10, 30))
    sm = ExtendedKalmanFilter(cv_model(), prior=PRIOR).smooth(ys)
    fr = sm.filtered
    assert fr.discount[10] < 1e-6 and fr.discount[30] < 1e-6  # robust: the discounts kept
    # the stored predictions are the EKF's: f at the filtered mean, F P Fᵀ + Q
    np.testing.assert_allclose(fr.predicted_mean[1:], f_cv(fr.mean[:-1]), rtol=1e-13)
    np.testing.assert_allclose(fr.predicted_covariance[1:],
                               F_CV @ fr.covariance[:-1] @ F_CV.T + Q_CV, rtol=1e-12,
                               atol=1e-15)
    ms, Ps = textbook_eks(fr)
    np.testing.assert_allclose(sm.mean, ms, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sm.covariance, Ps, rtol=1e-9, atol=1e-13)


def test_unscented_smoother_is_filterpys():
    """filterpy's URTS smoother (its own sigma points, transition and Q) on our filtered
    moments gives our unscented smoother."""
    _, ys = simulate(seed=2, outliers=(20,))
    alpha, beta, kappa = 0.5, 2.0, -1.0
    sm = UnscentedKalmanFilter(cv_model(), prior=PRIOR, alpha=alpha, beta=beta,
                               kappa=kappa).smooth(ys)
    pts = MerweScaledSigmaPoints(4, alpha=alpha, beta=beta, kappa=kappa)
    ukf = FPUKF(dim_x=4, dim_z=2, dt=DT, hx=range_bearing, fx=lambda x, dt: f_cv(x),
                points=pts)
    ukf.Q, ukf.R = Q_CV, R_RB
    ms, Ps, _ = ukf.rts_smoother(sm.filtered.mean.copy(), sm.filtered.covariance.copy())
    np.testing.assert_allclose(sm.mean, ms, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sm.covariance, Ps, rtol=1e-9, atol=1e-13)


@pytest.mark.parametrize("cls", FILTERS)
def test_smoothed_beats_filtered(cls):
    """On simulated range-bearing tracks (with outliers) the smoothed positions have a
    smaller RMSE than the filtered ones, seed after seed."""
    for seed in range(5):
        xs, ys = simulate(seed=10 + seed, outliers=(15, 40))
        sm = cls(cv_model(), prior=PRIOR).smooth(ys)
        rmse_f = np.sqrt(((sm.filtered.mean[:, :2] - xs[:, :2]) ** 2).mean())
        rmse_s = np.sqrt(((sm.mean[:, :2] - xs[:, :2]) ** 2).mean())
        assert rmse_s < rmse_f, (seed, rmse_s, rmse_f)


# -- the surface ------------------------------------------------------------------------------
VERBS = ("fit", "filter", "smooth", "update", "step", "predict", "reset", "init")


@pytest.mark.parametrize("cls", FILTERS)
def test_same_verbs_as_the_kalman_filter(cls):
    for verb in VERBS:
        ours = inspect.signature(getattr(cls, verb)).parameters
        theirs = inspect.signature(getattr(KalmanFilter, verb)).parameters
        assert [(p.name, p.kind) for p in ours.values()] == \
            [(p.name, p.kind) for p in theirs.values()], verb
    params = list(inspect.signature(cls).parameters.values())
    assert params[0].name == "model"
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])
    with pytest.raises(TypeError):
        cls(linear_model(), PRIOR)


@pytest.mark.parametrize("cls", FILTERS)
def test_result_is_the_filter_result_and_keeps_the_index(cls):
    pd = pytest.importorskip("pandas")
    ys = pd.Series(linear_series(T=20), index=pd.date_range("2024-01-01", periods=20))
    flt = cls(linear_model())
    res = flt.filter(ys)
    assert type(res) is FilterResult
    assert isinstance(res.final, NonlinearState)
    frame = res.to_frame()
    assert frame.index.equals(ys.index)
    assert list(frame.columns) == ["x0", "x1", "x0_sd", "x1_sd", "log_consistency",
                                   "consistency", "discount"]
    assert flt.smooth(ys).to_frame().index.equals(ys.index)
    small = flt.filter(ys, keep=("mean",))
    assert small.covariance is None and small.predicted_mean is None
    np.testing.assert_array_equal(small.mean, res.mean)
    # predict is one step of the model's transition
    state = res.final
    np.testing.assert_allclose(flt.predict(state).mean, state.mean @ F.T, rtol=1e-14)


def test_state_is_a_frozen_dataclass():
    flt = ExtendedKalmanFilter(linear_model(), prior=ps.MultivariateNormal([0.0, 0.0],
                                                                            np.eye(2)))
    state = flt.init((3,))
    assert dataclasses.is_dataclass(state) and not isinstance(state, tuple)
    assert state.mean.shape == (3, 2) and state.covariance.shape == (3, 2, 2)
    assert not state.started and not state.information_form
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.mean = np.zeros(2)  # type: ignore[misc]
    new, _ = flt.step(state, np.ones((3, 1)))
    assert new.started and new.t == 1
    back = pickle.loads(pickle.dumps(new))
    np.testing.assert_array_equal(back.mean, new.mean)
    none = ExtendedKalmanFilter(linear_model(), robust_start=False).init()
    assert none.information_form and not np.any(none.precision)


def test_bad_arguments():
    model = linear_model()
    with pytest.raises(ValueError, match="engine"):
        ExtendedKalmanFilter(model).filter(np.zeros(3), engine="numba")
    with pytest.raises(ValueError, match="engine"):
        UnscentedKalmanFilter(model).smooth(np.zeros(3), engine="fast")
    with pytest.raises(ValueError, match=r"initial_guess must have shape \(2,\)"):
        ExtendedKalmanFilter(model, initial_guess=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="initial_guess"):
        ExtendedKalmanFilter(model, initial_guess=[np.nan, 0.0])
    with pytest.raises(TypeError, match="robust_start"):
        ExtendedKalmanFilter(model, robust_start="yes")
    with pytest.raises(ValueError, match="keep"):
        ExtendedKalmanFilter(model).filter(np.zeros(3), keep=("variance",))
    with pytest.raises(ValueError, match="prior"):
        ExtendedKalmanFilter(model).filter(np.zeros(3), prior="flat")
    flat = NonlinearModel(f=lambda x: 0.0 * x, h=lambda x: x[..., :1], Q=Q, R=R)
    with pytest.raises(ValueError, match="Jacobian of f must be invertible"):
        ExtendedKalmanFilter(flat).filter(np.zeros(3))


@pytest.mark.parametrize("verb", ["fit", "filter", "smooth"])
def test_mostly_discounted_warning_points_at_the_callers_line(verb):
    model = NonlinearModel(f=lambda x: x, h=lambda x: x, Q=[[1e-6]], R=[[1e-6]])
    ekf = ExtendedKalmanFilter(model, prior=ps.MultivariateNormal([0.0], [[1.0]]))
    y = np.r_[0.0, 100.0 * np.arange(1, 12.0)]  # every step far from a near-static state
    with pytest.warns(ps.MostlyDiscountedWarning) as caught:
        getattr(ekf, verb)(y)
    assert caught[0].filename == __file__
