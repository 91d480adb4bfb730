"""Hostile numbers (issue #14): finite answers or a ValueError naming the argument and range."""

import importlib.util
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import possibly as ps

CV = ps.filters.constant_velocity()


def _finite_run(kf, ys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow / invalid-value warnings either
        warnings.simplefilter("ignore", ps.MostlyDiscountedWarning)  # hostile data: it may
        res = kf.filter(ys)
        sm = kf.smooth(ys)
    observed = ~np.isnan(np.asarray(ys, dtype=float).reshape(res.discount.shape + (-1,))).all(-1)
    assert np.isfinite(res.mean).all() and np.isfinite(sm.mean).all()
    assert not np.isnan(res.covariance).any() and not np.isnan(sm.covariance).any()
    assert not np.isnan(res.log_consistency[observed]).any()
    assert ((res.discount[observed] >= 0) & (res.discount[observed] <= 1)).all()
    return res


# -- the reproducers of the issue ----------------------------------------------------------------
def test_huge_first_observation_gives_finite_estimates():
    ys = np.array([1e155, 1.0, 2.0])
    res = _finite_run(ps.KalmanFilter(*CV, robust_start=False), ys)
    # nothing is known before y_1, so it is taken whole; y_3 is then a gross outlier: γ = 0
    assert res.mean[0, 0] == 1e155
    assert res.log_consistency[2] == -np.inf and res.discount[2] == 0.0
    # with the robust start (default): at y_3 the hypotheses that drop one of y_1..y_3 tie
    # (any two positions fit); at y_4 the hypothesis "y_1 is an outlier" takes over
    res = _finite_run(ps.KalmanFilter(*CV), np.r_[ys, 3.0])
    assert res.mean[0, 0] == 1e155 and abs(res.mean[3, 0] - 3.0) < 1e-9


def test_huge_outlier_mid_series_is_cut_cleanly():
    ys = np.r_[np.arange(10.0), 1e300, np.arange(11.0, 20.0)]
    res = _finite_run(ps.KalmanFilter(CV), ys)
    assert res.discount[10] == 0.0 and res.log_consistency[10] == -np.inf
    # the rest of the track is unaffected: the same as with the outlier missing
    gap = ps.KalmanFilter(CV).filter(np.where(np.arange(20) == 10, np.nan, ys))
    np.testing.assert_allclose(res.mean[11:], gap.mean[11:], rtol=1e-12)


@pytest.mark.parametrize("y", [[[1e160, 1e160]], [[1e160, 1e160], [1.0, 2.0], [3.0, -1e300]]])
def test_two_dimensional_huge_observations_are_finite(y):
    _finite_run(ps.KalmanFilter(*ps.filters.constant_velocity(ndim=2)), np.array(y))


def test_huge_process_noise_is_finite():
    for ys in (np.array([1.0, 2.0, 3.0]), np.array([1e155, 1.0, 2.0]),
               np.array([1.0, np.nan, 3.0])):
        _finite_run(ps.KalmanFilter([[1.0]], [[1e100]], [[1.0]], [[1.0]]), ys)
        _finite_run(ps.KalmanFilter(CV.F, CV.Q * 1e96, CV.H, CV.R), ys)


def test_cauchy_data_up_to_1e300_gives_finite_estimates():
    rng = np.random.default_rng(0)
    y = rng.standard_cauchy(400) * 10.0 ** rng.uniform(0, 298, 400)
    for kf in (ps.KalmanFilter(CV), ps.KalmanFilter(CV, robust=False),
               ps.KalmanFilter(CV, tau=0.5)):
        _finite_run(kf, y)


@pytest.mark.parametrize("name, value, match", [
    ("obs_sd", 1e300, r"obs_sd must be in \[1e-50, 1e\+50\]"),
    ("accel_sd", 1e300, r"accel_sd must be in \[1e-20, 1e\+20\]"),
    ("dt", 1e300, r"dt must be in \[1e-20, 1e\+20\]"),
    ("obs_sd", 1e-300, r"obs_sd must be in"),
    ("dt", True, r"dt must be in"),
    ("accel_sd", "big", r"accel_sd must be a real number"),
])
def test_constant_velocity_names_the_argument_and_range(name, value, match):
    with pytest.raises(ValueError, match=match):
        ps.filters.constant_velocity(**{name: value})


def test_constant_velocity_refuses_a_process_noise_scale_out_of_range():
    with pytest.raises(ValueError, match=r"accel_sd \* dt\*\*2 must be in"):
        ps.filters.constant_velocity(dt=1e15, accel_sd=1e15)


@pytest.mark.parametrize("name", ["F", "Q", "H", "R"])
def test_model_entries_out_of_range_are_refused_by_name(name):
    args = dict(zip("FQHR", (np.eye(1), np.eye(1), np.eye(1), np.eye(1)), strict=True))
    args[name] = np.array([[1e120]])
    with pytest.raises(ValueError, match=rf"{name} must have entries of magnitude at most 1e\+100"):
        ps.KalmanFilter(args["F"], args["Q"], args["H"], args["R"])
    args[name] = np.array([[1e-120]])
    with pytest.raises(ValueError, match=rf"{name} must have nonzero entries of magnitude"):
        ps.KalmanFilter(args["F"], args["Q"], args["H"], args["R"])


def test_observations_beyond_1e300_or_infinite_are_refused():
    kf = ps.KalmanFilter(CV)
    with pytest.raises(ValueError, match="magnitude at most 1e300"):
        kf.filter(np.array([1.0, 1e305]))
    with pytest.raises(ValueError, match="finite or NaN"):
        kf.filter(np.array([1.0, np.inf]))


def test_robust_must_be_a_bool():
    with pytest.raises(TypeError, match="robust must be a bool"):
        ps.KalmanFilter(CV, robust="no")


# -- fuzz: any model in range and any observations up to 1e300 -----------------------------------
@st.composite
def _problems(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n, m = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    q_scale, r_scale = 10.0 ** draw(st.floats(-8, 8)), 10.0 ** draw(st.floats(-8, 8))
    F = np.eye(n) + rng.normal(size=(n, n)) * 0.3
    A = rng.normal(size=(n, int(rng.integers(1, n + 1))))
    B = rng.normal(size=(m, m))
    R = (B @ B.T + 0.1 * np.eye(m)) * r_scale
    T = draw(st.integers(1, 25))
    ys = rng.standard_cauchy((T, m)) * 10.0 ** rng.uniform(0, draw(st.floats(0, 298)), (T, m))
    ys[rng.random((T, m)) < 0.1] = np.nan
    return (F, A @ A.T * q_scale, rng.normal(size=(m, n)), R), ys


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_problems(), st.sampled_from([{}, {"robust": False}, {"tau": 0.3}]))
def test_fuzz_finite_or_clean_error(problem, options):
    (F, Q, H, R), ys = problem
    kf = ps.KalmanFilter(F, Q, H, R, **options)
    try:
        _finite_run(kf, ys)
    except ValueError as exc:  # the only refusal: a singular F before the state is informed
        assert "F must be invertible" in str(exc)


def test_particle_filter_from_model_is_finite_on_huge_observations():
    prior = ps.MultivariateNormal([0.0, 0.0], np.eye(2))
    pf = ps.ParticleFilter.from_model(CV, n_particles=80, prior=prior, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = pf.filter(np.array([0.0, 1e300, 2.0, -1e155, 3.0])[:, None])
    assert np.isfinite(res.mode).all()
    assert res.discount[1] == 0.0 and res.discount[3] == 0.0
    assert res.log_consistency[1] == -np.inf


def test_marginal_variances_against_a_brute_force_minimum():
    """The finite max-marginal sd of an informed component under a singular precision (the
    ``*_sd`` columns of ``possibly kalman`` are these, through FilterResult.variance)."""
    from possibly.filters._common import _marginal_variances

    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 2))
    p = a @ a.T  # rank 2 precision in 3-D: every component meets the null direction
    null = np.linalg.svd(p)[2][-1]
    sd = np.sqrt(_marginal_variances(p[None]))[0]
    for i in range(3):
        if abs(null[i]) > 1e-6:
            assert np.isinf(sd[i])
    e = np.array([1.0, 0.0, 0.0])
    q = np.outer(e, e) * 4.0 + np.diag([0.0, 1.0, 0.0])  # x0 ~ sd 0.5, x1 ~ sd 1, x2 free
    sd = np.sqrt(_marginal_variances(q[None]))[0]
    # brute force: the marginal of x0 is exp(-q00 x0^2 / 2) whatever the free x2
    assert sd[0] == pytest.approx(0.5) and sd[1] == pytest.approx(1.0) and np.isinf(sd[2])


