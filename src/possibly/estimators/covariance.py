"""Robust streaming estimation of a mean and a full covariance matrix (paper §5.1).

A batch ``Y_t`` of ``n > d`` vectors ``y ~ N(μ, Σ)`` carries the information
``L(μ, Σ | Y_t) = N̄IW̄(ȳ_t, n, S_t, n)`` with ``S_t = Σᵢ (yᵢ - ȳ_t)(yᵢ - ȳ_t)ᵀ`` (docs/math.md §2,
:func:`possibly.likelihood.mvn_batch`). The state (:class:`CovarianceState`) holds the
normal-inverse-Wishart posterior ``N̄IW̄(μ_t, λ_t, Ψ_t, ν_t)``; each step is the robust update
of the core algebra on its fast path (``validate=False``), so that ``log c`` stays in log space
(the formulas are in :func:`step`). E* of the covariance is ``Ψ_t / ν_t``; determinants use
``slogdet`` and nothing is inverted.

With ``n <= d`` the batch likelihood is unbounded (``S_t`` is singular). The ω split (paper
§4.3, docs/math.md §3) then lends a fraction ``1 - ω`` of the current posterior to the
likelihood; this needs a posterior with a positive definite ``Ψ`` at every step, so an
informative prior when the first batch has ``n <= d``.

The pure functions :func:`init` and :func:`step` return new states;
:class:`RobustCovarianceEstimator` (a :class:`~possibly.sequential.SequentialEstimator`) runs
them over batches of shape ``(..., T, n, d)`` (runs, time, then one batch of ``n`` vectors of
dimension ``d``); a batch containing a NaN is missing (predict only: the posterior is carried
over, ``log c`` and the discount are NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from possibly._tree import tree_select
from possibly.families.inverse_wishart import NormalInverseWishart
from possibly.frames import per_step_dataset, per_step_frame
from possibly.inference import combine, robust_update
from possibly.likelihood import mvn_batch
from possibly.progress import progress_bar
from possibly.sequential import Info, SequentialEstimator, is_missing
from possibly.validation import (
    as_numbers,
    check_bool,
    check_positive,
    check_tau,
    check_unit_interval,
)

__all__ = [
    "CovarianceFit",
    "CovarianceInfo",
    "CovarianceState",
    "RobustCovarianceEstimator",
    "check_batches",
    "init",
    "step",
]


@dataclass(frozen=True)
class CovarianceInfo(Info):
    """What one robust step learnt about its batch (arrays of the runs' batch shape).

    Attributes
    ----------
    log_consistency : ndarray
        ``log c_t`` in ``[-inf, 0]``; NaN for a missing batch.
    discount : ndarray
        The exponent ``ρ_t`` applied to the batch likelihood (1 for standard updates).
    gamma : ndarray
        ``c_t ** (1 / d')`` before thresholding.
    """

    gamma: Any = None


@dataclass(frozen=True)
class CovarianceState:
    """The state of the robust covariance recursion: the current posterior.

    Attributes
    ----------
    posterior : NormalInverseWishart
        ``N̄IW̄(μ_t, λ_t, Ψ_t, ν_t)`` after the batches so far, batch shape ``(...)`` (the runs).
    """

    posterior: NormalInverseWishart

    @property
    def dim(self) -> int:
        """The dimension ``d`` of the vectors."""
        return self.posterior.dim

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The runs' batch shape."""
        return self.posterior.batch_shape


def check_batches(batches, *, allow_small: bool = False, min_ndim: int = 3,
                  allow_nan: bool = False) -> np.ndarray:
    """Validate batches of vectors, shape ``(..., T, n, d)``; return them as a float array.

    Raises ValueError naming ``batches`` for ragged input, NaN (unless ``allow_nan``: a batch
    with a NaN is missing) or infinite entries, fewer than ``min_ndim`` dimensions (3:
    ``(T, n, d)``; 2 for a single batch ``(n, d)``), empty axes (``T``, ``n`` or ``d`` = 0),
    or ``n <= d`` (unless ``allow_small``, for the ω split).

    Examples
    --------
    >>> check_batches(np.zeros((2, 3, 2))).shape
    (2, 3, 2)
    >>> check_batches(np.zeros((2, 2, 2)))
    Traceback (most recent call last):
    ...
    ValueError: batches must hold n > d vectors per batch (got n=2, d=2): ...
    >>> check_batches(np.zeros((4, 3, 0)))
    Traceback (most recent call last):
    ...
    ValueError: batches must hold vectors of dimension d >= 1, got d = 0 (shape (4, 3, 0))
    """
    # masked entries: NaN, a missing batch
    arr = as_numbers("batches", batches, what=(
        "an array of shape (T, n, d) or (B, T, n, d) in which every batch holds the same "
        "number n of vectors of the same dimension d (got a ragged or non-numeric sequence)"))
    if arr.ndim < min_ndim:
        expected = "(T, n, d) or (B, T, n, d)" if min_ndim == 3 else "(..., n, d)"
        raise ValueError(f"batches must have shape {expected}, got {arr.shape}")
    if arr.shape[-1] == 0:
        raise ValueError(f"batches must hold vectors of dimension d >= 1, got d = 0 "
                         f"(shape {arr.shape})")
    if arr.shape[-2] == 0:
        raise ValueError(f"batches must hold n >= 1 vectors per batch, got n = 0 "
                         f"(shape {arr.shape})")
    if 0 in arr.shape:
        raise ValueError(f"batches must hold at least one batch (T >= 1), got shape "
                         f"{arr.shape}")
    if not allow_nan and np.isnan(arr).any():
        raise ValueError("batches must not contain NaN")
    if np.isinf(arr).any():
        raise ValueError("batches must be finite (NaN marks a missing batch), got an "
                         "infinite value")
    n, d = arr.shape[-2:]
    if n <= d and not allow_small:
        raise ValueError(
            f"batches must hold n > d vectors per batch (got n={n}, d={d}): with n <= d the "
            "batch likelihood is unbounded (its scatter matrix is singular); pass omega to "
            "lend part of the posterior to each batch (paper §4.3), with an informative prior")
    return arr


def init(dim: int, batch_shape: tuple[int, ...] = (),
         prior: NormalInverseWishart | None = None) -> CovarianceState:
    """Initial state: ``prior`` (default uninformative, ``f ≡ 1``) broadcast to ``batch_shape``.

    Examples
    --------
    >>> state = init(3, (5,))
    >>> state.batch_shape, state.posterior.psi.shape
    ((5,), (5, 3, 3))
    """
    if isinstance(dim, bool) or int(dim) != dim or dim < 1:
        raise ValueError(f"dim (the dimension d of the vectors) must be an integer >= 1, "
                         f"got {dim!r}")
    if prior is None:
        return CovarianceState(NormalInverseWishart.uninformative(int(dim), batch_shape))
    _check_prior(prior, dim)
    try:
        shape = np.broadcast_shapes(prior.batch_shape, batch_shape)
    except ValueError:
        raise ValueError(f"prior batch shape {prior.batch_shape} does not broadcast with the "
                         f"runs' batch shape {batch_shape}") from None
    return CovarianceState(prior.power(np.ones(shape), validate=False))


def step(state: CovarianceState, information: NormalInverseWishart, *, dim: float,
         tau=None, omega=None, robust: bool = True
         ) -> tuple[CovarianceState, CovarianceInfo]:
    """One robust normal-inverse-Wishart update (pure: returns a new state).

    Parameters
    ----------
    state : CovarianceState
        Current posterior, batch shape ``(...)``.
    information : NormalInverseWishart
        Information in the new batch (see :func:`possibly.likelihood.mvn_batch`), same
        batch shape.
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
    (CovarianceState, CovarianceInfo)

    Notes
    -----
    With ``η_{t-1}`` the posterior and ``η_t`` the batch information:

    * ``log c_t = S(η_{t-1} + η_t) - S(η_{t-1}) - S(η_t)`` with ``S = -(ν/2) log|Ψ/ν| - dν/2``,
      i.e. ``2 log c_t = n log|S_t/n| + ν_{t-1} log|Ψ_{t-1}/ν_{t-1}| - ν' log|Ψ'/ν'|`` where
      ``Ψ', ν'`` is the undiscounted update;
    * ``γ_t = c_t ** (1/d')`` (``d' = dim``, usually ``d + d(d+1)/2``), and the exponent
      ``ρ_t = γ_t`` (or, with a threshold ``τ``, ``ρ_t = γ_t`` if ``γ_t <= τ`` else 1);
    * ``η_t^post = η_{t-1} + ρ_t η_t``, which in usual parameters is the paper's update with
      the cross term ``λ ρn / (λ + ρn) (μ - ȳ)(μ - ȳ)ᵀ`` (an outer product; the paper prints an
      inner product, docs/math.md §4).

    With ``omega``: ``log c = S(ω η + (η_t + (1-ω) η)) - S(ω η) - S(η_t + (1-ω) η)`` and the
    posterior is ``ω η + ρ (η_t + (1-ω) η)``.

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.likelihood import mvn_batch
    >>> rng = np.random.default_rng(0)
    >>> state = init(2)
    >>> state, info = step(state, mvn_batch(rng.normal(size=(10, 2))), dim=5)
    >>> float(info.log_consistency), float(info.discount)     # f ≡ 1: fully consistent
    (0.0, 1.0)
    >>> outlier = mvn_batch(10.0 + 5.0 * rng.normal(size=(10, 2)))
    >>> state2, info = step(state, outlier, dim=5)
    >>> round(float(info.discount), 5), round(float(state2.posterior.nu), 5)  # ν grew by ρ n
    (0.00078, 10.00784)
    """
    if not isinstance(state, CovarianceState):
        raise TypeError(f"state must be a CovarianceState (from init, or "
                        f"CovarianceState(posterior)), got {type(state).__name__}")
    tau = check_tau(tau)
    if omega is None:
        kept, lik = state.posterior, information
    else:
        kept, lent = state.posterior.split(omega)          # docs/math.md §3
        lik = cast(NormalInverseWishart, combine(information, lent, validate=False))
    if not np.all(lik.bounded):
        hint = ("the lent part of the posterior has a singular Psi; use an informative prior"
                if omega is not None else "pass omega (the ω split)")
        raise ValueError("a batch likelihood is unbounded (singular scatter matrix, n <= d or "
                         f"degenerate data): {hint}")
    dim = float(check_positive("dim", dim))
    res = robust_update(kept, lik, dim, tau, robust=robust, validate=False)
    return (CovarianceState(cast(NormalInverseWishart, res.posterior)),
            CovarianceInfo(log_consistency=res.log_consistency, discount=res.discount,
                           gamma=res.gamma))


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
        Per batch: ``log c_t``, ``c_t``, ``c_t ** (1/d')`` and the exponent applied (NaN for
        a missing batch).
    """

    posterior: NormalInverseWishart
    mean: np.ndarray
    covariance: np.ndarray
    log_consistency: np.ndarray
    gamma: np.ndarray
    discount: np.ndarray

    @property
    def consistency(self) -> np.ndarray:
        """``c_t = exp(log c_t)``."""
        return np.exp(self.log_consistency)

    def _scalars(self) -> dict[str, np.ndarray]:
        return {"log_consistency": self.log_consistency, "consistency": self.consistency,
                "gamma": self.gamma, "discount": self.discount}

    def to_frame(self) -> Any:
        """One row per batch (and per run) as a pandas DataFrame.

        Columns ``mean_i``, ``cov_i_j`` (``i <= j``), ``log_consistency``, ``consistency``,
        ``gamma`` and ``discount``. Index: a RangeIndex ``step`` (the data, ``(..., T, n,
        d)``, are never a pandas object), with a leading ``series`` level for several runs.

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> batches = np.random.default_rng(1).normal(size=(10, 8, 2))
        >>> ps.RobustCovarianceEstimator().fit(batches).to_frame().columns.tolist()[:5]
        ['mean_0', 'mean_1', 'cov_0_0', 'cov_0_1', 'cov_1_1']
        """
        d = self.mean.shape[-1]
        cols = {f"mean_{i}": self.mean[..., i] for i in range(d)}
        cols.update({f"cov_{i}_{j}": self.covariance[..., i, j]
                     for i in range(d) for j in range(i, d)})
        return per_step_frame({**cols, **self._scalars()})

    def to_xarray(self) -> Any:
        """An xarray Dataset over ``series_0, ...`` (runs) and ``time``: ``mean`` over
        ``component``, ``covariance`` over ``row, column``, and the scalar columns of
        :meth:`to_frame`.

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> batches = np.random.default_rng(1).normal(size=(10, 8, 2))
        >>> dict(ps.RobustCovarianceEstimator().fit(batches).to_xarray()["covariance"].sizes)
        {'time': 10, 'row': 2, 'column': 2}
        """
        data: dict[str, tuple[np.ndarray, tuple[str, ...]]] = {
            "mean": (self.mean, ("component",)), "covariance": (self.covariance, ("row", "column"))}
        data.update({name: (value, ()) for name, value in self._scalars().items()})
        d = np.arange(self.mean.shape[-1])
        return per_step_dataset(data, coords={"component": d, "row": d, "column": d})


class RobustCovarianceEstimator(
        SequentialEstimator[CovarianceState, CovarianceInfo, CovarianceFit]):
    """Robust online estimate of a mean and covariance from batches of vectors (paper §5.1).

    Data have shape ``(..., T, n, d)``: leading independent runs, the time axis, and one
    batch of ``n`` vectors of dimension ``d`` per step (the event shape ``(n, d)``).
    Every argument is keyword-only.

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
    d : int, optional
        Dimension of the vectors, for :meth:`init` and :meth:`update` without a prior
        (``fit`` and the first ``update`` read it from the data).

    Notes
    -----
    Numeric range: any finite entries whose scatter matrices are finite (squares of the
    entries below ``1e154``); a batch whose scatter is singular raises ``ValueError`` (pass
    ``omega``). Threads: ``init``/``step`` and the module functions are pure and
    thread-safe; one instance used by ``fit``/``update`` from two threads at once raises
    :class:`~possibly.sequential.ConcurrentUseError`.

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

    def __init__(self, *, dim=None, tau=None, prior: NormalInverseWishart | None = None,
                 omega=None, robust: bool = True, d: int | None = None) -> None:
        self.dim = None if dim is None else float(check_positive("dim", dim))
        self.tau = check_tau(tau)
        self.omega = None if omega is None else float(
            check_unit_interval("omega", omega, low_open=True, high_open=True))
        if prior is not None:
            _check_prior(prior, d)
        check_bool("robust", robust)
        if d is not None and (isinstance(d, bool) or int(d) != d or d < 1):
            raise ValueError(f"d (the dimension of the vectors) must be an integer >= 1, "
                             f"got {d!r}")
        self.prior = prior
        self.robust = bool(robust)
        self.d = None if d is None else int(d) if prior is None else prior.dim

    def effective_dim(self, d: int) -> float:
        """``d'`` used for vectors of dimension ``d``."""
        return self.dim if self.dim is not None else float(d + d * (d + 1) // 2)

    def init(self, batch_shape: tuple[int, ...] = (), d: int | None = None
             ) -> CovarianceState:
        """Initial state for ``batch_shape`` runs of vectors of dimension ``d`` (default: the
        constructor's ``d`` or the prior's)."""
        d = d if d is not None else self.d if self.d is not None else (
            None if self.prior is None else self.prior.dim)
        if d is None:
            raise ValueError("d (the dimension of the vectors) is unknown: pass d to the "
                             "constructor or to init, or give a prior")
        return init(d, tuple(batch_shape), self.prior)

    def step(self, state: CovarianceState, batch) -> tuple[CovarianceState, CovarianceInfo]:
        """Update ``state`` with one batch of shape ``(..., n, d)``; a batch with a NaN is
        missing (predict only). Pure."""
        arr = check_batches(batch, allow_small=self.omega is not None, min_ndim=2,
                            allow_nan=True)
        if arr.shape[-1] != state.dim:
            raise ValueError(f"batch has vectors of dimension {arr.shape[-1]}, the state "
                             f"{state.dim}")
        missing = is_missing(arr, 2)
        info = mvn_batch(np.where(missing[..., None, None], 0.0, arr), validate=False)
        return self._step(state, info, missing, self.effective_dim(state.dim))

    def _step(self, state: CovarianceState, info: NormalInverseWishart,
              missing: np.ndarray, dim: float) -> tuple[CovarianceState, CovarianceInfo]:
        """:func:`step`, with missing batches (``missing``, batch shape) predict-only."""
        if not missing.any():
            return step(state, info, dim=dim, tau=self.tau, omega=self.omega,
                        robust=self.robust)
        # a missing batch carries no information (the function 1); its Info is NaN
        info = info.power(np.where(missing, 0.0, 1.0), validate=False)
        new, out = step(state, info, dim=dim, tau=self.tau, omega=self.omega,
                        robust=self.robust)
        nan = np.where(missing, np.nan, 0.0)
        kept = tree_select(missing, state.posterior, new.posterior)
        return CovarianceState(kept), CovarianceInfo(
            log_consistency=out.log_consistency + nan, discount=out.discount + nan,
            gamma=out.gamma + nan)

    def update(self, batch) -> CovarianceInfo:
        """Process one batch ``(..., n, d)`` from the current state (streaming)."""
        if self._state is None and self.d is None and self.prior is None:
            arr = as_numbers("batch", batch)
            if arr.ndim >= 2 and arr.shape[-1] >= 1:
                with self._exclusive():
                    object.__setattr__(self, "_state",
                                       self.init(arr.shape[:-2], d=arr.shape[-1]))
        return super().update(batch)

    def fit(self, batches, *, progress: bool = False) -> CovarianceFit:
        """Run over ``batches`` of shape ``(T, n, d)`` or ``(..., T, n, d)`` (``...`` = runs).

        A batch containing a NaN is missing (predict only, NaN ``log c`` and discount).

        Returns
        -------
        CovarianceFit
        """
        arr = check_batches(batches, allow_small=self.omega is not None, allow_nan=True)
        d = arr.shape[-1]
        runs, steps = arr.shape[:-3], arr.shape[-3]
        missing_all = np.moveaxis(is_missing(arr, 2), -1, 0)        # time first
        info_all = mvn_batch(np.moveaxis(np.where(np.isnan(arr), 0.0, arr), -3, 0),
                             validate=False)
        if self.omega is None:
            singular = (np.linalg.slogdet(info_all.psi)[0] <= 0) & ~missing_all
            if singular.any():
                where = np.argwhere(np.moveaxis(singular, 0, -1))[0]
                index = ", ".join(str(i) for i in where.tolist())
                raise ValueError(
                    f"batches[{index}] has a singular scatter matrix (its vectors do not span "
                    "d dimensions), so its likelihood is unbounded")
        dim = self.effective_dim(d)
        means, covs, log_cs, gammas, rhos = [], [], [], [], []
        with self._exclusive():
            state = self.init(runs, d=d)
            for t in progress_bar(range(steps), enabled=progress, total=steps,
                                  desc="covariance"):
                state, info = self._step(state, info_all[t], missing_all[t], dim)
                mean, cov = state.posterior.mode
                means.append(mean)
                covs.append(cov)
                log_cs.append(info.log_consistency)
                gammas.append(info.gamma)
                rhos.append(info.discount)
        axis = len(runs)
        log_c = np.stack(log_cs, axis)
        return CovarianceFit(posterior=state.posterior, mean=np.stack(means, axis),
                             covariance=np.stack(covs, axis), log_consistency=log_c,
                             gamma=np.stack(gammas, axis),
                             discount=np.stack(rhos, axis))


def _check_prior(prior, dim: int | None) -> None:
    if not isinstance(prior, NormalInverseWishart):
        raise ValueError(f"prior must be a NormalInverseWishart, got {type(prior).__name__}")
    if dim is not None and prior.dim != dim:
        raise ValueError(f"prior has dimension {prior.dim}, the batches hold vectors of "
                         f"dimension {dim}")
    if not np.all(prior.bounded):
        raise ValueError("prior must be bounded (positive definite psi wherever nu > 0)")
