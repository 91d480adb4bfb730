"""``ChangepointDetector(period="auto")``: the period inferred from the first series given."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

import possibly as ps
from possibly.changepoint import automatic_prior, model_family


def hourly_cycle(days: int = 30, seed: int = 0, jump_at: int | None = None) -> pd.Series:
    """Hourly values with a daily sine cycle (amplitude 5, noise sd 1), optionally a jump."""
    rng = np.random.default_rng(seed)
    t = np.arange(24 * days)
    y = 5.0 * np.sin(2 * np.pi * t / 24) + rng.normal(size=t.size)
    if jump_at is not None:
        y[jump_at:] += 8.0
    return pd.Series(y, index=pd.date_range("2024-03-01", periods=t.size, freq="h"))


def same_results(a: ps.ChangepointResult, b: ps.ChangepointResult) -> None:
    for name in ("changepoints", "outliers", "discount", "log_consistency", "mean",
                 "log_online_change_possibility", "anomaly"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_hourly_daily_cycle_gets_24_and_seasonal_models() -> None:
    y = hourly_cycle()
    det = ps.ChangepointDetector(period="auto")
    res = det.fit(y)
    assert det.period_ == 24 and res.period == 24
    assert det.periods_ is not None and det.periods_[0] == 24.0
    names = [m.name for m in res.params.models]
    assert any("cycle 24" in n for n in names), names
    # a cycle with no anomaly: no change point (the level family cuts it into pieces)
    assert res.changepoints.size == 0
    assert ps.ChangepointDetector(period=None).fit(y).changepoints.size > 0
    # the default is "auto"
    assert ps.ChangepointDetector().fit(y).period == 24


def test_auto_from_values_alone() -> None:
    # without time stamps the periodogram proposes the period
    det = ps.ChangepointDetector(period="auto")
    det.fit(hourly_cycle().to_numpy())
    assert det.period_ == 24


def test_auto_is_the_given_period_on_a_cycle() -> None:
    y = hourly_cycle(jump_at=500)
    auto = ps.ChangepointDetector(period="auto")
    res = auto.fit(y)
    assert res.changepoints.tolist() == [500]
    given = ps.ChangepointDetector(model=model_family(period=auto.periods_), period=24).fit(y)
    same_results(res, given)


@pytest.mark.parametrize("make", [
    lambda: ps.datasets.level_shifts(seed=0)[0],
    lambda: ps.datasets.trend_jumps(seed=1)[0],
    lambda: np.asarray(ps.datasets.well_log(), dtype=float),
])
def test_non_seasonal_series_is_exactly_period_none(make) -> None:
    y = make()
    det = ps.ChangepointDetector(period="auto")
    res = det.fit(y)
    assert det.period_ is None and det.periods_ is None and res.period is None
    same_results(res, ps.ChangepointDetector().fit(y))


@pytest.mark.parametrize("engine", ["numpy", "auto"])
def test_fit_warm_up_then_update_equals_one_fit(engine: str) -> None:
    y = hourly_cycle(days=20, seed=3, jump_at=400)
    warm = y.iloc[:240]
    streamed = ps.ChangepointDetector(period="auto", engine=engine)
    streamed.fit(warm)
    infos = [streamed.update(float(x)) for x in y.iloc[240:]]
    res = streamed.result()
    assert streamed.period_ == 24
    # the same settings given by hand, the whole series at once
    models = model_family(period=streamed.periods_, prior=automatic_prior(warm.to_numpy()))
    whole = ps.ChangepointDetector(model=models, period=24, engine=engine).fit(y)
    same_results(res, whole)
    np.testing.assert_array_equal([i.anomaly for i in infos], whole.anomaly[240:])
    assert res.index.equals(y.index)


def test_update_from_scratch_has_no_period() -> None:
    y = hourly_cycle(days=10).to_numpy()
    det = ps.ChangepointDetector(sigma=1.0, period="auto")
    anomalies = [det.update(x).anomaly for x in y]
    assert det.period_ is None and det.result().period is None
    ref = ps.ChangepointDetector(sigma=1.0, period=None).fit(y)
    np.testing.assert_array_equal(anomalies, ref.anomaly)
    # fit has a series to infer from (so a stream that needs cycles fits a warm-up first)
    assert ps.ChangepointDetector(sigma=1.0).fit(y).period == 24
    # later series do not change the period of a stream begun
    det.extend(y)
    assert det.period_ is None
    # nor do time stamps: one record is no series to infer a cycle from
    stamped = ps.ChangepointDetector(sigma=1.0, period="auto")
    series = hourly_cycle(days=10)
    for stamp, x in series.items():
        stamped.update(x, time=stamp)
    assert stamped.period_ is None
    np.testing.assert_array_equal(stamped.result().anomaly, ref.anomaly)


def test_units_do_not_change_the_period() -> None:
    y = hourly_cycle(jump_at=400)
    a = ps.ChangepointDetector(period="auto")
    b = ps.ChangepointDetector(period="auto")
    ra, rb = a.fit(y), b.fit(-250.0 * y + 1e4)
    assert a.periods_ == b.periods_ and a.period_ == 24
    assert ra.changepoints.tolist() == rb.changepoints.tolist() == [400]


def test_extend_first_infers_from_its_values() -> None:
    y = hourly_cycle(days=10)
    det = ps.ChangepointDetector(sigma=1.0, period="auto")
    det.extend(y)
    assert det.period_ == 24
    # the models were given: they stay as they are; only the anomaly signal uses the period
    assert [type(m).__name__ for m in det.params_.models] == ["NormalMean"]
    ref = ps.ChangepointDetector(sigma=1.0, period=24).fit(y)
    same_results(det.result(), ref)


def test_pickle_keeps_the_period() -> None:
    y = hourly_cycle(days=12, seed=5)
    det = ps.ChangepointDetector(period="auto")
    det.fit(y.iloc[:200])
    for x in y.iloc[200:250]:
        det.update(float(x))
    copy = pickle.loads(pickle.dumps(det))
    assert copy.period_ == det.period_ == 24 and copy.periods_ == det.periods_
    rest = [float(x) for x in y.iloc[250:]]
    a = [det.update(x) for x in rest]
    b = [copy.update(x) for x in rest]
    assert [i.anomaly for i in a] == [i.anomaly for i in b]
    same_results(det.result(), copy.result())


def test_refit_infers_again() -> None:
    det = ps.ChangepointDetector(period="auto")
    det.fit(hourly_cycle())
    assert det.period_ == 24
    res = det.fit(ps.datasets.level_shifts(seed=0)[0])
    assert det.period_ is None and res.period is None
    assert [m.name for m in res.params.models] == [m.name for m in model_family()]


def test_vector_series_gets_no_period() -> None:
    rng = np.random.default_rng(0)
    det = ps.ChangepointDetector(period="auto")
    res = det.fit(rng.normal(size=(200, 2)))
    assert det.period_ is None and res.period is None
    with pytest.raises(ValueError, match="period"):
        ps.ChangepointDetector(period=24).fit(rng.normal(size=(200, 2)))


@pytest.mark.parametrize("bad", ["daily", "AUTO", 1, 2.5, True, 10**7, -24])
def test_bad_period_is_refused(bad) -> None:
    with pytest.raises(ValueError, match="period must be None"):
        ps.ChangepointDetector(period=bad)
    det = ps.ChangepointDetector()
    with pytest.raises(ValueError, match="period must be None"):
        det.set_params(period=bad)
    assert det.period == "auto"


def test_params_and_frame() -> None:
    det = ps.ChangepointDetector(period="auto")
    assert det.get_params()["period"] == "auto" and repr(det) == "ChangepointDetector()"
    assert "period=None" in repr(ps.ChangepointDetector(period=None))
    assert det.period_ is None  # nothing seen yet
    frame = det.fit(hourly_cycle(days=5)).to_frame()
    assert "anomaly" in frame.columns
    np.testing.assert_array_equal(frame["anomaly"].to_numpy(), det.result().anomaly)


def test_reset_forgets_the_periods() -> None:
    det = ps.ChangepointDetector()
    det.fit(hourly_cycle())
    assert det.period_ == 24
    det.reset()
    assert det.period_ is None and det.periods_ is None and det.t == 0
    res = det.fit(ps.datasets.level_shifts(seed=0)[0])
    assert res.period is None
    assert [m.name for m in res.params.models] == [m.name for m in model_family()]
    # models that need no data: after reset, a stream begun with update has no period
    paper = ps.ChangepointDetector(sigma=1.0)
    y = hourly_cycle(days=10).to_numpy()
    assert paper.fit(y).period == 24
    paper.reset()
    anomalies = [paper.update(x).anomaly for x in y]
    assert paper.period_ is None
    ref = ps.ChangepointDetector(sigma=1.0, period=None).fit(y)
    np.testing.assert_array_equal(anomalies, ref.anomaly)