def test_marginal_variances_per_component_scale():
    """Two decoupled axes of very different scales: an informed component of the small-scale
    axis stays informed (it was reported uninformed against the other axis's entries), an
    uninformed one is inf, and an exactly singular block gives inf, not rounding junk."""
    from possibly.filters._common import _marginal_variances

    big = np.diag([1e4, 1e4])
    small = np.array([[2e-6, 0.0], [0.0, 0.0]])  # position informed, velocity not
    prec = np.block([[big, np.zeros((2, 2))], [np.zeros((2, 2)), small]])
    var = _marginal_variances(prec[None])[0]
    np.testing.assert_allclose(var[:3], [1e-4, 1e-4, 5e5], rtol=1e-12)  # 1 / Y_ii by hand
    assert np.isinf(var[3])
    # rank one: a y0 seen through H = [1, 1] only; neither component informed on its own
    singular = 3.0 * np.array([[1.0, 1.0], [1.0, 1.0]])
    assert np.isinf(_marginal_variances(singular[None])[0]).all()


# -- more sensors than states, diffuse priors: exact rational references --------------------------
def _exact(x):
    """A float matrix (or vector, as a column) as a list of rows of Fractions."""
    from fractions import Fraction

    a = np.atleast_2d(np.asarray(x, dtype=float))
    return [[Fraction(float(v)) for v in row] for row in a]


