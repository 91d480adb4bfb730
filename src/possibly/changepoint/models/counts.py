"""Segments of counts: a Poisson rate per segment with a gamma possibility (gamma-Poisson).

:class:`PoissonLevel` models a segment of non-negative integer counts ``k`` as Poisson with an
unknown rate λ, whose possibility given its run is the sup-normalised gamma
``λ^(α-1) e^(-βλ)`` (its mode ``(α - 1) / β``). Per observation ``k`` with exponent γ:

* consistency (sup-based): ``g(k) / max_j g(j)`` with ``g(k) = sup_λ λ^(α-1) e^(-βλ) λ^k
  e^(-λ) / k!``, at ``λ* = (α - 1 + k) / (β + 1)``;
* evidence (integrated): the tempered marginal ``log ∫ Pois(k | λ)^γ Gamma(λ; α, β) dλ =
  α log β - log Γ(α) + log Γ(α + γk) - (α + γk) log(β + γ) - γ log k!``, floored at its
  largest value over ``k`` minus ``outlier_cost`` (where the floor is taken the run is left
  unchanged, as the other models do);
* update: ``α ← α + γk``, ``β ← β + γ``; forgetting ``α ← ρα``, ``β ← ρβ`` (``α`` kept ``>=
  1``, where the possibility is bounded);
* outliers in hindsight: each discounted count against the segment's rate from the other
  observations (each with its discount as exponent), an outlier when its consistency is below
  ``exp(-12.5)``, the threshold of the other models.

To compete with models of densities (the models on ``y``, in units of their scale ``s``) in
one family, a probability is compared with the density over its rounding cell: ``P(k) ≈ δ
p(k)`` with ``δ = 1`` for counts, so each increment gets ``γ log s`` (docs/choosing.md,
"Counts"): every increment of the family is then ``γ log p(y)`` plus the same constant.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any, ClassVar, NamedTuple

import numpy as np

from possibly.changepoint.models.segment_model import (
    DEFAULT_OUTLIER_COST,
    Runs,
    SegmentModel,
    as_series,
    check_positive_settings,
)
from possibly.changepoint.models.trend import (
    OUTLIER_LOG_CONSISTENCY,
    automatic_prior,
    gammaln,
)

__all__ = ["PoissonLevel"]

#: counts beyond a run's mode by this many standard deviations (plus a margin) never hold the
#: largest consistency or evidence: the upper end of the search for the normalisations
GRID_SDS = 12.0
GRID_MARGIN = 20
#: the normalisations evaluate every count up to this one; a bisection beyond
GRID_LIMIT = 2000.0


def _counts(y: Any) -> np.ndarray:
    """``y`` as a float series of non-negative integers where observed (NaN: missing);
    ValueError naming ``y`` otherwise."""
    arr = as_series(y)
    observed = arr[~np.isnan(arr)]
    bad = ~((observed >= 0) & (observed == np.floor(observed)) & np.isfinite(observed))
    if bad.any():
        raise ValueError(f"y must be non-negative integer counts where observed for "
                         f"PoissonLevel, got {float(observed[bad][0])!r}")
    return arr


class CountObservation(NamedTuple):
    """:meth:`PoissonLevel.prepare`: the runs, the count, and per run the largest count that
    can hold the largest consistency or evidence (the end of the search of
    :func:`largest_over_counts`)."""

    runs: Runs
    k: float
    top: np.ndarray


def search_top(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Per run, a count past every maximiser over ``k`` of :func:`sup_log_joint` and
    :func:`tempered_log_marginal`: the rate's mode ``(α - 1) / β`` plus :data:`GRID_SDS`
    standard deviations of a count at that rate and :data:`GRID_MARGIN`.

    Examples
    --------
    >>> import numpy as np
    >>> search_top(np.array([4.0, 1.0]), np.array([1.0, 0.5])).tolist()  # 3 + 12·2 + 20, 12 + 20
    [47.0, 32.0]
    """
    mode = np.maximum((alpha - 1.0) / beta, 0.0)
    return np.ceil(mode + GRID_SDS * np.sqrt(mode + 1.0)) + GRID_MARGIN


