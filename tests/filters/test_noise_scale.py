"""Kalman filter with a learned noise scale: hand-computed step, reduction to the Kalman filter,
recovery of a wrong R, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import chi2

import possibly as ps
from possibly.filters.kalman import NoiseScaleKalmanFilter

F, Q, H, R = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)


def S(a, b):  # support function of the gamma family, docs/math.md §2
    return a * np.log(a / b) - a


@pytest.mark.parametrize("coverage", [None, 0.9])
@pytest.mark.parametrize("y", [3.0, 6.0])
def test_one_step_by_hand(y, coverage):
    prior = ps.MultivariateNormal([0.5, 0.1], np.linalg.inv(np.diag([2.0, 0.5])))
    a0, b0, omega = 3.0, 2.0, 0.9
    kf = NoiseScaleKalmanFilter(F, Q, H, R, scale_prior=(a0, b0), omega=omega, prior=prior,
                                coverage=coverage, robust_start=False)  # one plain step
    state, info = kf.step(kf.init(), [y])
    lam = a0 / b0
    P = np.diag([2.0, 0.5])
    h = H[0]
    v = y - h @ np.array([0.5, 0.1])
    q = v * v / (lam * h @ P @ h + R[0, 0])
    # the consistency relative to an observation at the prediction, docs/math.md §8 (checked
    # by brute force below): S(α + ½, β + q/2) - S(α + ½, β)
    log_c = S(a0 + 0.5, b0 + q / 2) - S(a0 + 0.5, b0)
    if coverage is None:
        rho = np.exp(log_c / 3)  # θ: dim = n + 1
    else:  # relative to log c at the coverage quantile of an inlier's q (λ̂ q ~ χ²₁)
        q0 = chi2(1).ppf(coverage) / lam
        log_c0 = S(a0 + 0.5, b0 + q0 / 2) - S(a0 + 0.5, b0)
        rho = min(1.0, np.exp((log_c - log_c0) / 3))
    rho_scale = np.exp(log_c / 2)  # λ: scale_dim = 2

    def rho_at(x):  # the scale's discount of an inlier with λ̂ q = x
        qq = x / lam
        return np.exp(min(S(a0 + 0.5, b0 + qq / 2) - S(a0 + 0.5, b0), 0.0) / 2)

    pdf = chi2(1).pdf
    kappa = quad(lambda x: rho_at(x) * x * pdf(x), 0, np.inf)[0] \
        / quad(lambda x: rho_at(x) * pdf(x), 0, np.inf)[0]
    r_eff = R[0, 0] / (rho * lam)
    k = P @ h / (h @ P @ h + r_eff)
    assert np.isclose(info.log_consistency, log_c, rtol=1e-12)
    assert np.isclose(info.discount, rho, rtol=1e-12)
    np.testing.assert_allclose(state.kalman.mean, np.array([0.5, 0.1]) + k * v, rtol=1e-12)
    np.testing.assert_allclose(state.kalman.covariance, P - np.outer(k, h @ P), rtol=1e-10)
    assert np.isclose(state.alpha, omega * a0 + rho_scale * ((1 - omega) * a0 + 0.5 * kappa),
                      rtol=1e-9)
    assert np.isclose(state.beta, omega * b0 + rho_scale * ((1 - omega) * b0 + q / 2))


@pytest.mark.parametrize("a0, b0, omega, y", [(3.0, 2.0, 0.9, 3.0), (1.0, 1.0, 0.99, 0.4),
                                               (40.0, 10.0, 0.95, -6.0), (2.0, 5.0, 0.5, 12.0)])
def test_joint_consistency_is_a_brute_force_sup(a0, b0, omega, y):
    """log c of the step (docs/math.md §8) against suprema over (θ, λ) found by an optimiser:
    the ω-split consistency (§3) of the prior N̄(θ; μ, (λ/λ̂) P⁻¹) Ḡ(λ; α, β) with the
    likelihood λ^{m/2} exp(-λ (y - Hθ)ᵀ R₀⁻¹ (y - Hθ) / 2), at y less the same at y = Hμ."""
    from scipy.optimize import minimize

    mu, P = np.array([0.5, 0.1]), np.diag([2.0, 0.5])
    prior = ps.MultivariateNormal(mu, np.linalg.inv(P))
    kf = NoiseScaleKalmanFilter(F, Q, H, R, scale_prior=(a0, b0), omega=omega, prior=prior,
                                robust_start=False)  # one plain step
    _, info = kf.step(kf.init(), [y])
    lam_hat, h, r0 = a0 / b0, H[0], R[0, 0]
    prec = np.linalg.inv(P)

    def log_gamma(lam, a, b):  # log Ḡ(λ; a, b), sup 1
        return a * np.log(lam) - b * lam - S(a, b)

    def split_log_c(obs):
        def neg_joint(p):  # p = (θ₁, θ₂, log λ)
            th, lam = p[:2], np.exp(p[2])
            d = th - mu
            return -(-0.5 * (lam / lam_hat) * d @ prec @ d
                     + log_gamma(lam, omega * a0, omega * b0)
                     + 0.5 * np.log(lam) - 0.5 * lam * (obs - h @ th) ** 2 / r0
                     + log_gamma(lam, (1 - omega) * a0, (1 - omega) * b0))

        def neg_lik(p):  # the likelihood part alone: θ₁ = obs fits, a sup over λ remains
            lam = np.exp(p[0])
            return -(0.5 * np.log(lam) + log_gamma(lam, (1 - omega) * a0, (1 - omega) * b0))

        best = min((minimize(neg_joint, [mu[0], mu[1], s], method="Nelder-Mead",
                             options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 20000})
                    for s in np.log(lam_hat) + np.array([-3.0, 0.0, 3.0])), key=lambda r: r.fun)
        lik = minimize(neg_lik, [np.log(lam_hat)], method="Nelder-Mead",
                       options={"xatol": 1e-10, "fatol": 1e-13})
        return -best.fun + lik.fun  # sup of the product / sup of the likelihood (prior: 1)

    brute = split_log_c(y) - split_log_c(h @ mu)
    assert np.isclose(info.log_consistency, brute, atol=1e-6)
    assert split_log_c(h @ mu) < -1e-3  # the split's own cost, which the relative form removes


def test_kappa_table_matches_the_quadrature_and_an_integral():
    """κ(α) from the table against the direct quadrature (1e-8) and, at a few α, against
