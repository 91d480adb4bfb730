"""The particle filter speaks the state-space filters' verbs, and its smoother is exact.

References: a brute-force enumeration of every particle path's joint possibility (the
max-marginals the backward pass must give), written here from the definitions; the Kalman
smoother (``KalmanFilter.smooth``) on linear-Gaussian models, where the possibilistic
smoother is the RTS smoother; closed forms for the mean of a density ∝ f. Tolerances are
Monte Carlo tolerances in units of the exact smoothed standard deviation.
"""

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest

import possibly as ps
from possibly.filters.kalman import KalmanFilter
from possibly.filters.particle_filter import (
    GaussianNoise,
    ParticleFilter,
    predict,
    update,
)
from possibly.filters.state_space import LinearGaussianModel, constant_velocity

VERBS = ("fit", "filter", "smooth", "update", "step", "predict", "reset", "init")
Q, R = 0.2, 0.5  # random walk: process and observation variances


def rw_loglik(x, y):
    return -0.5 * (y - x) ** 2 / R


def rw_filter(generic=True, **kw):
    """Random walk x_t = x_{t-1} + N(0, Q), y_t = x_t + N(0, R)."""
    if generic:  # the model's own transition: the backward pass uses it as it is
        def sample(x, rng):
            return x + np.sqrt(Q) * rng.standard_normal(x.shape)

        def logp(x_next, x_prev):
            return -0.5 * (x_next - x_prev) ** 2 / Q

        return ParticleFilter(sample, logp, rw_loglik, loglik_sup=0.0, **kw)
    return ParticleFilter(lambda x: x, GaussianNoise(Q), rw_loglik, loglik_sup=0.0, **kw)


def rw_data(t=20, seed=3):
    rng = np.random.default_rng(seed)
    x = np.cumsum(np.sqrt(Q) * rng.standard_normal(t))
    return x + np.sqrt(R) * rng.standard_normal(t)


# -- verbs, constructor, state ------------------------------------------------------------------
def test_same_verbs_as_the_kalman_filter():
    pf = rw_filter(n_particles=50)
    for verb in VERBS:
        assert callable(getattr(KalmanFilter, verb)), verb
        assert callable(getattr(pf, verb)), verb


def test_arguments_after_the_model_are_keyword_only():
    with pytest.raises(TypeError):
        ParticleFilter(lambda x: x, GaussianNoise(Q), rw_loglik, 100)
    with pytest.raises(TypeError):
        ParticleFilter.from_model(constant_velocity(), 100)
    assert ParticleFilter.from_model(constant_velocity(), n_particles=100).n_particles == 100


def test_state_is_a_frozen_dataclass():
    pf = rw_filter(n_particles=20, prior=ps.Normal(0.0, 1.0), seed=0)
    state = pf.init()
    assert dataclasses.is_dataclass(state) and not isinstance(state, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.t = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="ParticleFilterState from init"):
        pf.step((state.particles, state.log_values, state.log_weights), 0.1)


def test_predict_is_pure_and_step_is_predict_then_update():
    pf = rw_filter(generic=False, n_particles=100, prior=ps.Normal(0.0, 1.0), seed=2)
    state, _ = pf.step(pf.init(), 0.3)
    before = state.rng.bit_generator.state
    predicted = pf.predict(state)
    assert state.rng.bit_generator.state == before  # the state's stream is not advanced
    assert predicted.t == state.t
    assert not np.array_equal(predicted.particles, state.particles)
    # the same numbers as the pure kernel with a copy of the stream
    rng = np.random.default_rng()
    rng.bit_generator.state = before
    ref = predict(pf, state, rng)
    np.testing.assert_array_equal(predicted.particles, ref.particles)
    np.testing.assert_array_equal(predicted.log_values, ref.log_values)
    # step = predict, then update
    stepped, info = pf.step(state, -0.2)
    updated, ref_info = update(pf, predicted, -0.2)
    np.testing.assert_array_equal(stepped.particles, updated.particles)
    np.testing.assert_array_equal(stepped.log_values, updated.log_values)
    assert info.log_consistency == ref_info.log_consistency
    with pytest.raises(ValueError, match="ParticleFilterState"):
        pf.predict("not a state")


def test_streaming_update_and_reset_follow_filter():
    ys = rw_data(6)
    pf = rw_filter(n_particles=80, prior=ps.Normal(0.0, 1.0), seed=4)
    res = pf.filter(ys)
    infos = [pf.update(y) for y in ys]
    np.testing.assert_array_equal([i.log_consistency for i in infos], res.log_consistency)
    assert pf.reset().state is None
    np.testing.assert_array_equal(pf.update(ys[0]).log_consistency, res.log_consistency[0])


