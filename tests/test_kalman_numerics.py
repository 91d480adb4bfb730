"""Hostile numbers (issue #14): finite answers or a ValueError naming the argument and range."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import possibly as ps

CV = ps.models.constant_velocity()


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
    _finite_run(ps.KalmanFilter(*ps.models.constant_velocity(ndim=2)), np.array(y))


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
        ps.models.constant_velocity(**{name: value})


def test_constant_velocity_refuses_a_process_noise_scale_out_of_range():
    with pytest.raises(ValueError, match=r"accel_sd \* dt\*\*2 must be in"):
        ps.models.constant_velocity(dt=1e15, accel_sd=1e15)


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
    from possibly.filters.kalman import _marginal_variances

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
    from possibly.filters.kalman import _marginal_variances

    big = np.diag([1e4, 1e4])
    small = np.array([[2e-6, 0.0], [0.0, 0.0]])  # position informed, velocity not
    prec = np.block([[big, np.zeros((2, 2))], [np.zeros((2, 2)), small]])
    var = _marginal_variances(prec[None])[0]
    np.testing.assert_allclose(var[:3], [1e-4, 1e-4, 5e5], rtol=1e-12)  # 1 / Y_ii by hand
    assert np.isinf(var[3])
    # rank one: a y0 seen through H = [1, 1] only; neither component informed on its own
    singular = 3.0 * np.array([[1.0, 1.0], [1.0, 1.0]])
    assert np.isinf(_marginal_variances(singular[None])[0]).all()
