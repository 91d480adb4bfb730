"""State-space filters on one model object (docs/architecture.md: the applications layer).

* :mod:`~possibly.filters.state_space`: :class:`LinearGaussianModel` ``(F, Q, H, R)`` and
  :func:`constant_velocity`;
* :mod:`~possibly.filters.kalman`: the possibilistic, robust :class:`KalmanFilter` (pure
  ``init``/``step`` kernels, a :class:`~possibly.sequential.SequentialEstimator`);
* :mod:`~possibly.filters.smoother`: :func:`smooth`, the RTS smoother as a pure function of
  the model and the filtered states;
* :mod:`~possibly.filters.particles`: the robust :class:`ParticleFilter` (nonlinear models, or
  built from a :class:`LinearGaussianModel`).
"""

from possibly.filters.kalman import FilterResult, KalmanFilter, KalmanInfo, KalmanState
from possibly.filters.particles import (
    GaussianNoise,
    ParticleFilter,
    ParticleFilterResult,
    ParticleFilterState,
    ParticleInfo,
)
from possibly.filters.smoother import SmootherResult, smooth
from possibly.filters.state_space import LinearGaussianModel, constant_velocity

__all__ = [
    "FilterResult",
    "GaussianNoise",
    "KalmanFilter",
    "KalmanInfo",
    "KalmanState",
    "LinearGaussianModel",
    "ParticleFilter",
    "ParticleFilterResult",
    "ParticleFilterState",
    "ParticleInfo",
    "SmootherResult",
    "constant_velocity",
    "smooth",
]
