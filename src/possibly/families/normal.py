"""Normal possibility function ``N̄(x; mu, P) = exp(-P (x - mu)**2 / 2)`` (univariate)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from possibly.families.base import ExponentialFamily
from possibly.validation import as_finite, check_nonnegative

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["Normal"]


@dataclass(frozen=True, eq=False, repr=False)
class Normal(ExponentialFamily):
    """Univariate normal possibility function with mean ``mean`` and precision ``precision``.

    ``precision = 0`` is allowed and gives the uninformative function 1. Natural parameters
    ``eta = (P mu, -P/2)`` with ``T(x) = (x, x**2)`` and ``S(eta) = P mu**2 / 2``.

    Parameters
    ----------
    mean : array_like
        Location (E*), any real.
    precision : array_like
        Inverse of V*, ``>= 0``.

    Examples
    --------
    >>> import possibly as ps
    >>> f = ps.Normal(1.0, 4.0)
    >>> float(f.possibility(1.0)), float(f.variance)
    (1.0, 0.25)
    >>> g = ps.combine(f, ps.Normal(2.0, 4.0))
    >>> float(g.mode), float(g.precision)
    (1.5, 8.0)
    """

    mean: np.ndarray
    precision: np.ndarray

    if TYPE_CHECKING:  # the fields are arrays; the constructor takes array-likes
        def __init__(self, mean: ArrayLike, precision: ArrayLike) -> None: ...

    _event_ndims: ClassVar[dict[str, int]] = {"mean": 0, "precision": 0}
    _checks: ClassVar = {"mean": as_finite, "precision": check_nonnegative}
    _natural_ndims: ClassVar[tuple[int, ...]] = (0, 0)
    _univariate: ClassVar[bool] = True

    @property
    def effective_dim(self) -> int:
        return 1

    def log_possibility(self, x) -> np.ndarray:
        x = as_finite("x", x, allow_inf=True)
        d = x - self.mean
        # P = 0 means no information: 0, even at infinity.
        return np.where(self.precision > 0, -0.5 * self.precision * d * d, 0.0)

    @property
    def mode(self) -> np.ndarray:
        return self.mean

    @property
    def variance(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return 1.0 / self.precision

    def _scaled(self, g) -> Normal:
        mean, prec = np.broadcast_arrays(self.mean, g * self.precision)
        return Normal.from_fields({"mean": mean, "precision": prec})

    def _add(self, other: Normal) -> Normal:
        p = self.precision + other.precision
        safe = np.where(p > 0, p, 1.0)
        with np.errstate(over="ignore", invalid="ignore"):
            moved = self.mean + other.precision * (other.mean - self.mean) / safe
            # precision times a large mean difference can overflow: weight first there
            w = other.precision / safe
            moved = np.where(np.isfinite(moved), moved,
                             (1.0 - w) * self.mean + w * other.mean)
        mean = np.where(p > 0, moved, self.mean + 0.0 * other.mean)
        return Normal.from_fields({"mean": mean, "precision": p})

    def _log_consistency(self, other: Normal) -> np.ndarray:
        # sup of the product of two normals, without the cancellation of the S route.
        p = self.precision + other.precision
        safe = np.where(p > 0, p, 1.0)
        d = self.mean - other.mean
        with np.errstate(over="ignore", invalid="ignore"):
            coef = self.precision * other.precision / safe
            # the product of precisions can overflow: divide first there
            coef = np.where(np.isfinite(coef), coef,
                            self.precision * (other.precision / safe))
            # coef = 0 (an uninformative side) gives c = 1 even if d overflowed
            val = np.where(coef > 0, -0.5 * coef * d * d, 0.0)
        return np.where(p > 0, val, 0.0)

    def natural(self) -> tuple[np.ndarray, np.ndarray]:
        return self.precision * self.mean, -0.5 * self.precision

    @classmethod
    def from_natural(cls, eta) -> Normal:
        e1, e2 = (np.asarray(e, dtype=np.float64) for e in eta)
        p = -2.0 * e2
        mean = np.divide(e1, p, out=np.zeros(np.broadcast_shapes(e1.shape, p.shape)),
                         where=p > 0)
        return cls(mean, p)

    def sufficient(self, x):
        x = as_finite("x", x)
        return x, x * x

    def log_support(self) -> np.ndarray:
        return 0.5 * self.precision * self.mean**2
