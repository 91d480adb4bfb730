"""Segment models with unknown noise precision: a level, or a polynomial trend.

:class:`PolynomialTrend` is a Bayesian linear regression on ``(1, τ, τ²)`` with unknown noise
precision λ, whose state is shifted forward each step (``level ← level + slope + curvature``,
...), so the regressor is always ``(1, 0, 0)`` and nothing grows with the segment length;
:func:`NormalMeanVariance` is its degree 0 (a constant level). Given its run, the segment
parameter ``(θ, λ)`` has the normal-gamma possibility ``exp(-λ (θ - m)ᵀ P⁻¹ (θ - m) / 2)
Ḡ(λ; a, b)``. The per-observation formulas (forget, consistency, evidence, outlier floor,
update, hindsight outliers, ``dim``) are in docs/math.md §6.

Scale-free priors: ``resolve(y)`` (called by ``fit``) sets :class:`SegmentPrior` from robust
summaries of the whole series (median, 1.4826 · MAD, length), never from first differences
(tiny on a smooth series); the models work on ``(y - loc) / scale``, so the change points and
the segment models are unchanged under ``y → a y + b`` with ``a > 0``. For streaming, pass
``prior=automatic_prior(warm_up)`` with a warm-up window of the series. On a rounded series
(CPU in whole percent, counts) the prior also holds the quantisation step δ
(:func:`~possibly.changepoint.models.quantisation.quantisation_step`): neither the scale nor a
run's noise variance estimate ``b / a`` goes below the rounding error's ``δ²/12``, so a plateau
of identical values does not make a value one step away look infinitely far.
"""

from __future__ import annotations

import functools
import math
import types
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any, ClassVar, NamedTuple, TypeVar

import numpy as np

from possibly import inference
from possibly.changepoint.models._common import checked_bounds, checked_lengths
from possibly.changepoint.models.quantisation import ROUNDING_SD, quantisation_step
from possibly.changepoint.models.segment_model import (
    DEFAULT_OUTLIER_COST,
    CompiledKernel,
    KernelFunctions,
    Runs,
    SegmentModel,
    as_series,
    check_positive_settings,
    real_scalar,
)
from possibly.inference import discount_one

__all__ = [
    "NormalMeanVariance",
    "PolynomialTrend",
    "SegmentPrior",
    "automatic_prior",
    "discounted_variance_correction",
    "hindsight_log_consistency",
    "model_family",
]

LOG_2PI = math.log(2.0 * math.pi)
#: names of the models by degree (what the default family calls a segment)
TREND_NAMES = ("level", "linear trend", "quadratic trend")
#: hindsight log consistency below which an observation is an outlier: a normal value 5 σ from
#: the fit of the rest of its segment (hindsight_log_consistency)
OUTLIER_LOG_CONSISTENCY = -12.5
#: the hindsight exponents' fixed point (hindsight_log_consistency): tolerance and at most
#: this many iterations (a few suffice; the cap only bounds a pathological oscillation)
HINDSIGHT_TOL = 1e-6
HINDSIGHT_ITERATIONS = 50
#: automatic priors: scale >= this times the largest deviation from the median (no overflow)
RELATIVE_SCALE_FLOOR = 1e-100
#: forgetting never takes a run's gamma rate b below this (it would underflow to 0 on a long
#: run of identical values, which add nothing to b)
B_MIN = 1e-300


