"""The readers of ``ChangepointDetector`` (``state``, ``state_``, ``history_nbytes``, pickling)
take the instance's guard: while another thread runs fit or update they raise
ConcurrentUseError instead of reading buffers being written; alone, they work as before."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

from possibly.changepoint import ChangepointDetector, detector
from possibly.sequential import ConcurrentUseError

READERS = {
    "state": lambda det: det.state,
    "state_": lambda det: det.state_,
    "history_nbytes": lambda det: det.history_nbytes(),
    "pickle": lambda det: pickle.dumps(det),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_a_reader_refuses_while_another_thread_fits(monkeypatch, reader):
    det = ChangepointDetector(sigma=1.0, engine="numpy")
    det.fit(np.zeros(5))
    inside, leave = threading.Event(), threading.Event()
    original = detector.step

    def blocking_step(*args, **kwargs):
        inside.set()
        assert leave.wait(30)
        return original(*args, **kwargs)

    monkeypatch.setattr(detector, "step", blocking_step)
    worker = threading.Thread(target=det.extend, args=(np.ones(3),))
    worker.start()
    try:
        assert inside.wait(30)
        with pytest.raises(ConcurrentUseError):
            READERS[reader](det)
    finally:
        leave.set()
        worker.join()
    monkeypatch.undo()
    assert det.t == 8
    READERS[reader](det)  # the fit over: the reader works again


@pytest.mark.parametrize("engine", ["numpy", "auto"])
def test_readers_and_pickling_work_streaming_and_not(engine):
    y = np.r_[np.zeros(30), np.full(30, 5.0)]
    det = ChangepointDetector(sigma=1.0, engine=engine)
    for x in y[:40]:
        det.update(x)  # streaming (the compiled step where numba is installed)
    for read in READERS.values():
        read(det)
    assert det.state.t == det.state_.t == 40
    copy = pickle.loads(pickle.dumps(det))
    det.extend(y[40:])  # not streaming any more
    for read in READERS.values():
        read(det)
    copy.extend(y[40:])
    ref = ChangepointDetector(sigma=1.0, engine=engine).fit(y)
    for got in (det, copy):
        np.testing.assert_array_equal(got.result().discount, ref.discount)
        np.testing.assert_array_equal(got.result().change_possibility, ref.change_possibility)
