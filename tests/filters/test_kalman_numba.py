"""The compiled Kalman loop (issue #13 item 4) gives the numpy path's numbers."""

import subprocess
import sys

import numpy as np
import pytest

import possibly as ps
from possibly.filters import LinearGaussianModel
from possibly.filters.robust_start import WINDOW, K

pytest.importorskip("numba")

CV = ps.filters.constant_velocity()
CV2 = ps.filters.constant_velocity(ndim=2, obs_sd=0.7)
FIELDS = ("mean", "variance", "covariance", "predicted_mean", "predicted_covariance",
          "log_consistency", "discount", "gamma")


def _track(seed, T=120, m=1):
    rng = np.random.default_rng(seed)
    ys = np.cumsum(rng.normal(size=(T, m)), axis=0) + rng.normal(size=(T, m))
    ys[T // 4] += 50.0
    ys[T // 3] = np.nan
    if m > 1:
        ys[T // 2, 0] = np.nan  # partly missing
    ys[T - 10] = 1e250  # a huge outlier: scaled quadratic forms
    return ys


def _same(a, b, rtol=1e-10, judged_atol=1e-11):
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        # from an uninformed prior the information-form steps take pseudo-inverses, which the
        # engines' eigensolvers round differently: ~1e-12 absolute on values of order 1; log c
        # (and γ) of an observation the state cannot judge yet is 0 up to that rounding, which
        # an eigenvalue of rounding size kept by numpy's pinv can raise to ~5e-10 (judged_atol)
        atol = judged_atol if f in ("log_consistency", "gamma") else 1e-11
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, equal_nan=True, err_msg=f)
    np.testing.assert_allclose(a.final.mean, b.final.mean, rtol=rtol, atol=1e-11)
    for f in ("covariance", "precision"):  # the same form, and the same matrices
        x, y = getattr(a.final, f), getattr(b.final, f)
        assert (x is None) == (y is None), f
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-11, err_msg=f)


@pytest.mark.parametrize("options", [{}, {"robust": False}, {"tau": 0.2}, {"dim": 1}])
@pytest.mark.parametrize("model, m", [(CV, 1), (CV2, 2)])
def test_numba_equals_numpy(model, m, options):
    ys = _track(m, m=m)
    kf = ps.KalmanFilter(model, **options)
    _same(kf.filter(ys, engine="numba"), kf.filter(ys, engine="numpy"))


def test_numba_equals_numpy_with_a_proper_prior_and_a_batch():
    ys = np.stack([_track(s) for s in range(3)])
    prior = ps.MultivariateNormal([0.0, 0.5], np.diag([0.5, 2.0]))
    kf = ps.KalmanFilter(CV, prior=prior)
    _same(kf.filter(ys, engine="numba"), kf.filter(ys, engine="numpy"))
    # smoothing from either forward pass agrees too
    a = ps.filters.smooth(CV, kf.filter(ys, engine="numba"))
    b = ps.filters.smooth(CV, kf.filter(ys, engine="numpy"))
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-9)


def test_numba_with_keep_means_only():
    ys = _track(4)
    kf = ps.KalmanFilter(CV)
    a = kf.filter(ys, engine="numba", keep=("mean", "variance"))
    b = kf.filter(ys, engine="numpy")
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-10)
    np.testing.assert_allclose(a.variance[2:], np.diagonal(b.covariance, axis1=-2,
                                                           axis2=-1)[2:], rtol=1e-10)
    assert a.covariance is None and a.predicted_mean is None


def _identical(a, b):
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


def test_auto_runs_numpy_until_the_budget_then_the_compiled_loop(count_calls, monkeypatch):
    """A new process's small calls run numpy's steps (the numbers of engine="numpy", bit for
    bit) until their numpy work and the next call's reach the budget; that call and every later
    one run the compiled loop (engine="numba"'s numbers), a tiny one too."""
    from possibly.filters import _common, kalman_numba

    calls = count_calls(kalman_numba, "run_start")  # every call of the default filter starts
    ys = _track(5)
    kf = ps.KalmanFilter(CV)
    # one call's work, counted by hand: T steps of one series of 2 states, 2 · (2 + 128)
    work = len(ys) * 2 * (2 * 1 + 128)
    monkeypatch.setattr(_common, "AUTO_NUMPY_BUDGET", 3.5 * work)
    numpy_, numba_ = kf.filter(ys, engine="numpy"), kf.filter(ys, engine="numba")
    calls.clear()
    _common.AUTO_HISTORY.loaded.clear()  # forget the load of engine="numba" above
    for i in range(3):  # 1, 2, 3 works: below 3.5
        _identical(kf.filter(ys), numpy_)
        assert calls == [] and _common.AUTO_HISTORY.numpy_work == (i + 1) * work
    _identical(kf.filter(ys), numba_)  # 4 works would pass the budget: compiled
    assert len(calls) == 1
    kf.filter(ys[:5])  # loaded: compiled however small
    assert len(calls) == 2 and _common.AUTO_HISTORY.numpy_work == 3 * work
    _same(numba_, numpy_)  # the two engines agree to rounding