X"""
    from possibly.filters.noise_scale import _kappa_table, kappa_direct

    alpha = np.exp(np.random.default_rng(0).uniform(np.log(1e-7), np.log(1e11), 20000))
    for dof in (1, 2, 3):
        np.testing.assert_allclose(_kappa_table(dof, 2.0)(alpha), kappa_direct(alpha, dof, 2.0),
                                   rtol=1e-8)
    for a, dof in [(0.3, 1), (1.0, 2), (40.0, 2), (1e4, 3)]:
        def weight(x, a=a, dof=dof):  # ρ(x) times the χ² density
            return np.exp(-(a + dof / 2) * np.log1p(x / (2 * a)) / 2.0) * chi2(dof).pdf(x)

        ref = quad(lambda x: weight(x) * x, 0, np.inf)[0] \
            / (dof * quad(weight, 0, np.inf)[0])
        assert np.isclose(kappa_direct(a, dof, 2.0), ref, rtol=1e-6)
    # the limit α → ∞ (ρ = exp(-X/4)): E[X e^{-X/4}] / (k E[e^{-X/4}]) = 2/3
    assert np.isclose(_kappa_table(2, 2.0)(np.array([1e14]))[0], 2.0 / 3.0, rtol=1e-6)


def test_uninformed_direction_carries_no_scale_information():
    """From the uninformative prior the first observation is fitted exactly (q = 0): it says
    nothing on λ, so the gamma stays put and θ takes it whole (c = 1, as without the scale)."""
    kf = NoiseScaleKalmanFilter(F, Q, H, R, scale_prior=(3.0, 2.0), robust_start=False)
    state, info = kf.step(kf.init(), [2.5])
    assert info.log_consistency == 0.0 and info.discount == 1.0
    assert state.alpha == 3.0 and state.beta == 2.0
    assert state.kalman.mean[0] == 2.5


def test_fixed_scale_is_the_kalman_filter():
    """A gamma prior with enormous weight pins λ = 1: the standard filter, exactly."""
    rng = np.random.default_rng(0)
    ys = np.cumsum(rng.normal(size=40)) + rng.normal(size=40)
    ys[7] = np.nan
    res = NoiseScaleKalmanFilter(F, Q, H, R, scale_prior=(1e15, 1e15), robust=False).fit(ys)
    ref = ps.KalmanFilter(F, Q, H, R, robust=False).filter(ys)
    np.testing.assert_allclose(res.mean, ref.mean, rtol=1e-9, atol=1e-9)
    assert np.isnan(res.discount[7]) and np.isnan(res.log_consistency[7])
    np.testing.assert_allclose(res.noise_scale, 1.0, rtol=1e-9)



@pytest.mark.parametrize("robust", [False, True])
def test_switches_to_covariance_form(robust):
    """Once every direction is informed the state leaves the information form, as the Kalman
    filter's does, and the covariance is reported (it used to stay ``inf`` for good: the update
    switched to covariance form but the selection against the prediction switched back)."""
    rng = np.random.default_rng(0)
    ys = np.cumsum(rng.normal(size=40)) + rng.normal(size=40)
    ys[7] = np.nan
    kf = NoiseScaleKalmanFilter(F, Q, H, R, scale_prior=(1e15, 1e15), robust=robust)
    res = kf.fit(ys)
    start = 10 if robust else 1  # the robust start's mixture holds hypotheses not informed
    assert np.isfinite(res.covariance[start:]).all()
    state = kf.init()
    for y in ys:
        state, _ = kf.step(state, y)
    assert not state.kalman.information_form
    if not robust:  # λ pinned at 1: the standard filter's covariance
        ref = ps.KalmanFilter(F, Q, H, R, robust=False).filter(ys)
        np.testing.assert_allclose(res.covariance[1:], ref.covariance[1:], rtol=1e-9)

@pytest.mark.parametrize("factor", [10.0, 0.1])
def test_wrong_r_is_corrected(factor):
    """Told R off by 10x, the filter learns the scale and tracks as well as with the true R."""
    rng = np.random.default_rng(3)
    T, B = 400, 20
    pos = np.cumsum(np.cumsum(0.05 * rng.normal(size=(B, T)), axis=1), axis=1)
    ys = pos + rng.normal(size=(B, T))
    out = rng.random((B, T)) < 0.05
    # outliers must not inflate the scale; the first ones are inliers (an early outlier,
    # from the uninformative prior, is what the robust start is for)
    out[:, :20] = False
    ys[out] += 30.0
    res = NoiseScaleKalmanFilter(F, Q, H, factor * R).fit(ys[..., None])
    assert np.all(np.abs(np.log(res.noise_scale[:, -1] * factor)) < np.log(1.3))
    err = np.sqrt(np.mean((res.mean[..., 0] - pos) ** 2, axis=-1))
    good = ps.KalmanFilter(F, Q, H, R).filter(ys[..., None]).mean[..., 0]
    err_true = np.sqrt(np.mean((good - pos) ** 2, axis=-1))
    assert np.median(err) < 1.1 * np.median(err_true)


@pytest.mark.parametrize("factor", [10.0, 0.1])
def test_wrong_r_is_learned_in_two_dimensions(factor):
    """Gaussian noise, a 2-D constant-velocity model simulated with its own Q, R given 10x too
    large or too small: the learned R is the true one (the simulation's 4·I, the independent
    reference) within 15% on every series after 1000 steps, and tracks as well as the filter
    given the true R."""
    F, Q, H, R = (np.asarray(a) for a in ps.filters.constant_velocity(ndim=2))
    rng = np.random.default_rng(4)
    B, T, n = 20, 1000, F.shape[0]
    chol = np.linalg.cholesky(Q + 1e-15 * np.eye(n))
    x, xs, ys = np.zeros((B, n)), np.empty((B, T, n)), np.empty((B, T, 2))
    for t in range(T):
        x = x @ F.T + rng.standard_normal((B, n)) @ chol.T
        xs[:, t], ys[:, t] = x, x @ H.T + 2.0 * rng.standard_normal((B, 2))
    res = NoiseScaleKalmanFilter(F, Q, H, factor * R).fit(ys)
    learned = factor * res.noise_scale[:, -1]
    assert np.all(np.abs(np.log(learned / 4.0)) < np.log(1.15))
    err = np.sqrt(np.mean((res.mean[..., 0] - xs[..., 0]) ** 2, axis=-1))
    good = ps.KalmanFilter(F, Q, H, 4.0 * R).filter(ys).mean[..., 0]
    assert np.median(err) < 1.1 * np.median(np.sqrt(np.mean((good - xs[..., 0]) ** 2, -1)))


def test_bad_input():
    with pytest.raises(ValueError, match="scale_prior"):
        NoiseScaleKalmanFilter(F, Q, H, R, scale_prior=(0.0, 1.0))
    with pytest.raises(ValueError, match="scale_prior"):
        NoiseScaleKalmanFilter(F, Q, H, R, scale_prior=(1.0, -2.0))
    with pytest.raises(ValueError, match="scale_prior"):
        NoiseScaleKalmanFilter(F, Q, H, R, scale_prior=1.0)
    with pytest.raises(ValueError, match="omega"):
        NoiseScaleKalmanFilter(F, Q, H, R, omega=1.0)
    with pytest.raises(ValueError, match="scale_dim"):
        NoiseScaleKalmanFilter(F, Q, H, R, scale_dim=0.0)
    with pytest.raises(ValueError, match="finite"):
        NoiseScaleKalmanFilter(F, Q, H, R).fit(np.array([1.0, np.inf, 2.0]))
    with pytest.raises(ValueError, match="y must have shape"):
        NoiseScaleKalmanFilter(F, 0.1 * np.eye(2), np.eye(2), np.eye(2)).fit(np.ones((5, 3)))


def test_kalman_filter_flag():
    kf = ps.KalmanFilter(F, Q, H, 10 * R, learn_noise_scale=True, scale_prior=(2.0, 1.0))
    assert isinstance(kf, ps.KalmanFilter) and kf.learn_noise_scale
    assert kf.scale_prior == (2.0, 1.0)
    assert isinstance(NoiseScaleKalmanFilter(F, Q, H, R), ps.KalmanFilter)
    assert isinstance(ps.KalmanFilter(F, Q, H, R, learn_noise_scale=False), ps.KalmanFilter)


def test_robust_start_protects_the_learned_scale():
    """An early outlier from the uninformative prior: without the robust start it captures the
    state (and the scale grows to explain the lost track); with it, it is dropped."""
    rng = np.random.default_rng(5)
    pos = 0.1 * np.arange(200)
    ys = pos + rng.normal(size=200)
    ys[1] += 60.0
    err = {}
    for rs in (False, True):
        res = NoiseScaleKalmanFilter(F, Q, H, 0.1 * R, robust_start=rs).fit(ys)
        err[rs] = np.sqrt(np.mean((res.mean[50:, 0] - pos[50:]) ** 2))
        if rs:
            assert abs(np.log(0.1 * res.noise_scale[-1])) < np.log(1.5)
    assert err[True] < 0.5 < 5.0 < err[False]


def _local_level(seed, T=100, Q=1469.0, R=15000.0):
    """A level like the Nile's (local-level fit: Q ≈ 1469, R ≈ 15099), simulated."""
    rng = np.random.default_rng(seed)
    level = 1120.0 + np.cumsum(np.r_[0.0, np.sqrt(Q) * rng.standard_normal(T - 1)])
    return level + np.sqrt(R) * rng.standard_normal(T)


