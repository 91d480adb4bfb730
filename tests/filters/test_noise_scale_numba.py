"""The compiled loop of the learned-scale Kalman filter gives the numpy path's numbers."""

import numpy as np
import pytest

import possibly as ps
from possibly.filters.kalman import NoiseScaleKalmanFilter

pytest.importorskip("numba")

CV = ps.filters.constant_velocity()
CV2 = ps.filters.constant_velocity(ndim=2, obs_sd=0.7)
FIELDS = ("mean", "covariance", "log_consistency", "discount", "noise_scale")


def _track(seed, T=150, m=1, B=3):
    rng = np.random.default_rng(seed)
    ys = np.cumsum(rng.normal(size=(B, T, m)), axis=1) + 3.0 * rng.normal(size=(B, T, m))
    ys[:, T // 4] += 50.0
    ys[:, T // 3] = np.nan
    if m > 1:
        ys[:, T // 2, 0] = np.nan  # partly missing: the whole row is (the numpy step's rule)
    ys[:, T - 10] = 1e250  # a huge outlier: q clipped at 1e300
    return ys


@pytest.mark.parametrize("options", [{}, {"robust": False}, {"tau": 0.2}, {"scale_dim": 1.0},
                                     {"scale_prior": (1e-7, 1e-7)}])
@pytest.mark.parametrize("model, m", [(CV, 1), (CV2, 2)])
def test_numba_equals_numpy(model, m, options):
    ys = _track(m, m=m)
    kf = NoiseScaleKalmanFilter(model, **options)
    a, b = kf.fit(ys, engine="numba"), kf.fit(ys, engine="numpy")
    for f in FIELDS:
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=1e-10, atol=1e-12,
                                   equal_nan=True, err_msg=f)
    assert np.isnan(a.discount[:, 150 // 3]).all()
    auto = kf.fit(ys[0])  # one series, the loop loaded above: compiled
    np.testing.assert_allclose(auto.mean, b.mean[0], rtol=1e-10, atol=1e-12)


def test_numba_engine_refuses_what_it_cannot_run():
    F, Q, _, _ = (np.asarray(a) for a in CV)
    H = np.array([[1.0, 0.0], [2.0, 0.0]])  # rank 1 < m = 2
    kf = NoiseScaleKalmanFilter(F, Q, H, np.eye(2))
    with pytest.raises(ValueError, match="full row"):
        kf.fit(np.ones((5, 2)), engine="numba")
    with pytest.raises(ValueError, match="engine"):
        NoiseScaleKalmanFilter(CV).fit(np.ones(5), engine="fast")


@pytest.mark.parametrize("log_q", [12, 16, 20])
@pytest.mark.parametrize("options", [{}, {"robust": False}])
def test_a_diffuse_prediction_on_both_engines(log_q, options, monkeypatch):
    """A random walk with Q far above R: the update stays accurate on both engines. With
    ``robust=False`` the scalar update is closed form: the variance after step t is
    ``1 / (1 / (P_{t-1} + Q) + 1 / s_{t-1})``, ``s`` the learned noise scale (R₀ = 1) used by
    the step (it was 0 or negative from cancellation). Long enough for the compiled loop to
    take over after the start (checked: it runs)."""
    from possibly.filters import noise_scale_numba

    calls = []
    real = noise_scale_numba.run

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(noise_scale_numba, "run", spy)
    rng = np.random.default_rng(log_q)
    ys = np.cumsum(rng.normal(size=(2, 150, 1)), axis=1) * 1e4
    q = 10.0 ** log_q
    kf = NoiseScaleKalmanFilter(np.eye(1), [[q]], [[1.0]], [[1.0]], **options)
    a = kf.fit(ys, engine="numba")
    assert calls, "the compiled loop did not run"
    b = kf.fit(ys, engine="numpy")
    for f in FIELDS:
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=1e-9, equal_nan=True,
                                   err_msg=f)
    var, scale = b.covariance[..., 0, 0], b.noise_scale
    assert (var[:, 1:] > 0).all()
    if options:
        t = np.arange(120, 150)  # after the start windows
        p = var[:, t - 1] + q
        np.testing.assert_allclose(var[:, t], p * scale[:, t - 1] / (p + scale[:, t - 1]),
                                   rtol=1e-9)


@pytest.mark.parametrize("log_q", [20, 40])
def test_a_diffuse_square_model_on_both_engines(log_q):
    """Two states, both observed (square H), Q far above R: the compiled loop takes the
    information form where the numpy step does, so the engines agree (they differed by a
    factor 1e10 and more at Q = 1e20 with the Joseph form alone)."""
    rng = np.random.default_rng(log_q)
    ys = np.cumsum(rng.normal(size=(2, 150, 2)), axis=1) * 1e4
    kf = NoiseScaleKalmanFilter(np.eye(2), 10.0 ** log_q * np.eye(2), np.eye(2), np.eye(2))
    a, b = kf.fit(ys, engine="numba"), kf.fit(ys, engine="numpy")
    for f in FIELDS:
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=1e-9, equal_nan=True,
                                   err_msg=f)
    assert (np.linalg.eigvalsh(b.covariance[:, 10:]) > 0).all()  # once informed


def test_interp_inside_equals_numpy_interp():
    # the compiled loop's own interpolation of the κ table: numpy's value at every point of
    # the grid's range (ends, nodes, between nodes), bit for bit
    from possibly.filters.noise_scale_numba import _interp_inside

    rng = np.random.default_rng(0)
    grid = np.linspace(-3.0, 4.0, 29)
    values = np.cumsum(rng.normal(size=29))
    points = np.concatenate([grid, rng.uniform(-3.0, 4.0, 200), [np.nextafter(4.0, 0.0)]])
    got = np.array([_interp_inside(u, grid, values) for u in points])
    np.testing.assert_array_equal(got, np.interp(points, grid, values))
    flat = np.array([1.0, 1.0, np.inf, np.inf])  # numpy's retries: a flat infinite interval
    small = np.array([0.0, 1.0, 2.0, 3.0])
    between = np.array([0.5, 1.5, 2.5])
    np.testing.assert_array_equal([_interp_inside(u, small, flat) for u in between],
                                  np.interp(between, small, flat))


def test_square_model_diffuse_updates_compiled():
    # a square H (m = n = 2) from a very diffuse proper prior without the start: the compiled
    # loop's diffuse updates take the information form, as numpy's step
    F = np.array([[1.0, 0.1], [0.0, 1.0]])
    model = ps.filters.LinearGaussianModel(F, 0.05 * np.eye(2), np.eye(2),
                                           np.array([[1.0, 0.2], [0.2, 0.5]]))
    prior = ps.MultivariateNormal(np.zeros(2), 1e-9 * np.eye(2))
    ys = _track(4, T=60, m=2)
    kf = NoiseScaleKalmanFilter(model, prior=prior, robust_start=False)
    a, b = kf.fit(ys, engine="numba"), kf.fit(ys, engine="numpy")
    for f in FIELDS:
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=1e-10, atol=1e-12,
                                   equal_nan=True, err_msg=f)
