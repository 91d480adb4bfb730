"""Streaming with ``KalmanFilter.update``: the compiled loop's step on state kept between calls.

References: ``filter(engine="numba")`` of the same series (its compiled loop: equal bit for
bit after the robust start), and the numpy step (``filter(engine="numpy")``, the pure
``step``), equal to about 1e-12 as the compiled loop always was.
"""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

import possibly as ps
from possibly.filters import KalmanInfo
from possibly.filters.robust_start import WINDOW, K

numba = pytest.importorskip("numba")

CV = ps.filters.constant_velocity()
CV2 = ps.filters.constant_velocity(ndim=2, obs_sd=0.7)
START = K + WINDOW  # the robust start's steps: numpy in update, compiled in filter
CONFIGS = [{}, {"robust": False}, {"robust_start": False}, {"tau": 0.5}, {"coverage": None},
           {"robust_start": False, "prior": ps.MultivariateNormal(np.zeros(2), np.eye(2))}]


def track(seed: int, T: int = 600, m: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ys = np.cumsum(rng.normal(size=(T, m)), axis=0) * 0.3 + rng.normal(size=(T, m))
    ys[T // 4] += 50.0
    ys[T // 3] = np.nan
    if m > 1:
        ys[T // 2, 0] = np.nan  # partly missing
    ys[T - 10] = 1e250  # a huge outlier: scaled quadratic forms
    return ys if m > 1 else ys[:, 0]


def infos_array(infos) -> np.ndarray:
    return np.array([[float(i.log_consistency), float(i.discount), float(i.gamma)]
                     for i in infos])


@pytest.mark.parametrize("kw", CONFIGS, ids=[str(sorted(k)) for k in CONFIGS])
def test_update_equals_filter(kw):
    ys = track(0)
    kf = ps.KalmanFilter(CV, **kw)
    infos = [kf.update(float(y)) for y in ys]
    res = kf.filter(ys, engine="numba")  # update's step, whatever "auto" would choose here
    got = infos_array(infos)
    ref = np.column_stack([res.log_consistency, res.discount])
    np.testing.assert_allclose(got[:, :2], ref, rtol=1e-12, atol=1e-300)
    if "prior" in kw:  # no start: the same compiled steps as filter's, bit for bit
        np.testing.assert_array_equal(got[START:, :2], ref[START:])
        np.testing.assert_array_equal(kf.state.mean, res.mean[-1])
        np.testing.assert_array_equal(kf.state.covariance, res.covariance[-1])
    else:  # update's start runs numpy's steps, filter's the compiled start: equal to rounding
        np.testing.assert_allclose(kf.state.mean, res.mean[-1], rtol=1e-12)
        np.testing.assert_allclose(kf.state.covariance, res.covariance[-1], rtol=1e-12)
    assert kf.state.t == len(ys)
    # γ = c^(1/dim), the one field filter does not report
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(got[:, 2], np.exp(got[:, 0] / kf.dim), rtol=1e-15)


@pytest.mark.parametrize("kw", CONFIGS[:3], ids=[str(sorted(k)) for k in CONFIGS[:3]])
def test_update_agrees_with_the_numpy_step(kw):
    ys = track(1)
    kf = ps.KalmanFilter(CV, **kw)
    fast = infos_array([kf.update(y) for y in ys])
    ref = ps.KalmanFilter(CV, **kw)
    state, slow = ref.init(), []
    for y in ys:
        state, info = ref.step(state, y)
        slow.append(info)
    np.testing.assert_allclose(fast, infos_array(slow), rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(kf.state.mean, state.mean, rtol=1e-10)
    np.testing.assert_allclose(kf.state.covariance, state.covariance, rtol=1e-10)


def test_vector_observations_and_partly_missing_rows():
    ys = track(2, m=2)
    kf = ps.KalmanFilter(CV2)
    infos = [kf.update(y) for y in ys]
    res = kf.filter(ys, engine="numba")
    # the same compiled step, to rounding (the buffers' layouts compile to other code)
    np.testing.assert_allclose(infos_array(infos)[:, :2],
                               np.column_stack([res.log_consistency, res.discount]),
                               rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(kf.state.mean, res.mean[-1], rtol=1e-12)


def test_pickle_state_and_reset_mid_stream():
    ys = track(3)
    ref = ps.KalmanFilter(CV)
    expected = infos_array([ref.update(y) for y in ys])
    kf = ps.KalmanFilter(CV)
    first = [kf.update(y) for y in ys[:300]]
    assert kf.state.t == 300                        # read mid-stream
    kf = pickle.loads(pickle.dumps(kf))             # pickled mid-stream
    rest = [kf.update(y) for y in ys[300:]]
    np.testing.assert_array_equal(infos_array(first + rest), expected)
    kf.reset()
    assert kf.state is None
    again = infos_array([kf.update(y) for y in ys])
    np.testing.assert_array_equal(again, expected)


def test_missing_value_is_predict_only():
    kf = ps.KalmanFilter(CV, robust_start=False)
    for y in [0.1, 0.3, 0.2, 0.5, 0.4, 0.6]:
        kf.update(y)
    before = kf.state
    info = kf.update(np.nan)
    assert np.isnan(info.log_consistency) and np.isnan(info.discount) and np.isnan(info.gamma)
    F, Q = CV.F, CV.Q
    np.testing.assert_allclose(kf.state.mean, F @ before.mean, rtol=1e-15)
    np.testing.assert_allclose(kf.state.covariance, F @ before.covariance @ F.T + Q,
                               rtol=1e-14)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, 1e301, "text", 1 + 2j])
def test_bad_values_are_refused_and_change_nothing(bad):
    ys = track(4, T=60)
    kf = ps.KalmanFilter(CV)
    for y in ys[:40]:
        kf.update(y)
    with pytest.raises(ValueError, match="y must|observations must|shape"):
        kf.update(bad)
    rest = infos_array([kf.update(y) for y in ys[40:]])
    ref = ps.KalmanFilter(CV)
    np.testing.assert_array_equal(rest, infos_array([ref.update(y) for y in ys])[40:])


def test_the_state_is_not_copied_per_call(count_calls):
    # amortised O(1): the compiled step's buffers are made once per stream, not per call
    from possibly.filters import kalman_numba

    calls = count_calls(kalman_numba, "step_buffers")
    kf = ps.KalmanFilter(CV)
    for y in track(5, T=300):
        kf.update(y)
    assert len(calls) == 1


def test_without_the_compiled_loop_update_is_the_numpy_step(monkeypatch):
    # numba missing (or a model the compiled loop does not run): the pure step, bit for bit
    monkeypatch.setattr(ps.KalmanFilter, "_compiled", lambda self, engine: None)
    ys = track(6, T=200)
    kf = ps.KalmanFilter(CV)
    fast = infos_array([kf.update(y) for y in ys])
    assert kf._live is None
    ref = ps.KalmanFilter(CV)
    state, slow = ref.init(), []
    for y in ys:
        state, info = ref.step(state, y)
        slow.append(info)
    np.testing.assert_array_equal(fast, infos_array(slow))
    np.testing.assert_array_equal(kf.state.mean, state.mean)


NOT_NUMBERS = ["1.0", "nan", b"1", None, True, False, np.bool_(True), [None], 10**400]


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("bad", NOT_NUMBERS, ids=lambda v: repr(v)[:12])
def test_text_none_booleans_and_huge_integers_are_refused_by_name(bad, compiled, monkeypatch):
    # numpy would read them as 1.0, NaN or raise an OverflowError from deep inside
    if not compiled:
        monkeypatch.setattr(ps.KalmanFilter, "_compiled", lambda self, engine: None)
    ys = track(7, T=200)
    kf = ps.KalmanFilter(CV)
    for y in ys[:150]:  # past the robust start: the compiled step is live
        kf.update(y)
    assert (kf._live is not None) == compiled
    with pytest.raises(ValueError, match="^y must be one observation .*, got "):
        kf.update(bad)
    rest = infos_array([kf.update(y) for y in ys[150:]])
    ref = ps.KalmanFilter(CV)
    np.testing.assert_array_equal(rest, infos_array([ref.update(y) for y in ys])[150:])


def test_the_compiled_update_sets_every_field_of_the_info(monkeypatch):
    # the compiled step's Info is built without __init__ (its fields written at once): a
    # field added to KalmanInfo must be written there too, not left to a class default
    ys = track(3, T=START + 20)
    kf = ps.KalmanFilter(CV)
    for y in ys[:START]:
        kf.update(y)

    def refused(self, *args, **kwargs):
        raise AssertionError("update built its Info through __init__, not the compiled step")

    monkeypatch.setattr(KalmanInfo, "__init__", refused)
    names = {f.name for f in dataclasses.fields(KalmanInfo)}
    for y in ys[START:]:
        info = kf.update(y)
        assert type(info) is KalmanInfo
        assert set(info.__dict__) == names