def _ml_noise(y, Q):
    """Maximum-likelihood R of the local level with Q known: the exact log-likelihood given
    y_0 (diffuse start), maximised over log R by scipy; no code of the library."""
    from scipy.optimize import minimize_scalar

    def minus_loglik(log_r):
        r = np.exp(log_r)
        m, p, ll = y[0], r, 0.0
        for obs in y[1:]:
            p += Q
            s = p + r
            ll -= 0.5 * (np.log(2 * np.pi * s) + (obs - m) ** 2 / s)
            m, p = m + p / s * (obs - m), p * r / s
        return -ll

    res = minimize_scalar(minus_loglik, bounds=(np.log(1e-2), np.log(1e10)), method="bounded",
                          options={"xatol": 1e-8})
    return float(np.exp(res.x))


@pytest.mark.parametrize("factor", [1e2, 1e4])
def test_a_noise_scale_far_too_large_is_unlearned_in_100_steps(factor):
    """R given 100 or 10⁴ times too large on 100 points of a Nile-like level: the prior's
    sum of squares used to outweigh the data (learned 4.3-5.9x and 270-364x the maximum-
    likelihood R, seeds 0-9); tempered by its conflict with the data, it no longer does."""
    Q = 1469.0
    for seed in range(5):
        y = _local_level(seed)
        ml = _ml_noise(y, Q)
        kf = NoiseScaleKalmanFilter([[1.0]], [[Q]], [[1.0]], [[factor * 15000.0]])
        learned = factor * 15000.0 * kf.fit(y).noise_scale[-1]
        assert 1 / 1.6 < learned / ml < 1.6, (seed, learned, ml)


