"""Particle possibility functions: a possibility function known at particles.

A :class:`ParticlePossibility` is a possibility function known at particles (drawn at random
or chosen): the operations of :mod:`possibly.pointwise.grid` (combine, consistency, robust
update, E*, credibility) apply unchanged. The robust particle filter built on it is
:class:`possibly.filters.particle_filter.ParticleFilter`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from possibly.pointwise._common import normalised
from possibly.pointwise.grid import PointPossibility
from possibly.validation import as_finite

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["ParticlePossibility"]


@dataclass(frozen=True, eq=False, repr=False)
class ParticlePossibility(PointPossibility):
    """A possibility function known at particles.

    Parameters
    ----------
    particles : array_like, shape (n,) or (n, k)
        Points of a one- or k-dimensional parameter (any spread: drawn at random, or chosen).
    log_values : array_like, shape (n,)
        Log possibility at the particles, normalised here to a maximum of 0.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> theta = np.random.default_rng(0).uniform(0.0, 1.0, 20000)   # explore [0, 1]
    >>> prior = ps.ParticlePossibility(theta, np.zeros(theta.size))   # uninformative
    >>> post = ps.combine(prior, ps.likelihood.binomial(7, 10))
    >>> round(float(post.mode), 2)
    0.7
    >>> round(post.credibility(lambda th: th < 0.5), 2)   # B̄(0.5; 7, 3) = (5/7)**7 (5/3)**3
    0.44
    """

    particles: np.ndarray
    log_values: np.ndarray

    if TYPE_CHECKING:  # the fields are arrays; the constructor takes array-likes
        def __init__(self, particles: ArrayLike, log_values: ArrayLike) -> None: ...

    def __post_init__(self) -> None:
        x = as_finite("particles", self.particles)
        if x.ndim not in (1, 2) or x.shape[0] < 1:
            raise ValueError(f"particles must have shape (n,) or (n, k) with n >= 1, got "
                             f"{x.shape}")
        lv = np.asarray(self.log_values, dtype=np.float64)
        if lv.shape != (x.shape[0],):
            raise ValueError(f"log_values must have shape ({x.shape[0]},), one per particle, "
                             f"got {lv.shape}")
        object.__setattr__(self, "particles", x)
        object.__setattr__(self, "log_values", normalised("log_values", lv))

    _univariate: ClassVar[bool] = False

    def __repr__(self) -> str:
        return f"ParticlePossibility(n={len(self.particles)}, mode={self.mode!r})"

    def _flat_points(self) -> np.ndarray:
        return self.particles

    def _flat_log_values(self) -> np.ndarray:
        return self.log_values

    def _with_log_values(self, flat: np.ndarray) -> ParticlePossibility:
        return ParticlePossibility(self.particles, flat)

    def log_possibility(self, x) -> np.ndarray:
        raise TypeError("a ParticlePossibility is known only at its particles: use "
                        ".log_values, or a GridPossibility to evaluate anywhere")
