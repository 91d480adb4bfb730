"""Every filter and estimator result as a pandas DataFrame and an xarray Dataset.

Each case runs one filter or estimator on a pandas input with a DatetimeIndex and lists the
columns its table must hold, taken from the result's own arrays; the checks are the same for
all: the table's index is the input's, the columns hold those arrays, and the Dataset's
``time`` coordinate is the index. A last test finds every ``*Result``/``*Fit`` class in the
source, so that a new result type without ``to_frame`` fails.
"""

import ast
import importlib
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import possibly as ps
from possibly.filters.kalman import NoiseScaleKalmanFilter
from possibly.filters.nonlinear import (
    ExtendedKalmanFilter,
    NonlinearModel,
    UnscentedKalmanFilter,
)
from possibly.filters.particle_filter import ParticleFilterState, weighted_mean
from possibly.frames import per_step_dataset, per_step_frame, time_labels
from possibly.integrations.scaleout import ManyResult

SRC = Path(ps.__file__).parent
T = 8
IDX = pd.date_range("2024-03-01", periods=T, freq="h", tz="UTC")
Y = pd.Series([0.0, 1.0, 2.1, 2.9, 40.0, 5.2, np.nan, 7.0], index=IDX, name="pos")
POSITIVE = pd.Series([3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.6, 5.3], index=IDX)
CV = ps.filters.constant_velocity()


def _sd(cov, j):
    with np.errstate(invalid="ignore"):
        return np.sqrt(cov[:, j, j])


def _kalman():
    r = ps.KalmanFilter(CV).filter(Y)
    return r, {"position": r.mean[:, 0], "velocity": r.mean[:, 1],
               "velocity_sd": _sd(r.covariance, 1), "log_consistency": r.log_consistency,
               "consistency": np.exp(r.log_consistency), "discount": r.discount}


def _smoother():
    r = ps.KalmanFilter(CV).smooth(Y)
    return r, {"position": r.mean[:, 0], "position_sd": _sd(r.covariance, 0),
               "discount": r.filtered.discount}


def _nonlinear(cls):
    model = NonlinearModel(f=lambda x: x, h=lambda x: x, Q=[[0.1]], R=[[1.0]])
    r = cls(model, prior=ps.MultivariateNormal([0.0], [[100.0]])).fit(Y)
    return r, {"x0": r.mean[:, 0], "x0_sd": _sd(r.covariance, 0),
               "log_consistency": r.log_consistency, "discount": r.discount}


def _noise_scale():
    r = NoiseScaleKalmanFilter(CV).fit(Y)
    return r, {"position": r.mean[:, 0], "velocity_sd": _sd(r.covariance, 1),
               "discount": r.discount, "noise_scale": r.noise_scale}


def _particles():
    pf = ps.ParticleFilter.from_model(CV, n_particles=100,
                                      prior=ps.MultivariateNormal([0.0, 1.0], np.eye(2)))
    r = pf.filter(Y, seed=0)
    return r, {"x0": r.mean[:, 0], "x1": r.mean[:, 1], "x1_mode": r.mode[:, 1],
               "gamma": r.gamma, "discount": r.discount}


def _location_scale():
    r = ps.RobustNormalEstimator().fit(Y)
    return r, {"mean": r.mean, "precision": r.precision, "gamma": r.gamma,
               "discount": r.discount, "consistency": np.exp(r.log_consistency)}


def _soft_uniform():
    r = ps.SoftUniformEstimator(order="given").fit(POSITIVE)
    return r, {"observation": POSITIVE.to_numpy(), "mode": r.mode, "discount": r.discount}


def _changepoint():
    r = ps.ChangepointDetector(sigma=1.0, hazard=0.01).fit(Y)
    return r, {"segment_mean": r.mean, "discount": r.discount,
               "log_consistency": r.log_consistency}