def test_small_residuals_temper_the_prior_large_ones_do_not():
    """The prior is tempered only when the data say the noise is smaller than it says (no
    outlier can cause that); an early gross outlier leaves the prior whole."""
    rng = np.random.default_rng(8)
    pos = np.cumsum(np.cumsum(0.05 * rng.normal(size=200)))
    ys = pos + rng.normal(size=200)
    ys[3] += 1e3
    kf = NoiseScaleKalmanFilter(F, Q, H, R, robust_start=False)
    state, _ = kf.step(kf.init(), ys[0])
    for y in ys[1:4]:
        state, _ = kf.step(state, y)
    # the outlier made the data's scale larger: the prior keeps its weight (w = 1)
    np.testing.assert_allclose(state.alpha, state.prior_alpha + state.data_alpha, rtol=1e-12)
    np.testing.assert_allclose(state.beta, state.prior_beta + state.data_beta, rtol=1e-12)
    res = NoiseScaleKalmanFilter(F, Q, H, R).fit(ys)  # with the robust start
    assert abs(np.log(res.noise_scale[-1])) < np.log(1.3)
    # told R 1000x too large: the residuals are small, the prior's weight goes
    big = NoiseScaleKalmanFilter(F, Q, H, 1e3 * R, robust_start=False)
    state = big.init()
    for y in np.r_[ys[:3], ys[3] - 1e3, ys[4:8]]:  # the same, without the outlier
        state, _ = big.step(state, y)
    assert state.alpha - state.data_alpha < 0.01 * state.prior_alpha  # weight w < 0.01


