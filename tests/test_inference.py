"""Bayes, consistency and robust updates against brute-force suprema."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy.optimize import minimize

import possibly as ps
from family_cases import BY_NAME, EXPONENTIAL, random_points

seeds = hs.integers(0, 2**32 - 1)


def brute_log_sup(case, fun, rng, starts=8):
    """max over the domain of ``fun(point)``, by BFGS from random unconstrained starts."""
    best = -np.inf
    for z0 in rng.normal(0.0, 1.5, size=(starts, case.k)):
        def obj(z):
            with np.errstate(all="ignore"):
                try:
                    v = fun(case.to_point(z))
                except ValueError:  # the optimiser wandered to an overflowing point
                    return 1e300
            return -v if np.isfinite(v) else 1e300
        res = minimize(obj, z0, method="BFGS", options={"gtol": 1e-10})
        res = minimize(obj, res.x, method="Nelder-Mead",
                       options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 20000})
        best = max(best, -res.fun)
    return best


def pareto_brute_log_sup(fun, lo, hi):
    grid = np.exp(np.linspace(np.log(lo), np.log(hi), 400001))
    return np.max(fun(grid))


@pytest.mark.parametrize("name", [c.name for c in EXPONENTIAL])
@settings(max_examples=12, deadline=None)
@given(seed=seeds)
def test_consistency_and_combine_equal_brute_force(name, seed):
    case = BY_NAME[name]
    rng = np.random.default_rng(seed)
    f, lik = case.make(rng), case.make(rng)

    def joint(x):
        return float(f.log_possibility(x) + lik.log_possibility(x))

    brute = brute_log_sup(case, joint, rng)
    log_c = float(ps.log_consistency(f, lik))
    assert log_c <= 1e-12
    assert log_c == pytest.approx(brute, abs=1e-6 * max(1.0, abs(brute)))
    post = ps.combine(f, lik)
    _, points = random_points(case, rng, 10)
    for x in points:
        ref = joint(x) - brute
        if np.isfinite(ref):
            assert float(post.log_possibility(x)) == pytest.approx(ref, abs=1e-5 * max(1, abs(ref)))


@settings(max_examples=30, deadline=None)
@given(seed=seeds)
def test_pareto_consistency_and_combine_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    case = BY_NAME["Pareto"]
    f, g = case.make(rng), case.make(rng)

    def joint(x):
        return f.log_possibility(x) + g.log_possibility(x)

    brute = pareto_brute_log_sup(joint, 0.1, 100.0)
    # the grid approaches the sup from below, within (total shape) x (grid step in log x)
    step = np.log(1000.0) / 400000
    log_c = float(ps.log_consistency(f, g))
    assert brute <= log_c + 1e-12
    assert log_c - brute <= float(f.alpha + g.alpha) * step + 1e-12
    post = ps.combine(f, g)
    x = np.exp(rng.normal(1, 1, 50))
    ref = joint(x) - float(ps.log_consistency(f, g))
    np.testing.assert_allclose(post.log_possibility(x), ref, atol=1e-12)


def test_pareto_uniform_consistency_matches_the_corrected_formula():
    # MATH.md §4: c(y) = y / s if y < s, else (s / y) ** a
    prior = ps.Pareto(4.0, 10.0)
    assert float(ps.consistency(prior, ps.likelihood.uniform(8.0))) == pytest.approx(0.8)
    assert float(ps.consistency(prior, ps.likelihood.uniform(12.5))) == pytest.approx(0.8**4)


@pytest.mark.parametrize("name", [c.name for c in EXPONENTIAL])
def test_robust_update_without_conflict_equals_combine(name):
    # a likelihood whose mode equals the prior's has c = 1, hence gamma = 1
    case = BY_NAME[name]
    rng = np.random.default_rng(7)
    f = case.make(rng)
    lik = f.power(0.7)
    res = ps.robust_update(f, lik)
    assert float(res.consistency) == pytest.approx(1.0, abs=1e-9)
    assert float(res.discount) == pytest.approx(1.0, abs=1e-9)
    post = ps.combine(f, lik)
    _, points = random_points(case, rng, 10)
    for x in points:
        a, b = res.posterior.log_possibility(x), post.log_possibility(x)
        assert float(a) == pytest.approx(float(b), rel=1e-7, abs=1e-7)


@pytest.mark.parametrize("name", [c.name for c in EXPONENTIAL])
@settings(max_examples=10, deadline=None)
@given(seed=seeds, g=hs.floats(0.01, 1.0))
def test_robust_posterior_is_the_discounted_product(name, seed, g):
    case = BY_NAME[name]
    rng = np.random.default_rng(seed)
    f, lik = case.make(rng), case.make(rng)
    res = ps.robust_update(f, lik)
    gamma = float(res.gamma)
    assert gamma == pytest.approx(float(res.consistency) ** (1 / f.effective_dim), rel=1e-12)
    post = ps.combine(f, lik.power(gamma))
    _, points = random_points(case, rng, 5)
    for x in points:
        ref = float(post.log_possibility(x))
        assert float(res.posterior.log_possibility(x)) == pytest.approx(ref, rel=1e-9, abs=1e-9)


def test_gross_outlier_is_discounted_and_leaves_prior_almost_unchanged():
    cases = [
        (ps.Normal(0.0, 4.0), ps.likelihood.normal(40.0, sd=1.0)),
        (ps.MultivariateNormal([0.0, 0.0], np.eye(2) * 4), ps.likelihood.linear_gaussian(
            [30.0, -30.0], np.eye(2), np.eye(2))),
        (ps.Beta(90.0, 10.0), ps.likelihood.binomial(5, 100)),
        (ps.Gamma(50.0, 10.0), ps.likelihood.poisson([60, 70, 65])),
        (ps.NormalGamma(0.0, 50.0, 50.0, 50.0), ps.likelihood.normal_batch([30.0, 31.0, 29.5])),
        (ps.NormalInverseWishart(np.zeros(2), 50.0, 50 * np.eye(2), 50.0),
         ps.likelihood.mvn_batch(np.array([[20., 20.], [21., 19.], [19., 22.], [22., 21.]]))),
    ]
    for prior, lik in cases:
        res = ps.robust_update(prior, lik)
        assert float(res.discount) < 1e-3, type(prior).__name__
        post_mode, prior_mode = res.posterior.mode, prior.mode
        if isinstance(prior_mode, tuple):
            for a, b in zip(post_mode, prior_mode, strict=True):
                np.testing.assert_allclose(a, b, atol=0.02 * (1 + np.abs(b).max()))
        else:
            np.testing.assert_allclose(post_mode, prior_mode, atol=0.02 * (1 + np.abs(prior_mode)
                                                                           .max()))


def test_threshold_keeps_consistent_observations_whole():
    prior = ps.Normal(0.0, 1.0)
    mild = ps.likelihood.normal(1.0, sd=1.0)        # gamma = exp(-1/4) ≈ 0.78
    res = ps.robust_update(prior, mild, tau=0.5)
    assert float(res.discount) == 1.0
    assert float(res.gamma) == pytest.approx(np.exp(-0.25))
    res = ps.robust_update(prior, mild, tau=0.9)
    assert float(res.discount) == pytest.approx(np.exp(-0.25))


def test_dim_changes_the_root():
    prior, lik = ps.Normal(0.0, 1.0), ps.likelihood.normal(2.0, sd=1.0)   # c = exp(-1)
    assert float(ps.robust_update(prior, lik, dim=2).discount) == pytest.approx(np.exp(-0.5))


def test_batch_equals_loop():
    rng = np.random.default_rng(8)
    n = 1000
    prior = ps.NormalGamma(rng.normal(size=n), rng.uniform(0.1, 5, n), rng.uniform(0.5, 5, n),
                           rng.uniform(0.5, 5, n))
    lik = ps.likelihood.normal_batch(rng.normal(size=(n, 5)))
    res = ps.robust_update(prior, lik, tau=0.3)
    for i in rng.choice(n, 25, replace=False):
        one = ps.robust_update(prior[i], lik[i], tau=0.3)
        assert float(one.consistency) == pytest.approx(res.consistency[i], rel=1e-12)
        assert float(one.posterior.beta) == pytest.approx(res.posterior.beta[i], rel=1e-12)
        assert float(one.posterior.mean) == pytest.approx(res.posterior.mean[i], rel=1e-12)


def test_ten_thousand_priors_in_one_call():
    rng = np.random.default_rng(9)
    prior = ps.Normal(rng.normal(size=10_000), 1.0)
    res = ps.robust_update(prior, ps.likelihood.normal(0.5, sd=1.0))
    assert res.posterior.batch_shape == (10_000,)
    ref = np.exp(-0.25 * (prior.mean - 0.5) ** 2)
    np.testing.assert_allclose(res.consistency, ref, rtol=1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=seeds)
def test_standard_updates_do_not_depend_on_order(seed):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(6, 4, 2))
    prior = ps.NormalInverseWishart.uninformative(2)
    liks = ps.likelihood.mvn_batch(y)
    a = ps.update_sequence(prior, liks, robust=False).posterior
    b = ps.update_sequence(prior, liks[rng.permutation(6)], robust=False).posterior
    np.testing.assert_allclose(a.psi, b.psi, rtol=1e-9)
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-9, atol=1e-12)
    # and equal the single batch update with all the data
    whole = ps.combine(prior, ps.likelihood.mvn_batch(y.reshape(24, 2)))
    np.testing.assert_allclose(a.psi, whole.psi, rtol=1e-9)


# -- likelihoods: L(θ | y) = p(y | θ) / sup p, checked with scipy densities -----------------

def _ratio_check(lik, logpdf, points):
    ref = np.array([logpdf(x) for x in points])
    got = np.array([float(lik.log_possibility(x)) for x in points])
    np.testing.assert_allclose(got - got[0], ref - ref[0], rtol=1e-9, atol=1e-9)
    assert np.all(got <= 1e-12)


def test_likelihoods_are_normalised_density_ratios():
    import scipy.stats as st

    rng = np.random.default_rng(10)
    y = rng.normal(size=5)
    _ratio_check(ps.likelihood.normal(y[0], 2.0), lambda t: st.norm(t, 2.0).logpdf(y[0]),
                 rng.normal(size=8))
    _ratio_check(ps.likelihood.binomial(3, 10), lambda t: st.binom(10, t).logpmf(3),
                 rng.uniform(0.01, 0.99, 8))
    counts = np.array([2, 5, 1])
    _ratio_check(ps.likelihood.poisson(counts), lambda t: st.poisson(t).logpmf(counts).sum(),
                 rng.uniform(0.1, 6, 8))
    x = rng.exponential(size=4)
    _ratio_check(ps.likelihood.exponential(x), lambda t: st.expon(scale=1 / t).logpdf(x).sum(),
                 rng.uniform(0.1, 4, 8))
    pts = [(m, lam) for m, lam in zip(rng.normal(size=8), rng.uniform(0.1, 3, 8), strict=True)]
    _ratio_check(ps.likelihood.normal_batch(y),
                 lambda p: st.norm(p[0], 1 / np.sqrt(p[1])).logpdf(y).sum(), pts)
    Y = rng.normal(size=(6, 2))

    def mvn_logpdf(p):
        return st.multivariate_normal(p[0], p[1]).logpdf(Y).sum()

    sig = [np.array([[1.0, 0.2], [0.2, 0.5]]) * s for s in (0.5, 1, 2)]
    _ratio_check(ps.likelihood.mvn_batch(Y), mvn_logpdf,
                 [(rng.normal(size=2), s) for s in sig])
    H, R = np.array([[1.0, 0.5], [0.0, 1.0], [1.0, 1.0]]), np.diag([1.0, 2.0, 0.5])
    yv = rng.normal(size=3)
    _ratio_check(ps.likelihood.linear_gaussian(yv, H, R),
                 lambda t: st.multivariate_normal(H @ t, R).logpdf(yv), rng.normal(size=(8, 2)))
    _ratio_check(ps.likelihood.uniform(2.0), lambda t: st.uniform(0, t).logpdf(2.0),
                 [2.0, 3.0, 7.5])


# -- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("call, match", [
    (lambda: ps.Normal(0.0, -1.0), "precision must be >= 0"),
    (lambda: ps.Normal(np.nan, 1.0), "mean must not contain NaN"),
    (lambda: ps.Beta(-1, 2), "alpha must be >= 0"),
    (lambda: ps.Gamma(1, -2), "beta must be >= 0"),
    (lambda: ps.InverseWishart(np.eye(2), -1.0), "nu must be >= 0"),
    (lambda: ps.InverseWishart([[1.0, 2.0], [0.0, 1.0]], 3.0), "psi must be symmetric"),
    (lambda: ps.InverseWishart([[1.0, 2.0], [2.0, 1.0]], 3.0), "psi must be positive semi"),
    (lambda: ps.MultivariateNormal([0.0, 0.0], -np.eye(2)), "precision must be positive semi"),
    (lambda: ps.MultivariateNormal([0.0, 0.0], np.eye(3)), "precision must have shape"),
    (lambda: ps.Normal(np.zeros(3), np.ones(4)), "do not broadcast"),
    (lambda: ps.Pareto(1.0, 0.0), "scale must be > 0"),
    (lambda: ps.Normal(0.0, 1.0).power(-1), "must be >= 0"),
    (lambda: ps.robust_update(ps.Normal(0, 1), ps.likelihood.normal(1, 1), tau=0),
     r"tau must be in \(0, 1\]"),
    (lambda: ps.robust_update(ps.Normal(0, 1), ps.likelihood.normal(1, 1), dim=0),
     "dim must be > 0"),
    (lambda: ps.robust_update(ps.Normal(0, 1), ps.likelihood.normal(1, 1), omega=1.5),
     r"omega must be in \(0, 1\)"),
    (lambda: ps.likelihood.normal(1.0, sd=0.0), "sd must be > 0"),
    (lambda: ps.likelihood.binomial(5, 3), "k must be <= n"),
    (lambda: ps.likelihood.normal_batch([1.0]), "n >= 2"),
    (lambda: ps.likelihood.normal_batch([1.0, 1.0]), "unbounded"),
    (lambda: ps.likelihood.mvn_batch(np.ones((2, 2))), "n > d"),
    (lambda: ps.likelihood.uniform(-1.0), "y must be > 0"),
    (lambda: ps.robust_update(ps.NormalGamma(0, 0, 0, 1), ps.likelihood.normal_unknown(1.0)),
     "unbounded"),
])
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_families_must_match():
    with pytest.raises(TypeError, match="likelihood must be a Normal"):
        ps.combine(ps.Normal(0, 1), ps.Beta(1, 1))
