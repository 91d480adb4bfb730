"""Robust Kalman filter and smoother: checks against filterpy, an independent RTS smoother,
brute-force joint least squares, numerical sups and the generic possibility algebra."""

import numpy as np
import pytest
from scipy import optimize

import possibly as ps
from possibly.filters.kalman import predict, update
from possibly.filters.kalman_state import KalmanState

NCV = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)


def random_model(rng, n=3, m=2, rank_q=None):
    a = rng.normal(size=(n, n))
    F = 0.95 * a / max(abs(np.linalg.eigvals(a)))  # stable: spectral radius 0.95
    G = rng.normal(size=(n, rank_q or n))
    Q = G @ G.T * 0.1
    H = rng.normal(size=(m, n))
    b = rng.normal(size=(m, m))
    R = b @ b.T + 0.5 * np.eye(m)
    return F, Q, H, R


def simulate(rng, model, T, x0=None):
    F, Q, H, R = model
    n, m = F.shape[0], H.shape[0]
    x = np.zeros(n) if x0 is None else x0
    xs, ys = [], []
    lq = np.linalg.cholesky(Q + 1e-12 * np.eye(n))
    lr = np.linalg.cholesky(R)
    for t in range(T):
        if t:
            x = F @ x + lq @ rng.normal(size=n)
        xs.append(x)
        ys.append(H @ x + lr @ rng.normal(size=m))
    return np.array(xs), np.array(ys)


# -- independent references (written here, not using possibly.filters.kalman) ---------------
def reference_kf(model, ys, m0, P0, rho=None):
    """Textbook covariance-form Kalman filter with noise R / rho_t; update first."""
    F, Q, H, R = model
    T = len(ys)
    rho = np.ones(T) if rho is None else rho
    x, P = m0.copy(), P0.copy()
    out = {"m": [], "P": [], "mp": [], "Pp": []}
    for t in range(T):
        if t:
            x, P = F @ x, F @ P @ F.T + Q
        out["mp"].append(x)
        out["Pp"].append(P)
        if not np.isnan(ys[t]).all() and rho[t] > 0:
            S = H @ P @ H.T + R / rho[t]
            K = P @ H.T @ np.linalg.inv(S)
            x = x + K @ (ys[t] - H @ x)
            P = (np.eye(len(x)) - K @ H) @ P
        out["m"].append(x)
        out["P"].append(P)
    return {k: np.array(v) for k, v in out.items()}


def reference_rts(model, filt):
    F, Q, _, _ = model
    ms, Ps = filt["m"].copy(), filt["P"].copy()
    for t in range(len(ms) - 2, -1, -1):
        Pp = F @ filt["P"][t] @ F.T + Q
        G = filt["P"][t] @ F.T @ np.linalg.inv(Pp)
        ms[t] = filt["m"][t] + G @ (ms[t + 1] - F @ filt["m"][t])
        Ps[t] = filt["P"][t] + G @ (Ps[t + 1] - Pp) @ G.T
    return ms, Ps


def joint_map(F, G, H, R, ys, rho, m0=None, Y0=None):
    """Brute force: the whole trajectory θ_t = F θ_{t-1} + G w_t, w_t ~ N(0, I), as one least
    squares problem in z = (θ_1, w_2..w_T); returns the MAP trajectory and the marginal
    curvature-inverse (max-marginal covariance) of each θ_t."""
    n, r = G.shape
    T = len(ys)
    dimz = n + r * (T - 1)
    A = np.zeros((T, n, dimz))
    A[0, :, :n] = np.eye(n)
    for t in range(1, T):
        A[t] = F @ A[t - 1]
        A[t, :, n + r * (t - 1): n + r * t] = G
    W = np.linalg.inv(R)
    hess = np.zeros((dimz, dimz))
    grad = np.zeros(dimz)
    hess[n:, n:] += np.eye(dimz - n)
    if Y0 is not None:
        hess[:n, :n] += Y0
        grad[:n] += Y0 @ m0
    for t in range(T):
        if np.isnan(ys[t]).all():
            continue
        ha = H @ A[t]
        hess += rho[t] * ha.T @ W @ ha
        grad += rho[t] * ha.T @ W @ ys[t]
    z = np.linalg.solve(hess, grad)
    cov = np.linalg.inv(hess)
    return np.einsum("tij,j->ti", A, z), np.einsum("tij,jk,tlk->til", A, cov, A)