def _learned_over_ml(factor, y, clean, Q=1469.0):
    """The R learned on ``y`` from R given ``factor`` times the simulation's, over the
    maximum-likelihood R of ``clean``."""
    kf = NoiseScaleKalmanFilter([[1.0]], [[Q]], [[1.0]], [[factor * 15000.0]])
    return factor * 15000.0 * kf.fit(y).noise_scale[-1] / _ml_noise(clean, Q)


def _with_outliers(y, kind, seed):
    """``y`` with one outlier of 20 noise sd at t = 3, or 5% of them at random signs."""
    y = y.copy()
    sd = np.sqrt(15000.0)
    if kind == "one":
        y[3] += 20 * sd
    else:
        rng = np.random.default_rng(1000 + seed)
        out = rng.random(y.size) < 0.05
        y[out] += 20 * sd * rng.choice([-1.0, 1.0], out.sum())
    return y


@pytest.mark.parametrize("factor", [1e-2, 1e-3, 3e-4, 1e-4])
def test_a_noise_scale_far_too_small_is_learned_in_100_steps(factor):
    """R given 10² to 10⁴ times too small on 100 points of a Nile-like level: every residual
    looked like an outlier, the scale grew by a bounded factor per step, and reached 0.47-0.71,
    0.28-0.60 and 0.10-0.52 times the maximum-likelihood R (seeds 0-9); the scale's start
    hypotheses find its order of magnitude."""
    for seed in range(10):
        y = _local_level(seed)
        ratio = _learned_over_ml(factor, y, y)
        assert 1 / 1.6 < ratio < 1.6, (seed, ratio)


@pytest.mark.parametrize("kind", ["one", "five percent"])
@pytest.mark.parametrize("factor", [1e-3, 1.0, 1e4])
def test_outliers_do_not_choose_the_scale(factor, kind):
    """An outlier of 20 sd at t = 3, or 5% of them: the learned R stays within 1.6x of the
    maximum-likelihood R of the series without them, from R given right or 10³ too small or
    10⁴ too large (an early outlier used to stop the prior's discount: 4-17x the ML R from
    10² or 10⁴ too large, seeds 0-9)."""
    for seed in range(5):
        clean = _local_level(seed)
        ratio = _learned_over_ml(factor, _with_outliers(clean, kind, seed), clean)
        assert 1 / 1.6 < ratio < 1.6, (seed, ratio)


