"""The ω split (paper §4.3, appendix A; MATH.md §3) against brute force.

Reference values come from direct numerical sups of the functions written out by hand
(normal density, gamma and normal possibility functions), never from the library's algebra.
"""

import numpy as np
import pytest
from scipy import optimize

import possibly as ps


def first_step(beta0, mu0, y, *, omega, tau=None):
    """The estimator's first step from its prior (the paper's recursion)."""
    est = ps.RobustNormalEstimator(beta0=beta0, mu0=mu0, omega=omega, tau=tau,
                                   robust_start=False)
    return est.step(est.init(), y)


# -- hand-written functions of (mu, lam) --------------------------------------------------------
def log_normal_obs(y, mu, lam):
    """log p(y | mu, lam) up to a constant (cancels in every ratio below)."""
    return 0.5 * np.log(lam) - 0.5 * lam * (y - mu) ** 2


def log_gamma_poss(lam, a, b):
    """log Ḡ(lam; a, b) = a log(b lam / a) + a - b lam (a = 0: -b lam)."""
    if a == 0:
        return -b * lam
    return a * np.log(b * lam / a) + a - b * lam


def log_ng_poss(mu, lam, m, k, a, b):
    return -0.5 * k * lam * (mu - m) ** 2 + log_gamma_poss(lam, a, b)


def numerical_sup(fun, starts):
    """max over (mu, log lam) of fun(mu, lam), best of several local searches."""
    best = -np.inf
    for x0 in starts:
        res = optimize.minimize(lambda x: -fun(x[0], np.exp(x[1])), x0, method="Nelder-Mead",
                                options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 20000})
        best = max(best, -res.fun)
    return best


def brute_log_c(y, m, k, a, b, omega, lend):
    """log sup_θ L_t(θ | y) f_kept(θ), with L_t = p(y | θ) f_lent(θ) / sup(p f_lent)."""
    if lend == "precision":
        kept = (m, k, omega * a, omega * b)
        lent = (m, 0.0, (1 - omega) * a, (1 - omega) * b)
    else:
        kept = (m, omega * k, omega * a, omega * b)
        lent = (m, (1 - omega) * k, (1 - omega) * a, (1 - omega) * b)

    def lik(mu, lam):
        return log_normal_obs(y, mu, lam) + log_ng_poss(mu, lam, *lent)

    def prod(mu, lam):
        return lik(mu, lam) + log_ng_poss(mu, lam, *kept)

    starts = [(mu0, l0) for mu0 in (y, m, 0.5 * (y + m)) for l0 in (-4.0, 0.0, 3.0)]
    return numerical_sup(prod, starts) - numerical_sup(lik, starts)


CASES = [
    # y, m, k, a, b, omega
    (3.0, 0.0, 0.0, 0.0, 1.0, 0.99),      # the paper's first step
    (1.0, 0.5, 2.0, 1.5, 2.0, 0.9),
    (-2.0, 1.0, 5.0, 4.0, 3.0, 0.99),
    (8.0, 2.0, 10.0, 5.0, 20.0, 0.95),    # an outlier
    (2.2, 2.0, 1.0, 0.5, 0.5, 0.5),
]


@pytest.mark.parametrize("lend", ["precision", "all"])
@pytest.mark.parametrize("case", CASES)
def test_consistency_equals_brute_force_sup(case, lend):
    y, m, k, a, b, omega = case
    prior = ps.NormalGamma(m, k, a, b)
    res = ps.robust_update(prior, ps.likelihood.normal_unknown(y), omega=omega, lend=lend)
    expected = brute_log_c(y, m, k, a, b, omega, lend)
    assert np.log(res.consistency) == pytest.approx(expected, abs=1e-6)
    assert res.gamma == pytest.approx(np.exp(expected / 2), rel=1e-5)