def largest_over_counts(log_f: Any, top: np.ndarray) -> np.ndarray:
    """``max_{k = 0..top_j} log_f(k)_j`` per run ``j``, for ``log_f`` unimodal in ``k`` (both
    maximised functions are: their increments in ``k`` fall as ``k`` grows, the gamma-Poisson
    terms being near log-concave); ``log_f`` takes the counts as a ``(runs, m)`` array.

    Up to :data:`GRID_LIMIT` every count is evaluated; beyond, a bisection on the sign of
    ``log_f(k + 1) - log_f(k)`` finds the first count where the function stops increasing, in
    ``log2(top)`` evaluations of two counts per run, whatever the size of the counts (a grid
    ``0..top`` would take memory in proportion to them).

    Examples
    --------
    >>> import numpy as np
    >>> peaks = np.array([[3.0], [4e6]])
    >>> largest_over_counts(lambda k: -(k - peaks) ** 2, np.array([10.0, 1e7])).tolist()
    [-0.0, -0.0]
    """
    if top.size == 0 or top.max() <= GRID_LIMIT:
        grid = np.arange(top.max(initial=0.0) + 1.0)
        return np.asarray(np.max(log_f(grid[None, :]), axis=1,
                                 initial=-np.inf), dtype=np.float64)
    lo = np.zeros_like(top)
    hi = top.copy()
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = np.floor((lo + hi) / 2.0)
        rising = log_f((mid + 1.0)[:, None])[:, 0] > log_f(mid[:, None])[:, 0]
        lo = np.where(active & rising, mid + 1.0, lo)
        hi = np.where(active & ~rising, mid, hi)
    return np.asarray(log_f(lo[:, None])[:, 0], dtype=np.float64)


