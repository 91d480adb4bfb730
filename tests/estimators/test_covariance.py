"""Robust streaming normal-inverse-Wishart (possibly.estimators.covariance, paper §5.1).

Reference values are independent of the code under test: numerical sups over (μ, Σ) with
scipy.optimize (Σ through a Cholesky factor with log-diagonal), scipy's normal log-density,
pooled sample moments, and the generic ``ps.update_sequence`` path of the foundation.
"""

import dataclasses

import numpy as np
import pytest
from scipy import optimize, stats

import possibly as ps
from possibly.estimators import covariance as cov


# -- independent reference: numerical sups ---------------------------------------------------
def _unpack(x, d):
    mu = x[:d]
    low = np.zeros((d, d))
    low[np.tril_indices(d)] = x[d:]
    low[np.diag_indices(d)] = np.exp(low[np.diag_indices(d)])
    return mu, low @ low.T


def _pack(mu, sigma):
    low = np.linalg.cholesky(sigma)
    low[np.diag_indices(len(mu))] = np.log(np.diag(low))
    return np.concatenate([mu, low[np.tril_indices(len(mu))]])


def _log_density(Y, mu, sigma):
    return stats.multivariate_normal(mu, sigma).logpdf(Y).sum()


def _log_prior(mu, sigma, m, lam, psi, nu):
    """log N̄(μ; m, λΣ⁻¹) + log IW̄(Σ; Ψ, ν), written out from the paper's definitions."""
    d = len(m)
    diff = mu - m
    quad = lam * diff @ np.linalg.solve(sigma, diff)
    if nu == 0:
        return -0.5 * quad
    iw = (0.5 * nu * (np.linalg.slogdet(psi)[1] - np.linalg.slogdet(nu * sigma)[1])
          - 0.5 * (np.trace(np.linalg.solve(sigma, psi)) - d * nu))
    return -0.5 * quad + iw


def _numerical_sup(fun, starts):
    best = -np.inf
    for x0 in starts:
        res = optimize.minimize(lambda x: -fun(x), x0, method="BFGS",
                                options={"gtol": 1e-10, "maxiter": 5000})
        best = max(best, -res.fun)
    return best


def _brute_force_log_consistency(Y, prior, rho=None):
    """``sup_θ log L(θ | Y) + log f(θ)`` and its argmax, ``L = p / sup p``, by optimisation."""
    d = Y.shape[1]
    m, lam, psi, nu = (np.asarray(a, dtype=float) for a in (prior.mean, prior.lam,
                                                           prior.psi, prior.nu))
    starts = [_pack(Y.mean(0), np.cov(Y.T, bias=True))]
    if nu > 0:
        starts.append(_pack(m, psi / nu))
    log_lik = lambda x: _log_density(Y, *_unpack(x, d))  # noqa: E731
    sup_lik = _numerical_sup(log_lik, starts[:1])
    rho = 1.0 if rho is None else rho

    def target(x):
        mu, sigma = _unpack(x, d)
        return rho * (_log_density(Y, mu, sigma) - sup_lik) + _log_prior(mu, sigma, m, lam,
                                                                          psi, nu)
    best, arg = -np.inf, None
    for x0 in starts:
        res = optimize.minimize(lambda x: -target(x), x0, method="BFGS",
                                options={"gtol": 1e-10, "maxiter": 5000})
        if -res.fun > best:
            best, arg = -res.fun, res.x
    return best, _unpack(arg, d)


def _random_spd(rng, d, scale=1.0):
    a = rng.normal(size=(d, d))
    return scale * (a @ a.T / d + np.eye(d))


# -- consistency and update against brute force ----------------------------------------------
@pytest.mark.parametrize("d, n, shift", [(2, 6, 0.0), (2, 5, 1.5), (3, 7, 0.7)])
def test_consistency_equals_numerical_sup(rng, d, n, shift):
    prior = ps.NormalInverseWishart(rng.normal(size=d), 3.0, _random_spd(rng, d, 4.0), 6.0)
    Y = shift + rng.multivariate_normal(np.zeros(d), 2.0 * np.eye(d), size=n)
    _, info = cov.step(cov.CovarianceState(prior), ps.likelihood.mvn_batch(Y, validate=False),
                       dim=d + d * (d + 1) / 2)
    brute, _ = _brute_force_log_consistency(Y, prior)
    assert float(info.log_consistency) == pytest.approx(brute, abs=1e-6)
    # and the MATH.md closed form 2 log c = n log|S/n| + ν log|Ψ/ν| - ν' log|Ψ'/ν'|
    S = (Y - Y.mean(0)).T @ (Y - Y.mean(0))
    diff = prior.mean - Y.mean(0)
    psi_full = prior.psi + S + 3.0 * n / (3.0 + n) * np.outer(diff, diff)
    two_log_c = (n * np.linalg.slogdet(S / n)[1] + 6.0 * np.linalg.slogdet(prior.psi / 6.0)[1]
                 - (6.0 + n) * np.linalg.slogdet(psi_full / (6.0 + n))[1])
    assert float(info.log_consistency) == pytest.approx(0.5 * two_log_c, abs=1e-9)


