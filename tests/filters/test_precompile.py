"""Compiling the Kalman filters' loops ahead of time: every loop of engine="numba" runs, and the
process's engine="auto" runs them afterwards."""

import numpy as np
import pytest

import possibly as ps
from possibly.filters import _common
from possibly.filters.precompile import compile_loops


def test_every_loop_runs_and_auto_uses_them_after(count_calls):
    pytest.importorskip("numba")
    from possibly.filters import kalman_numba, noise_scale_numba, smoother_numba

    # (kalman_numba.run is called by its step kernel too: not replaced, or numba cannot type it)
    counts = {f"{module.__name__}.{name}": count_calls(module, name) for module, name in (
        (kalman_numba, "run_start"), (kalman_numba, "step"), (smoother_numba, "backward"),
        (noise_scale_numba, "run"))}
    assert compile_loops([(2, 1)]) == [(2, 1)]
    assert all(counts.values()), {k: len(v) for k, v in counts.items()}
    assert {("filter", 2, 1), ("smoother", 2), ("noise scale", 2, 1)} <= \
        _common.AUTO_HISTORY.loaded
    starts = counts["possibly.filters.kalman_numba.run_start"]
    before = len(starts)
    ps.KalmanFilter(ps.filters.constant_velocity()).filter(np.arange(30.0))  # small: compiled
    assert len(starts) == before + 1


@pytest.mark.parametrize("shapes", [[(1, 2)], [(0, 0)], [(2,)], [(2.5, 1)], [], [(65, 1)],
                                    None, [("2", "1")]])
def test_bad_shapes_are_refused_by_name(shapes):
    with pytest.raises(ValueError, match="^shapes must be pairs of integers"):
        compile_loops(shapes)


def test_without_numba_a_clear_error(monkeypatch):
    import sys

    for name in ("kalman_numba", "smoother_numba", "noise_scale_numba"):
        monkeypatch.setitem(sys.modules, f"possibly.filters.{name}", None)  # import fails
        monkeypatch.delattr(ps.filters, name, raising=False)
    with pytest.raises(ValueError, match=r"engine='numba' needs numba: pip install"):
        compile_loops([(2, 1)])
