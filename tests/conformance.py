"""Checks every sequential estimator must pass (the protocol of :mod:`possibly.sequential`).

``tests/test_conformance.py`` drives these over every sequential class; a new class only
needs a :class:`Case` there.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from possibly.sequential import ConcurrentUseError, Info, SequentialEstimator


@dataclass
class Case:
    """One sequential class under test.

    ``make()`` builds a fresh estimator; ``series`` has shape ``(T, *event)`` with
    ``event_ndim`` event axes; ``batch`` says whether ``fit`` takes leading batch axes.
    """

    name: str
    make: Callable[[], SequentialEstimator]
    series: np.ndarray
    event_ndim: int = 0
    batch: bool = True
    rtol: float = 1e-10

    def __str__(self) -> str:
        return self.name


def _trace(infos: list[Info]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([np.asarray(i.log_consistency, dtype=float) for i in infos]),
            np.array([np.asarray(i.discount, dtype=float) for i in infos]))


def _close(a, b, rtol: float) -> None:
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=rtol, atol=1e-300, equal_nan=True)


def check_protocol(case: Case) -> None:
    est = case.make()
    assert isinstance(est, SequentialEstimator)
    state = est.init()
    state2, info = est.step(state, case.series[0])
    assert isinstance(info, Info)
    # pure: stepping the same state again gives the same info
    _, info2 = est.step(state, case.series[0])
    _close(info.log_consistency, info2.log_consistency, 0.0)
    _close(info.discount, info2.discount, 0.0)


def check_update_equals_fit(case: Case) -> None:
    res = case.make().fit(case.series)
    assert np.shape(res.log_consistency)[-1] == len(case.series)
    est = case.make()
    lc, disc = _trace([est.update(y) for y in case.series])
    _close(lc, res.log_consistency, case.rtol)
    _close(disc, res.discount, case.rtol)


def check_pickle_resume(case: Case) -> None:
    y = case.series
    half = len(y) // 2
    ref = case.make()
    ref_infos = [ref.update(v) for v in y]
    est = case.make()
    first = [est.update(v) for v in y[:half]]
    est = pickle.loads(pickle.dumps(est))
    rest = [est.update(v) for v in y[half:]]
    for a, b in zip(_trace(first + rest), _trace(ref_infos), strict=True):
        _close(a, b, 0.0)


def check_missing_is_predict_only(case: Case) -> None:
    y = np.array(case.series, dtype=float, copy=True)
    k = len(y) // 2
    y[k] = np.nan
    res = case.make().fit(y)
    assert np.isnan(res.log_consistency[k]) and np.isnan(res.discount[k])
    others = np.delete(np.asarray(res.discount, dtype=float), k)
    assert np.isfinite(others).all()


def check_batch_equals_loop(case: Case) -> None:
    if not case.batch:
        return
    y = case.series
    other = y[::-1].copy()
    both = case.make().fit(np.stack([y, other]))
    for i, series in enumerate((y, other)):
        single = case.make().fit(series)
        _close(np.asarray(both.log_consistency)[i], single.log_consistency, case.rtol)
        _close(np.asarray(both.discount)[i], single.discount, case.rtol)


def check_threads(case: Case, n_threads: int = 8) -> None:
    """Concurrent fits on one instance give the sequential result or raise clearly."""
    ref = case.make().fit(case.series)
    est = case.make()
    outcomes: list[Any] = []
    barrier = threading.Barrier(n_threads)

    def work() -> None:
        barrier.wait()
        for _ in range(3):
            try:
                outcomes.append(est.fit(case.series))
            except ConcurrentUseError as exc:
                outcomes.append(exc)

    threads = [threading.Thread(target=work) for _ in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(outcomes) == 3 * n_threads
    for out in outcomes:
        if isinstance(out, ConcurrentUseError):
            continue
        _close(out.log_consistency, ref.log_consistency, 0.0)
        _close(out.discount, ref.discount, 0.0)


ALL_CHECKS = [check_protocol, check_update_equals_fit, check_pickle_resume,
              check_missing_is_predict_only, check_batch_equals_loop, check_threads]
