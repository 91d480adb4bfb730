"""The compiled bank's hints to the processor (compiled_engine.memory_prefetch) change no
value, whatever they point at, and the calibration's layout they follow is where the step
reads and writes."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from possibly.changepoint import numba_available
from possibly.changepoint.anomaly import HEAD, WINDOW, calibrate_one, new_calibration, ring_layout

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


@functools.cache
def _hinted_sum():
    """A sum hinting in and far out of its arrays, compiled once and kept for the process:
    a compiled function dropped leaves a dead reference in numba's JIT engine, which river's
    memory check (tests/integrations) walks into from any compiled detector."""
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

    return hinted_sum


def test_a_hint_changes_nothing_inside_or_outside_the_array():
    hinted_sum = _hinted_sum()
    a = np.arange(20.0)
    b = np.ones((3, 4))
    before = (a.copy(), b.copy())
    assert hinted_sum(a, b, 1 << 40) == 190.0  # 0 + 1 + ... + 19, by hand
    assert np.array_equal(a, before[0]) and np.array_equal(b, before[1])
    # the hints were emitted (not compiled away)
    assert "llvm.prefetch" in hinted_sum.inspect_llvm(hinted_sum.signatures[0])


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


def test_the_layout_wraps_with_the_rings():
    """A window of 4 over 6 records: the position wraps to the oldest, the count stops at
    the window, and the sustained statistic lands ``window`` floats after the surprise."""
    state = new_calibration(None, window=4)
    for k in range(6):
        ring, window, n, pos = ring_layout(state)
        assert (window, n, pos) == (4, min(k, 4), k % 4)
        calibrate_one(state, float(k), 1.0 + k)
        assert state[ring + pos] == 1.0 + k
        # the sustained statistic: Fisher's sum of the last records' -log p, 0 for the first
        # record (p = 1 against an empty window), then positive (each surprise the largest)
        assert (state[ring + window + pos] > 0.0) == (k > 0)
