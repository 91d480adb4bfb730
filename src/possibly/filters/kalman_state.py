"""The state and the per-step info of the linear Kalman filters.

:class:`KalmanState` is a batch of normal possibility functions of the state, in covariance
form once every direction is informed and in information form (a possibly singular
precision) before; :class:`KalmanInfo` is what an update learnt about its observation.
Both are shared by :class:`~possibly.filters.kalman.KalmanFilter`, its learned noise scale
(:mod:`possibly.filters.noise_scale`) and the robust start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from possibly.families.multivariate_normal import MultivariateNormal
from possibly.filters._common import _maybe_covariance_form, _sym
from possibly.sequential import Info

__all__ = ["KalmanInfo", "KalmanState"]


@dataclass(frozen=True)
class KalmanState:
    """A batch of normal possibility functions ``N̄(θ; mean, ·)`` of the state.

    Exactly one of ``covariance`` and ``precision`` is set: the covariance form is used once
    every direction of the state is informed, the information form (precision, possibly
    singular) before that.

    Attributes
    ----------
    mean : ndarray, shape (..., n)
    covariance : ndarray, shape (..., n, n), or None
    precision : ndarray, shape (..., n, n), or None
    t : int
        Number of observations absorbed so far (picks the transition of a time-varying model).
    """

    mean: np.ndarray
    covariance: np.ndarray | None = None
    precision: np.ndarray | None = None
    t: int = 0

    @classmethod
    def uninformative(cls, n: int, batch_shape: tuple[int, ...] = ()) -> KalmanState:
        """The possibility function 1 on ``R^n`` (precision 0)."""
        return cls(np.zeros(batch_shape + (n,)), None, np.zeros(batch_shape + (n, n)))

    @classmethod
    def from_possibility(cls, f: MultivariateNormal) -> KalmanState:
        """Covariance form if every precision is well conditioned, information form otherwise."""
        if not isinstance(f, MultivariateNormal):
            raise ValueError(f"prior must be a possibly.MultivariateNormal (or None for the "
                             f"uninformative prior), got {type(f).__name__}")
        return _maybe_covariance_form(cls(f.mean, None, f.precision))

    @property
    def information_form(self) -> bool:
        return self.precision is not None

    def to_possibility(self) -> MultivariateNormal:
        """The state as a :class:`possibly.MultivariateNormal` (mean, precision)."""
        prec = self.precision if self.precision is not None else np.linalg.inv(
            cast(np.ndarray, self.covariance))
        return MultivariateNormal(self.mean, _sym(prec))


@dataclass(frozen=True)
class KalmanInfo(Info):
    """What an update learnt about its observation (NaN where the observation is missing).

    Attributes
    ----------
    log_consistency : ndarray
        ``log c`` (kept in log space: gross outliers underflow ``c``).
    discount : ndarray
        The exponent ρ applied to the likelihood (``gamma``, 1 above the threshold, or 1 for
        the standard filter).
    gamma : ndarray
        ``c ** (1 / dim)``.
    """

    gamma: Any

