"""Checks every sequential estimator must pass (the protocol of :mod:`possibly.sequential`).

``tests/test_conformance.py`` drives these over every sequential class; a new class only
needs a :class:`Case` there (and a :class:`FilterCase` for a state-space filter).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import pkgutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import possibly
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


# -- the typed protocol ----------------------------------------------------------------------
def _frozen_dataclass_problems(value: Any, where: str) -> list[str]:
    """Why ``value`` (a state, or a part of one) breaks the state convention: a state is a
    frozen dataclass, and so is every dataclass or named tuple inside it."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return [f"{where} is a NamedTuple ({type(value).__name__}), not a frozen dataclass"]
    if isinstance(value, (tuple, list)):
        return [p for i, v in enumerate(value)
                for p in _frozen_dataclass_problems(v, f"{where}[{i}]")]
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return []
    if not type(value).__dataclass_params__.frozen:
        return [f"{where} ({type(value).__name__}) is a dataclass that is not frozen"]
    return [p for f in dataclasses.fields(value)
            for p in _frozen_dataclass_problems(getattr(value, f.name), f"{where}.{f.name}")]


def check_state_is_frozen_dataclass(case: Case) -> None:
    """The state before and after a step is a frozen dataclass (one convention)."""
    est = case.make()
    state = est.init()
    new, _ = est.step(state, case.series[0])
    for name, value in (("init()", state), ("step(...)[0]", new)):
        assert dataclasses.is_dataclass(value) and not isinstance(value, type), (
            f"{case.name}: the state {name} is a {type(value).__name__}, not a frozen "
            "dataclass")
        problems = _frozen_dataclass_problems(value, f"the state {name}")
        assert not problems, f"{case.name}: " + "; ".join(problems)


ALL_CHECKS = [check_protocol, check_update_equals_fit, check_pickle_resume,
              check_missing_is_predict_only, check_batch_equals_loop, check_threads,
              check_state_is_frozen_dataclass]


def sequential_classes() -> list[type[SequentialEstimator]]:
    """Every concrete :class:`SequentialEstimator` subclass defined in the library.

    Imports every module of :mod:`possibly` first (but ``__main__``), so that a class is
    found wherever it lives.
    """
    for module in pkgutil.walk_packages(possibly.__path__, "possibly."):
        if module.name.rsplit(".", 1)[-1] == "__main__":
            continue
        try:
            importlib.import_module(module.name)
        except ModuleNotFoundError as exc:  # an integration whose extra is not installed
            if (exc.name or "possibly").split(".")[0] == "possibly":
                raise
    found: dict[str, type[SequentialEstimator]] = {}
    stack: list[type] = [SequentialEstimator]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if sub.__module__.startswith("possibly.") and not inspect.isabstract(sub):
                found[f"{sub.__module__}.{sub.__qualname__}"] = sub
    return [found[name] for name in sorted(found)]


#: Models given as several parts: the Kalman filters take ``(F, Q, H, R)`` as the model (or a
#: LinearGaussianModel alone), the particle filter its transition, the transition's
#: log-possibility and the log-likelihood.
MODEL_PARTS = {
    "KalmanFilter": ("model", "Q", "H", "R"),
    "NoiseScaleKalmanFilter": ("model", "Q", "H", "R"),
    "ParticleFilter": ("transition", "transition_logpossibility", "loglik"),
}


def check_constructor_keywords(cls: type) -> None:
    """Only the model is positional: every setting after it is keyword-only.

    The model is one parameter, or the parts listed in :data:`MODEL_PARTS`. The signature is
    the one a call sees (``inspect.signature`` of the class, which follows a custom
    ``__new__``), so ``*args`` counts as positional.
    """
    params = inspect.signature(cls).parameters.values()
    positional = [p.name for p in params if p.kind in (
        p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    parts = MODEL_PARTS.get(cls.__name__)
    allowed = positional == list(parts) if parts else len(positional) <= 1
    assert allowed and not any(p.kind is p.VAR_POSITIONAL for p in params), (
        f"{cls.__module__}.{cls.__qualname__} takes {positional} positionally: only the model "
        "is positional, the settings after it must be keyword-only")


# -- state-space filters ---------------------------------------------------------------------
#: The verbs every state-space filter has.
FILTER_VERBS = ("fit", "filter", "smooth", "update", "step", "predict", "reset", "init")


@dataclass
class FilterCase:
    """One state-space filter under test: ``make()`` builds it, ``frame`` is a pandas
    DataFrame (rows: time, with a DatetimeIndex; columns: the observation's components)."""

    name: str
    make: Callable[[], Any]
    frame: Any

    def __str__(self) -> str:
        return self.name


def check_filter_verbs(case: FilterCase) -> None:
    """A SequentialEstimator with every verb of :data:`FILTER_VERBS`."""
    est = case.make()
    assert isinstance(est, SequentialEstimator)
    missing = [verb for verb in FILTER_VERBS if not callable(getattr(est, verb, None))]
    assert not missing, f"{case.name} ({type(est).__name__}) has no {', '.join(missing)}"


def check_filter_frame_keeps_index(case: FilterCase) -> None:
    """``filter(frame).to_frame()`` has one row per time, indexed by the input's index."""
    import pandas as pd

    res = case.make().filter(case.frame)
    assert callable(getattr(res, "to_frame", None)), (
        f"{case.name}: {type(res).__name__} has no to_frame")
    out = res.to_frame()
    assert isinstance(out.index, pd.DatetimeIndex), (
        f"{case.name}: to_frame() lost the DatetimeIndex (got {type(out.index).__name__})")
    assert out.index.equals(case.frame.index)
    assert np.shape(res.log_consistency)[-1] == len(case.frame)


FILTER_CHECKS = [check_filter_verbs, check_filter_frame_keeps_index]
