"""Properties of every family, checked against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy.optimize import minimize_scalar

import possibly as ps
from family_cases import BY_NAME, CASES, EXPONENTIAL, random_points

seeds = hs.integers(0, 2**32 - 1)
names = [c.name for c in CASES]


def _close(a, b, tol=1e-9):
    a, b = np.asarray(a, float), np.asarray(b, float)
    both_inf = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
    return bool(np.all(both_inf | np.isclose(a, b, rtol=tol, atol=tol)))


@pytest.mark.parametrize("name", names)
@settings(max_examples=40, deadline=None)
@given(seed=seeds)
def test_mode_has_possibility_one_and_no_point_exceeds_it(name, seed):
    case = BY_NAME[name]
    rng = np.random.default_rng(seed)
    f = case.make(rng)
    assert abs(float(f.log_possibility(f.mode))) < 1e-9
    _, points = random_points(case, rng, 200)
    vals = np.array([float(f.log_possibility(x)) for x in points])
    assert np.all(vals <= 1e-12)


@pytest.mark.parametrize("name", names)
@settings(max_examples=30, deadline=None)
@given(seed=seeds, a=hs.floats(0.05, 5.0), b=hs.floats(0.05, 5.0))
def test_power_is_the_pointwise_power(name, seed, a, b):
    case = BY_NAME[name]
    rng = np.random.default_rng(seed)
    f = case.make(rng)
    _, points = random_points(case, rng, 20)
    for x in points:
        lf = float(f.log_possibility(x))
        # definition of the power, and associativity
        assert _close(f.power(a).log_possibility(x), a * lf, 1e-8)
        assert _close(f.power(a).power(b).log_possibility(x), (f ** (a * b)).log_possibility(x),
                      1e-8)


@pytest.mark.parametrize("name", [c.name for c in EXPONENTIAL])
def test_power_zero_is_uninformative(name):
    case = BY_NAME[name]
    rng = np.random.default_rng(1)
    f = case.make(rng).power(0.0)
    _, points = random_points(case, rng, 50)
    assert all(float(f.log_possibility(x)) == 0.0 for x in points)


def test_pareto_power_zero_keeps_its_support():
    # the paper's limitation (§4.4): the indicator of the support cannot be discounted
    f = ps.Pareto(2.0, 3.0).power(0.0)
    assert float(f.possibility(10.0)) == 1.0
    assert float(f.possibility(2.0)) == 0.0


@pytest.mark.parametrize("name", names)
def test_uninformative_is_the_function_one_and_neutral(name):
    case = BY_NAME[name]
    rng = np.random.default_rng(2)
    f = case.make(rng)
    cls = type(f)
    one = cls.uninformative(f.dim) if hasattr(f, "dim") else cls.uninformative()
    _, points = random_points(case, rng, 30)
    for x in points:
        assert float(one.log_possibility(x)) == 0.0
        assert _close(ps.combine(one, f).log_possibility(x), f.log_possibility(x), 1e-9)
        assert _close(ps.combine(f, one).log_possibility(x), f.log_possibility(x), 1e-9)
    assert float(ps.consistency(one, f)) == pytest.approx(1.0, abs=1e-12)


# -- natural parameters: the generic route agrees with each family's closed forms --------------

@pytest.mark.parametrize("name", [c.name for c in EXPONENTIAL])
@settings(max_examples=25, deadline=None)
@given(seed=seeds)
def test_natural_parameter_route_agrees(name, seed):
    case = BY_NAME[name]
    rng = np.random.default_rng(seed)
    f, g = case.make(rng), case.make(rng)
    _, points = random_points(case, rng, 10)
    via_eta = type(f).from_natural(f.natural())
    summed = type(f).from_natural(tuple(a + b for a, b in zip(f.natural(), g.natural(),
                                                                 strict=True)))
    post = ps.combine(f, g)
    for x in points:
        assert _close(f.log_possibility_natural(x), f.log_possibility(x), 1e-7)
        assert _close(via_eta.log_possibility(x), f.log_possibility(x), 1e-7)
        assert _close(summed.log_possibility(x), post.log_possibility(x), 1e-6)
    # log c = S(eta_a + eta_b) - S(eta_a) - S(eta_b), also where a family has its own formula
    s_route = summed.log_support() - f.log_support() - g.log_support()
    assert _close(ps.log_consistency(f, g), s_route, 1e-6)


# -- E* against scipy.stats (known shifts) and V* against finite differences ------------------

def _scipy_argmax(pdf, lo, hi):
    res = minimize_scalar(lambda x: -pdf(x), bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-10})
    return res.x


@settings(max_examples=20, deadline=None)
@given(a=hs.floats(0.5, 30), b=hs.floats(0.5, 30))
def test_modes_match_scipy_with_the_unit_shift(a, b):
    # B̄(a, b) has the mode of Beta(a + 1, b + 1); Ḡ(a, b) that of Gamma(a + 1, rate b);
    # IḠ(a, b) that of InvGamma(a - 1, scale b)
    assert ps.Beta(a, b).mode == pytest.approx(
        _scipy_argmax(st.beta(a + 1, b + 1).pdf, 0, 1), abs=1e-6)
    assert ps.Gamma(a, b).mode == pytest.approx(
        _scipy_argmax(st.gamma(a + 1, scale=1 / b).pdf, 0, 10 * (a + 1) / b), rel=1e-5)
    assert ps.InverseGamma(a, b).mode == pytest.approx(
        _scipy_argmax(st.invgamma(a - 1 if a > 1 else a, scale=b).pdf, 1e-9, 50 * b / a)
        if a > 1 else b / a, rel=1e-5)


def test_inverse_wishart_mode_matches_scipy():
    rng = np.random.default_rng(3)
    d = 3
    a = rng.normal(size=(d, d))
    psi = a @ a.T + np.eye(d)
    nu = 12.0
    # IW̄(Ψ, ν) ∝ |Σ|^(-ν/2) exp(-tr(ΨΣ⁻¹)/2) is the density of invwishart(df = ν - d - 1)
    ref = st.invwishart(df=nu - d - 1, scale=psi).mode()
    np.testing.assert_allclose(ps.InverseWishart(psi, nu).mode, ref, rtol=1e-10)
    np.testing.assert_allclose(ps.NormalInverseWishart(np.zeros(d), 2.0, psi, nu).mode[1], ref,
                               rtol=1e-10)


def _hessian(fun, x0, h=1e-4):
    x0 = np.asarray(x0, float)
    n = x0.size
    hess = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ei, ej = np.eye(n)[i] * h, np.eye(n)[j] * h
            hess[i, j] = (fun(x0 + ei + ej) - fun(x0 + ei - ej) - fun(x0 - ei + ej)
                          + fun(x0 - ei - ej)) / (4 * h * h)
    return hess


def _sym_from_vech(v, d):
    m = np.zeros((d, d))
    rows, cols = ps.families.inverse_wishart.vech_indices(d)
    m[rows, cols] = v
    m[cols, rows] = v
    return m


@pytest.mark.parametrize("name", [c.name for c in EXPONENTIAL])
def test_variance_is_inverse_curvature(name):
    case = BY_NAME[name]
    rng = np.random.default_rng(4)
    for _ in range(3):
        _check_variance(name, case.make(rng))


def _check_variance(name, f):
    if name in ("Normal", "Beta", "Gamma", "InverseGamma"):
        step = 1e-3 * np.sqrt(float(f.variance))
        h = _hessian(lambda v: -float(f.log_possibility(v[0])), [float(f.mode)], step)
        assert 1 / h[0, 0] == pytest.approx(float(f.variance), rel=1e-4)
    elif name == "MultivariateNormal":
        h = _hessian(lambda v: -float(f.log_possibility(v)), f.mode)
        np.testing.assert_allclose(np.linalg.inv(h), f.variance, rtol=1e-4)
    elif name == "NormalGamma":
        m = np.array([float(v) for v in f.mode])
        h = _hessian(lambda v: -float(f.log_possibility((v[0], v[1]))), m, 1e-5)
        np.testing.assert_allclose(np.linalg.inv(h), np.diag([float(v) for v in f.variance]),
                                   rtol=1e-4, atol=1e-10)
    elif name == "InverseWishart":
        rows, cols = ps.families.inverse_wishart.vech_indices(2)
        v0 = f.mode[rows, cols]
        h = _hessian(lambda v: -float(f.log_possibility(_sym_from_vech(v, 2))), v0, 1e-5)
        np.testing.assert_allclose(np.linalg.inv(h), f.variance, rtol=1e-4, atol=1e-10)
    elif name == "NormalInverseWishart":
        rows, cols = ps.families.inverse_wishart.vech_indices(2)
        mu0, sig0 = f.mode
        v0 = np.concatenate([mu0, sig0[rows, cols]])
        h = _hessian(lambda v: -float(f.log_possibility((v[:2], _sym_from_vech(v[2:], 2)))),
                     v0, 1e-5)
        cov = np.linalg.inv(h)
        v_mu, v_sig = f.variance
        np.testing.assert_allclose(cov[:2, :2], v_mu, rtol=1e-4, atol=1e-10)
        np.testing.assert_allclose(cov[2:, 2:], v_sig, rtol=1e-4, atol=1e-10)
        np.testing.assert_allclose(cov[:2, 2:], 0.0, atol=1e-6)


def test_pareto_variance_is_explained_not_nan():
    with pytest.raises(ValueError, match="support boundary"):
        _ = ps.Pareto(1.0, 2.0).variance


def test_beta_closed_forms_from_the_paper():
    f = ps.Beta(3.0, 5.0)
    assert float(f.mode) == pytest.approx(3 / 8)
    assert float(f.variance) == pytest.approx(15 / 8**3)
    # (a+b)^(a+b) / (a^a b^b) θ^a (1-θ)^b
    theta = 0.2
    direct = 8**8 / (3**3 * 5**5) * theta**3 * (1 - theta) ** 5
    assert float(f.possibility(theta)) == pytest.approx(direct, rel=1e-12)


# -- credibility: sup over an interval, checked on a grid --------------------------------------

@pytest.mark.parametrize("name", ["Normal", "Beta", "Gamma", "InverseGamma", "Pareto"])
def test_credibility_is_the_sup_over_the_interval(name):
    case = BY_NAME[name]
    rng = np.random.default_rng(5)
    for _ in range(5):
        f = case.make(rng)
        lo, hi = np.sort(np.array([case.to_point(z) for z in rng.normal(0, 2, (2, 1))]))
        grid = np.linspace(lo, hi, 20001)
        ref = np.max(f.possibility(grid))
        assert float(f.credibility(lo, hi)) == pytest.approx(ref, abs=1e-6)


def test_credibility_is_only_for_univariate_families():
    with pytest.raises(TypeError, match="univariate"):
        ps.MultivariateNormal([0.0], [[1.0]]).credibility(0, 1)


# -- batches ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", names)
def test_batch_indexing_and_stack_round_trip(name):
    case = BY_NAME[name]
    rng = np.random.default_rng(6)
    items = [case.make(rng) for _ in range(4)]
    batch = type(items[0]).stack(items)
    assert batch.batch_shape == (4,)
    _, points = random_points(case, rng, 3)
    for i, f in enumerate(items):
        for x in points:
            assert _close(batch[i].log_possibility(x), f.log_possibility(x), 1e-12)


def test_parameters_broadcast_over_batch_dimensions():
    f = ps.Normal(np.zeros((3, 1)), np.ones(5))
    assert f.batch_shape == (3, 5)
    g = ps.MultivariateNormal(np.zeros((4, 2)), np.eye(2))
    assert g.batch_shape == (4,) and g.precision.shape == (4, 2, 2)
