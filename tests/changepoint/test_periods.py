"""infer_period and its parts: the calendar's candidates, the out-of-sample test, and the
rate of false periods on series without a cycle.

Reference values: the calendar's periods written by hand (24 hours a day, 7 days a week, ...);
the gain and agreement of an exact periodic series computed by hand (1 and 1); the false
acceptance rate on white noise, random walks and AR(1) series simulated here.
"""

from __future__ import annotations

import datetime

import numpy as np
import pytest

import possibly as ps
from possibly.changepoint import calendar_periods, infer_period, models_for_series
from possibly.changepoint.periods import (
    WARM_UP,
    cycle_gain,
    group_medians,
    medians_along,
)


@pytest.mark.parametrize(("step", "expected"), [
    (datetime.timedelta(hours=1), (24.0, 168.0)),
    (datetime.timedelta(minutes=5), (288.0, 2016.0)),
    (np.timedelta64(1, "m"), (1440.0, 10080.0)),
    (np.timedelta64(30, "m"), (48.0, 336.0)),
    (datetime.timedelta(days=1), (7.0, 365.2425)),
    (datetime.timedelta(weeks=1), (52.1775,)),
    (datetime.timedelta(days=2), ()),
])
def test_calendar_periods_of_a_step(step, expected):
    assert calendar_periods(step) == expected


def test_calendar_periods_of_time_indexes():
    pd = pytest.importorskip("pandas")
    assert calendar_periods(pd.date_range("2024-01-01", periods=50, freq="h")) == (24.0, 168.0)
    assert calendar_periods(pd.date_range("2020-01-01", periods=30, freq="MS")) == (12.0,)
    assert calendar_periods(pd.date_range("2020-01-01", periods=30, freq="QS")) == (4.0,)
    assert calendar_periods(pd.Timedelta(hours=1)) == (24.0, 168.0)
    zoned = pd.date_range("2024-01-01", periods=50, freq="5min", tz="Europe/Paris")
    assert calendar_periods(zoned) == (288.0, 2016.0)
    days = np.arange("2024-01-01", "2024-03-01", dtype="datetime64[D]")
    assert calendar_periods(days) == (7.0, 365.2425)
    # irregular stamps: the median spacing
    stamps = np.datetime64("2024-01-01T00") + np.array([0, 1, 2, 4, 5, 6], dtype="timedelta64[h]")
    assert calendar_periods(stamps) == (24.0, 168.0)


@pytest.mark.parametrize(("arg", "match"), [
    (np.arange(10), "index must be a 1-D array of datetime64"),
    (np.array(["2024-01-01"], dtype="datetime64[D]"), "at least 2 time stamps"),
    (np.array(["2024-01-02", "2024-01-01"], dtype="datetime64[D]"), "must advance in time"),
    (datetime.timedelta(0), "step must advance in time"),
])
def test_calendar_periods_errors(arg, match):
    with pytest.raises(ValueError, match=match):
        calendar_periods(arg)


def test_gain_of_an_exact_cycle_is_one():
    # 0, 1, 0, 1, ...: each cycle's median is 1/2, the profile (-1/2, 1/2) in both halves
    gain, agreement = cycle_gain(np.tile([0.0, 1.0], 10), 2)
    assert gain == 1.0 and agreement == pytest.approx(1.0)
    t = np.arange(120)
    gain, agreement = cycle_gain(np.sin(2 * np.pi * t / 12) + 0.01 * t, 12)
    assert gain > 0.999 and agreement > 0.999


def test_gain_errors_and_constant_series():
    gain, agreement = cycle_gain(np.ones(50), 5)
    assert np.isnan(gain) and np.isnan(agreement)
    with pytest.raises(ValueError, match="at least 2 periods"):
        cycle_gain(np.arange(30.0), 24)
    with pytest.raises(ValueError, match="period must be a number >= 2"):
        cycle_gain(np.arange(30.0), 1)


def test_hourly_streams_get_a_day_and_a_week():
    for seed in range(3):
        series, _ = ps.datasets.cycle_idle(seed=seed)
        assert infer_period(series.values, series.index) == (24.0, 168.0)
        assert infer_period(series.values) == (24.0,)  # from the values alone


