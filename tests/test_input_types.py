"""Input types at the public entry points: complex values, numpy masked arrays, a ``(1, T)``
row, a one-column DataFrame, date/time values, and the length of error messages.

Decisions (docs/numerics.md, "Input types"): complex values are refused (the imaginary part
would be dropped); a masked entry is a missing value (NaN: predict only) where observations
may be missing, and refused where they may not (parameters, likelihood data); a ``(1, T)``
row where a series is expected is refused with the fix (``.ravel()``/``.T``); where time is
the last axis (the estimators' ``(..., T)``) it is a batch of one series, unambiguously; a
one-column DataFrame or ``(T, 1)`` array is that column's series; dates, times and durations
are refused (the time stamps belong in the index). Expected values come from the same data
given as plain float arrays with NaN (the documented meaning of a missing value), or from
the construction of the series (where the change is).
"""

from __future__ import annotations

import numpy as np
import pytest

import possibly as ps
from possibly.filters import kalman
from possibly.filters.kalman import NoiseScaleKalmanFilter
from possibly.filters.kalman_state import KalmanState
from possibly.filters.nonlinear import ExtendedKalmanFilter, NonlinearModel

pd = pytest.importorskip("pandas")


def step(n=80, at=40, seed=0):
    """A step at ``at``, positive (the soft-uniform estimator takes positive values)."""
    y = np.random.default_rng(seed).normal(10.0, 0.3, n)
    y[at:] += 5.0
    return y


def cv():
    return ps.KalmanFilter(*ps.filters.constant_velocity())


def ekf():
    model = NonlinearModel(f=lambda x: x, h=lambda x: x, Q=[[0.01]], R=[[0.1]])
    return ExtendedKalmanFilter(model, prior=ps.MultivariateNormal([0.0], [[1e-2]]))


def ukf():
    model = NonlinearModel(f=lambda x: x, h=lambda x: x, Q=[[0.01]], R=[[0.1]])
    return ps.UnscentedKalmanFilter(model, prior=ps.MultivariateNormal([0.0], [[1e-2]]))


def noise_scale():
    model = ps.filters.constant_velocity()
    return NoiseScaleKalmanFilter(model.F, model.Q, model.H, model.R)


#: every public estimator's whole-series entry point on a scalar series y (shape (T,))
SERIES = {
    "ChangepointDetector": lambda y: ps.ChangepointDetector().fit(y),
    "ChangepointDetector(sigma)": lambda y: ps.ChangepointDetector(sigma=0.3).fit(y),
    "KalmanFilter.filter": lambda y: cv().filter(y),
    "KalmanFilter.smooth": lambda y: cv().smooth(y),
    "ExtendedKalmanFilter": lambda y: ekf().fit(y),
    "UnscentedKalmanFilter": lambda y: ukf().fit(y),
    "NoiseScaleKalmanFilter": lambda y: noise_scale().fit(y),
    "RobustNormalEstimator": lambda y: ps.RobustNormalEstimator().fit(y),
    "SoftUniformEstimator": lambda y: ps.SoftUniformEstimator().fit(y),
}
#: the functional API: one observation or a batch of data (missing values: kalman.update only)
FUNCTIONAL = {
    "likelihood.normal": lambda y: ps.likelihood.normal(y, sd=1.0),
    "likelihood.normal_batch": lambda y: ps.likelihood.normal_batch(y),
    "robust_update": lambda y: ps.robust_update(ps.Normal(0.0, 1.0),
                                                ps.likelihood.normal(y, sd=1.0)),
    "Normal": lambda y: ps.Normal(y, 1.0),
    "kalman.update": lambda y: kalman.update(KalmanState.uninformative(1, ()), y,
                                             H=[[1.0]], R=[[1.0]]),
}


@pytest.mark.parametrize("name", sorted(SERIES) + sorted(FUNCTIONAL))
@pytest.mark.parametrize("kind", ["complex", "complex list", "complex Series"])
def test_complex_values_are_refused(name, kind):
    # the imaginary part was dropped with a ComplexWarning, contradicting docs/numerics.md
    call = {**SERIES, **FUNCTIONAL}[name]
    y = step(20) + 1j * np.linspace(0.5, 1.0, 20)
    if name in FUNCTIONAL and name != "likelihood.normal_batch":
        y = y[:1]
    value = {"complex": y, "complex list": y.tolist(), "complex Series": pd.Series(y)}[kind]
    with pytest.raises(ValueError, match="must hold real numbers, got complex values"):
        call(value)


def masked(y, where):
    mask = np.zeros(y.shape, bool)
    mask[where] = True
    return np.ma.masked_array(y, mask=mask)


@pytest.mark.parametrize("name", sorted(SERIES))
def test_masked_entries_are_missing(name):
    # the mask was ignored: a masked 1e3 became a two-point segment
    y = step()
    y[[7, 55, 56]] = 1e3
    got = SERIES[name](masked(y, [7, 55, 56]))
    nan = y.copy()
    nan[[7, 55, 56]] = np.nan
    expect = SERIES[name](nan)
    for field in ("mean", "discount", "mode", "precision", "log_consistency"):
        if hasattr(expect, field):
            np.testing.assert_array_equal(np.asarray(getattr(got, field)),
                                          np.asarray(getattr(expect, field)), err_msg=field)


