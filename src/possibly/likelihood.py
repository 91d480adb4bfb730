"""Observations turned into the information in the likelihood, ``L(θ | y) = p(y | θ) / sup p``.

Each function returns a possibility function of the conjugate family of its model, so that
:func:`possibly.combine`, :func:`possibly.consistency` and :func:`possibly.robust_update` take
it together with a prior of that family. Observations along the last axis (or the last two,
for vectors) form one batch of i.i.d. data; leading dimensions are independent problems.
"""

from __future__ import annotations

import numpy as np

from possibly.families import (
    Beta,
    Gamma,
    MultivariateNormal,
    Normal,
    NormalGamma,
    NormalInverseWishart,
    Pareto,
)
from possibly.validation import (
    as_finite,
    check_nonnegative,
    check_positive,
    check_psd,
    symmetrise,
)

__all__ = [
    "binomial",
    "exponential",
    "linear_gaussian",
    "mvn_batch",
    "normal",
    "normal_batch",
    "normal_unknown",
    "poisson",
    "uniform",
]


def normal(y, sd) -> Normal:
    """One observation ``y ~ N(θ, sd²)`` of an unknown mean θ: ``N̄(θ; y, 1/sd²)``.

    Examples
    --------
    >>> import possibly as ps
    >>> ps.likelihood.normal([1.0, 2.0], sd=0.5)
    Normal(mean=[1., 2.], precision=[4., 4.])
    """
    y = as_finite("y", y)
    sd = check_positive("sd", sd)
    return Normal(y, 1.0 / sd**2)


def linear_gaussian(y, H, R) -> MultivariateNormal:
    """One observation ``y ~ N(H θ, R)`` of a state θ: ``N̄(θ; θ_ls, Hᵀ R⁻¹ H)``.

    ``θ_ls`` is the (minimum-norm) generalised least-squares solution; the precision is
    singular when ``H`` does not have full column rank (unobserved directions).

    Parameters
    ----------
    y : array_like, shape (..., m)
    H : array_like, shape (..., m, n)
    R : array_like, shape (..., m, m), symmetric positive definite

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> lik = ps.likelihood.linear_gaussian([3.0], H=[[1.0, 0.0]], R=[[4.0]])
    >>> lik.mean, lik.precision
    (array([3., 0.]), array([[0.25, 0.  ],
           [0.  , 0.  ]]))
    """
    y = as_finite("y", y)
    H = as_finite("H", H)
    if y.ndim < 1 or H.ndim < 2 or H.shape[-2] != y.shape[-1]:
        raise ValueError(f"H must have shape (..., m, n) with m = len(y) = {y.shape[-1:]}, "
                         f"got {H.shape}")
    R = check_psd("R", R, definite=True)
    if R.shape[-1] != y.shape[-1]:
        raise ValueError(f"R must have shape (..., {y.shape[-1]}, {y.shape[-1]}), got {R.shape}")
    chol = np.linalg.cholesky(R)
    # whitened system: W H θ ≈ W y with W = L⁻¹
    wh = np.linalg.solve(chol, H)
    wy = np.linalg.solve(chol, y[..., None])[..., 0]
    prec = np.swapaxes(wh, -1, -2) @ wh
    mean = np.einsum("...ij,...j->...i", np.linalg.pinv(wh), wy)
    return MultivariateNormal(mean, symmetrise(prec))


def binomial(k, n) -> Beta:
    """``k`` successes in ``n`` trials: ``B̄(θ; k, n - k)``.

    Examples
    --------
    >>> import possibly as ps
    >>> ps.likelihood.binomial(3, 10)
    Beta(alpha=3., beta=7.)
    """
    k = check_nonnegative("k", k)
    n = check_nonnegative("n", n)
    if (k > n).any():
        raise ValueError("k must be <= n")
    return Beta(k, n - k)


def poisson(counts) -> Gamma:
    """Counts ``k_i ~ Poisson(λ)`` (last axis) of a rate λ: ``Ḡ(λ; Σ k_i, n)``.

    Examples
    --------
    >>> import possibly as ps
    >>> ps.likelihood.poisson([2, 0, 4])
    Gamma(alpha=6., beta=3.)
    """
    counts = check_nonnegative("counts", counts)
    counts = np.atleast_1d(counts)
    if counts.shape[-1] == 0:
        raise ValueError("counts must hold at least one observation")
    return Gamma(counts.sum(-1), np.asarray(float(counts.shape[-1])))


def exponential(x) -> Gamma:
    """Waiting times ``x_i ~ Exp(λ)`` (last axis, ``x_i > 0``) of a rate λ: ``Ḡ(λ; n, Σ x_i)``.

    Examples
    --------
    >>> import possibly as ps
    >>> float(ps.likelihood.exponential([0.5, 1.5]).mode)
    1.0
    """
    x = np.atleast_1d(check_positive("x", x))
    return Gamma(np.asarray(float(x.shape[-1])), x.sum(-1))


