"""Fuzzing the public entry points: every input gives a clean error or a finite answer.

Random shapes, dtypes, magnitudes up to 1e308, NaN and inf, empty inputs, lists and pandas
objects. The only acceptable outcomes are a ``ValueError``/``TypeError`` whose message is the
library's (not numpy's internals, not a ``LinAlgError``), or outputs with no NaN and no
infinity in the estimates.

Each application's entry point carries the issue-14 reproducer it once failed on as an
explicit ``@example``, so that case is tried on every run.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import possibly as ps

FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])

# numpy's own messages: reaching the user with one of these means a check is missing
NUMPY_TEXT = ("zero-size array", "could not broadcast", "operands could not be broadcast",
              "could not convert", "object arrays are not supported", "setting an array element",
              "index out of bounds", "list index out of range")


def clean_error_or(call, check):
    """Run ``call()``; a clean ValueError/TypeError passes, otherwise ``check(result)``."""
    with np.errstate(all="ignore"):
        try:
            result = call()
        except np.linalg.LinAlgError as exc:  # a ValueError subclass, but numpy's
            raise AssertionError(f"LinAlgError leaked: {exc}") from exc
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            assert msg and not any(t in msg for t in NUMPY_TEXT), f"numpy's message: {msg}"
            return None
        check(result)
    return result


def finite(*arrays) -> None:
    for a in arrays:
        a = np.asarray(a, dtype=np.float64)
        assert np.isfinite(a).all(), f"non-finite output: {a}"


def not_nan(*arrays) -> None:
    for a in arrays:
        a = np.asarray(a, dtype=np.float64)
        assert not np.isnan(a).any(), f"NaN output: {a}"


# -- strategies -------------------------------------------------------------------------------

big_floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
finite_floats = st.floats(min_value=-1e308, max_value=1e308, allow_nan=False)
magnitudes = st.sampled_from([0.0, 1e-308, 1e-200, 1e-12, 1.0, 3.5, 1e12, 1e155, 1e200, 1e308])
scalars = st.one_of(big_floats, magnitudes, magnitudes.map(lambda x: -x),
                    st.integers(-10, 10), st.booleans(), st.just("1.0"), st.none())


def arrays(max_dims: int = 2, max_side: int = 4):
    """Arrays of random shape (empty included) and dtype, sometimes as lists or pandas.

    float64 elements span the whole range (NaN, inf, 1e308, subnormals).
    """
    arr = hnp.arrays(dtype=st.sampled_from([np.float64, np.float64, np.float32, np.int64,
                                            np.bool_]),
                     shape=hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=0,
                                            max_side=max_side))
    return st.one_of(arr, arr.map(_as_list), arr.filter(lambda a: a.ndim == 1).map(_as_series))


def _as_list(a: np.ndarray):
    return a.tolist()


def _as_series(a: np.ndarray):
    import pandas as pd

    return pd.Series(a)


def series(min_size: int = 0, max_size: int = 30, scale=magnitudes):
    """1-D observation series: ordinary values times a magnitude, with NaN/inf/huge spikes."""
    spike = st.one_of(st.just(np.nan), st.just(np.inf), st.just(-np.inf), magnitudes,
                      magnitudes.map(lambda x: -x))
    base = st.lists(st.floats(-5.0, 5.0), min_size=min_size, max_size=max_size)
    return st.tuples(base, scale, st.lists(st.tuples(st.integers(0, 10**6), spike),
                                           max_size=3)).map(_spiked)


def _spiked(args):
    values, scale, spikes = args
    y = np.asarray(values, dtype=np.float64) * scale
    for pos, v in spikes:
        if y.size:
            y[pos % y.size] = v
    return y


# -- families (this area) ----------------------------------------------------------------------

UNIVARIATE = {
    "Normal": (ps.Normal, 2),
    "Gamma": (ps.Gamma, 2),
    "InverseGamma": (ps.InverseGamma, 2),
    "Beta": (ps.Beta, 2),
    "NormalGamma": (ps.NormalGamma, 4),
    "Pareto": (ps.Pareto, 2),
}


def _check_family(f) -> None:
    for value in f.fields().values():
        finite(value)
    mode = f.mode
    for part in (mode if isinstance(mode, tuple) else (mode,)):
        not_nan(part)
    if f._univariate and np.all(f.bounded):
        # sup f = 1 is reached at E* (where E* is representable: not inf, not underflowed),
        # up to the rounding of E* itself: log f(E*(1 + eps)) ~ -(curvature) eps**2 / 2
        m = np.asarray(mode)
        shown = np.isfinite(m) & (np.abs(m) >= 1e-250)
        at_mode = np.asarray(f.log_possibility(np.where(shown, m, 1.0)))
        curvature = sum(np.abs(v) for v in f.fields().values())
        tol = 1e-9 + 1e-30 * curvature
        assert np.all(np.where(shown, at_mode + tol, 0.0) >= 0.0), (mode, at_mode)
        if type(f) is not ps.Pareto:  # V* is undefined for Pareto (mode on the boundary)
            not_nan(f.variance)


@pytest.mark.parametrize("name", sorted(UNIVARIATE))
@FUZZ
@given(data=st.data())
def test_univariate_family_constructors(name, data):
    cls, n = UNIVARIATE[name]
    args = [data.draw(st.one_of(scalars, arrays(max_dims=2)), label=f"arg{i}") for i in range(n)]
    clean_error_or(lambda: cls(*args), _check_family)


@FUZZ
@given(mean=arrays(max_dims=2), precision=arrays(max_dims=3), scale=magnitudes)
@example(mean=np.zeros(0), precision=np.zeros((0, 0)), scale=1.0)
@example(mean=np.ones(2), precision=np.eye(2), scale=1e308)
def test_multivariate_normal_constructor(mean, precision, scale):
    def build():
        return ps.MultivariateNormal(mean, np.asarray(precision, dtype=float) * scale)

    clean_error_or(build, _check_family)


@pytest.mark.parametrize("niw", [False, True])
@FUZZ
@given(psi=arrays(max_dims=3), nu=st.one_of(scalars, arrays(max_dims=1)), scale=magnitudes,
       lam=st.one_of(scalars, magnitudes))
@example(psi=np.eye(2), nu=1e308, scale=1e308, lam=1.0)
def test_wishart_family_constructors(niw, psi, nu, scale, lam):
    def build():
        p = np.asarray(psi, dtype=float) * scale
        if niw:
            return ps.NormalInverseWishart(np.zeros(p.shape[-1:]), lam, p, nu)
        return ps.InverseWishart(p, nu)

    clean_error_or(build, _check_family)


# -- the algebra (this area) -------------------------------------------------------------------

@FUZZ
@given(mean=finite_floats, precision=magnitudes, y=st.one_of(big_floats, magnitudes),
       sd=st.one_of(magnitudes, big_floats), tau=st.one_of(st.none(), st.floats(0.01, 1.0)))
@example(mean=0.0, precision=1.0, y=1e308, sd=1.0, tau=None)
@example(mean=1e300, precision=1e300, y=-1e300, sd=1e-150, tau=None)
def test_robust_update_normal(mean, precision, y, sd, tau):
    def check(res):
        finite(res.posterior.mean, res.posterior.precision, res.discount, res.gamma)
        c = np.asarray(res.consistency)
        assert ((c >= 0) & (c <= 1)).all()

    clean_error_or(lambda: ps.robust_update(ps.Normal(mean, precision),
                                            ps.likelihood.normal(y, sd=sd), tau=tau), check)


@FUZZ
@given(prior=st.tuples(magnitudes, magnitudes), counts=arrays(max_dims=1))
def test_robust_update_gamma_poisson(prior, counts):
    def check(res):
        not_nan(res.posterior.mode, res.discount)

    clean_error_or(lambda: ps.robust_update(ps.Gamma(*prior), ps.likelihood.poisson(counts)),
                   check)


@FUZZ
@given(points=st.one_of(arrays(max_dims=2, max_side=6), st.just([]), st.just(())),
       log_values=st.one_of(arrays(max_dims=2, max_side=6), st.just([])),
       y=st.one_of(finite_floats, magnitudes))
@example(points=[], log_values=[], y=0.0)
@example(points=np.linspace(-1e308, 1e308, 5), log_values=np.zeros(5), y=1e308)
def test_grid_possibility(points, log_values, y):
    def check(grid):
        assert np.isfinite(grid.log_values).any()
        not_nan(grid.log_values, grid.mode)
        post = clean_error_or(lambda: ps.combine(grid, ps.likelihood.normal(y, sd=1.0)),
                              lambda p: not_nan(p.mode))
        del post

    clean_error_or(lambda: ps.GridPossibility(points, log_values), check)


# -- the applications: each with its issue-14 reproducer -----------------------------------

@FUZZ
@given(dt=st.one_of(scalars, magnitudes), accel_sd=st.one_of(scalars, magnitudes),
       obs_sd=st.one_of(scalars, magnitudes))
@example(dt=1.0, accel_sd=0.05, obs_sd=1e300)
def test_constant_velocity(dt, accel_sd, obs_sd):
    clean_error_or(lambda: ps.filters.constant_velocity(dt, accel_sd, obs_sd),
                   lambda model: finite(*model))


@FUZZ
@given(y=series(), robust=st.booleans())
@example(y=np.array([1e155, 1.0, 2.0]), robust=True)
def test_kalman_filter(y, robust):
    kf = ps.KalmanFilter(*ps.filters.constant_velocity(), robust=robust)
    clean_error_or(lambda: kf.filter(y), lambda res: finite(res.mean))


@FUZZ
@given(y=series(min_size=0, max_size=40), sigma=st.one_of(st.just("auto"), magnitudes),
       robust=st.booleans())
@example(y=np.r_[np.zeros(10), np.ones(10)], sigma=1e-200, robust=True)
def test_changepoint_detector(y, sigma, robust):
    # the constructor may refuse sigma (a clean error), or fit may refuse y
    clean_error_or(lambda: ps.ChangepointDetector(sigma=sigma, robust=robust).fit(y),
                   lambda res: finite(res.mean[~np.isnan(y)]))


@FUZZ
@given(y=series(max_size=30))
@example(y=np.r_[np.linspace(-1, 1, 10), 1e160, np.linspace(-1, 1, 10)])
def test_robust_normal_estimator(y):
    clean_error_or(lambda: ps.RobustNormalEstimator().fit(y),
                   lambda fit: finite(fit.mean, fit.precision))


@FUZZ
@given(y=series(max_size=30, scale=st.sampled_from([1.0, 1e12, 1e200, 1e308])))
@example(y=np.array([1.0, 2.0, 1e308]))
def test_soft_uniform_estimator(y):
    clean_error_or(lambda: ps.SoftUniformEstimator().fit(np.abs(y)),
                   lambda fit: finite(fit.mode))


@FUZZ
@given(shape=st.tuples(st.integers(0, 4), st.integers(0, 6), st.integers(0, 3)),
       scale=magnitudes, seed=st.integers(0, 2**16))
@example(shape=(3, 6, 2), scale=1e180, seed=0)
def test_robust_covariance_estimator(shape, scale, seed):
    batches = np.random.default_rng(seed).normal(size=shape) * scale
    clean_error_or(lambda: ps.RobustCovarianceEstimator().fit(batches),
                   lambda fit: finite(fit.covariance))


# -- reproducers this suite found in the core, fixed (kept as plain tests) --------------------

def test_peaked_beta_and_gamma_reach_one_at_the_mode():
    # log f(E*) used to be -0.066 and -128: a log x + b log(1-x) - S subtracted huge terms
    for f in (ps.Beta(1.0, 35170173521477.0), ps.Gamma(2.9415506233163116e16, 0.5),
              ps.InverseGamma(2.9415506233163116e16, 0.5), ps.Beta(1e308, 1e308)):
        assert float(f.log_possibility(f.mode)) > -1e-9
    # and the relative form is the same function where the old one was accurate
    x = np.linspace(0.05, 0.95, 7)
    f = ps.Beta(2.5, 4.0)
    np.testing.assert_allclose(f.log_possibility(x), 2.5 * np.log(x) + 4.0 * np.log1p(-x)
                               - f.log_support(), rtol=1e-12, atol=1e-12)
    g = ps.Gamma(3.0, 2.0)
    np.testing.assert_allclose(g.log_possibility(x), 3.0 * np.log(x) - 2.0 * x
                               - g.log_support(), rtol=1e-12, atol=1e-12)


def test_extreme_members_have_finite_modes_and_variances():
    assert float(ps.Beta(1e308, 1e308).mode) == 0.5
    assert float(ps.Gamma(0.0, 1e-308).variance) == 0.0
    np.testing.assert_array_equal(ps.InverseWishart(np.eye(2) * 1e308, 1e308).mode, np.eye(2))


def test_normal_algebra_does_not_overflow_to_nan():
    res = ps.robust_update(ps.Normal(0.0, 1e308), ps.likelihood.normal(0.0, sd=1e-12))
    assert float(res.consistency) == 1.0 and np.isfinite(float(res.posterior.mean))
    res = ps.robust_update(ps.Normal(-8e307, 0.0), ps.likelihood.normal(1e308, sd=1e-12))
    assert float(res.consistency) == 1.0 and float(res.posterior.mean) == 1e308


def test_unrepresentable_or_unbounded_gamma_priors_are_refused():
    with pytest.raises(ValueError, match=r"alpha \* log\(alpha / beta\) - alpha must be finite"):
        ps.Gamma(1e308, 1e-308)
    with pytest.raises(ValueError, match="prior is unbounded"):
        ps.robust_update(ps.Gamma(2.0, 0.0), ps.likelihood.poisson([1.0]))


def test_overflow_guards_keep_ordinary_values_bit_identical():
    # the reproduction report's numbers depend on these bits: the guards only act on overflow
    rng = np.random.default_rng(1)
    n = 20000
    pa, pb = np.exp(rng.uniform(-30, 30, (2, n)))
    ma, mb = rng.normal(size=(2, n)) * np.exp(rng.uniform(-10, 10, (2, n)))
    a, b = ps.Normal(ma, pa), ps.Normal(mb, pb)
    p, d = pa + pb, ma - mb
    np.testing.assert_array_equal(ps.log_consistency(a, b), -0.5 * pa * pb / p * d * d)
    np.testing.assert_array_equal(ps.combine(a, b).mean, ma + pb * (mb - ma) / p)
    m = rng.normal(size=(n, 3, 3)) * np.exp(rng.uniform(-20, 20, (n, 1, 1)))
    np.testing.assert_array_equal(ps.validation.symmetrise(m), 0.5 * (m + np.swapaxes(m, -1, -2)))


def test_gamma_variances_where_a_power_under_or_overflows():
    # a / b² and b² / a³ with b² or a³ beyond the float range: the log-space form, not inf/0
    np.testing.assert_allclose(float(ps.Gamma(1e-300, 1e-200).variance), 1e100, rtol=1e-12)
    np.testing.assert_allclose(float(ps.Gamma(1e300, 1e160).variance), 1e-20, rtol=1e-12)
    np.testing.assert_allclose(float(ps.InverseGamma(1e-120, 1e-200).variance), 1e-40,
                               rtol=1e-12)
    np.testing.assert_allclose(float(ps.InverseGamma(1e110, 1e200).variance), 1e70, rtol=1e-12)
    # ordinary values keep the direct formula exactly
    assert float(ps.Gamma(3.0, 2.0).variance) == 3.0 / 4.0
    assert float(ps.InverseGamma(3.0, 2.0).variance) == 4.0 / 27.0


# -- input types: complex, masked, row vectors (docs/numerics.md, "Input types") --------------

def _ekf_fit(y):
    from possibly.filters.nonlinear import ExtendedKalmanFilter, NonlinearModel

    model = NonlinearModel(f=lambda x: x, h=lambda x: x, Q=[[0.01]], R=[[0.1]])
    return ExtendedKalmanFilter(model, prior=ps.MultivariateNormal([0.0], [[1e-2]])).fit(y)


#: entry points taking one series (T,), and the output to compare
SERIES_CALLS = {
    "ChangepointDetector": (lambda y: ps.ChangepointDetector().fit(y), "mean"),
    "KalmanFilter": (lambda y: ps.KalmanFilter(*ps.filters.constant_velocity()).filter(y),
                     "mean"),
    "ExtendedKalmanFilter": (_ekf_fit, "mean"),
    "RobustNormalEstimator": (lambda y: ps.RobustNormalEstimator().fit(y), "mean"),
    "SoftUniformEstimator": (lambda y: ps.SoftUniformEstimator().fit(y), "mode"),
}


def _data(call, y):
    """``y`` for ``call``: positive for the soft-uniform estimator."""
    return np.abs(y) if call == "SoftUniformEstimator" else y


def _outcome(call, y):
    """("error", message) or ("ok", the compared output)."""
    fn, field = SERIES_CALLS[call]
    with np.errstate(all="ignore"):
        try:
            return "ok", np.asarray(getattr(fn(y), field))
        except (ValueError, TypeError) as exc:
            return "error", str(exc)


@pytest.mark.parametrize("call", sorted(SERIES_CALLS))
@FUZZ
@given(y=series(min_size=1), mask=st.lists(st.booleans(), min_size=1, max_size=30))
def test_masked_series_is_the_series_with_nan(call, y, mask):
    y = _data(call, y)
    mask = np.resize(np.asarray(mask, bool), y.shape)
    nan = np.where(mask, np.nan, y)
    got, expect = _outcome(call, np.ma.masked_array(y, mask=mask)), _outcome(call, nan)
    assert got[0] == expect[0], (got, expect)
    if got[0] == "ok":
        np.testing.assert_array_equal(got[1], expect[1])
    else:
        assert got[1] == expect[1]


@pytest.mark.parametrize("call", sorted(SERIES_CALLS))
@FUZZ
@given(y=series(min_size=1), imag=st.sampled_from([1e-300, 1e-3, 1.0, 1e300]),
       kind=st.sampled_from(["array", "list", "Series"]))
def test_complex_series_is_refused(call, y, imag, kind):
    z = _data(call, y) + 1j * imag
    value = {"array": z, "list": z.tolist(), "Series": _as_series(z)}[kind]
    outcome = _outcome(call, value)
    assert outcome[0] == "error" and "complex" in outcome[1], outcome


@pytest.mark.parametrize("call", ["ChangepointDetector", "KalmanFilter", "ExtendedKalmanFilter"])
@FUZZ
@given(y=series(min_size=2))
def test_row_vector_is_refused_where_a_series_is_expected(call, y):
    y = np.where(np.abs(y) > 1e100, np.nan, y)  # values refused before the shape is looked at
    outcome = _outcome(call, y[None])
    assert outcome[0] == "error" and "ravel()" in outcome[1], outcome
    # and a column is the series itself
    if call != "ExtendedKalmanFilter":  # (T, 1) is the EKF's (T, m) with m = 1 already
        np.testing.assert_equal(_outcome(call, y[:, None]), _outcome(call, y))
