"""Robust streaming estimation of a mean and a full covariance matrix (paper §5.1).

A batch ``Y_t`` of ``n > d`` vectors ``y ~ N(μ, Σ)`` carries the information
``L(μ, Σ | Y_t) = N̄IW̄(ȳ_t, n, S_t, n)`` with ``S_t = Σᵢ (yᵢ - ȳ_t)(yᵢ - ȳ_t)ᵀ`` (MATH.md §2).
The state is the normal-inverse-Wishart posterior ``N̄IW̄(μ_t, λ_t, Ψ_t, ν_t)``; each step is
the robust update of the algebra,

* ``log c_t = S(η_{t-1} + η_t) - S(η_{t-1}) - S(η_t)`` with ``S = -(ν/2) log|Ψ/ν| - dν/2``,
  i.e. ``2 log c_t = n log|S_t/n| + ν_{t-1} log|Ψ_{t-1}/ν_{t-1}| - ν' log|Ψ'/ν'|`` where
  ``Ψ', ν'`` is the undiscounted update;
* ``γ_t = c_t ** (1/d')`` with ``d' = d + d(d+1)/2`` by default, and the exponent
  ``ρ_t = γ_t`` (or, with a threshold ``τ``, ``ρ_t = γ_t`` if ``γ_t <= τ`` else 1);
* ``η_t^post = η_{t-1} + ρ_t η_t``, which in usual parameters is the paper's update with the
  cross term ``λ ρn / (λ + ρn) (μ - ȳ)(μ - ȳ)ᵀ`` (an outer product; the paper prints an inner
  product, MATH.md §4).

E* of the covariance is ``Ψ_t / ν_t``. Determinants use ``slogdet`` on the foundation's
:class:`~possibly.NormalInverseWishart`; nothing is inverted.

With ``n <= d`` the batch likelihood is unbounded (``S_t`` is singular). The ω split
(paper §4.3, MATH.md §3) then lends a fraction ``1 - ω`` of the current posterior to the
likelihood: ``log c = S(ω η + (η_t + (1-ω) η)) - S(ω η) - S(η_t + (1-ω) η)`` and the posterior
is ``ω η + ρ (η_t + (1-ω) η)``. This needs a posterior with a positive definite ``Ψ`` at every
step, so an informative prior when the first batch has ``n <= d``.

The pure functions :func:`init` and :func:`step` return new objects;
:class:`RobustCovarianceEstimator` runs them over a sequence of batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from possibly.families.inverse_wishart import NormalInverseWishart
from possibly.inference import discount
from possibly.progress import progress_bar
from possibly.validation import check_positive, check_unit_interval

__all__ = [
    "CovarianceFit",
    "CovarianceStepInfo",
    "RobustCovarianceEstimator",
    "batch_information",
    "check_batches",
    "init",
    "step",
]


class CovarianceStepInfo(NamedTuple):
    """What one robust step learnt about its batch (arrays of the runs' batch shape).

    Attributes
    ----------
    log_consistency : ndarray
        ``log c_t`` in ``[-inf, 0]``.
    gamma : ndarray
        ``c_t ** (1 / d')`` before thresholding.
    discount : ndarray
        The exponent ``ρ_t`` applied to the batch likelihood (1 for standard updates).
    """

    log_consistency: np.ndarray
    gamma: np.ndarray
    discount: np.ndarray


def check_batches(batches, *, allow_small: bool = False, min_ndim: int = 3) -> np.ndarray:
    """Validate batches of vectors, shape ``(..., T, n, d)``; return them as a float array.

    Raises ValueError naming ``batches`` for ragged input, NaN or infinite entries, fewer than
    ``min_ndim`` dimensions (3: ``(T, n, d)``; 2 for a single batch ``(n, d)``), empty axes, or
    ``n <= d`` (unless ``allow_small``, for the ω split).

    Examples
    --------
    >>> check_batches(np.zeros((2, 3, 2))).shape
    (2, 3, 2)
    >>> check_batches(np.zeros((2, 2, 2)))
    Traceback (most recent call last):
    ...
    ValueError: batches must hold n > d vectors per batch (got n=2, d=2): ...
    """
    try:
        arr = np.asarray(batches, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            "batches must be an array of shape (T, n, d) or (B, T, n, d) in which every batch "
            "holds the same number n of vectors of the same dimension d (got a ragged or "
            "non-numeric sequence)") from None
    if arr.ndim < min_ndim:
        expected = "(T, n, d) or (B, T, n, d)" if min_ndim == 3 else "(..., n, d)"
        raise ValueError(f"batches must have shape {expected}, got {arr.shape}")
    if 0 in arr.shape:
        raise ValueError(f"batches must not have an empty axis, got shape {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError("batches must not contain NaN")
    if np.isinf(arr).any():
        raise ValueError("batches must be finite, got an infinite value")
    n, d = arr.shape[-2:]
    if n <= d and not allow_small:
        raise ValueError(
            f"batches must hold n > d vectors per batch (got n={n}, d={d}): with n <= d the "
            "batch likelihood is unbounded (its scatter matrix is singular); pass omega to "
            "lend part of the posterior to each batch (paper §4.3), with an informative prior")
    return arr


def batch_information(batches: np.ndarray) -> NormalInverseWishart:
    """The information ``N̄IW̄(ȳ, n, S, n)`` in each batch of an already validated array.

    Same function as :func:`possibly.likelihood.mvn_batch`, without its per-matrix
    eigenvalue checks (this runs inside loops over many runs) and accepting ``n <= d``
    (singular ``S``: an unbounded likelihood, usable only through the ω split).

    Parameters
    ----------
    batches : ndarray, shape (..., n, d)

    Returns
    -------
    NormalInverseWishart
        Batch shape ``batches.shape[:-2]``.

    Examples
    --------
    >>> lik = batch_information(np.array([[0., 0.], [2., 0.], [0., 2.], [2., 2.]]))
    >>> lik.mean, lik.psi, float(lik.nu)
    (array([1., 1.]), array([[4., 0.],
           [0., 4.]]), 4.0)
    """
    n = batches.shape[-2]
    mean = batches.mean(-2)
    centred = batches - mean[..., None, :]
    scatter = np.swapaxes(centred, -1, -2) @ centred
    scatter = 0.5 * (scatter + np.swapaxes(scatter, -1, -2))
    count = np.full(mean.shape[:-1], float(n))
    return NormalInverseWishart.from_fields(
        {"mean": mean, "lam": count, "psi": scatter, "nu": count})


def init(dim: int, batch_shape: tuple[int, ...] = (),
         prior: NormalInverseWishart | None = None) -> NormalInverseWishart:
    """Initial state: ``prior`` (default uninformative, ``f ≡ 1``) broadcast to ``batch_shape``.

    Examples
    --------
    >>> state = init(3, (5,))
    >>> state.batch_shape, state.psi.shape
    ((5,), (5, 3, 3))
    """
    if prior is None:
        return NormalInverseWishart.uninformative(dim, batch_shape)
    _check_prior(prior, dim)
    try:
        shape = np.broadcast_shapes(prior.batch_shape, batch_shape)
    except ValueError:
        raise ValueError(f"prior batch shape {prior.batch_shape} does not broadcast with the "
                         f"runs' batch shape {batch_shape}") from None
    return prior._scaled(np.ones(shape))


def step(state: NormalInverseWishart, information: NormalInverseWishart, *, dim: float,
         tau=None, omega=None, robust: bool = True
         ) -> tuple[NormalInverseWishart, CovarianceStepInfo]:
    """One robust normal-inverse-Wishart update (pure: returns a new state).

    Parameters
    ----------
    state : NormalInverseWishart
        Current posterior, batch shape ``(...)``.
    information : NormalInverseWishart
        Information in the new batch (see :func:`batch_information`), same batch shape.
    dim : float
        Effective dimension ``d'`` in ``γ = c ** (1/d')`` (usually ``d + d(d+1)/2``).
    tau : float in (0, 1], optional
        Threshold: batches with ``γ > τ`` are used whole.
    omega : float in (0, 1), optional
        ω split, for unbounded batch likelihoods (``n <= d``).
    robust : bool
        ``False`` gives the standard conjugate update (exponent 1); the consistency is still
        reported.

    Returns
    -------
    (NormalInverseWishart, CovarianceStepInfo)

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> state = init(2)
    >>> state, info = step(state, batch_information(rng.normal(size=(10, 2))), dim=5)
    >>> float(info.log_consistency), float(info.discount)     # f ≡ 1: fully consistent
    (0.0, 1.0)
    >>> outlier = batch_information(10.0 + 5.0 * rng.normal(size=(10, 2)))
    >>> state2, info = step(state, outlier, dim=5)
    >>> round(float(info.discount), 5), round(float(state2.nu), 5)    # ν grew by ρ n only
    (0.00078, 10.00784)
    """
    if tau is not None:
        tau = float(check_unit_interval("tau", tau, low_open=True, high_open=False))
    if omega is None:
        kept, lik = state, information
    else:
        omega = float(check_unit_interval("omega", omega, low_open=True, high_open=True))
        kept = state._scaled(np.asarray(omega))
        lik = information._add(state._scaled(np.asarray(1.0 - omega)))
    lik_support = lik.log_support()
    if np.isposinf(lik_support).any():
        hint = ("the lent part of the posterior has a singular Psi; use an informative prior"
                if omega is not None else "pass omega (the ω split)")
        raise ValueError("a batch likelihood is unbounded (singular scatter matrix, n <= d or "
                         f"degenerate data): {hint}")
    full = kept._add(lik)
    log_c = np.minimum(full.log_support() - kept.log_support() - lik_support, 0.0)
    gamma = discount(log_c, dim)
    rho = discount(log_c, dim, tau, robust, validate=False)
    # ρ = 1 everywhere is the common case for standard updates: reuse the undiscounted sum.
    new = full if np.all(rho == 1.0) else kept._add(lik._scaled(rho))
    return new, CovarianceStepInfo(log_consistency=log_c, gamma=gamma, discount=rho)


@dataclass(frozen=True)
class CovarianceFit:
    """Result of :meth:`RobustCovarianceEstimator.fit` (leading dims ``(...)`` are the runs).

    Attributes
    ----------
    posterior : NormalInverseWishart
        Final posterior, batch shape ``(...)``.
    mean : ndarray, shape (..., T, d)
        E* of the mean after each batch.
    covariance : ndarray, shape (..., T, d, d)
        E* of the covariance, ``Ψ_t / ν_t``, after each batch (``inf`` while ``ν_t = 0``).
    log_consistency, consistency, gamma, discount : ndarray, shape (..., T)
        Per batch: ``log c_t``, ``c_t``, ``c_t ** (1/d')`` and the exponent applied.
    """

    posterior: NormalInverseWishart
    mean: np.ndarray
    covariance: np.ndarray
    log_consistency: np.ndarray
    consistency: np.ndarray
    gamma: np.ndarray
    discount: np.ndarray


class RobustCovarianceEstimator:
    """Robust online estimate of a mean and covariance from batches of vectors (paper §5.1).

    Parameters
    ----------
    dim : float, optional
        Effective dimension ``d'`` in ``γ = c ** (1/d')``; default ``d + d(d+1)/2``.
    tau : float in (0, 1], optional
        Threshold variant: batches with ``γ > τ`` are used whole (paper §4.2).
    prior : NormalInverseWishart, optional
        Prior; default uninformative (``f ≡ 1``). May be batched over runs.
    omega : float in (0, 1), optional
        ω split for batches of ``n <= d`` vectors (unbounded likelihood); needs a prior with
        positive definite ``Ψ`` and ``ν > 0``.
    robust : bool
        ``False`` gives standard (undiscounted) conjugate updates.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> rng = np.random.default_rng(1)
    >>> batches = rng.normal(size=(40, 8, 2))          # T = 40 batches of n = 8 vectors, d = 2
    >>> batches[20] = 20.0 * rng.normal(size=(8, 2))   # one outlier batch
    >>> fit = ps.RobustCovarianceEstimator().fit(batches)
    >>> fit.covariance.shape, fit.discount.shape
    ((40, 2, 2), (40,))
    >>> float(fit.discount[20]) < 1e-3 < 0.1 < float(np.median(fit.discount))
    True
    >>> standard = ps.RobustCovarianceEstimator(robust=False).fit(batches)
    >>> err = lambda f: float(np.linalg.norm(f.covariance[-1] - np.eye(2)))
    >>> err(fit) < 0.25 < err(standard)
    True
    """

    def __init__(self, dim=None, tau=None, prior: NormalInverseWishart | None = None,
                 omega=None, robust: bool = True) -> None:
        self.dim = None if dim is None else float(check_positive("dim", dim))
        self.tau = None if tau is None else float(
            check_unit_interval("tau", tau, low_open=True, high_open=False))
        self.omega = None if omega is None else float(
            check_unit_interval("omega", omega, low_open=True, high_open=True))
        if prior is not None:
            _check_prior(prior, None)
        self.prior = prior
        self.robust = bool(robust)

    def effective_dim(self, d: int) -> float:
        """``d'`` used for vectors of dimension ``d``."""
        return self.dim if self.dim is not None else float(d + d * (d + 1) // 2)

    def init(self, d: int, batch_shape: tuple[int, ...] = ()) -> NormalInverseWishart:
        """Initial state for ``batch_shape`` runs in dimension ``d``."""
        return init(d, batch_shape, self.prior)

    def step(self, state: NormalInverseWishart, batch
             ) -> tuple[NormalInverseWishart, CovarianceStepInfo]:
        """Update ``state`` with one batch of shape ``(..., n, d)``."""
        arr = check_batches(batch, allow_small=self.omega is not None, min_ndim=2)
        if arr.shape[-1] != state.dim:
            raise ValueError(f"batch has vectors of dimension {arr.shape[-1]}, the state "
                             f"{state.dim}")
        return step(state, batch_information(arr), dim=self.effective_dim(state.dim),
                    tau=self.tau, omega=self.omega, robust=self.robust)

    def fit(self, batches, *, progress: bool = False) -> CovarianceFit:
        """Run over ``batches`` of shape ``(T, n, d)`` or ``(..., T, n, d)`` (``...`` = runs).

        Returns
        -------
        CovarianceFit
        """
        arr = check_batches(batches, allow_small=self.omega is not None)
        d = arr.shape[-1]
        runs, steps = arr.shape[:-3], arr.shape[-3]
        state = self.init(d, runs)
        info_all = batch_information(np.moveaxis(arr, -3, 0))    # time first
        if self.omega is None:
            singular = np.linalg.slogdet(info_all.psi)[0] <= 0
            if singular.any():
                where = np.argwhere(np.moveaxis(singular, 0, -1))[0]
                index = ", ".join(str(i) for i in where.tolist())
                raise ValueError(
                    f"batches[{index}] has a singular scatter matrix (its vectors do not span "
                    "d dimensions), so its likelihood is unbounded")
        dim = self.effective_dim(d)
        means, covs, log_cs, gammas, rhos = [], [], [], [], []
        for t in progress_bar(range(steps), enabled=progress, total=steps, desc="covariance"):
            state, info = step(state, info_all[t], dim=dim, tau=self.tau, omega=self.omega,
                               robust=self.robust)
            mean, cov = state.mode
            means.append(mean)
            covs.append(cov)
            log_cs.append(info.log_consistency)
            gammas.append(info.gamma)
            rhos.append(info.discount)
        axis = len(runs)
        log_c = np.stack(log_cs, axis)
        return CovarianceFit(posterior=state, mean=np.stack(means, axis),
                             covariance=np.stack(covs, axis), log_consistency=log_c,
                             consistency=np.exp(log_c), gamma=np.stack(gammas, axis),
                             discount=np.stack(rhos, axis))


def _check_prior(prior, dim: int | None) -> None:
    if not isinstance(prior, NormalInverseWishart):
        raise ValueError(f"prior must be a NormalInverseWishart, got {type(prior).__name__}")
    if dim is not None and prior.dim != dim:
        raise ValueError(f"prior has dimension {prior.dim}, the batches hold vectors of "
                         f"dimension {dim}")
    if not np.all(prior.bounded):
        raise ValueError("prior must be bounded (positive definite psi wherever nu > 0)")
