"""Segments of a vector series with unknown mean and covariance (normal-inverse-Wishart).

:class:`MultivariateNormalSegments` is the default model of ``ChangepointDetector()`` for a
vector series ``(T, d)``: the scalar models' Student-t consistency with the Mahalanobis
distance, their integrated evidence and outlier floor (at the floor ``d``-dimensional inliers
cross as rarely as scalar ones, :func:`outlier_cost_in_dimension`), and their hindsight outlier
rule. It works on the componentwise standardised series, so its results are unchanged under
``y → a y + b`` (``a > 0`` per component).
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any, ClassVar, NamedTuple

import numpy as np

from possibly.changepoint.models.quantisation import ROUNDING_SD, quantisation_step
from possibly.changepoint.models.segment_model import (
    DEFAULT_OUTLIER_COST,
    Runs,
    SegmentModel,
    check_positive_settings,
)
from possibly.changepoint.models.trend import (
    B_MIN,
    OUTLIER_LOG_CONSISTENCY,
    RELATIVE_SCALE_FLOOR,
    discounted_variance_correction,
    gammaln,
    hindsight_log_consistency,
)
from possibly.validation import as_numbers

__all__ = [
    "MultivariateNormalSegments",
    "automatic_vector_noise",
    "automatic_vector_prior",
    "multigammaln",
    "outlier_cost_in_dimension",
]

#: forgetting never takes an inverse-Wishart's ν below d - 1 + this (proper: ν > d - 1)
NU_MARGIN = 1e-3
#: prior noise sd of MultivariateNormalSegments (units of the componentwise scale) when it is
#: neither given nor estimated from the whole series (a prior given for streaming)
STREAMING_NOISE_SCALE = 0.5


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




def automatic_vector_prior(y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Componentwise median and ``1.4826 · MAD`` of a vector series ``(T, d)`` (NaN rows
    ignored): the location and scale that :class:`MultivariateNormalSegments` standardises by.

    A component whose MAD is 0 takes its standard deviation (a constant one ``max(|median|,
    1)``); a quantised component (step δ,
    :func:`~possibly.changepoint.models.quantisation.quantisation_step`) at least ``δ / √12``,
    the sd of a rounding error.

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
    return loc, np.maximum(scale, ROUNDING_SD * _quantisation_steps(rows))


def _quantisation_steps(rows: np.ndarray) -> np.ndarray:
    """:func:`quantisation_step` of each column."""
    return np.array([quantisation_step(column) for column in rows.T])


def automatic_vector_noise(y: Any) -> float:
    """Prior noise sd of :class:`MultivariateNormalSegments` in units of the componentwise
    scale of :func:`automatic_vector_prior`: the median over the components of the
    within-segment noise estimate ``1.4826 · MAD(first differences) / √2`` (a level shift
    moves one difference, an outlier two), at least a quantised component's rounding sd
    ``δ / √12``, divided by the component's scale, at most 1; ``0.5`` when the differences
    are mostly tied (and no component is quantised).

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
    noise = np.maximum(noise, ROUNDING_SD * _quantisation_steps(rows))
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
    _: KW_ONLY
    noise_scale: float | None = None
    evidence: str = "integrated"
    outlier_cost: float = DEFAULT_OUTLIER_COST
    prior: tuple[np.ndarray, np.ndarray] | None = field(default=None, compare=False)
    dim: float = field(init=False)
    event_ndim: ClassVar[int] = 1
    hindsight_outliers: ClassVar[bool] = True
    default_forgetting: ClassVar[float] = 1.0
    #: the evidence floor and the hindsight outlier threshold in the prior's dimension
    #: (outlier_cost_in_dimension)
    _floor: float = field(init=False, repr=False, compare=False)
    _outlying_log_consistency: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_positive_settings(self, ("level_scale", "outlier_cost")
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

    def log_consistency(self, prepared: VectorObservation) -> np.ndarray:
        return self._prepared_log_consistency(prepared)

    @staticmethod
    def _prepared_log_consistency(prepared: VectorObservation) -> np.ndarray:
        k = prepared.runs["kappa"]
        return -0.5 * (prepared.runs["nu"] + 1.0) * np.log1p(k * prepared.delta / (k + 1.0))

    def update(self, prepared: VectorObservation, gamma: float
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
                    + multigammaln(0.5 * nu1, d) - multigammaln(0.5 * nu, d)
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




def multigammaln(a: np.ndarray, d: int) -> np.ndarray:
    """``log Γ_d(a)`` elementwise: ``d(d-1)/4 log π + Σ_j log Γ(a - j/2)``."""
    a = np.asarray(a, dtype=np.float64)
    return 0.25 * d * (d - 1) * math.log(math.pi) + sum(gammaln(a - 0.5 * j) for j in range(d))

