"""The state-space model object shared by the filters, time-varying models, ``keep``, and the
smoother as a pure function (issue #11 item 4)."""

import dataclasses
import pickle

import numpy as np
import pytest

import possibly as ps
from possibly.filters import LinearGaussianModel, smooth

CV = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)


def _series(seed=0, T=40):
    rng = np.random.default_rng(seed)
    ys = np.cumsum(rng.normal(size=T)) * 0.3 + rng.normal(size=T)
    ys[T // 3] += 30.0
    return ys


def _varying(rng, T, n=2):
    """Per-step nearly-constant-velocity matrices with random step lengths."""
    dts = rng.uniform(0.5, 2.0, size=T - 1)
    F = np.stack([[[1.0, dt], [0.0, 1.0]] for dt in dts])
    Q = np.stack([0.1**2 * np.outer([dt**2 / 2, dt], [dt**2 / 2, dt]) + 1e-4 * np.eye(n)
                  for dt in dts])
    return F, Q


# -- the model object ---------------------------------------------------------------------------
def test_model_unpacks_and_indexes_like_the_tuple():
    F, Q, H, R = CV
    assert CV[0] is F and CV[3] is R
    assert CV.state_names == ("position", "velocity")
    assert ps.filters.constant_velocity(ndim=2).names == (
        "position_0", "velocity_0", "position_1", "velocity_1")
    assert LinearGaussianModel(F, Q, H, R).names == ("x0", "x1")
    assert pickle.loads(pickle.dumps(CV)).state_names == CV.state_names


def test_three_ways_to_build_the_filter_agree():
    ys = _series()
    a = ps.KalmanFilter(CV).filter(ys)
    b = ps.KalmanFilter(*CV).filter(ys)
    c = ps.KalmanFilter(CV.F, CV.Q, CV.H, CV.R).filter(ys)
    for other in (b, c):
        np.testing.assert_array_equal(a.mean, other.mean)
        np.testing.assert_array_equal(a.discount, other.discount)
    with pytest.raises(TypeError, match="either"):
        ps.KalmanFilter(CV, CV.Q)
    with pytest.raises(TypeError, match="four matrices"):
        ps.KalmanFilter(CV.F, CV.Q)


@pytest.mark.parametrize("kw, match", [
    ({"F": np.ones((2, 3))}, "F must be a square"),
    ({"Q": np.eye(3)}, r"Q must have shape \(2, 2\)"),
    ({"H": np.ones((1, 3))}, "H must have shape"),
    ({"R": np.zeros((1, 1))}, "R must be positive definite"),
    ({"F": np.stack([np.eye(2)] * 3), "Q": np.stack([np.eye(2)] * 4)}, "same number of steps"),
    ({"state_names": ("a",)}, "state_names must be 2 distinct names"),
    ({"state_names": "ab"}, "state_names must be a sequence"),
])
def test_model_rejects_bad_input(kw, match):
    args = {"F": CV.F, "Q": CV.Q, "H": CV.H, "R": CV.R, **kw}
    with pytest.raises(ValueError, match=match):
        LinearGaussianModel(**args)


def test_model_of_tuple_and_bad_model():
    assert LinearGaussianModel.of(tuple(CV)).state_dim == 2
    assert LinearGaussianModel.of(CV) is CV
    with pytest.raises(ValueError, match="model must be a LinearGaussianModel"):
        LinearGaussianModel.of("cv")


# -- time-varying F and Q -----------------------------------------------------------------------
def test_time_varying_with_constant_steps_equals_time_invariant():
    ys = _series(1)
    T = len(ys)
    steps = LinearGaussianModel(np.stack([CV.F] * (T - 1)), np.stack([CV.Q] * (T - 1)), CV.H,
                                CV.R)
    # the numpy path both ways (the compiled filter takes time-invariant models only; the
    # compiled smoother takes both, to about 1e-12)
    a = ps.KalmanFilter(CV).smooth(ys, engine="numpy")
    b = ps.KalmanFilter(steps).smooth(ys, engine="numpy")
    np.testing.assert_array_equal(a.filtered.mean, b.filtered.mean)
    np.testing.assert_array_equal(a.filtered.discount, b.filtered.discount)
    np.testing.assert_array_equal(a.mean, b.mean)


def test_time_varying_standard_filter_and_smoother_equal_filterpy():
    from filterpy.kalman import KalmanFilter as FPKalman
    from filterpy.kalman import rts_smoother

    rng = np.random.default_rng(4)
    T = 30
    F, Q = _varying(rng, T)
    H, R = np.array([[1.0, 0.0]]), np.array([[0.5]])
    ys = np.cumsum(rng.normal(size=T))[:, None]
    m0, P0 = np.array([0.0, 0.5]), np.diag([4.0, 1.0])
    fp = FPKalman(dim_x=2, dim_z=1)
    fp.x, fp.P, fp.H, fp.R = m0.copy(), P0.copy(), H, R
    means, covs = [], []
    for t, y in enumerate(ys):
        if t:
            fp.predict(F=F[t - 1], Q=Q[t - 1])
        fp.update(y)
        means.append(fp.x.copy())
        covs.append(fp.P.copy())
    kf = ps.KalmanFilter(LinearGaussianModel(F, Q, H, R), robust=False,
                         prior=ps.MultivariateNormal(m0, np.linalg.inv(P0)))
    res = kf.smooth(ys)
    np.testing.assert_allclose(res.filtered.mean, means, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(res.filtered.covariance, covs, rtol=1e-9, atol=1e-10)
    # filterpy's rts_smoother maps step k to k + 1 with Fs[k] (the last one is unused)
    Fs = np.concatenate([F, np.eye(2)[None]])
    Qs = np.concatenate([Q, np.zeros((1, 2, 2))])
    sm, sP, _, _ = rts_smoother(np.array(means), np.array(covs), Fs, Qs)
    np.testing.assert_allclose(res.mean, sm, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res.covariance, sP, rtol=1e-8, atol=1e-10)


def test_time_varying_streaming_equals_fit_and_too_short_model_is_refused():
    rng = np.random.default_rng(5)
    F, Q = _varying(rng, 12)
    kf = ps.KalmanFilter(LinearGaussianModel(F, Q, CV.H, CV.R))
    ys = np.cumsum(rng.normal(size=12))
    res = kf.fit(ys)
    lc = [float(kf.update(y).log_consistency) for y in ys]
    np.testing.assert_allclose(lc, res.log_consistency, rtol=1e-12)
    with pytest.raises(ValueError, match="needs more"):
        kf.update(0.0)
    with pytest.raises(ValueError, match="only 11 transitions"):
        kf.filter(np.zeros(13))


# -- the protocol -------------------------------------------------------------------------------
def test_step_is_pure_and_info_is_a_sequential_info():
    kf = ps.KalmanFilter(CV)
    s0 = kf.init()
    s1, info = kf.step(s0, 0.3)
    assert isinstance(info, ps.sequential.Info) and s1.t == 1 and s0.t == 0
    s1b, _ = kf.step(s0, [0.3])
    np.testing.assert_array_equal(s1.mean, s1b.mean)
    batch = kf.init((3,))
    s, info = kf.step(batch, np.array([0.0, 1.0, 2.0]))
    assert s.mean.shape == (3, 2) and info.discount.shape == (3,)


def test_result_has_no_precision_prefix_fields_and_precision_is_exact():
    names = [f.name for f in dataclasses.fields(ps.filters.FilterResult)]
    assert not [n for n in names if "prefix" in n]
    res = ps.KalmanFilter(CV).filter(_series(2))
    assert np.isinf(res.covariance[0, 1]).all()  # the velocity is not informed by one position
    assert res.covariance[0, 0, 0] == pytest.approx(1.0)  # the position is, by y_1
    assert res.precision[0] == pytest.approx(np.array([[1.0, 0.0], [0.0, 0.0]]))
    np.testing.assert_allclose(res.precision[5], np.linalg.inv(res.covariance[5]))


# -- keep: what is stored ------------------------------------------------------------------------
def test_keep_stores_only_what_is_asked_and_the_same_numbers():
    ys = np.stack([_series(s) for s in range(3)])[..., None]
    kf = ps.KalmanFilter(CV)
    full = kf.filter(ys)
    means = kf.filter(ys, keep=("mean",))
    mv = kf.filter(ys, keep=("mean", "variance"))
    assert means.covariance is None and means.variance is None and means.predicted_mean is None
    np.testing.assert_array_equal(means.mean, full.mean)
    np.testing.assert_array_equal(means.discount, full.discount)
    np.testing.assert_array_equal(mv.variance, np.diagonal(full.covariance, axis1=-2, axis2=-1))
    assert mv.covariance is None
    with pytest.raises(ValueError, match="keep='all'"):
        smooth(CV, mv)
    for bad in ("means", ("variance",), (), 3):
        with pytest.raises(ValueError, match="keep must be"):
            kf.filter(ys, keep=bad)


# -- the particle filter from the same model ----------------------------------------------------
def test_particle_filter_from_model_equals_the_hand_written_one():
    F, Q, H, R = CV
    prior = ps.MultivariateNormal([0.0, 0.0], np.diag([0.01, 4.0]))
    ys = _series(3, T=15)[:, None]

    def loglik(x, y):
        return -0.5 * (y[0] - x[:, 0]) ** 2 / float(R[0, 0])

    hand = ps.ParticleFilter(lambda x: x @ F.T, ps.filters.GaussianNoise(Q), loglik,
                             n_particles=80, loglik_sup=0.0).filter(ys, prior, seed=2)
    built = ps.ParticleFilter.from_model(CV, n_particles=80).filter(ys, prior, seed=2)
    np.testing.assert_array_equal(hand.mode, built.mode)
    np.testing.assert_array_equal(hand.discount, built.discount)


def test_particle_filter_from_model_refuses_time_varying_models():
    steps = LinearGaussianModel(np.stack([CV.F] * 3), CV.Q, CV.H, CV.R)
    with pytest.raises(ValueError, match="time-invariant"):
        ps.ParticleFilter.from_model(steps)
