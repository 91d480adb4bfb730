"""Beta possibility ``B̄(x; a, b) ∝ x**a (1 - x)**b`` on ``[0, 1]``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from possibly.families.base import ExponentialFamily, xlogy
from possibly.validation import as_finite, check_nonnegative

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["Beta"]


@dataclass(frozen=True, eq=False, repr=False)
class Beta(ExponentialFamily):
    """Beta possibility function, ``alpha, beta >= 0``.

    Shifted by one unit from the probabilistic beta: ``B̄(a, b)`` has the mode of the beta
    density ``Beta(a + 1, b + 1)``, and ``B̄(0, 0) = 1`` is uninformative. E* is
    ``a / (a + b)`` and V* is ``a b / (a + b)**3``. ``T(x) = (log x, log(1 - x))``,
    ``eta = (a, b)``, ``S = a log(a / (a + b)) + b log(b / (a + b))``.

    Examples
    --------
    >>> import possibly as ps
    >>> post = ps.combine(ps.Beta(0, 0), ps.likelihood.binomial(7, 10))
    >>> float(post.mode)
    0.7
    """

    alpha: np.ndarray
    beta: np.ndarray

    if TYPE_CHECKING:  # the fields are arrays; the constructor takes array-likes
        def __init__(self, alpha: ArrayLike, beta: ArrayLike) -> None: ...

    _event_ndims: ClassVar[dict[str, int]] = {"alpha": 0, "beta": 0}
    _checks: ClassVar = {"alpha": check_nonnegative, "beta": check_nonnegative}
    _natural_ndims: ClassVar[tuple[int, ...]] = (0, 0)
    _univariate: ClassVar[bool] = True

    @property
    def effective_dim(self) -> int:
        return 1

    def log_possibility(self, x) -> np.ndarray:
        x = as_finite("x", x)
        inside = (x >= 0) & (x <= 1)
        xc = np.clip(x, 0.0, 1.0)
        a, b = self.alpha, self.beta
        m = self.mode
        m_c = _share(b, a)  # 1 - m as b / (a + b): exact for a small m's complement
        # relative to the mode, a log(x/m) + b log((1-x)/(1-m)) in log1p form: the same
        # function as a log x + b log(1-x) - S, without subtracting large terms
        with np.errstate(divide="ignore", invalid="ignore"):
            diff = xc - m  # 0 at the mode, where m or 1 - m may have underflowed to 0
            rel_a = np.divide(diff, m, out=np.zeros(diff.shape), where=diff != 0)
            rel_b = np.divide(-diff, m_c, out=np.zeros(diff.shape), where=diff != 0)
            # m_c is 1 - m up to rounding: at x = 1 the ratio must be exactly -1, not below
            rel_b = np.maximum(rel_b, -1.0)
            term_a = np.where(a > 0, a * np.log1p(rel_a), 0.0)
            term_b = np.where(b > 0, b * np.log1p(rel_b), 0.0)
            val = term_a + term_b
        return np.where(inside, np.minimum(val, 0.0), -np.inf)

    @property
    def mode(self) -> np.ndarray:
        """``a / (a + b)``; 0.5 for the uninformative member (every point is a mode)."""
        return _share(self.alpha, self.beta)

    @property
    def variance(self) -> np.ndarray:
        """``a b / (a + b)**3``, as ``m (1 - m) / (a + b)`` where the products overflow."""
        with np.errstate(over="ignore", invalid="ignore"):
            s = self.alpha + self.beta
            num, den = self.alpha * self.beta, s**3
            ok = np.isfinite(num) & np.isfinite(den) & ((den > 0) | (s == 0))
            m = self.mode
            direct = np.divide(num, den, out=np.full(s.shape, np.inf), where=(s > 0) & ok)
            scaled = np.divide(m * (1.0 - m), s, out=np.full(s.shape, np.inf), where=s > 0)
        return np.where(ok, direct, scaled)

    def _scaled(self, g) -> Beta:
        a, b = np.broadcast_arrays(g * self.alpha, g * self.beta)
        return Beta.from_fields({"alpha": a, "beta": b})

    def _add(self, other: Beta) -> Beta:
        return Beta.from_fields({"alpha": self.alpha + other.alpha,
                                  "beta": self.beta + other.beta})

    def natural(self):
        return self.alpha, self.beta

    @classmethod
    def from_natural(cls, eta) -> Beta:
        return cls(*eta)

    def sufficient(self, x):
        x = as_finite("x", x)
        with np.errstate(divide="ignore"):
            return np.log(x), np.log1p(-x)

    def log_support(self) -> np.ndarray:
        s = self.alpha + self.beta
        return xlogy(self.alpha, self.alpha) + xlogy(self.beta, self.beta) - xlogy(s, s)


def _share(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x / (x + y)``, 0.5 where both are 0; ``x + y`` overflows only when both are near
    1e308, and both are halved first there."""
    with np.errstate(over="ignore"):
        s = x + y
    half = 0.5 * x / np.where(s > 0, 0.5 * x + 0.5 * y, 1.0)
    direct = np.divide(x, s, out=np.full(s.shape, 0.5), where=s > 0)
    return np.where(np.isinf(s), half, direct)