def test_scale_hypotheses_score_is_a_brute_force_sup():
    """The score of a scale hypothesis (docs/math.md §8) against the sup over every labelling
    of its observations with outliers a strict minority of them: an inlier counts its log
    density, an outlier its density at q = 0 plus the floor; outliers by force (the robust
    start's drops) are outliers in every labelling."""
    from itertools import combinations

    from possibly.filters.noise_scale import _scale_score

    rng = np.random.default_rng(0)
    for _ in range(200):
        t = int(rng.integers(1, 8))
        density = rng.normal(-3.0, 4.0, t)
        outlier = density + rng.exponential(3.0, t) - 1.0  # floor + density at q = 0
        forced = rng.random(t) < 0.15
        gain = np.where(forced, 0.0, np.maximum(outlier - density, 0.0))
        ev = np.stack([np.where(forced, outlier, density), gain, np.ones(t), forced], -1)
        best = -np.inf
        for r in range(t):
            if 2 * r >= t:  # a strict minority
                break
            for drop in combinations(range(t), r):
                if not set(np.flatnonzero(forced)) <= set(drop):
                    continue
                best = max(best, sum(outlier[i] if i in drop else density[i]
                                     for i in range(t)))
        got = _scale_score(ev[None])[0]
        assert got == best == -np.inf or np.isclose(got, best, rtol=1e-12), (got, best)


def test_the_learned_scale_does_not_depend_on_the_units():
    """y → a y + b with Q and R given in the new units: the same learned multiplier of R."""
    y = _local_level(3)
    a, b = 1e-3, 50.0
    res = [NoiseScaleKalmanFilter([[1.0]], [[s * s * 1469.0]], [[1.0]], [[s * s * 1.5]])
           .fit(s * y + off).noise_scale for s, off in ((1.0, 0.0), (a, b))]
    np.testing.assert_allclose(res[1], res[0], rtol=1e-6)


def test_a_dropped_observation_is_an_outlier_by_force_even_when_its_stand_in_fits():
    """The robust start drops y (NaN here); its stand-in fits the prediction exactly (prior
    mean 0, q = 0). The scale's hypotheses must still count it as an outlier by force, as
    docs/math.md §8 says, not as a step nobody judges (all zeros)."""
    from possibly.filters.kalman_state import KalmanState
    from possibly.filters.noise_scale import NoiseScaleState

    kf = NoiseScaleKalmanFilter(np.eye(1), [[1.0]], [[1.0]], [[1.0]])
    state = NoiseScaleState(KalmanState(np.zeros(1), np.eye(1)), np.array(1.0), np.array(1.0))
    evidence, info, _ = kf._scale._plain_step(state, np.array([np.nan]))
    # (density at q = 0 + log ε, outlier gain 0, counts, outlier by force, judged)
    assert evidence[1:].tolist() == [0.0, 1.0, 1.0, 1.0] and np.isfinite(evidence[0])
    assert np.isnan(info.discount)  # reported as missing


@pytest.mark.parametrize("engine", ["auto", "numpy"])
def test_predicted_states_are_the_predictions_of_the_filtered_ones(engine, auto_compiles):
    """The predicted states that the smoother reads (one batched predict over time) are
    ``F μ`` and ``F P Fᵀ + Q`` of each step's filtered state, written out step by step."""
    model = ps.filters.constant_velocity(obs_sd=2.0)
    rng = np.random.default_rng(12)
    ys = np.cumsum(rng.normal(size=(2, 120, 1)), axis=1) + 2.0 * rng.normal(size=(2, 120, 1))
    ys[0, 40] += 60.0
    ys[1, 70] = np.nan
    fr = ps.KalmanFilter(model, learn_noise_scale=True).filter(ys, engine=engine)
    F, Q = model.F, model.Q
    informed = np.isfinite(fr.covariance).all(axis=(-2, -1))
    for b in range(2):
        for t in range(1, 120):
            if not informed[b, t - 1]:
                continue
            P = fr.covariance[b, t - 1]
            np.testing.assert_allclose(fr.predicted_mean[b, t], F @ fr.mean[b, t - 1],
                                       rtol=1e-13, atol=1e-13)
            np.testing.assert_allclose(fr.predicted_covariance[b, t], F @ P @ F.T + Q,
                                       rtol=1e-12, atol=1e-14)
    assert informed[:, 5:].all()  # the batched predict served all but the first steps