CASES = {
    "FilterResult": _kalman,
    "SmootherResult": _smoother,
    "FilterResult (EKF)": lambda: _nonlinear(ExtendedKalmanFilter),
    "FilterResult (UKF)": lambda: _nonlinear(UnscentedKalmanFilter),
    "NoiseScaleResult": _noise_scale,
    "ParticleFilterResult": _particles,
    "LocationScaleFit": _location_scale,
    "SoftUniformFit": _soft_uniform,
    "ChangepointResult": _changepoint,
}


@pytest.mark.filterwarnings("ignore::possibly.filters.filter_result.MostlyDiscountedWarning")
@pytest.mark.parametrize("case", list(CASES))
def test_table_is_indexed_like_the_input_and_holds_the_results_arrays(case):
    res, columns = CASES[case]()
    frame = res.to_frame()
    assert isinstance(frame.index, pd.DatetimeIndex) and frame.index.equals(IDX)
    for name, expected in columns.items():
        np.testing.assert_array_equal(frame[name].to_numpy(), np.asarray(expected, float),
                                      err_msg=name)
    ds = res.to_xarray()
    assert ds.indexes["time"].equals(IDX)
    for name in ds.data_vars:
        assert "time" in ds[name].dims, name


def test_learned_scale_through_kalman_filter_keeps_the_index():
    res = ps.KalmanFilter(CV, learn_noise_scale=True).fit(Y)
    assert res.to_frame().index.equals(IDX)
    np.testing.assert_array_equal(res.to_frame()["noise_scale"], res.noise_scale)


def test_soft_uniform_sorted_order_takes_the_labels_along():
    res = ps.SoftUniformEstimator().fit(POSITIVE)
    frame = res.to_frame()
    order = np.argsort(POSITIVE.to_numpy(), kind="stable")
    assert frame.index.equals(IDX[order])
    np.testing.assert_array_equal(frame["observation"], np.sort(POSITIVE.to_numpy()))
    # a value's row carries its own label
    assert (POSITIVE.loc[frame.index].to_numpy() == frame["observation"].to_numpy()).all()


def test_soft_uniform_sorted_batch_has_no_common_labels():
    data = pd.DataFrame([[3.0, 1.0, 2.0], [1.0, 2.0, 3.0]], columns=IDX[:3])
    frame = ps.SoftUniformEstimator().fit(data).to_frame()
    assert frame.index.names == ["series", "step"]


def test_estimator_dataframe_is_time_along_its_columns():
    data = pd.DataFrame(np.arange(12.0).reshape(2, 6), columns=IDX[:6])
    res = ps.RobustNormalEstimator().fit(data)
    frame = res.to_frame()
    assert frame.index.names == ["series", None]
    assert frame.loc[1].index.equals(IDX[:6])
    np.testing.assert_array_equal(frame.loc[1, "mean"], res.mean[1])


def test_filters_dataframe_rows_are_the_steps():
    data = pd.DataFrame({"y": Y.to_numpy()}, index=IDX)
    model = NonlinearModel(f=lambda x: x, h=lambda x: x, Q=[[0.1]], R=[[1.0]])
    ekf = ExtendedKalmanFilter(model, prior=ps.MultivariateNormal([0.0], [[100.0]]))
    assert ekf.fit(data).to_frame().index.equals(IDX)
    pf = ps.ParticleFilter.from_model(CV, n_particles=50,
                                      prior=ps.MultivariateNormal([0.0, 1.0], np.eye(2)))
    res = pf.filter(data, seed=0)
    assert res.to_frame().index.equals(IDX)
    # the same numbers as from the array
    np.testing.assert_array_equal(res.mode, pf.filter(Y.to_numpy(), seed=0).mode)


def test_batch_rows_are_series_then_step():
    model = NonlinearModel(f=lambda x: x, h=lambda x: x, Q=[[0.1]], R=[[1.0]])
    ys = np.random.default_rng(0).normal(size=(2, 3, 5, 1))
    res = UnscentedKalmanFilter(model, prior=ps.MultivariateNormal([0.0], [[100.0]])).fit(ys)
    frame = res.to_frame()
    assert frame.index.names == ["series", "step"] and len(frame) == 30
    # series 4 is batch position (1, 1)
    np.testing.assert_array_equal(frame.loc[4, "x0"], res.mean[1, 1, :, 0])
    ds = res.to_xarray()
    assert dict(ds["mean"].sizes) == {"series_0": 2, "series_1": 3, "time": 5, "state": 1}