def normal_batch(y) -> NormalGamma:
    """``n >= 2`` values ``y_i ~ N(μ, 1/λ)`` (last axis): ``N̄Ḡ(ȳ, n, n/2, SS/2)``.

    ``SS = Σ (y_i - ȳ)²`` must be positive (equal values make the likelihood unbounded).

    Examples
    --------
    >>> import possibly as ps
    >>> ps.likelihood.normal_batch([1.0, 3.0])
    NormalGamma(mean=2., k=2., alpha=1., beta=1.)
    """
    y = as_finite("y", y)
    if y.ndim < 1 or y.shape[-1] < 2:
        raise ValueError(f"y must hold n >= 2 values along its last axis, got shape {y.shape}")
    n = y.shape[-1]
    mean = y.mean(-1)
    ss = ((y - mean[..., None]) ** 2).sum(-1)
    if (ss <= 0).any():
        raise ValueError("y must not be constant: the likelihood of equal values is unbounded")
    return NormalGamma(mean, np.asarray(float(n)), np.asarray(n / 2.0), ss / 2.0)


def normal_unknown(y) -> NormalGamma:
    """One value ``y ~ N(μ, 1/λ)``: ``N̄Ḡ(y, 1, 1/2, 0)``, an unbounded likelihood.

    Its supremum is infinite (``μ = y``, ``λ → ∞``); use it with
    ``robust_update(prior, lik, omega=...)``, which lends part of the prior to it.

    Examples
    --------
    >>> import possibly as ps
    >>> prior = ps.NormalGamma(0.0, 0.0, 0.0, 1.0)
    >>> res = ps.robust_update(prior, ps.likelihood.normal_unknown(3.0), omega=0.99)
    >>> round(float(res.consistency), 6)    # sqrt(1 - omega) at the first observation
    0.1
    """
    y = as_finite("y", y)
    return NormalGamma(y, np.asarray(1.0), np.asarray(0.5), np.asarray(0.0))


def mvn_batch(Y, *, keep=None, validate: bool = True) -> NormalInverseWishart:
    """``n > d`` vectors ``y_i ~ N(μ, Σ)`` (shape ``(..., n, d)``): ``N̄IW̄(ȳ, n, S, n)``.

    ``S = Σ (y_i - ȳ)(y_i - ȳ)ᵀ`` must be positive definite; with ``n <= d`` it is singular
    and the likelihood unbounded.

    Parameters
    ----------
    Y : array_like, shape (..., n, d)
    keep : array_like of bool, shape (..., n), optional
        Use only these vectors of each batch (``m`` of them: ``N̄IW̄(ȳ, m, S, m)``, the
        function 1 when ``m = 0``); implies ``validate=False``.
    validate : bool
        Check ``Y`` (finite, ``n > d``, ``S`` positive definite; default). ``False`` is the
        fast path for loops over many batches of already checked data, and accepts a
        singular ``S`` (an unbounded likelihood, usable only through the ω split).

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> lik = ps.likelihood.mvn_batch(np.array([[0., 0.], [2., 0.], [0., 2.], [2., 2.]]))
    >>> lik.mean, lik.psi, float(lik.nu)
    (array([1., 1.]), array([[4., 0.],
           [0., 4.]]), 4.0)
    """
    if validate and keep is None:
        Y = as_finite("Y", Y)
        if Y.ndim < 2:
            raise ValueError(f"Y must have shape (..., n, d), got {Y.shape}")
        n, d = Y.shape[-2:]
        if n <= d:
            raise ValueError(f"Y must hold n > d vectors (got n={n}, d={d}): with n <= d the "
                             "batch likelihood is unbounded")
    Y = np.asarray(Y, dtype=np.float64)
    if keep is None:
        mean = Y.mean(-2)
        centred = Y - mean[..., None, :]
        count = np.full(mean.shape[:-1], float(Y.shape[-2]))
    else:
        w = np.asarray(keep).astype(np.float64)
        count = w.sum(-1)
        mean = (w[..., None] * Y).sum(-2) / np.maximum(count, 1.0)[..., None]
        centred = (Y - mean[..., None, :]) * w[..., None]
    scatter = np.swapaxes(centred, -1, -2) @ centred
    scatter = symmetrise(scatter)
    if validate and keep is None and (np.linalg.slogdet(scatter)[0] <= 0).any():
        raise ValueError("Y must span its d dimensions (its scatter matrix is singular)")
    return NormalInverseWishart.from_fields({"mean": mean, "lam": count, "psi": scatter,
                                             "nu": count.copy()})


def uniform(y) -> Pareto:
    """One value ``y ~ U(0, θ)``, ``y > 0``: ``Pā(θ; 1, y)``.

    Examples
    --------
    >>> import possibly as ps
    >>> ps.likelihood.uniform(4.0)
    Pareto(alpha=1., scale=4.)
    """
    y = check_positive("y", y)
    return Pareto(np.ones_like(y), y)
