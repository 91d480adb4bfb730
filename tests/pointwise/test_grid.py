"""GridPossibility and LogLikelihood against the closed forms of the conjugate families.

Reference values come from the conjugate families (``ps.combine``, ``ps.consistency``,
``ps.robust_update`` on Normal, Beta, Gamma, MultivariateNormal) and from scipy optimisers
run on hand-written objectives; the grid code never produces its own expected values.
"""

import numpy as np
import pytest
from scipy import optimize, stats

import possibly as ps

NORMAL_GRID = np.linspace(-6.0, 8.0, 2801)  # spacing 0.005
UNIT_GRID = np.linspace(0.0, 1.0, 4001)  # spacing 2.5e-4
RATE_GRID = np.linspace(1e-3, 20.0, 8001)


def grid_of(family, points):
    return ps.GridPossibility.from_function(points, family.log_possibility)


def normal_loglik(theta, y):
    return stats.norm.logpdf(y, loc=theta, scale=0.5)


def binomial_loglik(theta, y):
    k, n = y
    return stats.binom.logpmf(k, n, theta)


def poisson_loglik(theta, y):
    return stats.poisson.logpmf(np.asarray(y)[None, :], theta[:, None]).sum(axis=1)


# -- conjugate examples: grid = closed form ----------------------------------------------------
@pytest.mark.parametrize("y", [0.3, 2.0, 5.0])
def test_normal_combine_and_consistency_match_closed_form(y):
    prior = ps.Normal(1.0, 2.0)
    lik = ps.likelihood.normal(y, sd=0.5)
    exact = ps.combine(prior, lik)
    post = ps.combine(grid_of(prior, NORMAL_GRID), lik)
    assert abs(float(post.mode) - float(exact.mean)) <= 0.005 / 2 + 1e-12
    assert float(post.variance) == pytest.approx(1.0 / float(exact.precision), rel=1e-6)
    c_grid = ps.consistency(grid_of(prior, NORMAL_GRID), lik)
    c_exact = ps.consistency(prior, lik)
    # the max over nodes is within (precision / 2) h**2 of the sup, in log
    assert np.log(c_exact) - 1e-4 <= np.log(c_grid) <= np.log(c_exact) + 1e-12


@pytest.mark.parametrize("y", [0.3, 5.0])
def test_normal_with_callable_likelihood_matches_closed_form(y):
    prior = ps.Normal(1.0, 2.0)
    grid = grid_of(prior, NORMAL_GRID)
    closed = ps.LogLikelihood(normal_loglik, y, log_sup=stats.norm.logpdf(0.0, scale=0.5))
    searched = ps.LogLikelihood(normal_loglik, y)  # sup by Nelder-Mead
    c_exact = float(ps.consistency(prior, ps.likelihood.normal(y, sd=0.5)))
    for lik in (closed, searched):
        assert float(ps.consistency(grid, lik)) == pytest.approx(c_exact, rel=1e-4)
        assert float(ps.combine(grid, lik).mode) == pytest.approx(
            float(ps.combine(prior, ps.likelihood.normal(y, sd=0.5)).mean), abs=0.003)


def test_normal_robust_update_matches_closed_form():
    prior = ps.Normal(0.0, 4.0)
    for y in (0.2, 1.5, 12.0):
        lik = ps.likelihood.normal(y, sd=1.0)
        exact = ps.robust_update(prior, lik)
        res = ps.robust_update(grid_of(prior, NORMAL_GRID * 2), lik)
        assert float(res.discount) == pytest.approx(float(exact.discount), rel=2e-4, abs=1e-12)
        assert float(res.posterior.mode) == pytest.approx(float(exact.posterior.mean), abs=0.006)
        assert float(res.posterior.variance) == pytest.approx(
            1.0 / float(exact.posterior.precision), rel=1e-5)


@pytest.mark.parametrize(("k", "n"), [(7, 10), (1, 20), (19, 20)])
def test_beta_binomial_matches_closed_form(k, n):
    prior = ps.Beta(2.0, 3.0)
    lik = ps.likelihood.binomial(k, n)
    grid = grid_of(prior, UNIT_GRID)
    exact_post = ps.combine(prior, lik)
    assert abs(float(ps.combine(grid, lik).mode) - float(exact_post.mode)) <= 2.5e-4 / 2 + 1e-12
    c_exact = float(ps.consistency(prior, lik))
    assert float(ps.consistency(grid, lik)) == pytest.approx(c_exact, rel=1e-5)
    # the same through a callable (binomial pmf), sup at k / n in closed form or searched
    sup = stats.binom.logpmf(k, n, k / n)
    for call in (ps.LogLikelihood(binomial_loglik, (k, n), log_sup=sup),
                 ps.LogLikelihood(binomial_loglik, (k, n))):
        assert float(ps.consistency(grid, call)) == pytest.approx(c_exact, rel=1e-5)
        res = ps.robust_update(grid, call)
        ref = ps.robust_update(prior, lik)
        assert float(res.discount) == pytest.approx(float(ref.discount), rel=1e-5)
        assert abs(float(res.posterior.mode) - float(ref.posterior.mode)) <= 2.5e-4