def test_discounted_posterior_mode_is_numerical_argmax(rng):
    d, n = 2, 6
    prior = ps.NormalInverseWishart(np.array([0.5, -0.5]), 4.0, _random_spd(rng, d, 3.0), 8.0)
    Y = 2.0 + rng.multivariate_normal(np.zeros(d), np.eye(d), size=n)
    state, info = cov.step(cov.CovarianceState(prior), ps.likelihood.mvn_batch(Y, validate=False),
                           dim=5.0)
    post = state.posterior
    rho = float(info.discount)
    assert 0.0 < rho < 0.9                            # the batch really is discounted
    best, (mu, sigma) = _brute_force_log_consistency(Y, prior, rho=rho)
    # the robust posterior is L^ρ f renormalised: its mode is the argmax of ρ log L + log f
    np.testing.assert_allclose(post.mode[0], mu, atol=1e-5)
    np.testing.assert_allclose(post.mode[1], sigma, atol=1e-5)


def test_first_batch_with_uninformative_prior_is_fully_consistent(rng):
    Y = rng.normal(size=(5, 3))
    state, info = cov.step(cov.init(3), ps.likelihood.mvn_batch(Y, validate=False), dim=9.0)
    post = state.posterior
    assert float(info.log_consistency) == 0.0 and float(info.discount) == 1.0
    np.testing.assert_allclose(post.mode[0], Y.mean(0))
    np.testing.assert_allclose(post.mode[1], np.cov(Y.T, bias=True))


def test_omega_split_consistency_equals_numerical_sup(rng):
    """n <= d: log c = sup log L' + ω log f with L' ∝ p f^(1-ω) (MATH.md §3), by brute force."""
    d, n, omega = 2, 2, 0.9
    m, lam, psi, nu = rng.normal(size=d), 5.0, _random_spd(rng, d, 5.0), 10.0
    prior = ps.NormalInverseWishart(m, lam, psi, nu)
    Y = rng.normal(size=(n, d)) + 1.0
    state, info = cov.step(cov.CovarianceState(prior), ps.likelihood.mvn_batch(Y, validate=False),
                           dim=5.0, omega=omega)
    post = state.posterior

    def lent(x):
        mu, sigma = _unpack(x, d)
        return _log_density(Y, mu, sigma) + (1 - omega) * _log_prior(mu, sigma, m, lam, psi, nu)
    x0 = [_pack(m, psi / nu), _pack(Y.mean(0), psi / nu)]
    sup_lent = _numerical_sup(lent, x0)

    def target(x):
        mu, sigma = _unpack(x, d)
        return lent(x) - sup_lent + omega * _log_prior(mu, sigma, m, lam, psi, nu)
    assert float(info.log_consistency) == pytest.approx(_numerical_sup(target, x0), abs=1e-6)
    assert 0.0 < float(info.discount) < 1.0
    # the kept part plus the discounted lent-to likelihood: ν' = ων + ρ(n + (1-ω)ν)
    assert float(post.nu) == pytest.approx(omega * nu + float(info.discount)
                                           * (n + (1 - omega) * nu))


