"""Kalman results as pandas / xarray, indexed like the input, with named states (issue #16)."""

import numpy as np
import pandas as pd
import pytest

import possibly as ps

CV = ps.filters.constant_velocity()


def test_series_with_a_datetime_index_round_trips():
    idx = pd.date_range("2024-03-01", periods=8, freq="15min", tz="UTC")
    y = pd.Series([0.0, 1.0, 2.1, 2.9, 40.0, 5.2, np.nan, 7.0], index=idx, name="pos")
    res = ps.KalmanFilter(CV).filter(y)
    frame = res.to_frame()
    assert frame.index.equals(idx) and isinstance(frame.index, pd.DatetimeIndex)
    assert list(frame.columns) == ["position", "velocity", "position_sd", "velocity_sd",
                                   "log_consistency", "consistency", "discount"]
    # the same numbers as the array result, by position
    np.testing.assert_array_equal(frame["position"].to_numpy(), res.mean[:, 0])
    np.testing.assert_array_equal(frame["velocity_sd"].to_numpy()[2:],
                                  np.sqrt(res.covariance[2:, 1, 1]))
    assert frame["discount"].iloc[4] < 1e-6 and np.isnan(frame["discount"].iloc[6])
    assert frame["position_sd"].iloc[0] == 1.0  # observed: the sd of one measurement
    assert np.isinf(frame["velocity_sd"].iloc[0])  # not yet informed


def test_dataframe_of_several_columns_is_one_vector_observation():
    idx = pd.date_range("2024-01-01", periods=6, freq="D")
    df = pd.DataFrame({"x": [0, 1, 2, 30, 4, 5.0], "y": [0, -1, -2, -3, np.nan, -5]},
                      index=idx)
    model = ps.filters.constant_velocity(ndim=2)
    res = ps.KalmanFilter(model).filter(df)
    frame = res.to_frame()
    assert frame.index.equals(idx)
    assert list(frame.columns[:4]) == list(model.state_names)
    np.testing.assert_array_equal(frame[list(model.state_names)].to_numpy(),
                                  ps.KalmanFilter(model).filter(df.to_numpy()).mean)


def test_plain_arrays_get_a_step_index_and_generic_names():
    model = ps.LinearGaussianModel([[1.0]], [[0.1]], [[1.0]], [[1.0]])
    frame = ps.KalmanFilter(model).filter(np.arange(5.0)).to_frame()
    assert frame.index.name == "step" and list(frame.index) == list(range(5))
    assert "x0" in frame.columns and "x0_sd" in frame.columns


def test_batches_get_a_series_level_and_keep_drops_columns():
    ys = np.random.default_rng(0).normal(size=(2, 3, 4, 1))
    res = ps.KalmanFilter(CV).filter(ys, keep=("mean",))
    frame = res.to_frame()
    assert frame.index.names == ["series", "step"] and len(frame) == 2 * 3 * 4
    assert "position_sd" not in frame.columns
    np.testing.assert_array_equal(frame.loc[(5, 2), ["position", "velocity"]].to_numpy(float),
                                  res.mean[1, 2, 2])


def test_to_xarray_has_named_states_and_the_time_index():
    idx = pd.date_range("2024-01-01", periods=5, freq="D")
    y = pd.Series([0.0, 1.0, 2.0, 3.0, 4.0], index=idx)
    ds = ps.KalmanFilter(CV).filter(y).to_xarray()
    assert list(ds["state"].values) == ["position", "velocity"]
    assert (ds["time"].values == idx.values).all()
    np.testing.assert_allclose(ds["mean"].sel(state="velocity").values[1:], 1.0, rtol=1e-6)
    assert set(ds.data_vars) == {"mean", "variance", "log_consistency", "discount"}


def test_a_result_without_means_cannot_exist():
    with pytest.raises(ValueError, match="including 'mean'"):
        ps.KalmanFilter(CV).filter(np.zeros(3), keep=("variance",))


def test_smoother_frame_has_the_smoothed_states_and_the_same_index():
    idx = pd.date_range("2024-01-01", periods=6, freq="D")
    y = pd.Series([0.0, 1.1, 1.9, 3.2, 30.0, 5.0], index=idx)
    sm = ps.KalmanFilter(CV).smooth(y)
    frame = sm.to_frame()
    assert frame.index.equals(idx)
    np.testing.assert_array_equal(frame["velocity"].to_numpy(), sm.mean[:, 1])
    np.testing.assert_allclose(frame["position_sd"].to_numpy(), np.sqrt(sm.covariance[:, 0, 0]))
    np.testing.assert_array_equal(frame["discount"].to_numpy(), sm.discount)
