"""State-space filters on one model object (docs/architecture.md: the applications layer).

* :mod:`~possibly.filters.state_space`: :class:`LinearGaussianModel` ``(F, Q, H, R)`` and
  :func:`constant_velocity`;
* :mod:`~possibly.filters.kalman`: the possibilistic, robust :class:`KalmanFilter` (pure
  ``init``/``step`` kernels, a :class:`~possibly.sequential.SequentialEstimator`), with an
  optional learned noise scale (:class:`NoiseScaleKalmanFilter`);
* :mod:`~possibly.filters.filter_result`: :class:`FilterResult`, the one result type of the
  Gaussian filters; :mod:`~possibly.filters.kalman_state`: :class:`KalmanState`,
  :class:`KalmanInfo`;
* :mod:`~possibly.filters.smoother`: :func:`smooth`, the RTS smoother as a pure function of
  the model and the filtered states;
* :mod:`~possibly.filters.particle_filter`: the robust :class:`ParticleFilter` (nonlinear models, or
  built from a :class:`LinearGaussianModel`).
* :mod:`~possibly.filters.nonlinear`: :class:`NonlinearModel` and the robust
  :class:`ExtendedKalmanFilter` and :class:`UnscentedKalmanFilter`;
* :mod:`~possibly.filters.noise_scale`: the recursion of R known up to a scale learned
  online, and its :class:`NoiseScaleResult`.
"""

from possibly.filters.filter_result import FilterResult, MostlyDiscountedWarning
from possibly.filters.kalman import KalmanFilter, NoiseScaleKalmanFilter
from possibly.filters.kalman_state import KalmanInfo, KalmanState
from possibly.filters.noise_scale import NoiseScaleResult
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
    "NoiseScaleResult",
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