def _mul(a, b):
    return [[sum((a[i][k] * b[k][j] for k in range(len(b))), 0 * a[0][0])
             for j in range(len(b[0]))] for i in range(len(a))]


def _t(a):
    return [list(r) for r in zip(*a, strict=True)]


def _lin(a, b, s=1):
    return [[x + s * y for x, y in zip(ra, rb, strict=True)] for ra, rb in zip(a, b, strict=True)]


def _solve(a, b):
    """``a⁻¹ b`` by exact Gauss-Jordan elimination."""
    n = len(a)
    rows = [ra[:] + rb[:] for ra, rb in zip(a, b, strict=True)]
    for c in range(n):
        p = next(i for i in range(c, n) if rows[i][c] != 0)
        rows[c], rows[p] = rows[p], rows[c]
        rows[c] = [x / rows[c][c] for x in rows[c]]
        for i in range(n):
            if i != c and rows[i][c] != 0:
                f = rows[i][c]
                rows[i] = [x - f * y for x, y in zip(rows[i], rows[c], strict=True)]
    return [r[n:] for r in rows]


def _exact_update(mean, P, y, H, R, rho=1.0):
    """Closed-form Kalman update with noise ``R / ρ``, in exact rational arithmetic on the
    given floats: ``K = P Hᵀ (H P Hᵀ + R/ρ)⁻¹``, mean ``μ + K v``, covariance ``P - K H P``,
    and ``log c = -½ (vᵀ S⁻¹ v - r)`` with ``S = H P Hᵀ + R`` and ``r`` the weighted
    least-squares residual of ``y`` (0 when ``H`` is onto; ``H`` of full column rank
    otherwise). Returns floats."""
    from fractions import Fraction

    mu, P, y, H, R = (_exact(np.reshape(mean, (-1, 1))), _exact(P),
                      _exact(np.reshape(y, (-1, 1))), _exact(H), _exact(R))
    rho = Fraction(float(rho))
    m = len(H)
    Ht = _t(H)
    hp = _mul(H, P)
    hph = _mul(hp, Ht)
    v = _lin(y, _mul(H, mu), -1)
    q = _mul(_t(v), _solve(_lin(hph, R), v))[0][0]
    r = Fraction(0)
    if m > len(Ht):
        eye = [[Fraction(int(i == j)) for j in range(m)] for i in range(m)]
        W = _solve(R, eye)
        b = _mul(_mul(Ht, W), y)
        r = _mul(_mul(_t(y), W), y)[0][0] - _mul(_t(b), _solve(_mul(_mul(Ht, W), H), b))[0][0]
    s_rho = _lin(hph, [[x / rho for x in row] for row in R])
    kt = _solve(s_rho, hp)  # Kᵀ = S_ρ⁻¹ H P
    post_mean = _lin(mu, _mul(_t(kt), v))
    post_cov = _lin(P, _mul(_t(kt), hp), -1)
    return (np.array([float(row[0]) for row in post_mean]),
            np.array([[float(x) for x in row] for row in post_cov]), float(-(q - r) / 2))


