"""``KalmanFilter.state`` and pickling take the filter's guard: while another thread runs
update they raise ConcurrentUseError instead of copying buffers being written in place."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

import possibly as ps
from possibly.filters import KalmanFilter
from possibly.sequential import ConcurrentUseError

READERS = {"state": lambda kf: kf.state, "pickle": lambda kf: pickle.dumps(kf)}


def random_walk() -> KalmanFilter:
    """A filter that streams through the compiled step (where numba is installed) from the
    second observation."""
    return KalmanFilter(ps.filters.constant_velocity(), robust_start=False,
                        prior=ps.MultivariateNormal(np.zeros(2), np.eye(2)))


@pytest.mark.parametrize("reader", list(READERS))
def test_a_reader_refuses_while_another_thread_updates(monkeypatch, reader):
    kf = random_walk()
    inside, leave = threading.Event(), threading.Event()
    original = KalmanFilter.step

    def blocking_step(self, *args, **kwargs):
        inside.set()
        assert leave.wait(30)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(KalmanFilter, "step", blocking_step)
    worker = threading.Thread(target=kf.update, args=(1.0,))
    worker.start()
    try:
        assert inside.wait(30)
        with pytest.raises(ConcurrentUseError):
            READERS[reader](kf)
    finally:
        leave.set()
        worker.join()
    monkeypatch.undo()
    assert kf.state.t == 1
    READERS[reader](kf)


def test_state_and_pickling_while_streaming():
    y = np.sin(np.arange(50.0))
    kf = random_walk()
    for x in y[:30]:
        kf.update(x)
    assert kf.state.t == 30
    copy = pickle.loads(pickle.dumps(kf))
    for x in y[30:]:
        kf.update(x)
        copy.update(x)
    np.testing.assert_array_equal(kf.state.mean, copy.state.mean)
    np.testing.assert_array_equal(kf.state.covariance, copy.state.covariance)