# -- cross-check with the generic foundation path --------------------------------------------
@pytest.mark.parametrize("tau", [None, 0.4])
def test_fit_matches_generic_update_sequence(rng, tau):
    d, n, T = 3, 6, 25
    batches = rng.normal(size=(T, n, d))
    batches[[7, 15]] *= 4.0
    fit = ps.RobustCovarianceEstimator(tau=tau).fit(batches)
    ref = ps.update_sequence(ps.NormalInverseWishart.uninformative(d),
                             ps.likelihood.mvn_batch(batches), tau=tau)
    np.testing.assert_allclose(fit.consistency, ref.consistency, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(fit.discount, ref.discount, rtol=1e-9)
    np.testing.assert_allclose(fit.mean, ref.trajectory.mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fit.covariance, ref.trajectory.mode[1], rtol=1e-9)
    assert fit.discount[[7, 15]].max() < 0.1 < np.median(fit.discount)
    if tau is not None:
        assert set(np.unique(fit.discount[fit.gamma > tau])) == {1.0}


def test_omega_fit_matches_generic_update_sequence(rng):
    d, n, T, omega = 3, 3, 12, 0.95                   # n <= d: only the ω split works
    prior = ps.NormalInverseWishart(np.zeros(d), 2.0, 2.0 * np.eye(d), 2.0 * d)
    batches = rng.normal(size=(T, n, d))
    batches[6] *= 5.0
    fit = ps.RobustCovarianceEstimator(prior=prior, omega=omega).fit(batches)
    info = ps.likelihood.mvn_batch(batches, validate=False)   # singular: the checked path refuses
    liks = ps.NormalInverseWishart(info.mean, info.lam, info.psi, info.nu)
    ref = ps.update_sequence(prior, liks, omega=omega)
    np.testing.assert_allclose(fit.consistency, ref.consistency, rtol=1e-9)
    np.testing.assert_allclose(fit.covariance, ref.trajectory.mode[1], rtol=1e-9)
    assert fit.discount[6] < fit.discount[np.arange(T) != 6].min()


def test_mvn_batch_fast_path_equals_checked_path_and_hand_formula(rng):
    Y = rng.normal(size=(4, 3, 7, 2))
    a, b = ps.likelihood.mvn_batch(Y, validate=False), ps.likelihood.mvn_batch(Y)
    for name in ("mean", "lam", "psi", "nu"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    # keep: the information of a subset of each batch, against the subset written out
    keep = rng.uniform(size=(4, 3, 7)) < 0.6
    keep[0, 0] = False                                        # m = 0: the function 1
    sub = ps.likelihood.mvn_batch(Y, keep=keep)
    for i, j in np.ndindex(4, 3):
        rows = Y[i, j][keep[i, j]]
        m = len(rows)
        assert sub.lam[i, j] == m and sub.nu[i, j] == m
        if m:
            c = rows - rows.mean(0)
            np.testing.assert_allclose(sub.mean[i, j], rows.mean(0), rtol=1e-12)
            np.testing.assert_allclose(sub.psi[i, j], c.T @ c, rtol=1e-12, atol=1e-14)
        else:
            assert (sub.psi[i, j] == 0).all()


# -- gamma = 1: the standard conjugate update -----------------------------------------------
def _pooled(batches):
    flat = batches.reshape(-1, batches.shape[-1])
    return flat.mean(0), np.cov(flat.T, bias=True)


def test_standard_update_is_pooled_moments_and_order_independent(rng):
    d, n, T = 4, 9, 30
    batches = rng.normal(size=(T, n, d)) @ np.linalg.cholesky(_random_spd(rng, d)).T + 2.0
    mean, sigma = _pooled(batches)
    standard = ps.RobustCovarianceEstimator(robust=False).fit(batches)
    np.testing.assert_allclose(standard.mean[-1], mean, rtol=1e-10)
    np.testing.assert_allclose(standard.covariance[-1], sigma, rtol=1e-10)
    np.testing.assert_allclose(standard.discount, 1.0)
    permuted = ps.RobustCovarianceEstimator(robust=False).fit(batches[rng.permutation(T)])
    np.testing.assert_allclose(permuted.covariance[-1], sigma, rtol=1e-10)
    # the threshold rule with every γ above τ keeps every batch whole: the same estimate
    tiny = ps.RobustCovarianceEstimator(tau=1e-6).fit(batches)
    assert tiny.gamma.min() > 1e-6
    np.testing.assert_allclose(tiny.covariance[-1], sigma, rtol=1e-10)
    # while the plain robust rule discounts inliers (γ < 1), so it does depend on the order
    robust = ps.RobustCovarianceEstimator().fit(batches)
    robust_perm = ps.RobustCovarianceEstimator().fit(batches[::-1])
    assert robust.discount[1:].max() < 1.0
    assert not np.allclose(robust.covariance[-1], robust_perm.covariance[-1], rtol=1e-8)


# -- batching over runs ----------------------------------------------------------------------
def test_batch_of_runs_equals_loop(rng):
    batches = rng.normal(size=(2, 3, 15, 6, 2))
    batches[0, 1, 4] *= 6.0
    est = ps.RobustCovarianceEstimator(tau=0.3)
    fit = est.fit(batches)
    assert fit.covariance.shape == (2, 3, 15, 2, 2) and fit.discount.shape == (2, 3, 15)
    for i in range(2):
        for j in range(3):
            one = est.fit(batches[i, j])
            np.testing.assert_allclose(fit.covariance[i, j], one.covariance, rtol=1e-12)
            np.testing.assert_allclose(fit.log_consistency[i, j], one.log_consistency,
                                       rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(fit.posterior.psi[i, j], one.posterior.psi, rtol=1e-12)


def test_step_takes_a_covariance_state(rng):
    """The state is a frozen CovarianceState wrapping the posterior; a bare posterior is
    refused with a message naming the type to pass."""
    prior = ps.NormalInverseWishart(np.zeros(2), 1.0, np.eye(2), 4.0)
    info = ps.likelihood.mvn_batch(rng.normal(size=(6, 2)))
    with pytest.raises(TypeError, match="state must be a CovarianceState"):
        cov.step(prior, info, dim=5.0)
    state, _ = cov.step(cov.CovarianceState(prior), info, dim=5.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.posterior = prior
    assert ps.RobustCovarianceEstimator(d=2).init().posterior.dim == 2


def test_step_method_matches_fit(rng):
    batches = rng.normal(size=(8, 5, 2))
    est = ps.RobustCovarianceEstimator()
    fit = est.fit(batches)
    state = est.init(d=2)
    for t in range(8):
        state, info = est.step(state, batches[t])
        assert float(info.discount) == pytest.approx(fit.discount[t], rel=1e-12)
    np.testing.assert_allclose(state.posterior.psi, fit.posterior.psi, rtol=1e-12)


def test_batched_prior(rng):
    prior = ps.NormalInverseWishart.stack([
        ps.NormalInverseWishart(np.zeros(2), 1.0, np.eye(2), 4.0),
        ps.NormalInverseWishart(np.ones(2), 2.0, 3.0 * np.eye(2), 5.0)])
    batches = rng.normal(size=(2, 6, 5, 2))
    fit = ps.RobustCovarianceEstimator(prior=prior).fit(batches)
    one = ps.RobustCovarianceEstimator(prior=prior[1]).fit(batches[1])
    np.testing.assert_allclose(fit.covariance[1], one.covariance, rtol=1e-12)


# -- stability in dimension 50 ---------------------------------------------------------------
def test_stable_in_dimension_50(rng):
    d, n, T = 50, 125, 12
    sigma = stats.invwishart(df=d * np.sqrt(d), scale=np.eye(d)).rvs(random_state=rng)
    chol = np.linalg.cholesky(sigma)
    batches = rng.normal(size=(T, n, d)) @ chol.T
    batches[6] *= np.sqrt(3.0)                        # outlier batch from N(0, 3Σ)
    fit = ps.RobustCovarianceEstimator().fit(batches)
    assert np.isfinite(fit.covariance).all() and np.isfinite(fit.log_consistency).all()
    assert fit.discount[6] < 0.5 * np.median(np.delete(fit.discount, [0, 6]))
    # log c from the MATH.md closed form, evaluated with Cholesky log-determinants
    logdet = lambda a: 2.0 * np.log(np.diag(np.linalg.cholesky(a))).sum()  # noqa: E731
    for t in range(1, T):
        y = batches[t]
        lam_prev = float(fit.discount[:t].sum()) * n          # λ_t = ν_t = n Σ ρ
        psi_prev = fit.covariance[t - 1] * lam_prev
        mu_prev = fit.mean[t - 1]
        S = (y - y.mean(0)).T @ (y - y.mean(0))
        diff = mu_prev - y.mean(0)
        psi_full = psi_prev + S + lam_prev * n / (lam_prev + n) * np.outer(diff, diff)
        nu_full = lam_prev + n
        two_log_c = (n * logdet(S / n) + lam_prev * logdet(psi_prev / lam_prev)
                     - nu_full * logdet(psi_full / nu_full))
        assert fit.log_consistency[t] == pytest.approx(0.5 * two_log_c, rel=1e-8, abs=1e-8)
    # the standard recursion in d = 50 still equals the pooled moments
    standard = ps.RobustCovarianceEstimator(robust=False).fit(np.delete(batches, 6, axis=0))
    np.testing.assert_allclose(standard.covariance[-1],
                               _pooled(np.delete(batches, 6, axis=0))[1], rtol=1e-9,
                               atol=1e-12)


# -- bad input -------------------------------------------------------------------------------
def test_bad_batches():
    est = ps.RobustCovarianceEstimator()
    with pytest.raises(ValueError, match="batches"):
        est.fit([np.zeros((5, 2)), np.zeros((4, 2))])          # ragged
    with pytest.raises(ValueError, match="batches"):
        est.fit(np.zeros((5, 2)))                               # one batch without time axis
    bad = np.random.default_rng(0).normal(size=(3, 5, 2))
    bad[1, 2, 0] = np.inf
    with pytest.raises(ValueError, match="batches must be finite"):
        est.fit(bad)
    with pytest.raises(ValueError, match=r"batches must hold n > d .*omega"):
        est.fit(np.random.default_rng(0).normal(size=(3, 2, 2)))
    with pytest.raises(ValueError, match=r"batches\[0\] has a singular"):
        est.fit(np.ones((3, 5, 2)))                             # scatter matrix 0
    with pytest.raises(ValueError, match=r"batches must hold at least one batch \(T >= 1\)"):
        est.fit(np.zeros((0, 5, 2)))


@pytest.mark.parametrize("shape, message", [
    ((4, 3, 0), r"batches must hold vectors of dimension d >= 1, got d = 0"),
    ((4, 0, 2), r"batches must hold n >= 1 vectors per batch, got n = 0"),
    ((2, 4, 3, 0), r"batches must hold vectors of dimension d >= 1"),
])
def test_zero_size_batches_named(shape, message):
    """Issue 14: d = 0 (or n = 0) matrices give a message naming the argument."""
    with pytest.raises(ValueError, match=message):
        ps.RobustCovarianceEstimator().fit(np.zeros(shape))
    with pytest.raises(ValueError, match=message.replace("batches", "batches")):
        ps.RobustCovarianceEstimator(d=2).update(np.zeros(shape[1:]))


def test_init_needs_the_dimension():
    with pytest.raises(ValueError, match="d .the dimension of the vectors. is unknown"):
        ps.RobustCovarianceEstimator().init()
    with pytest.raises(ValueError, match="d .the dimension of the vectors."):
        ps.RobustCovarianceEstimator(d=0)
    assert ps.RobustCovarianceEstimator(d=3).init((2,)).batch_shape == (2,)


def test_nan_batch_is_missing(rng):
    """A batch with a NaN is missing: the posterior is carried over, Info is NaN."""
    batches = rng.normal(size=(6, 5, 2))
    holes = batches.copy()
    holes[3, 1, 0] = np.nan
    fit = ps.RobustCovarianceEstimator(tau=0.25).fit(holes)
    clean = ps.RobustCovarianceEstimator(tau=0.25).fit(np.delete(batches, 3, axis=0))
    assert np.isnan(fit.log_consistency[3]) and np.isnan(fit.discount[3])
    np.testing.assert_array_equal(fit.covariance[3], fit.covariance[2])
    np.testing.assert_allclose(np.delete(fit.discount, 3), clean.discount, rtol=1e-12)
    np.testing.assert_allclose(fit.posterior.psi, clean.posterior.psi, rtol=1e-12)


@pytest.mark.parametrize("tau", [0.0, -0.1, 1.5, np.nan])
def test_bad_tau(tau):
    with pytest.raises(ValueError, match="tau"):
        ps.RobustCovarianceEstimator(tau=tau)


def test_bad_other_arguments(rng):
    with pytest.raises(ValueError, match="dim"):
        ps.RobustCovarianceEstimator(dim=0.0)
    with pytest.raises(ValueError, match=r"omega must be in \(0, 1\)"):
        ps.RobustCovarianceEstimator(omega=1.0)
    with pytest.raises(ValueError, match="prior"):
        ps.RobustCovarianceEstimator(prior=ps.Normal(0.0, 1.0))
    with pytest.raises(ValueError, match="prior has dimension 3"):
        ps.RobustCovarianceEstimator(prior=ps.NormalInverseWishart.uninformative(3)).fit(
            rng.normal(size=(4, 6, 2)))
    # the ω split needs something to lend: an uninformative prior cannot bound the first batch
    with pytest.raises(ValueError, match="unbounded"):
        ps.RobustCovarianceEstimator(omega=0.9).fit(rng.normal(size=(4, 2, 2)))
