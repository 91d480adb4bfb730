"""Gamma and inverse-gamma possibility functions.

``Ḡ(x; a, b) = (b x / a)**a exp(a - b x)`` on ``x > 0`` (rate ``b``), and
``IḠ(s; a, b) = Ḡ(1 / s; a, b)``: the same information about a precision, read as a variance.
Both have ``S = a log(a / b) - a`` (``0 log 0 = 0``); ``a > 0`` with ``b = 0`` is unbounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from possibly.families.base import ExponentialFamily, xlogy
from possibly.validation import as_finite, check_nonnegative

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["Gamma", "InverseGamma"]


def gamma_log_support(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``a log(a / b) - a`` with ``0 log 0 = 0`` and ``+inf`` for ``a > 0, b = 0``."""
    with np.errstate(divide="ignore"):
        return np.where((alpha > 0) & (beta == 0), np.inf,
                        xlogy(alpha, alpha) - xlogy(alpha, np.where(beta > 0, beta, 1.0))
                        - alpha)


def check_gamma_support(alpha: np.ndarray, beta: np.ndarray) -> None:
    """Reject ``(a, b)`` whose ``S = a log(a / b) - a`` overflows (the algebra needs S)."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        bad = (beta > 0) & ~np.isfinite(gamma_log_support(alpha, beta))
    if bad.any():
        a, b = alpha[bad].ravel()[0], beta[bad].ravel()[0]
        raise ValueError(f"alpha * log(alpha / beta) - alpha must be finite (below 1.8e308), "
                         f"got alpha={float(a):g}, beta={float(b):g}")


class _GammaLike(ExponentialFamily):
    alpha: np.ndarray
    beta: np.ndarray

    _event_ndims: ClassVar[dict[str, int]] = {"alpha": 0, "beta": 0}
    _checks: ClassVar = {"alpha": check_nonnegative, "beta": check_nonnegative}
    _natural_ndims: ClassVar[tuple[int, ...]] = (0, 0)
    _univariate: ClassVar[bool] = True

    @property
    def effective_dim(self) -> int:
        return 1

    @property
    def bounded(self) -> np.ndarray:
        return ~((self.alpha > 0) & (self.beta == 0))

    def _check_joint(self) -> None:
        check_gamma_support(self.alpha, self.beta)

    def _scaled(self, g):
        a, b = np.broadcast_arrays(g * self.alpha, g * self.beta)
        return type(self).from_fields({"alpha": a, "beta": b})

    def _add(self, other):
        return type(self).from_fields({"alpha": self.alpha + other.alpha,
                                        "beta": self.beta + other.beta})

    def log_support(self) -> np.ndarray:
        return gamma_log_support(self.alpha, self.beta)

    def _log_rate(self, lam: np.ndarray) -> np.ndarray:
        """log Ḡ(lam; a, b) for lam >= 0 (the unbounded member has no finite value)."""
        self._check_bounded("this function")
        a, b = self.alpha, self.beta
        # relative to the mode: a (log r - (r - 1)) with r = b lam / a, the same function as
        # a log lam - b lam - S without subtracting large terms (exact near the mode at any a)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = lam * (b / np.where(a > 0, a, 1.0))
            rel = a * (np.log(r) - (r - 1.0))
            val = np.where(a > 0, np.where(np.isinf(r), -np.inf, rel), -b * lam)
        return np.minimum(val, 0.0)


@dataclass(frozen=True, eq=False, repr=False)
class Gamma(_GammaLike):
    """Gamma possibility function on a rate or precision ``x > 0``.

    E* is ``a / b`` and V* is ``a / b**2``; ``T(x) = (log x, x)``, ``eta = (a, -b)``.
    ``Gamma(0, 0)`` is uninformative; ``Gamma(0, b)`` has its mode at 0.

    Examples
    --------
    >>> import possibly as ps
    >>> post = ps.combine(ps.Gamma(0, 0), ps.likelihood.poisson([3, 5, 4]))
    >>> float(post.mode)
    4.0
    """

    alpha: np.ndarray
    beta: np.ndarray

    if TYPE_CHECKING:  # the fields are arrays; the constructor takes array-likes
        def __init__(self, alpha: ArrayLike, beta: ArrayLike) -> None: ...

    def log_possibility(self, x) -> np.ndarray:
        x = as_finite("x", x, allow_inf=True)
        val = self._log_rate(np.maximum(x, 0.0))
        return np.where(x >= 0, val, -np.inf)

    @property
    def mode(self) -> np.ndarray:
        """``a / b`` (``0`` for the uninformative member, ``inf`` if unbounded)."""
        return np.divide(self.alpha, self.beta, out=np.where(self.alpha > 0, np.inf, 0.0),
                         where=self.beta > 0)

    @property
    def variance(self) -> np.ndarray:
        """``a / b**2``, in log space where the powers under- or overflow."""
        a, b = self.alpha, self.beta
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            b2 = b**2
            direct = np.divide(a, b2, out=np.full(a.shape, np.inf), where=b > 0)
            scaled = np.exp(np.log(a) - 2.0 * np.log(b))
        # b² underflowing to 0 or overflowing to inf makes the direct ratio inf or 0 (not NaN)
        lost = (b > 0) & ((b2 == 0) | np.isinf(b2) | np.isnan(direct))
        return np.where(lost, scaled, direct)

    def natural(self):
        return self.alpha, -self.beta

    @classmethod
    def from_natural(cls, eta) -> Gamma:
        return cls(eta[0], -np.asarray(eta[1]))

    def sufficient(self, x):
        x = as_finite("x", x)
        with np.errstate(divide="ignore"):
            return np.log(x), x


@dataclass(frozen=True, eq=False, repr=False)
class InverseGamma(_GammaLike):
    """Inverse-gamma possibility function on a variance ``s > 0``: ``IḠ(s) = Ḡ(1/s)``.

    E* is ``b / a`` (so E*(s) = 1 / E*(1/s)) and V* is ``b**2 / a**3``;
    ``T(s) = (log s, 1/s)``, ``eta = (-a, -b)``.

    Examples
    --------
    >>> import possibly as ps
    >>> f = ps.InverseGamma(2.0, 8.0)
    >>> float(f.mode), float(ps.Gamma(2.0, 8.0).mode)
    (4.0, 0.25)
    """

    alpha: np.ndarray
    beta: np.ndarray

    if TYPE_CHECKING:  # the fields are arrays; the constructor takes array-likes
        def __init__(self, alpha: ArrayLike, beta: ArrayLike) -> None: ...

    def log_possibility(self, x) -> np.ndarray:
        x = as_finite("x", x, allow_inf=True)
        with np.errstate(divide="ignore"):
            inv = np.where(x > 0, 1.0 / np.where(x > 0, x, 1.0), 0.0)
        # s = 0 corresponds to an infinite precision: possibility 0 unless b = 0 = a.
        val = self._log_rate(inv)
        at_zero = np.where((self.alpha == 0) & (self.beta == 0), 0.0, -np.inf)
        return np.where(x > 0, val, np.where(x == 0, at_zero, -np.inf))

    @property
    def mode(self) -> np.ndarray:
        """``b / a`` (``inf`` when ``a = 0``: the variance is unbounded above)."""
        return np.divide(self.beta, self.alpha, out=np.full(self.alpha.shape, np.inf),
                         where=self.alpha > 0)

    @property
    def variance(self) -> np.ndarray:
        """``b**2 / a**3``, in log space where the powers under- or overflow."""
        a, b = self.alpha, self.beta
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            b2, a3 = b**2, a**3
            direct = np.divide(b2, a3, out=np.full(a.shape, np.inf), where=a > 0)
            scaled = np.exp(2.0 * np.log(b) - 3.0 * np.log(a))
        # a power underflowing to 0 or overflowing to inf gives a wrong 0 or inf, not a NaN
        lost = (a > 0) & ((b2 == 0) & (b > 0) | np.isinf(b2) | (a3 == 0) | np.isinf(a3)
                          | np.isnan(direct))
        return np.where(lost, scaled, direct)

    def natural(self):
        return -self.alpha, -self.beta

    @classmethod
    def from_natural(cls, eta) -> InverseGamma:
        return cls(-np.asarray(eta[0]), -np.asarray(eta[1]))

    def sufficient(self, x):
        x = as_finite("x", x)
        with np.errstate(divide="ignore"):
            return np.log(x), 1.0 / x