# -- mean and mode --------------------------------------------------------------------------------
def test_mean_is_the_mean_of_the_density_proportional_to_f():
    # f(x) = exp(-x) on [0, 10], given as particles x_k = k h on a uniform grid (a flat
    # exploration density): E* (mode) is 0; the mean of the density ∝ f on the grid is that of
    # a truncated geometric law, h Σ k r^k / Σ r^k with r = e^-h (closed form below), and
    # tends to the continuous 1 - 10 e^-10 / (1 - e^-10) as h -> 0
    K, h = 20000, 10.0 / 20000
    x = np.arange(K + 1) * h
    prior = ps.ParticlePossibility(x, -x)
    pf = ParticleFilter(lambda z: z, GaussianNoise(1.0), lambda z, y: np.zeros(len(z)),
                        n_particles=10, loglik_sup=0.0)
    res = pf.filter([0.0], prior, seed=0)  # an uninformative observation: f unchanged
    assert res.mode[0] == 0.0
    r = np.exp(-h)
    s0 = (1 - r ** (K + 1)) / (1 - r)
    s1 = r * (1 - (K + 1) * r**K + K * r ** (K + 1)) / (1 - r) ** 2
    assert res.mean[0] == pytest.approx(h * s1 / s0, rel=1e-9)
    continuous = 1.0 - 10.0 * np.exp(-10.0) / (1.0 - np.exp(-10.0))
    assert res.mean[0] == pytest.approx(continuous, abs=h)


def test_filtered_mean_and_mode_estimate_the_kalman_mean():
    ys = rw_data(20)
    model = LinearGaussianModel([[1.0]], [[Q]], [[1.0]], [[R]])
    kf = KalmanFilter(model, prior=ps.MultivariateNormal([0.0], [[1.0]]),
                      robust=False).filter(ys[:, None])
    sd = np.sqrt(kf.variance[:, 0])
    res = rw_filter(n_particles=1000, robust=False).filter(ys, ps.Normal(0.0, 1.0), seed=1)
    assert np.abs(res.mean - kf.mean[:, 0]).max() < 0.25 * sd.min()
    assert np.abs(res.mode - kf.mean[:, 0]).max() < 0.25 * sd.min()


# -- the smoother -------------------------------------------------------------------------------
def brute_force_max_marginals(clouds, log_prior, log_lik, log_kernel):
    """Max-marginals of ``log_prior(x_0) + sum_t log_lik[t](x_t) + sum_t log_kernel(x_t,
    x_{t-1})`` over every path through the particle clouds, each normalised to max 0."""
    T = len(clouds)
    best = [np.full(len(c), -np.inf) for c in clouds]
    for path in itertools.product(*(range(len(c)) for c in clouds)):
        xs = [clouds[t][i] for t, i in enumerate(path)]
        total = log_prior(xs[0]) + sum(log_lik[t](xs[t]) for t in range(T))
        total += sum(log_kernel(xs[t], xs[t - 1]) for t in range(1, T))
        for t, i in enumerate(path):
            best[t][i] = max(best[t][i], total)
    return [b - b.max() for b in best]


def _observation_terms(ys, discount, loglik):
    """``ρ_t log L(x | y_t)`` (0 for a missing y_t), with the forward pass's discounts."""
    def term(y, rho):
        if np.isnan(y).any():
            return lambda x: 0.0
        return lambda x: rho * float(loglik(np.atleast_2d(x) if np.ndim(x) else
                                            np.atleast_1d(x), y)[0])
    return [term(y, rho) for y, rho in zip(ys, discount, strict=True)]


def test_smoother_is_the_max_marginal_of_the_particle_paths_generic_transition():
    # a heavy-tailed (Cauchy) transition, an outlier (discounted) and a missing observation;
    # a particle prior with 6 points, then 4 particles per step
    def sample(x, rng):
        return x + rng.standard_cauchy(x.shape)

    def logp(x_next, x_prev):
        return -np.log1p((x_next - x_prev) ** 2)

    pf = ParticleFilter(sample, logp, rw_loglik, n_particles=4, loglik_sup=0.0)
    x0 = np.linspace(-2.0, 2.0, 6)
    prior = ps.ParticlePossibility(x0, -0.5 * x0**2)
    ys = np.array([0.3, 6.0, np.nan, -0.4])
    res = pf.smooth(ys, prior, seed=3)
    assert 0.0 < res.discount[1] < 0.5  # the outlier is discounted
    clouds = [f.particles for f in res.possibilities]
    exact = brute_force_max_marginals(
        clouds, lambda x: -0.5 * x**2, _observation_terms(ys, res.discount, rw_loglik),
        lambda a, b: -np.log1p((a - b) ** 2))
    for t in range(len(ys)):
        np.testing.assert_allclose(res.possibilities[t].log_values, exact[t], atol=1e-9)
        assert res.mode[t] == clouds[t][np.argmax(exact[t])]
    # the last step is the filtered one
    np.testing.assert_array_equal(res.possibilities[-1].log_values, res.filtered.final.log_values)


