"""One typed protocol for every sequential application (change points, filters, estimators).

Each application is a pure pair, in the style of blackjax, ``state = init(batch_shape)`` and
``state, info = step(state, y)``, under a thin class: a subclass of the abstract, generic
``SequentialEstimator[State, Info, Result]`` implements ``init``, ``step`` and ``fit`` and
inherits ``update`` (streaming), ``reset`` and ``state``. The conventions shared by all:

* **state**: a frozen dataclass; ``step`` returns a new one;
* **constructor**: at most one positional argument (the model, if any), then keywords only;
* **time axis**: a series has shape ``(..., T, *event)``: batch dimensions, time, then the
  shape of one observation (``()`` for scalars, ``(m,)`` for vectors);
* **missing data**: an observation containing a NaN is missing; the step only predicts and
  its ``Info`` has ``log_consistency`` and ``discount`` NaN;
* **Info**: every step returns an :class:`Info` (or a subclass) with ``log_consistency``
  (``log c`` of the observation with the prediction) and ``discount`` (the exponent applied
  to the likelihood, :func:`possibly.inference.discount`);
* **results**: ``fit(y)`` returns ``log_consistency`` and ``discount`` of shape ``(..., T)``;
  ``c`` underflows for gross outliers, so a ``consistency`` is only a property derived from
  ``log_consistency``;
* **threads**: an instance used by ``fit`` or ``update`` from two threads at once raises
  :class:`ConcurrentUseError` (a ``RuntimeError``) instead of giving silently wrong results;
  the pure ``init``/``step`` are safe from any thread.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = [
    "ConcurrentUseError",
    "Info",
    "InfoT",
    "ResultT",
    "SequentialEstimator",
    "StateT",
    "is_missing",
    "time_first",
]


@dataclass(frozen=True)
class Info:
    """What one observation did; subclasses add application-specific fields.

    Attributes
    ----------
    log_consistency : ndarray or float
        ``log c`` of the observation with the predicted possibility function, batch shape;
        NaN where the observation was missing.
    discount : ndarray or float
        The exponent applied to the likelihood (``γ = c^(1/d)``, 1 above a threshold ``τ`` or
        for a standard update); NaN where the observation was missing.
    """

    log_consistency: Any
    discount: Any

    @property
    def consistency(self) -> Any:
        """``c = exp(log_consistency)`` in ``[0, 1]``."""
        return np.exp(self.log_consistency)


class ConcurrentUseError(RuntimeError):
    """An estimator instance was used from two threads at once."""


def is_missing(y: np.ndarray, event_ndim: int) -> np.ndarray:
    """True where an observation (the last ``event_ndim`` axes) contains a NaN."""
    y = np.asarray(y)
    missing = np.isnan(y)
    if event_ndim:
        missing = missing.any(axis=tuple(range(-event_ndim, 0)))
    return missing


def time_first(y: np.ndarray, event_ndim: int) -> np.ndarray:
    """A view of ``(..., T, *event)`` as ``(T, ..., *event)``, for looping over time."""
    return np.moveaxis(np.asarray(y), -1 - event_ndim, 0)


#: The type of an estimator's state (a frozen dataclass).
StateT = TypeVar("StateT")
#: The type of the :class:`Info` one step returns (covariant: an estimator whose steps return
#: a subclass of :class:`Info` is a ``SequentialEstimator[..., Info, ...]``).
InfoT = TypeVar("InfoT", bound=Info, covariant=True)
#: The type of the result of ``fit`` (covariant).
ResultT = TypeVar("ResultT", covariant=True)

_E = TypeVar("_E", bound="SequentialEstimator[Any, Any, Any]")


class SequentialEstimator(ABC, Generic[StateT, InfoT, ResultT]):
    """Abstract base of the thin stateful wrappers around a pure ``init``/``step`` pair.

    Subclasses name their types, ``class MyFilter(SequentialEstimator[MyState, MyInfo,
    MyResult])``, and implement :meth:`init`, :meth:`step` and :meth:`fit`; this class
    supplies the streaming :meth:`update`, :meth:`reset`, the current :attr:`state`, the
    guard against concurrent use (see the module docstring) and pickling (the guard's lock
    is not pickled; a fresh one is made on first use).

    Examples
    --------
    >>> import numpy as np
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Count:
    ...     n: np.ndarray
    >>> class Counter(SequentialEstimator[Count, Info, np.ndarray]):
    ...     def init(self, batch_shape=()):
    ...         return Count(np.zeros(batch_shape))
    ...     def step(self, state, y):
    ...         return Count(state.n + 1), Info(log_consistency=0.0, discount=1.0)
    ...     def fit(self, y):
    ...         return np.arange(1.0, np.shape(y)[-1] + 1)
    >>> est = Counter()
    >>> info = est.update(3.0)
    >>> info = est.update(4.0)
    >>> float(est.state.n), est.reset().state
    (2.0, None)
    """

    _state: StateT | None = None

    @abstractmethod
    def init(self, batch_shape: tuple[int, ...] = ()) -> StateT:
        """The state before any observation, for ``batch_shape`` independent series."""

    @abstractmethod
    def step(self, state: StateT, y: Any) -> tuple[StateT, InfoT]:
        """One observation: ``(new_state, info)``; pure, ``state`` is not modified."""

    @abstractmethod
    def fit(self, y: Any) -> ResultT:
        """Process a whole series ``(..., T, *event)`` from :meth:`init`."""

    @property
    def state(self) -> StateT | None:
        """The state after the observations given to :meth:`update` so far (None before)."""
        return self._state

    def update(self, y: Any) -> InfoT:
        """Process one observation from the current state (streaming); returns its Info."""
        with self._exclusive():
            state = self.init() if self._state is None else self._state
            state, info = self.step(state, y)
            object.__setattr__(self, "_state", state)  # also on frozen dataclasses
            return info

    def reset(self: _E) -> _E:
        """Forget the streamed observations; returns ``self``."""
        with self._exclusive():
            object.__setattr__(self, "_state", None)
        return self

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        lock = self._acquire()
        try:
            yield
        finally:
            lock.release()

    def _acquire(self) -> Any:
        """The guard's lock, acquired (the caller releases it): :meth:`_exclusive` without
        the cost of a context manager, for steps that cost little more than it."""
        lock = self.__dict__.get("_busy")
        if lock is None:
            lock = self.__dict__.setdefault("_busy", threading.Lock())
        if not lock.acquire(blocking=False):
            raise ConcurrentUseError(
                f"this {type(self).__name__} is already running fit or update in another "
                "thread; use one instance per thread (the pure init/step functions are "
                "thread-safe)")
        return lock

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_busy", None)  # locks do not pickle; a fresh one is made on first use
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)
