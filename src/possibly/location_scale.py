"""Sequential robust estimation of a normal mean and precision (paper §4.3 and appendix A).

One observation ``y ~ N(μ, 1/λ)`` with both parameters unknown has an unbounded likelihood
(``μ = y``, ``λ → ∞``), so its information ``L(θ | y)`` is undefined. The ω split (MATH.md §3)
lends a fraction ``1 - ω`` of the precision part of the current normal-gamma posterior
``N̄Ḡ(m, k, a, b)`` to the likelihood. With ``γ = c ** (1/2)`` and the exponent ``ρ`` (``γ``,
or 1 above the threshold ``τ``), one step is::

    log c = S(a + 1/2, b̂) - S(ω a, ω b) - S((1-ω) a + 1/2, (1-ω) b),   S(α, β) = α log(α/β) - α
    b̂     = b + k (m - y)² / (2 (k + 1))
    m'    = (k m + ρ y) / (k + ρ)              k' = k + ρ
    a'    = ω a + ρ ((1-ω) a + 1/2)            b' = ω b + ρ ((1-ω) b + k (m - y)² / (2 (k + ρ)))

This is :func:`possibly.robust_update` with ``omega`` and ``lend="precision"`` written out for
speed (tests cross-check the two). At ``ρ = 1`` it is the standard normal-gamma update. The
paper prints ``a' = a + ρ((1-ω) a + 1/2)`` and ``b' = b + ρ k (m - y)² / (2 (k + ρ))``, which do
not reduce to the standard update at ``ρ = 1``; this module uses the algebra's version.

The steps are pure functions on a :class:`LocationScaleState` (leading batch dimensions
everywhere); :class:`RobustNormalEstimator` runs them over the last axis of an array.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from possibly.families import NormalGamma
from possibly.families.gamma import gamma_log_support
from possibly.inference import discount
from possibly.validation import as_finite, check_positive, check_unit_interval

__all__ = [
    "LocationScaleFit",
    "LocationScaleInfo",
    "LocationScaleState",
    "RobustNormalEstimator",
    "location_scale_init",
    "location_scale_step",
    "check_observations",
]


class LocationScaleState(NamedTuple):
    """Parameters of the normal-gamma posterior ``N̄Ḡ(mean, k, alpha, beta)``."""

    mean: np.ndarray
    k: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray


class LocationScaleInfo(NamedTuple):
    """What one step did: ``consistency`` ``c``, ``gamma = c ** (1/2)`` and the ``discount``
    (exponent) actually applied. At skipped (NaN) observations ``consistency`` and ``gamma``
    are NaN and ``discount`` is 0 (the observation contributed nothing)."""

    consistency: np.ndarray
    gamma: np.ndarray
    discount: np.ndarray


def location_scale_init(beta0=1.0, mu0=0.0, batch_shape: tuple[int, ...] = ()
                        ) -> LocationScaleState:
    """The paper's prior ``N̄Ḡ(mu0, 0, 0, beta0)``: nothing known about the mean, and a weak
    exponential decay ``exp(-beta0 λ)`` that keeps the lent likelihood bounded.

    Examples
    --------
    >>> from possibly.location_scale import location_scale_init
    >>> location_scale_init(2.0, batch_shape=(3,)).beta
    array([2., 2., 2.])
    """
    beta0 = check_positive("beta0", beta0)
    mu0 = as_finite("mu0", mu0)
    shape = np.broadcast_shapes(tuple(batch_shape), beta0.shape, mu0.shape)
    zeros = np.zeros(shape)
    return LocationScaleState(mean=mu0 + zeros, k=zeros.copy(), alpha=zeros.copy(),
                              beta=beta0 + zeros)


def location_scale_step(state: LocationScaleState, y, *, omega=0.99, tau=None,
                        robust: bool = True) -> tuple[LocationScaleState, LocationScaleInfo]:
    """One robust update of the normal-gamma posterior with one observation per batch entry.

    Parameters
    ----------
    state : LocationScaleState
        Current posterior (batch shape ``B``).
    y : array_like
        Observations, broadcastable to ``B``; NaN entries are skipped (state unchanged),
        infinities rejected.
    omega : float in (0, 1)
        Fraction of the precision information kept in the prior; ``1 - omega`` is lent to
        the likelihood.
    tau : float in (0, 1], optional
        Threshold: ``gamma > tau`` is not discounted. ``None``: always discount by ``gamma``.
    robust : bool
        ``False`` applies the standard update (exponent 1); the consistency is still reported.

    Returns
    -------
    (LocationScaleState, LocationScaleInfo)

    Examples
    --------
    >>> from possibly.location_scale import location_scale_init, location_scale_step
    >>> state, info = location_scale_step(location_scale_init(1.0), 3.0, omega=0.99)
    >>> round(float(info.consistency), 6), round(float(info.discount), 6)   # c = sqrt(1 - ω)
    (0.1, 0.316228)
    """
    omega = float(check_unit_interval("omega", omega, low_open=True, high_open=True))
    if tau is not None:
        tau = float(check_unit_interval("tau", tau, low_open=True, high_open=False))
    m, k, a, b = state
    y = np.asarray(y, dtype=np.float64)
    if np.isinf(y).any():
        raise ValueError("y must be finite or NaN (NaN entries are skipped)")
    skip = np.isnan(y)
    y = np.where(skip, m, y)
    d2 = (m - y) ** 2
    log_c = (gamma_log_support(a + 0.5, b + 0.5 * k * d2 / (k + 1.0))
             - gamma_log_support(omega * a, omega * b)
             - gamma_log_support((1.0 - omega) * a + 0.5, (1.0 - omega) * b))
    log_c = np.minimum(log_c, 0.0)  # S is subadditive; clip rounding above 0
    gamma = discount(log_c, 2.0, validate=False)
    rho = np.where(skip, 0.0, discount(log_c, 2.0, tau, robust, validate=False))
    k_new = k + rho
    # k_new = 0 only when k = 0 and rho = 0 (skipped first observation): keep the mean
    safe = np.where(k_new > 0, k_new, 1.0)
    mean = np.where(k_new > 0, (k * m + rho * y) / safe, m)
    alpha = omega * a + rho * ((1.0 - omega) * a + 0.5)
    beta = omega * b + rho * ((1.0 - omega) * b + 0.5 * k * d2 / safe)
    # a skipped observation leaves the posterior whole (no split either)
    new = LocationScaleState(mean=mean, k=k_new, alpha=np.where(skip, a, alpha),
                             beta=np.where(skip, b, beta))
    nan = np.full(np.shape(gamma), np.nan)
    info = LocationScaleInfo(consistency=np.where(skip, nan, np.exp(log_c)),
                             gamma=np.where(skip, nan, gamma), discount=rho)
    return new, info


def check_observations(name: str, y, *, positive: bool = False) -> np.ndarray:
    """Validate a stream of observations along the last axis: NaN allowed (skipped),
    infinities rejected, at least one dimension; ``positive`` rejects ``y <= 0``."""
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric, got {y!r}") from exc
    if arr.ndim == 0:
        raise ValueError(f"{name} must have a time axis (shape (..., T)), got a scalar")
    if np.isinf(arr).any():
        raise ValueError(f"{name} must be finite or NaN (NaN entries are skipped), "
                         "got an infinite value")
    if positive and (arr <= 0).any():
        raise ValueError(f"{name} must be > 0 (NaN entries are skipped), "
                         f"got {arr[arr <= 0].ravel()[0]!r}")
    return arr


@dataclass(frozen=True)
class LocationScaleFit:
    """Result of :meth:`RobustNormalEstimator.fit`; every array has shape ``(..., T)``.

    Attributes
    ----------
    mean, precision : ndarray
        ``E*(μ)`` and ``E*(λ) = alpha / beta`` after each observation.
    consistency, gamma, discount : ndarray
        Per-observation ``c``, ``c ** (1/2)`` and the exponent applied (see
        :class:`LocationScaleInfo` for skipped observations).
    trajectory : NormalGamma
        The posterior after each observation (batch shape ``(..., T)``).
    """

    mean: np.ndarray
    precision: np.ndarray
    consistency: np.ndarray
    gamma: np.ndarray
    discount: np.ndarray
    trajectory: NormalGamma

    @property
    def posterior(self) -> NormalGamma:
        """The final posterior ``N̄Ḡ`` (batch shape ``(...)``)."""
        return self.trajectory[..., -1]


@dataclass(frozen=True)
class RobustNormalEstimator:
    """Robust sequential estimation of the mean and precision of a normal stream.

    Starts from ``N̄Ḡ(mu0, 0, 0, beta0)`` and applies :func:`location_scale_step` to each
    observation in turn (the order matters once observations are discounted).

    Parameters
    ----------
    beta0 : float > 0
        Prior rate: a weak decay ``exp(-beta0 λ)`` on the precision.
    omega : float in (0, 1)
        Share of the precision information kept in the prior at each step (paper: 0.99).
    tau : float in (0, 1] or None
        Threshold variant (default 0.1, the paper's choice); ``None`` discounts every
        observation by ``gamma`` (which biases the precision upwards, paper appendix A).
    mu0 : float
        Prior location; irrelevant while ``k = 0`` (kept for completeness).
    robust : bool
        ``False`` gives the standard (possibilistic) Bayesian update.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> y = np.array([1.8, 2.4, 1.1, 2.9, 50.0, 2.2, 1.6, 2.5])    # one gross outlier
    >>> fit = ps.RobustNormalEstimator(beta0=1.0, omega=0.99, tau=0.1).fit(y)
    >>> fit.discount > 0.01
    array([ True,  True,  True,  True, False,  True,  True,  True])
    >>> round(float(fit.discount[4]), 5)
    0.00025
    >>> round(float(fit.mean[-1]), 3), round(float(fit.precision[-1]), 3)
    (2.073, 1.459)

    Leading dimensions are independent streams; NaN observations are skipped:

    >>> fit = ps.RobustNormalEstimator().fit(np.array([[1.0, 2.0, 3.0], [1.0, np.nan, 3.0]]))
    >>> fit.mean[:, -1], fit.discount[1]
    (array([2., 2.]), array([1., 0., 1.]))
    """

    beta0: float = 1.0
    omega: float = 0.99
    tau: float | None = 0.1
    mu0: float = 0.0
    robust: bool = True

    def __post_init__(self) -> None:
        check_positive("beta0", self.beta0)
        check_unit_interval("omega", self.omega, low_open=True, high_open=True)
        if self.tau is not None:
            check_unit_interval("tau", self.tau, low_open=True, high_open=False)
        as_finite("mu0", self.mu0)

    def init(self, batch_shape: tuple[int, ...] = ()) -> LocationScaleState:
        """The prior state for a batch of streams."""
        return location_scale_init(self.beta0, self.mu0, batch_shape)

    def step(self, state: LocationScaleState, y) -> tuple[LocationScaleState,
                                                          LocationScaleInfo]:
        """One update (see :func:`location_scale_step`)."""
        return location_scale_step(state, y, omega=float(self.omega), tau=self.tau,
                                   robust=self.robust)

    def fit(self, y) -> LocationScaleFit:
        """Process ``y`` (shape ``(..., T)``) one observation at a time along the last axis.

        NaN observations are skipped (posterior unchanged, discount 0); infinities raise.
        """
        y = check_observations("y", y)
        state = self.init(y.shape[:-1])
        tau = None if self.tau is None else float(self.tau)
        states, infos = [], []
        for t in range(y.shape[-1]):
            state, info = location_scale_step(state, y[..., t], omega=float(self.omega),
                                              tau=tau, robust=self.robust)
            states.append(state)
            infos.append(info)
        fields = {name: np.stack([getattr(s, name) for s in states], axis=-1)
                  for name in LocationScaleState._fields}
        trajectory = NormalGamma.from_fields(fields)
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = np.where(fields["beta"] > 0, fields["alpha"] / fields["beta"], np.inf)

        def stack(name):
            return np.stack([getattr(i, name) for i in infos], axis=-1)

        return LocationScaleFit(mean=fields["mean"], precision=precision,
                                consistency=stack("consistency"), gamma=stack("gamma"),
                                discount=stack("discount"), trajectory=trajectory)
