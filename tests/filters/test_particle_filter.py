"""ParticlePossibility and the robust possibilistic particle filter.

References: the conjugate families (``ps.combine``/``ps.consistency``) for particle
possibility functions; the Kalman recursion (``ps.KalmanFilter``, and a four-line scalar
Kalman filter written here) for the particle filter on linear-Gaussian models, where the
possibilistic filter is exactly the Kalman filter. Tolerances are Monte Carlo tolerances,
set from the posterior standard deviation, not from runs of the code under test.
"""

import numpy as np
import pytest

import possibly as ps
from possibly.filters import particle_filter as pp


def scalar_kalman(ys, m0, p0, q, r, robust):
    """Robust scalar Kalman filter for x_t = x_{t-1} + N(0, q), y = x + N(0, r) (d = 1)."""
    m, p = m0, p0
    means, sds, log_cs = [], [], []
    for t, y in enumerate(ys):
        if t:
            p = p + q
        log_c = -0.5 * (y - m) ** 2 / (p + r)
        rho = np.exp(log_c) if robust else 1.0
        k = rho * p / (rho * p + r)
        m, p = m + k * (y - m), (1 - k) * p
        means.append(m)
        sds.append(np.sqrt(p))
        log_cs.append(log_c)
    return np.array(means), np.array(sds), np.array(log_cs)


def random_walk_filter(n=1000, robust=True, generic=False, **kw):
    loglik = lambda x, y: -0.5 * (y - x) ** 2 / 0.5  # noqa: E731  r = 0.5
    if generic:
        def sample(x, rng):
            return x + np.sqrt(0.2) * rng.standard_normal(x.shape)

        def logp(x_next, x_prev):
            return -0.5 * (x_next - x_prev) ** 2 / 0.2

        return ps.ParticleFilter(sample, logp, loglik, n_particles=n, robust=robust,
                                 loglik_sup=0.0, **kw)
    return ps.ParticleFilter(lambda x: x, pp.GaussianNoise(0.2), loglik, n_particles=n,
                             robust=robust, loglik_sup=0.0, **kw)


OUTLIERS = [12, 27]


def walk(outliers):
    rng = np.random.default_rng(7)
    x = np.cumsum(np.sqrt(0.2) * rng.standard_normal(40))
    ys = x + np.sqrt(0.5) * rng.standard_normal(40)
    if outliers:
        ys[OUTLIERS] += np.array([15.0, -12.0])  # two gross outliers
    return ys


@pytest.fixture(scope="module")
def walk_data():
    return walk(outliers=True)


# -- particle possibility functions ----------------------------------------------------------
def test_particle_possibility_matches_conjugate_closed_forms(rng):
    prior = ps.Normal(1.0, 2.0)
    x = rng.uniform(-4, 6, 50000)
    parts = ps.ParticlePossibility(x, prior.log_possibility(x))
    lik = ps.likelihood.normal(3.0, sd=0.5)
    exact = ps.combine(prior, lik)
    post = ps.combine(parts, lik)
    assert float(post.mode) == pytest.approx(float(exact.mean), abs=2e-3)
    assert float(ps.consistency(parts, lik)) == pytest.approx(float(ps.consistency(prior, lik)),
                                                              rel=1e-4)
    res, ref = ps.robust_update(parts, lik), ps.robust_update(prior, lik)
    assert float(res.discount) == pytest.approx(float(ref.discount), rel=1e-4)
    assert post.log_values.max() == 0.0
    assert post.credibility(2.5, np.inf) == pytest.approx(float(exact.credibility(2.5, np.inf)),
                                                           rel=1e-3)


def test_particle_possibility_two_dimensional_with_callable(rng):
    prior = ps.MultivariateNormal([0.0, 0.0], np.eye(2))
    x = rng.uniform(-3, 3, (40000, 2))
    parts = ps.ParticlePossibility(x, prior.log_possibility(x))
    y = np.array([1.0, 2.0])
    lik = ps.LogLikelihood(lambda th, y: -0.5 * ((th - y) ** 2).sum(1), y, log_sup=0.0)
    conj = ps.likelihood.linear_gaussian(y, np.eye(2), np.eye(2))
    assert float(ps.consistency(parts, lik)) == pytest.approx(float(ps.consistency(prior, conj)),
                                                              rel=2e-3)
    assert np.abs(ps.combine(parts, lik).mode - ps.combine(prior, conj).mean).max() < 0.05
    box = parts.credibility([0.0, 0.0], [np.inf, np.inf])
    assert box == 1.0 or box == pytest.approx(1.0, abs=1e-3)


def test_bad_particles():
    with pytest.raises(ValueError, match="log_values"):
        ps.ParticlePossibility(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="particles"):
        ps.ParticlePossibility(np.zeros((2, 2, 2)), np.zeros(2))
    with pytest.raises(TypeError, match="only at its particles"):
        ps.ParticlePossibility(np.zeros(3), np.zeros(3)).log_possibility(0.0)