def test_masked_outlier_is_no_change_point():
    y = step()
    y[20] = 1e3
    res = ps.ChangepointDetector().fit(masked(y, [20]))
    assert res.changepoints.tolist() == [40] and np.isnan(res.y[20])
    assert res.outliers.tolist() == []  # missing, not an outlier


def test_masked_batch_is_a_missing_batch_for_the_covariance_estimator():
    batches = np.random.default_rng(1).normal(size=(6, 5, 2))
    got = ps.RobustCovarianceEstimator().fit(masked(batches, (3, 0, 1)))
    nan = batches.copy()
    nan[3, 0, 1] = np.nan
    expect = ps.RobustCovarianceEstimator().fit(nan)
    np.testing.assert_array_equal(got.covariance, expect.covariance)
    assert np.isnan(got.discount[3])


def test_masked_observation_is_missing_in_the_functional_kalman_update():
    state = KalmanState.uninformative(1, ())
    got = kalman.update(state, np.ma.masked_array([3.0], mask=[True]), H=[[1.0]], R=[[1.0]])
    expect = kalman.update(state, [np.nan], H=[[1.0]], R=[[1.0]])
    np.testing.assert_array_equal(got[0].mean, expect[0].mean)
    assert np.isnan(got[1].discount)


@pytest.mark.parametrize("name", sorted(set(FUNCTIONAL) - {"kalman.update"}))
def test_masked_values_refused_where_missing_values_are_not_allowed(name):
    y = masked(np.array([0.5, 1.5]), [1])
    if name not in ("likelihood.normal_batch",):
        y = masked(np.array([0.5]), [0])
    with pytest.raises(ValueError, match="is a masked array with 1 masked entries"):
        FUNCTIONAL[name](y)
    # a masked array without masked entries is its data
    FUNCTIONAL[name](np.ma.masked_array(np.ma.getdata(y)))


def test_row_vector_is_refused_with_the_fix():
    # a (1, T) row was taken silently as one T-dimensional observation
    y = step()[None]
    for call in (ps.ChangepointDetector().fit, cv().filter, cv().smooth, ekf().fit,
                 ukf().fit):
        with pytest.raises(ValueError, match=r"\(1, 80\).*ravel\(\)"):
            call(y)
    with pytest.raises(ValueError, match=r"pass y.T"):
        ps.ChangepointDetector().fit(np.zeros((1, 3)))


def test_row_is_one_series_where_time_is_the_last_axis():
    # the estimators take (..., T): a (1, T) array is a batch of one series, unambiguously
    y = step()
    one = ps.RobustNormalEstimator().fit(y)
    batch = ps.RobustNormalEstimator().fit(y[None])
    assert np.shape(batch.mean) == (1,) + np.shape(one.mean)
    np.testing.assert_array_equal(np.asarray(batch.mean)[0], one.mean)


def test_one_column_frame_is_its_series():
    # ChangepointDetector refused a one-column DataFrame that KalmanFilter accepts
    y = step()
    index = pd.date_range("2024-01-01", periods=y.size, freq="D")
    frame = pd.DataFrame({"level": y}, index=index)
    res = ps.ChangepointDetector().fit(frame)
    expect = ps.ChangepointDetector().fit(pd.Series(y, index=index))
    assert res.changepoints.tolist() == expect.changepoints.tolist() == [40]
    assert res.index.equals(index)
    np.testing.assert_array_equal(ps.ChangepointDetector().fit(y[:, None]).mean, expect.mean)
    np.testing.assert_array_equal(cv().filter(frame).mean, cv().filter(y).mean)


@pytest.mark.parametrize("values", ["datetime", "object", "timedelta", "tz", "list"])
@pytest.mark.parametrize("name", sorted(SERIES))
def test_time_stamps_are_refused(name, values):
    # a Series of Timestamps was read as nanoseconds since 1970
    stamps = pd.Series(pd.date_range("2024-01-01", periods=30, freq="h"))
    value = {"datetime": stamps, "object": stamps.astype(object),
             "timedelta": stamps - stamps[0], "tz": stamps.dt.tz_localize("UTC"),
             "list": stamps.tolist()}[values]
    with pytest.raises(ValueError, match="got dates, times or durations .*put the time stamps "
                                         r"in the index") as exc:
        SERIES[name](value)
    assert len(str(exc.value)) < 300 and "2024-01-01 03:00" not in str(exc.value)


def test_error_messages_never_print_a_whole_series():
    # an error message printed the whole Series repr
    junk = pd.Series(["a"] * 1000)
    for call in (*SERIES.values(), ps.RobustCovarianceEstimator().fit):
        with pytest.raises(ValueError) as exc:
            call(junk)
        assert len(str(exc.value)) < 400 and "\n" not in str(exc.value), str(exc.value)
    with pytest.raises(ValueError) as exc:
        ps.Normal(pd.Series([object()] * 500), 1.0)
    assert len(str(exc.value)) < 400