def test_smoother_is_the_max_marginal_of_the_particle_paths_gaussian_noise():
    # bandwidth 0: the forward pass's kernel is the model's N̄(x'; F x, Q) (2-D, Q invertible)
    F = np.array([[1.0, 0.5], [0.0, 0.9]])
    Qm = np.array([[0.3, 0.1], [0.1, 0.2]])
    model = LinearGaussianModel(F, Qm, [[1.0, 0.0]], [[0.4]])
    pf = ParticleFilter.from_model(model, n_particles=5, bandwidth=0.0,
                                   prior=ps.MultivariateNormal([0.0, 0.5], np.eye(2)))
    ys = np.array([[0.2], [7.0], [1.1]])
    res = pf.smooth(ys, seed=5)
    assert res.discount[1] < 0.5
    Qi = np.linalg.inv(Qm)

    def log_kernel(a, b):
        e = a - F @ b
        return -0.5 * e @ Qi @ e

    def loglik(x, y):
        return -0.5 * (y[0] - x[:, 0]) ** 2 / 0.4

    exact = brute_force_max_marginals(
        [f.particles for f in res.possibilities], lambda x: -0.5 * (x - [0.0, 0.5]) @
        (x - [0.0, 0.5]), _observation_terms(ys, res.discount, loglik), log_kernel)
    for t in range(len(ys)):
        np.testing.assert_allclose(res.possibilities[t].log_values, exact[t], atol=1e-6)


@pytest.mark.parametrize("robust", [False, True])
def test_smoother_estimates_the_kalman_smoother_random_walk(robust):
    ys = rw_data(20)
    if robust:
        ys[8] += 12.0
    model = LinearGaussianModel([[1.0]], [[Q]], [[1.0]], [[R]])
    # coverage=None: the particle filter discounts by the paper's γ = c^(1/d)
    kf = KalmanFilter(model, prior=ps.MultivariateNormal([0.0], [[1.0]]), robust=robust,
                      coverage=None, robust_start=False)
    ks = kf.smooth(ys[:, None])
    sd = np.sqrt(ks.variance[:, 0])
    res = rw_filter(n_particles=1000, robust=robust).smooth(ys, ps.Normal(0.0, 1.0), seed=0)
    assert np.nanmax(np.abs(res.discount - ks.discount)) < 0.05
    assert (np.abs(res.mode - ks.mean[:, 0]) < 0.25 * sd).all()
    assert (np.abs(res.mean - ks.mean[:, 0]) < 0.25 * sd).all()
    # smoothing uses the future: closer to the smoother than the filtered estimates are
    err_f = np.abs(res.filtered.mean - ks.mean[:, 0]) / sd
    assert np.abs(res.mean - ks.mean[:, 0]).mean() < 0.5 * (err_f * sd).mean()


def test_smoother_estimates_the_kalman_smoother_constant_velocity():
    # singular Q: the forward pass's kernel interpolation is needed; its coupling of
    # consecutive states is a = √(1 - h²) instead of 1, a bias of order h² towards the
    # filtered estimates, so a small bandwidth here
    cv = constant_velocity()
    prior = ps.MultivariateNormal([0.0, 1.0], np.eye(2))
    rng = np.random.default_rng(3)
    ys = np.arange(1.0, 16.0) + rng.normal(size=15)
    ys[6] += 30.0
    ks = KalmanFilter(cv, prior=prior, coverage=None, robust_start=False).smooth(ys)
    sd = np.sqrt(ks.variance)
    res = ParticleFilter.from_model(cv, n_particles=1000, prior=prior,
                                    bandwidth=0.02).smooth(ys, seed=1)
    assert np.nanmax(np.abs(res.discount - ks.discount)) < 0.1
    assert (np.abs(res.mean - ks.mean) < 0.5 * sd).all()
    assert np.median(np.abs(res.mode - ks.mean) / sd) < 0.25


def test_smooth_runs_the_same_forward_pass_and_keeps_the_index():
    ys = pd.Series(rw_data(6), index=pd.date_range("2024-01-01", periods=6, freq="D"))
    pf = rw_filter(generic=False, n_particles=60, prior=ps.Normal(0.0, 1.0), seed=7)
    res = pf.smooth(ys)
    fr = pf.filter(ys)
    np.testing.assert_array_equal(res.filtered.mode, fr.mode)
    np.testing.assert_array_equal(res.filtered.mean, fr.mean)
    frame = res.to_frame()
    assert frame.index.equals(ys.index)
    np.testing.assert_array_equal(frame["x0"], res.mean)
    np.testing.assert_array_equal(frame["x0_mode"], res.mode)
    np.testing.assert_array_equal(frame["discount"], fr.discount)
    ds = res.to_xarray()
    assert (ds["time"].values == ys.index.values).all()
    np.testing.assert_array_equal(ds["mode"].values[:, 0], res.mode)
