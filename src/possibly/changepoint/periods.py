"""Periods of a series' cycles: candidates from its time stamps, accepted only on strong evidence.

A seasonal segment model (:class:`~possibly.changepoint.models.seasonal.SeasonalTrend`) needs
the period in steps. The calendar gives candidates (:func:`calendar_periods`: a day and a week
for data at half a day or finer, a week and a year for daily data, a year for weekly, monthly and
quarterly data); without time stamps the periodogram of the first differences gives a few.
:func:`infer_period` keeps a candidate only when the series shows it strongly, by an
out-of-sample test (:func:`cycle_gain`): the cycle's profile estimated on half of the cycles
must predict the other half. :func:`models_for_series` turns the result into the detector's
models.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

import numpy as np

from possibly.changepoint.models.seasonal import model_family
from possibly.changepoint.models.segment_model import SegmentModel, as_series

__all__ = ["calendar_periods", "cycle_gain", "infer_period", "models_for_series"]

#: a candidate is accepted when its profile, estimated on half of the cycles, explains at
#: least this fraction of the robust variance of the other half (cycle_gain)
MIN_GAIN = 0.1
#: and the two halves' profiles correlate at least this much
MIN_AGREEMENT = 0.5
#: deviations beyond this many robust sd count as this many (robust_variance)
CLIP = 4.0
#: a period needs at least this many full cycles in the series
MIN_CYCLES = 2
#: periods the values alone may propose: the strongest peaks of the periodogram, at most this many
VALUE_CANDIDATES = 3
#: a periodogram peak's candidate whole periods lie at most this many steps from it
PEAK_SPREAD = 3

_SECOND = np.timedelta64(1, "s")
_DAY = 86400.0
_WEEK = 7 * _DAY
_YEAR = 365.2425 * _DAY


def step_seconds(index_or_step: Any) -> float:
    """The sampling step in seconds of a time index (pandas DatetimeIndex, datetime64 array:
    the median spacing) or of a step (timedelta, numpy timedelta64, pandas Timedelta).

    Examples
    --------
    >>> import datetime
    >>> step_seconds(datetime.timedelta(minutes=5))
    300.0
    >>> step_seconds(np.arange("2024-01-01T00", "2024-01-02T00", dtype="datetime64[h]"))
    3600.0
    """
    name = "index"
    if isinstance(index_or_step, (datetime.timedelta, np.timedelta64)) or type(
            index_or_step).__name__ == "Timedelta":
        step = np.timedelta64(index_or_step) if not isinstance(index_or_step, np.timedelta64) \
            else index_or_step
        seconds = float(step / _SECOND)
        name = "step"
    else:
        if getattr(index_or_step, "tz", None) is not None:  # a zoned pandas DatetimeIndex
            index_or_step = index_or_step.tz_convert("UTC").tz_localize(None)
        stamps = np.asarray(index_or_step)
        if stamps.dtype.kind != "M" or stamps.ndim != 1:
            raise ValueError(f"index must be a 1-D array of datetime64 (or a pandas "
                             f"DatetimeIndex), or a step (timedelta), got "
                             f"{type(index_or_step).__name__} of dtype {stamps.dtype}")
        if stamps.size < 2:
            raise ValueError(f"index must hold at least 2 time stamps, got {stamps.size}")
        gaps = np.diff(stamps).astype("timedelta64[ns]").astype(np.float64) / 1e9
        seconds = float(np.median(gaps))
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{name} must advance in time (a positive step), got a step of "
                         f"{seconds!r} seconds")
    return seconds


def calendar_periods(index_or_step: Any) -> tuple[float, ...]:
    """Candidate periods in steps from the time stamps' spacing: the calendar's cycles.

    Data at half a day or finer: a day and a week (24 and 168 for hourly data, 288 and 2016
    for 5-minute data); daily data: a week (7) and a year; weekly: a year (52.18); monthly:
    a year (12); quarterly: a year (4). Any other step: none.

    Parameters
    ----------
    index_or_step : pandas DatetimeIndex, datetime64 array, or timedelta
        The time stamps (their median spacing is the step) or the step itself.

    Returns
    -------
    tuple of float
        Candidate periods in steps, shortest first (not tested against the data: see
        :func:`infer_period`).

    Examples
    --------
    >>> import datetime
    >>> calendar_periods(datetime.timedelta(hours=1))
    (24.0, 168.0)
    >>> calendar_periods(np.arange("2024-01", "2025-01", dtype="datetime64[M]")
    ...                  .astype("datetime64[D]"))
    (12.0,)
    """
    seconds = step_seconds(index_or_step)
    day = 86400.0
    if seconds <= day / 2:
        per_day = day / seconds
        return (per_day, 7.0 * per_day)
    if abs(seconds - day) < 1.0:
        return (7.0, round(_YEAR / _DAY, 4))
    if abs(seconds - _WEEK) < 1.0:
        return (round(_YEAR / _WEEK, 4),)
    if 28 * day <= seconds <= 31 * day:
        return (12.0,)
    if 89 * day <= seconds <= 92 * day:
        return (4.0,)
    return ()


def group_medians(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """The median of the finite ``values`` of each group ``0..n_groups-1`` (NaN where a group
    has none): ``np.median`` of each group's finite values, the same numbers (the mean of the
    two middle values is ``0.5 (a + b)``, which is exact division by 2), in one sort.

    Examples
    --------
    >>> group_medians(np.array([3.0, 1.0, np.nan, 2.0, 5.0]), np.array([0, 0, 0, 2, 2]), 3)
    array([2. , nan, 3.5])
    """
    finite = np.isfinite(values)
    v, g = values[finite], groups[finite]
    order = np.lexsort((v, g))
    v, g = v[order], g[order]
    edges = np.searchsorted(g, np.arange(n_groups + 1))
    count = np.diff(edges)
    out = np.full(n_groups, np.nan)
    some = count > 0
    lo = edges[:-1][some] + (count[some] - 1) // 2
    hi = edges[:-1][some] + count[some] // 2
    out[some] = 0.5 * (v[lo] + v[hi])
    return out


def _phase_profile(x: np.ndarray, phase: np.ndarray, bins: int, rows: np.ndarray
                   ) -> np.ndarray:
    """The median of ``x[rows]`` in each phase bin (NaN where a bin is empty)."""
    return group_medians(x[rows], phase[rows], bins)


def _delevelled(y: np.ndarray, period: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``y`` minus its local level, the cycle and the phase bin of each value (values after
    the last full cycle dropped). The level is the median of each full cycle, placed at the
    cycle's middle and interpolated linearly in between: a stationary cycle keeps its shape,
    while a level shift or a drift leaves at most about one cycle's worth of residue."""
    cycles = int(len(y) // period)
    t = np.arange(int(math.floor(cycles * period)))
    cycle = np.minimum((t // period).astype(np.int64), cycles - 1)
    phase = np.floor(np.mod(t, period)).astype(np.int64)
    x = y[: t.size].copy()
    medians = group_medians(x, cycle, cycles)
    known = np.isfinite(medians)
    if not known.any():
        return x, cycle, phase
    middles = (np.arange(cycles) + 0.5) * period - 0.5
    return x - np.interp(t, middles[known], medians[known]), cycle, phase


def robust_variance(x: np.ndarray) -> float:
    """The mean square of ``x`` about its median, each deviation clipped at
    :data:`CLIP` robust sd (1.4826 · MAD): the variance, unmoved by a few spikes.

    Examples
    --------
    >>> robust_variance(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))     # (4 + 1 + 0 + 1 + 4) / 5
    2.0
    >>> round(robust_variance(np.array([1.0, 2.0, 3.0, 4.0, 1000.0])), 6)  # 997 → 4 · 1.4826
    8.233929
    """
    dev = x - np.median(x)
    limit = CLIP * 1.4826 * float(np.median(np.abs(dev)))
    return float(np.mean(np.square(np.clip(dev, -limit, limit))))


def cycle_gain(y: Any, period: float) -> tuple[float, float]:
    """Out-of-sample evidence for a cycle of ``period`` steps: ``(gain, agreement)``.

    The series, minus the median of each cycle, is split into its even and odd cycles; each
    half's median phase profile predicts the other half. ``gain`` is ``1 - (MAD of the
    prediction's residuals / MAD of the values)²``: the fraction of the robust variance the
    other half's cycle explains (about ``-1/k`` without a cycle, for ``k`` cycles per half;
    near 1 for a strong one). ``agreement`` is the correlation of the two halves' profiles.

    Parameters
    ----------
    y : array_like, shape (n,)
        Observations (NaN: missing); ``n`` at least two periods.
    period : float
        Candidate period in steps, ``>= 2``.

    Returns
    -------
    gain, agreement : float
        NaN when the series is constant.

    Examples
    --------
    >>> t = np.arange(96)
    >>> rng = np.random.default_rng(0)
    >>> gain, agreement = cycle_gain(np.sin(2 * np.pi * t / 24) + 0.1 * rng.normal(size=96), 24)
    >>> gain > 0.9, agreement > 0.9
    (True, True)
    """
    y = as_series(y)
    if isinstance(period, bool) or not isinstance(period, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(period) and period >= 2):
        raise ValueError(f"period must be a number >= 2 (steps), got {period!r}")
    period = float(period)
    if len(y) < MIN_CYCLES * period:
        raise ValueError(f"y must hold at least {MIN_CYCLES} periods ({MIN_CYCLES * period:g} "
                         f"values) to test a period of {period:g}, got {len(y)}")
    x, cycle, phase = _delevelled(y, period)
    bins = int(math.ceil(period))
    finite = np.isfinite(x)
    halves = [finite & (cycle % 2 == h) for h in (0, 1)]
    profiles = [_phase_profile(x, phase, bins, np.flatnonzero(rows)) for rows in halves]
    pred = np.full(x.size, np.nan)
    for h in (0, 1):  # each half predicted by the other's profile
        pred[halves[h]] = profiles[1 - h][phase[halves[h]]]
    ok = finite & np.isfinite(pred)
    if ok.sum() < 2:
        return math.nan, math.nan
    spread, res_spread = robust_variance(x[ok]), robust_variance(x[ok] - pred[ok])
    if not spread > 0:
        return math.nan, math.nan
    gain = 1.0 - res_spread / spread
    both = np.isfinite(profiles[0]) & np.isfinite(profiles[1])
    a, b = profiles[0][both], profiles[1][both]
    if a.size < 2 or not (np.std(a) > 0 and np.std(b) > 0):
        return gain, math.nan
    return gain, float(np.corrcoef(a, b)[0, 1])


def _value_candidates(y: np.ndarray) -> list[list[float]]:
    """Whole periods at the strongest peaks of the first differences' periodogram (NaN filled
    by the previous value), between 2 steps and half the series: for each peak, the whole
    periods within two frequency bins of it (a bin is ``1/n`` wide, and leakage and noise
    move the peak of a frequency between bins, so on a short series a peak does not pin the
    period to one whole number); the ranges of neighbouring peaks are merged, shortest
    periods first."""
    filled = y.copy()
    missing = np.isnan(filled)
    if missing.all():
        return []
    idx = np.where(~missing, np.arange(filled.size), 0)
    np.maximum.accumulate(idx, out=idx)
    filled = filled[idx]
    filled[: int(np.flatnonzero(~missing)[0])] = filled[int(np.flatnonzero(~missing)[0])]
    d = np.diff(filled)
    if d.size < 4 or not np.any(d != 0):
        return []
    power = np.abs(np.fft.rfft(d - np.median(d))) ** 2
    freq = np.fft.rfftfreq(d.size)
    allowed = (freq > 0) & (freq * (len(y) / MIN_CYCLES) >= 1.0) & (freq < 0.5)
    order = np.argsort(-np.where(allowed, power, -np.inf), kind="stable")
    bin_width = 2.0 / d.size  # two bins: leakage moves a short series's peak
    groups: list[list[float]] = []
    for k in order[: 4 * VALUE_CANDIDATES]:
        if not allowed[k]:
            break
        centre = 1.0 / freq[k]
        low = max(2, math.ceil(1.0 / (freq[k] + bin_width)))
        high = math.floor(1.0 / max(freq[k] - bin_width, 1.0 / len(y)))
        group = [float(p) for p in range(low, max(high, low) + 1)
                 if abs(p - centre) <= PEAK_SPREAD]
        if group:
            groups.append(group)
        if len(groups) == VALUE_CANDIDATES:
            break
    # neighbouring bins of one cycle give overlapping ranges: one group of whole periods
    merged: list[list[float]] = []
    for group in sorted(groups, key=min):
        if merged and min(group) <= max(merged[-1]) + 2:  # the whole numbers between too
            merged[-1] = [float(p) for p in range(int(min(merged[-1])), int(max(group)) + 1)]
        else:
            merged.append(group)
    return merged


def required_gain(n: int) -> float:
    """The gain :func:`infer_period` requires of a series of ``n`` values: :data:`MIN_GAIN`,
    and ``3 / √n`` on a short series (about 3 times the 99th percentile of the gain of white
    noise or a random walk of that length, whatever the period).

    Examples
    --------
    >>> required_gain(100), required_gain(10_000)     # 3 / √100; then the floor MIN_GAIN
    (0.3, 0.1)
    """
    return max(MIN_GAIN, 3.0 / math.sqrt(n))


def infer_period(values: Any, index: Any = None) -> tuple[float, ...] | None:
    """The periods of the series' cycles, or None when none is shown strongly.

    Candidates come from the time stamps (:func:`calendar_periods`) when ``index`` is given,
    else from the strongest peaks of the periodogram of the first differences (then only the
    shortest accepted one is kept: the other peaks are mostly its harmonics). A candidate is
    accepted when the series holds at least two full periods and, on the series minus the
    cycles accepted before it (shortest first), the profile estimated on half of the cycles
    explains at least 10% (:func:`required_gain`: ``3/√n`` on a short series) of the robust
    variance of the other half and the two halves' profiles correlate at least 0.5
    (:func:`cycle_gain`). The gain is about 0 or below for a series without that cycle,
    whatever its level shifts or trends; in simulations no period was accepted on white
    noise, AR(1) series or level shifts, and one on about 1% of random walks. From the
    values alone, a long cycle of finely sampled data (a day of minute data) is damped by
    the differencing and is not found: pass the time index.

    Parameters
    ----------
    values : array_like, shape (n,)
        The series (or its warm-up; NaN: missing).
    index : pandas DatetimeIndex, datetime64 array or timedelta, optional
        The values' time stamps, or the sampling step.

    Returns
    -------
    tuple of float or None
        The accepted periods in steps, shortest first (for :func:`models_for_series` and
        ``model_family(period=...)``); None when none is accepted.

    Examples
    --------
    >>> import possibly as ps
    >>> series, _ = ps.datasets.cycle_idle(seed=0)   # hourly, a daily and a weekly cycle
    >>> infer_period(series.values, series.index)
    (24.0, 168.0)
    >>> y, _ = ps.datasets.level_shifts(seed=0)        # no cycle
    >>> infer_period(y) is None
    True
    """
    y = as_series(values)
    if index is not None and np.ndim(index) == 1 and len(index) != len(y):
        raise ValueError(f"index must hold one time stamp per value ({len(y)}), got "
                         f"{len(index)}")
    # each group: the whole periods a peak allows (from the values), or one calendar period
    groups = ([[p] for p in calendar_periods(index)] if index is not None
              else _value_candidates(y))
    accepted: list[float] = []
    rest = y.copy()
    for group in sorted(groups, key=min):
        scored = []
        for p in group:
            if len(rest) >= MIN_CYCLES * p:
                gain, agreement = cycle_gain(rest, p)
                if gain >= required_gain(len(rest)) and agreement >= MIN_AGREEMENT:
                    scored.append((gain, p))
        if scored:
            period = max(scored)[1]  # of a peak's whole periods, the one explaining most
            accepted.append(period)
            # the next candidates are judged on what this cycle leaves
            x, _, phase = _delevelled(rest, period)
            profile = _phase_profile(x, phase, int(math.ceil(period)),
                                     np.flatnonzero(np.isfinite(x)))
            every = np.floor(np.mod(np.arange(len(rest)), period)).astype(np.int64)
            rest = rest - np.nan_to_num(profile[every])
            if index is None:
                break  # the periodogram's other peaks are this cycle's harmonics
    return tuple(accepted) or None


def models_for_series(values: Any, index: Any = None, **kwargs: Any) -> list[SegmentModel]:
    """The detector's segment models for a series: the default family, with seasonal members
    for the periods :func:`infer_period` accepts.

    Parameters
    ----------
    values : array_like, shape (n,)
        The series or its warm-up (NaN: missing).
    index : pandas DatetimeIndex, datetime64 array or timedelta, optional
        The time stamps, or the sampling step.
    **kwargs
        Settings for every model (e.g. ``prior=automatic_prior(warm_up)`` to stream).

    Returns
    -------
    list of SegmentModel
        ``model_family(period=infer_period(values, index), **kwargs)``.

    Examples
    --------
    >>> import possibly as ps
    >>> series, _ = ps.datasets.cycle_idle(seed=0)
    >>> models = models_for_series(series.values, series.index)
    >>> ps.ChangepointDetector(model=models).fit(series.values).changepoints.size
    0
    """
    return model_family(period=infer_period(values, index), **kwargs)