def _assert_matches_exact(mean, cov, log_c, exact, rtol):
    e_mean, e_cov, e_log_c = exact
    assert np.isfinite(mean).all() and np.isfinite(cov).all()
    # positive variances, positive semi-definite to rounding (an unobserved direction of
    # variance 1e20 next to an observed one of 1 is not representable more finely)
    assert (np.diag(cov) > 0).all() and np.linalg.eigvalsh(cov).min() >= -1e-14 * abs(cov).max()
    sd = np.sqrt(np.diag(e_cov))
    np.testing.assert_allclose(np.diag(cov), np.diag(e_cov), rtol=rtol)
    assert (np.abs(mean - e_mean) <= rtol * (sd + np.abs(e_mean))).all(), (mean, e_mean)
    # log c to rtol, or to 1e-15 absolute (ρ = c^(1/dim) is then 1 to rounding)
    assert abs(log_c - e_log_c) <= rtol * abs(e_log_c) + 1e-15, (log_c, e_log_c)


@pytest.mark.parametrize("H", [np.ones((3, 1)), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])])
@pytest.mark.parametrize("r_scale", [1e-100, 1.0, 1e100])
def test_more_sensors_than_states_at_the_ends_of_the_range(H, r_scale):
    """The explained part of y stays in y's units: observations up to 1e300 with R down to
    1e-100 give finite estimates, also with some components missing; the first observation
    from the flat prior is taken whole (c = 1 exactly: nothing to judge it by)."""
    n = H.shape[1]
    ys = np.array([[1.0, 2.0, 3.0], [1e300, np.nan, 1.0], [2.0, 2.0, 2.0], [-1e300] * 3,
                   [3.0, 3.0, 3.0]])
    for options in ({}, {"robust": False}):
        kf = ps.KalmanFilter(np.eye(n), np.eye(n), H, r_scale * np.eye(3), **options)
        res = _finite_run(kf, ys)
        assert res.discount[0] == 1.0 and res.log_consistency[0] == 0.0


def test_three_sensors_of_one_scalar_from_a_diffuse_prior():
    """The issue's reproducer: variance 6/11 = 0.545 after the first update (it was -13.17),
    from a diffuse prior (precision 1e-9) and from the flat prior with Q = 1e10."""
    H, R = np.ones((3, 1)), np.diag([1.0, 2.0, 3.0])
    ys = np.array([[1.0, 2.0, 3.0], [1.5, 2.5, 0.5], [1.2, 1.1, 0.9], [1.0, 1.0, 1.0]])
    prior = ps.MultivariateNormal(np.zeros(1), np.array([[1e-9]]))
    res = ps.KalmanFilter(np.eye(1), [[1.0]], H, R).filter(ys, prior)
    exact = _exact_update([0.0], np.linalg.inv(prior.precision), ys[0], H, R, res.discount[0])
    assert exact[1][0, 0] == pytest.approx(6 / 11, rel=1e-8)
    _assert_matches_exact(res.mean[0], res.covariance[0], res.log_consistency[0], exact, 1e-10)
    # the flat prior: exact information form first, then covariance form with P + 1e10
    for options in ({"robust": False}, {}):
        res = ps.KalmanFilter(np.eye(1), [[1e10]], H, R, **options).filter(ys)
        assert (res.variance > 0).all()
        P, mean = np.array([[6 / 11]]), res.mean[0]
        for t in range(1, 4):
            exact = _exact_update(mean, P + 1e10, ys[t], H, R, res.discount[t])
            _assert_matches_exact(res.mean[t], res.covariance[t], res.log_consistency[t], exact,
                                  1e-9)
            mean, P = res.mean[t], res.covariance[t]


@st.composite
def _diffuse_models(draw, more_sensors: bool | None = None, max_log_scale: float = 20.0):
    """A model with full-column-rank (``more_sensors``: m > n) or onto H (drawn when None),
    a positive definite R, and a prior covariance ``s A`` with A well conditioned and s from
    1e6 to ``10**max_log_scale``."""
    if more_sensors is None:
        more_sensors = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(1, 3))
    m = draw(st.integers(n + 1, 4)) if more_sensors else draw(st.integers(1, n))
    while True:
        H = rng.integers(-3, 4, size=(m, n)).astype(float)
        if np.linalg.matrix_rank(H) == min(m, n):
            break
    b = rng.normal(size=(m, m))
    R = b @ b.T + 0.2 * np.eye(m)
    a = rng.normal(size=(n, n))
    P = (a @ a.T + np.eye(n)) * 10.0 ** draw(st.floats(6, max_log_scale))
    return H, R, _sym_float(P), rng.normal(size=n) * 3, rng.normal(size=m) * 3


def _sym_float(a):
    return 0.5 * (a + a.T)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_diffuse_models(more_sensors=True), st.booleans())
