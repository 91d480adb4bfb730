"""The repeats channel of the anomaly signal is a valid p-value on short discrete streams:
exact values from fractions, and the false-alarm rate simulated from the first record."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import possibly as ps
from possibly.changepoint import anomaly

R = anomaly.REPEATS


def _counts(values: list[float]) -> np.ndarray:
    counts = np.zeros(R + 1)
    counts[:len(values)] = values
    return counts


def _predictive(a: int, b: int, m: int) -> Fraction:
    """``E[q^m]`` for ``q ~ Beta(a, b)``: ``Π_{i<m} (a + i) / (a + b + i)``."""
    return math.prod((Fraction(a + i, a + b + i) for i in range(m)), start=Fraction(1))


def test_the_channel_by_exact_fractions():
    # within the earlier runs: the rank (1 + C_r) / (1 + N)
    counts = _counts([50, 10, 4, 1])
    for run, want in [(1, Fraction(11, 51)), (2, Fraction(5, 51)), (3, Fraction(2, 51))]:
        assert anomaly.repeat_p_value(float(run), counts) == pytest.approx(float(want), rel=1e-14)
    # beyond every earlier run (the longest, 3, reached by 1 < MIN_TRIALS records): the rank
    for run in (4, 7, 10, 25):
        assert anomaly.repeat_p_value(float(run), counts) == pytest.approx(1 / 51, rel=1e-14)
    # beyond the longest (2), reached by 12 >= MIN_TRIALS records of which 0 continued: the top
    # rank times the Beta(1, 13) predictive of the repeats after the first one past it
    counts = _counts([80, 30, 12])
    for run in (3, 4, 6, 10, 14):
        want = Fraction(1, 81) * _predictive(1, 13, run - 3)
        assert anomaly.repeat_p_value(float(run), counts) == pytest.approx(float(want),
                                                                           rel=1e-11)
    # a stream that never repeated in 200 records, then freezes
    counts = _counts([200])
    for run in (1, 2, 3, 30):
        want = Fraction(1, 201) * _predictive(1, 201, run - 1)
        assert anomaly.repeat_p_value(float(run), counts) == pytest.approx(float(want),
                                                                           rel=1e-11)
    # earlier runs beyond REPEATS: the rank at R times the last ratio's predictive, floored
    counts = _counts([500, 200, 150, 120, 100, 90, 80, 70, 60, 50, 40])
    for run in (11, 20, 60, 400):
        want = max(Fraction(41, 501) * _predictive(41, 11, run - R), Fraction(1, 501))
        assert anomaly.repeat_p_value(float(run), counts) == pytest.approx(float(want),
                                                                           rel=1e-12)
    assert anomaly.repeat_p_value(0.0, counts) == 1.0


def _repeats_only(y: np.ndarray) -> np.ndarray:
    """The channel alone: without a surprise (NaN, no period) the other two are 1."""
    state, out = anomaly.new_calibration(None), np.empty(len(y))
    anomaly.calibrate(state, y, np.full(len(y), np.nan), out)
    return out


_STREAMS = {
    "rounded noise": lambda rng, n: np.round(rng.normal(size=n)),
    "Poisson(0.2)": lambda rng, n: rng.poisson(0.2, n).astype(float),
    "Bernoulli(0.3)": lambda rng, n: (rng.random(n) < 0.3).astype(float),
    "90% idle": lambda rng, n: np.where(rng.random(n) < 0.9, 0.0,
                                        np.round(rng.exponential(size=n), 1)),
}


@pytest.mark.parametrize("kind", list(_STREAMS))
def test_short_discrete_streams_alarm_at_most_at_the_level(kind):
    # scored from the first record, 200 records each: the share of records at or above 1 − α
    # of the channel alone (it is 1 − min(1, 3 p₃)) and of the whole signal
    seeds = range(150)
    streams = [_STREAMS[kind](np.random.default_rng(seed), 200) for seed in seeds]
    alone = np.concatenate([_repeats_only(y) for y in streams])
    for alpha in (0.05, 0.01, 1e-3):
        assert np.mean(alone >= 1.0 - alpha) <= alpha
    signal = np.concatenate([ps.ChangepointDetector().fit(y).anomaly for y in streams[:60]])
    assert np.mean(signal >= 0.99) <= 0.01


def test_a_constant_stream_is_never_frozen():
    y = np.full(3000, 7.0)
    assert _repeats_only(y).max() == 0.0  # p₃ = 1 / 2: the run began with one record
    assert ps.ChangepointDetector().fit(y).anomaly.max() < 0.99


def test_a_reading_that_freezes_after_moving_is_still_extreme():
    rng = np.random.default_rng(3)
    y = rng.normal(size=600)
    y[500:520] = y[499]
    a = _repeats_only(y)
    assert a[:500].max() == 0.0
    # above every earlier run: 3 / (1 + N), N the 500 records counted with forgetting 1 / W
    keep = Fraction(anomaly.WINDOW - 1, anomaly.WINDOW)
    n = sum(keep**k for k in range(500))
    assert a[500] == pytest.approx(float(1 - 3 / (1 + n)), rel=1e-12)
    assert a[502] > 1.0 - 1e-6  # then extrapolated: about Beta(1, N + 1)


@pytest.mark.skipif(not ps.changepoint.numba_available(), reason="numba not installed")
def test_the_compiled_channel_gives_the_python_numbers_on_frozen_stretches():
    # the extrapolation beyond the earlier runs decides these anomalies (no surprise: the
    # other channels are 1), and a batch may be calibrated by either engine: bit for bit
    from possibly.changepoint import anomaly_numba

    for seed in range(60):
        rng = np.random.default_rng(seed)
        y = np.round(rng.normal(size=300), 1)
        start = int(rng.integers(30, 250))
        y[start:start + int(rng.integers(3, 40))] = y[start - 1]
        nan = np.full(len(y), np.nan)
        python, compiled = np.empty(len(y)), np.empty(len(y))
        anomaly.calibrate(anomaly.new_calibration(None), y, nan, python)
        anomaly_numba.calibrate(anomaly.new_calibration(None), y, nan, compiled)
        np.testing.assert_array_equal(compiled, python)
