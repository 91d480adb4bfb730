"""Inverse-Wishart and normal-inverse-Wishart possibility functions.

``IW̄(Σ; Ψ, ν) = [|Ψ| / |ν Σ|]**(ν/2) exp(-(tr(Ψ Σ⁻¹) - d ν) / 2)`` with
``T(Σ) = (log|Σ|, Σ⁻¹)``, ``eta = (-ν/2, -Ψ/2)`` and ``S = -(ν/2) log|Ψ/ν| - d ν / 2``;
``N̄IW̄(μ, Σ; m, λ, Ψ, ν) = N̄(μ; m, λ Σ⁻¹) IW̄(Σ; Ψ, ν)`` has the same ``S``.
Determinants go through ``slogdet`` and solves through Cholesky factors; nothing is inverted.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from possibly.families.base import ExponentialFamily
from possibly.validation import as_finite, check_nonnegative, check_psd, symmetrise

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["InverseWishart", "NormalInverseWishart", "vech_indices"]


def vech_indices(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the ``d(d+1)/2`` free entries of a symmetric matrix.

    This is the coordinate order of :attr:`InverseWishart.variance`.
    """
    return np.tril_indices(d)


@lru_cache(maxsize=32)
def _duplication_pinv(d: int) -> np.ndarray:
    """Moore-Penrose inverse of the duplication matrix: ``vech(A) = D⁺ vec(A)``."""
    rows, cols = vech_indices(d)
    dup = np.zeros((d * d, rows.size))
    for j, (r, c) in enumerate(zip(rows, cols, strict=True)):
        dup[r * d + c, j] = 1.0
        dup[c * d + r, j] = 1.0
    return np.linalg.pinv(dup)


def _logdet_or_inf(psi: np.ndarray) -> np.ndarray:
    """``log|Ψ|``, ``-inf`` where Ψ is singular (to working precision)."""
    sign, logdet = np.linalg.slogdet(psi)
    return np.where(sign > 0, logdet, -np.inf)


def _iw_log_support(psi: np.ndarray, nu: np.ndarray) -> np.ndarray:
    d = psi.shape[-1]
    logdet = _logdet_or_inf(psi)
    safe_nu = np.where(nu > 0, nu, 1.0)
    with np.errstate(invalid="ignore"):
        val = -0.5 * nu * (logdet - d * np.log(safe_nu)) - 0.5 * d * nu
    return np.where(nu > 0, val, 0.0)


