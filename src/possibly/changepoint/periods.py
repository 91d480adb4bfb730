"""Periods of a series' cycles: candidates from its time stamps, accepted only on strong evidence.

A seasonal segment model (:class:`~possibly.changepoint.models.seasonal.SeasonalTrend`) needs
the period in steps. The calendar gives candidates (:func:`calendar_periods`: a day and a week
for data at half a day or finer, a week and a year for daily data, a year for weekly, monthly and
quarterly data); without time stamps the periodogram of the first differences gives a few.
:func:`infer_period` keeps a candidate only when the series shows it strongly, by an
out-of-sample test (:func:`cycle_gain`): the cycle's profile estimated on half of the cycles
must predict the other half. It reads only a warm-up (the first :data:`WARM_UP` values, or
:data:`WARM_UP_CYCLES` of the calendar's longest cycle), so its cost is bounded: it runs on
every fit by default (``ChangepointDetector(period="auto")``). :func:`models_for_series` turns
the result into the detector's models.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

import numpy as np

from possibly.changepoint.models.seasonal import (
    harmonic_numbers,
    model_family,
    sidebands,
    whole_multiple,
)
from possibly.changepoint.models.segment_model import SegmentModel, as_series

__all__ = ["calendar_periods", "cycle_gain", "infer_period", "models_for_series",
           "warm_up_length"]

#: a candidate is accepted when its profile, estimated on half of the cycles, explains at
#: least this fraction of the robust variance of the other half (cycle_gain)
MIN_GAIN = 0.1
#: and the two halves' profiles correlate at least this much
MIN_AGREEMENT = 0.5
#: and, for a period proposed by the values, the gain is at least this over √(cycles in the
#: warm-up): with few cycles, the profiles of a random walk's two halves agree by chance
FEW_CYCLES_GAIN = 0.6
#: deviations beyond this many robust sd count as this many (the robust variance of cycle_gain)
CLIP = 4.0
#: a period needs at least this many full cycles in the series
MIN_CYCLES = 2
#: periods the values alone may propose: the strongest peaks of the periodogram, at most this many
VALUE_CANDIDATES = 3
#: a periodogram peak's candidate whole periods lie at most this many steps from it
PEAK_SPREAD = 3
#: the periods are inferred from at most the first this many values (the warm-up) ...
WARM_UP = 4096
#: ... or, with time stamps, from this many of the calendar's longest cycle when that is longer
WARM_UP_CYCLES = 16

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


def medians_along(a: np.ndarray, axis: int) -> Any:
    """The medians of an array without NaN along ``axis`` (0, or 1 for a 2-D array):
    ``np.median(a, axis)``'s numbers, by one partial sort.

    Examples
    --------
    >>> medians_along(np.array([[1.0, 5.0], [3.0, 2.0], [2.0, 9.0]]), 0)
    array([2., 5.])
    >>> medians_along(np.array([[1.0, 5.0], [3.0, 2.0], [2.0, 9.0]]), 1)
    array([3. , 2.5, 5.5])
    """
    k = a.shape[axis]
    lo, hi = (k - 1) // 2, k // 2
    part = np.partition(a, (lo, hi) if hi != lo else lo, axis=axis)
    if axis:
        part = part.T
    return 0.5 * (part[lo] + part[hi])


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson's correlation of two arrays (NaN when either has fewer than 2 values or is
    constant).

    Examples
    --------
    >>> correlation(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 7.0]))  # 5 / √(2 · 12.67)
    0.9933992677987828
    """
    if a.size < 2:
        return math.nan
    a, b = a - a.mean(), b - b.mean()
    size_a, size_b = float(np.abs(a).max()), float(np.abs(b).max())
    if not (size_a > 0 and size_b > 0):
        return math.nan
    a, b = a / size_a, b / size_b  # scaled: no square underflows, whatever the units
    return float((a * b).sum()) / math.sqrt(float(np.square(a).sum()) *
                                            float(np.square(b).sum()))


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
    return _gain(y, period)