@dataclass(frozen=True)
class SegmentPrior:
    """Robust summaries of a series from which the segment priors are built.

    Attributes
    ----------
    loc : float
        Prior location of the level (the series' median).
    scale : float
        Robust overall scale (1.4826 · MAD), ``> 0``.
    horizon : float
        Time scale in steps (the series length) over which a slope may move the level by
        about ``slope_scale · scale``.
    resolution : float
        Quantisation step δ of the series (0: not quantised), ``>= 0``: a run's noise variance
        estimate stays at or above the rounding error's ``δ²/12``.
    """

    loc: float
    scale: float
    horizon: float
    resolution: float = 0.0

    def __post_init__(self) -> None:
        for name in ("loc", "scale", "horizon", "resolution"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(v):
                raise ValueError(f"prior.{name} must be a finite number, got {v!r}")
        if not (self.scale > 0 and self.horizon >= 1 and self.resolution >= 0):
            raise ValueError(f"prior needs scale > 0, horizon >= 1 and resolution >= 0, got "
                             f"{self!r}")

    @property
    def noise_floor(self) -> float:
        """The rounding error's variance ``δ²/12`` in standardised units (``(y - loc) /
        scale``): the least noise variance of a run (0 when not quantised)."""
        return (ROUNDING_SD * self.resolution / self.scale) ** 2


def automatic_prior(y: Any, resolution: float | None = None) -> SegmentPrior:
    """Scale-free prior summaries of a series: median, 1.4826 · MAD, length and resolution.

    When more than half the values tie (a MAD of 0) the scale is their standard deviation (or,
    on a constant series, ``max(|median|, 1)``, which no data can set). On a quantised series
    (:func:`~possibly.changepoint.models.quantisation.quantisation_step`: step δ) the scale is
    at least ``δ / √12``, the sd of a rounding error, and the step is kept in the prior
    (``resolution``) for the runs' noise floor. A series whose values do not repeat gets
    ``resolution=0`` and no floor.

    Parameters
    ----------
    y : array_like, shape (n,)
        Observations (NaN = missing, ignored).
    resolution : float, optional
        The quantisation step in the units of ``y`` when it is known (whole percent: 1), ``>=
        0``; None: read from ``y`` (a short warm-up may show too few levels to tell it).

    Returns
    -------
    SegmentPrior

    Examples
    --------
    >>> automatic_prior([1.0, 2.0, 3.0, 4.0, 100.0])
    SegmentPrior(loc=3.0, scale=1.4826, horizon=5.0, resolution=0.0)
    >>> automatic_prior([3.0] * 38 + [2.0, 4.0])  # std √0.05 < 1 / √12: the rounding floor
    SegmentPrior(loc=3.0, scale=0.2886751345948129, horizon=40.0, resolution=1.0)
    """
    y = as_series(y)
    finite = y[np.isfinite(y)]
    if finite.size == 0:
        raise ValueError("y must hold at least one observed (non-NaN) value")
    loc = float(np.median(finite))
    scale = 1.4826 * float(np.median(np.abs(finite - loc)))
    if not scale > 0:  # more than half the values tied: the spread, then the magnitude
        scale = float(np.std(finite)) or max(abs(loc), 1.0)
    # a MAD 1e100 times below the largest deviation would overflow ((y - loc) / scale)²; the
    # floor is relative to the series, so the prior stays scale-free
    scale = max(scale, RELATIVE_SCALE_FLOOR * float(np.max(np.abs(finite - loc))))
    if resolution is None:
        step = quantisation_step(finite)
    else:
        try:
            step = real_scalar("resolution", resolution)
        except (TypeError, ValueError):
            step = math.nan
        if not (step >= 0.0 and math.isfinite(step)):
            raise ValueError(f"resolution must be a finite number >= 0 (the quantisation step "
                             f"in the units of y), got {resolution!r}")
    return SegmentPrior(loc, max(scale, ROUNDING_SD * step), float(max(y.size, 2)), step)


def _shift_matrix(p: int) -> np.ndarray:
    """``F`` with ``θ(t + 1) = F θ(t)`` for ``y(t + τ) = Σ_j θ_j τ^j``: ``F[i, j] = C(j, i)``."""
    f = np.zeros((p, p))
    for i in range(p):
        for j in range(i, p):
            f[i, j] = math.comb(j, i)
    return f


class TrendObservation(NamedTuple):
    """A standardised observation against a batch of trend runs (:func:`prepare_trend`): what
    the consistency and the update share."""

    runs: Runs
    z: float | np.ndarray
    #: residual ``z - m₀`` of every run's prediction
    r: np.ndarray
    #: ``q = P₀₀``, the prediction's variance relative to the noise's
    q: np.ndarray


def prepare_trend(runs: Runs, z: float | np.ndarray) -> TrendObservation:
    """The residual and prediction variance of the standardised ``z`` (one value, or one per
    run) against every run, computed once per step."""
    return TrendObservation(runs, z, z - runs["m"][:, 0], runs["cov"][:, 0, 0])


def run_log_consistency(runs: Runs, z: float | np.ndarray) -> np.ndarray:
    """Sup-based consistency of the standardised ``z`` (one value, or one per run) with each
    run's prediction."""
    return trend_log_consistency(prepare_trend(runs, z))


def trend_log_consistency(obs: TrendObservation) -> np.ndarray:
    """:func:`run_log_consistency` from the prepared observation."""
    r = obs.r
    return -(obs.runs["a"] + 0.5) * np.log1p(r * r / (2.0 * obs.runs["b"] * (1.0 + obs.q)))


def observe(runs: Runs, z: float, gamma: float, integrated: bool, floor: float,
            noise_floor: float = 0.0) -> tuple[np.ndarray, Runs, np.ndarray]:
    """One standardised observation with exponent γ: ``(evidence, new runs, outlier)``.

    The evidence is floored at its value for a perfectly predicted observation minus
    ``floor``; where the floor is taken (``outlier``) the run is left unchanged. The updated
    ``b`` is kept at or above ``a · noise_floor`` (:attr:`SegmentPrior.noise_floor`).
    """
    return observe_prepared(prepare_trend(runs, z), gamma, integrated, floor, noise_floor)


def observe_prepared(obs: TrendObservation, gamma: float, integrated: bool, floor: float,
                     noise_floor: float = 0.0) -> tuple[np.ndarray, Runs, np.ndarray]:
    """:func:`observe` from the prepared observation."""
    runs, r, q = obs.runs, obs.r, obs.q
    m, cov, a, b = runs["m"], runs["cov"], runs["a"], runs["b"]
    incr, outlier = floored_evidence(a, b, r, q, gamma, integrated, floor)
    g = np.where(outlier, 0.0, gamma)
    gain = cov[:, :, 0] * (g / (1.0 + g * q))[:, None]    # (n, p)
    new = {"m": m + gain * r[:, None],
           "cov": cov - gain[:, :, None] * cov[:, None, 0, :],
           "a": a + 0.5 * g,
           "b": b + 0.5 * g * r * r / (1.0 + g * q),
           "seen": runs["seen"] | ~outlier}
    new["b"] = floored_rate(new["a"], new["b"], noise_floor)
    return incr, new, outlier


def floored_rate(a: Any, b: Any, noise_floor: float) -> Any:
    """The gamma rate ``b`` of runs with shape ``a``, kept at or above ``a · noise_floor``: on a
    quantised series the noise variance estimate ``b / a`` never falls below the rounding
    error's (:attr:`SegmentPrior.noise_floor`); ``b`` itself when ``noise_floor`` is 0.

    Examples
    --------
    >>> floored_rate(np.array([3.0, 3.0]), np.array([0.75, 6.0]), 0.5).tolist()
    [1.5, 6.0]
    >>> floored_rate(3.0, 0.75, 0.0)
    0.75
    """
    if noise_floor > 0.0:
        return np.maximum(b, a * noise_floor)
    return b


def prior_noise_variance(noise_scale: float, prior: SegmentPrior | None) -> float:
    """A new run's noise variance ``b₀ / a₀`` in standardised units: ``noise_scale²``, raised to
    the prior's rounding floor (:attr:`SegmentPrior.noise_floor`) on a quantised series.

    Examples
    --------
    >>> prior_noise_variance(0.5, SegmentPrior(0.0, 1.0, 100.0))
    0.25
    >>> prior_noise_variance(0.5, SegmentPrior(0.0, 1.0, 100.0, resolution=3.0))  # 3² / 12
    0.75
    """
    noise_var = noise_scale ** 2
    if prior is not None and prior.noise_floor > noise_var:
        noise_var = prior.noise_floor
    return noise_var


def floored_evidence(a: np.ndarray, b: np.ndarray, r: np.ndarray, q: np.ndarray, gamma: float,
                     integrated: bool, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """The run-weight increment of an observation with residual ``r`` and prediction variance
    ``q`` (relative to the noise's) for runs with gamma shape ``a`` and rate ``b``, floored at
    its best value minus ``floor``, and where the floor is taken (docs/math.md §6)."""
    gq = 1.0 + gamma * q
    log_ratio = np.log1p(0.5 * gamma * r * r / (gq * b))
    if integrated:
        best = (-0.5 * gamma * LOG_2PI + gammaln(a + 0.5 * gamma) - gammaln(a)
                - 0.5 * np.log(gq) - 0.5 * gamma * np.log(b))
    else:
        best = np.zeros_like(r)
    ev_in = best - (a + 0.5 * gamma) * log_ratio
    outlier = ev_in < best - floor
    return np.where(outlier, best - floor, ev_in), outlier


_Model = TypeVar("_Model", bound="WholeSeriesPrior")


class WholeSeriesPrior:
    """The prior handling of the models on ``y`` with a :class:`SegmentPrior` field ``prior``
    (:class:`PolynomialTrend`, :class:`~possibly.changepoint.models.seasonal.SeasonalTrend`):
    None until ``fit`` sets it from the whole series (:func:`automatic_prior`)."""

    prior: SegmentPrior | None

    @property
    def takes_prior_on_y(self) -> bool:
        return True

    @property
    def resolved(self) -> bool:
        return self.prior is not None

    def resolve(self: _Model, y: np.ndarray) -> _Model:
        return self if self.resolved else replace(self, prior=automatic_prior(y))  # type: ignore[type-var]

    def _prior(self) -> SegmentPrior:
        if self.prior is None:
            raise ValueError("this model sets its prior from the whole series: call fit(y), or "
                             "pass prior=automatic_prior(warm_up) to stream")
        return self.prior

    def check_series(self, y: Any) -> np.ndarray:
        return as_series(y)


@dataclass(frozen=True)
class PolynomialTrend(WholeSeriesPrior, SegmentModel):
    """Segments with a polynomial trend and unknown noise precision (normal-gamma regression).

    Parameters
    ----------
    degree : int
        0 (constant level), 1 (level and slope) or 2 (and curvature).
    level_scale : float
        Prior sd of a new segment's level, in units of the series scale, ``> 0``.
    slope_scale : float
        Prior sd of the change a slope makes over the horizon (the series length), in units
        of the series scale (curvature likewise over the horizon squared), ``> 0``.
    noise_scale : float
        Prior noise sd in units of the series scale, ``> 0``.
    noise_shape : float
        Gamma shape ``a₀ > 0`` of the noise-precision prior.
    evidence : {"integrated", "profile"}
        Run-weight increment: the tempered marginal likelihood (with its Occam factor) or the
        sup-based profile predictive (module docstring).
    outlier_cost : float
        Largest weight one observation can cost a run (log scale), ``> 0``; default
        ``|log 2.5e-3|``, the default hazard's.
    prior : SegmentPrior, optional
        Location and scale of the series; None: set by ``fit`` from the whole series
        (:func:`automatic_prior`). Needed for streaming.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> from possibly.changepoint import NormalMeanVariance, PolynomialTrend
    >>> rng = np.random.default_rng(0)
    >>> y = np.r_[np.zeros(50), 10 + 0.5 * np.arange(50)] + rng.normal(size=100)
    >>> det = ps.ChangepointDetector(model=[NormalMeanVariance(), PolynomialTrend(1)],
    ...                              forgetting=1.0)
    >>> res = det.fit(y)
    >>> res.changepoints.tolist(), res.segment_models
    ([50], [0, 1])
    """

    degree: int = 1
    _: KW_ONLY
    level_scale: float = 2.0
    slope_scale: float = 10.0
    noise_scale: float = 0.5
    noise_shape: float = 1.0
    evidence: str = "integrated"
    outlier_cost: float = DEFAULT_OUTLIER_COST
    prior: SegmentPrior | None = None
    dim: float = field(init=False)
    hindsight_outliers: ClassVar[bool] = True
    #: trends are modelled, not tracked
    default_forgetting: ClassVar[float] = 1.0
    #: ``tol = 0.4 · hazard`` (1e-3 at the default hazard): without pruning the cost per step
    #: grows with the segment length; it bounds the runs kept at a cost of < 0.02 in F1 on the
    #: synthetic suite (BENCHMARKS.md)
    tol_per_hazard: ClassVar[float | None] = 0.4
    _f: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.degree, bool) or not isinstance(self.degree, (int, np.integer)) \
                or not 0 <= self.degree <= 2:
            raise ValueError(f"degree must be 0, 1 or 2, got {self.degree!r}")
        check_positive_settings(self, ("level_scale", "slope_scale", "noise_scale",
                                       "noise_shape", "outlier_cost"))
        if self.prior is not None and not isinstance(self.prior, SegmentPrior):
            raise ValueError(f"prior must be a SegmentPrior (see automatic_prior) or None, got "
                             f"{self.prior!r}")
        object.__setattr__(self, "degree", int(self.degree))
        object.__setattr__(self, "dim", float(self.degree + 3))  # coefficients, λ, run length
        object.__setattr__(self, "_f", _shift_matrix(self.degree + 1))

    @property
    def name(self) -> str:
        return TREND_NAMES[self.degree]

    def new_runs(self, n: int) -> Runs:
        # standardised units: the level's prior location is 0 and the series scale 1
        p = self.degree + 1
        noise_var = prior_noise_variance(self.noise_scale, self.prior)
        # the empty state of init() has the right shapes before the prior is known
        horizon = 1.0 if n == 0 and self.prior is None else self._prior().horizon
        sds = [self.level_scale] + [self.slope_scale / horizon ** j for j in range(1, p)]
        cov = np.diag(np.square(sds)) / noise_var  # relative to the noise variance 1/λ
        return {"m": np.zeros((n, p)), "cov": np.repeat(cov[None], n, axis=0),
                "a": np.full(n, float(self.noise_shape)),
                "b": np.full(n, float(self.noise_shape) * noise_var),
                "seen": np.zeros(n, dtype=bool)}

    def forget(self, runs: Runs, rho: float) -> Runs:
        f = self._f
        cov = f @ runs["cov"] @ f.T
        if rho == 1.0:
            return {**runs, "m": runs["m"] @ f.T, "cov": cov}
        # b floored: a long run of identical values adds nothing to b, which ρᵗ would
        # underflow to 0 (then r² / 2b is 0/0); the floor acts only there
        return {"m": runs["m"] @ f.T, "cov": cov / rho, "a": runs["a"] * rho,
                "b": np.maximum(runs["b"] * rho, B_MIN), "seen": runs["seen"]}

    def _z(self, y: Any) -> float:
        prior = self._prior()
        return (float(y) - prior.loc) / prior.scale

    def prepare(self, runs: Runs, y: Any) -> TrendObservation:
        return prepare_trend(runs, self._z(y))

    def log_consistency(self, prepared: TrendObservation) -> np.ndarray:
        return trend_log_consistency(prepared)

    def update(self, prepared: TrendObservation, gamma: float
               ) -> tuple[np.ndarray, Runs]:
        incr, new, _ = observe_prepared(prepared, gamma, self.evidence == "integrated",
                                        self.outlier_cost, self._prior().noise_floor)
        return incr, new

    def estimate(self, runs: Runs) -> np.ndarray:
        """E* of the current level (in the units of the series)."""
        prior = self._prior()
        return np.where(runs["seen"], prior.loc + prior.scale * runs["m"][:, 0], np.nan)

    def compiled_kernel(self) -> CompiledKernel | None:
        """The kernel of this class (a subclass that changes the recursion gets none).

        Models of this class run together in one compiled loop, each with its own settings.

        Examples
        --------
        >>> kernel = PolynomialTrend(0, prior=SegmentPrior(1.0, 2.0, 100.0)).compiled_kernel()
        >>> kernel.params[:7].tolist()  # degree, integrated, floor, loc, scale, a₀, b₀
        [0.0, 1.0, 5.991464547107982, 1.0, 2.0, 1.0, 0.25]
        """
        if type(self) is not PolynomialTrend:
            return None
        params = np.full(TREND_PARAMS, np.nan)
        params[:3] = self.degree, self.evidence == "integrated", self.outlier_cost
        if self.prior is not None:  # unresolved: a kernel that is never run (fit resolves)
            new = self.new_runs(1)
            p = self.degree + 1
            cov0 = np.zeros((3, 3))
            cov0[:p, :p] = new["cov"][0]
            params[3:] = (self.prior.loc, self.prior.scale, new["a"][0], new["b"][0],
                          *cov0.ravel(), self.prior.noise_floor)
        return CompiledKernel(KERNEL, params, pack_runs, functools.partial(
            unpack_runs, p=self.degree + 1), work_size=12)

    def fitted(self, y: Any, weights: Any, forgetting: float = 1.0, alpha: float = 0.1
               ) -> tuple[np.ndarray, np.ndarray]:
        """A segment's fitted polynomial at each of its steps, and the half-width of its band.

        The segment's possibility function after its last observation (what its run holds
        there, observation ``i`` taken with exponent ``weights[i]``), from all the
        observations at once: the run's update has no process noise, so its natural
        parameters are sums, each observation's (and the prior's) tempered by ``forgetting``
        once per later step. Its polynomial ``xᵀm``, ``x = (1, τ, τ²)`` with ``τ`` the steps
        since the segment's first, is evaluated at every step of the segment.

        The band is the ``alpha``-cut of the fitted value's possibility: with ``θ`` given
        ``λ`` normal around ``m`` with covariance ``P / λ`` and ``λ`` gamma-shaped,
        ``sup {exp(-λ (θ - m)ᵀ P⁻¹ (θ - m) / 2) Ḡ(λ; a, b) : xᵀθ = v} = (1 + Δ / (2b))^(-a)``,
        ``Δ = (v - xᵀm)² / xᵀPx``, so ``|v - xᵀm| ≤ √(2 b (alpha^(-1/a) - 1) xᵀPx)``.

        Parameters
        ----------
        y : array_like, shape (n,)
            The segment's observations in order (NaN: missing).
        weights : array_like, shape (n,)
            Exponent of each observation in [0, 1] (the recursion's discount; 0 leaves an
            observation out, e.g. an outlier).
        forgetting : float
            The detector's ``ρ`` in (0, 1].
        alpha : float
            Possibility level of the band, in (0, 1).

        Returns
        -------
        fit, half_width : ndarray, shape (n,)
            In the units of the series; NaN when no observation has a positive weight.

        Examples
        --------
        >>> from possibly.changepoint import PolynomialTrend, automatic_prior
        >>> y = np.array([0.0, 1.1, 1.9, 3.0, 4.1, 4.9])
        >>> model = PolynomialTrend(1, prior=automatic_prior(y))
        >>> fit, half = model.fitted(y, np.ones(6))
        >>> fit.round(2).tolist()       # least squares: [0.03, 1.02, 2.01, 2.99, 3.98, 4.97]
        [0.12, 1.08, 2.04, 3.01, 3.97, 4.93]
        >>> half.round(2).tolist()      # six points leave the noise scale uncertain
        [1.08, 0.81, 0.64, 0.64, 0.82, 1.09]
        """
        prior = self._prior()
        z = (np.asarray(y, dtype=np.float64) - prior.loc) / prior.scale
        n, p = z.size, self.degree + 1
        observed = ~np.isnan(z)
        given = np.asarray(weights, dtype=np.float64)
        if z.ndim != 1 or given.shape != z.shape:
            raise ValueError(f"y and weights must be two arrays of shape (n,), got shapes "
                             f"{z.shape}, {given.shape}")
        w = np.where(observed, given, 0.0)
        if not ((w >= 0) & (w <= 1)).all():
            raise ValueError("weights must be in [0, 1] where y is observed")
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        nan = np.full(n, np.nan)
        if not (w > 0).any():
            return nan, nan.copy()
        # τ counted from the segment's first step, where the run's prior sits, in units of the
        # segment's span (well conditioned at any length): the coefficient of (τ / span)^j is
        # that of τ^j times span^j
        span = float(max(n - 1, 1))
        u = np.arange(n) / span
        x = u[:, None] ** np.arange(p)
        unit = span ** np.arange(p)
        start = self.new_runs(1)
        precision0 = np.linalg.inv(start["cov"][0] * np.outer(unit, unit))
        age = (n - 1.0) - np.arange(n)  # steps after each observation: its forgetting
        v = w * float(forgetting) ** age
        rho_n = float(forgetting) ** (n - 1.0)
        precision = rho_n * precision0 + x.T @ (v[:, None] * x)
        cov = np.linalg.inv(precision)
        zf = np.where(observed, z, 0.0)
        m = cov @ (x.T @ (v * zf))  # the prior mean is 0 (standardised units)
        r = zf - x @ m
        a = rho_n * float(start["a"][0]) + 0.5 * float(v.sum())
        b = rho_n * float(start["b"][0]) + 0.5 * (float(np.sum(v * r * r))
                                                  + rho_n * float(m @ precision0 @ m))
        b = floored_rate(a, b, prior.noise_floor)
        q = np.einsum("ni,ij,nj->n", x, cov, x)
        half = prior.scale * np.sqrt(2.0 * b * np.expm1(-math.log(alpha) / a) * q)
        return prior.loc + prior.scale * (x @ m), half

    def outlying(self, y: np.ndarray, discount: np.ndarray) -> np.ndarray:
        """In hindsight (see :func:`hindsight_log_consistency`): each observation against the
        fit of its segment from the other observations, discounted as the robust update
        discounts them; far when its consistency is below ``exp(-12.5)`` (a normal value
        5 σ away)."""
        z = (np.asarray(y, dtype=np.float64) - self._prior().loc) / self._prior().scale
        lc = hindsight_log_consistency(lambda w: self._loo_log_consistency(z, w),
                                       self._replay_weights(z, discount), self.dim)
        return lc < OUTLIER_LOG_CONSISTENCY

    def outlying_segments(self, y: np.ndarray, discount: np.ndarray, bounds: np.ndarray,
                          compiled: bool | None = None) -> np.ndarray:
        """:meth:`outlying` of every segment in one pass (see
        :meth:`SegmentModel.outlying_segments`): the exponents the segments' runs gave, by a
        compiled replay (numba) or a numpy one, then the leave-one-out consistencies of all
        the segments at once, iterated to the fixed point segment by segment."""
        bounds = checked_bounds(bounds, len(y))
        out = np.zeros(len(y), dtype=bool)
        if not bounds.size:
            return out
        prior = self._prior()
        lengths = bounds[:, 1] - bounds[:, 0]
        idx = np.repeat(bounds[:, 0] - np.cumsum(lengths) + lengths, lengths) + np.arange(
            int(lengths.sum()))
        z = (np.asarray(y, dtype=np.float64)[idx] - prior.loc) / prior.scale
        disc = np.asarray(discount, dtype=np.float64)[idx]
        out[idx] = self.hindsight_segments(z, disc, lengths,
                                           compiled) < OUTLIER_LOG_CONSISTENCY
        return out

    def hindsight_segments(self, z: np.ndarray, discount: np.ndarray, lengths: np.ndarray,
                           compiled: bool | None = None) -> np.ndarray:
        """The log consistencies of :meth:`outlying` for segments of these ``lengths`` laid
        end to end in ``z`` (standardised) and ``discount``: compiled (numba) when
        ``compiled`` (None: when numba is installed), else by numpy across the segments.

        Examples
        --------
        >>> y = np.array([0.1, -0.2, 0.0, 0.2, 9.0, -0.1, 0.1, 0.0, 5.1, 4.9, 5.0, 5.2])
        >>> model = PolynomialTrend(0, prior=automatic_prior(y))
        >>> z = (y - model.prior.loc) / model.prior.scale
        >>> lc = model.hindsight_segments(z, np.ones(12), np.array([8, 4]), compiled=False)
        >>> np.flatnonzero(lc < -12.5).tolist()  # the spike, judged against its segment
        [4]
        """
        z = np.asarray(z, dtype=np.float64)
        discount = np.asarray(discount, dtype=np.float64)
        if z.ndim != 1 or discount.shape != z.shape:
            raise ValueError(f"z and discount must be 1-D arrays of one length, got shapes "
                             f"{z.shape} and {discount.shape}")
        segments = SegmentLayout.of(checked_lengths(lengths, z.size))
        if not z.size:
            return np.zeros(0)
        kernel = self.compiled_kernel()
        driver = hindsight_driver() if compiled is not False and kernel is not None else None
        if compiled and driver is None:
            raise ImportError("compiled=True needs numba and a PolynomialTrend (not a "
                              "subclass)")
        if driver is not None and kernel is not None:
            start = self.new_runs(1)
            lc = np.empty(z.size)
            driver(kernel.params, np.ascontiguousarray(start["cov"][0]), float(start["a"][0]),
                   float(start["b"][0]), np.ascontiguousarray(z),
                   np.ascontiguousarray(discount), segments.offsets, segments.lengths,
                   float(self.dim), discounted_variance_correction(self.dim), HINDSIGHT_TOL,
                   HINDSIGHT_ITERATIONS, lc)
            return lc
        w0 = self._replay_numpy(z, discount, segments)
        return fixed_point_segments(
            lambda pos, w, layout: self._loo_segments(z[pos], w, layout), w0, self.dim,
            segments)

    def _replay_numpy(self, z: np.ndarray, discount: np.ndarray,
                      segments: SegmentLayout) -> np.ndarray:
        """:meth:`_replay_weights` of all the segments at once: step ``i`` of every segment
        longer than ``i`` in one numpy update (a loop over the longest segment's steps)."""
        w = np.zeros(z.size)
        order = np.argsort(-segments.lengths, kind="stable")  # the longest first
        lengths = segments.lengths[order]
        offsets = segments.offsets[order]
        runs = self.new_runs(order.size)
        integrated = self.evidence == "integrated"
        noise_floor = self._prior().noise_floor
        for i in range(int(lengths[0])):
            alive = int(np.searchsorted(-lengths, -i, side="left"))  # lengths > i
            if i:
                runs = {k: v[:alive] for k, v in runs.items()}
                runs = self.forget(runs, 1.0)
            pos = offsets[:alive] + i
            zi, gi = z[pos], discount[pos]
            seen = ~(np.isnan(zi) | np.isnan(gi))
            if not seen.all():
                sub = {k: v[seen] for k, v in runs.items()}
                _, new, floored = observe(sub, zi[seen], gi[seen], integrated,
                                          self.outlier_cost, noise_floor)
                for k in runs:
                    runs[k] = runs[k].copy()
                    runs[k][seen] = new[k]
                w[pos[seen]] = np.where(floored, 0.0, gi[seen])
            else:
                _, runs, floored = observe(runs, zi, gi, integrated, self.outlier_cost,
                                           noise_floor)
                w[pos] = np.where(floored, 0.0, gi)
        return w

    def _loo_segments(self, z: np.ndarray, w: np.ndarray, segments: SegmentLayout
                      ) -> np.ndarray:
        """:meth:`_loo_log_consistency` of every segment of ``z`` at once (the segments'
        sums by ``np.add.reduceat``, their small matrices inverted as one stack)."""
        n, p = segments.lengths, self.degree + 1
        missing = np.isnan(z)
        w = np.where(missing, 0.0, w)
        zf = np.where(missing, 0.0, z)
        span = np.maximum(n - 1, 1).astype(np.float64)
        x = (segments.local / np.repeat(span, n))[:, None] ** np.arange(p)
        prior = self.new_runs(1)
        unit = span[:, None] ** np.arange(p)
        precision0 = np.linalg.inv(prior["cov"][0] * (unit[:, :, None] * unit[:, None, :]))
        wx = w[:, None] * x
        precision = precision0 + np.add.reduceat(wx[:, :, None] * x[:, None, :],
                                                 segments.offsets, axis=0)
        cov = np.linalg.inv(precision)
        m = np.einsum("gij,gj->gi", cov, np.add.reduceat(wx * zf[:, None], segments.offsets,
                                                         axis=0))
        r = zf - np.einsum("ni,ni->n", x, np.repeat(m, n, axis=0))
        a = float(prior["a"][0]) + 0.5 * np.add.reduceat(w, segments.offsets)
        kappa = discounted_variance_correction(self.dim)
        b = float(prior["b"][0]) + 0.5 * kappa * (
            np.add.reduceat(w * r * r, segments.offsets)
            + np.einsum("gi,gij,gj->g", m, precision0, m))
        s = np.einsum("ni,nij,nj->n", x, np.repeat(cov, n, axis=0), x)
        left = 1.0 - w * s
        loo = {"m": (zf - r / left)[:, None], "cov": (s / left)[:, None, None],
               "a": np.repeat(a, n) - 0.5 * w,
               "b": np.maximum(np.repeat(b, n) - 0.5 * kappa * w * r * r / left,
                               float(prior["b"][0]))}
        return np.where(missing, np.nan, run_log_consistency(self._floored(loo), z))

    def _replay_weights(self, z: np.ndarray, discount: np.ndarray) -> np.ndarray:
        """The exponent each observation got in the segment's run: its online discount, or 0
        where the run's outlier floor took it (NaN observations: 0)."""
        runs = self.new_runs(1)
        w = np.zeros(z.size)
        integrated = self.evidence == "integrated"
        for i in range(z.size):
            if i:
                runs = self.forget(runs, 1.0)
            if math.isnan(z[i]) or math.isnan(discount[i]):
                continue
            _, runs, floored = observe(runs, float(z[i]), float(discount[i]), integrated,
                                       self.outlier_cost, self._prior().noise_floor)
            w[i] = 0.0 if floored[0] else discount[i]
        return w

    def _loo_log_consistency(self, z: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Consistency of each standardised ``z[i]`` with the segment's possibility function
        from the others, observation ``j`` with exponent ``w[j]`` (NaN ``z``: NaN).

        The run's normal-gamma regression on ``(1, τ, τ²)`` (module docstring) from all the
        observations at once, in the time unit ``τ / (n - 1)`` (well conditioned; the prior is
        mapped to it), then each observation taken out again in closed form: with leverage
        ``s = xᵀ P x`` and residual ``r`` at the fit, ``r₋ = r / (1 - w s)``, ``q₋ = s / (1 - w
        s)``, ``a₋ = a - w/2``, ``b₋ = b - w r² / (2 (1 - w s))`` (the update of ``observe``
        inverted).
        """
        n, p = z.size, self.degree + 1
        missing = np.isnan(z)
        w = np.where(missing, 0.0, w)
        zf = np.where(missing, 0.0, z)
        span = float(max(n - 1, 1))
        x = (np.arange(n) / span)[:, None] ** np.arange(p)
        prior = self.new_runs(1)
        unit = span ** np.arange(p)  # coefficient of (τ / span)^k = coefficient of τ^k · span^k
        precision0 = np.linalg.inv(prior["cov"][0] * np.outer(unit, unit))
        precision = precision0 + x.T @ (w[:, None] * x)
        cov = np.linalg.inv(precision)
        m = cov @ (x.T @ (w * zf))
        r = zf - x @ m
        a = float(prior["a"][0]) + 0.5 * float(w.sum())
        # the residual form of b (no cancellation when a discounted spike is huge), its
        # discounted sum of squares made consistent for σ² (hindsight_log_consistency)
        kappa = discounted_variance_correction(self.dim)
        b = float(prior["b"][0]) + 0.5 * kappa * (float(np.sum(w * r * r))
                                                  + float(m @ precision0 @ m))
        s = np.einsum("ni,ij,nj->n", x, cov, x)
        left = 1.0 - w * s  # > 0: the prior keeps the precision above w x xᵀ
        loo = {"m": (zf - r / left)[:, None], "cov": (s / left)[:, None, None],
               "a": a - 0.5 * w, "b": np.maximum(b - 0.5 * kappa * w * r * r / left,
                                                  float(prior["b"][0]))}
        return np.where(missing, np.nan, run_log_consistency(self._floored(loo), z))

    def _floored(self, runs: Runs) -> Runs:
        """``runs`` with ``b`` at or above ``a · noise_floor`` (the rounding error's variance
        on a quantised series; unchanged otherwise)."""
        return {**runs, "b": floored_rate(runs["a"], runs["b"], self._prior().noise_floor)}


def hindsight_log_consistency(loo_log_consistency: Any, weights: np.ndarray, dim: float
                              ) -> np.ndarray:
    """Hindsight log consistency of each observation of a segment with the rest of it.

    Once the segmentation is known, each observation can be judged against the other
    observations of its segment, before and after it, instead of its past alone (which, early
    in a segment, holds a few points and a vague noise scale, so that no value looks far).
    The segment's possibility function is the model's update with an exponent ``w_j`` per
    observation; observation ``i`` is judged by its sup-based consistency ``c_i`` with that
    function with ``i`` left out, and gets the robust update's exponent ``γ_i = c_i^(1/d)``
    (docs/math.md §6): a fixed point, iterated from the exponents the recursion gave
    (``weights``: the online discounts, 0 where the run's outlier floor took the observation),
    so that the outliers, discounted to almost nothing, do not inflate the noise scale by
    which the others are judged.

    The discount also shrinks the inliers' tails: under the model's normal noise with
    variance σ², weights ``exp(-r² / (2 d σ̂²))`` give the weighted variance
    ``(1/σ² + 1/(d σ̂²))⁻¹``, whose fixed point is ``σ̂² = σ² (d - 1) / d``. The models multiply
    their discounted sums of squares by :func:`discounted_variance_correction` ``d / (d - 1)``
    (as 1.4826 makes the MAD consistent), so that the threshold ``exp(-12.5)`` means 5 σ.

    Parameters
    ----------
    loo_log_consistency : callable
        ``w -> log c`` (NaN for a missing observation): the consistency of each observation
        with the segment from the others, observation ``j`` with exponent ``w[j]``.
    weights : ndarray, shape (n,)
        Initial exponents in [0, 1].
    dim : float
        The model's ``d`` (free parameters plus one).

    Returns
    -------
    ndarray, shape (n,)
        The log consistencies at the fixed point.

    Examples
    --------
    >>> from possibly.changepoint import NormalMeanVariance, automatic_prior
    >>> y = np.array([0.3, 9.0, -0.2, 0.1, 0.5, -0.4, 0.0, 0.2, -0.1, 8.0, 0.4, -0.3])
    >>> model = NormalMeanVariance(prior=automatic_prior(y))
    >>> z = (y - model.prior.loc) / model.prior.scale
    >>> lc = hindsight_log_consistency(lambda w: model._loo_log_consistency(z, w),
    ...                                np.ones(12), model.dim)
    >>> np.flatnonzero(lc < -12.5).tolist()
    [1, 9]
    """
    w = np.asarray(weights, dtype=np.float64)
    lc = loo_log_consistency(w)
    for _ in range(HINDSIGHT_ITERATIONS):
        new = np.nan_to_num(inference.discount(lc, dim, validate=False), nan=0.0)
        if np.max(np.abs(new - w), initial=0.0) < HINDSIGHT_TOL:
            break
        w = new
        lc = loo_log_consistency(w)
    return lc


class SegmentLayout(NamedTuple):
    """Segments laid end to end in one array: where each begins, its length, and each
    element's step within its segment."""

    offsets: np.ndarray
    lengths: np.ndarray
    local: np.ndarray

    @classmethod
    def of(cls, lengths: np.ndarray) -> SegmentLayout:
        """The layout of segments of these (positive) lengths."""
        lengths = np.asarray(lengths, dtype=np.int64)
        offsets = np.cumsum(lengths) - lengths
        local = np.arange(int(lengths.sum())) - np.repeat(offsets, lengths)
        return cls(offsets, lengths, local.astype(np.float64))

    def subset(self, which: np.ndarray) -> tuple[np.ndarray, SegmentLayout]:
        """The positions of the segments ``which`` (indices, increasing) and their layout."""
        lengths = self.lengths[which]
        layout = SegmentLayout.of(lengths)
        return np.repeat(self.offsets[which] - layout.offsets, lengths) + np.arange(
            int(lengths.sum())), layout


def fixed_point_segments(loo_log_consistency: Any, weights: np.ndarray, dim: float,
                         segments: SegmentLayout) -> np.ndarray:
    """:func:`hindsight_log_consistency` of several segments laid end to end, each iterated
    until its own exponents settle (then left as they are), as one call per segment would.

    ``loo_log_consistency(positions, w, layout)``: the leave-one-out log consistencies at
    ``positions`` (whole segments, laid out as ``layout``) with exponents ``w`` there."""
    w = np.asarray(weights, dtype=np.float64).copy()
    pos, layout = np.arange(w.size), segments
    lc = loo_log_consistency(pos, w, layout)
    active = np.arange(segments.lengths.size)  # the segments still moving
    for _ in range(HINDSIGHT_ITERATIONS):
        new = np.nan_to_num(inference.discount(lc[pos], dim, validate=False), nan=0.0)
        moved = np.maximum.reduceat(np.abs(new - w[pos]), layout.offsets)
        still = ~(moved < HINDSIGHT_TOL)
        if not still.any():
            break
        new = new[np.repeat(still, layout.lengths)]
        active = active[still]
        pos, layout = segments.subset(active)
        w[pos] = new
        lc[pos] = loo_log_consistency(pos, w[pos], layout)
    return lc


def small_inverse(a, inv):  # pragma: no cover - compiled
    """``inv`` = the inverse of the small square ``a`` (overwritten) by Gauss-Jordan
    elimination with partial pivoting (numba's LAPACK bindings take seconds to compile)."""
    n = a.shape[0]
    for r in range(n):
        for c in range(n):
            inv[r, c] = 1.0 if r == c else 0.0
    for col in range(n):
        pivot = col
        for r in range(col + 1, n):
            if abs(a[r, col]) > abs(a[pivot, col]):
                pivot = r
        for c in range(n):  # rows col and pivot swapped (nothing when equal)
            t = a[col, c]
            a[col, c] = a[pivot, c]
            a[pivot, c] = t
            t = inv[col, c]
            inv[col, c] = inv[pivot, c]
            inv[pivot, c] = t
        d = a[col, col]
        for c in range(n):
            a[col, c] = a[col, c] / d
            inv[col, c] = inv[col, c] / d
        for r in range(n):
            if r != col:
                f = a[r, col]
                for c in range(n):
                    a[r, c] = a[r, c] - f * a[col, c]
                    inv[r, c] = inv[r, c] - f * inv[col, c]


def hindsight_template(params, prior_cov, a0, b0, z, discount, offsets, lengths, dim, kappa,
                       tol, iterations, lc):  # pragma: no cover - compiled
    """``PolynomialTrend.outlying``'s log consistencies of segments laid end to end, into
    ``lc``. Per segment: the exponent each observation got in the segment's run
    (``PolynomialTrend._replay_weights``, by the compiled kernel's functions: its discount, or
    0 where the run's outlier floor took it), then the leave-one-out consistencies
    (``PolynomialTrend._loo_log_consistency``) iterated to their fixed point
    (:func:`hindsight_log_consistency`). One function: each compiled function costs seconds
    of compilation the first time."""
    p = int(params[0]) + 1
    runs = np.zeros((1, TREND_WIDTH))
    work = np.zeros(12)
    scaled = np.empty((p, p))
    precision0 = np.empty((p, p))
    gram = np.empty((p, p))
    cov = np.empty((p, p))
    rhs = np.empty(p)
    m = np.empty(p)
    moments = np.empty(2 * p - 1)
    quad = np.empty(2 * p - 1)
    for g in range(offsets.size):
        first = offsets[g]
        n = lengths[g]
        zs = z[first:first + n]
        w = np.zeros(n)
        new = np.zeros(n)
        res = np.zeros(n)
        out = lc[first:first + n]
        kernel_new_run(params, runs, 0)
        for i in range(n):
            if i > 0:
                kernel_forget(params, runs, 0, 1.0, work)
            gi = discount[first + i]
            if math.isnan(zs[i]) or math.isnan(gi):
                continue
            # the floor test of kernel_update (which leaves a floored run unchanged), the
            # evidence's best value taken off both sides
            r = zs[i] - runs[0, 0]
            log_ratio = math.log1p(0.5 * gi * r * r / ((1.0 + gi * runs[0, 3]) * runs[0, 13]))
            if (runs[0, 12] + 0.5 * gi) * log_ratio <= params[2]:
                kernel_update(params, runs, 0, zs[i], gi, work)
                w[i] = gi
        # the prior's precision and the regressors (1, u, u²) in the time unit u = τ / span
        span = float(max(n - 1, 1))
        for r in range(p):
            for c in range(p):
                scaled[r, c] = prior_cov[r, c] * (span ** r * span ** c)
        small_inverse(scaled, precision0)
        # the regressors are (1, u, u²), u = τ / span: x xᵀ has the 2p - 1 entries u^k and
        # xᵀ C x is a polynomial in u
        for it in range(iterations + 1):
            for k in range(2 * p - 1):
                moments[k] = 0.0
            for r in range(p):
                rhs[r] = 0.0
            total = 0.0
            for i in range(n):
                if not math.isnan(zs[i]):
                    u = i / span
                    power = w[i]
                    for k in range(2 * p - 1):
                        moments[k] += power
                        if k < p:
                            rhs[k] += power * zs[i]
                        power *= u
                    total += w[i]
            for r in range(p):
                for c in range(p):
                    gram[r, c] = precision0[r, c] + moments[r + c]
            small_inverse(gram, cov)
            for r in range(p):
                m[r] = 0.0
                for c in range(p):
                    m[r] += cov[r, c] * rhs[c]
            for k in range(2 * p - 1):
                quad[k] = 0.0
            for r in range(p):
                for c in range(p):
                    quad[r + c] += cov[r, c]
            ss = 0.0
            for i in range(n):
                u = i / span
                fit = m[p - 1]
                for r in range(p - 2, -1, -1):
                    fit = fit * u + m[r]
                res[i] = (0.0 if math.isnan(zs[i]) else zs[i]) - fit
                if not math.isnan(zs[i]):
                    ss += w[i] * res[i] * res[i]
            mpm = 0.0
            for r in range(p):
                for c in range(p):
                    mpm += m[r] * precision0[r, c] * m[c]
            a = a0 + 0.5 * total
            b = b0 + 0.5 * kappa * (ss + mpm)
            for i in range(n):
                if math.isnan(zs[i]):
                    out[i] = math.nan
                    continue
                u = i / span
                s = quad[2 * p - 2]
                for k in range(2 * p - 3, -1, -1):
                    s = s * u + quad[k]
                left = 1.0 - w[i] * s
                d = res[i] / left  # z minus the leave-one-out fit
                bi = max(b - 0.5 * kappa * w[i] * res[i] * res[i] / left, b0)
                if params[16] > 0.0:  # PolynomialTrend._floored
                    bi = max(bi, (a - 0.5 * w[i]) * params[16])
                out[i] = -(a - 0.5 * w[i] + 0.5) * math.log1p(
                    d * d / (2.0 * bi * (1.0 + s / left)))
            if it == iterations:
                break
            moved = 0.0
            for i in range(n):
                v = discount_one(out[i], dim, math.nan, True)
                new[i] = 0.0 if math.isnan(v) else v
                moved = max(moved, abs(new[i] - w[i]))
            if moved < tol:
                break
            for i in range(n):
                w[i] = new[i]


@functools.cache
def hindsight_driver() -> Any:
    """:func:`hindsight_template` compiled with the kernel's functions (None without
    numba)."""
    try:
        import numba

        from possibly.compiled import discount_scalar  # the package's numba cache folder
    except ImportError:
        return None
    jit = numba.njit(nogil=True)
    scope = {**hindsight_template.__globals__, "kernel_new_run": jit(kernel_new_run),
             "kernel_forget": jit(kernel_forget), "kernel_update": jit(kernel_update),
             "discount_one": discount_scalar}
    for helper in (small_inverse,):
        scope[helper.__name__] = jit(types.FunctionType(helper.__code__, scope,
                                                        helper.__name__))
    driver = types.FunctionType(hindsight_template.__code__, scope, "hindsight_compiled")
    return numba.njit(cache=True, nogil=True)(driver)


def discounted_variance_correction(dim: float) -> float:
    """``d / (d - 1)``: makes a sum of squares discounted by ``γ = c^(1/d)`` consistent for the
    noise variance at the fixed point of :func:`hindsight_log_consistency` (``d > 1``).

    Examples
    --------
    >>> discounted_variance_correction(3.0)
    1.5
    """
    return dim / (dim - 1.0)


def model_family(**kwargs: Any) -> list[PolynomialTrend]:
    """The model family chosen on the synthetic suite: constant level, linear and quadratic
    trend, all with unknown noise precision (keyword arguments go to every model).

    It is what ``ChangepointDetector()`` runs on a scalar series, with ``forgetting=1.0`` and
    ``tol=0.4 * hazard`` (``1e-3`` at the default hazard, which bounds the number of runs
    kept): ``ChangepointDetector(model=model_family(), forgetting=1.0, tol=1e-3)``
    (benchmarks/bench_changepoint_quality.py, BENCHMARKS.md); these two are also the defaults
    for any list of ``PolynomialTrend`` models.

    Examples
    --------
    >>> [m.degree for m in model_family()]
    [0, 1, 2]
    """
    return [PolynomialTrend(degree, **kwargs) for degree in (0, 1, 2)]


def NormalMeanVariance(**kwargs: Any) -> PolynomialTrend:  # noqa: N802 - a model constructor
    """Segments with a constant level and unknown noise precision (normal-gamma).

    ``PolynomialTrend(degree=0, **kwargs)``; keyword arguments as :class:`PolynomialTrend`.

    Examples
    --------
    >>> from possibly.changepoint import NormalMeanVariance
    >>> NormalMeanVariance().dim
    3.0
    """
    return PolynomialTrend(0, **kwargs)


def gammaln(x: Any) -> Any:
    """``log Γ(x)``: ``scipy.special.gammaln``, imported on first use.

    scipy.special is slow to import; deferring it keeps ``import possibly`` fast.
    """
    from scipy.special import gammaln as scipy_gammaln

    return scipy_gammaln(x)


# ----------------------------------------------------------------------------------------------
# the compiled kernel (KernelFunctions), the formulas of observe_prepared and forget per run.
# A run is the row (m (3), cov (3 × 3, row-major), a, b, seen, lgamma(a)), coefficients padded
# to 3; params are (degree, integrated, floor, loc, scale, a₀, b₀, cov₀ (9), noise floor).
# lgamma(a) is the integrated evidence's lgamma of the run's a, kept from its update for the
# next one (the same function of the same a: the same bits); NaN until computed.

TREND_WIDTH = 16
TREND_PARAMS = 17
#: the shift matrix F[i, j] = C(j, i) of the largest degree (a tuple: compiled kernels read it
#: faster than an array)
SHIFT = ((1.0, 1.0, 1.0), (0.0, 1.0, 2.0), (0.0, 0.0, 1.0))


def pack_runs(runs: Runs) -> np.ndarray:
    """Trend runs as rows of :data:`TREND_WIDTH` floats (coefficients padded to 3)."""
    n, p = runs["m"].shape
    rows = np.zeros((n, TREND_WIDTH))
    rows[:, :p] = runs["m"]
    cov = np.zeros((n, 3, 3))
    cov[:, :p, :p] = runs["cov"]
    rows[:, 3:12] = cov.reshape(n, 9)
    rows[:, 12], rows[:, 13], rows[:, 14] = runs["a"], runs["b"], runs["seen"]
    rows[:, 15] = np.nan  # lgamma(a): computed by the kernel at the run's next update
    return rows


def unpack_runs(rows: np.ndarray, p: int) -> Runs:
    """The inverse of :func:`pack_runs` for ``p = degree + 1`` coefficients."""
    n = len(rows)
    return {"m": rows[:, :p].copy(), "cov": rows[:, 3:12].reshape(n, 3, 3)[:, :p, :p].copy(),
            "a": rows[:, 12].copy(), "b": rows[:, 13].copy(), "seen": rows[:, 14] != 0.0}


def kernel_prepare(params: np.ndarray, y: float) -> float:
    return (y - params[3]) / params[4]


def kernel_new_run(params: np.ndarray, runs: np.ndarray, j: int) -> None:
    for c in range(3):
        runs[j, c] = 0.0
    for c in range(9):
        runs[j, 3 + c] = params[7 + c]
    runs[j, 12] = params[5]
    runs[j, 13] = params[6]
    runs[j, 14] = 0.0
    runs[j, 15] = math.nan


def kernel_forget(params: np.ndarray, runs: np.ndarray, j: int, rho: float,
                  work: np.ndarray) -> None:
    # np.int64, not int(), and comparisons, not max(): numba compiles int() of a float and
    # max() as functions of their own (time at the first call)
    p = np.int64(params[0]) + 1
    if p > 1:  # m ← F m, P ← F P Fᵀ (work: F m, then F P)
        for r in range(p):
            s = 0.0
            for c in range(p):
                s += SHIFT[r][c] * runs[j, c]
            work[r] = s
        for r in range(p):
            runs[j, r] = work[r]
        for r in range(p):
            for c in range(p):
                s = 0.0
                for e in range(p):
                    s += SHIFT[r][e] * runs[j, 3 + 3 * e + c]
                work[3 + 3 * r + c] = s
        for r in range(p):
            for c in range(p):
                s = 0.0
                for e in range(p):
                    s += work[3 + 3 * r + e] * SHIFT[c][e]
                runs[j, 3 + 3 * r + c] = s
    if rho != 1.0:
        for r in range(p):
            for c in range(p):
                runs[j, 3 + 3 * r + c] = runs[j, 3 + 3 * r + c] / rho
        runs[j, 12] = runs[j, 12] * rho
        b = runs[j, 13] * rho
        runs[j, 13] = B_MIN if B_MIN > b else b  # max(b, B_MIN)
        runs[j, 15] = math.nan


def kernel_log_consistency(params: np.ndarray, runs: np.ndarray, j: int, z: float) -> float:
    r = z - runs[j, 0]
    return -(runs[j, 12] + 0.5) * math.log1p(r * r / (2.0 * runs[j, 13] * (1.0 + runs[j, 3])))


def kernel_update(params: np.ndarray, runs: np.ndarray, j: int, z: float, g: float,
                  work: np.ndarray) -> float:
    p = np.int64(params[0]) + 1  # as kernel_forget
    aj = runs[j, 12]
    bj = runs[j, 13]
    r = z - runs[j, 0]
    q = runs[j, 3]
    gq = 1.0 + g * q
    log_ratio = math.log1p(0.5 * g * r * r / (gq * bj))
    integrated = params[1] != 0.0
    lgamma_next = math.nan
    if integrated:
        lgamma_a = runs[j, 15]
        if lgamma_a != lgamma_a:
            lgamma_a = math.lgamma(aj)
            runs[j, 15] = lgamma_a
        lgamma_next = math.lgamma(aj + 0.5 * g)
        best = (-0.5 * g * LOG_2PI + lgamma_next - lgamma_a
                - 0.5 * math.log(gq) - 0.5 * g * math.log(bj))
    else:
        best = 0.0
    ev_in = best - (aj + 0.5 * g) * log_ratio
    if ev_in < best - params[2]:  # outlier for this run: no update
        return best - params[2]
    f = g / (1.0 + g * q)
    for c in range(p):
        work[c] = runs[j, 3 + c]
    for row in range(p):
        gain = runs[j, 3 + 3 * row] * f
        runs[j, row] = runs[j, row] + gain * r
        for c in range(p):
            runs[j, 3 + 3 * row + c] = runs[j, 3 + 3 * row + c] - gain * work[c]
    runs[j, 12] = aj + 0.5 * g
    runs[j, 15] = lgamma_next  # lgamma of that same a (NaN without the integrated evidence)
    runs[j, 13] = bj + 0.5 * g * r * r / (1.0 + g * q)
    if params[16] > 0.0:  # a quantised series: b / a at least the rounding variance
        floor = runs[j, 12] * params[16]
        if floor > runs[j, 13]:  # max(b, floor), as kernel_forget
            runs[j, 13] = floor
    runs[j, 14] = 1.0
    return ev_in


def kernel_estimate(params: np.ndarray, runs: np.ndarray, j: int) -> float:
    return params[3] + params[4] * runs[j, 0] if runs[j, 14] != 0.0 else math.nan


KERNEL = KernelFunctions(TREND_WIDTH, kernel_prepare, kernel_new_run, kernel_forget,
                         kernel_log_consistency, kernel_update, kernel_estimate)