def test_sequential_result_rows_are_steps():
    y = np.array([[0.1, -0.3, 25.0], [0.3, 0.0, 0.2]])  # 2 series, T = 3 (time last)
    res = ps.update_sequence(ps.Normal(0.0, 0.0), ps.likelihood.normal(y, sd=1.0))
    frame = res.to_frame()
    assert frame.index.names == ["series", "step"]
    np.testing.assert_array_equal(frame.loc[1, "mean"], res.trajectory.mean[1])
    np.testing.assert_array_equal(frame.loc[0, "discount"], res.discount[0])
    np.testing.assert_array_equal(frame.loc[0, "log_consistency"], res.log_consistency[0])
    ds = res.to_xarray()
    np.testing.assert_array_equal(ds["time"], np.arange(3))
    np.testing.assert_array_equal(ds["precision"].sel(series_0=1), res.trajectory.precision[1])


def test_sequential_result_vector_and_matrix_parameters():
    lik = ps.likelihood.linear_gaussian(np.eye(2), np.array([[1.0, 2.0], [1.5, 2.5]]), np.eye(2))
    res = ps.update_sequence(ps.MultivariateNormal.uninformative(2), lik)
    frame = res.to_frame()
    for i in range(2):
        np.testing.assert_array_equal(frame[f"mean_{i}"], res.trajectory.mean[:, i])
    np.testing.assert_array_equal(frame["precision_0_1"], res.trajectory.precision[:, 0, 1])
    assert res.to_xarray()["precision"].dims == ("time", "row", "column")


def test_covariance_fit_columns():
    batches = np.random.default_rng(1).normal(size=(6, 8, 2))
    res = ps.RobustCovarianceEstimator().fit(batches)
    frame = res.to_frame()
    assert frame.index.equals(pd.RangeIndex(6, name="step"))
    np.testing.assert_array_equal(frame["mean_1"], res.mean[:, 1])
    np.testing.assert_array_equal(frame["cov_0_1"], res.covariance[:, 0, 1])
    assert "cov_1_0" not in frame  # symmetric: each pair once
    np.testing.assert_array_equal(res.to_xarray()["covariance"], res.covariance)


def test_many_result_tables():
    summary = pd.DataFrame({"id": ["a", "b"], "error": [None, "boom"]})
    res = ManyResult(summary=summary)
    assert res.to_frame() is summary
    assert res.to_xarray().sizes["index"] == 2
    with pytest.raises(ValueError, match="no 'states' table"):
        res.to_frame("states")
    with pytest.raises(ValueError, match="table must be one of"):
        res.to_frame("rows")


def test_particle_mean_is_the_weighted_mean_and_estimates_the_kalman_mean():
    # by hand: weights 1, 1, 2 on 0, 1, 4 -> 9 / 4
    state = ParticleFilterState(np.array([[0.0, 1.0], [1.0, 1.0], [4.0, 1.0]]), np.zeros(3),
                                np.log([1.0, 1.0, 2.0]))
    np.testing.assert_allclose(weighted_mean(state), [2.25, 1.0])
    # a normal possibility function: the mean of the density ∝ f is E*, the Kalman mean
    rng = np.random.default_rng(3)
    ys = np.arange(1.0, 11.0) + rng.normal(size=10)
    prior = ps.MultivariateNormal([0.0, 1.0], np.eye(2))
    kf = ps.KalmanFilter(CV, prior=prior, robust=False).filter(ys)
    pf = ps.ParticleFilter.from_model(CV, n_particles=800, prior=prior, robust=False)
    res = pf.filter(ys, seed=0)
    sd = np.sqrt(kf.variance)
    assert (np.abs(res.mean - kf.mean) < 0.5 * sd).all()


