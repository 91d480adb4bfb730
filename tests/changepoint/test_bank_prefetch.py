"""The compiled bank's hints to the processor (compiled_engine.memory_prefetch) change no
value, whatever they point at, and the calibration's layout they follow is where the step
reads and writes."""

from __future__ import annotations

import numpy as np
import pytest

from possibly.changepoint import numba_available
from possibly.changepoint.anomaly import HEAD, WINDOW, calibrate_one, new_calibration, ring_layout

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


def test_a_hint_changes_nothing_inside_or_outside_the_array():
    import numba

    from possibly.changepoint.compiled_engine import memory_prefetch

    prefetch = memory_prefetch()

    @numba.njit(_nrt=False)
    def hinted_sum(a, b, far):
        total = 0.0
        for i in range(a.shape[0]):
            prefetch(a, i + 8)  # in the array, then past its end
            prefetch(b, far)  # far outside: a wasted hint, never a fault
            total += a[i]
        prefetch(b, -far)
        return total

    a = np.arange(20.0)
    b = np.ones((3, 4))
    before = (a.copy(), b.copy())
    assert hinted_sum(a, b, 1 << 40) == 190.0  # 0 + 1 + ... + 19, by hand
    assert np.array_equal(a, before[0]) and np.array_equal(b, before[1])


def test_the_layout_is_where_the_step_writes():
    """The surprise of each record lands at ``ring + pos`` of ``ring_layout`` before it, and
    the count held grows by one (no period: the surprise is the one given)."""
    state = new_calibration(None)
    for k, s in enumerate((1.5, 2.5, 0.25, 7.0)):
        ring, window, n, pos = ring_layout(state)
        assert (ring, window, n, pos) == (HEAD, WINDOW, k, k)
        calibrate_one(state, float(k), s)
        assert state[ring + pos] == s
    with_period = new_calibration(24)
    assert ring_layout(with_period)[0] == HEAD + 7 * 24  # CYCLES periods of values first