def test_gamma_poisson_matches_closed_form():
    counts = np.array([3, 5, 4, 9])
    prior = ps.Gamma(2.0, 1.0)
    lik = ps.likelihood.poisson(counts)
    grid = grid_of(prior, RATE_GRID)
    exact = ps.robust_update(prior, lik)
    call = ps.LogLikelihood(poisson_loglik, counts)  # sup searched (it is at the mean, 5.25)
    for likelihood in (lik, call):
        assert float(ps.consistency(grid, likelihood)) == pytest.approx(
            float(exact.consistency), rel=1e-5)
        res = ps.robust_update(grid, likelihood)
        assert abs(float(res.posterior.mode) - float(exact.posterior.mode)) <= 2.5e-3
        assert float(res.posterior.variance) == pytest.approx(float(exact.posterior.variance),
                                                              rel=1e-3)


def test_two_dimensional_grid_matches_multivariate_normal():
    prior = ps.MultivariateNormal([0.0, 1.0], [[2.0, 0.5], [0.5, 1.0]])
    lik = ps.likelihood.linear_gaussian([2.0, -1.0], H=np.eye(2), R=np.diag([0.5, 2.0]))
    axes = (np.linspace(-3, 4, 561), np.linspace(-4, 4, 641))  # spacing 0.0125
    grid = ps.GridPossibility.from_function(axes, prior.log_possibility)
    assert grid.variance == pytest.approx(np.linalg.inv(prior.precision), rel=1e-6)
    exact = ps.combine(prior, lik)
    post = ps.combine(grid, lik)
    assert np.abs(post.mode - exact.mean).max() <= 0.0125 / 2 + 1e-9
    assert post.variance == pytest.approx(np.linalg.inv(exact.precision), rel=1e-6)
    assert float(ps.consistency(grid, lik)) == pytest.approx(float(ps.consistency(prior, lik)),
                                                             rel=1e-3)
    res = ps.robust_update(grid, lik)
    ref = ps.robust_update(prior, lik)
    assert res.posterior.effective_dim == 2
    assert float(res.discount) == pytest.approx(float(ref.discount), rel=1e-3)


# -- a non-conjugate model against an independent brute-force computation -------------------
def test_student_likelihood_consistency_against_scipy():
    # prior N̄(0, 1); Student-t(3) observation with scale 0.5: no conjugate form
    y = 3.0

    def log_f(th):
        return -0.5 * th**2

    def loglik(th, y):
        return stats.t.logpdf(y, df=3, loc=th, scale=0.5)

    grid = ps.GridPossibility.from_function(np.linspace(-3, 6, 9001), log_f)
    lik = ps.LogLikelihood(loglik, y)
    sup = stats.t.logpdf(0.0, df=3, scale=0.5)
    best = optimize.minimize_scalar(lambda th: -(log_f(th) + loglik(th, y) - sup),
                                    bounds=(-3, 6), method="bounded",
                                    options={"xatol": 1e-10})
    assert float(ps.consistency(grid, lik)) == pytest.approx(np.exp(-best.fun), rel=1e-5)
    assert float(ps.combine(grid, lik).mode) == pytest.approx(best.x, abs=1e-3)
    assert lik.sup(np.array([2.0, 3.1])) == pytest.approx(sup, abs=1e-8)


# -- E*, credibility, interpolation ------------------------------------------------------------
def test_credibility_interval_mask_predicate():
    prior = ps.Normal(1.0, 2.0)
    grid = grid_of(prior, NORMAL_GRID)
    pts = grid.grid_points()
    for lo, hi in [(2.0, 3.0), (-np.inf, 0.0), (0.0, 2.0)]:
        expected = float(prior.credibility(lo, hi))
        assert grid.credibility(lo, hi) == pytest.approx(expected, rel=1e-9)
        assert grid.credibility((pts >= lo) & (pts <= hi)) == pytest.approx(expected, rel=1e-9)
        assert grid.credibility(lambda t, lo=lo, hi=hi: (t >= lo) & (t <= hi)) == \
            pytest.approx(expected, rel=1e-9)
    assert grid.credibility(100.0, 200.0) == 0.0  # no node in the set: sup ∅ = 0