def sup_log_joint(alpha: Any, beta: Any, k: Any) -> Any:
    """``log g(k) = log sup_λ λ^(α-1) e^(-βλ) λ^k e^(-λ) / k!`` (module docstring).

    Examples
    --------
    >>> float(sup_log_joint(2.0, 1.0, 1.0))   # sup of λ² e^(-2λ): e^(-2), at λ = 1
    -2.0
    """
    e = np.asarray(alpha, dtype=np.float64) - 1.0 + k
    lam = e / (np.asarray(beta, dtype=np.float64) + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        head = np.where(e > 0, e * np.log(np.where(e > 0, lam, 1.0)), 0.0)
    return head - e - gammaln(np.asarray(k, dtype=np.float64) + 1.0)


def tempered_log_marginal(alpha: Any, beta: Any, k: Any, gamma: float) -> Any:
    """``log ∫ Pois(k | λ)^γ Gamma(λ; α, β) dλ`` (module docstring).

    Examples
    --------
    >>> import math
    >>> round(math.exp(tempered_log_marginal(1.0, 1.0, 0.0, 1.0)), 12)   # ∫ e^(-2λ) dλ
    0.5
    """
    k = np.asarray(k, dtype=np.float64)
    return (alpha * np.log(beta) - gammaln(alpha) + gammaln(alpha + gamma * k)
            - (alpha + gamma * k) * np.log(beta + gamma) - gamma * gammaln(k + 1.0))


@dataclass(frozen=True)
class PoissonLevel(SegmentModel):
    """Segments of counts with a constant Poisson rate (gamma-Poisson).

    Parameters
    ----------
    prior_mean : float, optional
        Mode of the rate's prior possibility, ``>= 0``; None: the series' median (``fit``).
    prior_weight : float
        Weight β₀ of the prior, in observations, ``> 0``.
    reference_scale : float, optional
        The scale ``s`` of the models on ``y`` it competes with
        (``automatic_prior(y).scale``), ``> 0``; None: set by ``fit``.
    outlier_cost : float
        Largest weight one observation can cost a run (log scale), ``> 0``.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> from possibly.changepoint import PoissonLevel, model_family
    >>> rng = np.random.default_rng(0)
    >>> y = rng.poisson(np.r_[np.full(150, 2.0), np.full(150, 6.0)]).astype(float)
    >>> res = ps.ChangepointDetector(model=model_family() + [PoissonLevel()]).fit(y)
    >>> res.changepoints.tolist(), res.segment_model_names
    ([150], ['Poisson level', 'Poisson level'])
    """

    _: KW_ONLY
    prior_mean: float | None = None
    prior_weight: float = 0.5
    reference_scale: float | None = None
    outlier_cost: float = DEFAULT_OUTLIER_COST
    evidence: str = "integrated"
    #: as the trend models (they share a family): no forgetting, and ``tol = 0.4 · hazard``
    default_forgetting: ClassVar[float] = 1.0
    tol_per_hazard: ClassVar[float | None] = 0.4

    def __post_init__(self) -> None:
        check_positive_settings(self, ("prior_weight", "outlier_cost"))
        for name, low in (("prior_mean", 0.0), ("reference_scale", None)):
            v = getattr(self, name)
            if v is None:
                continue
            ok = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
                v, bool) and math.isfinite(v) and (v >= 0 if low == 0.0 else v > 0)
            if not ok:
                rng = ">= 0" if low == 0.0 else "> 0"
                raise ValueError(f"{name} must be a finite number {rng}, got {v!r}")
        if self.evidence != "integrated":
            raise ValueError(f"PoissonLevel takes evidence='integrated' only, got "
                             f"{self.evidence!r}")

    @property
    def name(self) -> str:
        return "Poisson level"

    @property
    def resolved(self) -> bool:
        return self.prior_mean is not None and self.reference_scale is not None

    def resolve(self, y: np.ndarray) -> PoissonLevel:
        if self.resolved:
            return self
        y = _counts(y)
        observed = y[~np.isnan(y)]
        return replace(
            self,
            prior_mean=self.prior_mean if self.prior_mean is not None
            else float(np.median(observed)),
            reference_scale=self.reference_scale or automatic_prior(y).scale)

    def check_series(self, y: Any) -> np.ndarray:
        return _counts(y)

    def _settings(self) -> tuple[float, float, float]:
        if self.prior_mean is None or self.reference_scale is None:
            raise ValueError("PoissonLevel sets prior_mean and reference_scale from the whole "
                             "series: call fit(y), or give both to stream")
        return self.prior_mean, self.prior_weight, self.reference_scale

    def new_runs(self, n: int) -> Runs:
        mean = 0.0 if self.prior_mean is None else self.prior_mean
        return {"alpha": np.full(n, 1.0 + self.prior_weight * mean),
                "beta": np.full(n, float(self.prior_weight)),
                "seen": np.zeros(n, dtype=bool)}

    def forget(self, runs: Runs, rho: float) -> Runs:
        if rho == 1.0:
            return runs
        return {"alpha": np.maximum(runs["alpha"] * rho, 1.0), "beta": runs["beta"] * rho,
                "seen": runs["seen"]}

    def prepare(self, runs: Runs, y: Any) -> CountObservation:
        k = float(y)
        if not (k >= 0 and k == math.floor(k)):
            raise ValueError(f"y must be a non-negative integer count for PoissonLevel, "
                             f"got {k!r}")
        return CountObservation(runs, k, search_top(runs["alpha"], runs["beta"]))

    def log_consistency(self, prepared: CountObservation) -> np.ndarray:
        a, b = prepared.runs["alpha"], prepared.runs["beta"]
        best = largest_over_counts(lambda j: sup_log_joint(a[:, None], b[:, None], j),
                                   prepared.top)
        return np.minimum(sup_log_joint(a, b, prepared.k) - best, 0.0)

    def update(self, prepared: CountObservation, gamma: float) -> tuple[np.ndarray, Runs]:
        runs, k = prepared.runs, prepared.k
        a, b = runs["alpha"], runs["beta"]
        ev = tempered_log_marginal(a, b, k, gamma)
        best = largest_over_counts(lambda j: tempered_log_marginal(a[:, None], b[:, None],
                                                                  j, gamma),
                                   prepared.top)
        best = np.maximum(best, ev)
        outlier = ev < best - self.outlier_cost
        g = np.where(outlier, 0.0, gamma)
        new = {"alpha": a + g * k, "beta": b + g, "seen": runs["seen"] | ~outlier}
        unit = gamma * math.log(self._settings()[2])  # a probability against a density
        return np.where(outlier, best - self.outlier_cost, ev) + unit, new

    def outlying(self, y: np.ndarray, discount: np.ndarray) -> np.ndarray:
        """Each count against the segment's rate from the others (module docstring)."""
        k = np.asarray(y, dtype=np.float64)
        observed = ~(np.isnan(k) | np.isnan(discount))
        w = np.where(observed, discount, 0.0)
        kf = np.where(observed, k, 0.0)
        start = self.new_runs(1)
        a = start["alpha"][0] + np.sum(w * kf) - w * kf  # each observation left out
        b = start["beta"][0] + np.sum(w) - w
        lc = np.zeros(k.size)
        for i in np.flatnonzero(observed).tolist():
            runs = {"alpha": a[i:i + 1], "beta": b[i:i + 1], "seen": start["seen"]}
            lc[i] = self.log_consistency(self.prepare(runs, kf[i]))[0]
        return observed & (lc < OUTLIER_LOG_CONSISTENCY)

    def estimate(self, runs: Runs) -> np.ndarray:
        """E* of the rate: the mode ``(α - 1) / β`` of its possibility."""
        return np.where(runs["seen"], (runs["alpha"] - 1.0) / runs["beta"], np.nan)
