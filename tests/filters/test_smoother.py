"""The RTS smoother's engines: the compiled backward pass gives the numpy steps' numbers, both
equal a plain textbook RTS loop and filterpy's, and numpy serves when numba is missing."""

import importlib.util
import sys
import warnings

import numpy as np
import pytest

import possibly as ps
from possibly.filters import LinearGaussianModel
from possibly.filters import smoother as smoother_module
from possibly.filters.filter_result import MostlyDiscountedWarning

CV = ps.filters.constant_velocity()
CV2 = ps.filters.constant_velocity(ndim=2, obs_sd=0.7)
RW = LinearGaussianModel(F=[[1.0]], Q=[[0.3]], H=[[1.0]], R=[[1.0]])
# three sensors, one of them of the velocity
SENSORS = LinearGaussianModel(F=[[1.0, 1.0], [0.0, 1.0]], Q=[[0.01, 0.0], [0.0, 0.02]],
                              H=[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], R=np.diag([1.0, 4.0, 0.5]))
STEPS = LinearGaussianModel(
    F=np.stack([[[1.0, 0.5 + 0.01 * k], [0.0, 0.99]] for k in range(149)]),
    Q=[[0.01, 0.0], [0.0, 0.01]], H=[[1.0, 0.0]], R=[[1.0]])
PRIOR = ps.MultivariateNormal([0.0, 0.5], np.diag([0.5, 2.0]))
ENGINES = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    importlib.util.find_spec("numba") is None, reason="numba not installed"))]


