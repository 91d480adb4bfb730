"""Robust EKF and UKF: filterpy equivalence with the discount off, the robust update against a
hand computation, missing data, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from filterpy.kalman import ExtendedKalmanFilter as FPEKF
from filterpy.kalman import MerweScaledSigmaPoints
from filterpy.kalman import UnscentedKalmanFilter as FPUKF
from scipy import stats

import possibly as ps
from possibly.filters.nonlinear import (
    ExtendedKalmanFilter,
    NonlinearModel,
    UnscentedKalmanFilter,
)

DT = 0.5
LANDMARK = np.array([5.0, -3.0])


def f_cv(x):
    """Constant velocity in 2-D, state (px, py, vx, vy)."""
    out = np.array(x, dtype=float, copy=True)
    out[..., 0] += DT * x[..., 2]
    out[..., 1] += DT * x[..., 3]
    return out


F_CV = np.eye(4)
F_CV[0, 2] = F_CV[1, 3] = DT


def h_rb(x):
    """Range and bearing to a landmark."""
    dx, dy = x[..., 0] - LANDMARK[0], x[..., 1] - LANDMARK[1]
    return np.stack([np.hypot(dx, dy), np.arctan2(dy, dx)], axis=-1)


def h_rb_jac(x):
    dx, dy = x[..., 0] - LANDMARK[0], x[..., 1] - LANDMARK[1]
    r2 = dx * dx + dy * dy
    r = np.sqrt(r2)
    jac = np.zeros(x.shape[:-1] + (2, 4))
    jac[..., 0, 0], jac[..., 0, 1] = dx / r, dy / r
    jac[..., 1, 0], jac[..., 1, 1] = -dy / r2, dx / r2
    return jac


Q = 0.01 * np.eye(4)
R = np.diag([0.1, 0.01])
M0 = np.array([0.0, 0.0, 1.0, 0.5])
P0 = np.diag([1.0, 1.0, 0.1, 0.1])
PRIOR = ps.MultivariateNormal(M0, np.linalg.inv(P0))


def simulate(T=40, seed=0, outliers=()):
    rng = np.random.default_rng(seed)
    x = M0.copy()
    ys = []
    for t in range(T):
        if t:
            x = f_cv(x) + rng.multivariate_normal(np.zeros(4), Q)
        ys.append(h_rb(x) + rng.multivariate_normal(np.zeros(2), R))
    ys = np.array(ys)
    for t in outliers:
        ys[t, 0] += 30.0
    return ys


def model(jacobian=True):
    return NonlinearModel(f=f_cv, h=h_rb, Q=Q, R=R,
                          f_jacobian=(lambda x: np.broadcast_to(F_CV, x.shape[:-1] + (4, 4)))
                          if jacobian else None,
                          h_jacobian=h_rb_jac if jacobian else None)


def filterpy_ekf(ys):
    ekf = FPEKF(dim_x=4, dim_z=2)
    ekf.x, ekf.P, ekf.F, ekf.Q, ekf.R = M0.copy(), P0.copy(), F_CV, Q, R
    out = []
    for t, y in enumerate(ys):
        if t:
            ekf.predict()
        ekf.update(y, HJacobian=h_rb_jac, Hx=h_rb)
        out.append((ekf.x.copy(), ekf.P.copy()))
    return out


@pytest.mark.parametrize("jacobian", [True, False])
def test_ekf_standard_equals_filterpy(jacobian):
    ys = simulate()
    res = ExtendedKalmanFilter(model(jacobian), prior=PRIOR, robust=False).fit(ys)
    ref = filterpy_ekf(ys)
    tol = 1e-10 if jacobian else 1e-6  # finite differences
    for t, (x, P) in enumerate(ref):
        np.testing.assert_allclose(res.mean[t], x, rtol=tol, atol=tol)
        np.testing.assert_allclose(res.covariance[t], P, rtol=tol, atol=tol)
    assert np.all(res.discount == 1.0)


def test_ukf_standard_equals_filterpy():
    ys = simulate()
    alpha, beta, kappa = 0.5, 2.0, -1.0
    pts = MerweScaledSigmaPoints(4, alpha=alpha, beta=beta, kappa=kappa)
    ukf = FPUKF(dim_x=4, dim_z=2, dt=DT, hx=h_rb, fx=lambda x, dt: f_cv(x), points=pts)
    ukf.x, ukf.P, ukf.Q, ukf.R = M0.copy(), P0.copy(), Q, R
    ukf.sigmas_f = pts.sigma_points(ukf.x, ukf.P)  # the prior is that of θ_1: no predict
    ours = UnscentedKalmanFilter(model(False), prior=PRIOR, robust=False, alpha=alpha, beta=beta,
                                 kappa=kappa).fit(ys)
    for t, y in enumerate(ys):
        if t:
            ukf.predict()
        ukf.update(y)
        np.testing.assert_allclose(ours.mean[t], ukf.x, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(ours.covariance[t], ukf.P, rtol=1e-9, atol=1e-10)


def test_linear_model_gives_the_kalman_filter():
    """With linear f and h both filters are the robust Kalman filter (discounts included)."""
    F, Qm, H, Rm = ps.filters.constant_velocity(dt=1.0, accel_sd=0.1, obs_sd=1.0)
    mod = NonlinearModel(f=lambda x: x @ F.T, h=lambda x: x @ H.T, Q=Qm, R=Rm)
    prior = ps.MultivariateNormal([0.0, 0.1], np.diag([1.0, 10.0]))
    ys = np.array([0.2, 0.1, 0.5, 9.0, 0.4, np.nan, 0.9, 1.1])
    # the EKF/UKF have no robust start: the Kalman filter's plain recursion
    ref = ps.KalmanFilter(F, Qm, H, Rm, robust_start=False).filter(ys, prior=prior)
    for cls in (ExtendedKalmanFilter, UnscentedKalmanFilter):
        res = cls(mod, prior=prior).fit(ys)
        np.testing.assert_allclose(res.mean, ref.mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(res.covariance, ref.covariance, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(res.log_consistency, ref.log_consistency, rtol=1e-9,
                                   equal_nan=True)
        np.testing.assert_allclose(res.discount, ref.discount, rtol=1e-9, equal_nan=True)


def test_robust_update_by_hand():
    """One EKF step: consistency of the linearised predictive, R inflated by 1 / γ."""
    mod = model()
    ekf = ExtendedKalmanFilter(mod, prior=PRIOR, coverage=None)  # the paper's γ = c^(1/d)
    y = h_rb(M0) + np.array([2.0, 0.3])
    state, info = ekf.step(ekf.init(), y)
    Hj = h_rb_jac(M0)
    S = Hj @ P0 @ Hj.T + R
    v = y - h_rb(M0)
    log_c = -0.5 * v @ np.linalg.solve(S, v)
    gamma = np.exp(log_c / 4)
    K = P0 @ Hj.T @ np.linalg.inv(Hj @ P0 @ Hj.T + R / gamma)
    assert np.isclose(info.log_consistency, log_c, rtol=1e-12)
    assert np.isclose(info.discount, gamma, rtol=1e-12)
    np.testing.assert_allclose(state.mean, M0 + K @ v, rtol=1e-12)
    np.testing.assert_allclose(state.covariance, (np.eye(4) - K @ Hj) @ P0, rtol=1e-10,
                               atol=1e-14)
    # the default relative discount: (c / c₀)^(1/4) capped at 1, c₀ from scipy's χ²₂ quantile
    _, info = ExtendedKalmanFilter(mod, prior=PRIOR).step(ekf.init(), y)
    log_c0 = -0.5 * stats.chi2.ppf(0.9, 2)
    assert log_c < log_c0  # outside the 90% region: discounted
    assert np.isclose(info.discount, np.exp((log_c - log_c0) / 4), rtol=1e-12)


@pytest.mark.parametrize("cls", [ExtendedKalmanFilter, UnscentedKalmanFilter])
def test_outliers_are_discounted(cls):
    """Gross range outliers are (almost) ignored: the robust track stays near the clean one."""
    clean = simulate(T=60, seed=3)
    dirty = simulate(T=60, seed=3, outliers=(10, 25, 40))
    ref = cls(model(False), prior=PRIOR).fit(clean).mean
    rob = cls(model(False), prior=PRIOR).fit(dirty)
    std = cls(model(False), prior=PRIOR, robust=False).fit(dirty).mean
    assert np.all(rob.discount[[10, 25, 40]] < 1e-6)
    err_rob = np.abs(rob.mean[:, :2] - ref[:, :2]).max()
    err_std = np.abs(std[:, :2] - ref[:, :2]).max()
    assert err_rob < 0.05 * err_std


@pytest.mark.parametrize("cls", [ExtendedKalmanFilter, UnscentedKalmanFilter])
def test_batch_and_missing(cls):
    ys = np.stack([simulate(T=15, seed=s) for s in range(3)])
    ys[1, 4] = np.nan
    res = cls(model(False), prior=PRIOR).fit(ys)
    assert res.mean.shape == (3, 15, 4) and res.discount.shape == (3, 15)
    assert np.isnan(res.discount[1, 4]) and np.isnan(res.log_consistency[1, 4])
    for b in range(3):
        one = cls(model(False), prior=PRIOR).fit(ys[b])
        np.testing.assert_allclose(res.mean[b], one.mean, rtol=1e-12, atol=1e-14)
    # a missing step predicts only
    st = cls(model(False), prior=PRIOR)
    s = st.init()
    s, _ = st.step(s, ys[1, 0])
    s2, info = st.step(s, [np.nan, np.nan])
    np.testing.assert_allclose(s2.mean, f_cv(s.mean), rtol=1e-12)


def test_bad_input():
    with pytest.raises(ValueError, match="h"):
        ExtendedKalmanFilter(NonlinearModel(f=f_cv, h=lambda x: np.abs(x[..., :2]), Q=Q, R=R),
                             prior=ps.MultivariateNormal(np.zeros(4), np.eye(4))
                             ).fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="h returned a non-finite"), \
            np.errstate(invalid="ignore"):
        UnscentedKalmanFilter(NonlinearModel(f=f_cv, h=lambda x: np.log(x[..., :2]), Q=Q, R=R),
                              prior=ps.MultivariateNormal(np.full(4, 0.1), np.eye(4))
                              ).fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="R"):
        NonlinearModel(f=f_cv, h=h_rb, Q=Q, R=-R)
    with pytest.raises(ValueError, match="f must be callable"):
        NonlinearModel(f=1.0, h=h_rb, Q=Q, R=R)
    with pytest.raises(ValueError, match="h must return an array of shape"):
        ExtendedKalmanFilter(NonlinearModel(f=f_cv, h=lambda x: x, Q=Q, R=R), prior=PRIOR
                             ).fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="prior"):
        ExtendedKalmanFilter(model(), prior=ps.MultivariateNormal(np.zeros(4), np.zeros((4, 4))))
    with pytest.raises(ValueError, match="y must have shape"):
        ExtendedKalmanFilter(model(), prior=PRIOR).fit(np.ones((3, 3)))
    with pytest.raises(ValueError, match="tau"):
        ExtendedKalmanFilter(model(), prior=PRIOR, tau=2.0)


def test_base_class_declares_the_steps():
    """``_predict``/``_update`` are abstract on the shared base: a subclass must define both."""
    from possibly.filters.nonlinear import _RobustNonlinearFilter

    class Incomplete(_RobustNonlinearFilter):
        def _predict(self, mean, cov):
            return mean, cov

    model = NonlinearModel(f=lambda x: x, h=lambda x: x, Q=[[0.1]], R=[[1.0]])
    with pytest.raises(TypeError, match="_update"):
        Incomplete(model, prior=ps.MultivariateNormal([0.0], [[1.0]]))


@pytest.mark.parametrize("cls", [ExtendedKalmanFilter, UnscentedKalmanFilter])
def test_fit_checks_the_observations_once(cls, monkeypatch):
    """``fit`` checks the whole series once and steps unchecked; the public ``step`` still
    checks, and the results equal a loop over it exactly."""
    import possibly.filters.nonlinear as nl

    calls = []
    check = nl._check_observation_values

    def counting(y):
        calls.append(np.shape(y))
        return check(y)

    monkeypatch.setattr(nl, "_check_observation_values", counting)
    ys = simulate(T=20, seed=1)
    ys[5] = np.nan
    f = cls(model(False), prior=PRIOR)
    res = f.fit(ys)
    assert calls == [ys.shape]
    state, lcs = f.init(), []
    for y_t in ys:
        state, info = f.step(state, y_t)
        lcs.append(info.log_consistency)
    assert len(calls) == 1 + len(ys)  # the public step checked each observation
    np.testing.assert_array_equal(state.mean, res.mean[-1])
    np.testing.assert_array_equal(state.covariance, res.covariance[-1])
    np.testing.assert_array_equal(lcs, res.log_consistency)
    with pytest.raises(ValueError, match="observations must be finite"):
        f.step(state, [np.inf, 0.0])
    with pytest.raises(ValueError, match="observations must be finite"):
        f.fit(np.r_[ys, [[np.inf, 0.0]]])


@pytest.mark.parametrize("jacobian", [True, False])
@pytest.mark.parametrize("cls", [ExtendedKalmanFilter, UnscentedKalmanFilter])
def test_smoother_equals_the_backward_pass_with_one_gain_a_step(cls, jacobian):
    """The smoother takes the gains of all steps in one call (time as a batch axis of f): the
    same numbers as the RTS recursion written out with one ``_smoother_gain`` call a step."""
    ys = np.stack([simulate(T=30, seed=s, outliers=(7,)) for s in range(3)])
    ys[1, 12] = np.nan
    flt = cls(model(jacobian), prior=PRIOR)
    res = flt.smooth(ys)
    fr = res.filtered
    s_mean, s_cov = fr.mean[:, -1], fr.covariance[:, -1]
    for t in range(ys.shape[1] - 2, -1, -1):
        fm, fc = fr.mean[:, t], fr.covariance[:, t]
        pm, pc = fr.predicted_mean[:, t + 1], fr.predicted_covariance[:, t + 1]
        gain = flt._smoother_gain(fm, fc, pc)
        s_mean = fm + (gain @ (s_mean - pm)[..., None])[..., 0]
        s_cov = fc + gain @ (s_cov - pc) @ np.swapaxes(gain, -1, -2)
        s_cov = 0.5 * (s_cov + np.swapaxes(s_cov, -1, -2))
        np.testing.assert_allclose(res.mean[:, t], s_mean, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(res.covariance[:, t], s_cov, rtol=1e-12, atol=1e-14)