# -- models ------------------------------------------------------------------------------------
def test_constant_velocity_matrices():
    F, Q, H, R = ps.filters.constant_velocity(dt=2.0, accel_sd=0.5, obs_sd=3.0)
    np.testing.assert_allclose(F, [[1, 2], [0, 1]])
    # Q = σa² g gᵀ with g = (dt²/2, dt), rank one
    np.testing.assert_allclose(Q, 0.25 * np.array([[4.0, 4.0], [4.0, 4.0]]))
    assert np.linalg.matrix_rank(Q) == 1
    np.testing.assert_allclose(H, [[1, 0]])
    np.testing.assert_allclose(R, [[9.0]])
    F2, Q2, H2, R2 = ps.filters.constant_velocity(ndim=2)
    assert F2.shape == Q2.shape == (4, 4) and H2.shape == (2, 4) and R2.shape == (2, 2)


@pytest.mark.parametrize("kw, match", [({"dt": 0}, "dt"), ({"accel_sd": -1}, "accel_sd"),
                                       ({"obs_sd": np.nan}, "obs_sd"), ({"ndim": 0}, "ndim")])
def test_constant_velocity_rejects_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        ps.filters.constant_velocity(**kw)


# -- standard filter = filterpy -----------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_standard_filter_equals_filterpy(seed):
    from filterpy.kalman import KalmanFilter as FPKalman

    rng = np.random.default_rng(seed)
    model = random_model(rng)
    F, Q, H, R = model
    _, ys = simulate(rng, model, 40)
    m0 = rng.normal(size=3)
    P0 = np.eye(3) * 2.0 + 0.3
    fp = FPKalman(dim_x=3, dim_z=2)
    fp.x, fp.P, fp.F, fp.Q, fp.H, fp.R = m0.copy(), P0.copy(), F, Q, H, R
    means, covs, pmeans = [], [], []
    for t, y in enumerate(ys):
        if t:
            fp.predict()
        pmeans.append(fp.x.copy())
        fp.update(y)
        means.append(fp.x.copy())
        covs.append(fp.P.copy())
    res = ps.KalmanFilter(*model, robust=False).filter(
        ys, prior=ps.MultivariateNormal(m0, np.linalg.inv(P0)))
    np.testing.assert_allclose(res.mean, means, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(res.covariance, covs, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(res.predicted_mean, pmeans, rtol=1e-9, atol=1e-9)
    assert np.all(res.discount == 1.0)


@pytest.mark.parametrize("robust", [False, True])
def test_smoother_equals_independent_rts(robust):
    rng = np.random.default_rng(7)
    model = random_model(rng, n=3, m=1)
    _, ys = simulate(rng, model, 30)
    ys[12] += 40.0  # an outlier, so the robust weights matter
    m0, P0 = np.zeros(3), np.eye(3) * 4.0
    prior = ps.MultivariateNormal(m0, np.linalg.inv(P0))
    res = ps.KalmanFilter(*model, robust=robust).smooth(ys, prior=prior)
    rho = res.discount
    filt = reference_kf(model, ys, m0, P0, rho)
    np.testing.assert_allclose(res.filtered.mean, filt["m"], rtol=1e-9, atol=1e-10)
    ms, Ps = reference_rts(model, filt)
    np.testing.assert_allclose(res.mean, ms, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(res.covariance, Ps, rtol=1e-9, atol=1e-10)
    if robust:
        assert rho[12] < 1e-6


def test_smoother_equals_filterpy_rts():
    from filterpy.kalman import rts_smoother

    rng = np.random.default_rng(3)
    model = random_model(rng)
    _, ys = simulate(rng, model, 25)
    P0 = np.eye(3)
    res = ps.KalmanFilter(*model, robust=False).smooth(
        ys, prior=ps.MultivariateNormal(np.zeros(3), P0))
    F, Q = model[:2]
    xs, Ps, _, _ = rts_smoother(res.filtered.mean, res.filtered.covariance, [F] * 25, [Q] * 25)
    np.testing.assert_allclose(res.mean, xs, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(res.covariance, Ps, rtol=1e-9, atol=1e-10)


# -- exact uninformative prior, rank-one Q ----------------------------------------------------
def ncv_series(seed, T=15, outlier_at=None):
    rng = np.random.default_rng(seed)
    pos = np.cumsum(np.full(T, 0.3)) + rng.normal(0, 0.1, T).cumsum()
    ys = pos + rng.normal(size=T)
    if outlier_at is not None:
        ys[outlier_at] += 60.0
    return ys[:, None]


@pytest.mark.parametrize("robust", [False, True])
def test_uninformative_equals_joint_least_squares(robust):
    """Filter and smoother from the uninformative prior with the rank-one Q of the NCV model
    against the trajectory MAP of the whole series (no prior term at all)."""
    F, Q, H, R = NCV
    ys = ncv_series(1, outlier_at=9)
    ys[5] = np.nan
    res = ps.KalmanFilter(F, Q, H, R, robust=robust).smooth(ys)
    rho = np.nan_to_num(res.discount, nan=0.0)
    G = np.array([[0.5], [1.0]]) * 0.05  # Q = G Gᵀ
    np.testing.assert_allclose(G @ G.T, Q, rtol=1e-12)
    s_mean, s_cov = joint_map(F, G, H, R, ys, rho)
    np.testing.assert_allclose(res.mean, s_mean, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(res.covariance, s_cov, rtol=1e-6, atol=1e-8)
    for t in range(2, len(ys)):  # filtered = last state of the MAP given y_1..y_t
        f_mean, f_cov = joint_map(F, G, H, R, ys[: t + 1], rho)
        np.testing.assert_allclose(res.filtered.mean[t], f_mean[-1], rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(res.filtered.covariance[t], f_cov[-1], rtol=1e-6,
                                   atol=1e-8)
    # one observation informs only the position: velocity variance is infinite, the position's
    # max-marginal variance is that of the measurement (obs_sd = 1), covariances undefined
    cov0 = res.filtered.covariance[0]
    assert np.isinf(cov0[1, 1]) and np.isinf(cov0[0, 1]) and np.isinf(cov0[1, 0])
    assert cov0[0, 0] == pytest.approx(1.0)
    np.testing.assert_allclose(res.filtered.precision[0], [[1.0, 0.0], [0.0, 0.0]], atol=1e-12)
    np.testing.assert_array_equal(res.filtered.consistency[:2], [1.0, 1.0])


@pytest.mark.parametrize("robust", [False, True])
def test_uninformative_is_limit_of_growing_proper_priors(robust):
    ys = ncv_series(2, T=30, outlier_at=14)
    kf = ps.KalmanFilter(*NCV, robust=robust)
    exact = kf.smooth(ys)
    errs = []
    for eps in (1e-2, 1e-4, 1e-6):  # prior covariance 1/eps → ∞
        approx = kf.smooth(ys, prior=ps.MultivariateNormal(np.zeros(2), eps * np.eye(2)))
        errs.append(max(np.abs(approx.mean - exact.mean).max(),
                        np.abs(approx.filtered.mean[2:] - exact.filtered.mean[2:]).max(),
                        np.abs(approx.filtered.discount - exact.filtered.discount).max()))
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 1e-4
    assert errs[1] / errs[2] > 10  # converges at rate ~eps


def test_singular_prior_precision_handled_exactly():
    prior = ps.MultivariateNormal([0.5, 0.0], np.diag([1.0, 0.0]))  # knows the position only
    ys = ncv_series(4, T=8)
    res = ps.KalmanFilter(*NCV, robust=False).smooth(ys, prior=prior)
    G = np.array([[0.5], [1.0]]) * 0.05
    s_mean, _ = joint_map(NCV[0], G, NCV[2], NCV[3], ys, np.ones(8), m0=prior.mean,
                          Y0=prior.precision)
    np.testing.assert_allclose(res.mean, s_mean, rtol=1e-7, atol=1e-8)
    # consistency at t = 0 uses the position part only: c = exp(-½ (y - 0.5)² / (1 + 1))
    np.testing.assert_allclose(res.filtered.consistency[0], np.exp(-0.25 * (ys[0, 0] - 0.5)**2))


def test_singular_transition_with_uninformative_prior_is_rejected():
    kf = ps.KalmanFilter(np.zeros((2, 2)), np.eye(2), [[1.0, 0.0]], [[1.0]])
    with pytest.raises(ValueError, match="F must be invertible"):
        kf.filter(np.ones(4))
    # with a proper prior the covariance form needs no inverse
    kf.filter(np.ones(4), prior=ps.MultivariateNormal(np.zeros(2), np.eye(2)))


# -- consistency and discount -------------------------------------------------------------------
def test_consistency_matches_closed_form_and_generic_algebra():
    rng = np.random.default_rng(11)
    model = random_model(rng, n=3, m=2)
    F, Q, H, R = model
    _, ys = simulate(rng, model, 20)
    ys[7] += 60.0
    prior = ps.MultivariateNormal(np.zeros(3), np.eye(3) * 0.5)
    # coverage=None: the paper's discount γ = c^(1/d), as robust_update computes it
    res = ps.KalmanFilter(*model, tau=None, coverage=None).filter(ys, prior=prior)
    for t in range(20):
        mu, P = res.predicted_mean[t], res.predicted_covariance[t]
        v = ys[t] - H @ mu
        S = H @ P @ H.T + R
        np.testing.assert_allclose(res.consistency[t], np.exp(-0.5 * v @ np.linalg.solve(S, v)),
                                   rtol=1e-9)
        pred = ps.MultivariateNormal(mu, np.linalg.inv(P))
        lik = ps.likelihood.linear_gaussian(ys[t], H, R)
        np.testing.assert_allclose(res.consistency[t], ps.consistency(pred, lik), rtol=1e-8)
        # the fast path equals the generic robust update of the foundation
        gen = ps.robust_update(pred, lik, dim=3)
        np.testing.assert_allclose(res.discount[t], gen.discount, rtol=1e-8)
        np.testing.assert_allclose(res.mean[t], gen.posterior.mean, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(res.precision[t], gen.posterior.precision, rtol=1e-7,
                                   atol=1e-9)
    assert res.discount[7] < 1e-6


def test_consistency_equals_numerical_sup():
    """c = sup_θ L(θ | y) f(θ), by scipy, for the NCV model."""
    F, Q, H, R = NCV
    ys = ncv_series(5, T=6)
    ys[4] += 5.0
    res = ps.KalmanFilter(*NCV).filter(ys)
    for t in (2, 3, 4, 5):
        mu, P = res.predicted_mean[t], res.predicted_covariance[t]
        Y = np.linalg.inv(P)

        def neg_log(th, t=t, mu=mu, Y=Y):
            d = th - mu
            return 0.5 * (ys[t, 0] - th[0]) ** 2 + 0.5 * d @ Y @ d  # L is normalised: sup 1

        best = optimize.minimize(neg_log, mu, method="BFGS", options={"gtol": 1e-10})
        np.testing.assert_allclose(res.log_consistency[t], -best.fun, rtol=1e-6, atol=1e-9)


def test_consistency_with_h_not_onto_uses_normalised_likelihood():
    """Two readings of one scalar: H = [1, 1]ᵀ has no full row rank, sup p(y|θ) < max."""
    H, R = np.array([[1.0], [1.0]]), np.diag([1.0, 2.0])
    prior = KalmanState(np.array([0.3]), np.array([[0.5]]))
    y = np.array([2.0, -1.0])
    _, info = update(prior, y, H, R)

    def log_p(th):
        r = y - H[:, 0] * th
        return -0.5 * r @ np.linalg.solve(R, r)

    sup_p = -optimize.minimize_scalar(lambda th: -log_p(th)).fun
    log_c = -optimize.minimize_scalar(
        lambda th: -(log_p(th) - sup_p - 0.5 * (th - 0.3) ** 2 / 0.5)).fun
    np.testing.assert_allclose(info.log_consistency, log_c, rtol=1e-7)


def test_gross_outlier_is_discounted_and_ignored():
    ys = ncv_series(6, T=60)
    ys[40] += 50.0
    res = ps.KalmanFilter(*NCV).filter(ys)
    assert res.gamma[40] < 1e-6 and res.discount[40] < 1e-6
    assert abs(res.mean[40, 0] - res.predicted_mean[40, 0]) < 1e-4
    std = ps.KalmanFilter(*NCV, robust=False).filter(ys)
    assert abs(std.mean[40, 0] - std.predicted_mean[40, 0]) > 1.0


def test_threshold_and_dim():
    ys = ncv_series(8, T=40, outlier_at=20)
    base = ps.KalmanFilter(*NCV).filter(ys)
    np.testing.assert_allclose(base.gamma, np.exp(base.log_consistency / 2), rtol=1e-12)
    assert base.consistency[20] < 1e-300 < base.gamma[20] < 1e-6  # log space keeps γ
    thr = ps.KalmanFilter(*NCV, tau=0.1, coverage=None).filter(ys)
    assert thr.discount[20] < 1e-6
    keep = thr.gamma > 0.1
    np.testing.assert_array_equal(thr.discount[keep], 1.0)
    np.testing.assert_array_equal(thr.discount[~keep], thr.gamma[~keep])
    np.testing.assert_allclose(thr.discount, ps.discount(thr.log_consistency, 2, tau=0.1))
    one = ps.KalmanFilter(*NCV, dim=1).filter(ys)
    np.testing.assert_allclose(one.gamma, one.consistency, rtol=1e-12, atol=1e-300)


# -- missing data and batching ------------------------------------------------------------------
def test_missing_rows_are_predict_only():
    ys = ncv_series(9, T=20)
    ys[[0, 7, 8, 19]] = np.nan
    res = ps.KalmanFilter(*NCV).filter(ys)
    for t in (7, 8, 19):
        np.testing.assert_array_equal(res.mean[t], res.predicted_mean[t])
        np.testing.assert_array_equal(res.covariance[t], res.predicted_covariance[t])
    assert np.isnan(res.consistency[[0, 7, 8, 19]]).all()
    assert np.isnan(res.discount[[0, 7, 8, 19]]).all()
    assert not np.isnan(res.mean).any()
    # a missing first row leaves the uninformative prior untouched
    np.testing.assert_array_equal(res.precision[0], np.zeros((2, 2)))


def test_partially_missing_observation_uses_the_observed_components():
    rng = np.random.default_rng(12)
    H = rng.normal(size=(2, 3))
    R = np.array([[1.0, 0.6], [0.6, 2.0]])
    state = KalmanState(rng.normal(size=3), np.eye(3) + 0.2)
    full, info = update(state, [1.5, np.nan], H, R)
    part, info1 = update(state, [1.5], H[:1], R[:1, :1])
    np.testing.assert_allclose(full.mean, part.mean, rtol=1e-12)
    np.testing.assert_allclose(full.covariance, part.covariance, rtol=1e-12)
    np.testing.assert_allclose(info.log_consistency, info1.log_consistency, rtol=1e-12)
    # same in information form
    istate = KalmanState(state.mean, None, np.diag([1.0, 0.5, 0.0]))
    full, info = update(istate, [np.nan, -0.7], H, R)
    part, info1 = update(istate, [-0.7], H[1:], R[1:, 1:])
    np.testing.assert_allclose(full.mean, part.mean, rtol=1e-10)
    np.testing.assert_allclose(full.to_possibility().precision,
                               part.to_possibility().precision, rtol=1e-10)
    np.testing.assert_allclose(info.log_consistency, info1.log_consistency, rtol=1e-12)


def test_batch_equals_loop():
    rng = np.random.default_rng(13)
    ys = np.stack([ncv_series(s, T=25, outlier_at=10 + s) for s in range(6)]).reshape(
        2, 3, 25, 1)
    ys[0, 1, :4] = np.nan  # one series stays uninformed longer than the others
    ys[1, 2, 15] = np.nan
    kf = ps.KalmanFilter(*NCV, tau=0.2)
    batch = kf.smooth(ys)
    assert batch.mean.shape == (2, 3, 25, 2) and batch.covariance.shape == (2, 3, 25, 2, 2)
    assert batch.consistency.shape == (2, 3, 25)
    for i in range(2):
        for j in range(3):
            one = kf.smooth(ys[i, j])
            np.testing.assert_allclose(batch.mean[i, j], one.mean, rtol=1e-10, atol=1e-10)
            # atol: entries that are exactly 0 on one path are rounding-sized on the other
            np.testing.assert_allclose(batch.covariance[i, j], one.covariance, rtol=1e-9,
                                       atol=1e-15)
            np.testing.assert_allclose(batch.filtered.mean[i, j], one.filtered.mean,
                                       rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(batch.filtered.covariance[i, j],
                                       one.filtered.covariance, rtol=1e-9, atol=1e-15)
            np.testing.assert_allclose(batch.discount[i, j], one.discount, rtol=1e-10)
    # a batched prior broadcasts against the batch of series
    prior = ps.MultivariateNormal(rng.normal(size=(3, 2)), np.eye(2))
    res = kf.filter(ys, prior=prior)
    np.testing.assert_allclose(res.mean[1, 2], kf.filter(ys[1, 2], prior=prior[2]).mean)
    assert rng is not None


def test_pure_steps_equal_the_filter():
    F, Q, H, R = NCV
    ys = ncv_series(14, T=12, outlier_at=6)
    res = ps.KalmanFilter(*NCV, tau=0.5).filter(ys)
    state = KalmanState.uninformative(2)
    for t in range(12):
        if t:
            state = predict(state, F, Q)
        state, info = update(state, ys[t], H, R, tau=0.5)
        np.testing.assert_allclose(state.mean, res.mean[t], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(info.discount, res.discount[t], rtol=1e-12)
    assert not state.information_form
    np.testing.assert_allclose(state.covariance, res.covariance[-1], rtol=1e-12)
    post = state.to_possibility()
    np.testing.assert_allclose(np.linalg.inv(post.precision), state.covariance, rtol=1e-10)


# -- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("args, kwargs, match", [
    ((np.eye(2), np.eye(3), [[1.0, 0.0]], [[1.0]]), {}, "Q must have shape"),
    ((np.eye(2), -np.eye(2), [[1.0, 0.0]], [[1.0]]), {}, "Q must be positive semi-definite"),
    ((np.eye(2), np.eye(2), [[1.0, 0.0, 0.0]], [[1.0]]), {}, "H must have shape"),
    ((np.eye(2), np.eye(2), [[1.0, 0.0]], [[0.0]]), {}, "R must be positive definite"),
    ((np.eye(2), np.eye(2), [[1.0, 0.0]], [[1.0]]), {"tau": 1.5}, r"tau must be in \(0, 1\]"),
    ((np.eye(2), np.eye(2), [[1.0, 0.0]], [[1.0]]), {"dim": 0}, "dim must be > 0"),
    ((np.eye(2), np.eye(2), [[1.0, 0.0]], [[1.0]]), {"tau": 0.1, "robust": False}, "tau only"),
    ((np.full((2, 2), np.nan), np.eye(2), [[1.0, 0.0]], [[1.0]]), {}, "F must not contain NaN"),
])
def test_bad_model_is_rejected(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ps.KalmanFilter(*args, **kwargs)


def test_bad_observations_and_prior_are_rejected():
    kf = ps.KalmanFilter(*NCV)
    with pytest.raises(ValueError, match="ys must have shape"):
        kf.filter(np.ones((5, 2)))
    with pytest.raises(ValueError, match="finite or NaN"):
        kf.filter(np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match="numeric"):
        kf.filter(["a", "b"])
    with pytest.raises(ValueError, match="at least one time step"):
        kf.filter(np.ones((0, 1)))
    with pytest.raises(ValueError, match="prior must have dimension 2"):
        kf.filter(np.ones(3), prior=ps.MultivariateNormal(np.zeros(3), np.eye(3)))
    with pytest.raises(ValueError, match="MultivariateNormal"):
        kf.filter(np.ones(3), prior=(np.zeros(2), np.eye(2)))
    with pytest.raises(ValueError, match="does not broadcast"):
        kf.filter(np.ones((4, 3, 1)), prior=ps.MultivariateNormal(np.zeros((3, 2)), np.eye(2)))
