"""Possibilistic Bayes, consistency and the robust (discounted) update, for any family.

All operations act on two possibility functions of one family, the prior ``f`` and the
information in the likelihood ``L(θ | y) = p(y | θ) / sup p(y | ·)`` (see
:mod:`possibly.likelihood`). In natural parameters (docs/math.md §2):

* ``combine``: ``eta_post = eta_prior + eta_lik`` (the product renormalised by its sup);
* ``consistency``: ``log c = S(eta_prior + eta_lik) - S(eta_prior) - S(eta_lik)``;
* ``robust_update``: ``eta_post = eta_prior + rho * eta_lik`` with ``gamma = c ** (1 / d)``,
  ``rho = gamma`` (or, with a threshold ``tau``, ``rho = gamma if gamma <= tau else 1``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from possibly.families.base import Possibility
from possibly.frames import per_step_dataset, per_step_frame
from possibly.validation import (
    check_bool,
    check_int,
    check_positive,
    check_tau,
    check_unit_interval,
)

__all__ = [
    "RobustUpdate",
    "combine",
    "consistency",
    "discount",
    "discount_one",
    "inlier_log_consistency",
    "log_consistency",
    "relative_log_consistency",
    "robust_update",
    "SequentialResult",
    "update_sequence",
]


def combine(prior: Possibility, likelihood: Possibility, *, validate: bool = True
            ) -> Possibility:
    """Possibilistic Bayes: ``f(θ) L(θ) / sup_θ' f(θ') L(θ')``.

    Parameters
    ----------
    prior, likelihood : Possibility
        Two possibility functions of the same family; batch dimensions broadcast.
    validate : bool
        Check the pair (default). ``False`` is the unchecked fast path of the algebra for the
        inner loops of the applications, which check their inputs once up front.

    Examples
    --------
    >>> import possibly as ps
    >>> post = ps.combine(ps.Normal(0.0, 1.0), ps.likelihood.normal(2.0, sd=1.0))
    >>> float(post.mean), float(post.precision)
    (1.0, 2.0)
    """
    if validate:
        _check_pair(prior, likelihood)
    return prior._add(likelihood)


def log_consistency(prior: Possibility, likelihood: Possibility, *, validate: bool = True
                    ) -> np.ndarray:
    """``log c``, where ``c = sup_θ f(θ) L(θ | y)`` (see :func:`consistency`).

    ``validate=False`` skips the checks of the pair (see :func:`combine`).
    """
    if validate:
        _check_pair(prior, likelihood)
    return np.asarray(prior._log_consistency(likelihood))


def consistency(prior: Possibility, likelihood: Possibility) -> np.ndarray:
    """Consistency ``c(y) = sup_θ f(θ) L(θ | y)`` in ``[0, 1]`` of an observation with a prior.

    ``c = 1`` when the prior is uninformative; it decreases as prior and likelihood conflict.

    Examples
    --------
    >>> import possibly as ps
    >>> round(float(ps.consistency(ps.Normal(0.0, 1.0), ps.likelihood.normal(2.0, sd=1.0))), 6)
    0.367879
    """
    return np.exp(log_consistency(prior, likelihood))


def discount(log_c, dim, tau=None, robust: bool = True, *, validate: bool = True) -> np.ndarray:
    """The exponent applied to the likelihood, from the log consistency ``log c``.

    ``gamma = c ** (1 / dim)`` for the robust update (paper §4.2); with a threshold ``tau``,
    observations with ``gamma > tau`` are kept whole (exponent 1) and the others get
    ``gamma`` ("information loss"); 1 everywhere for a standard update (``robust=False``).
    A NaN ``log c`` (a missing observation) gives a NaN exponent. This is the only definition
    of the discount in the library; :func:`possibly.compiled.discount_scalar` is its numba
    twin (tested equal).

    Parameters
    ----------
    log_c : array_like
        Log consistency, ``<= 0``; NaN marks a missing observation.
    dim : float
        Effective dimension ``d > 0`` (number of free scalar parameters updated).
    tau : float in (0, 1], optional
        Threshold.
    robust : bool
        False: standard update (exponent 1).
    validate : bool
        Check the arguments (default). The inner loops of the applications check ``dim`` and
        ``tau`` once up front and pass ``validate=False``.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> ps.discount(np.log([1.0, 0.25, 1e-4]), dim=2)
    array([1.  , 0.5 , 0.01])
    >>> ps.discount(np.log([1.0, 0.25, 1e-4]), dim=2, tau=0.1)
    array([1.  , 1.  , 0.01])
    >>> ps.discount(np.log([0.25, np.nan]), dim=2, robust=False)
    array([ 1., nan])
    """
    if validate:
        check_bool("robust", robust)
        log_c = np.asarray(log_c, dtype=np.float64)
        if np.isposinf(log_c).any() or (log_c > 0).any():
            raise ValueError("log_c must be <= 0 (a consistency is at most 1) or NaN (missing)")
        dim = float(check_positive("dim", dim))
        tau = check_tau(tau)
    else:
        log_c = np.asarray(log_c, dtype=np.float64)
    missing = np.isnan(log_c)
    if not robust:
        return np.where(missing, np.nan, 1.0)
    gamma = np.exp(log_c / dim)
    if tau is None:
        return gamma
    return np.where(gamma <= tau, gamma, np.where(missing, np.nan, 1.0))


def _chi2_upper_tail(x: float, m: int) -> float:
    """``P(χ²_m > x)`` for a small integer ``m``, by the finite series of the regularised
    incomplete gamma function at integer and half-integer shape."""
    h = 0.5 * x
    if m % 2 == 0:
        term, total = 1.0, 1.0
        for k in range(1, m // 2):
            term *= h / k
            total += term
        return math.exp(-h) * total
    term = math.sqrt(h) / math.gamma(1.5)
    total = 0.0
    for k in range((m - 1) // 2):
        total += term
        term *= h / (k + 1.5)
    return math.erfc(math.sqrt(h)) + math.exp(-h) * total


@lru_cache(maxsize=64)
def _inlier_log_consistency(obs_dim: int, coverage: float) -> float:
    if obs_dim > 64:  # the series above lose accuracy: scipy (deferred, ~0.1 s to import)
        from scipy.special import gammaincinv

        return float(-gammaincinv(0.5 * obs_dim, coverage))
    # bisection of the upper tail for the χ²_m quantile: without scipy.special, so building
    # a Kalman filter does not import it
    target = 1.0 - coverage
    lo, hi = 0.0, float(obs_dim) + 10.0
    while _chi2_upper_tail(hi, obs_dim) > target:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _chi2_upper_tail(mid, obs_dim) > target:
            lo = mid
        else:
            hi = mid
    return -0.5 * (0.5 * (lo + hi))


def inlier_log_consistency(obs_dim: int, coverage: float) -> float:
    """``log c₀ = -½ χ²_m(coverage)``: the log consistency reached by a fraction ``coverage``
    of the observations drawn from a Gaussian predictive of dimension ``m = obs_dim``.

    An observation ``y`` with Gaussian predictive ``N(ŷ, S)`` has ``c = exp(-½ q)``,
    ``q = (y - ŷ)ᵀ S⁻¹ (y - ŷ) ~ χ²_m``, so ``P(c ≥ c₀) = coverage`` exactly; ``{c ≥ c₀}`` is
    the predictive region of that probability (docs/math.md §7). The Kalman filters use it
    as the reference of the *relative* discount ``ρ = min(1, (c / c₀)^(1/d))``
    (``coverage=``), and the robust start as its outlier floor.

    Examples
    --------
    >>> import math, possibly as ps
    >>> round(ps.inference.inlier_log_consistency(2, 0.9), 6) == round(math.log(0.1), 6)
    True
    """
    m = check_int("obs_dim", obs_dim, low=1)
    p = float(check_unit_interval("coverage", coverage, low_open=True, high_open=True))
    return _inlier_log_consistency(m, p)


def relative_log_consistency(log_c, log_c0) -> np.ndarray:
    """``min(log c - log c₀, 0)``: the log consistency relative to the reference ``c₀``, the
    argument of :func:`discount` for the relative discount ``ρ = min(1, (c / c₀)^(1/d))``
    (NaN stays NaN; no checks: ``log c ≤ 0`` and ``log c₀ ≤ 0`` are the caller's).

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> ps.inference.relative_log_consistency(np.log([1.0, 0.2, 0.01, np.nan]), np.log(0.1))
    array([ 0.        ,  0.        , -2.30258509,         nan])
    """
    return np.minimum(np.asarray(log_c, dtype=np.float64) - log_c0, 0.0)


def discount_one(log_c: float, dim: float, tau: float, robust: bool) -> float:
    """:func:`discount` of one observation, in plain Python (``math.exp``); ``tau`` is the
    threshold or NaN for none. No checks: the inner loops check their parameters once.

    :func:`possibly.compiled.discount_scalar` is this function compiled by numba, so a Python
    loop calling it and a compiled loop give bit-identical values. It agrees with the
    vectorised :func:`discount` to one ulp (numpy's ``exp`` may round differently).

    Examples
    --------
    >>> import math
    >>> discount_one(math.log(0.25), 2.0, math.nan, True), discount_one(-1.0, 2.0, 0.1, True)
    (0.5, 1.0)
    """
    if math.isnan(log_c):
        return math.nan
    if not robust:
        return 1.0
    gamma = math.exp(log_c / dim)
    if not math.isnan(tau) and gamma > tau:
        return 1.0
    return gamma


@dataclass(frozen=True)
class RobustUpdate:
    """Result of :func:`robust_update`.

    Attributes
    ----------
    posterior : Possibility
        The robust posterior.
    log_consistency : ndarray
        ``log c`` in ``[-inf, 0]`` (of the undiscounted likelihood with the prior); kept in
        log space because ``c`` underflows to 0 for gross outliers.
    discount : ndarray
        The exponent applied to the likelihood (``gamma``, or 1 above the threshold).
    gamma : ndarray
        ``c ** (1 / dim)`` before thresholding.
    """

    posterior: Possibility
    log_consistency: np.ndarray
    discount: np.ndarray
    gamma: np.ndarray

    @property
    def consistency(self) -> np.ndarray:
        """``c = exp(log_consistency)`` in ``[0, 1]``."""
        return np.exp(self.log_consistency)


def robust_update(prior: Possibility, likelihood: Possibility, dim=None, tau=None, *,
                  omega=None, lend: str = "all", robust: bool = True,
                  validate: bool = True) -> RobustUpdate:
    """Robust possibilistic Bayes: ``f(θ) L(θ | y) ** rho``, renormalised.

    Parameters
    ----------
    prior, likelihood : Possibility
        Same family. ``likelihood`` must be bounded unless ``omega`` is given.
    dim : float, optional
        Effective dimension ``d`` in ``gamma = c ** (1 / d)``; defaults to the family's number
        of free scalar parameters (``prior.effective_dim``).
    tau : float in (0, 1], optional
        Threshold: observations with ``gamma > tau`` are not discounted.
    omega : float in (0, 1), optional
        ω split for unbounded likelihoods (paper §4.3, docs/math.md §3): a fraction ``1 - omega``
        of the prior is lent to the likelihood so that it becomes bounded; the consistency is
        that of the lent-to likelihood with the kept prior, and the lent part is returned to
        the posterior only as far as the observation is trusted.
    lend : str
        Which part of the prior is lent with ``omega``: ``"all"`` or, for ``NormalGamma``,
        ``"precision"`` (the appendix's refinement).
    robust : bool
        False: the standard update (exponent 1), with the consistency still reported.
    validate : bool
        Check the arguments (default); ``False`` is the inner-loop fast path.

    Returns
    -------
    RobustUpdate

    Examples
    --------
    >>> import possibly as ps
    >>> prior = ps.Normal(0.0, 100.0)                         # well known: near 0
    >>> res = ps.robust_update(prior, ps.likelihood.normal(50.0, sd=1.0))
    >>> float(res.discount) < 1e-100, float(res.posterior.mean) < 1e-100
    (True, True)
    >>> res = ps.robust_update(prior, ps.likelihood.normal(0.1, sd=1.0))
    >>> round(float(res.discount), 4), round(float(res.posterior.mean), 5)
    (0.9951, 0.00099)
    """
    if validate:
        _check_pair(prior, likelihood)
        if not np.all(prior.bounded):  # e.g. Gamma(a > 0, b = 0): not a possibility function
            raise ValueError("prior is unbounded (its supremum is infinite): a prior must be "
                             "a possibility function (sup f = 1)")
    if omega is None:
        if validate and lend != "all":
            raise ValueError("lend only applies with omega")
        if validate and robust:
            likelihood._check_bounded("likelihood")
        kept, lik = prior, likelihood
    else:
        kept, lent = prior.split(omega, part=lend)
        lik = likelihood._add(lent)
        if validate and robust:
            lik._check_bounded("likelihood with the lent part of the prior")
    dim = prior.effective_dim if dim is None else dim
    log_c = np.asarray(kept._log_consistency(lik))
    gamma = discount(log_c, dim, validate=validate)
    # without a threshold the robust exponent is γ itself; `is True` keeps the bool check
    rho = (gamma if robust is True and tau is None
           else discount(log_c, dim, tau, robust, validate=validate))
    posterior = kept._add(lik._scaled(rho))
    return RobustUpdate(posterior=posterior, log_consistency=log_c, discount=rho,
                        gamma=gamma)


def _check_pair(prior: Possibility, likelihood: Possibility) -> None:
    if not isinstance(prior, Possibility):
        raise TypeError(f"prior must be a possibility function, got {type(prior).__name__}")
    prior._check_same_family(likelihood)
    dim, lik_dim = getattr(prior, "dim", None), getattr(likelihood, "dim", None)
    if dim is not None and dim != lik_dim:
        raise ValueError(f"likelihood has dimension {lik_dim}, prior has {dim}")
    try:
        np.broadcast_shapes(prior.batch_shape, likelihood.batch_shape)
    except ValueError:
        raise ValueError(f"batch shapes of prior {prior.batch_shape} and likelihood "
                         f"{likelihood.batch_shape} do not broadcast") from None


@dataclass(frozen=True)
class SequentialResult:
    """Result of :func:`update_sequence`: the final posterior and the per-step history.

    Time is the last batch axis, as in the likelihoods: ``trajectory[..., t]`` is the
    posterior after observation ``t`` (for functions on points, which are not batched,
    ``trajectory`` is the tuple of the posteriors and ``trajectory[t]`` the one after ``t``).

    Attributes
    ----------
    posterior : Possibility
        The posterior after the last observation, batch shape ``(...)``.
    trajectory : Possibility or tuple of Possibility
        The posterior after each observation, batch shape ``(..., T)``.
    log_consistency, discount : ndarray, shape (..., T)
        ``log c`` of each observation with the posterior before it, and the exponent applied
        to its likelihood.
    """

    posterior: Possibility
    trajectory: Possibility | tuple[Possibility, ...]
    log_consistency: np.ndarray
    discount: np.ndarray

    @property
    def consistency(self) -> np.ndarray:
        """``c = exp(log_consistency)`` in ``[0, 1]``."""
        return np.exp(self.log_consistency)

    def _per_step(self) -> dict[str, tuple[np.ndarray, tuple[str, ...]]]:
        """The posterior's parameters after each step and the step's consistency and
        discount, each ``(*batch, T, *event)``, with the names of the event axes."""
        out: dict[str, tuple[np.ndarray, tuple[str, ...]]] = {}
        traj = self.trajectory
        if not isinstance(traj, tuple):  # a tuple: functions on points, no parameters
            events = {0: (), 1: ("component",), 2: ("row", "column")}
            for name, value in traj.fields().items():
                out[name] = (value, events[value.ndim - len(traj.batch_shape)])
        for name in ("log_consistency", "consistency", "discount"):
            out[name] = (np.asarray(getattr(self, name)), ())
        return out

    def to_frame(self) -> Any:
        """One row per observation as a pandas DataFrame: the posterior's parameters after
        it (named as in the family; a vector's entries ``name_i``, a matrix's ``name_i_j``)
        and its ``log_consistency``, ``consistency`` and ``discount``.

        Index: a RangeIndex ``step``; a batch gets a leading ``series`` level (flattened
        batch position).

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> y = np.array([0.1, -0.3, 25.0])
        >>> res = ps.update_sequence(ps.Normal(0.0, 0.0), ps.likelihood.normal(y, sd=1.0))
        >>> res.to_frame().round(3)  # doctest: +NORMALIZE_WHITESPACE
               mean  precision  log_consistency  consistency  discount
        step
        0     0.100      1.000            0.000        1.000     1.000
        1    -0.096      1.961           -0.040        0.961     0.961
        2    -0.096      1.961         -208.546        0.000     0.000
        """
        cols: dict[str, np.ndarray] = {}
        for name, (value, event) in self._per_step().items():
            if not event:
                cols[name] = value
            for i in range(value.shape[-1]) if len(event) == 1 else ():
                cols[f"{name}_{i}"] = value[..., i]
            for i, j in np.ndindex(value.shape[-2:]) if len(event) == 2 else ():
                cols[f"{name}_{i}_{j}"] = value[..., i, j]
        return per_step_frame(cols)

    def to_xarray(self) -> Any:
        """The columns of :meth:`to_frame` as an xarray Dataset over ``series_0, ...``,
        ``time`` and (for vector and matrix parameters) ``component`` or ``row, column``.

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> lik = ps.likelihood.normal(np.zeros((3, 4)), sd=1.0)       # 3 series, T = 4
        >>> ds = ps.update_sequence(ps.Normal(0.0, 0.0), lik).to_xarray()
        >>> dict(ds["mean"].sizes)
        {'series_0': 3, 'time': 4}
        """
        return per_step_dataset(self._per_step())


def update_sequence(prior: Possibility, likelihoods: Possibility, *, robust: bool = True,
                    dim=None, tau=None, omega=None, lend: str = "all") -> SequentialResult:
    """Update ``prior`` with the likelihoods ``likelihoods[..., 0], likelihoods[..., 1], ...``
    in turn.

    Time is the last batch axis, as everywhere in the library (a series has shape
    ``(..., T, *event)``): likelihoods of batch shape ``(..., T)`` are ``T`` observations of
    each of the independent series ``(...)``. The robust update depends on the order of the
    observations (paper §4.1); the standard one (``robust=False``) does not.

    Parameters
    ----------
    prior : Possibility
        Batch shape broadcasting with ``(...)``.
    likelihoods : Possibility
        One family, batch shape ``(..., T)``: time on the last batch axis.
    robust : bool
        Discount each observation by its consistency (default), or apply standard updates.
    dim, tau, omega, lend
        As in :func:`robust_update`.

    Returns
    -------
    SequentialResult
        ``log_consistency`` and ``discount`` of shape ``(..., T)``.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> y = np.array([0.1, -0.3, 25.0, 0.2])                 # one gross outlier
    >>> res = ps.update_sequence(ps.Normal(0.0, 0.0), ps.likelihood.normal(y, sd=1.0))
    >>> res.discount.round(3)
    array([1.   , 0.961, 0.   , 0.971])
    >>> round(float(res.posterior.mean), 3)
    0.002

    Two series of three observations each (batch shape ``(2, 3)``):

    >>> y = np.array([[0.1, -0.3, 25.0], [1.0, 1.2, 0.9]])
    >>> res = ps.update_sequence(ps.Normal(0.0, 0.0), ps.likelihood.normal(y, sd=1.0))
    >>> res.log_consistency.shape, res.trajectory.batch_shape, res.posterior.batch_shape
    ((2, 3), (2, 3), (2,))
    """
    if not likelihoods.batch_shape:
        raise ValueError("likelihoods must have a time axis: their last batch axis (batch "
                         "shape (..., T))")
    post = prior
    history, log_cs, disc = [], [], []
    for t in range(likelihoods.batch_shape[-1]):
        res = robust_update(post, likelihoods[..., t], dim=dim, tau=tau, omega=omega,
                            lend=lend, robust=robust)
        post = res.posterior
        history.append(post)
        log_cs.append(res.log_consistency)
        disc.append(res.discount)
    return SequentialResult(posterior=post, trajectory=type(post).stack(history, axis=-1),
                            log_consistency=np.stack(log_cs, axis=-1),
                            discount=np.stack(disc, axis=-1))