@pytest.mark.parametrize("case", CASES[1:])
@pytest.mark.parametrize("tau", [None, 0.1])
def test_posterior_mode_equals_brute_force(case, tau):
    """The robust posterior ∝ L_t^ρ f_kept: its argmax found numerically is the E* of the
    returned N̄Ḡ (mean, alpha / beta)."""
    y, m, k, a, b, omega = case
    prior = ps.NormalGamma(m, k, a, b)
    res = ps.robust_update(prior, ps.likelihood.normal_unknown(y), omega=omega,
                           lend="precision", tau=tau)
    rho = float(res.discount)
    kept = (m, k, omega * a, omega * b)
    lent = (m, 0.0, (1 - omega) * a, (1 - omega) * b)

    def post(mu, lam):
        return (rho * (log_normal_obs(y, mu, lam) + log_ng_poss(mu, lam, *lent))
                + log_ng_poss(mu, lam, *kept))

    best = optimize.minimize(lambda x: -post(x[0], np.exp(x[1])), (m, np.log(a / b)),
                             method="Nelder-Mead",
                             options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 20000})
    mu_hat, lam_hat = best.x[0], np.exp(best.x[1])
    mean, lam = res.posterior.mode
    assert float(mean) == pytest.approx(mu_hat, abs=1e-6)
    assert float(lam) == pytest.approx(lam_hat, rel=1e-5)


def test_paper_printed_update_is_not_the_posterior():
    """MATH.md §3: the printed α_t = α + γ((1-ω)α + 1/2) is not the posterior's shape."""
    y, m, k, a, b, omega = CASES[2]
    res = ps.robust_update(ps.NormalGamma(m, k, a, b), ps.likelihood.normal_unknown(y),
                           omega=omega, lend="precision")
    g = float(res.discount)
    printed_alpha = a + g * ((1 - omega) * a + 0.5)
    algebra_alpha = omega * a + g * ((1 - omega) * a + 0.5)
    assert float(res.posterior.alpha) == pytest.approx(algebra_alpha, rel=1e-12)
    assert abs(float(res.posterior.alpha) - printed_alpha) > 1e-3


