"""A calibrated, causal anomaly signal per record: each stream against its own recent past.

The anomaly of record ``t`` is one minus a p-value, three times the smallest of three
(Bonferroni), each calibrated on the stream's own last :data:`WINDOW` records, so that one
threshold means about one false-alarm rate on every stream, whatever its units, resolution
or tails (docs: The mathematics, §6; Monitoring streams): the record's surprise, ranked and
beyond the window's maximum extrapolated by a fitted generalised Pareto tail
(:func:`upper_p_value`); Fisher's sum over the last :data:`SPAN` records' p-values, ranked in
turn (a sustained deviation); the run of exact repeats of the value (a frozen reading,
:func:`repeat_p_value`). The surprise is, with a period ``P``, ``|x_t − mean(x_u, u < t)|``
for the residual ``x_t = y_t − median(y_{t−P}, …, y_{t−kP})`` (``k = CYCLES``, the observed
ones), and without one the detector's ``−log c_t`` (the segment model's surprise).

A stream's whole state is one flat float64 array of fixed size :func:`calibration_size`
(:func:`new_calibration`; 32.8 kB without a period, 34.1 kB with ``P = 24``);
:func:`calibrate_one` ``(state, y, surprise) -> anomaly`` advances it by one record (a NaN
``y``: missing, anomaly 0) and :func:`calibrate` by many. Both are plain Python on floats,
which :mod:`possibly.changepoint.anomaly_numba` compiles unchanged with their helpers, so a
compiled loop over many streams (a bank) calls the same step on each row of a
``(streams, size)`` array. A step is two passes over the window's statistics (exact ranks),
and one more when a statistic is beyond its window's maximum.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["CHANNELS", "CYCLES", "MAX_PERIOD", "MAX_SHAPE", "MIN_TRIALS", "REPEATS", "SPAN",
           "TAIL", "TINY_P", "WINDOW", "beyond_p_value", "calibrate", "calibrate_one",
           "calibration_size", "check_period", "check_state", "count_at_least", "insert_sorted",
           "new_calibration", "peek_one", "repeat_p_value", "ring_layout", "state_period",
           "upper_p_value"]

#: previous periods whose same-phase median is the cycle removed from a record
CYCLES = 7
#: surprises each record is ranked against (the most recent ones)
WINDOW = 2000
#: the largest period accepted (the state holds CYCLES periods of values)
MAX_PERIOD = 1_000_000
#: records whose conformal p-values the sustained channel combines
SPAN = 10
#: the largest surprises of the window the tail beyond its maximum is fitted to
TAIL = 50
#: the largest tail index of the fitted tail (a heavier estimate is cut to it)
MAX_SHAPE = 0.9
#: the run lengths of exact repeats counted (a longer run continues at the last ratio)
REPEATS = 10
#: the channels combined (record, sustained, repeats): the Bonferroni factor
CHANNELS = 3
#: a p-value below which the repeats' predictive stops (``1 − CHANNELS · p`` rounds to 1)
TINY_P = 1e-20
#: the records that must have reached the longest earlier run before the repeats channel
#: extrapolates beyond it
MIN_TRIALS = 10

# state layout: a header, then the last CYCLES · P values (by t mod CYCLES · P), the last
# WINDOW surprises and WINDOW sustained statistics (two rings sharing a position), the last
# SPAN records' −log p (a ring), and scratch cells for the median and the tail's largest values
# (the header ends with the REPEATS + 1 counts of repeat_p_value, then the same counts as
# they were at the start of the current run)
_PERIOD, _CYCLES, _WINDOW, _T, _N_REF, _MEAN_REF, _N_WIN, _POS, _N_RECENT, _LAST_Y, _RUN = range(11)
_COUNTS = 11
HEAD = _COUNTS + 2 * (REPEATS + 1)


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
    """Length of a stream's state array (fixed by the settings): the header, ``cycles``
    periods of values, two rings of ``window`` statistics, :data:`SPAN` recent surprises and
    scratch.

    Examples
    --------
    >>> calibration_size(None) == HEAD + 2 * WINDOW + SPAN + TAIL + 1
    True
    """
    return HEAD + cycles * (period or 0) + 2 * window + SPAN + max(cycles, TAIL + 1)


def new_calibration(period: int | None, window: int = WINDOW, cycles: int = CYCLES
                    ) -> np.ndarray:
    """The state of a stream before any record: ``period`` as the detector's (None: no
    cycle), ranks among the last ``window`` statistics, the cycle's median over ``cycles``
    previous periods.

    Examples
    --------
    >>> state = new_calibration(None)
    >>> [calibrate_one(state, s, s) for s in (1.0, 3.0, 2.0, 5.0)]  # 5: p = 1/4 (of 3 ranked)
    [0.0, 0.0, 0.0, 0.25]
    """
    p = check_period(period) or 0
    for name, value in (("window", window), ("cycles", cycles)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    state = np.zeros(calibration_size(p, window, cycles))
    state[_PERIOD], state[_CYCLES], state[_WINDOW] = p, cycles, window
    state[_LAST_Y] = math.nan
    state[HEAD:HEAD + cycles * p] = math.nan
    return state


def count_at_least(values: np.ndarray, level: float) -> int:
    """``#{i : values[i] >= level}`` (numpy; the compiled step counts in a plain loop,
    :mod:`possibly.changepoint.anomaly_numba`, which numba vectorises).

    Examples
    --------
    >>> count_at_least(np.array([3.0, 1.0, 2.0, 5.0]), 2.0)
    3
    """
    return int(np.count_nonzero(values >= level))


def insert_sorted(buffer: np.ndarray, m: int, value: float) -> None:
    """Insert ``value`` into the sorted ``buffer[:m]`` (``buffer[:m + 1]`` sorted after).

    Examples
    --------
    >>> b = np.array([1.0, 4.0, 0.0])
    >>> insert_sorted(b, 2, 2.0); b.tolist()
    [1.0, 2.0, 4.0]
    """
    i = m
    while i > 0 and buffer[i - 1] > value:
        buffer[i] = buffer[i - 1]
        i -= 1
    buffer[i] = value


def beyond_p_value(values: np.ndarray, level: float, scratch: np.ndarray) -> float:
    """The p-value of ``level`` above every one of the ``n`` window ``values``: the
    conformal ``1 / (n + 1)`` times the survival beyond ``max(values)`` of a generalised
    Pareto tail fitted to the excesses of the ``k = min(TAIL, n − 1)`` largest values over the
    ``(k + 1)``-th (probability-weighted moments, the tail index cut to ``[0, MAX_SHAPE]``;
    exponential at 0). With ``k < 10`` or no spread among the largest values: ``1 / (n + 1)``.
    ``scratch`` holds at least ``TAIL + 1`` cells (overwritten).

    Examples
    --------
    The window 1..100: the 51 largest, 50..100, excesses 1..50 over 50 (tail index 0 after
    the cut, mean excess 25.5), so 10 above the maximum has survival ``exp(−10 / 25.5)``:

    >>> p = beyond_p_value(np.arange(1.0, 101.0), 110.0, np.empty(TAIL + 1))
    >>> bool(abs(p - math.exp(-10 / 25.5) / 101) < 1e-15)
    True
    """
    n = values.shape[0]
    k = min(TAIL, n - 1)
    if k < 10:
        return 1.0 / (n + 1.0)
    # the k + 1 largest values, in decreasing order
    m = 0
    total = 0.0
    for i in range(n):
        v = values[i]
        total += v
        if m <= k:
            j = m
            m += 1
        elif v > scratch[k]:
            j = k
        else:
            continue
        while j > 0 and scratch[j - 1] < v:
            scratch[j] = scratch[j - 1]
            j -= 1
        scratch[j] = v
    u = scratch[k]
    # probability-weighted moments of the excesses (Hosking & Wallis 1987): the j-th smallest
    # weighted by 1 − (j − 0.35) / k
    a0 = 0.0
    a1 = 0.0
    for i in range(k):
        e = scratch[i] - u
        a0 += e
        a1 += e * (1.0 - (k - i - 0.35) / k)
    a0 /= k
    a1 /= k
    if not a0 > 0.0:
        return 1.0 / (n + 1.0)
    d = a0 - 2.0 * a1
    shape = 2.0 - a0 / d if d > 0.0 else MAX_SHAPE
    shape = min(max(shape, 0.0), MAX_SHAPE)
    scale = a0 * (1.0 - shape)  # the mean excess of a generalised Pareto is scale / (1 − shape)
    # at least the exponential scale of the whole window, from its mean (survival e^-1 for an
    # exponential) to its maximum (survival 1 / (n + 1)): the largest values of a quantised
    # metric cluster at a few levels, whose spread says nothing of the gap to the next level
    scale = max(scale, (scratch[0] - total / n) / (math.log(n + 1.0) - 1.0))
    z = level - scratch[0]
    if shape == 0.0:
        survival = math.exp(-z / scale)
    else:  # beyond the maximum: the tail's survival there, relative to the maximum's
        survival = math.exp(-math.log1p(shape * z / (scale + shape * (scratch[0] - u))) / shape)
    return survival / (n + 1.0)


def upper_p_value(values: np.ndarray, level: float, scratch: np.ndarray) -> float:
    """The conformal p-value ``(1 + #{v ≥ level}) / (n + 1)`` of ``level`` against the ``n``
    window ``values`` (1 for an empty window), extrapolated beyond their maximum by
    :func:`beyond_p_value`.

    Examples
    --------
    >>> scratch = np.empty(TAIL + 1)
    >>> upper_p_value(np.array([3.0, 1.0, 2.0]), 2.0, scratch)  # (1 + 2) / 4
    0.75
    >>> upper_p_value(np.array([3.0, 1.0, 2.0]), 9.0, scratch)  # too few: 1 / 4
    0.25
    """
    n = values.shape[0]
    if n == 0:
        return 1.0
    at_least = count_at_least(values, level)
    if at_least > 0:
        return (1.0 + at_least) / (n + 1.0)
    return beyond_p_value(values, level, scratch)


def repeat_p_value(run: float, counts: np.ndarray) -> float:
    """The p-value of a run of ``run`` exact repeats of the previous value, from ``counts``:
    ``counts[0]`` records, ``counts[j]`` records that ended a run of at least ``j`` repeats
    (``j = 1, …, REPEATS``); 1 without a repeat.

    Within the earlier runs (at least half a counted record reached ``run``), it is the
    conformal rank of the run, ``(1 + counts[run]) / (1 + counts[0])``. Beyond every earlier
    run, whose longest counted length ``M`` was reached by at least :data:`MIN_TRIALS`
    records, it is ``1 / (1 + counts[0])`` (the rank at the top) times the Beta posterior
    predictive ``E[q^m] = B(a + m, b) / B(a, b)`` of the ``m = run − M − 1`` repeats beyond the
    first one past ``M``, ``q`` the continuation probability at ``M`` under a uniform prior
    (``a − 1 = counts[M + 1]`` continued, ``b − 1 = counts[M] − counts[M + 1]`` stopped); with
    fewer such records, the rank alone (a short or never-moving stream cannot look frozen).
    Beyond ``R = REPEATS`` when earlier runs reached it, the rank at ``R`` times the
    predictive of the ``run − R`` further steps at the last ratio counted, ``(counts[R] + k) /
    (counts[R − 1] + 1 + k)`` for the ``k``-th, at least ``1 / (1 + counts[0])``.

    Examples
    --------
    A constant stream (one record counted when its run began) is never surprising; a stream
    that never repeated in 99 records: its first repeat is above every earlier run, ``p =
    1 / 100``, and the next one has probability ``1 / 101`` under the Beta(1, 100) posterior:

    >>> counts = np.zeros(REPEATS + 1)
    >>> counts[0] = 1.0
    >>> float(repeat_p_value(50.0, counts))
    0.5
    >>> counts[0] = 99.0
    >>> float(repeat_p_value(1.0, counts)), bool(abs(repeat_p_value(2.0, counts) * 10100 - 1)
    ...                                          < 1e-12)
    (0.01, True)
    """
    if run < 1.0:
        return 1.0
    top = counts.shape[0] - 1
    total = 1.0 + counts[0]
    length = int(min(run, top))
    if run <= top and counts[length] >= 0.5:  # within the earlier runs: the rank
        return (1.0 + counts[length]) / total
    longest = length
    while longest > 0 and counts[longest] < 0.5:
        longest -= 1
    if longest == top:  # beyond the lengths counted: the last ratio's predictive
        floor = 1.0 / total
        p = (1.0 + counts[top]) / total
        i = 0.0
        while top + i < run and p > floor:
            p *= (counts[top] + 1.0 + i) / (counts[top - 1] + 2.0 + i)
            i += 1.0
        return max(p, floor)
    p = (1.0 + counts[length]) / total
    if counts[longest] < MIN_TRIALS:
        return p
    a = counts[longest + 1] + 1.0
    b = max(counts[longest] - counts[longest + 1], 0.0) + 1.0
    # E[q^m] = B(a + m, b) / B(a, b) as its product (no lgamma: CPython's and the C library's
    # differ in the last bits), stopped once p is below TINY_P, where 1 − 3p rounds to 1
    i = 0.0
    while i < run - longest - 1.0 and p > TINY_P:
        p *= (a + i) / (a + b + i)
        i += 1.0
    return p


def calibrate_one(state: np.ndarray, y: float, surprise: float) -> float:
    """Advance ``state`` by one record and return its anomaly in ``[0, 1]``.

    ``y`` is the observation, ``surprise`` the segment model's ``−log c`` (used without a
    period); a NaN ``y`` is a missing record: anomaly 0, nothing ranked, the time advanced.
    The anomaly is ``1 − min(1, CHANNELS · min(p₁, p₂, p₃))`` (Bonferroni) over three
    p-values, each 1 while it has nothing to compare with:

    * ``p₁``: the record's surprise ``s_t`` against the last :data:`WINDOW` surprises,
      :func:`upper_p_value` (a conformal rank, extrapolated beyond the window's maximum);
    * ``p₂``: Fisher's ``−Σ log b_u`` over the last :data:`SPAN` records' conformal
      p-values ``b_u`` (without the extrapolation) against the last :data:`WINDOW` such
      sums, the same way (a sustained deviation);
    * ``p₃``: :func:`repeat_p_value` of the run of exact repeats of ``y`` ending at the
      record, the counts over the records forgotten at rate ``1 / WINDOW`` (a frozen reading).

    The surprise is the model's (no period) or, with a period, ``|x_t − mean(x_u, u < t)|``
    for the residual ``x_t`` from the median of the same phase over the previous periods
    (none while no earlier period of the record's phase has been observed).

    Examples
    --------
    >>> state = new_calibration(None)
    >>> [round(calibrate_one(state, y, s), 6) for y, s in [(0.0, 2.0), (1.0, 1.0), (0.5, 4.0)]]
    [0.0, 0.0, 0.0]
    >>> calibrate_one(state, float("nan"), float("nan"))       # missing: not ranked
    0.0
    """
    period = int(state[_PERIOD])
    cycles = int(state[_CYCLES])
    window = int(state[_WINDOW])
    t = int(state[_T])
    span = cycles * period
    ring = HEAD + span
    recent = ring + 2 * window
    scratch = recent + SPAN
    state[_T] = t + 1
    if y != y:
        if period > 0:
            state[HEAD + t % span] = math.nan  # skipped by the medians
        return 0.0
    # a frozen reading: the run of exact repeats, its p-value from the counts before it
    run = state[_RUN] + 1.0 if y == state[_LAST_Y] else 0.0
    state[_LAST_Y] = y
    state[_RUN] = run
    # against the counts of the records before this run (a run does not calibrate itself)
    p = repeat_p_value(run, state[_COUNTS + REPEATS + 1:HEAD])
    keep = 1.0 - 1.0 / window
    for j in range(REPEATS + 1):
        state[_COUNTS + j] = keep * state[_COUNTS + j] + (1.0 if run >= j else 0.0)
        if run == 0.0:
            state[_COUNTS + REPEATS + 1 + j] = state[_COUNTS + j]
    s = surprise
    if period > 0:
        # the median of the same phase over the previous periods (insertion sort)
        m = 0
        for j in range(1, cycles + 1):
            if t - j * period < 0:
                break
            v = state[HEAD + (t - j * period) % span]
            if v == v:
                insert_sorted(state[scratch:], m, v)
                m += 1
        state[HEAD + t % span] = y
        if m == 0:
            return 1.0 - min(1.0, CHANNELS * p)
        x = y - 0.5 * (state[scratch + (m - 1) // 2] + state[scratch + m // 2])
        # the long-memory reference: the mean of every earlier residual
        n_ref = state[_N_REF]
        mean = state[_MEAN_REF]
        state[_N_REF] = n_ref + 1.0
        state[_MEAN_REF] = mean + (x - mean) / (n_ref + 1.0)
        if n_ref == 0.0:
            return 1.0 - min(1.0, CHANNELS * p)
        s = abs(x - mean)
    if s != s:
        return 1.0 - min(1.0, CHANNELS * p)
    # the record's conformal p-value, extrapolated beyond the window's maximum
    n = int(state[_N_WIN])
    at_least = count_at_least(state[ring:ring + n], s)
    body = (1.0 + at_least) / (n + 1.0)
    p = min(p, body if at_least > 0 or n == 0
            else beyond_p_value(state[ring:ring + n], s, state[scratch:]))
    # the sustained statistic: Fisher's −Σ log of the last SPAN records' conformal p-values
    # (without the extrapolation: one extreme record cannot dominate it), ranked in turn
    n_recent = int(state[_N_RECENT])
    state[recent + n_recent % SPAN] = -math.log(body)
    state[_N_RECENT] = n_recent + 1
    sustained = 0.0  # summed oldest first
    first = 0 if n_recent + 1 < SPAN else (n_recent + 1) % SPAN
    for j in range(min(n_recent + 1, SPAN)):
        sustained += state[recent + (first + j) % SPAN]
    p = min(p, upper_p_value(state[ring + window:ring + window + n], sustained,
                             state[scratch:]))
    pos = int(state[_POS])
    state[ring + pos] = s
    state[ring + window + pos] = sustained
    state[_POS] = (pos + 1) % window
    state[_N_WIN] = min(n + 1, window)
    return 1.0 - min(1.0, CHANNELS * p)


def ring_layout(state: np.ndarray) -> tuple[int, int, int, int]:
    """Where the next :func:`calibrate_one` of ``state`` reads its statistics: the offset of
    the ring of surprises (the sustained statistics follow ``window`` floats later, then the
    last :data:`SPAN` records' ``−log p``), ``window``, the number of statistics held and the
    position the next one is written at (a compiled bank hints these to the processor).

    Examples
    --------
    >>> state = new_calibration(None)
    >>> for s in (1.0, 2.0, 3.0):
    ...     _ = calibrate_one(state, s, s)
    >>> ring_layout(state) == (HEAD, WINDOW, 3, 3)
    True
    """
    ring = HEAD + int(state[_CYCLES]) * int(state[_PERIOD])
    return ring, int(state[_WINDOW]), int(state[_N_WIN]), int(state[_POS])


def state_period(state: np.ndarray) -> int | None:
    """The period of a stream's state (None: no cycle).

    Examples
    --------
    >>> state_period(new_calibration(24)), state_period(new_calibration(None))
    (24, None)
    """
    return int(state[_PERIOD]) or None


def check_state(state: np.ndarray) -> np.ndarray:
    """``state`` checked as a stream's state of this layout (a state pickled by another
    version of the library has another size, and the compiled step does not check bounds).

    Examples
    --------
    >>> check_state(new_calibration(24)).size == calibration_size(24)
    True
    >>> check_state(new_calibration(None)[:2015])  # as the previous layout held it
    Traceback (most recent call last):
    ...
    ValueError: the anomaly signal's state holds 2015 floats where this version needs ...
    """
    state = np.asarray(state)
    need = math.inf
    if state.ndim == 1 and state.dtype == np.float64 and state.size > _WINDOW:
        header = state[[_PERIOD, _CYCLES, _WINDOW]]
        if np.all(np.isfinite(header)) and np.all(header >= 0) and np.all(header < 2**31):
            period, cycles, window = (int(v) for v in header)
            need = calibration_size(period or None, window, cycles)
    if not state.size >= need:
        shown = calibration_size(None) if need == math.inf else need
        raise ValueError(f"the anomaly signal's state holds {state.size} floats where this "
                         f"version needs at least {shown} (it was saved by another version of "
                         f"possibly): fit the detector again")
    return state


def peek_one(state: np.ndarray, y: float, surprise: float) -> float:
    """The anomaly :func:`calibrate_one` ``(state, y, surprise)`` would return, ``state``
    unchanged (it runs on a copy: a scorer that must not learn, such as river's
    ``score_one``).

    Examples
    --------
    >>> state = new_calibration(None)
    >>> for s in range(1, 40):
    ...     _ = calibrate_one(state, float(s), float(s % 7))
    >>> peek_one(state, 50.0, 9.0) == calibrate_one(state, 50.0, 9.0)
    True
    """
    return calibrate_one(state.copy(), y, surprise)


def calibrate(state: np.ndarray, ys: np.ndarray, surprises: np.ndarray, out: np.ndarray
              ) -> None:
    """:func:`calibrate_one` of each of ``ys`` (and ``surprises``) in turn, the anomalies
    written to ``out``.

    Examples
    --------
    >>> state, out = new_calibration(None), np.empty(4)
    >>> calibrate(state, np.array([1.0, 3.0, np.nan, 5.0]), np.ones(4), out)
    >>> out.tolist()
    [0.0, 0.0, 0.0, 0.0]
    """
    for i in range(ys.shape[0]):
        out[i] = calibrate_one(state, ys[i], surprises[i])
