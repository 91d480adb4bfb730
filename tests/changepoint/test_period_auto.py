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


def weekly_stream() -> pd.Series:
    """Hourly values with a daily cycle that is 40% lower on weekends, 12 weeks."""
    series, _ = ps.datasets.cycle_idle(seed=0)
    return pd.Series(series.values, index=pd.DatetimeIndex(series.index))


@pytest.mark.parametrize("history", [True, False])
def test_a_stream_learns_the_weekly_cycle_its_warm_up_was_too_short_for(history) -> None:
    y = weekly_stream()
    det = ps.ChangepointDetector(period="auto", history=history)
    det.fit(y.iloc[:252])  # 10.5 days: less than two weeks, so no weekly cycle yet
    assert det.periods_ == (24.0,)
    changed_at = None
    for t in range(252, len(y)):
        det.update(float(y.iloc[t]))
        if changed_at is None and det.periods_ != (24.0,):
            changed_at = t  # revisited before record t: the fit of the first t
    assert det.periods_ == (24.0, 168.0) and changed_at is not None
    # the weekends are no longer cut into segments once the week is known
    rest = ps.ChangepointDetector(period="auto", history=history)
    rest.fit(y.iloc[:changed_at])
    assert rest.periods_ == (24.0, 168.0)  # a fit of the stream so far finds them too
    for x in y.iloc[changed_at:]:
        rest.update(float(x))
    assert det.changepoints.tolist() == rest.changepoints.tolist() == []
    if history:
        same_results(det.result(), rest.result())


def test_a_revisit_is_the_fit_of_the_stream_so_far() -> None:
    y = weekly_stream()
    det = ps.ChangepointDetector(period="auto")
    det.fit(y.iloc[:252])
    t = 252
    while det.periods_ == (24.0,):
        det.update(float(y.iloc[t]))
        t += 1
    # revisited before record t - 1: the fit of the stream so far, then that record
    ref = ps.ChangepointDetector(period="auto")
    ref.fit(y.iloc[:t - 1])
    ref.update(float(y.iloc[t - 1]))
    same_results(det.result(), ref.result())
    assert det.result().index.equals(y.index[:t])
    a = [det.update(float(x)) for x in y.iloc[t:t + 200]]
    b = [ref.update(float(x)) for x in y.iloc[t:t + 200]]
    assert [(i.anomaly, i.discount, i.map_run_length) for i in a] == [
        (i.anomaly, i.discount, i.map_run_length) for i in b]


def test_revisits_change_nothing_on_a_series_without_cycles() -> None:
    y, _ = ps.datasets.level_shifts(seed=2)
    det = ps.ChangepointDetector(period="auto")
    det.fit(y[:100])
    infos = [det.update(float(x)) for x in y[100:]]
    assert det.periods_ is None
    # the same priors given by hand and no period: bit for bit
    ref = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:100])),
                                 period=None).fit(y)
    np.testing.assert_array_equal([i.anomaly for i in infos], ref.anomaly[100:])
    np.testing.assert_array_equal([i.discount for i in infos], ref.discount[100:])


def test_extend_is_processed_with_the_periods_it_starts_with() -> None:
    y = weekly_stream()
    det = ps.ChangepointDetector(period="auto")
    det.fit(y.iloc[:252])
    same = ps.ChangepointDetector(period="auto")
    same.fit(y.iloc[:252])
    out = det.extend(y.iloc[252:1500])
    # one block, processed with the periods of the warm-up (as updates are until their first
    # revisit, before record 315)
    expect = [same.update(float(x)).anomaly for x in y.iloc[252:315]]
    np.testing.assert_array_equal(out["anomaly"][:63], expect)
    assert det.periods_ == (24.0,)
    # the next call revisits them first: the fit of the stream so far, then its record
    det.update(float(y.iloc[1500]))
    assert det.periods_ == ps.changepoint.infer_period(y.to_numpy()[:1500], y.index[:1500])
    assert det.periods_ == (24.0, 168.0)
    ref = ps.ChangepointDetector(period="auto")
    ref.fit(y.iloc[:1500])
    ref.update(float(y.iloc[1500]))
    same_results(det.result(), ref.result())


def interrupt_revisits(patch) -> None:
    """Every revisit finds a week and its refit is interrupted (Ctrl-C)."""
    from possibly.changepoint import detector as detector_module

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    patch.setattr(detector_module, "infer_period", lambda *a, **k: (24.0, 168.0))
    patch.setattr(detector_module.ChangepointDetector, "_fit", interrupted)