def test_log_possibility_interpolates():
    prior = ps.Normal(1.0, 2.0)
    grid = grid_of(prior, NORMAL_GRID)
    assert grid.log_possibility(NORMAL_GRID[::7]) == pytest.approx(
        prior.log_possibility(NORMAL_GRID[::7]), abs=1e-12)
    x = np.array([0.1234, 2.71828])
    assert np.exp(grid.log_possibility(x)) == pytest.approx(prior.possibility(x), abs=1e-5)
    assert grid.log_possibility(100.0) == -np.inf
    axes = (np.linspace(-1, 1, 5), np.linspace(0, 2, 3))
    g2 = ps.GridPossibility(axes, np.zeros((5, 3)))
    assert g2.log_possibility(np.array([[0.3, 1.1], [5.0, 0.0]])).tolist() == [0.0, -np.inf]


def test_values_are_max_normalised_and_power_of_zero_is_one():
    g = ps.GridPossibility(np.arange(4.0), np.array([-np.inf, 3.0, 5.0, 1.0]))
    assert g.log_values.max() == 0.0
    assert g.log_values[0] == -np.inf
    assert (g.power(0.0).log_values == 0.0).all()  # 0 ** 0 = 1: the uninformative function


def test_incompatible_observation_keeps_prior_in_robust_update():
    grid = ps.GridPossibility(np.linspace(0.0, 1.0, 11), np.zeros(11))

    def impossible(th, y):
        return np.full(th.shape, -np.inf)

    res = ps.robust_update(grid, ps.LogLikelihood(impossible, 0, log_sup=0.0))
    assert float(res.consistency) == 0.0 and float(res.discount) == 0.0
    assert (res.posterior.log_values == grid.log_values).all()
    with pytest.raises(ValueError, match="undefined"):
        ps.combine(grid, ps.LogLikelihood(impossible, 0, log_sup=0.0))


# -- bad input -------------------------------------------------------------------------------
def test_bad_grids():
    with pytest.raises(ValueError, match="log_values"):
        ps.GridPossibility(np.arange(3.0), [0.0, np.nan, 0.0])
    with pytest.raises(ValueError, match="finite value"):
        ps.GridPossibility(np.arange(3.0), np.full(3, -np.inf))
    with pytest.raises(ValueError, match="increasing"):
        ps.GridPossibility(np.array([0.0, 2.0, 1.0]), np.zeros(3))
    with pytest.raises(ValueError, match="shape"):
        ps.GridPossibility(np.arange(3.0), np.zeros(4))
    with pytest.raises(ValueError, match="edge"):
        _ = ps.GridPossibility(np.arange(3.0), np.array([0.0, -1.0, -2.0])).variance


@pytest.mark.parametrize(("loglik", "match"), [
    (lambda th, y: np.zeros((th.size, 1)), "shape"),
    (lambda th, y: np.where(th > 0.5, np.nan, 0.0), "NaN"),
    (lambda th, y: np.where(th > 0.5, np.inf, 0.0), r"\+inf"),
    (lambda th, y: 0.0, "shape"),
    (lambda th, y: ["a"] * th.size, "numbers"),
])
def test_bad_loglik_callables(loglik, match):
    grid = ps.GridPossibility(np.linspace(0, 1, 11), np.zeros(11))
    with pytest.raises(ValueError, match="loglik") as err:
        ps.consistency(grid, ps.LogLikelihood(loglik, None, log_sup=0.0))
    assert err.match(match)


def test_bad_log_sup_and_bad_sets():
    grid = ps.GridPossibility(np.linspace(0, 1, 11), np.zeros(11))
    with pytest.raises(ValueError, match="log_sup"):
        ps.consistency(grid, ps.LogLikelihood(lambda th, y: th, None, log_sup=0.5))
    with pytest.raises(ValueError, match="callable"):
        ps.LogLikelihood(3.0, None)
    with pytest.raises(ValueError, match="mask"):
        grid.credibility(np.ones(5, dtype=bool))
    with pytest.raises(ValueError, match="boolean"):
        grid.credibility(lambda th: th)
    with pytest.raises(TypeError, match="same points"):
        ps.combine(grid, ps.GridPossibility(np.linspace(0, 2, 11), np.zeros(11)))
    with pytest.raises(ValueError, match="omega"):
        ps.robust_update(grid, ps.likelihood.binomial(3, 5), omega=0.9)


def test_update_sequence_on_a_grid_matches_closed_form():
    y = np.array([0.1, -0.3, 25.0, 0.2])
    lik = ps.likelihood.normal(y, sd=1.0)
    exact = ps.update_sequence(ps.Normal(0.0, 1.0), lik)
    res = ps.update_sequence(grid_of(ps.Normal(0.0, 1.0), NORMAL_GRID * 4), lik)
    assert res.discount == pytest.approx(exact.discount, rel=1e-4, abs=1e-12)
    assert len(res.trajectory) == 4
    for t in range(4):
        assert float(res.trajectory[t].mode) == pytest.approx(
            float(exact.trajectory[t].mean), abs=0.01)