def test_nullable_pandas_missing_values_are_nan():
    y = step(30, 15)
    series = pd.Series(y, dtype="Float64")
    series[[3, 20]] = pd.NA
    nan = y.copy()
    nan[[3, 20]] = np.nan
    np.testing.assert_array_equal(ps.ChangepointDetector().fit(series).mean,
                                  ps.ChangepointDetector().fit(nan).mean)
    np.testing.assert_array_equal(cv().filter(series).mean, cv().filter(nan).mean)


def test_streaming_updates_take_the_same_input_types():
    det = ps.ChangepointDetector(sigma=1.0)
    with pytest.raises(ValueError, match="complex values"):
        det.update(1.0 + 2.0j)
    assert np.isnan(det.update(np.ma.masked_array(5.0, mask=True)).discount)  # missing
    with pytest.raises(ValueError, match="one observation") as exc:
        det.update(np.arange(1000.0))
    assert len(str(exc.value)) < 200
    kf = cv()
    with pytest.raises(ValueError, match="complex values"):
        kf.update(1.0 + 2.0j)
    assert np.isnan(kf.update(np.ma.masked_array([5.0], mask=[True])).discount)


def test_a_read_only_array_is_copied_once_not_compiled_for_again():
    """pandas hands out read-only arrays; numba would compile every kernel a second time for
    them (seconds on a first call), so the one conversion of user arrays copies them."""
    from possibly.validation import as_numbers

    ro = np.arange(5.0)
    ro.setflags(write=False)
    got = as_numbers("y", ro)
    assert got.flags.writeable and np.array_equal(got, ro)
    mine = np.arange(5.0)
    assert as_numbers("y", mine) is mine  # a writeable float array is not copied

    pytest.importorskip("numba")
    from possibly.changepoint.compiled_engine import compiled_models
    from possibly.filters import kalman_numba

    y = np.cumsum(np.random.default_rng(3).normal(size=200))
    y_ro = y.copy()
    y_ro.setflags(write=False)
    kf = ps.KalmanFilter(ps.filters.constant_velocity(obs_sd=1.0, accel_sd=0.5))
    det = ps.ChangepointDetector(engine="numba")
    kf.filter(y, engine="numba")
    det.fit(y)
    driver = compiled_models(ps.changepoint.model_family()).driver
    before = (len(kalman_numba.run.signatures), len(driver.signatures))
    for data in (pd.Series(y), y_ro):
        kf.filter(data, engine="numba")
        det.fit(data)
    assert (len(kalman_numba.run.signatures), len(driver.signatures)) == before


def test_strided_inputs_and_fortran_matrices_are_not_compiled_for_again():
    """numba compiles a kernel once per layout of its array arguments: a strided view (a
    column of a table, a reversed series, a batch moved time-first) or a model matrix in
    Fortran order or read-only must reach every compiled loop (change-point engine, Kalman
    filter, learned noise scale) as the C-contiguous, writeable arrays it was compiled for."""
    pytest.importorskip("numba")
    from possibly.changepoint.compiled_engine import compiled_models
    from possibly.filters import kalman_numba, noise_scale_numba

    rng = np.random.default_rng(4)
    y = np.cumsum(rng.normal(size=150))
    table = np.stack([y, y + 1.0], axis=1)
    model = ps.filters.constant_velocity(obs_sd=1.0, accel_sd=0.5)
    F, Q, H, R = (np.array(a) for a in model)
    q_read_only = Q.copy()
    q_read_only.setflags(write=False)
    odd = (np.asfortranarray(F), q_read_only, np.asfortranarray(H), R.T)
    det = ps.ChangepointDetector(engine="numba")
    paper = ps.ChangepointDetector(sigma=1.0, engine="numba")

    def run_every_loop(data, matrices=(F, Q, H, R)):
        det.fit(data)
        paper.fit(data)
        ps.KalmanFilter(*matrices).filter(data, engine="numba")
        ps.KalmanFilter(*matrices, learn_noise_scale=True).fit(data, engine="numba")

    def compiled_versions():
        drivers = (compiled_models(ps.changepoint.model_family()).driver,
                   compiled_models([ps.changepoint.NormalMean(1.0)]).driver)
        return [len(d.signatures) for d in (kalman_numba.run, noise_scale_numba.run, *drivers)]

    run_every_loop(y)
    before = compiled_versions()
    for strided in (table[:, 0], y[::-1]):
        run_every_loop(strided)
    run_every_loop(y, odd)
    batch = table.T[..., None]  # (2, T, 1)
    for matrices in ((F, Q, H, R), odd):
        ps.KalmanFilter(*matrices).filter(batch, engine="numba")
        ps.KalmanFilter(*matrices, learn_noise_scale=True).fit(batch, engine="numba")
    assert compiled_versions() == before
