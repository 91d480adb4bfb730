"""A calibrated, causal anomaly signal per record: each stream against its own recent past.

The anomaly of record ``t`` is one minus a conformal p-value: the rank of its surprise among
the surprises of the stream's previous records (at most :data:`WINDOW` of them). The same
threshold then means the same false-alarm rate on every stream, whatever its units, resolution
or tails, and no scale floor is needed (docs: The mathematics, §6; Monitoring streams): the
rate is bounded exactly for the model's surprise, approximately with a period (conservatively
on white noise).

The surprise of record ``t`` is

* with a period ``P`` (in records): ``|x_t − mean(x_u, u < t)|``, the residual
  ``x_t = y_t − median(y_{t−P}, …, y_{t−kP})`` (the same phase over the previous
  ``k = CYCLES`` periods, those observed) measured against the mean of all earlier residuals;
* without a period: the value given, the detector's ``−log c_t`` (the surprise of the
  segment model).

Interface (for a bank of streams): a stream's whole state is one flat float64 array of fixed
size :func:`calibration_size`, made by :func:`new_calibration`; :func:`calibrate_one` ``(state,
value) -> anomaly`` advances it by one record (NaN: a missing record, anomaly 0) and
:func:`calibrate` ``(state, values, out)`` by many. Both are plain Python on floats, which
:mod:`possibly.changepoint.anomaly_numba` compiles unchanged, so a compiled loop over many
streams can call the same step on each row of a ``(streams, size)`` array. A state holds
``8 + CYCLES · P + WINDOW + CYCLES`` floats (16 kB without a period); a step is one pass
over the window's surprises (exact ranks).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["CYCLES", "MAX_PERIOD", "WINDOW", "calibrate", "calibrate_one", "count_below",
           "calibration_size", "check_period", "new_calibration", "peek_one", "state_period"]

#: previous periods whose same-phase median is the cycle removed from a record
CYCLES = 7
#: surprises each record is ranked against (the most recent ones)
WINDOW = 2000
#: the largest period accepted (the state holds CYCLES periods of values)
MAX_PERIOD = 1_000_000

# state layout: a header, then the last CYCLES · P values (by t mod CYCLES · P), the last
# WINDOW surprises (a ring), and CYCLES cells of scratch for the median
_PERIOD, _CYCLES, _WINDOW, _T, _N_REF, _MEAN_REF, _N_WIN, _POS = range(8)
HEAD = 8


def check_period(period: Any) -> int | None:
    """``period`` checked: None, or a whole number of records in ``[2, MAX_PERIOD]``.

    A float that is a whole number (within ``1e-9``, as :func:`~possibly.changepoint.infer_period`
    returns: ``24.0``) counts as that integer; a period that is not a whole number of records
    (``365.2425``) is refused: round it, or give it to a
    :class:`~possibly.changepoint.SeasonalTrend`, which takes any period.

    Examples
    --------
    >>> check_period(24), check_period(24.0), check_period(None)
    (24, 24, None)
    """
    if period is None:
        return None
    message = (f"period must be None or a whole number of records in [2, {MAX_PERIOD}], got "
               f"{period!r} (an int, or a float that is a whole number, as 24.0)")
    if isinstance(period, (bool, np.bool_)):
        raise ValueError(message)
    if isinstance(period, (float, np.floating)):
        if not np.isfinite(period) or abs(period - round(period)) > 1e-9:
            raise ValueError(message[:-1] + ": round it; the anomaly signal compares whole "
                                               "records)")
        period = int(round(period))
    if not isinstance(period, (int, np.integer)) or not 2 <= int(period) <= MAX_PERIOD:
        raise ValueError(message)
    return int(period)


def calibration_size(period: int | None, window: int = WINDOW, cycles: int = CYCLES) -> int:
    """Length of a stream's state array (fixed by the settings).

    Examples
    --------
    >>> calibration_size(None) == HEAD + WINDOW + CYCLES
    True
    """
    return HEAD + cycles * (period or 0) + window + cycles


def new_calibration(period: int | None, window: int = WINDOW, cycles: int = CYCLES
                    ) -> np.ndarray:
    """The state of a stream before any record: ``period`` as the detector's (None: no
    cycle), ranks among the last ``window`` surprises, the cycle's median over ``cycles``
    previous periods.

    Examples
    --------
    >>> state = new_calibration(None)
    >>> [calibrate_one(state, s) for s in (1.0, 3.0, 2.0, 5.0)]
    [0.0, 0.5, 0.3333333333333333, 0.75]
    """
    p = check_period(period) or 0
    for name, value in (("window", window), ("cycles", cycles)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    state = np.zeros(calibration_size(p, window, cycles))
    state[_PERIOD], state[_CYCLES], state[_WINDOW] = p, cycles, window
    state[HEAD:HEAD + cycles * p] = math.nan
    return state


def count_below(values: np.ndarray, level: float) -> int:
    """``#{i : values[i] < level}`` (numpy; the compiled step counts in a plain loop,
    :mod:`possibly.changepoint.anomaly_numba`, which numba vectorises).

    Examples
    --------
    >>> count_below(np.array([3.0, 1.0, 2.0, 5.0]), 2.5)
    2
    """
    return int(np.count_nonzero(values < level))


def calibrate_one(state: np.ndarray, value: float) -> float:
    """Advance ``state`` by one record and return its anomaly in ``[0, 1)``.

    ``value`` is the observation (with a period) or the record's surprise (without); NaN is
    a missing record: anomaly 0, nothing ranked, the time advanced. The anomaly is
    ``#{u : s_u < s_t} / (n + 1)`` over the ``n`` surprises ``s_u`` kept (the last
    :data:`WINDOW`), 0 for the first surprise; with a period, 0 while no earlier period of
    the record's phase has been observed.

    Examples
    --------
    >>> state = new_calibration(None)
    >>> calibrate_one(state, 2.0), calibrate_one(state, 1.0), calibrate_one(state, 4.0)
    (0.0, 0.0, 0.6666666666666666)
    >>> calibrate_one(state, float("nan"))       # missing: not ranked
    0.0
    """
    period = int(state[_PERIOD])
    cycles = int(state[_CYCLES])
    window = int(state[_WINDOW])
    t = int(state[_T])
    span = cycles * period
    win = HEAD + span
    x = value
    if period > 0:
        if value == value:
            # the median of the same phase over the previous periods (insertion sort)
            scratch = win + window
            m = 0
            for j in range(1, cycles + 1):
                if t - j * period < 0:
                    break
                v = state[HEAD + (t - j * period) % span]
                if v == v:
                    i = m
                    while i > 0 and state[scratch + i - 1] > v:
                        state[scratch + i] = state[scratch + i - 1]
                        i -= 1
                    state[scratch + i] = v
                    m += 1
            if m == 0:
                x = math.nan
            else:
                x = value - 0.5 * (state[scratch + (m - 1) // 2] + state[scratch + m // 2])
        state[HEAD + t % span] = value
    state[_T] = t + 1
    if x != x:
        return 0.0
    if period > 0:  # the long-memory reference: the mean of every earlier residual
        n_ref = state[_N_REF]
        mean = state[_MEAN_REF]
        state[_N_REF] = n_ref + 1.0
        state[_MEAN_REF] = mean + (x - mean) / (n_ref + 1.0)
        if n_ref == 0.0:
            return 0.0
        surprise = abs(x - mean)
    else:
        surprise = x
    n = int(state[_N_WIN])
    below = count_below(state[win:win + n], surprise)
    pos = int(state[_POS])
    state[win + pos] = surprise
    state[_POS] = (pos + 1) % window
    state[_N_WIN] = min(n + 1, window)
    return below / (n + 1.0)


def state_period(state: np.ndarray) -> int | None:
    """The period of a stream's state (None: no cycle).

    Examples
    --------
    >>> state_period(new_calibration(24)), state_period(new_calibration(None))
    (24, None)
    """
    return int(state[_PERIOD]) or None


def peek_one(state: np.ndarray, value: float) -> float:
    """The anomaly :func:`calibrate_one` ``(state, value)`` would return, ``state`` unchanged:
    the rank of the would-be surprise among the kept ones, without inserting it (numpy; a
    scorer that must not learn, such as river's ``score_one``).

    Examples
    --------
    >>> state = new_calibration(None)
    >>> [calibrate_one(state, s) for s in (1.0, 3.0, 2.0)]
    [0.0, 0.5, 0.3333333333333333]
    >>> peek_one(state, 5.0), peek_one(state, 2.5), calibrate_one(state, 5.0)
    (0.75, 0.5, 0.75)
    """
    period = int(state[_PERIOD])
    t = int(state[_T])
    span = int(state[_CYCLES]) * period
    win = HEAD + span
    if value != value:
        return 0.0
    surprise = value
    if period > 0:
        lags = t - period * np.arange(1, int(state[_CYCLES]) + 1)
        same_phase = state[HEAD + lags[lags >= 0] % span]
        same_phase = np.sort(same_phase[~np.isnan(same_phase)])
        m = same_phase.size
        if m == 0 or state[_N_REF] == 0.0:
            return 0.0
        x = value - 0.5 * (same_phase[(m - 1) // 2] + same_phase[m // 2])
        surprise = abs(x - state[_MEAN_REF])
    n = int(state[_N_WIN])
    return count_below(state[win:win + n], surprise) / (n + 1.0)


def calibrate(state: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
    """:func:`calibrate_one` of each of ``values`` in turn, the anomalies written to ``out``.

    Examples
    --------
    >>> state, out = new_calibration(None), np.empty(4)
    >>> calibrate(state, np.array([1.0, 3.0, np.nan, 5.0]), out)
    >>> out.tolist()
    [0.0, 0.5, 0.0, 0.6666666666666666]
    """
    for i in range(values.shape[0]):
        out[i] = calibrate_one(state, values[i])