def test_missing_extra_is_named(monkeypatch):
    res = ps.KalmanFilter(CV).filter(Y.to_numpy())
    monkeypatch.setitem(sys.modules, "xarray", None)
    with pytest.raises(ImportError, match=re.escape('pip install "possibly[xarray]"')):
        res.to_xarray()
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=re.escape("possibly[pandas]")):
        res.to_frame()


def test_helpers_check_their_arrays():
    with pytest.raises(ValueError, match="share their batch and time axes"):
        per_step_frame({"a": np.zeros(3), "b": np.zeros(4)})
    with pytest.raises(ValueError, match="share their batch and time axes"):
        per_step_dataset({"a": (np.zeros((3, 2)), ("k",)), "b": (np.zeros(4), ())})
    assert time_labels([1.0, 2.0], 0) is None
    assert time_labels(pd.DataFrame(np.zeros((2, 3)), columns=list("abc")), -1).tolist() == \
        list("abc")


def _result_classes():
    """Every class named ``*Result`` or ``*Fit`` defined in the package's source."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(("possibly",) + path.relative_to(SRC).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and re.search(r"(Result|Fit)$", node.name):
                found.append((module, node.name))
    return found


def test_every_result_type_has_to_frame_and_to_xarray():
    found = _result_classes()
    names = {name for _, name in found}
    # the listing finds the known types (it cannot pass by finding nothing)
    assert {"FilterResult", "SmootherResult", "NoiseScaleResult",
            "ParticleFilterResult", "SequentialResult", "CovarianceFit", "LocationScaleFit",
            "SoftUniformFit", "ChangepointResult", "ManyResult"} <= names
    missing = [f"{module}.{name}" for module, name in found
               if not all(callable(getattr(getattr(importlib.import_module(module), name),
                                           method, None))
                          for method in ("to_frame", "to_xarray"))]
    assert not missing, f"result types without to_frame/to_xarray: {missing}"


def _kalman_table_by_hand(mean, variance, log_c, disc, names, index):
    """The Kalman filter's table as it was built before the shared layout."""
    batch, steps = log_c.shape[:-1], log_c.shape[-1]
    cols = {name: mean[..., j].reshape(-1) for j, name in enumerate(names)}
    with np.errstate(invalid="ignore"):
        cols.update({f"{name}_sd": np.sqrt(variance[..., j]).reshape(-1)
                     for j, name in enumerate(names)})
    cols.update(log_consistency=log_c.reshape(-1), consistency=np.exp(log_c).reshape(-1),
                discount=disc.reshape(-1))
    index = index if index is not None else pd.RangeIndex(steps, name="step")
    if batch:
        index = pd.MultiIndex.from_product(
            [pd.RangeIndex(int(np.prod(batch)), name="series"), index])
    return pd.DataFrame(cols, index=index)


@pytest.mark.parametrize("ys", [Y, np.random.default_rng(0).normal(size=(2, 3, 6, 1))],
                         ids=["series", "batch"])
def test_kalman_tables_unchanged(ys):
    kf = ps.KalmanFilter(CV)
    filtered, smoothed = kf.filter(ys), kf.smooth(ys)
    for res, fr in ((filtered, filtered), (smoothed, smoothed.filtered)):
        expected = _kalman_table_by_hand(res.mean, res.variance, fr.log_consistency,
                                         fr.discount, CV.names, fr.index)
        pd.testing.assert_frame_equal(res.to_frame(), expected, check_exact=True)


def test_changepoint_vector_segment_mean_in_the_dataset():
    rng = np.random.default_rng(0)
    data = pd.DataFrame(rng.normal(size=(T, 2)), index=IDX, columns=["a", "b"])
    res = ps.ChangepointDetector().fit(data)
    ds = res.to_xarray()
    assert ds["segment_mean"].dims == ("time", "component") and ds.indexes["time"].equals(IDX)
    np.testing.assert_array_equal(ds["segment_mean"].values, res.mean)