def _track(seed, T=150, m=1, huge=False):
    rng = np.random.default_rng(seed)
    ys = np.cumsum(rng.normal(size=(T, m)), axis=0) + rng.normal(size=(T, m))
    ys[T // 4] += 50.0  # an outlier
    ys[T // 3] = np.nan  # a missing row: predict only
    if m > 1:
        ys[T // 2, 0] = np.nan  # partly missing
    if huge:
        ys[T - 10] = 1e250  # huge means downstream (the standard filter): scaled differences
    return ys


def _close(a, b, rel=1e-10):
    """``a`` and ``b`` agree to ``rel`` of the scale of each entry (covariances: of
    ``sqrt(C_ii C_jj)``, as an off-diagonal entry may cancel to near 0), with the same
    infinities and NaNs."""
    np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b))
    fin = np.isfinite(a)
    np.testing.assert_array_equal(a[~fin], b[~fin])
    if a.ndim >= 2 and a.shape[-1] == a.shape[-2] and a.shape[-1] > 1:
        d = np.abs(np.diagonal(a, axis1=-2, axis2=-1))
        scale = np.sqrt(d[..., :, None] * d[..., None, :])
    else:
        scale = np.abs(a)
    with np.errstate(invalid="ignore"):
        assert (np.abs(a - b)[fin] <= rel * scale[fin] + 1e-300).all()


CASES = {
    "robust, huge outlier": (CV, {}, _track(0, huge=True)),
    "standard, huge means": (CV, {"robust": False}, _track(1, huge=True)),
    "threshold": (CV, {"tau": 0.2}, _track(2)),
    "two axes, partly missing": (CV2, {}, _track(3, m=2)),
    "random walk": (RW, {}, _track(4)),
    "three sensors": (SENSORS, {}, _track(5, m=3)),
    "per-step F": (STEPS, {}, _track(6)),
    "batch (2, 2)": (CV, {}, np.stack([_track(s, T=80) for s in range(4)]).reshape(2, 2, 80, 1)),
    "learned scale": (CV, {"learn_noise_scale": True}, _track(7)),
    "learned scale, batch": (CV, {"learn_noise_scale": True},
                             np.stack([_track(s, T=80) for s in range(3)])),
}


@pytest.mark.parametrize("case", list(CASES))
def test_compiled_backward_pass_equals_the_numpy_steps(case, auto_compiles):
    pytest.importorskip("numba")
    model, options, ys = CASES[case]
    kf = ps.KalmanFilter(model, **options)
    # "auto": the compiled backward pass (and the compiled filter where it applies)
    fast, slow = kf.smooth(ys, engine="auto"), kf.smooth(ys, engine="numpy")
    assert fast.mean.shape == slow.mean.shape == ys.shape[:-1] + (model.state_dim,)
    _close(fast.mean, slow.mean)
    _close(fast.covariance, slow.covariance)
    # the discounts, and the rejected start observations' consistencies, are the same report
    # (the forward passes also ran in either engine)
    _close(fast.discount, slow.discount)
    _close(fast.filtered.log_consistency, slow.filtered.log_consistency)


@pytest.mark.parametrize("case", ["robust, huge outlier", "standard, huge means", "per-step F",
                                  "batch (2, 2)", "two axes, partly missing"])
def test_compiled_smooth_of_a_forward_pass_equals_the_numpy_steps(case):
    pytest.importorskip("numba")
    model, options, ys = CASES[case]
    fr = ps.KalmanFilter(model, robust_start=False, **options).filter(ys)
    fast = ps.filters.smooth(model, fr, engine="numba")
    slow = ps.filters.smooth(model, fr, engine="numpy")
    _close(fast.mean, slow.mean)
    _close(fast.covariance, slow.covariance)
    if case == "standard, huge means":
        assert np.abs(fast.mean).max() > 1e200 and np.isfinite(fast.mean).all()


def _plain_rts(F_of, means, covs, pmeans, pcovs):
    """The textbook RTS recursion, one step at a time with explicit inverses."""
    T = len(means)
    sm, sP = [None] * T, [None] * T
    sm[-1], sP[-1] = means[-1], covs[-1]
    for t in range(T - 2, -1, -1):
        G = covs[t] @ F_of(t).T @ np.linalg.inv(pcovs[t + 1])
        sm[t] = means[t] + G @ (sm[t + 1] - pmeans[t + 1])
        sP[t] = covs[t] + G @ (sP[t + 1] - pcovs[t + 1]) @ G.T
    return np.array(sm), np.array(sP)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("model", [CV, SENSORS, STEPS], ids=["cv", "sensors", "per-step F"])
@pytest.mark.parametrize("robust", [False, True])
def test_smoother_equals_a_plain_rts_loop(engine, model, robust):
    ys = np.stack([_track(s, m=model.obs_dim) for s in range(3)])
    kf = ps.KalmanFilter(model, robust=robust, prior=PRIOR)
    res = ps.filters.smooth(model, kf.filter(ys, engine="numpy"), engine=engine)
    fr = res.filtered
    for b in range(3):  # the robust smoother is the RTS smoother of the discounted filter
        ms, Ps = _plain_rts(lambda t: model._transition(t).F, fr.mean[b], fr.covariance[b],
                            fr.predicted_mean[b], fr.predicted_covariance[b])
        np.testing.assert_allclose(res.mean[b], ms, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(res.covariance[b], Ps, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
def test_standard_smoother_equals_filterpys_rts_smoother(engine):
    from filterpy.kalman import rts_smoother

    ys = _track(8, T=200, m=2)
    kf = ps.KalmanFilter(CV2, robust=False, prior=ps.MultivariateNormal(np.zeros(4), np.eye(4)))
    res = ps.filters.smooth(CV2, kf.filter(ys), engine=engine)
    F, Q = CV2.F, CV2.Q
    xs, Ps, _, _ = rts_smoother(res.filtered.mean, res.filtered.covariance, [F] * 200,
                                [Q] * 200)
    np.testing.assert_allclose(res.mean, xs, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(res.covariance, Ps, rtol=1e-9, atol=1e-9)


def test_a_singular_predicted_covariance_takes_the_numpy_step(monkeypatch):
    """The second component is forgotten each step (F's zero row, no noise): the predicted
    covariance is singular, solve fails and numpy's pseudo-inverse fallback runs that step."""
    pytest.importorskip("numba")
    model = LinearGaussianModel(F=[[1.0, 0.0], [0.0, 0.0]], Q=[[0.1, 0.0], [0.0, 0.0]],
                                H=[[1.0, 1.0]], R=[[1.0]])
    fr = ps.KalmanFilter(model, robust=False, robust_start=False,
                         prior=ps.MultivariateNormal([0.0, 0.0], np.eye(2))).filter(_track(9))
    slow = ps.filters.smooth(model, fr, engine="numpy")
    steps = []
    real = smoother_module._covariance_step
    monkeypatch.setattr(smoother_module, "_covariance_step",
                        lambda *a: steps.append(1) or real(*a))
    fast = ps.filters.smooth(model, fr, engine="numba")
    assert len(steps) == len(fr.mean) - 1  # every step fell back (and the result is whole)
    _close(fast.mean, slow.mean)
    _close(fast.covariance, slow.covariance)


def test_without_numba_auto_runs_numpy_and_numba_is_refused(monkeypatch, auto_compiles):
    monkeypatch.setitem(sys.modules, "possibly.filters.smoother_numba", None)  # import fails
    monkeypatch.delattr(ps.filters, "smoother_numba", raising=False)
    fr = ps.KalmanFilter(CV).filter(_track(10))
    auto = ps.filters.smooth(CV, fr)
    np.testing.assert_array_equal(auto.mean, ps.filters.smooth(CV, fr, engine="numpy").mean)
    with pytest.raises(ValueError, match=r"engine='numba' needs numba"):
        ps.filters.smooth(CV, fr, engine="numba")


def test_an_unknown_engine_is_refused():
    fr = ps.KalmanFilter(CV).filter(_track(11))
    with pytest.raises(ValueError, match=r"engine must be 'auto', 'numpy' or 'numba', got 'c'"):
        ps.filters.smooth(CV, fr, engine="c")


@pytest.mark.parametrize("robust_start", [True, False])
def test_smooth_with_a_batched_prior_smooths_each_series_from_its_own(robust_start):
    ys = np.stack([_track(s, T=60) for s in range(3)])
    means = np.array([[0.0, 0.5], [10.0, -1.0], [-5.0, 0.0]])
    covs = np.stack([np.diag([0.5, 2.0]), np.diag([3.0, 0.1]), np.eye(2)])
    prior = ps.MultivariateNormal(means, np.linalg.inv(covs))
    kf = ps.KalmanFilter(CV, robust_start=robust_start)
    res = kf.smooth(ys, prior)
    for b in range(3):
        one = kf.smooth(ys[b], ps.MultivariateNormal(means[b], np.linalg.inv(covs[b])))
        np.testing.assert_allclose(res.mean[b], one.mean, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(res.covariance[b], one.covariance, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(res.discount[b], one.discount)


def _early_outliers(seed, B, T, m):
    """``B`` tracks with up to two outliers (or missing rows) among the first four steps."""
    rng = np.random.default_rng(seed)
    ys = np.cumsum(rng.normal(0.0, 0.3, size=(B, T, m)), axis=1) + rng.normal(size=(B, T, m))
    for b in range(B):
        for t in rng.choice(min(4, T), size=rng.integers(0, 3), replace=False):
            ys[b, t] += rng.choice([-1.0, 1.0]) * rng.uniform(5.0, 80.0)
        if rng.random() < 0.1:
            ys[b, rng.integers(0, min(6, T))] = np.nan
    return ys


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("model, T, prior", [
    (CV, 40, None), (CV, 3, None), (CV, 9, None), (CV2, 30, None), (RW, 30, None),
    (CV, 30, ps.MultivariateNormal([0.0, 0.0], np.diag([0.1, 1.0])))],
    ids=["cv", "cv T=3", "cv T=9", "two axes", "random walk", "cv weak prior"])
def test_the_smoother_settles_on_the_hypothesis_of_the_start_mixture(engine, model, T, prior):
    """The observations the smoother drops are those of the mixture stepped to its collapse
    (start_masked, the slow path): here the hypotheses run as extra series of the plain
    filter and are scored afterwards."""
    from possibly.filters.robust_start import start_masked

    ys = _early_outliers(T, 300, T, model.obs_dim)
    kf = ps.KalmanFilter(model)
    plain = ps.KalmanFilter(model, robust_start=False)
    ref = start_masked(ys, kf._initial(prior, (300,), 300), kf._plain_step, model.obs_dim)
    got = plain._settled_start(ys, prior, engine)
    assert np.isnan(ref).sum() > np.isnan(ys).sum() + 50  # many outliers rejected
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))


CA = LinearGaussianModel(F=[[1.0, 1.0, 0.5], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]],
                         Q=np.diag([1e-4, 1e-4, 1e-3]), H=[[1.0, 0.0, 0.0]], R=[[1.0]])


def _kernel_returns(monkeypatch):
    """The values ``kalman_numba.backward_information`` returns while the test runs (-1:
    every information-form step done; else the step numpy must run)."""
    from possibly.filters import kalman_numba

    returned = []
    real = kalman_numba.backward_information

    def recording(*args):
        returned.append(real(*args))
        return returned[-1]

    monkeypatch.setattr(kalman_numba, "backward_information", recording)
    return returned


@pytest.mark.parametrize("model", [CV, CV2, RW, CA, SENSORS],
                         ids=["cv", "two axes", "random walk", "acceleration", "sensors"])
@pytest.mark.parametrize("T", [5, 7, 60])  # T ≠ n: _close reads (T, n) as a mean
def test_the_information_form_steps_run_compiled_and_equal_numpys(model, T, monkeypatch):
    """From the flat prior the first filtered states are in information form: the compiled
    pass runs their smoother steps too (``kalman_numba.backward_information``, every step:
    it returns -1), and gives numpy's numbers (the pseudo-inverses round differently: to
    1e-10)."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(T)
    ys = np.stack([_track(s, T=max(T, 12), m=model.obs_dim)[:T] for s in range(5)])
    ys[1, 0] = np.nan  # a series informed a step later
    fr = ps.KalmanFilter(model, robust_start=False).filter(ys + rng.normal(size=ys.shape))
    assert fr._information_part(0).shape[-3] > 0  # steps in information form
    returned = _kernel_returns(monkeypatch)
    fast = ps.filters.smooth(model, fr, engine="numba")
    assert returned == [-1]  # no step left to numpy
    slow = ps.filters.smooth(model, fr, engine="numpy")
    _close(fast.mean, slow.mean)
    _close(fast.covariance, slow.covariance)


def test_huge_means_in_the_information_form_steps_take_numpys_steps(monkeypatch):
    """A mean beyond 1e100 in a step in information form: numpy's steps (their power-of-two
    scaling) from that step on, with the numbers of the numpy engine."""
    pytest.importorskip("numba")
    ys = 1e250 + _track(12, T=40)
    ys[5:] = _track(13, T=40)[5:]  # huge at the start only (the plain filter takes it whole)
    fr = ps.KalmanFilter(CV, robust=False).filter(ys)
    assert np.abs(fr.mean[0]).max() > 1e200 and fr._information_part(0).shape[-3] > 0
    returned = _kernel_returns(monkeypatch)
    steps = []
    real = smoother_module._information_step
    monkeypatch.setattr(smoother_module, "_information_step",
                        lambda *a: steps.append(1) or real(*a))
    fast = ps.filters.smooth(CV, fr, engine="numba")
    assert len(returned) == 1 and returned[0] >= 0  # the kernel handed a step to numpy
    assert steps  # numpy ran the information-form steps
    slow = ps.filters.smooth(CV, fr, engine="numpy")
    assert np.isfinite(fast.mean).all()
    _close(fast.mean, slow.mean)
    _close(fast.covariance, slow.covariance)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("model, T, prior", [
    (CV, 60, None), (CV, 3, None), (CV, 12, None), (CV2, 30, None), (RW, 30, None),
    (CA, 40, None), (CV, 30, ps.MultivariateNormal([0.0, 0.0], np.diag([0.1, 1.0])))],
    ids=["cv", "cv T=3", "cv T=12", "two axes", "random walk", "acceleration",
         "cv weak prior"])
def test_smooth_with_the_start_is_the_plain_smoother_of_the_masked_series(engine, model, T,
                                                                         prior):
    """``smooth`` with the robust start against its definition computed step by step: the
    mixture of numpy's start steps settles on which early observations are outliers
    (``start_masked``); the plain filter of the series with those missing, then the
    smoother of that forward pass; the rejected observations reported with discount 0. Bit
    for bit (the same steps in the same engine)."""
    from possibly.filters.robust_start import start_masked

    ys = _early_outliers(T + 1, 60, T, model.obs_dim)
    kf = ps.KalmanFilter(model)
    masked = start_masked(ys, kf._initial(prior, (60,), 60), kf._plain_step, model.obs_dim)
    rejected = np.isnan(masked).all(-1) & ~np.isnan(ys).all(-1)
    assert rejected.sum() > 10
    plain = ps.KalmanFilter(model, robust_start=False)
    with warnings.catch_warnings():  # the outliers' series discount much: no news here
        warnings.simplefilter("ignore", MostlyDiscountedWarning)
        ref = ps.filters.smooth(model, plain.filter(masked, prior, engine=engine),
                                engine=engine)
        got = kf.smooth(ys, prior, engine=engine)
    np.testing.assert_array_equal(got.mean, ref.mean)
    np.testing.assert_array_equal(got.covariance, ref.covariance)
    np.testing.assert_array_equal(got.discount[rejected], 0.0)
    np.testing.assert_array_equal(got.discount[~rejected], ref.discount[~rejected])
    lc, lc_ref = got.filtered.log_consistency, ref.filtered.log_consistency
    np.testing.assert_array_equal(lc[~rejected], lc_ref[~rejected])
    # the rejected: log c = -v' S^-1 v / 2 of the smoothed state at their step, written out
    b, t = np.nonzero(rejected)
    H, R = np.atleast_2d(model.H), np.atleast_2d(model.R)
    v = ys[b, t] - np.einsum("ij,kj->ki", H, got.mean[b, t])
    S = np.einsum("ij,kjl,ml->kim", H, got.covariance[b, t], H) + R
    want = -0.5 * np.einsum("ki,ki->k", v, np.linalg.solve(S, v[..., None])[..., 0])
    np.testing.assert_allclose(lc[rejected], want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("prior", [None, PRIOR], ids=["flat", "proper"])
def test_the_smoothers_warning_names_its_caller(prior):
    """R 10⁴ times too small (its standard deviation 100 times): most observations are
    discounted, and ``smooth`` warns as ``filter`` does, at the line that called it (not
    inside the library)."""
    model = LinearGaussianModel(F=CV.F, Q=CV.Q, H=CV.H, R=0.0001 * CV.R)
    ys = 3.0 * np.random.default_rng(14).normal(size=100)
    with pytest.warns(MostlyDiscountedWarning) as caught:
        ps.KalmanFilter(model).smooth(ys, prior)
    assert [w.filename for w in caught] == [__file__]


@pytest.mark.parametrize("engine", ENGINES)
def test_where_the_compiled_start_gives_up_numpys_hypotheses_decide(engine, monkeypatch):
    """A singular ``F`` from a prior that leaves a direction uninformed: the compiled start
    hands the start to numpy (no leader), whose hypotheses then stop on the same clear
    error as the numpy engine; a proper prior runs compiled."""
    from possibly.filters import kalman as kalman_module

    singular = LinearGaussianModel(F=[[1.0, 1.0], [0.0, 0.0]], Q=np.diag([0.1, 0.1]),
                                   H=[[1.0, 0.0]], R=[[1.0]])
    leaders = []
    real = kalman_module.KalmanFilter._compiled_leader

    def recording(self, *args):
        leaders.append(real(self, *args))
        return leaders[-1]

    monkeypatch.setattr(kalman_module.KalmanFilter, "_compiled_leader", recording)
    ys = _early_outliers(1, 5, 20, 1)
    kf = ps.KalmanFilter(singular)
    half = ps.MultivariateNormal(np.zeros(2), np.diag([0.5, 0.0]))
    with pytest.raises(ValueError, match="F must be invertible to predict a state that is "
                                         "not yet fully informed"):
        kf.smooth(ys, half, engine=engine)
    if engine == "numba":
        assert len(leaders) == 1 and leaders[0] is None
    got = kf.smooth(ys, ps.MultivariateNormal(np.zeros(2), np.eye(2)), engine=engine)
    assert np.isfinite(got.mean).all()
    if engine == "numba":  # the compiled start settled this one
        assert len(leaders) == 2 and leaders[1] is not None
