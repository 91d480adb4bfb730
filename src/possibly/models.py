"""Linear-Gaussian state-space models (moved to :mod:`possibly.filters.state_space`).

Kept so that ``possibly.models.constant_velocity`` and ``possibly.models.LinearGaussianModel``
stay importable.
"""

from possibly.filters.state_space import (
    LinearGaussianModel,
    constant_velocity,
    constant_velocity_noise,
)

__all__ = ["LinearGaussianModel", "constant_velocity", "constant_velocity_noise"]