# -- the filter on linear-Gaussian models: the Kalman filter -------------------------------
@pytest.mark.parametrize("robust", [False, True])
@pytest.mark.parametrize("generic", [False, True])
def test_random_walk_filter_matches_kalman(robust, generic):
    # the standard filter gets clean data: after a gross outlier the exact posterior mode
    # jumps far outside the particle cloud, which no bootstrap-type filter can follow
    ys = walk(outliers=robust)
    m_ref, sd_ref, logc_ref = scalar_kalman(ys, 0.0, 1.0, 0.2, 0.5, robust)
    res = random_walk_filter(robust=robust, generic=generic).filter(
        ys, prior=ps.Normal(0.0, 1.0), seed=3)
    err = np.abs(res.mode - m_ref) / sd_ref
    assert np.median(err) < 0.1 and err.max() < 0.5
    inl = np.ones(ys.size, bool)
    if robust:
        inl[OUTLIERS] = False
    # the consistency is a max over particles: close to the exact one for inliers
    assert np.abs(res.log_consistency - logc_ref)[inl].max() < 0.05
    if robust:
        assert (res.discount[~inl] < 1e-10).all()
        assert np.abs(res.discount - np.exp(logc_ref)).max() < 0.05
    else:
        assert (res.discount == 1.0).all()
    assert res.final.log_values.max() == 0.0


def test_constant_velocity_filter_matches_robust_kalman():
    F, Q, H, R = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    rng = np.random.default_rng(11)
    T = 60
    x = np.array([0.0, 0.1])
    ys = []
    for _ in range(T):
        ys.append(x[0] + (10.0 if rng.random() < 0.1 else 1.0) * rng.standard_normal())
        x = F @ x + np.array([0.5, 1.0]) * 0.05 * rng.standard_normal()
    ys = np.array(ys)[:, None]
    prior = ps.MultivariateNormal([0.0, 0.0], np.diag([1 / 100.0, 1 / 0.25]))
    # coverage=None: the particle filter discounts by the paper's γ = c^(1/d)
    kf = ps.KalmanFilter(F, Q, H, R, coverage=None).filter(ys, prior=prior)
    pf = ps.ParticleFilter(lambda x: x @ F.T, pp.GaussianNoise(Q),
                           lambda x, y: -0.5 * (y[0] - x[:, 0]) ** 2 / R[0, 0],
                           n_particles=600, loglik_sup=0.0)
    res = pf.filter(ys, prior=prior, seed=0)
    sd = np.sqrt(kf.covariance[:, 0, 0])
    err = np.abs(res.mode[:, 0] - kf.mean[:, 0]) / sd
    assert np.median(err) < 0.25
    assert np.abs(res.discount - kf.discount).max() < 0.1


def test_prediction_keeps_the_spread_and_values_of_a_normal():
    # one predict of N̄(m, Σ) through x -> F x + N(0, Q): values and cloud should be
    # those of N̄(F m, F Σ Fᵀ + Q) (Kalman predict), even with a singular Q
    F, Q, _, _ = ps.filters.constant_velocity(dt=1.0, accel_sd=0.3, obs_sd=1.0)
    sigma = np.array([[1.0, 0.3], [0.3, 0.5]])
    prior = ps.MultivariateNormal([1.0, -1.0], np.linalg.inv(sigma))
    pf = ps.ParticleFilter(lambda x: x @ F.T, pp.GaussianNoise(Q), lambda x, y: 0.0 * x[:, 0],
                           n_particles=3000)
    rng = np.random.default_rng(5)
    state = pp.predict(pf, pp.sample_prior(pf, prior, rng), rng)
    pred_mean = F @ prior.mean
    pred_cov = F @ sigma @ F.T + Q
    d = state.particles - pred_mean
    exact = -0.5 * np.einsum("ni,ij,nj->n", d, np.linalg.inv(pred_cov), d)
    central = exact > -3.0
    assert np.abs(state.log_values - exact)[central].max() < 0.1
    w = np.exp(state.log_weights - state.log_weights.max())
    w /= w.sum()
    cloud_mean = w @ state.particles
    cloud_cov = ((state.particles - cloud_mean) * w[:, None]).T @ (state.particles - cloud_mean)
    assert cloud_cov == pytest.approx(pred_cov, rel=0.1)


def test_seeded_and_reproducible(walk_data):
    pf = random_walk_filter(n=200)
    a = pf.filter(walk_data, ps.Normal(0.0, 1.0), seed=4)
    b = pf.filter(walk_data, ps.Normal(0.0, 1.0), seed=np.random.default_rng(4))
    c = pf.filter(walk_data, ps.Normal(0.0, 1.0), seed=5)
    assert np.array_equal(a.mode, b.mode)
    assert not np.array_equal(a.mode, c.mode)


