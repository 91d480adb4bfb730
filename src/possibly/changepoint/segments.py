"""Segment models with unknown noise precision: a level, or a polynomial trend.

:class:`PolynomialTrend` is a Bayesian linear regression on ``(1, τ, τ²)`` with unknown noise
precision λ, whose state is shifted forward each step (``level ← level + slope + curvature``,
...), so the regressor is always ``(1, 0, 0)`` and nothing grows with the segment length;
:func:`NormalMeanVariance` is its degree 0 (a constant level). Given its run, the segment
parameter ``(θ, λ)`` has the normal-gamma possibility ``exp(-λ (θ - m)ᵀ P⁻¹ (θ - m) / 2)
Ḡ(λ; a, b)``. Per observation ``y`` with residual ``r = y - m₀`` and ``q = P₀₀``
(docs/math.md §6, with an unknown λ):

* forget (predict): shift ``m ← F m``, ``P ← F P Fᵀ``; with ``ρ < 1`` the power ``f^ρ``
  (``P ← P / ρ``, ``a ← ρ a``, ``b ← ρ b``);
* consistency (sup-based, possibilistic): ``log sup_{θ,λ} f L / sup_y (...) =
  -(a + ½) log(1 + r² / (2 b (1 + q)))``, a Student-t shape;
* evidence (the run weight increment), ``evidence="integrated"`` (default): the tempered
  marginal likelihood ``∫ p(y | θ, λ)^γ π(θ, λ)``, whose ``-½ log(1 + γ q)`` is the Occam
  factor that stops a richer model from winning for free; ``evidence="profile"``: the sup
  counterpart (the paper's §5.3 rule), ``-(a + γ/2) log(1 + γ r² / (2 b (1 + γ q)))``;
* outlier floor: the increment never falls more than ``outlier_cost`` below its value for a
  perfectly predicted observation; where the floor is taken the observation leaves the run
  unchanged. With ``outlier_cost`` about ``|log hazard|`` a lone spike of any size, or a burst
  of two, costs less than the two change points that would isolate it;
* update with exponent γ: ``P ← P - γ P e₀ e₀ᵀ P / (1 + γ q)``, ``m ← m + γ P e₀ r /
  (1 + γ q)``, ``a ← a + γ/2``, ``b ← b + γ r² / (2 (1 + γ q))``.

Outliers are decided in hindsight, once the segmentation is known: each observation against
the segment's fit from its other observations (:func:`hindsight_log_consistency`).

The discount is the recursion's ``γ = c^(1/d)`` (:func:`possibly.inference.discount`), with
``dim`` the free parameters plus one for the run length: 3 for a level, 4 for a linear trend,
5 for a quadratic one.

Scale-free priors: ``resolve(y)`` (called by ``fit``) sets :class:`SegmentPrior` from robust
summaries of the whole series (median, 1.4826 · MAD, length), never from first differences
(tiny on a smooth series); the models work on ``(y - loc) / scale``, so the change points and
the segment models are unchanged under ``y → a y + b`` with ``a > 0``. For streaming, pass
``prior=automatic_prior(warm_up)`` with a warm-up window of the series.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, NamedTuple

import numpy as np

from possibly import inference
from possibly.changepoint.models import DEFAULT_OUTLIER_COST, Runs, SegmentModel, as_series
from possibly.validation import as_numbers

__all__ = [
    "MultivariateNormalSegments",
    "NormalMeanVariance",
    "PolynomialTrend",
    "SegmentPrior",
    "automatic_prior",
    "automatic_vector_noise",
    "automatic_vector_prior",
    "model_family",
    "outlier_cost_in_dimension",
]

_LOG_2PI = math.log(2.0 * math.pi)
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
#: forgetting never takes an inverse-Wishart's ν below d - 1 + this (proper: ν > d - 1)
NU_MARGIN = 1e-3
#: prior noise sd of MultivariateNormalSegments (units of the componentwise scale) when it is
#: neither given nor estimated from the whole series (a prior given for streaming)
STREAMING_NOISE_SCALE = 0.5


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
    """

    loc: float
    scale: float
    horizon: float

    def __post_init__(self) -> None:
        for name in ("loc", "scale", "horizon"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(v):
                raise ValueError(f"prior.{name} must be a finite number, got {v!r}")
        if not (self.scale > 0 and self.horizon >= 1):
            raise ValueError(f"prior needs scale > 0 and horizon >= 1, got {self!r}")


def automatic_prior(y: Any) -> SegmentPrior:
    """Scale-free prior summaries of a series: median, 1.4826 · MAD and length.

    Parameters
    ----------
    y : array_like, shape (n,)
        Observations (NaN = missing, ignored).

    Returns
    -------
    SegmentPrior

    Examples
    --------
    >>> automatic_prior([1.0, 2.0, 3.0, 4.0, 100.0])
    SegmentPrior(loc=3.0, scale=1.4826, horizon=5.0)
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
    return SegmentPrior(loc, scale, float(max(y.size, 2)))


def outlier_cost_in_dimension(cost: float, d: int) -> float:
    """The evidence floor of a ``d``-dimensional observation that Gaussian inliers cross as
    rarely as a scalar one crosses the floor ``cost``.

    An inlier of a well-learnt segment costs a run ``½ q`` below a perfectly predicted
    observation, ``q ~ χ²_d``; a fixed floor is crossed by inliers more and more often as ``d``
    grows (``P(χ²_8 > 12) = 0.15``), and a floored inlier leaves its run unchanged, so the run
    underestimates its covariance and floors more. The floor is therefore ``½ χ²_d`` at the
    upper-tail probability ``P(χ²_1 > 2 cost)`` (5.3e-4 at the default ``cost = |log 2.5e-3|``):
    ``cost`` for ``d = 1``. Where that probability underflows (``cost > 700``) the asymptotic
    tails ``Q(a, x) ~ x^(a-1) e^(-x) / Γ(a)`` and ``erfc(√c) ~ e^(-c) / √(π c)`` give it.

    Examples
    --------
    >>> [round(outlier_cost_in_dimension(-math.log(2.5e-3), d), 2) for d in (1, 2, 8, 20)]
    [5.99, 7.54, 13.86, 23.65]
    """
    from scipy.special import erfc, gammainccinv

    a = 0.5 * d
    tail = float(erfc(math.sqrt(cost)))
    if tail > 1e-300:
        return float(gammainccinv(a, tail))
    # solve f - (a - 1) log f = c + ½ log(π c) - log Γ(a) by bisection (increasing for f > a - 1)
    rhs = cost + 0.5 * math.log(math.pi * cost) - math.lgamma(a)
    lo = max(cost, a - 1.0)
    hi = 2.0 * lo
    while hi - (a - 1.0) * math.log(hi) < rhs:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if mid - (a - 1.0) * math.log(mid) < rhs:
            lo = mid
        else:
            hi = mid
    return hi


def _check_settings(model: Any, positive: tuple[str, ...]) -> None:
    """The named settings are finite numbers > 0 and ``evidence`` is a known rule."""
    for name in positive:
        v = getattr(model, name)
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    if model.evidence not in ("integrated", "profile"):
        raise ValueError(f"evidence must be 'integrated' or 'profile', got {model.evidence!r}")


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


def observe(runs: Runs, z: float, gamma: float, integrated: bool, floor: float
            ) -> tuple[np.ndarray, Runs, np.ndarray]:
    """One standardised observation with exponent γ: ``(evidence, new runs, outlier)``.

    The evidence is floored at its value for a perfectly predicted observation minus
    ``floor``; where the floor is taken (``outlier``) the run is left unchanged.
    """
    return observe_prepared(prepare_trend(runs, z), gamma, integrated, floor)


def observe_prepared(obs: TrendObservation, gamma: float, integrated: bool, floor: float
                     ) -> tuple[np.ndarray, Runs, np.ndarray]:
    """:func:`observe` from the prepared observation."""
    runs, r, q = obs.runs, obs.r, obs.q
    m, cov, a, b = runs["m"], runs["cov"], runs["a"], runs["b"]
    gq = 1.0 + gamma * q
    log_ratio = np.log1p(0.5 * gamma * r * r / (gq * b))
    if integrated:
        best = (-0.5 * gamma * _LOG_2PI + gammaln(a + 0.5 * gamma) - gammaln(a)
                - 0.5 * np.log(gq) - 0.5 * gamma * np.log(b))
    else:
        best = np.zeros_like(r)
    ev_in = best - (a + 0.5 * gamma) * log_ratio
    outlier = ev_in < best - floor
    g = np.where(outlier, 0.0, gamma)
    gain = cov[:, :, 0] * (g / (1.0 + g * q))[:, None]    # (n, p)
    new = {"m": m + gain * r[:, None],
           "cov": cov - gain[:, :, None] * cov[:, None, 0, :],
           "a": a + 0.5 * g,
           "b": b + 0.5 * g * r * r / (1.0 + g * q),
           "seen": runs["seen"] | ~outlier}
    return np.where(outlier, best - floor, ev_in), new, outlier


@dataclass(frozen=True)
class PolynomialTrend(SegmentModel):
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
    level_scale: float = 2.0
    slope_scale: float = 10.0
    noise_scale: float = 0.5
    noise_shape: float = 1.0
    evidence: str = "integrated"
    outlier_cost: float = DEFAULT_OUTLIER_COST
    prior: SegmentPrior | None = None
    dim: float = field(init=False)
    #: the outlier rule uses ``outlying`` alone (no online discount condition)
    hindsight_outliers: ClassVar[bool] = True
    _f: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.degree, bool) or not isinstance(self.degree, (int, np.integer)) \
                or not 0 <= self.degree <= 2:
            raise ValueError(f"degree must be 0, 1 or 2, got {self.degree!r}")
        _check_settings(self, ("level_scale", "slope_scale", "noise_scale", "noise_shape",
                               "outlier_cost"))
        if self.prior is not None and not isinstance(self.prior, SegmentPrior):
            raise ValueError(f"prior must be a SegmentPrior (see automatic_prior) or None, got "
                             f"{self.prior!r}")
        object.__setattr__(self, "degree", int(self.degree))
        object.__setattr__(self, "dim", float(self.degree + 3))  # coefficients, λ, run length
        object.__setattr__(self, "_f", _shift_matrix(self.degree + 1))

    @property
    def resolved(self) -> bool:
        return self.prior is not None

    def resolve(self, y: np.ndarray) -> PolynomialTrend:
        return self if self.resolved else replace(self, prior=automatic_prior(y))

    def _prior(self) -> SegmentPrior:
        if self.prior is None:
            raise ValueError("this model sets its prior from the whole series: call fit(y), or "
                             "pass prior=automatic_prior(warm_up) to stream")
        return self.prior

    def check_series(self, y: Any) -> np.ndarray:
        return as_series(y)

    def new_runs(self, n: int) -> Runs:
        # standardised units: the level's prior location is 0 and the series scale 1
        p = self.degree + 1
        noise_var = self.noise_scale ** 2
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

    def prepared_log_consistency(self, prepared: TrendObservation) -> np.ndarray:
        return trend_log_consistency(prepared)

    def prepared_update(self, prepared: TrendObservation, gamma: float
                        ) -> tuple[np.ndarray, Runs]:
        incr, new, _ = observe_prepared(prepared, gamma, self.evidence == "integrated",
                                        self.outlier_cost)
        return incr, new

    def estimate(self, runs: Runs) -> np.ndarray:
        """E* of the current level (in the units of the series)."""
        prior = self._prior()
        return np.where(runs["seen"], prior.loc + prior.scale * runs["m"][:, 0], np.nan)

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
                                       self.outlier_cost)
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
        return np.where(missing, np.nan, run_log_consistency(loo, z))


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


# ----------------------------------------------------------------------------------------------
# vector series: mean and covariance (normal-inverse-Wishart)


def automatic_vector_prior(y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Componentwise median and ``1.4826 · MAD`` of a vector series ``(T, d)`` (NaN rows
    ignored): the location and scale that :class:`MultivariateNormalSegments` standardises by.

    Examples
    --------
    >>> loc, scale = automatic_vector_prior([[0.0, 10.0], [1.0, 30.0], [2.0, 20.0]])
    >>> loc.tolist(), scale.round(4).tolist()
    ([1.0, 20.0], [1.4826, 14.826])
    """
    y = _vector_series(y)
    rows = y[~np.isnan(y).any(axis=1)]
    if not len(rows):
        raise ValueError("y must hold at least one fully observed (non-NaN) row")
    loc = np.median(rows, axis=0)
    scale = 1.4826 * np.median(np.abs(rows - loc), axis=0)
    spread = rows.std(axis=0)
    scale = np.where(scale > 0, scale, np.where(spread > 0, spread, np.maximum(np.abs(loc), 1.0)))
    scale = np.maximum(scale, RELATIVE_SCALE_FLOOR * np.abs(rows - loc).max(axis=0))
    return loc, scale


def automatic_vector_noise(y: Any) -> float:
    """Prior noise sd of :class:`MultivariateNormalSegments` in units of the componentwise
    scale of :func:`automatic_vector_prior`: the median over the components of the
    within-segment noise estimate ``1.4826 · MAD(first differences) / √2`` (a level shift
    moves one difference, an outlier two) divided by the component's scale, at most 1;
    ``0.5`` when the differences are mostly tied.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=(2000, 3))
    >>> round(automatic_vector_noise(y), 1)                   # i.i.d.: the scale is the noise
    1.0
    >>> y[1000:] += 6.0                                         # a shift widens the scale only
    >>> round(automatic_vector_noise(y), 2)
    0.22
    """
    y = _vector_series(y)
    rows = y[~np.isnan(y).any(axis=1)]
    _, scale = automatic_vector_prior(rows)
    if len(rows) < 3:
        return STREAMING_NOISE_SCALE
    diff = np.diff(rows, axis=0)
    noise = 1.4826 * np.median(np.abs(diff - np.median(diff, axis=0)), axis=0) / math.sqrt(2.0)
    ratio = float(np.median(noise / scale))
    return min(ratio, 1.0) if ratio > 0 else STREAMING_NOISE_SCALE


def _vector_series(y: Any) -> np.ndarray:
    arr = as_numbers("y", y)
    if arr.ndim != 2 or arr.shape[1] < 2 or arr.shape[0] == 0:
        raise ValueError(f"y must have shape (T, d) with T >= 1 and d >= 2 for "
                         f"MultivariateNormalSegments (use NormalMeanVariance for a scalar "
                         f"series), got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError("y must be finite or NaN (missing)")
    return arr


class VectorObservation(NamedTuple):
    """A standardised vector observation against a batch of normal-inverse-Wishart runs
    (:meth:`MultivariateNormalSegments.prepare`): what the consistency and the update share."""

    runs: Runs
    z: np.ndarray
    #: residuals ``z - m`` (n, d)
    r: np.ndarray
    #: Mahalanobis distances ``rᵀ Ψ⁻¹ r`` (n,)
    delta: np.ndarray


@dataclass(frozen=True)
class MultivariateNormalSegments(SegmentModel):
    """Segments of a vector series with unknown mean and covariance (normal-inverse-Wishart).

    Given its run, ``(μ, Σ)`` has the normal-inverse-Wishart form ``μ | Σ ~ N(m, Σ/κ)``,
    ``Σ ~ IW(Ψ, ν)``, on the componentwise standardised series. Per observation ``y`` with
    ``r = y - m`` and ``δ = rᵀ Ψ⁻¹ r``:

    * consistency: ``-(ν + 1)/2 · log(1 + κ δ / (κ + 1))``, the Student-t shape of the scalar
      models with the Mahalanobis distance;
    * evidence (integrated): the tempered marginal likelihood ``∫ N(y; μ, Σ)^γ NIW``
      ``= π^(-γd/2) (κ/κ')^(d/2) Γ_d(ν'/2)/Γ_d(ν/2) |Ψ|^(ν/2) / |Ψ'|^(ν'/2)``, or the profile
      ``-(ν'/2) log(1 + κ γ δ / κ')``; floored like the scalar models, at the floor that
      ``d``-dimensional inliers cross as rarely as scalar ones cross ``outlier_cost``
      (:func:`outlier_cost_in_dimension`: 13.9 for ``d = 8`` at the default);
    * update with exponent γ: ``κ' = κ + γ``, ``m' = m + γ r / κ'``,
      ``Ψ' = Ψ + (κ γ / κ') r rᵀ``, ``ν' = ν + γ``.

    The prior is ``m = 0``, ``Σ``'s mode ``Ψ/ν = noise_scale² I`` with ``ν = d + 1`` (each
    variance's marginal has the gamma shape 1 of the scalar models' ``noise_shape``), and
    ``κ = noise_scale² / level_scale²``. It holds ``d + 1`` pseudo-observations of ``Σ``: a
    prior noise below the truth makes the first runs judge their inliers too far in all ``d``
    directions at once, so ``fit`` sets it from the series' first differences
    (:func:`automatic_vector_noise`), not from its overall spread.

    ``dim`` counts the free parameters plus one: ``d + d(d + 1)/2 + 1`` (6 for ``d = 2``,
    10 for ``d = 3``). An observation is an outlier in hindsight when its consistency with the
    rest of its segment is below that of a ``χ²_d`` value as rare as a normal value 5 σ away
    (``-½ χ²_d`` at the upper-tail probability 5.7e-7).

    Parameters
    ----------
    level_scale : float
        Prior sd of a new segment's mean, per component in units of its scale, ``> 0``.
    noise_scale : float, optional
        Prior noise sd, per component in units of its scale, ``> 0``; None: set by ``fit``
        from the series (:func:`automatic_vector_noise`), 0.5 with a ``prior`` given (for
        streaming).
    evidence : {"integrated", "profile"}
    outlier_cost : float
        As :class:`PolynomialTrend`, for a scalar observation; the floor of a ``d``-vector is
        :func:`outlier_cost_in_dimension` of it.
    prior : (loc, scale) pair of arrays, optional
        Componentwise location and scale; None: set by ``fit`` (:func:`automatic_vector_prior`).

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> from possibly.changepoint import MultivariateNormalSegments
    >>> y, truth = ps.datasets.multivariate_shifts(200, n_changes=1, dim=2, seed=0)
    >>> res = ps.ChangepointDetector(model=MultivariateNormalSegments(), forgetting=1.0).fit(y)
    >>> res.changepoints.tolist() == truth.changepoints.tolist()
    True
    """

    level_scale: float = 2.0
    noise_scale: float | None = None
    evidence: str = "integrated"
    outlier_cost: float = DEFAULT_OUTLIER_COST
    prior: tuple[np.ndarray, np.ndarray] | None = field(default=None, compare=False)
    dim: float = field(init=False)
    event_ndim: ClassVar[int] = 1
    hindsight_outliers: ClassVar[bool] = True
    #: the evidence floor and the hindsight outlier threshold in the prior's dimension
    #: (outlier_cost_in_dimension)
    _floor: float = field(init=False, repr=False, compare=False)
    _outlying_log_consistency: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_settings(self, ("level_scale", "outlier_cost")
                        + (() if self.noise_scale is None else ("noise_scale",)))
        d = 0
        if self.prior is not None:
            try:
                loc, scale = (np.asarray(v, dtype=np.float64) for v in self.prior)
            except (TypeError, ValueError):
                raise ValueError(f"prior must be a pair (loc, scale) of arrays, got "
                                 f"{self.prior!r}") from None
            if loc.ndim != 1 or loc.shape != scale.shape or loc.size < 2 or \
                    not (np.isfinite(loc).all() and np.isfinite(scale).all()
                         and (scale > 0).all()):
                raise ValueError(f"prior must be (loc, scale), two finite arrays of shape (d,), "
                                 f"d >= 2, with scale > 0, got {self.prior!r}")
            object.__setattr__(self, "prior", (loc, scale))
            d = loc.size
        # before fit knows d, dim is that of d = 2 (it only sets the detector's default
        # outlier_level, which this model does not use: hindsight_outliers)
        dd = d or 2
        object.__setattr__(self, "dim", float(dd + dd * (dd + 1) // 2 + 1))
        object.__setattr__(self, "estimate_shape", (d,) if d else ())
        object.__setattr__(self, "_floor", outlier_cost_in_dimension(self.outlier_cost, dd))
        object.__setattr__(self, "_outlying_log_consistency",
                           -outlier_cost_in_dimension(-OUTLIER_LOG_CONSISTENCY, dd))

    @property
    def resolved(self) -> bool:
        return self.prior is not None

    def resolve(self, y: np.ndarray) -> MultivariateNormalSegments:
        if self.resolved:
            return self
        noise = automatic_vector_noise(y) if self.noise_scale is None else self.noise_scale
        return replace(self, prior=automatic_vector_prior(y), noise_scale=noise)

    def _loc_scale(self) -> tuple[np.ndarray, np.ndarray]:
        if self.prior is None:
            raise ValueError("this model sets its prior from the whole series: call fit(y), or "
                             "pass prior=automatic_vector_prior(warm_up) to stream")
        return self.prior

    def _noise_scale(self) -> float:
        return STREAMING_NOISE_SCALE if self.noise_scale is None else self.noise_scale

    def check_series(self, y: Any) -> np.ndarray:
        arr = _vector_series(y)
        if self.prior is not None and arr.shape[1] != self.prior[0].size:
            raise ValueError(f"y must have {self.prior[0].size} columns (the prior's), got "
                             f"shape {arr.shape}")
        return arr

    def new_runs(self, n: int) -> Runs:
        d = 0 if self.prior is None else self.prior[0].size
        nu = float(d + 1)
        noise_var = self._noise_scale() ** 2
        return {"m": np.zeros((n, d)),
                "kappa": np.full(n, noise_var / self.level_scale ** 2),
                "psi": np.repeat((nu * noise_var * np.eye(d))[None], n, axis=0),
                "nu": np.full(n, nu), "seen": np.zeros(n, dtype=bool)}

    def forget(self, runs: Runs, rho: float) -> Runs:
        if not len(runs["nu"]):
            return self.new_runs(0)  # the empty initial state was built before d was known
        if rho == 1.0:
            return runs
        # floors that act only where forgetting would leave the family or underflow: ν just
        # above d - 1, the edge of a proper inverse-Wishart (ν shrinks geometrically over a
        # run of outliers, which add nothing), and a positive diagonal of Ψ (identical values
        # add nothing to Ψ)
        psi = runs["psi"] * rho
        d = psi.shape[-1]
        diag = np.arange(d)
        psi[:, diag, diag] = np.maximum(psi[:, diag, diag], B_MIN)
        return {"m": runs["m"], "kappa": runs["kappa"] * rho, "psi": psi,
                "nu": np.maximum(runs["nu"] * rho, d - 1.0 + NU_MARGIN), "seen": runs["seen"]}

    def _z(self, y: Any) -> np.ndarray:
        loc, scale = self._loc_scale()
        return (np.asarray(y, dtype=np.float64) - loc) / scale

    @staticmethod
    def _prepare_z(runs: Runs, z: np.ndarray) -> VectorObservation:
        r = z - runs["m"]  # z: one row (d,) for every run, or one row per run (n, d)
        # the solve against Ψ is the step's main cost: done once for consistency and update
        delta = np.einsum("ni,ni->n", r, np.linalg.solve(runs["psi"], r[:, :, None])[:, :, 0])
        return VectorObservation(runs, z, r, delta)

    def prepare(self, runs: Runs, y: Any) -> VectorObservation:
        return self._prepare_z(runs, self._z(y))

    def prepared_log_consistency(self, prepared: VectorObservation) -> np.ndarray:
        return self._prepared_log_consistency(prepared)

    @staticmethod
    def _prepared_log_consistency(prepared: VectorObservation) -> np.ndarray:
        k = prepared.runs["kappa"]
        return -0.5 * (prepared.runs["nu"] + 1.0) * np.log1p(k * prepared.delta / (k + 1.0))

    def prepared_update(self, prepared: VectorObservation, gamma: float
                        ) -> tuple[np.ndarray, Runs]:
        incr, new, _ = self._observe_prepared(prepared, gamma)
        return incr, new

    def _z_log_consistency(self, runs: Runs, z: np.ndarray) -> np.ndarray:
        return self._prepared_log_consistency(self._prepare_z(runs, z))

    def _observe(self, runs: Runs, z: np.ndarray, gamma: float
                 ) -> tuple[np.ndarray, Runs, np.ndarray]:
        return self._observe_prepared(self._prepare_z(runs, z), gamma)

    def _observe_prepared(self, prepared: VectorObservation, gamma: float
                          ) -> tuple[np.ndarray, Runs, np.ndarray]:
        runs, r, delta = prepared.runs, prepared.r, prepared.delta
        k, nu, psi = runs["kappa"], runs["nu"], runs["psi"]
        d = prepared.z.size
        k1, nu1 = k + gamma, nu + gamma
        log_ratio = np.log1p(k * gamma * delta / k1)
        if self.evidence == "integrated":
            _, logdet = np.linalg.slogdet(psi)
            best = (-0.5 * gamma * d * math.log(math.pi) + 0.5 * d * np.log(k / k1)
                    + _multigammaln(0.5 * nu1, d) - _multigammaln(0.5 * nu, d)
                    - 0.5 * gamma * logdet)
        else:
            best = np.zeros_like(delta)
        ev_in = best - 0.5 * nu1 * log_ratio
        outlier = ev_in < best - self._floor
        g = np.where(outlier, 0.0, gamma)
        k1 = k + g
        new = {"m": runs["m"] + (g / k1)[:, None] * r,
               "kappa": k1,
               "psi": psi + (k * g / k1)[:, None, None] * (r[:, :, None] * r[:, None, :]),
               "nu": nu + g, "seen": runs["seen"] | ~outlier}
        return np.where(outlier, best - self._floor, ev_in), new, outlier

    def estimate(self, runs: Runs) -> np.ndarray:
        """E* of the segment mean (in the units of the series)."""
        loc, scale = self._loc_scale()
        est = loc + scale * runs["m"]
        return np.where(runs["seen"][:, None], est, np.nan)

    def outlying(self, y: np.ndarray, discount: np.ndarray) -> np.ndarray:
        """As :meth:`PolynomialTrend.outlying`, with this model's consistency."""
        z = self._z(y)
        missing = np.isnan(z).any(axis=1) | np.isnan(discount)
        w0 = np.zeros(len(z))
        runs = self.new_runs(1)
        for i in np.flatnonzero(~missing):  # the exponents the segment's run gave
            _, runs, floored = self._observe(runs, z[i], float(discount[i]))
            w0[i] = 0.0 if floored[0] else discount[i]
        lc = hindsight_log_consistency(lambda w: self._loo_log_consistency(z, w, missing),
                                       w0, self.dim)
        return lc < self._outlying_log_consistency

    def _loo_log_consistency(self, z: np.ndarray, w: np.ndarray, missing: np.ndarray
                             ) -> np.ndarray:
        """Consistency of each standardised row ``z[i]`` with the segment's
        normal-inverse-Wishart function from the other rows, row ``j`` with exponent ``w[j]``
        (missing rows: NaN): the update of ``_observe`` from all rows at once, then row ``i``
        taken out again (``κ₋ = κ - w``, ``m₋ = (κ m - w z) / κ₋``, ``ν₋ = ν - w``,
        ``Ψ₋ = Ψ - (κ₋ w / κ) (z - m₋)(z - m₋)ᵀ``)."""
        w = np.where(missing, 0.0, w)
        zf = np.where(missing[:, None], 0.0, z)
        prior = self.new_runs(1)
        kappa0, nu0, psi0 = float(prior["kappa"][0]), float(prior["nu"][0]), prior["psi"][0]
        kappa = kappa0 + float(w.sum())
        m = (w @ zf) / kappa  # the prior mean is 0 (standardised units)
        r = zf - m
        # residual form of Ψ (no cancellation for a huge discounted spike), its discounted
        # scatter made consistent for Σ (hindsight_log_consistency)
        correction = discounted_variance_correction(self.dim)
        psi = psi0 + correction * ((w[:, None] * r).T @ r + kappa0 * np.outer(m, m))
        k_loo = kappa - w
        m_loo = (kappa * m - w[:, None] * zf) / k_loo[:, None]
        r_loo = zf - m_loo
        psi_loo = psi - (correction * k_loo * w / kappa)[:, None, None] \
            * (r_loo[:, :, None] * r_loo[:, None, :])
        loo = {"m": m_loo, "kappa": k_loo, "psi": psi_loo, "nu": nu0 + float(w.sum()) - w}
        return np.where(missing, np.nan, self._z_log_consistency(loo, zf))


def gammaln(x: Any) -> Any:
    """``log Γ(x)``: ``scipy.special.gammaln``, imported on first use.

    scipy.special costs about 0.15 s to import; deferring it keeps ``import possibly`` fast.
    """
    from scipy.special import gammaln as scipy_gammaln

    return scipy_gammaln(x)


def _multigammaln(a: np.ndarray, d: int) -> np.ndarray:
    """``log Γ_d(a)`` elementwise: ``d(d-1)/4 log π + Σ_j log Γ(a - j/2)``."""
    a = np.asarray(a, dtype=np.float64)
    return 0.25 * d * (d - 1) * math.log(math.pi) + sum(gammaln(a - 0.5 * j) for j in range(d))


# ----------------------------------------------------------------------------------------------
# compiled engine for a family of PolynomialTrend models (changepoint/_numba_segments.py)


def compiled_family(models: tuple[SegmentModel, ...]) -> bool:
    """Whether the compiled engine runs these models: resolved :class:`PolynomialTrend` models
    (degrees 0 to 2) sharing one prior."""
    return (all(isinstance(m, PolynomialTrend) and type(m) is PolynomialTrend
                and m.prior is not None for m in models)
            and len({m.prior for m in models if isinstance(m, PolynomialTrend)}) == 1)


def run_compiled(state: Any, y: np.ndarray, params: Any, interrupted: list[bool],
                 chunk: int) -> tuple[Any, dict[str, np.ndarray]]:
    """The compiled recursion over ``y`` from ``state``, in chunks (Ctrl-C between them)."""
    from possibly.changepoint._numba_segments import run_trend_family
    from possibly.changepoint.recursion import RunBlock, RunState

    models = params.models
    k_models = len(models)
    prior = models[0].prior
    degrees = np.array([mod.degree for mod in models], dtype=np.int64)
    m0 = np.zeros((k_models, 3))
    cov0 = np.zeros((k_models, 3, 3))
    a0, b0 = np.empty(k_models), np.empty(k_models)
    for k, mod in enumerate(models):
        new = mod.new_runs(1)
        p = mod.degree + 1
        cov0[k, :p, :p] = new["cov"][0]
        a0[k], b0[k] = new["a"][0], new["b"][0]
    integrated = np.array([mod.evidence == "integrated" for mod in models])
    floor = np.array([mod.outlier_cost for mod in models], dtype=np.float64)
    # pack the state into per-model buffers (coefficients padded to 3)
    count = np.array([blk.start.size for blk in state.blocks], dtype=np.int64)
    cap = max(int(count.max()), 1)
    start = np.zeros((k_models, cap), np.int64)
    log_w = np.zeros((k_models, cap))
    m = np.zeros((k_models, cap, 3))
    cov = np.zeros((k_models, cap, 3, 3))
    a, b = np.zeros((k_models, cap)), np.zeros((k_models, cap))
    seen = np.zeros((k_models, cap), dtype=bool)
    for k, (mod, blk) in enumerate(zip(models, state.blocks, strict=True)):
        c, p = count[k], mod.degree + 1
        start[k, :c], log_w[k, :c] = blk.start, blk.log_w
        if c:
            m[k, :c, :p], cov[k, :c, :p, :p] = blk.runs["m"], blk.runs["cov"]
            a[k, :c], b[k, :c], seen[k, :c] = blk.runs["a"], blk.runs["b"], blk.runs["seen"]
    tau = math.nan if params.tau is None else params.tau
    log_tol = math.log(params.tol) if params.tol > 0.0 else -math.inf
    t = state.t
    y = np.ascontiguousarray(y, dtype=np.float64)
    parts = []
    for first in range(0, y.size, chunk):
        if interrupted[0]:
            raise KeyboardInterrupt
        part = y[first:first + chunk]
        res = run_trend_family(part, t, count, start, log_w, m, cov, a, b, seen, degrees, m0,
                               cov0, a0, b0, integrated, floor, prior.loc, prior.scale,
                               math.log(params.hazard), params.forgetting, params.robust, tau,
                               params.dim, log_tol, params.tol > 0.0)
        count, start, log_w, m, cov, a, b, seen = res[:8]
        parts.append(res[8:])
        t += part.size
    if interrupted[0]:
        raise KeyboardInterrupt
    cat = [np.concatenate(col) for col in zip(*parts, strict=True)] if parts else \
        [np.zeros(0, np.int64), np.zeros(0, np.int64)] + [np.zeros(0)] * 3 + \
        [np.zeros(0, np.int64), np.zeros(0)]
    blocks = []
    for k, mod in enumerate(models):
        c, p = int(count[k]), mod.degree + 1
        blocks.append(RunBlock(start[k, :c].copy(), log_w[k, :c].copy(), {
            "m": m[k, :c, :p].copy(), "cov": cov[k, :c, :p, :p].copy(), "a": a[k, :c].copy(),
            "b": b[k, :c].copy(), "seen": seen[k, :c].copy()}))
    out = {"start": cat[0], "model": cat[1], "mean": cat[2], "log_consistency": cat[3],
           "discount": cat[4], "n_active": cat[5], "log_change_possibility": cat[6]}
    return RunState(t, tuple(blocks)), out