def test_minute_streams_get_a_day():
    series, _ = ps.datasets.cycle_flat_middle(seed=0)
    assert infer_period(series.values, series.index) == (1440.0,)


def test_values_alone():
    for seed in range(5):
        y, _ = ps.datasets.seasonal(seed=seed)
        assert infer_period(y) == (50.0,)
    rng = np.random.default_rng(0)
    t = np.arange(400)
    y = 3 * np.sign(np.sin(2 * np.pi * t / 20)) + rng.normal(size=400)  # a square wave
    assert infer_period(y) == (20.0,)


def test_two_full_cycles_are_needed():
    pd = pytest.importorskip("pandas")
    t = np.arange(47)
    y = np.sin(2 * np.pi * t / 24) + 0.01 * np.random.default_rng(1).normal(size=47)
    index = pd.date_range("2024-01-01", periods=47, freq="h")
    assert infer_period(y, index) is None
    t = np.arange(48)
    y = np.sin(2 * np.pi * t / 24) + 0.01 * np.random.default_rng(1).normal(size=48)
    assert infer_period(y, pd.date_range("2024-01-01", periods=48, freq="h")) == (24.0,)


def test_no_period_for_series_without_a_cycle():
    rng = np.random.default_rng(2)
    found = 0
    for n in (40, 100, 500, 2000):
        for _ in range(30):
            e = rng.normal(size=n)
            ar = np.zeros(n)
            for i in range(1, n):
                ar[i] = 0.8 * ar[i - 1] + e[i]
            shifted = e + 4.0 * (np.arange(n) > rng.integers(n))
            found += sum(infer_period(y) is not None for y in (e, np.cumsum(e), ar, shifted))
    assert found <= 5  # of 480 series (measured: about 1% of the random walks, none else)
    for name in ("level_shifts_outliers", "variance_changes", "trend_jumps", "growth_curve",
                 "ar1_shifts", "heavy_tailed", "short_series", "count_shifts"):
        for seed in range(5):
            y = ps.datasets.SYNTHETIC_SUITE[name](seed=seed)[0]
            assert infer_period(y) is None, (name, seed)
    series, _ = ps.datasets.idle_stream(seed=0)
    assert infer_period(series.values, series.index) is None


def test_infer_period_errors():
    with pytest.raises(ValueError, match="one time stamp per value"):
        infer_period(np.ones(10), np.arange("2024-01-01", "2024-01-06", dtype="datetime64[D]"))
    with pytest.raises(ValueError, match="y must be finite or NaN"):
        infer_period(np.array([1.0, np.inf]))


def test_missing_values_are_ignored():
    series, _ = ps.datasets.cycle_idle(seed=1)
    y = series.values.copy()
    y[::7] = np.nan
    assert infer_period(y, series.index) == (24.0, 168.0)


def test_models_for_series():
    series, _ = ps.datasets.cycle_idle(seed=0)
    models = models_for_series(series.values, series.index, outlier_cost=5.0)
    assert [m.name for m in models][3:] == ["level + cycle 24/168",
                                           "linear trend + cycle 24/168"]
    assert all(m.outlier_cost == 5.0 for m in models)
    y, _ = ps.datasets.level_shifts(seed=0)
    assert models_for_series(y) == ps.changepoint.model_family()


@pytest.mark.parametrize("seed", range(6))
def test_group_medians_is_the_median_of_each_group(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 300)), int(rng.integers(1, 40))
    values = rng.normal(size=n)
    if seed % 2:
        values = np.round(values * 2)  # ties
    values[rng.random(n) < 0.2] = np.nan
    groups = np.sort(rng.integers(0, k, size=n)) if seed % 3 else rng.integers(0, k, size=n)
    got = group_medians(values, groups, k)
    for g in range(k):
        member = values[(groups == g) & np.isfinite(values)]
        expect = np.median(member) if member.size else np.nan
        assert got[g] == expect or (np.isnan(expect) and np.isnan(got[g]))