def _check_sigma(sigma) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(sigma, cholesky, pd_mask)``; non-PD matrices get an identity factor."""
    sigma = as_finite("x (Sigma)", sigma)
    if sigma.ndim < 2 or sigma.shape[-1] != sigma.shape[-2]:
        raise ValueError(f"Sigma must have shape (..., d, d), got {sigma.shape}")
    sigma = symmetrise(sigma)
    eig = np.linalg.eigvalsh(sigma)
    # numerically singular matrices are outside the domain (possibility 0), not an error
    pd = eig[..., 0] > 1e-13 * np.maximum(np.abs(eig[..., -1]), 1e-300)
    safe = np.where(pd[..., None, None], sigma, np.eye(sigma.shape[-1]))
    return safe, np.linalg.cholesky(safe), pd


def _iw_log_kernel(psi, nu, chol) -> np.ndarray:
    """``-(ν/2) log|Σ| - tr(Ψ Σ⁻¹)/2`` from the Cholesky factor of Σ."""
    logdet = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
    # tr(Ψ Σ⁻¹) = ||L⁻¹ Ψ^{1/2}||² is awkward for singular Ψ; use tr(L⁻¹ Ψ L⁻ᵀ) instead.
    lpsi = np.linalg.solve(chol, np.broadcast_to(psi, np.broadcast_shapes(psi.shape,
                                                                             chol.shape)))
    inner = np.linalg.solve(chol, np.swapaxes(lpsi, -1, -2))
    tr = np.trace(inner, axis1=-2, axis2=-1)
    return -0.5 * nu * logdet - 0.5 * tr


def _iw_variance(sigma: np.ndarray, nu: np.ndarray) -> np.ndarray:
    """``(2/ν) D⁺ (Σ ⊗ Σ) D⁺ᵀ``: inverse Hessian of ``-log IW̄`` at its mode, in vech order."""
    d = sigma.shape[-1]
    dp = _duplication_pinv(d)
    kron = np.einsum("...ij,...kl->...ikjl", sigma, sigma).reshape(sigma.shape[:-2] + (d * d,
                                                                                      d * d))
    safe_nu = np.where(nu > 0, nu, 1.0)
    v = (2.0 / safe_nu)[..., None, None] * (dp @ kron @ dp.T)
    return np.where((nu > 0)[..., None, None], v, np.inf)


@dataclass(frozen=True, eq=False, repr=False)
class InverseWishart(ExponentialFamily):
    """Inverse-Wishart possibility function of a covariance matrix Σ, shape ``(..., d, d)``.

    E* is ``Ψ / ν``. ``ν = 0`` (with any PSD Ψ, usually 0) is the uninformative function
    when Ψ = 0. ``ν > 0`` with singular Ψ is unbounded: the information in ``n <= d`` vectors.

    Parameters
    ----------
    psi : array_like, shape (..., d, d)
        Symmetric positive semi-definite scale matrix.
    nu : array_like
        Degrees of freedom ``>= 0``.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> f = ps.InverseWishart(np.eye(2) * 6.0, 3.0)
    >>> f.mode
    array([[2., 0.],
           [0., 2.]])
    >>> float(f.log_possibility(f.mode))
    0.0
    """

    psi: np.ndarray
    nu: np.ndarray

    if TYPE_CHECKING:  # the fields are arrays; the constructor takes array-likes
        def __init__(self, psi: ArrayLike, nu: ArrayLike) -> None: ...

    _event_ndims: ClassVar[dict[str, int]] = {"psi": 2, "nu": 0}
    _checks: ClassVar = {"psi": check_psd, "nu": check_nonnegative}
    _natural_ndims: ClassVar[tuple[int, ...]] = (0, 2)

    @classmethod
    def uninformative(cls, dim: int, batch_shape: tuple[int, ...] = ()) -> InverseWishart:
        return cls(**cls._zeros(batch_shape, dim))

    @property
    def dim(self) -> int:
        return self.psi.shape[-1]

    @property
    def effective_dim(self) -> int:
        return self.dim * (self.dim + 1) // 2

    @property
    def bounded(self) -> np.ndarray:
        return (self.nu == 0) | np.isfinite(_logdet_or_inf(self.psi))

    def log_possibility(self, x) -> np.ndarray:
        self._check_bounded("this function")
        _, chol, pd = _check_sigma(x)
        val = _iw_log_kernel(self.psi, self.nu, chol) - self.log_support()
        return np.where(pd, np.minimum(val, 0.0), -np.inf)

    @property
    def mode(self) -> np.ndarray:
        """``Ψ / ν`` (``inf`` entries when ``ν = 0``: no information bounds Σ)."""
        nu = self.nu[..., None, None]
        return np.divide(self.psi, nu, out=np.full(self.psi.shape, np.inf), where=nu > 0)

    @property
    def variance(self) -> np.ndarray:
        """Inverse Hessian of ``-log f`` at the mode over ``vech(Σ)`` (see ``vech_indices``)."""
        return _iw_variance(self.mode, self.nu)

    def _scaled(self, g) -> InverseWishart:
        g = np.asarray(g)
        return InverseWishart.from_fields({"psi": g[..., None, None] * self.psi,
                                            "nu": np.broadcast_to(g * self.nu,
                                                                  np.broadcast_shapes(
                                                                      g.shape, self.nu.shape))})

    def _add(self, other: InverseWishart) -> InverseWishart:
        return InverseWishart.from_fields({"psi": self.psi + other.psi,
                                            "nu": self.nu + other.nu})

    def natural(self):
        return -0.5 * self.nu, -0.5 * self.psi

    @classmethod
    def from_natural(cls, eta) -> InverseWishart:
        return cls(-2.0 * np.asarray(eta[1]), -2.0 * np.asarray(eta[0]))

    def sufficient(self, x):
        sigma, chol, _ = _check_sigma(x)
        logdet = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
        return logdet, np.linalg.inv(sigma)

    def log_support(self) -> np.ndarray:
        return _iw_log_support(self.psi, self.nu)


@dataclass(frozen=True, eq=False, repr=False)
class NormalInverseWishart(ExponentialFamily):
    """Joint possibility of a mean μ (``(..., d)``) and covariance Σ (``(..., d, d)``).

    ``N̄IW̄(μ, Σ; m, λ, Ψ, ν) = N̄(μ; m, λ Σ⁻¹) IW̄(Σ; Ψ, ν)``; E* is ``(m, Ψ / ν)``. Points
    are passed as a tuple ``(mu, Sigma)``. Natural parameters
    ``eta = (-ν/2, -(Ψ + λ m m')/2, λ m, -λ/2)`` for ``T = (log|Σ|, Σ⁻¹, Σ⁻¹μ, μ'Σ⁻¹μ)``.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> Y = np.array([[0., 1.], [2., 1.], [1., 3.], [1., -1.]])
    >>> post = ps.combine(ps.NormalInverseWishart.uninformative(2), ps.likelihood.mvn_batch(Y))
    >>> mu, sigma = post.mode          # sample mean and biased sample covariance
    >>> mu, sigma
    (array([1., 1.]), array([[0.5, 0. ],
           [0. , 2. ]]))
    """

    mean: np.ndarray
    lam: np.ndarray
    psi: np.ndarray
    nu: np.ndarray

    if TYPE_CHECKING:  # the fields are arrays; the constructor takes array-likes
        def __init__(self, mean: ArrayLike, lam: ArrayLike, psi: ArrayLike,
                     nu: ArrayLike) -> None: ...

    _event_ndims: ClassVar[dict[str, int]] = {"mean": 1, "lam": 0, "psi": 2, "nu": 0}
    _checks: ClassVar = {"mean": as_finite, "lam": check_nonnegative, "psi": check_psd,
                         "nu": check_nonnegative}
    _natural_ndims: ClassVar[tuple[int, ...]] = (0, 2, 1, 0)

    def _check_joint(self) -> None:
        if self.psi.shape[-1] != self.mean.shape[-1]:
            raise ValueError(f"mean (..., d) and psi (..., d, d) must agree on d, got "
                             f"{self.mean.shape} and {self.psi.shape}")

    @classmethod
    def uninformative(cls, dim: int, batch_shape: tuple[int, ...] = ()) -> NormalInverseWishart:
        return cls(**cls._zeros(batch_shape, dim))

    @property
    def dim(self) -> int:
        return self.mean.shape[-1]

    @property
    def effective_dim(self) -> int:
        return self.dim + self.dim * (self.dim + 1) // 2

    @property
    def bounded(self) -> np.ndarray:
        return (self.nu == 0) | np.isfinite(_logdet_or_inf(self.psi))

    def log_possibility(self, x) -> np.ndarray:
        self._check_bounded("this function")
        mu, sigma = x
        mu = as_finite("x[0] (mu)", mu)
        _, chol, pd = _check_sigma(sigma)
        diff = mu - self.mean
        z = np.linalg.solve(chol, diff[..., None])[..., 0]
        quad = self.lam * np.einsum("...i,...i->...", z, z)
        val = _iw_log_kernel(self.psi, self.nu, chol) - 0.5 * quad - self.log_support()
        return np.where(pd, np.minimum(val, 0.0), -np.inf)

    @property
    def mode(self) -> tuple[np.ndarray, np.ndarray]:
        nu = self.nu[..., None, None]
        sigma = np.divide(self.psi, nu, out=np.full(self.psi.shape, np.inf), where=nu > 0)
        return self.mean, sigma

    @property
    def variance(self) -> tuple[np.ndarray, np.ndarray]:
        """``(Σ/λ, V_IW)`` at the mode; the cross term vanishes there (see ``vech_indices``)."""
        _, sigma = self.mode
        lam = self.lam[..., None, None]
        ok = (lam > 0) & (self.nu[..., None, None] > 0)
        v_mu = np.divide(np.where(ok, sigma, 1.0), lam, out=np.full(sigma.shape, np.inf),
                         where=ok)
        return v_mu, _iw_variance(sigma, self.nu)

    def _scaled(self, g) -> NormalInverseWishart:
        g = np.asarray(g)
        lam = g * self.lam
        return NormalInverseWishart.from_fields({
            "mean": np.broadcast_to(self.mean, lam.shape + (self.dim,)),
            "lam": lam,
            "psi": g[..., None, None] * self.psi,
            "nu": g * self.nu,
        })

    def _add(self, other: NormalInverseWishart) -> NormalInverseWishart:
        lam = self.lam + other.lam
        safe = np.where(lam > 0, lam, 1.0)
        w = np.where(lam > 0, other.lam / safe, 0.0)
        d = other.mean - self.mean
        mean = self.mean + w[..., None] * d
        # the cross term is an outer product (the paper misprints it as an inner product)
        cross = np.where(lam > 0, self.lam * other.lam / safe, 0.0)
        psi = self.psi + other.psi + cross[..., None, None] * (d[..., :, None] * d[..., None, :])
        return NormalInverseWishart.from_fields(
            {"mean": mean, "lam": lam, "psi": psi, "nu": self.nu + other.nu})

    def natural(self):
        m, lam = self.mean, self.lam
        outer = m[..., :, None] * m[..., None, :]
        return (-0.5 * self.nu, -0.5 * (self.psi + lam[..., None, None] * outer),
                lam[..., None] * m, -0.5 * lam)

    @classmethod
    def from_natural(cls, eta) -> NormalInverseWishart:
        e1, e2, e3, e4 = (np.asarray(e, dtype=np.float64) for e in eta)
        lam = -2.0 * e4
        mean = np.divide(e3, lam[..., None], out=np.zeros(e3.shape), where=lam[..., None] > 0)
        psi = -2.0 * e2 - lam[..., None, None] * (mean[..., :, None] * mean[..., None, :])
        return cls(mean, lam, symmetrise(psi), -2.0 * e1)

    def sufficient(self, x):
        mu, sigma = x
        mu = as_finite("x[0] (mu)", mu)
        sigma, chol, _ = _check_sigma(sigma)
        logdet = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
        inv = np.linalg.inv(sigma)
        inv_mu = np.einsum("...ij,...j->...i", inv, mu)
        return logdet, inv, inv_mu, np.einsum("...i,...i->...", mu, inv_mu)

    def log_support(self) -> np.ndarray:
        return _iw_log_support(self.psi, self.nu)
