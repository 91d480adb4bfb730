"""State-space filters on one model object (docs/architecture.md: the applications layer).

* :mod:`~possibly.filters.state_space`: :class:`LinearGaussianModel` ``(F, Q, H, R)`` and
  :func:`constant_velocity`;
* :mod:`~possibly.filters.kalman`: the possibilistic, robust :class:`KalmanFilter` (pure
  ``init``/``step`` kernels, a :class:`~possibly.sequential.SequentialEstimator`);
* :mod:`~possibly.filters.smoother`: :func:`smooth`, the RTS smoother as a pure function of
  the model and the filtered states;
* :mod:`~possibly.filters.particle_filter`: the robust :class:`ParticleFilter` (nonlinear models, or
  built from a :class:`LinearGaussianModel`).
* :mod:`~possibly.filters.nonlinear`: :class:`NonlinearModel` and the robust
  :class:`ExtendedKalmanFilter` and :class:`UnscentedKalmanFilter`;
* :mod:`~possibly.filters.noise_scale`: :class:`NoiseScaleKalmanFilter`, R known up to a
  scale learned online.
"""

from possibly.filters.kalman import (
    FilterResult,
    KalmanFilter,
    KalmanInfo,
    KalmanState,
    MostlyDiscountedWarning,
)
from possibly.filters.noise_scale import NoiseScaleKalmanFilter
from possibly.filters.nonlinear import (
    ExtendedKalmanFilter,
    NonlinearModel,
    UnscentedKalmanFilter,
)
from possibly.filters.particle_filter import (
    GaussianNoise,
    ParticleFilter,
    ParticleFilterResult,
    ParticleFilterState,
    ParticleInfo,
    ParticleSmootherResult,
)
from possibly.filters.smoother import SmootherResult, smooth
from possibly.filters.state_space import (
    LinearGaussianModel,
    constant_velocity,
    constant_velocity_noise,
)

__all__ = [
    "ExtendedKalmanFilter",
    "FilterResult",
    "GaussianNoise",
    "KalmanFilter",
    "KalmanInfo",
    "KalmanState",
    "LinearGaussianModel",
    "MostlyDiscountedWarning",
    "NoiseScaleKalmanFilter",
    "NonlinearModel",
    "ParticleFilter",
    "ParticleFilterResult",
    "ParticleFilterState",
    "ParticleInfo",
    "ParticleSmootherResult",
    "SmootherResult",
    "UnscentedKalmanFilter",
    "constant_velocity",
    "constant_velocity_noise",
    "smooth",
]
