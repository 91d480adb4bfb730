"""compile_kernels: the change-point detector's kernels compiled (or loaded) into numba's
cache, and a clear error without numba."""

import pytest

from possibly.changepoint import detector as detector_module
from possibly.changepoint.kernel_cache import DETECTORS, compile_kernels


def test_every_detector_runs_compiled():
    pytest.importorskip("numba")
    from possibly.changepoint import anomaly_numba

    assert compile_kernels() == list(DETECTORS)
    # the long batch's calibration ran compiled (short batches run it in Python until the
    # compiled code is at hand), so its kernel is loaded in this process
    assert anomaly_numba.calibrate.signatures


def test_without_numba_a_clear_error(monkeypatch):
    monkeypatch.setattr(detector_module, "numba_available", lambda: False)
    with pytest.raises(ValueError, match=r"needs numba: pip install 'possibly\[fast\]'"):
        compile_kernels()
