"""Multivariate normal possibility ``N̄(x; mu, P) = exp(-(x - mu)' P (x - mu) / 2)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from possibly.families.base import ExponentialFamily
from possibly.validation import as_finite, check_psd

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["MultivariateNormal"]


def _quad(a: np.ndarray, m: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a' M b`` over batches."""
    return np.einsum("...i,...ij,...j->...", a, m, b)


@dataclass(frozen=True, eq=False, repr=False)
class MultivariateNormal(ExponentialFamily):
    """Multivariate normal possibility function with event shape ``(d,)``.

    The precision ``P`` is symmetric positive semi-definite and may be singular: directions in
    its null space carry no information (``P = 0`` is the uninformative function 1).
    Natural parameters ``eta = (P mu, -P/2)``, ``T(x) = (x, x x')``, ``S = mu' P mu / 2``.

    Parameters
    ----------
    mean : array_like, shape (..., d)
    precision : array_like, shape (..., d, d)

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> f = ps.MultivariateNormal([0.0, 0.0], np.diag([1.0, 0.0]))   # knows x[0] only
    >>> float(f.log_possibility([1.0, 100.0]))
    -0.5
    """

    mean: np.ndarray
    precision: np.ndarray

    if TYPE_CHECKING:  # the fields are arrays; the constructor takes array-likes
        def __init__(self, mean: ArrayLike, precision: ArrayLike) -> None: ...

    _event_ndims: ClassVar[dict[str, int]] = {"mean": 1, "precision": 2}
    _checks: ClassVar = {"mean": as_finite, "precision": check_psd}
    _natural_ndims: ClassVar[tuple[int, ...]] = (1, 2)

    def _check_joint(self) -> None:
        d = self.mean.shape[-1]
        if self.precision.shape[-1] != d:
            raise ValueError(f"precision must have shape (..., {d}, {d}) to match mean, got "
                             f"{self.precision.shape}")

    @classmethod
    def uninformative(cls, dim: int, batch_shape: tuple[int, ...] = ()) -> MultivariateNormal:
        return cls(**cls._zeros(batch_shape, dim))

    @property
    def dim(self) -> int:
        return self.mean.shape[-1]

    @property
    def effective_dim(self) -> int:
        return self.dim

    def log_possibility(self, x) -> np.ndarray:
        x = as_finite("x", x)
        if x.shape[-1:] != (self.dim,):
            raise ValueError(f"x must have shape (..., {self.dim}), got {x.shape}")
        d = x - self.mean
        return np.minimum(-0.5 * _quad(d, self.precision, d), 0.0)

    @property
    def mode(self) -> np.ndarray:
        return self.mean

    @property
    def variance(self) -> np.ndarray:
        """Inverse precision; entries are ``inf`` where the precision is singular."""
        cond = np.linalg.cond(self.precision) if self.dim else np.ones(self.batch_shape)
        singular = ~(cond < 1e12)
        safe = np.where(singular[..., None, None], np.eye(self.dim), self.precision)
        inv = np.linalg.inv(safe)
        return np.where(singular[..., None, None], np.inf, inv)

    def _scaled(self, g) -> MultivariateNormal:
        g = np.asarray(g)[..., None, None]
        prec = g * self.precision
        mean = np.broadcast_to(self.mean, prec.shape[:-1])
        return MultivariateNormal.from_fields({"mean": mean, "precision": prec})

    def _add(self, other: MultivariateNormal) -> MultivariateNormal:
        p = self.precision + other.precision
        # mu = mu_a + P^+ P_b (mu_b - mu_a): exact where P is invertible, and keeps mu_a in
        # directions that neither function informs.
        pinv = np.linalg.pinv(p, hermitian=True)
        shift = np.einsum("...ij,...jk,...k->...i", pinv, other.precision, other.mean - self.mean)
        return MultivariateNormal.from_fields({"mean": self.mean + shift, "precision": p})

    def _log_consistency(self, other: MultivariateNormal) -> np.ndarray:
        # sup_x of the product = -delta' (P_b - P_b (P_a + P_b)^+ P_b) delta / 2
        p = self.precision + other.precision
        pinv = np.linalg.pinv(p, hermitian=True)
        pb = other.precision
        m = pb - pb @ pinv @ pb
        d = other.mean - self.mean
        return np.minimum(-0.5 * _quad(d, m, d), 0.0)

    def natural(self):
        return np.einsum("...ij,...j->...i", self.precision, self.mean), -0.5 * self.precision

    @classmethod
    def from_natural(cls, eta) -> MultivariateNormal:
        e1, e2 = (np.asarray(e, dtype=np.float64) for e in eta)
        p = -2.0 * e2
        mean = np.einsum("...ij,...j->...i", np.linalg.pinv(p, hermitian=True), e1)
        return cls(mean, p)

    def sufficient(self, x):
        x = as_finite("x", x)
        return x, x[..., :, None] * x[..., None, :]

    def log_support(self) -> np.ndarray:
        return 0.5 * _quad(self.mean, self.precision, self.mean)