def test_more_sensors_than_states_against_exact_arithmetic(model, robust):
    from possibly.filters.kalman import update
    from possibly.filters.kalman_state import KalmanState

    H, R, P, mean, y = model
    post, info = update(KalmanState(mean, P), y, H, R, robust=robust, coverage=None)
    # the discount from the exact consistency (the paper's γ = c^(1/d), d = n), not the code's
    log_c = _exact_update(mean, P, y, H, R)[2]
    rho = np.exp(log_c / H.shape[1]) if robust else 1.0
    assert float(info.discount) == pytest.approx(rho, rel=1e-8, abs=1e-300)
    if rho == 0.0:  # the observation is ignored: the prior stands
        np.testing.assert_allclose(post.mean, mean, rtol=1e-12)
        return
    exact = _exact_update(mean, P, y, H, R, rho)
    _assert_matches_exact(post.mean, post.covariance, float(info.log_consistency), exact, 1e-9)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_diffuse_models(max_log_scale=12.0), st.sampled_from([{"robust": False}, {}]),
       st.floats(6, 14))
def test_huge_process_noise_against_exact_recursion_on_both_engines(model, options, log_q):
    """Three steps of a random walk with Q = 10^log_q I from a diffuse prior: every step's
    filtered mean, variance and consistency against the exact recursion (predict P + Q, then
    the exact update with the step's discount), on the numpy and, where it applies (H onto),
    the compiled engine. (A posterior with unobserved variance s next to an observed one of
    order R holds the latter to about ``eps s`` only, in any covariance-form filter: hence
    prior scales up to 1e6 Q here, where that is below the tolerance.)"""
    H, R, P0, mean0, y = model
    n, m = H.shape[1], H.shape[0]
    Q = 10.0 ** log_q * np.eye(n)
    rng = np.random.default_rng(int(abs(y[0]) * 1e6))
    ys = y + rng.normal(size=(3, m))
    prior = ps.MultivariateNormal(mean0, np.linalg.inv(P0))
    kf = ps.KalmanFilter(np.eye(n), Q, H, R, coverage=None, **options)
    engines = ["numpy"]
    if m <= n:
        pytest.importorskip("numba")
        engines.append("numba")
    for engine in engines:
        one = kf.filter(ys, prior, engine=engine)
        both = kf.filter(np.stack([ys, ys[::-1]]), prior, engine=engine)  # batched steps too
        runs = [(ys, one.mean, one.covariance, one.log_consistency, one.discount)]
        runs += [(ys_i, both.mean[i], both.covariance[i], both.log_consistency[i],
                  both.discount[i]) for i, ys_i in enumerate([ys, ys[::-1]])]
        for ys_i, means, covs, log_cs, discounts in runs:
            mean, P = mean0, kf._initial(prior, (), 1).covariance[0]
            for t in range(3):
                exact = _exact_update(mean, P if t == 0 else P + Q, ys_i[t], H, R, discounts[t])
                _assert_matches_exact(means[t], covs[t], log_cs[t], exact, 1e-8)
                mean, P = means[t], covs[t]


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("log_scale", [10.0, 16.0, 20.0])
@pytest.mark.parametrize("options", [{"robust": False}, {}])
def test_square_observation_of_a_diffuse_prior_on_both_engines(n, log_scale, options):
    """Every direction observed (H square) under a prior up to 1e20 times wider than R: the
    first update against exact arithmetic on both engines (the information form there: the
    Joseph form's second-order rounding, about eps² |P|, would show at 1e20)."""
    rng = np.random.default_rng(n * 100 + int(log_scale))
    while True:
        H = rng.integers(-3, 4, size=(n, n)).astype(float)
        if abs(np.linalg.det(H)) > 0.5:
            break
    b = rng.normal(size=(n, n))
    R = b @ b.T + 0.2 * np.eye(n)
    a = rng.normal(size=(n, n))
    P = _sym_float((a @ a.T + np.eye(n)) * 10.0 ** log_scale)
    mean, ys = rng.normal(size=n), rng.normal(size=(2, n)) * 3
    prior = ps.MultivariateNormal(mean, np.linalg.inv(P))
    kf = ps.KalmanFilter(np.eye(n), np.eye(n), H, R, coverage=None, **options)
    P0 = kf._initial(prior, (), 1).covariance[0]
    engines = ["numpy"]
    if importlib.util.find_spec("numba") is not None:
        engines.append("numba")
    for engine in engines:
        res = kf.filter(ys, prior, engine=engine)
        exact = _exact_update(mean, P0, ys[0], H, R, res.discount[0])
        _assert_matches_exact(res.mean[0], res.covariance[0], res.log_consistency[0], exact,
                              1e-9)