def test_threshold_keeps_inliers_whole(walk_data):
    res = random_walk_filter(n=300, tau=0.1).filter(walk_data, ps.Normal(0.0, 1.0), seed=1)
    assert set(np.unique(res.discount[res.gamma > 0.1])) == {1.0}
    assert (res.discount[OUTLIERS] < 1e-10).all()


def test_searched_sup_matches_closed_form(walk_data):
    # without loglik_sup the sup is searched by Nelder-Mead; the likelihood's sup is 0
    loglik = lambda x, y: -0.5 * (y - x) ** 2 / 0.5  # noqa: E731
    pf = ps.ParticleFilter(lambda x: x, pp.GaussianNoise(0.2), loglik, n_particles=200)
    ref = ps.ParticleFilter(lambda x: x, pp.GaussianNoise(0.2), loglik, n_particles=200,
                            loglik_sup=0.0)
    a = pf.filter(walk_data[:15], ps.Normal(0.0, 1.0), seed=2)
    b = ref.filter(walk_data[:15], ps.Normal(0.0, 1.0), seed=2)
    assert a.log_consistency == pytest.approx(b.log_consistency, abs=1e-6)


def test_particle_prior_is_accepted(rng):
    x = rng.uniform(-5, 5, 500)
    prior = ps.ParticlePossibility(x, -0.5 * x**2)
    res = random_walk_filter(n=500).filter(np.array([0.5, 0.4]), prior=prior, seed=0)
    # first update on the prior particles: N̄(0, 1) and y = 0.5, r = 0.5 -> mode 1/3
    assert abs(res.mode[0] - 1 / 3) < 0.05


# -- bad input -------------------------------------------------------------------------------
def test_bad_callables_give_clear_errors():
    prior = ps.Normal(0.0, 1.0)
    good_lik = lambda x, y: -0.5 * (y - x) ** 2  # noqa: E731
    noise = pp.GaussianNoise(0.1)
    cases = [
        (ps.ParticleFilter(lambda x: x, noise, lambda x, y: np.zeros((x.size, 2)),
                           n_particles=50), "loglik.*shape"),
        (ps.ParticleFilter(lambda x: x, noise, lambda x, y: np.full(x.shape, np.nan),
                           n_particles=50), "loglik.*NaN"),
        (ps.ParticleFilter(lambda x: x[:-1], noise, good_lik, n_particles=50),
         "transition.*shape"),
        (ps.ParticleFilter(lambda x: x * np.nan, noise, good_lik, n_particles=50),
         "transition.*NaN"),
        (ps.ParticleFilter(lambda x, rng: x, lambda a, b: np.zeros(3), good_lik,
                           n_particles=50), "transition_logpossibility.*shape"),
        (ps.ParticleFilter(lambda x, rng: x, lambda a, b: (a - b) * np.nan, good_lik,
                           n_particles=50), "transition_logpossibility.*NaN"),
        (ps.ParticleFilter(lambda x: x, pp.GaussianNoise(np.eye(2)), good_lik,
                           n_particles=50), "dimension"),
    ]
    for pf, match in cases:
        with pytest.raises(ValueError, match=match):
            pf.filter([0.1, 0.2], prior, seed=0)


def test_bad_settings():
    lik = lambda x, y: -0.5 * (y - x) ** 2  # noqa: E731
    with pytest.raises(ValueError, match="n_particles"):
        ps.ParticleFilter(lambda x: x, pp.GaussianNoise(0.1), lik, n_particles=1)
    with pytest.raises(ValueError, match="tau"):
        ps.ParticleFilter(lambda x: x, pp.GaussianNoise(0.1), lik, tau=1.5)
    with pytest.raises(ValueError, match="loglik"):
        ps.ParticleFilter(lambda x: x, pp.GaussianNoise(0.1), "not callable")
    with pytest.raises(ValueError, match="transition_logpossibility"):
        ps.ParticleFilter(lambda x: x, 0.1, lik)
    with pytest.raises(ValueError, match="cov"):
        pp.GaussianNoise([[1.0, 0.0], [0.0, -1.0]])
    pf = ps.ParticleFilter(lambda x: x, pp.GaussianNoise(0.1), lik, n_particles=10)
    with pytest.raises(ValueError, match="uninformative"):
        pf.filter([0.0], prior=ps.Normal(0.0, 0.0))
    with pytest.raises(ValueError, match="prior"):
        pf.filter([0.0], prior=ps.Beta(1.0, 1.0))
    with pytest.raises(ValueError, match="at least one"):
        pf.filter([], prior=ps.Normal(0.0, 1.0))