def test_printed_consistency_formula_agrees():
    """The appendix's printed c(y_t) (checked here, not trusted) equals the algebra's."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        y, m = rng.normal(0, 3, size=2)
        k, a, b = rng.uniform(0.1, 5, size=3)
        omega = rng.uniform(0.5, 0.999)
        bhat = b + k / (2 * (k + 1)) * (m - y) ** 2
        a1 = (1 - omega) * a + 0.5
        log_c = (a1 * np.log((1 - omega) * b / a1) + omega * a * np.log(b / a)
                 + (a + 0.5) * np.log((a + 0.5) / bhat))
        res = ps.robust_update(ps.NormalGamma(m, k, a, b), ps.likelihood.normal_unknown(y),
                               omega=omega, lend="precision")
        assert np.log(res.consistency) == pytest.approx(min(log_c, 0.0), abs=1e-10)


@pytest.mark.parametrize("omega", [0.5, 0.9, 0.99, 0.999])
@pytest.mark.parametrize("y", [-7.0, 0.0, 3.0])
def test_first_observation_has_c_sqrt_one_minus_omega(omega, y):
    for beta0, mu0 in [(1.0, 0.0), (0.2, 5.0), (30.0, -1.0)]:
        prior = ps.NormalGamma(mu0, 0.0, 0.0, beta0)
        res = ps.robust_update(prior, ps.likelihood.normal_unknown(y), omega=omega,
                               lend="precision")
        assert float(res.consistency) == pytest.approx(np.sqrt(1 - omega), rel=1e-12)
        _, info = first_step(beta0, mu0, y, omega=omega)
        assert float(info.consistency) == pytest.approx(np.sqrt(1 - omega), rel=1e-12)
    # and by brute force, for one case
    assert brute_log_c(y, 0.0, 0.0, 0.0, 1.0, omega, "precision") == pytest.approx(
        0.5 * np.log(1 - omega), abs=1e-6)


def test_threshold_keeps_the_first_observation_whole():
    _, info = first_step(1.0, 0.0, 3.0, omega=0.99, tau=0.1)
    assert float(info.gamma) == pytest.approx(0.1 ** 0.5)
    assert float(info.discount) == 1.0
    _, info = first_step(1.0, 0.0, 3.0, omega=0.99)
    assert float(info.discount) == pytest.approx(0.1 ** 0.5)


def test_gamma_forced_to_one_is_the_standard_update(rng):
    """Exponent 1 at every step: the normal-gamma conjugate update, written by hand."""
    y = rng.normal(2.0, 2.0, size=30)
    beta0 = 1.5
    res = ps.update_sequence(ps.NormalGamma(0.0, 0.0, 0.0, beta0),
                             ps.likelihood.normal_unknown(y), robust=False, omega=0.99,
                             lend="precision")
    fit = ps.RobustNormalEstimator(beta0=beta0, omega=0.99, robust=False).fit(y)
    for t in (1, 2, 10, 30):
        yt = y[:t]
        mean = yt.mean()
        ss = ((yt - mean) ** 2).sum()
        expected = (mean, t, t / 2, beta0 + ss / 2)
        post = res.trajectory[t - 1]
        got = (post.mean, post.k, post.alpha, post.beta)
        np.testing.assert_allclose(np.array(got, dtype=float), expected, rtol=1e-10)
        got = tuple(getattr(fit.trajectory, f)[t - 1] for f in ("mean", "k", "alpha", "beta"))
        np.testing.assert_allclose(np.array(got, dtype=float), expected, rtol=1e-10)
        assert fit.precision[t - 1] == pytest.approx(t / (2 * beta0 + ss))


def test_standard_update_with_informative_prior(rng):
    """Same with a prior N̄Ḡ(m0, k0, a0, b0): the textbook conjugate formulas."""
    m0, k0, a0, b0 = 1.0, 2.0, 3.0, 4.0
    y = rng.normal(0.0, 1.0, size=12)
    res = ps.update_sequence(ps.NormalGamma(m0, k0, a0, b0), ps.likelihood.normal_unknown(y),
                             robust=False, omega=0.9, lend="precision")
    n, ybar = len(y), y.mean()
    ss = ((y - ybar) ** 2).sum()
    post = res.posterior
    assert float(post.mean) == pytest.approx((k0 * m0 + n * ybar) / (k0 + n))
    assert float(post.k) == pytest.approx(k0 + n)
    assert float(post.alpha) == pytest.approx(a0 + n / 2)
    assert float(post.beta) == pytest.approx(b0 + ss / 2 + k0 * n * (ybar - m0) ** 2
                                             / (2 * (k0 + n)))


@pytest.mark.parametrize("tau", [None, 0.1, 1.0])
def test_fast_recursion_matches_generic_path(rng, tau):
    """The estimator (fast path of the algebra, log c kept in log space, vectorised) vs the
    checked robust_update(..., lend="precision") via update_sequence."""
    eps = rng.uniform(size=(4, 40)) < 0.2
    y = np.where(eps, rng.standard_cauchy(size=(4, 40)), rng.normal(2.0, 2.0, size=(4, 40)))
    fit = ps.RobustNormalEstimator(beta0=1.0, omega=0.99, tau=tau, robust_start=False).fit(y)
    res = ps.update_sequence(ps.NormalGamma(0.0, 0.0, 0.0, 1.0),
                             ps.likelihood.normal_unknown(y), omega=0.99, lend="precision",
                             tau=tau)  # time on the last axis, as in the estimator
    np.testing.assert_allclose(fit.log_consistency, res.log_consistency, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fit.discount, res.discount, rtol=1e-9, atol=1e-300)
    mean, lam = res.trajectory.mode
    np.testing.assert_allclose(fit.mean, mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fit.precision, lam, rtol=1e-9)


def test_generic_split_needs_bounded_lend():
    """Without omega the unbounded likelihood is refused with a message naming the fix."""
    with pytest.raises(ValueError, match="omega"):
        ps.robust_update(ps.NormalGamma(0.0, 0.0, 0.0, 1.0), ps.likelihood.normal_unknown(1.0))


@pytest.mark.parametrize("omega", [0.0, 1.0, -0.1, 1.5, np.nan])
def test_omega_outside_unit_interval_rejected(omega):
    with pytest.raises(ValueError, match="omega"):
        ps.robust_update(ps.NormalGamma(0.0, 0.0, 0.0, 1.0), ps.likelihood.normal_unknown(1.0),
                         omega=omega, lend="precision")