def _gain(y: np.ndarray, period: float, required: float = -math.inf,
          harmonics: tuple[int, ...] = ()) -> tuple[float, float]:
    """:func:`cycle_gain` of a checked series; the agreement is NaN (not computed) when the
    gain is below ``required``. With ``harmonics``, each half's phase profile is replaced by
    its least-squares projection on those harmonics of ``period`` (over the phases the half
    has values at): ``2k`` coefficients, not one per phase, so that a few cycles show it
    (NaN when a half saw too few phases to fit them). A whole period of a series without NaN,
    without ``harmonics``, takes a shortcut: the values as a matrix of one cycle per row (the
    same numbers)."""
    p = int(period)
    if p == period and not harmonics:
        block = y[: len(y) // p * p]
        if not np.isnan(block).any():
            return _gain_whole(block.reshape(-1, p), required)
    x, cycle, phase = _delevelled(y, period)
    bins = int(math.ceil(period))
    finite = np.isfinite(x)
    halves = [finite & (cycle % 2 == h) for h in (0, 1)]
    profiles = [_phase_profile(x, phase, bins, np.flatnonzero(rows)) for rows in halves]
    if harmonics:
        angle = 2.0 * math.pi * np.arange(bins) / period
        basis = np.column_stack([f(j * angle) for j in harmonics for f in (np.cos, np.sin)])
        for h, profile in enumerate(profiles):
            known = np.isfinite(profile)
            if known.sum() <= basis.shape[1]:  # too few phases seen to fit the coefficients
                return math.nan, math.nan
            centred = profile[known] - profile[known].mean()
            profiles[h] = basis @ np.linalg.lstsq(basis[known], centred, rcond=None)[0]
    pred = np.full(x.size, np.nan)
    for h in (0, 1):  # each half predicted by the other's profile
        pred[halves[h]] = profiles[1 - h][phase[halves[h]]]
    ok = finite & np.isfinite(pred)
    if ok.sum() < 2:
        return math.nan, math.nan
    gain = _explained(x[ok], x[ok] - pred[ok])
    if not gain >= required:
        return gain, math.nan
    both = np.isfinite(profiles[0]) & np.isfinite(profiles[1])
    return gain, correlation(profiles[0][both], profiles[1][both])


def _gain_whole(cycles: np.ndarray, required: float) -> tuple[float, float]:
    """:func:`_gain` of finite values laid out one cycle per row (at least two rows):
    ``_delevelled``'s level from the rows' medians, each half's profile from its rows'
    medians per column."""
    n_cycles, p = cycles.shape
    middles = np.arange(0.5 * p - 0.5, n_cycles * p, p)  # exact: halves times whole numbers
    x = cycles.ravel() - np.interp(np.arange(cycles.size), middles, medians_along(cycles, 1))
    rows = x.reshape(n_cycles, p)
    even, odd = medians_along(rows[0::2], 0), medians_along(rows[1::2], 0)
    residuals = rows.copy()
    residuals[0::2] -= odd  # each half predicted by the other's profile
    residuals[1::2] -= even
    gain = _explained(x, residuals.ravel())
    if not gain >= required:
        return gain, math.nan
    return gain, correlation(even, odd)


def _cycle(y: np.ndarray, period: float) -> np.ndarray:
    """The cycle of ``y``: at each step, the median of its phase over the delevelled full
    cycles (0 where unknown)."""
    p = int(period)
    block = y[: len(y) // p * p]
    if p == period and not np.isnan(block).any():  # as _gain: one cycle per row
        cycles = block.reshape(-1, p)
        middles = (np.arange(len(cycles)) + 0.5) * p - 0.5
        x = block - np.interp(np.arange(block.size), middles, medians_along(cycles, 1))
        return np.resize(medians_along(x.reshape(-1, p), 0), len(y))
    x, _, phase = _delevelled(y, period)
    profile = _phase_profile(x, phase, int(math.ceil(period)), np.flatnonzero(np.isfinite(x)))
    every = np.floor(np.mod(np.arange(len(y)), period)).astype(np.int64)
    return np.nan_to_num(profile[every])


def _explained(x: np.ndarray, residuals: np.ndarray) -> float:
    """``1 - v(residuals) / v(x)`` (NaN when ``x`` is constant), where ``v`` is the robust
    variance: the mean square about the median, each deviation clipped at :data:`CLIP` robust
    sd (1.4826 · MAD), unmoved by a few spikes. Both in one pass over the two rows, each
    deviation divided by its row's clip level (so no square overflows or underflows)."""
    dev = np.stack((x, residuals))
    dev -= medians_along(dev, 1)[:, None]
    size = np.abs(dev)
    lo, hi = (x.size - 1) // 2, x.size // 2
    size.partition((lo, hi) if hi != lo else lo, axis=1)
    limit = CLIP * 1.4826 * (0.5 * (size[:, lo] + size[:, hi]))
    if not limit[0] > 0:
        return math.nan
    if not limit[1] > 0:  # the residuals are mostly 0: all clipped to 0
        return 1.0
    dev /= limit[:, None]
    np.minimum(dev, 1.0, out=dev)
    np.maximum(dev, -1.0, out=dev)
    spread, res_spread = np.square(dev, out=dev).sum(axis=1)
    ratio = float(limit[1]) / float(limit[0])  # inf when it overflows (a gain of -inf)
    return 1.0 - float(res_spread) / float(spread) * ratio * ratio


def _value_candidates(y: np.ndarray) -> list[list[float]]:
    """Whole periods at the strongest peaks of the first differences' periodogram (NaN filled
    by the previous value), between 2 steps and half the series: for each peak, the whole
    periods within two frequency bins of it (a bin is ``1/n`` wide, and leakage and noise
    move the peak of a frequency between bins, so on a short series a peak does not pin the
    period to one whole number); the ranges of neighbouring peaks are merged, shortest
    periods first."""
    filled = y
    missing = np.isnan(y)
    if missing.any():
        if missing.all():
            return []
        idx = np.where(~missing, np.arange(y.size), 0)
        np.maximum.accumulate(idx, out=idx)
        filled = y[idx]
        filled[: int(np.flatnonzero(~missing)[0])] = filled[int(np.flatnonzero(~missing)[0])]
    d = filled[1:] - filled[:-1]
    if d.size < 4 or not d.any():
        return []
    # scaled by a power of two (exact) so that the power neither underflows nor overflows
    d = np.ldexp(d, -int(np.frexp(np.max(np.abs(d)))[1]))
    spectrum = np.fft.rfft(d)  # the mean only moves the zero frequency, which is left out
    power = np.square(spectrum.real) + np.square(spectrum.imag)
    freq = np.fft.rfftfreq(d.size)
    allowed = (freq > 0) & (freq * (len(y) / MIN_CYCLES) >= 1.0) & (freq < 0.5)
    order = _strongest(np.where(allowed, power, -np.inf), 4 * VALUE_CANDIDATES)
    bin_width = 2.0 / d.size  # two bins: leakage moves a short series's peak
    groups: list[list[float]] = []
    for k in order.tolist():
        if not allowed[k]:
            break
        f = float(freq[k])
        centre = 1.0 / f
        low = max(2, math.ceil(1.0 / (f + bin_width)))
        high = math.floor(1.0 / max(f - bin_width, 1.0 / len(y)))
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


def _strongest(power: np.ndarray, k: int) -> np.ndarray:
    """The indices of the ``k`` largest of ``power``, largest first, ties in index order
    (``np.argsort(-power, kind="stable")[:k]``, without sorting the whole array)."""
    if power.size <= k:
        return np.argsort(-power, kind="stable")
    level = np.partition(power, power.size - k)[power.size - k]
    top = np.flatnonzero(power >= level)  # every tie of the k-th too, in index order
    return top[np.argsort(-power[top], kind="stable")][:k]


def required_gain(n: int, cycles: float = math.inf) -> float:
    """The gain :func:`infer_period` requires of a period that fits ``cycles`` times in a
    series of ``n`` values: :data:`MIN_GAIN`; ``3 / √n`` on a short series (about 3 times the
    99th percentile of the gain of white noise of that length, whatever the period); and
    ``0.6 / √cycles`` (:data:`FEW_CYCLES_GAIN`) for a period proposed by the values (the
    strongest of the periodogram's peaks, chosen from the data): the split-half gain of a
    random walk at such a period spreads more the fewer cycles each half holds (in
    simulations this removed two thirds of the periods accepted on random walks; the
    calendar's periods, fixed in advance, are not held to it).

    Examples
    --------
    >>> required_gain(100), required_gain(10_000)     # 3 / √100; then the floor MIN_GAIN
    (0.3, 0.1)
    >>> required_gain(10_000, cycles=4)                # a period of 2500 steps: 0.6 / √4
    0.3
    """
    return max(MIN_GAIN, 3.0 / math.sqrt(n), FEW_CYCLES_GAIN / math.sqrt(cycles))


def infer_period(values: Any, index: Any = None) -> tuple[float, ...] | None:
    """The periods of the series' cycles, or None when none is shown strongly.

    Candidates come from the time stamps (:func:`calendar_periods`) when ``index`` is given,
    else from the strongest peaks of the periodogram of the first differences (then only the
    shortest accepted one is kept: the other peaks are mostly its harmonics). A candidate is
    accepted when the series holds at least two full periods and, on the series minus the
    cycles accepted before it (shortest first), the profile estimated on half of the cycles
    explains at least 10% (:func:`required_gain`: ``3/√n`` on a short series, ``0.6/√k`` for
    a period from the values that fits ``k`` times) of the robust variance of the other half
    and the two halves' profiles correlate at least 0.5 (:func:`cycle_gain`). The gain is
    about 0 or below for a series without that cycle, whatever its level shifts or trends; in
    simulations no period was accepted on white noise or level shifts, and one on 1–2% of
    random walks and of AR(1) series close to them. A calendar period that is a whole
    multiple of one accepted (a week of a day) may also pass the same test on the daily
    swing's change over the week: each half's profile reduced to the shorter cycle's
    sidebands (:func:`~possibly.changepoint.models.seasonal.sidebands`, those the models
    hold), a few coefficients that two or three weeks show where a profile of 168 phases
    needs many more (benchmarks/bench_period_auto.py). From the values alone, a long cycle
    of finely sampled data (a day of minute data) is damped by the differencing and is not
    found: pass the time index.

    Only a warm-up is read: the first :data:`WARM_UP` (4096) values, or with time stamps,
    :data:`WARM_UP_CYCLES` (16) of the longest calendar cycle when that is longer (16 weeks
    of 5-minute data); the step is the median spacing of the warm-up's stamps. So the cost is
    bounded whatever the length of the series, and the periods of a stream are those of its
    beginning (:class:`~possibly.changepoint.ChangepointDetector` revisits them as a stream
    grows until it holds :func:`warm_up_length` values).

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
    if index is not None:
        stamps = index[: WARM_UP + 1] if np.ndim(index) == 1 else index
        groups = [[p] for p in calendar_periods(stamps)]
        rest = y[:_warm_up(groups)]
    else:
        rest = y[:WARM_UP]
        groups = _value_candidates(rest)
    accepted: list[float] = []
    for group in sorted(groups, key=min):
        scored = []
        best = -math.inf  # a gain below the best accepted one cannot be kept
        for p in group:
            if len(rest) >= MIN_CYCLES * p:
                # a period from the values is the strongest of many peaks: on a random walk
                # its gain is biased up, the more so the fewer cycles (required_gain)
                required = required_gain(len(rest), math.inf if index is not None
                                         else len(rest) / p)
                gain, agreement = _gain(rest, p, max(required, best))
                if not (gain >= max(required, best) and agreement >= MIN_AGREEMENT) and any(
                        whole_multiple(p, q) for q in accepted):
                    # a week of a day: judged on the day's swing that follows the week (the
                    # sidebands of the day that the models hold), which a few weeks show
                    near = max(q for q in accepted if whole_multiple(p, q))
                    held = [j for j in harmonic_numbers((near, p))[1] if j in sidebands(p, near)]
                    gain, agreement = _gain(rest, p, max(required, best), tuple(held))
                if gain >= max(required, best) and agreement >= MIN_AGREEMENT:
                    scored.append((gain, p))
                    best = gain
        if scored:
            period = max(scored)[1]  # of a peak's whole periods, the one explaining most
            accepted.append(period)
            if index is None:
                break  # the periodogram's other peaks are this cycle's harmonics
            # the next candidates are judged on what this cycle leaves
            rest = rest - _cycle(rest, period)
    return tuple(accepted) or None


def _warm_up(groups: list[list[float]]) -> int:
    return max([WARM_UP] + [math.ceil(WARM_UP_CYCLES * g[0]) for g in groups])


def warm_up_length(index: Any = None) -> int:
    """How many values :func:`infer_period` reads: :data:`WARM_UP`, or with time stamps
    ``index`` (or their step), :data:`WARM_UP_CYCLES` of the calendar's longest cycle when that
    is longer. Periods inferred from a longer series are those of its first this many values.

    Parameters
    ----------
    index : pandas DatetimeIndex, datetime64 array or timedelta, optional
        The time stamps, or the sampling step (None: values alone).

    Returns
    -------
    int
        The number of values read.

    Examples
    --------
    >>> import datetime
    >>> warm_up_length(), warm_up_length(datetime.timedelta(hours=1))  # 16 weeks: 2688
    (4096, 4096)
    >>> warm_up_length(datetime.timedelta(minutes=5))                   # 16 weeks: 32256
    32256
    """
    if index is None:
        return WARM_UP
    stamps = index[: WARM_UP + 1] if np.ndim(index) == 1 else index
    return _warm_up([[p] for p in calendar_periods(stamps)])


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