def test_auto_runs_compiled_once_the_kernel_is_loaded_or_the_call_is_big(count_calls,
                                                                         monkeypatch):
    from possibly.filters import _common, kalman_numba

    calls = count_calls(kalman_numba, "run_start")
    ys = _track(6)
    kf = ps.KalmanFilter(CV)
    kf.filter(ys)
    assert calls == []  # a first small call: numpy
    kf.filter(ys[:10], engine="numba")  # loads the loop: "auto" uses it from now on
    kf.filter(ys)
    assert len(calls) == 2
    # a model with other numbers of states and observed components has its own loop, not
    # loaded yet: numpy again
    kf2 = ps.KalmanFilter(CV2)
    kf2.filter(_track(6, m=2))
    assert len(calls) == 2
    # a call whose own numpy work passes the budget runs compiled at once
    monkeypatch.setattr(_common, "AUTO_HISTORY", _common.AutoHistory())
    long = np.cumsum(np.random.default_rng(0).normal(size=_common.AUTO_NUMPY_BUDGET // 260 + 1))
    assert _common.numpy_work(len(long), 1, 2) >= _common.AUTO_NUMPY_BUDGET
    kf.filter(long)
    assert len(calls) == 3 and _common.AUTO_HISTORY.numpy_work == 0


def test_auto_chooses_the_smoother_and_the_learned_scale_by_the_same_rule(count_calls):
    from possibly.filters import _common, noise_scale_numba, smoother_numba

    backward = count_calls(smoother_numba, "backward")
    scale = count_calls(noise_scale_numba, "run")
    ys = _track(7)[:, 0]
    kf = ps.KalmanFilter(CV)
    kf.smooth(ys)
    learned = ps.KalmanFilter(CV, learn_noise_scale=True)
    learned.fit(ys)
    assert backward == [] and scale == []  # small first calls: numpy
    spent = _common.AUTO_HISTORY.numpy_work
    assert spent > 0
    kf.smooth(ys, engine="numba")
    learned.fit(ys, engine="numba")
    n_backward, n_scale = len(backward), len(scale)
    kf.smooth(ys)
    learned.fit(ys)
    assert len(backward) > n_backward and len(scale) > n_scale  # loaded: compiled
    assert _common.AUTO_HISTORY.numpy_work == spent


def test_a_new_process_filters_a_short_series_without_importing_numba():
    """Its first small filter, smoother and learned scale: numpy's steps, numba not even
    imported (what loading it costs is many times their run)."""
    code = ("import sys, numpy as np, possibly as ps\n"
            "y = np.cumsum(np.random.default_rng(0).normal(size=250))\n"
            "kf = ps.KalmanFilter(ps.filters.constant_velocity(obs_sd=1.0))\n"
            "kf.filter(y), kf.smooth(y), kf.fit(y)\n"
            "ps.KalmanFilter(kf.model, learn_noise_scale=True).fit(y)\n"
            "print('numba' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_update_runs_the_compiled_step_from_a_new_process_on(count_calls):
    """A stream is long: update takes the compiled step as soon as the start has settled,
    whatever "auto" would choose for a batch call (its numbers are those of
    engine="numba")."""
    from possibly.filters import _common, kalman_numba

    steps = count_calls(kalman_numba, "step")
    kf = ps.KalmanFilter(CV)
    for y in _track(8)[:, 0]:
        kf.update(float(y))
    assert kf._live is not None and len(steps) > 0
    assert ("filter", 2, 1) not in _common.AUTO_HISTORY.loaded  # batch calls: still numpy


def test_numba_engine_refuses_what_it_cannot_run():
    steps = LinearGaussianModel(np.stack([CV.F] * 5), CV.Q, CV.H, CV.R)
    with pytest.raises(ValueError, match="time-invariant"):
        ps.KalmanFilter(steps).filter(np.zeros(4), engine="numba")
    with pytest.raises(ValueError, match="engine must be"):
        ps.KalmanFilter(CV).filter(np.zeros(4), engine="fast")
    # auto falls back to numpy where the compiled loop does not apply
    res = ps.KalmanFilter(steps).filter(np.arange(4.0))
    np.testing.assert_allclose(res.mean[:, 0], np.arange(4.0), atol=1e-9)


def _random_model(rng, n, m):
    """A random time-invariant model: F with spectral radius 0.98 (an unstable F amplifies
    rounding, which would test the problem's conditioning, not the engines), SPD Q and R (R
    with correlations), H of full row rank."""
    F = np.eye(n) + 0.3 * rng.normal(size=(n, n)) / np.sqrt(n)
    F *= 0.98 / np.abs(np.linalg.eigvals(F)).max()
    a = rng.normal(size=(n, n))
    Q = 0.1 * (a @ a.T / n + 0.1 * np.eye(n))
    H = rng.normal(size=(m, n))
    b = rng.normal(size=(m, m))
    R = b @ b.T / m + 0.5 * np.eye(m)
    return LinearGaussianModel(F, Q, H, R)


def _random_data(rng, model, batch, T):
    n, m = model.F.shape[0], model.H.shape[0]
    x = np.zeros((batch, n))
    ys = np.empty((batch, T, m))
    for t in range(T):
        x = x @ model.F.T + rng.multivariate_normal(np.zeros(n), model.Q, size=batch)
        ys[:, t] = x @ model.H.T + rng.multivariate_normal(np.zeros(m), model.R, size=batch)
    ys[rng.uniform(size=ys.shape[:2]) < 0.05] += 30.0  # outliers
    ys[rng.uniform(size=ys.shape[:2]) < 0.05] = np.nan  # missing steps
    if m > 1:
        ys[rng.uniform(size=ys.shape) < 0.05] = np.nan  # missing components
    ys[:, T - 7] = 1e250  # huge innovations: the power-of-two scaling
    ys[0, T - 5, 0] = -1e200
    return ys


@pytest.mark.parametrize("options", [{}, {"robust": False}, {"tau": 0.3}, {"dim": 1.5}])
@pytest.mark.parametrize("n, m", [(3, 1), (4, 2), (5, 3)])
@pytest.mark.parametrize("seed", [0, 1])
def test_numba_equals_numpy_on_random_models(n, m, options, seed):
    rng = np.random.default_rng(100 * n + 10 * m + seed)
    model = _random_model(rng, n, m)
    ys = _random_data(rng, model, batch=5, T=80)
    prior = ps.MultivariateNormal(rng.normal(size=n), np.eye(n))
    kf = ps.KalmanFilter(model, **options)
    _same(kf.filter(ys, prior, engine="numba"), kf.filter(ys, prior, engine="numpy"))
    # from the uninformative prior (robust start or information form first, then compiled)
    _same(kf.filter(ys, engine="numba"), kf.filter(ys, engine="numpy"), judged_atol=1e-9)


def _tracking(seed, batch, T):
    """WoLF's 2-D tracking model and Student-t data (ν = 2.01), outliers at the start; the
    first ``T`` steps of 40."""
    rng = np.random.default_rng(seed)
    F = np.eye(4)
    F[0, 2] = F[1, 3] = 0.1
    model = LinearGaussianModel(F, 0.1 * np.eye(4), np.eye(2, 4), 10.0 * np.eye(2))
    z = np.cumsum(rng.normal(size=(batch, 40, 4)) * 0.3, axis=1)
    e = rng.normal(size=(batch, 40, 2)) * np.sqrt(10.0)
    ys = z[..., :2] + e / np.sqrt(rng.gamma(1.005, 1 / 1.005, size=(batch, 40, 1)))
    ys[0, 1] += 300.0  # outliers among the first observations: hypotheses that drop them
    ys[1, 0] -= 200.0
    ys[1, 3] += 150.0
    ys[2, 2] = np.nan  # missing steps and components during the start
    ys[3, 5, 1] = np.nan
    ys[4, 9] = 1e250
    return model, ys[:, :T]


@pytest.mark.parametrize("T", [3, 6, 14, 15, 40])
@pytest.mark.parametrize("options", [{}, {"tau": 0.3}, {"dim": 1}])
def test_robust_start_in_the_compiled_loop_equals_numpy(T, options):
    """The robust start's hypotheses run as extra rows of the compiled loop once they are in
    covariance form; the mixture then gives the numpy path's leader and numbers."""
    model, ys = _tracking(T, batch=6, T=T)
    kf = ps.KalmanFilter(model, **options)
    a, b = kf.filter(ys, engine="numba"), kf.filter(ys, engine="numpy")
    _same(a, b)
    assert a.final.t == b.final.t == T
    if T > K + WINDOW:  # the mixture settled on hypotheses that drop the early outliers
        plain = ps.KalmanFilter(model, robust_start=False, **options).filter(ys[:2])
        assert (np.abs(plain.mean[:, -1] - b.mean[:2, -1]) > 1e-3).all()
    for keep in (("mean",), ("mean", "variance")):
        c = kf.filter(ys, engine="numba", keep=keep)
        np.testing.assert_allclose(c.mean, b.mean, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(c.discount, b.discount, rtol=1e-10, atol=1e-12)


def test_small_solver_against_numpy():
    from possibly.filters.elimination_numba import solve_in_place as _solve

    rng = np.random.default_rng(7)
    for m in (1, 2, 3, 5):
        a = rng.normal(size=(m, m))
        if m > 1:
            a[0, 0] = 0.0  # a zero leading pivot: row exchange needed
        rhs = rng.normal(size=(m, 4))
        ref = np.linalg.solve(a, rhs[:, :3])
        work = rhs.copy()
        assert _solve(a.copy(), work, 3)
        np.testing.assert_allclose(work[:, :3], ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(work[:, 3], rhs[:, 3])  # columns past k untouched
    assert not _solve(np.ones((2, 2)), np.ones((2, 1)), 1)  # singular: refused
    assert not _solve(np.full((2, 2), np.nan), np.ones((2, 1)), 1)


def test_singular_by_rounding_falls_back_to_numpy():
    """``H P Hᵀ + R`` exactly singular in floating point (two nearly equal rows of H, a huge
    P): the compiled loop refuses it and the numpy path's steps run from there."""
    from possibly.filters.elimination_numba import solve_in_place as _solve

    H = np.array([[1.0, 0.0], [1.0, 1e-12]])
    model = LinearGaussianModel(np.eye(2), 0.01 * np.eye(2), H, np.eye(2))
    assert not _solve(H @ (1e30 * np.eye(2)) @ H.T + model.R, np.ones((2, 1)), 1)
    ys = np.cumsum(np.ones((6, 2)), axis=0)
    kf = ps.KalmanFilter(model, prior=ps.MultivariateNormal(np.zeros(2), 1e-30 * np.eye(2)))
    a, b = kf.filter(ys, engine="numba"), kf.filter(ys, engine="numpy")
    _same(a, b)
    assert np.isfinite(a.mean).all()


def test_a_refusal_of_the_compiled_loop_falls_back_to_numpy(monkeypatch):
    """When the compiled loop reports a singular matrix (``run`` returns False), ``filter``
    runs numpy's steps (with their pseudo-inverse fallbacks) from that step on."""
    from possibly.filters import kalman_numba

    ys = _track(3, m=2)
    kf = ps.KalmanFilter(CV2)
    ref = kf.filter(ys, engine="numpy")
    calls = []

    def refuse(*args):
        calls.append(args[1])
        return False

    prior = ps.MultivariateNormal(np.zeros(4), np.eye(4))
    plain = ps.KalmanFilter(CV2, robust_start=False)
    ref_prior = plain.filter(ys, prior, engine="numpy")
    monkeypatch.setattr(kalman_numba, "run", refuse)
    _same(kf.filter(ys, engine="numba"), ref)  # refused in the robust start
    _same(plain.filter(ys, prior, engine="numba"), ref_prior)  # refused at step 0
    assert calls == [calls[0], 0] and calls[0] > 0  # the compiled loop was tried first


SQUARE = LinearGaussianModel(CV.F, CV.Q, np.array([[1.0, 0.0], [0.5, 1.0]]),
                             np.array([[1.0, 0.2], [0.2, 0.5]]))  # two sensors, m = n
WALK = LinearGaussianModel(np.eye(1), 0.1 * np.eye(1), np.eye(1), np.eye(1))


def _early_outliers(model, seed, T, batch=None):
    """A track with outliers among the first steps, a missing first step and a missing
    component (m > 1), for ``batch`` series (None: one)."""
    rng = np.random.default_rng(seed)
    m = model.obs_dim
    ys = np.cumsum(rng.normal(size=(batch or 1, T, m)), axis=1) + rng.normal(size=(batch or 1,
                                                                                   T, m))
    ys[:, 1] += 80.0
    ys[-1, 0] = np.nan
    ys[0, 2] -= 60.0
    if m > 1:
        ys[0, 3, 1] = np.nan
    return ys if batch else ys[0]


PRIORS = {"flat": None, "proper": lambda n: ps.MultivariateNormal(np.zeros(n), 0.5 * np.eye(n)),
          "diffuse": lambda n: ps.MultivariateNormal(np.zeros(n), 1e-9 * np.eye(n)),
          "singular": lambda n: ps.MultivariateNormal(np.zeros(n),
                                                      np.diag([1.0] + [0.0] * (n - 1)))}


@pytest.mark.parametrize("prior", list(PRIORS))
@pytest.mark.parametrize("model", [CV, WALK, CV2, SQUARE], ids=["cv", "walk", "cv2", "square"])
@pytest.mark.parametrize("T, batch", [(5, None), (30, None), (30, 4)])
def test_compiled_start_from_every_prior_equals_numpy(model, prior, T, batch):
    """The robust start in the compiled loop (information-form steps included) against the
    numpy start, the reference: every output, the precisions of the information-form
    steps (what the smoother reads) and the final state; also without the start."""
    ys = _early_outliers(model, T + model.obs_dim, T, batch)
    make = PRIORS[prior]
    first = None if make is None else make(model.state_dim)
    # a prior variance of 1e9 against R = 1 loses 9 digits in the first update, whichever
    # engine runs it: they differ by up to 1e-6 there (as main's compiled loop and numpy)
    rtol = 1e-5 if prior == "diffuse" else 1e-10
    for options in ({}, {"robust_start": False}, {"coverage": None}):
        kf = ps.KalmanFilter(model, prior=first, **options)
        a, b = kf.filter(ys, engine="numba"), kf.filter(ys, engine="numpy")
        _same(a, b, rtol)
        assert (a._information is None) == (b._information is None)
        for x, y in zip(a._information or (), b._information or (), strict=True):
            assert x.shape == y.shape
            np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-12)
        for keep in (("mean",), ("mean", "variance")):
            c = kf.filter(ys, engine="numba", keep=keep)
            np.testing.assert_allclose(c.mean, b.mean, rtol=rtol, atol=1e-12)
            if c.variance is not None:
                np.testing.assert_allclose(c.variance, b.variance, rtol=rtol, atol=1e-12)


def test_the_compiled_start_runs_no_numpy_step(monkeypatch):
    """From the uninformative prior, the robust start (its information-form steps too) runs
    in the compiled loop: numpy's step is not called during the start (after it, numpy's
    steps run while the state is still in information form, as before)."""
    ys = _early_outliers(CV2, 0, 40, batch=3)
    kf, plain = ps.KalmanFilter(CV2), ps.KalmanFilter(CV2, robust_start=False)
    ref, ref_plain = kf.filter(ys, engine="numpy"), plain.filter(ys, engine="numpy")
    numpy_step = ps.KalmanFilter._plain_step

    def no_numpy_step_in_the_start(self, state, y):
        assert state.t >= K + WINDOW, "numpy's step was called during the start"
        return numpy_step(self, state, y)

    monkeypatch.setattr(ps.KalmanFilter, "_plain_step", no_numpy_step_in_the_start)
    _same(kf.filter(ys, engine="numba"), ref)
    _same(plain.filter(ys, engine="numba"), ref_plain)


def test_a_refusal_of_the_compiled_start_falls_back_to_the_numpy_start(monkeypatch):
    """When the compiled start reports a singular matrix (``run_start`` returns 0),
    ``filter`` runs the numpy start and numpy's steps, bit for bit the numpy engine."""
    from possibly.filters import kalman_numba

    ys = _early_outliers(CV2, 1, 30, batch=2)
    kf = ps.KalmanFilter(CV2)
    calls = []

    def refuse(*args):
        calls.append(args[1])
        return 0

    monkeypatch.setattr(kalman_numba, "run_start", refuse)
    a, b = kf.filter(ys, engine="numba"), kf.filter(ys, engine="numpy")
    assert calls == [0]
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


def test_a_singular_transition_from_the_flat_prior_is_refused_as_by_numpy():
    """An information-form predict needs ``F⁻¹``: the compiled start hands over to numpy,
    which says so."""
    model = LinearGaussianModel(np.array([[1.0, 1.0], [0.0, 0.0]]), 0.1 * np.eye(2),
                                np.array([[1.0, 0.0]]), np.eye(1))
    kf = ps.KalmanFilter(model)
    for engine in ("numba", "numpy"):
        with pytest.raises(ValueError, match="F must be invertible"):
            kf.filter(np.arange(5.0), engine=engine)


def test_jacobi_eigen_and_pseudo_inverse_against_numpy():
    """The compiled start's symmetric eigensolver and pseudo-inverse (information form)
    against LAPACK's, on full-rank, rank-deficient and zero matrices."""
    from possibly.filters.kalman_numba import _eigh, _pinv_mv

    rng = np.random.default_rng(3)
    for n in (1, 2, 4, 6):
        for rank in sorted({0, 1, n - 1, n}):
            a = rng.normal(size=(n, rank))
            sym = a @ a.T * 10.0 ** rng.uniform(-3, 3)
            w, V = np.empty(n), np.empty((n, n))
            _eigh(sym.copy(), w, V, n)
            np.testing.assert_allclose(np.sort(w), np.linalg.eigvalsh(sym),
                                       atol=1e-13 * max(np.abs(sym).max(), 1e-300))
            np.testing.assert_allclose(V @ np.diag(w) @ V.T, sym,
                                       atol=1e-13 * max(np.abs(sym).max(), 1e-300))
            r = rng.normal(size=n)
            out = np.empty(n)
            _pinv_mv(sym, r, out, np.empty((n, n)), w, V, n)
            ref = np.linalg.pinv(sym, hermitian=True) @ r
            np.testing.assert_allclose(out, ref, rtol=1e-9,
                                       atol=1e-12 * max(np.abs(ref).max(), 1.0))
            # the top-left block of larger work arrays (as the start passes them): the same
            big, r_big, out_big = np.full((n + 2, n + 2), 7.0), np.full(n + 2, 7.0), np.empty(n + 2)
            big[:n, :n], r_big[:n] = sym, r
            _pinv_mv(big, r_big, out_big, np.empty((n + 2, n + 2)), np.empty(n + 2),
                     np.empty((n + 2, n + 2)), n)
            np.testing.assert_array_equal(out_big[:n], out)


def _cyclic_jacobi(a):
    """Reference for ``_eigh``: cyclic Jacobi rotations in Python floats (IEEE doubles, one
    rounding per operation, as the compiled loop without fused multiply-adds)."""
    import math

    n = len(a)
    a = [[float(v) for v in row] for row in a]
    V = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    for _ in range(64):
        off = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = a[p][q]
                if apq == 0.0:
                    continue
                app, aqq = a[p][p], a[q][q]
                if abs(apq) <= 1e-18 * (abs(app) + abs(aqq)):
                    a[p][q] = a[q][p] = 0.0
                    continue
                off = True
                theta = (aqq - app) / (2.0 * apq)
                t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
                if theta < 0.0:
                    t = -t
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                tau = s / (1.0 + c)
                a[p][p] = app - t * apq
                a[q][q] = aqq + t * apq
                a[p][q] = a[q][p] = 0.0
                for r in range(n):
                    if r != p and r != q:
                        arp, arq = a[r][p], a[r][q]
                        a[r][p] = a[p][r] = arp - s * (arq + tau * arp)
                        a[r][q] = a[q][r] = arq + s * (arp - tau * arq)
                for r in range(n):
                    vrp, vrq = V[r][p], V[r][q]
                    V[r][p] = vrp - s * (vrq + tau * vrp)
                    V[r][q] = vrq + s * (vrp - tau * vrq)
        if not off:
            break
    return np.array([a[i][i] for i in range(n)]), np.array(V)


def test_two_by_two_eigen_equals_the_cyclic_jacobi_loop_bit_for_bit():
    """The 2 × 2 eigensolver of the information-form steps (its one rotation written out)
    gives the bits of the general cyclic Jacobi loop: the filter's outputs do not change."""
    from possibly.filters.kalman_numba import _eigh

    rng = np.random.default_rng(11)
    cases = [np.zeros((2, 2)), np.diag([3.0, -1.0]), np.array([[2.0, 1e-30], [1e-30, 1.0]]),
             np.array([[1.0, 0.5], [0.5, 1.0]]), np.array([[1.0, -0.5], [-0.5, 1.0]]),
             np.array([[1e-8, 3.0], [3.0, 1e8]]), np.array([[4.0, -2.0], [-2.0, 1.0]])]
    for _ in range(300):
        a = rng.normal(size=(2, 2)) * 10.0 ** rng.uniform(-6, 6, size=(2, 2))
        cases.append(a + a.T)
    for sym in cases:
        w, V = np.empty(2), np.empty((2, 2))
        _eigh(sym.copy(), w, V, 2)
        w_ref, V_ref = _cyclic_jacobi(sym)
        assert w.view(np.int64).tolist() == w_ref.view(np.int64).tolist(), sym
        assert V.view(np.int64).tolist() == V_ref.view(np.int64).tolist(), sym


@pytest.mark.parametrize("options", [{}, {"robust": False}, {"tau": 0.3}])
@pytest.mark.parametrize("n, m", [(2, 1), (1, 1), (3, 2), (2, 2)])
def test_plain_loop_equals_the_start_loop_with_one_hypothesis_bit_for_bit(n, m, options):
    """The plain recursion's loop (``run``) and the start's loop with one hypothesis
    (``run_start``, which steps its hypotheses through ``run`` one step at a time, as from a
    proper prior without the start): the same numbers bit for bit, from a prior diffuse
    relative to ``R`` (the Joseph and information-form updates) and a proper one, with
    outliers, missing steps and components and huge innovations."""
    from possibly.filters import kalman_numba
    from possibly.filters.kalman import _Buffer
    from possibly.filters.robust_start import mixture_tables

    rng = np.random.default_rng(10 * n + m)
    model = _random_model(rng, n, m)
    ys_t = np.ascontiguousarray(np.moveaxis(_random_data(rng, model, batch=4, T=40), 1, 0))
    kf = ps.KalmanFilter(model, **options)
    args = (kf._kernel_model(), kf._kernel_rule())
    for spread in (1.0, 1e6):  # proper; diffuse relative to R
        mean = rng.normal(size=(4, n))
        cov = np.broadcast_to(spread * np.eye(n), (4, n, n)).copy()
        a = _Buffer.empty(frozenset({"covariance", "predicted"}), 40, 4, n).arrays
        b = _Buffer.empty(frozenset({"covariance", "predicted"}), 40, 4, n).arrays
        mean_a, cov_a, mean_b, cov_b = mean.copy(), cov.copy(), mean.copy(), cov.copy()
        assert kalman_numba.run(ys_t, 0, mean_a, cov_a, *args, *kalman_numba.sizes(n, m), a)
        W = np.linalg.inv(model.R)
        inverse = (np.eye(n), True, np.zeros((n, 0)), np.zeros((0, 0)), W)
        status = kalman_numba.run_start(
            ys_t, 0, 40, mean_b, cov_b, False, args[0], inverse, args[1],
            mixture_tables(m, 0, 0), *kalman_numba.sizes(n, m), b,
            (np.empty((0, 4, n, n)), np.empty((0, 4, n, n))), np.zeros((40, 2), dtype=bool),
            np.zeros(4, dtype=np.int64))
        assert status == 1
        for x, y, name in zip(a[:7], b[:7], a._fields[:7], strict=True):
            np.testing.assert_array_equal(x, y, err_msg=name)
        np.testing.assert_array_equal(mean_a, mean_b)
        np.testing.assert_array_equal(cov_a, cov_b)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_compiled_covariance_or_inf_against_numpy(n):
    """The covariances the compiled start writes for its information-form steps: the inverse
    of a well-conditioned precision, else ``inf`` off the diagonal and the max-marginal
    variances (``inf`` where uninformed) on it, as numpy's ``_covariance_or_inf``."""
    from possibly.filters._common import _covariance_or_inf
    from possibly.filters.kalman_numba import _covariance_or_inf as compiled

    rng = np.random.default_rng(n)
    a = rng.normal(size=(n, n))
    precisions = [a @ a.T + 0.5 * np.eye(n), np.zeros((n, n)), np.diag(np.r_[2.0, np.zeros(n - 1)])]
    if n > 1:
        u = rng.normal(size=(n, 1))
        precisions.append(u @ u.T)  # rank one: every component uninformed alone
        b = rng.normal(size=(n, n - 1))
        precisions.append(b @ b.T)  # rank n - 1
    work = [np.empty((n, n)), np.empty((n, n)), np.empty(n), np.empty((n, n)), np.empty(n),
            np.empty(n)]
    for Y in precisions:
        out = np.empty((n, n))
        assert compiled(Y, out, *work)
        ref = _covariance_or_inf(Y)
        np.testing.assert_array_equal(np.isinf(out), np.isinf(ref))
        np.testing.assert_allclose(out[np.isfinite(ref)], ref[np.isfinite(ref)], rtol=1e-12)


def test_the_filter_the_start_and_the_stream_share_one_compiled_loop():
    """numba compiles a kernel once per type of its arguments, seconds each on a fresh
    install: the plain loop (``run``) reached from the default filter (after the robust
    start), the standard filter and the streaming step has one type of arguments for a
    model's sizes (the reference table of the discount, read-only where it is shared, is
    passed as a writeable copy)."""
    from numba import typeof

    from possibly.filters import kalman_numba

    model = ps.filters.constant_velocity(obs_sd=1.0, accel_sd=0.5)
    y = np.cumsum(np.random.default_rng(5).normal(size=60))
    y[7] += 30.0
    ps.KalmanFilter(model).filter(y, engine="numba")  # the start from the flat prior
    ps.KalmanFilter(model, robust=False).filter(
        y, ps.MultivariateNormal(np.zeros(2), np.eye(2)), engine="numba")
    stream = ps.KalmanFilter(model)
    for value in y:
        stream.update(value)
    sizes = (typeof((0, 0)), typeof((0,)))  # n = 2 states, m = 1 observed component
    loops = [sig for sig in kalman_numba.run.signatures if tuple(sig[6:8]) == sizes]
    assert len(loops) == 1, loops


def test_start_helpers_skip_reference_counting():
    # the helpers of the start's steps allocate nothing and run per hypothesis and step:
    # numba's atomic reference counts of their array arguments cost more than their 2 × 2
    # arithmetic (a speed property, checked by its cause rather than by a timing)
    from possibly.filters import kalman_numba

    for helper in (kalman_numba._update_information, kalman_numba._predict_information,
                   kalman_numba._mixture_step, kalman_numba._pinv_mv, kalman_numba._eigh,
                   kalman_numba._covariance_or_inf, kalman_numba._to_covariance_form,
                   kalman_numba._hypothesis_steps, kalman_numba._hypothesis_step2,
                   kalman_numba._out_of_reach):
        assert helper.targetoptions.get("_nrt") is False, helper.py_func.__name__


LEVEL = ps.filters.LinearGaussianModel(np.eye(1), [[0.1]], np.eye(1), [[1.0]])
ACCEL = ps.filters.LinearGaussianModel([[1.0, 1.0, 0.5], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]],
                                       np.eye(3) * 0.01, [[1.0, 0.0, 0.0]], [[1.0]])
DIFFUSE = ps.filters.constant_velocity(accel_sd=30.0, obs_sd=0.01)  # ρ H P Hᵀ ≫ 10⁴ R


@pytest.mark.filterwarnings("ignore::possibly.filters.filter_result.MostlyDiscountedWarning")
@pytest.mark.parametrize("model", [LEVEL, CV, ACCEL, DIFFUSE], ids=["n1", "n2", "n3", "diffuse"])
@pytest.mark.parametrize("proper", [False, True])
def test_the_start_compiled_equals_numpy_where_hypotheses_fall_behind(model, proper):
    """The robust start's covariance-form steps of one observed component (a kernel of their
    own; two states in scalars), with gross early outliers, so that most hypotheses fall out
    of reach of the leader and are no longer stepped, and missing observations."""
    rng = np.random.default_rng(3)
    ys = np.cumsum(rng.normal(size=(40, 30, 1)), axis=1)
    ys[::2, 1] += 50.0  # a gross outlier among the first observations: 7 hypotheses keep it
    ys[1::3, 3] -= 60.0
    ys[::5, 10] += 40.0  # and a later one
    ys[::7, 2] = np.nan
    ys[::6, 12] = np.nan
    n = model.F.shape[0]
    prior = ps.MultivariateNormal(np.zeros(n), np.eye(n) * 0.5) if proper else None
    kf = ps.KalmanFilter(model, prior=prior)
    # from the flat prior the engines' pseudo-inverses round differently (see _same), more so
    # where the information form is ill-conditioned (three states, the diffuse model): ~1e-7
    # relative there, far below what another leader would change
    rtol = 1e-10 if proper or model is CV or model is LEVEL else 1e-6
    for data in (ys, ys[5]):
        a, b = kf.filter(data, engine="numba"), kf.filter(data, engine="numpy")
        for f in ("mean", "covariance", "log_consistency", "discount"):
            np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=rtol, atol=rtol * 10,
                                       equal_nan=True, err_msg=f)


def test_a_hypothesis_out_of_reach_can_never_lead_again():
    """:func:`_out_of_reach` against the worst case written out: a hypothesis below the bound,
    gaining 0 at each of the remaining steps while every other loses ``log ε`` (the most a
    floored step can take), still does not tie the leader (the rule of ``ties``); and one that
    could tie is never below the bound."""
    from possibly.filters import kalman_numba
    from possibly.filters.robust_start import ties
    from possibly.inference import inlier_log_consistency

    floor = inlier_log_consistency(1, 0.999)
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(300):
        steps = int(rng.integers(1, 12))
        score = rng.uniform(-12.0 * abs(floor), 0.0, size=11)
        top = score.max()
        # scores at the edge of reach: exactly there, and a hair on either side
        score[:3] = top + steps * floor + np.array([0.0, 1e-12, -1e-12]) * abs(top)
        score[3] = -np.inf
        bound = kalman_numba._out_of_reach.py_func(score, steps, floor)
        for h in range(len(score)):
            best_case = score + steps * floor
            best_case[h] = score[h]
            if ties(best_case)[h]:
                assert score[h] >= bound, (steps, h)
                checked += 1
            elif np.isfinite(score[h]) and score[h] < bound - abs(floor):
                checked += 1  # pruned, and rightly so
    assert checked > 1000


def _hard_2x2(rng, count):
    """Symmetric 2 × 2 matrices from easy to singular: random, rank one, diagonal, nearly
    singular (condition numbers up to 1e24), zero, with a huge and a tiny scale."""
    out = []
    for i in range(count):
        v = rng.normal(size=(2, 2))
        a = v @ v.T
        kind = i % 6
        if kind == 1:
            u = rng.normal(size=2)
            a = np.outer(u, u)
        elif kind == 2:
            a = np.diag(rng.uniform(0.0, 2.0, 2))
        elif kind == 3:
            u = rng.normal(size=2)
            a = np.outer(u, u) + 10.0 ** -rng.uniform(4, 24) * np.eye(2)
        elif kind == 4:
            a = np.zeros((2, 2)) if i % 12 == 4 else a * 1e150
        elif kind == 5:
            a = a * 1e-150
        out.append(a)
    return out


def test_the_two_state_scalar_steps_give_the_general_steps_bits():
    """The robust start's two-state steps in scalars against the general loops they repeat
    (run on the same inputs with n = 2): the same operations, so the same bits."""
    from possibly.filters import kalman_numba as kn
    from possibly.filters.elimination_numba import solve_in_place

    rng = np.random.default_rng(11)
    ea, w, V, out = np.empty((2, 2)), np.empty(2), np.empty((2, 2)), np.empty(2)
    for a in _hard_2x2(rng, 240):
        r = rng.normal(size=2)
        kn._pinv_mv(a, r, out, ea, w, V, 2)
        assert np.array_equal(np.array(kn._pinv2(a[0, 0], a[0, 1], a[1, 1], r[0], r[1])[:2]),
                              out), a
        rhs, lhs = np.eye(2), a.copy()
        solved = solve_in_place(lhs, rhs, 2)
        inverse = a.copy()
        assert kn._sym_inverse2(inverse) == solved, a
        if solved:
            assert np.array_equal(inverse, 0.5 * (rhs + rhs.T)), a
        F_inv = rng.normal(size=(2, 2))
        G = rng.normal(size=(2, 1))
        qg = np.array([[rng.uniform(0.1, 10.0)]])
        general, scalar = a.copy(), a.copy()
        work = [np.empty((2, 2)) for _ in range(3)]
        ok = kn._predict_information(general, F_inv, G, qg, *work, (0, 0))
        assert kn._predict_information2(scalar, F_inv, G, qg[0, 0]) == ok, a
        if ok:
            assert np.array_equal(general, scalar), a


@pytest.mark.parametrize("n, m", [(1, 1), (2, 1), (3, 1), (2, 2), (4, 2)])
@pytest.mark.parametrize("prior", ["flat", "proper"])
def test_the_compiled_start_reports_the_leader_of_its_mixture(n, m, prior):
    """``run_start``'s ``lead``: each series' leading hypothesis after the start's steps, that
    of numpy's mixture stepped one observation at a time (``start_step`` with no collapse,
    read with ``robust_start.leader``) on series with early outliers and missing steps."""
    from possibly.filters import kalman_numba
    from possibly.filters.kalman import _Buffer
    from possibly.filters.robust_start import start_init, start_step

    rng = np.random.default_rng(7 * n + m)
    model = _random_model(rng, n, m)
    B, T = 40, K + WINDOW
    ys = _random_data(rng, model, batch=B, T=T + 7)[:, :T]
    for b in range(B):  # outliers among the observations the hypotheses label
        ys[b, rng.choice(K, size=rng.integers(0, 3), replace=False)] += 40.0
    kf = ps.KalmanFilter(model)
    first = None if prior == "flat" else ps.MultivariateNormal(np.zeros(n), np.eye(n))
    state = kf._initial(first, (B,), B)
    mixture = start_init(state, (B,))
    for t in range(T):
        mixture = start_step(mixture, ys[:, t], kf._plain_step, m, window=np.inf)[0]
    lead = np.zeros(B, dtype=np.int64)
    out = _Buffer.empty(frozenset({"mean"}), T, B, n)
    ys_t = np.ascontiguousarray(np.moveaxis(ys, 1, 0))
    assert kf._compiled_start(kalman_numba, state, ys_t, out, True, lead) is not None
    assert len(set(lead.tolist())) > 2  # several hypotheses lead somewhere
    np.testing.assert_array_equal(lead, mixture.leader)
