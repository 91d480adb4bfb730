"""Pareto possibility ``Pā(x; a, s) = (s / x)**a 1[x >= s]``: conjugate to the uniform."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from possibly.families.base import Possibility
from possibly.validation import as_finite, check_nonnegative

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["Pareto"]


@dataclass(frozen=True, eq=False, repr=False)
class Pareto(Possibility):
    """Pareto possibility function on ``x > 0`` with shape ``alpha >= 0`` and ``scale >= 0``.

    Not an exponential family: its support ``[scale, inf)`` moves with the data, and a power
    cannot discount the indicator (``Pareto(a, s) ** 0 = 1[x >= s]``, not 1; paper §4.4).
    E* is ``scale``. The product of two Pareto functions is Pareto with shapes added and the
    larger scale; the consistency of the uniform likelihood ``Pareto(1, y)`` with a prior
    ``Pareto(a, s)`` is ``y / s`` if ``y < s`` and ``(s / y)**a`` otherwise (docs/math.md §4).

    Examples
    --------
    >>> import possibly as ps
    >>> prior = ps.Pareto(3.0, 10.0)
    >>> float(ps.consistency(prior, ps.likelihood.uniform(20.0)))   # (10 / 20) ** 3
    0.125
    """

    alpha: np.ndarray
    scale: np.ndarray

    if TYPE_CHECKING:  # the fields are arrays; the constructor takes array-likes
        def __init__(self, alpha: ArrayLike, scale: ArrayLike) -> None: ...

    _event_ndims: ClassVar[dict[str, int]] = {"alpha": 0, "scale": 0}
    _checks: ClassVar = {"alpha": check_nonnegative, "scale": check_nonnegative}
    _univariate: ClassVar[bool] = True

    def _check_joint(self) -> None:
        if ((self.alpha > 0) & (self.scale == 0)).any():
            raise ValueError("scale must be > 0 where alpha > 0")

    @property
    def effective_dim(self) -> int:
        return 1

    def log_possibility(self, x) -> np.ndarray:
        x = as_finite("x", x, allow_inf=True)
        inside = x >= self.scale
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.log(np.where(self.scale > 0, self.scale, 1.0)) - np.log(
                np.where(x > 0, x, 1.0))
        val = np.where(self.alpha > 0, self.alpha * ratio, 0.0)
        return np.where(inside, np.minimum(val, 0.0), -np.inf)

    @property
    def mode(self) -> np.ndarray:
        return self.scale

    @property
    def variance(self) -> np.ndarray:
        raise ValueError("V* is not defined for Pareto: the mode sits on the support boundary, "
                         "where -log f has no curvature")

    def _scaled(self, g) -> Pareto:
        a, s = np.broadcast_arrays(g * self.alpha, self.scale)
        return Pareto.from_fields({"alpha": a, "scale": s})

    def _add(self, other: Pareto) -> Pareto:
        return Pareto.from_fields({"alpha": self.alpha + other.alpha,
                                    "scale": np.maximum(self.scale, other.scale)})

    def _log_consistency(self, other: Pareto) -> np.ndarray:
        # sup of the product sits at the larger scale
        s = np.maximum(self.scale, other.scale)
        return (self._log_at(s) + other._log_at(s))

    def _log_at(self, x: np.ndarray) -> np.ndarray:
        """``log f(x)`` for ``x >= scale``, without argument checks."""
        with np.errstate(divide="ignore", invalid="ignore"):
            val = self.alpha * (np.log(np.where(self.scale > 0, self.scale, 1.0))
                                - np.log(np.where(x > 0, x, 1.0)))
        return np.where(self.alpha > 0, val, 0.0)