def test_an_interrupted_extend_at_a_revisit_processes_nothing(monkeypatch) -> None:
    y = weekly_stream()
    det = ps.ChangepointDetector(period="auto")
    det.fit(y.iloc[:252])
    det.extend(y.iloc[252:400])
    with monkeypatch.context() as patch:
        interrupt_revisits(patch)
        with pytest.raises(KeyboardInterrupt):
            det.extend(y.iloc[400:500])
    assert det.t == 400 and det.periods_ == (24.0,)
    det.extend(y.iloc[400:500])  # tried again: the revisit, then the block, once
    ref = ps.ChangepointDetector(period="auto")
    ref.fit(y.iloc[:252])
    ref.extend(y.iloc[252:400])
    ref.extend(y.iloc[400:500])
    same_results(det.result(), ref.result())


def test_a_revisit_keeps_the_step_of_the_index() -> None:
    # one stamp off the hourly grid, then none: the refit's joined index has no frequency,
    # and the stream still continues by the hour of fit's index, from the last stamp
    y = weekly_stream()
    det = ps.ChangepointDetector(period="auto")
    det.fit(y.iloc[:240])
    for t in range(240, len(y)):
        stamp = y.index[t] + pd.Timedelta(minutes=30) if t == 300 else None
        det.update(float(y.iloc[t]), time=stamp)
    assert det.periods_ == (24.0, 168.0)
    index = det.result().index
    assert len(index) == len(y) and index[-1] == y.index[-1] + pd.Timedelta(minutes=30)


def test_an_interrupted_revisit_leaves_the_detector_as_it_was(monkeypatch) -> None:
    y = weekly_stream()
    det = ps.ChangepointDetector(period="auto")
    det.fit(y.iloc[:252])
    before = det.t
    with monkeypatch.context() as patch:
        interrupt_revisits(patch)
        with pytest.raises(KeyboardInterrupt):
            for x in y.iloc[252:400]:
                det.update(float(x))
    # revisited before record 315, which was not processed; the periods and the models are
    # the warm-up's
    assert det.periods_ == (24.0,) and det.t == before + 63
    ref = ps.ChangepointDetector(period="auto")
    ref.fit(y.iloc[:252])
    for x in y.iloc[252:det.t]:
        ref.update(float(x))
    same_results(det.result(), ref.result())


def test_pickle_mid_stream_revisits_the_same_way() -> None:
    y = weekly_stream()
    det = ps.ChangepointDetector(period="auto")
    det.fit(y.iloc[:252])
    for x in y.iloc[252:600]:
        det.update(float(x))
    copy = pickle.loads(pickle.dumps(det))
    a = [det.update(float(x)).anomaly for x in y.iloc[600:]]
    b = [copy.update(float(x)).anomaly for x in y.iloc[600:]]
    assert a == b and det.periods_ == copy.periods_ == (24.0, 168.0)
    same_results(det.result(), copy.result())


def test_a_refused_call_at_a_revisit_changes_nothing() -> None:
    y = weekly_stream()
    det = ps.ChangepointDetector(period="auto")
    det.fit(y.iloc[:252])
    t = 252
    while det._early is not None and det._early.n < det._revisit_at:
        det.update(float(y.iloc[t]))
        t += 1
    periods = det.periods_
    with pytest.raises(ValueError, match="time must not go back"):
        det.update(float(y.iloc[t]), time=y.index[0])
    with pytest.raises(ValueError, match="y must"):
        det.extend(["a"])
    assert det.periods_ == periods and det.t == t and det._early.n == det._revisit_at


def test_an_interrupted_first_extend_leaves_no_period(monkeypatch) -> None:
    from possibly.changepoint import detector as detector_module

    y = hourly_cycle(days=10)

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    det = ps.ChangepointDetector(sigma=1.0, period="auto")
    with monkeypatch.context() as patch:
        patch.setattr(detector_module.ChangepointDetector, "_run_tracked", interrupted)
        with pytest.raises(KeyboardInterrupt):
            det.extend(y)
    assert det.t == 0 and det.period_ is None and det.periods_ is None
    det.update(float(y.iloc[0]))  # a stream begun with update has no period
    assert det.period_ is None
