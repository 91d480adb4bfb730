"""Normal-gamma possibility ``N̄Ḡ(mu, lam; m, k, a, b) = N̄(mu; m, k lam) Ḡ(lam; a, b)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from possibly.families.base import ExponentialFamily, xlogy
from possibly.families.gamma import check_gamma_support, gamma_log_support
from possibly.validation import as_finite, check_nonnegative, check_unit_interval

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["NormalGamma"]


@dataclass(frozen=True, eq=False, repr=False)
class NormalGamma(ExponentialFamily):
    """Joint possibility of a normal mean ``mu`` and precision ``lam``.

    ``T(mu, lam) = (log lam, lam, lam mu, lam mu**2)``,
    ``eta = (a, -b - k m**2 / 2, k m, -k / 2)`` and ``S = a log(a / b) - a``.
    E* is ``(m, a / b)``. Points are passed as a tuple ``(mu, lam)``.
    ``a > 0`` with ``b = 0`` is unbounded: that is the information in one normal observation
    (``likelihood.normal_unknown``), usable only through the ω split.

    Parameters
    ----------
    mean, k, alpha, beta : array_like
        Location ``m``; ``k >= 0`` scales the precision of ``mu`` given ``lam``; gamma shape
        ``a >= 0`` and rate ``b >= 0``.

    Examples
    --------
    >>> import possibly as ps
    >>> lik = ps.likelihood.normal_batch([1.0, 2.0, 3.0, 6.0])
    >>> mu, lam = ps.combine(ps.NormalGamma.uninformative(), lik).mode
    >>> float(mu), float(lam)     # sample mean and 1 / (biased sample variance)
    (3.0, 0.2857142857142857)
    """

    mean: np.ndarray
    k: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray

    if TYPE_CHECKING:  # the fields are arrays; the constructor takes array-likes
        def __init__(self, mean: ArrayLike, k: ArrayLike, alpha: ArrayLike,
                     beta: ArrayLike) -> None: ...

    _event_ndims: ClassVar[dict[str, int]] = {"mean": 0, "k": 0, "alpha": 0, "beta": 0}
    _checks: ClassVar = {"mean": as_finite, "k": check_nonnegative, "alpha": check_nonnegative,
                         "beta": check_nonnegative}
    _natural_ndims: ClassVar[tuple[int, ...]] = (0, 0, 0, 0)

    @property
    def effective_dim(self) -> int:
        return 2

    @property
    def bounded(self) -> np.ndarray:
        return ~((self.alpha > 0) & (self.beta == 0))

    def log_possibility(self, x) -> np.ndarray:
        self._check_bounded("this function")
        mu, lam = x
        mu = as_finite("x[0] (mu)", mu)
        lam = as_finite("x[1] (lam)", lam, allow_inf=True)
        lp = np.maximum(lam, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            quad = np.where(self.k > 0, self.k * lp * (mu - self.mean) ** 2, 0.0)
            val = -0.5 * quad + xlogy(self.alpha, lp) - self.beta * lp - self.log_support()
        return np.where(lam >= 0, np.minimum(val, 0.0), -np.inf)

    @property
    def mode(self) -> tuple[np.ndarray, np.ndarray]:
        lam = np.divide(self.alpha, self.beta, out=np.where(self.alpha > 0, np.inf, 0.0),
                        where=self.beta > 0)
        return self.mean, lam

    @property
    def variance(self) -> tuple[np.ndarray, np.ndarray]:
        """``(b / (k a), a / b**2)``: the cross term vanishes at the mode."""
        a, b, k = self.alpha, self.beta, self.k
        v_mu = np.divide(b, k * a, out=np.full(a.shape, np.inf), where=(k * a) > 0)
        v_lam = np.divide(a, b**2, out=np.full(a.shape, np.inf), where=b > 0)
        return v_mu, v_lam

    def _check_joint(self) -> None:
        check_gamma_support(self.alpha, self.beta)

    def _scaled(self, g) -> NormalGamma:
        m, k, a, b = np.broadcast_arrays(self.mean, g * self.k, g * self.alpha, g * self.beta)
        return NormalGamma.from_fields({"mean": m, "k": k, "alpha": a, "beta": b})

    def _add(self, other: NormalGamma) -> NormalGamma:
        k = self.k + other.k
        safe = np.where(k > 0, k, 1.0)
        d = other.mean - self.mean
        mean = self.mean + np.where(k > 0, other.k / safe, 0.0) * d
        beta = self.beta + other.beta + 0.5 * np.where(k > 0, self.k * other.k / safe, 0.0) * d**2
        return NormalGamma.from_fields(
            {"mean": mean, "k": k, "alpha": self.alpha + other.alpha, "beta": beta})

    def split(self, omega, part: str = "all") -> tuple[NormalGamma, NormalGamma]:
        """Split into ``(kept, lent)`` with ``kept * lent = self`` (ω split, paper §4.3).

        ``part="all"`` gives ``(f**omega, f**(1 - omega))``. ``part="precision"`` is the
        appendix's refinement: only the gamma part is split, the normal part of the mean
        stays whole in the kept part, ``(N̄Ḡ(m, k, ω a, ω b), N̄Ḡ(m, 0, (1-ω) a, (1-ω) b))``.
        """
        omega = check_unit_interval("omega", omega, low_open=True, high_open=True)
        if part == "all":
            return self.power(omega), self.power(1.0 - omega)
        if part != "precision":
            raise ValueError(f"part must be 'all' or 'precision', got {part!r}")
        kept = NormalGamma(self.mean, self.k, omega * self.alpha, omega * self.beta)
        lent = NormalGamma(self.mean, 0.0 * self.k, (1 - omega) * self.alpha,
                           (1 - omega) * self.beta)
        return kept, lent

    def natural(self):
        k, m = self.k, self.mean
        return self.alpha, -self.beta - 0.5 * k * m**2, k * m, -0.5 * k

    @classmethod
    def from_natural(cls, eta) -> NormalGamma:
        e1, e2, e3, e4 = (np.asarray(e, dtype=np.float64) for e in eta)
        k = -2.0 * e4
        mean = np.divide(e3, k, out=np.zeros(np.broadcast_shapes(e3.shape, k.shape)),
                         where=k > 0)
        beta = -e2 - 0.5 * k * mean**2
        return cls(mean, k, e1, np.maximum(beta, 0.0))

    def sufficient(self, x):
        mu, lam = (as_finite("x", v) for v in x)
        with np.errstate(divide="ignore"):
            return np.log(lam), lam, lam * mu, lam * mu**2

    def log_support(self) -> np.ndarray:
        return gamma_log_support(self.alpha, self.beta)