@pytest.mark.parametrize("period", [7, 12, 24])
def test_values_alone_find_the_whole_period_between_frequency_bins(period):
    # a short series' periodogram peaks at a bin 1/n wide: n/period is rarely a whole number,
    # and the rounded period of the peak bin is off by one or two steps
    rng = np.random.default_rng(period)
    wrong = {}
    for n in range(3 * period, 26 * period, max(period // 2, 1)):
        t = np.arange(n)
        y = 10.0 * np.sin(2.0 * np.pi * t / period) + rng.normal(size=n)
        found = infer_period(y)
        if found != (float(period),):
            wrong[n] = found
    assert not wrong, wrong


def test_auto_period_from_values_puts_the_change_where_it_is():
    rng = np.random.default_rng(3)
    t = np.arange(200)
    y = 10.0 * np.sin(2.0 * np.pi * t / 24) + rng.normal(size=200)
    y[120:] += 15.0
    det = ps.ChangepointDetector(period="auto")
    res = det.fit(y)
    assert det.period_ == 24
    assert res.changepoints.tolist() == [120]


def _gain_by_hand(y, period):
    """cycle_gain from its definition with numpy's median, clip, mean and corrcoef: each full
    cycle's median at the cycle's middle, interpolated; the even and odd cycles' median
    profiles by phase; each half predicted by the other's; the robust variances' ratio."""
    n_cycles = int(len(y) // period)
    t = np.arange(int(np.floor(n_cycles * period)))
    cycle = np.minimum((t // period).astype(int), n_cycles - 1)
    phase = np.floor(np.mod(t, period)).astype(int)
    x = y[: t.size]
    level = np.array([np.nanmedian(x[cycle == c]) if np.isfinite(x[cycle == c]).any()
                      else np.nan for c in range(n_cycles)])
    middles = (np.arange(n_cycles) + 0.5) * period - 0.5
    known = np.isfinite(level)
    x = x - np.interp(t, middles[known], level[known])
    bins = int(np.ceil(period))
    profiles = []
    for h in (0, 1):
        rows = np.isfinite(x) & (cycle % 2 == h)
        profiles.append(np.array([np.median(x[rows & (phase == b)])
                                  if (rows & (phase == b)).any() else np.nan
                                  for b in range(bins)]))
    pred = np.where(cycle % 2 == 0, profiles[1][phase], profiles[0][phase])
    ok = np.isfinite(x) & np.isfinite(pred)

    def rv(v):
        dev = v - np.median(v)
        limit = 4.0 * 1.4826 * np.median(np.abs(dev))
        return np.mean(np.clip(dev, -limit, limit) ** 2)

    gain = 1.0 - rv(x[ok] - pred[ok]) / rv(x[ok])
    both = np.isfinite(profiles[0]) & np.isfinite(profiles[1])
    return gain, np.corrcoef(profiles[0][both], profiles[1][both])[0, 1]


@pytest.mark.parametrize("seed", range(8))
def test_gain_is_its_definition(seed):
    # whole periods without NaN take a shortcut (one cycle per row): both paths checked
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 700))
    period = float(rng.integers(2, n // 2 + 1)) if seed % 4 else rng.uniform(2.0, n / 2)
    t = np.arange(n)
    y = rng.standard_t(3, size=n) + rng.uniform(0, 3) * np.sin(2 * np.pi * t / period)
    y += np.cumsum(rng.normal(size=n)) * (seed % 2)
    if seed % 3 == 2:
        y[rng.random(n) < 0.1] = np.nan
    gain, agreement = cycle_gain(y, period)
    expect = _gain_by_hand(y, period)
    assert gain == pytest.approx(expect[0], rel=1e-12, abs=1e-12)
    assert agreement == pytest.approx(expect[1], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_medians_are_numpys(seed):
    rng = np.random.default_rng(seed)
    a = np.round(rng.normal(size=(int(rng.integers(1, 9)), int(rng.integers(1, 9)))) * 2)
    assert medians_along(a.ravel(), 0) == np.median(a)
    np.testing.assert_array_equal(medians_along(a, 0), np.median(a, axis=0))
    np.testing.assert_array_equal(medians_along(a, 1), np.median(a, axis=1))


def test_only_the_warm_up_is_read():
    rng = np.random.default_rng(11)
    n = 3 * WARM_UP
    y = rng.normal(size=n)
    y[WARM_UP:] += 10.0 * np.sin(2 * np.pi * np.arange(n - WARM_UP) / 24)
    assert infer_period(y[WARM_UP:]) == (24.0,)
    assert infer_period(y) is None  # the cycle starts after the warm-up
    y[:WARM_UP] += 10.0 * np.sin(2 * np.pi * np.arange(WARM_UP) / 24)
    assert infer_period(y) == (24.0,)
    # with time stamps: 16 of the calendar's longest cycle when that is longer (5-minute
    # data: 16 weeks), so a weekly cycle is tested on more than two weeks
    index = np.datetime64("2024-01-01T00:00") + np.arange(0, 5 * 2016 * 3, 5).astype(
        "timedelta64[m]")
    weekly = rng.normal(size=index.size) + 3.0 * np.sin(2 * np.pi * np.arange(index.size)
                                                        / 2016)
    assert infer_period(weekly, index) == (2016.0,)


def test_few_periods_on_random_walks():
    # a period proposed by the values is the strongest of many periodogram peaks; on a random
    # walk its split-half gain is biased up when few cycles are compared (0.6 / √cycles)
    rng = np.random.default_rng(2024)
    found = sum(infer_period(np.cumsum(rng.normal(size=n))) is not None
                for n in (300, 1000) for _ in range(150))
    assert found <= 4  # of 300 (measured: 3; 9 with the gain of short series alone)
    # the calendar's periods are not held to it: a weekly effect over a few weeks is kept
    series, _ = ps.datasets.count_surge(seed=9)  # 16 weeks; held to 0.6/√16, 168 is lost
    assert infer_period(series.values, series.index) == (24.0, 168.0)


@pytest.mark.parametrize("scale", [1e-150, 1e-100, 1.0, 1e100, 1e149])
def test_the_units_do_not_matter(scale):
    # squares of 1e-150 underflow and of 1e149 overflow: the test is scale-free
    rng = np.random.default_rng(5)
    t = np.arange(300)
    y = np.sin(2 * np.pi * t / 12) + 0.3 * rng.normal(size=300)
    assert infer_period(scale * y) == infer_period(y) == (12.0,)
    assert cycle_gain(scale * y, 12) == pytest.approx(cycle_gain(y, 12), rel=1e-12)
    assert infer_period(scale * rng.normal(size=300)) is None


def test_gain_of_a_nearly_constant_series_does_not_overflow():
    # the residuals' robust spread is 1e161 times the values': the squared ratio overflowed
    y = np.array([0.0, 1.0, 6.087527727083222e-161, np.nan, 0.0, 0.0])
    assert infer_period(y) is None


@pytest.mark.parametrize("scale", [1e-200, 1e-100, 1.0, 1e140])
def test_the_period_from_values_does_not_depend_on_their_units(scale):
    # the periodogram's power underflowed to 0 at 1e-200 (every frequency tied: 35 won)
    y = (np.arange(100) % 7).astype(float)
    assert infer_period(scale * y - 3.0 * scale) == (7.0,)


def test_a_week_that_damps_the_daily_cycle_is_found_in_three_weeks():
    """Three weeks of hourly data whose daily swing (8 noise sd) halves on weekends: the
    week is accepted on every one of 20 seeds (judged on the daily cycle's sidebands; on the
    week's phase profile alone, 6 of 20), and never when the swing is the same every day."""
    step = datetime.timedelta(hours=1)
    t = np.arange(3 * 168)
    swing = 4.0 * (1.0 - np.cos(2.0 * np.pi * (t % 24 - 3.0) / 24.0)) ** 1.5 / 2 ** 0.5
    weekend = (t // 24) % 7 >= 5
    gappy = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        noise = rng.normal(size=t.size)
        damped = 20.0 + swing * np.where(weekend, 0.5, 1.0) + noise
        assert infer_period(damped, step) == (24.0, 168.0), seed
        assert infer_period(20.0 + swing + noise, step) == (24.0,), seed
        damped[rng.choice(t.size, 10, replace=False)] = np.nan  # missing values (base: 7)
        gappy += infer_period(damped, step) == (24.0, 168.0)
    assert gappy >= 18
