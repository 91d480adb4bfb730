"""Change points with unknown-variance and trend segments, several models competing per segment.

Segment models (a Bayesian linear regression with unknown noise precision, conjugate
normal-gamma, possibilistic consistency and discount):

* :class:`NormalMeanVariance`: constant level, unknown noise precision;
* :class:`PolynomialTrend`: level, slope and (degree 2) curvature, unknown noise precision; the
  state is shifted forward each step (``level ← level + slope + curvature``, ...), so the
  regressor is always ``(1, 0, 0)`` and nothing grows with the segment length.

Given a run (a segment start ``s`` and a model ``k``), the segment parameter ``(θ, λ)`` has the
normal-gamma possibility ``exp(-λ (θ - m)ᵀ K (θ - m) / 2) Ḡ(λ; a, b)``. Per observation ``y``
with residual ``r = y - m₀`` and ``q = (K⁻¹)₀₀`` (docs/math.md §6, extended to an unknown λ):

* consistency (sup-based, possibilistic): ``log c_r = -(a + 1/2) log(1 + r² / (2 b (1 + q)))``,
  the normalised sup over ``(θ, λ)`` of the prior times the likelihood; ``log c = max over runs
  of (log w_r + log c_r)`` (new runs enter with ``log w = log h``);
* discount: ``γ_k = c^(1/d_k)`` by :func:`possibly.inference.discount`, with ``d_k`` the
  number of free parameters of model ``k`` plus one for the run length (3 for
  :class:`NormalMeanVariance`, 4 for a linear trend, 5 for a quadratic one);
* evidence (the run weights): the integrated tempered marginal likelihood
  ``∫ p(y | θ, λ)^γ π(θ, λ) dθ dλ`` (``evidence="integrated"``, carries the Occam factor
  ``-½ log(1 + γ q)`` that stops a richer model from winning for free), or its profile (sup)
  counterpart ``log c_r`` at exponent γ (``evidence="profile"``, the paper's §5.3 choice);
* outlier branch: the weight of a run never drops by more than ``outlier_cost · |log h|``
  below its value for a perfectly predicted observation; when that floor is taken the
  observation is an outlier for that run and does not update it. With ``outlier_cost < 1``
  a lone spike of any size, or a burst of two, costs less than the two change points that
  would otherwise isolate it (each costs ``|log h|`` plus the evidence of a new segment);
* update with exponent γ: ``K ← K + γ e₀e₀ᵀ``, ``a ← a + γ/2``, ``b ← b + γ r²/(2(1 + γ q))``.

The run weights form a max-mixture (no normalising sum): ``log w −= max log w`` each step,
and runs more than ``prune`` below the maximum are dropped (they can only come back through
evidence larger than ``prune``). The MAP segmentation is exact through the stored MAP run of
each step: a new run at ``t`` has as parent the MAP run at ``t − 1``, whatever its model.

Scale-free priors: :func:`automatic_prior` sets the level's prior location to the median of
the series and every scale from its MAD (never from first differences, which are tiny on a
smooth series), so that the change points are unchanged under ``y → a y + b`` with ``a > 0``.

This module is self-contained and runs in numpy; it is meant to plug into the segment-model
interface of :mod:`possibly.changepoint` (``ChangepointDetector(model=[...])``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaln

from possibly.inference import discount

__all__ = [
    "DEFAULT_MODELS",
    "NormalMeanVariance",
    "PolynomialTrend",
    "SegmentPrior",
    "SegmentResult",
    "automatic_prior",
    "detect_segments",
]

_LOG_2PI = math.log(2.0 * math.pi)
#: log consistency below which an observation is an outlier: a normal value 5 σ from its mean
#: (the robust update underestimates σ a little: tails are discounted)
_OUTLIER_LOG_CONSISTENCY = -12.5


@dataclass(frozen=True)
class SegmentPrior:
    """Location and scale of a series, from which every model's prior is built.

    Attributes
    ----------
    loc : float
        Prior location of the level (the series' median).
    scale : float
        Robust overall scale of the series (1.4826 · MAD), ``> 0``.
    horizon : float
        Time scale in steps (the series length) over which a slope may move the level by
        about ``scale``.
    """

    loc: float
    scale: float
    horizon: float


def automatic_prior(y) -> SegmentPrior:
    """Scale-free prior summaries of a series: median, MAD scale and length.

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
    y = np.asarray(y, dtype=np.float64)
    finite = y[np.isfinite(y)]
    if finite.size == 0:
        raise ValueError("y must hold at least one finite observation")
    loc = float(np.median(finite))
    scale = 1.4826 * float(np.median(np.abs(finite - loc)))
    if not scale > 0:  # more than half the values equal: fall back on the spread, then 1
        scale = float(np.std(finite)) or max(abs(loc), 1.0)
    return SegmentPrior(loc, scale, float(max(y.size, 2)))


def _shift_matrix(p: int) -> np.ndarray:
    """``F`` with ``θ(t + 1) = F θ(t)`` for ``y(t + τ) = Σ_j θ_j τ^j``: ``F[i, j] = C(j, i)``."""
    f = np.zeros((p, p))
    for i in range(p):
        for j in range(i, p):
            f[i, j] = math.comb(j, i)
    return f


@dataclass(frozen=True)
class PolynomialTrend:
    """Segments with a polynomial trend (level, slope, curvature) and unknown noise precision.

    Parameters
    ----------
    degree : int
        0 (constant level), 1 (level and slope) or 2 (and curvature).
    level_scale, slope_scale : float
        Prior sd of the level, in units of the series scale, and of the total change a slope
        makes over the series horizon (curvature likewise), ``> 0``.
    noise_scale : float
        Prior noise sd in units of the series scale, ``> 0``.
    noise_shape : float
        Gamma shape ``a₀ > 0`` of the noise precision prior (its weight in observations × 2).

    Examples
    --------
    >>> PolynomialTrend(1).dim
    4.0
    """

    degree: int = 1
    level_scale: float = 2.0
    slope_scale: float = 10.0
    noise_scale: float = 0.5
    noise_shape: float = 1.0
    _f: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.degree, bool) or not isinstance(self.degree, (int, np.integer)) \
                or not 0 <= self.degree <= 2:
            raise ValueError(f"degree must be 0, 1 or 2, got {self.degree!r}")
        for name in ("level_scale", "slope_scale", "noise_scale", "noise_shape"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        object.__setattr__(self, "_f", _shift_matrix(int(self.degree) + 1))

    @property
    def n_params(self) -> int:
        """Free parameters: the polynomial coefficients and the noise precision."""
        return int(self.degree) + 2

    @property
    def dim(self) -> float:
        """``d`` in ``γ = c^(1/d)``: free parameters plus one for the run length."""
        return float(self.n_params + 1)

    def prior(self, summary: SegmentPrior) -> tuple[np.ndarray, np.ndarray, float, float]:
        """``(m, P, a, b)`` of a new run: ``θ | λ ~ N(m, P / λ)``, ``λ ~ Ḡ(a, b)``."""
        p = int(self.degree) + 1
        noise_var = (self.noise_scale * summary.scale) ** 2
        m = np.zeros(p)
        m[0] = summary.loc
        # P is relative to the noise variance: sd(θ_j) ≈ sqrt(P_jj / λ) ≈ noise_sd sqrt(P_jj)
        sds = [self.level_scale * summary.scale]
        sds += [self.slope_scale * summary.scale / summary.horizon ** j for j in range(1, p)]
        cov = np.diag(np.square(sds)) / noise_var
        a = float(self.noise_shape)
        return m, cov, a, a * noise_var


def NormalMeanVariance(**kw) -> PolynomialTrend:  # noqa: N802 - a model constructor
    """Segments with a constant level and unknown noise precision (normal-gamma).

    ``PolynomialTrend(degree=0)``; keyword arguments as :class:`PolynomialTrend`.

    Examples
    --------
    >>> NormalMeanVariance().dim
    3.0
    """
    return PolynomialTrend(0, **kw)


@dataclass
class _Runs:
    """The runs of one model: start, log weight, and the regression state."""

    start: np.ndarray   # (R,) int64
    best: np.ndarray    # (R,) largest relative log weight ever reached
    logw: np.ndarray    # (R,)
    m: np.ndarray       # (R, p)
    cov: np.ndarray     # (R, p, p), relative to 1/λ
    a: np.ndarray       # (R,)
    b: np.ndarray       # (R,)


@dataclass(frozen=True)
class SegmentResult:
    """Output of :func:`detect_segments`.

    Attributes
    ----------
    changepoints : ndarray of int64
        Starts of the segments after the first (MAP segmentation).
    segment_models : ndarray of int64
        Index in the model list of each segment's model (``len(changepoints) + 1``).
    change_possibility : ndarray, shape (n,)
        Per step ``t``, the largest possibility (relative to the best run at that moment) ever
        reached by a run starting at ``t``: 1 at every MAP change point, in [0, 1].
    outlier_score : ndarray, shape (n,)
        Per step, ``1 - c_r`` on the MAP run after the step, with ``c_r`` the sup-based
        consistency of the observation with that run's prediction (0: perfectly predicted);
        1 when the observation was handled by the outlier branch.
    discount : ndarray, shape (n,)
        γ of the first model at each step.
    log_consistency : ndarray, shape (n,)
    """

    changepoints: np.ndarray
    segment_models: np.ndarray
    change_possibility: np.ndarray
    outlier_score: np.ndarray
    discount: np.ndarray
    log_consistency: np.ndarray

    @property
    def outliers(self) -> np.ndarray:
        """Observations inconsistent with the MAP run's prediction (log consistency below
        ``-12.5``, that of a normal value 5 σ away), except the first of each segment."""
        out = self.outlier_score >= -math.expm1(_OUTLIER_LOG_CONSISTENCY)
        out[self.changepoints] = False
        return out

    def changepoint_intervals(self, alpha: float = 0.5) -> list[tuple[int, int]]:
        """Per change point, the contiguous steps around it with change possibility ``>= alpha``.

        Returned as half-open ``(first, stop)`` index pairs.
        """
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")
        out = []
        poss = self.change_possibility
        for c in self.changepoints:
            lo = hi = int(c)
            while lo > 0 and poss[lo - 1] >= alpha:
                lo -= 1
            while hi + 1 < poss.size and poss[hi + 1] >= alpha:
                hi += 1
            out.append((lo, hi + 1))
        return out


#: the default model family, chosen on the synthetic suite (benchmarks/bench_changepoint_quality.py)
DEFAULT_MODELS = (NormalMeanVariance(), PolynomialTrend(1), PolynomialTrend(2))


def _check_models(model) -> list[PolynomialTrend]:
    models = list(model) if isinstance(model, (list, tuple)) else [model]
    if not models:
        raise ValueError("model must be a segment model or a non-empty list of them, got []")
    for m in models:
        if not isinstance(m, PolynomialTrend):
            raise ValueError(f"model must hold segment models (PolynomialTrend, "
                             f"NormalMeanVariance), got {type(m).__name__}")
    return models


def detect_segments(y, model=None, *, hazard: float = 2.5e-3, evidence: str = "integrated",
                    outlier_cost: float = 1.0, prune: float = 25.0, max_runs: int = 300,
                    prior: SegmentPrior | None = None) -> SegmentResult:
    """MAP change points of a scalar series with one or several competing segment models.

    Parameters
    ----------
    y : array_like, shape (n,)
        Scalar observations; NaN = missing (predict-only step).
    model : segment model or list of them
        Default :data:`DEFAULT_MODELS`: constant level, linear and quadratic trends, all with
        unknown noise precision.
    hazard : float
        Possibility of a change at any step, in (0, 1).
    evidence : {"integrated", "profile"}
        Run weights from the tempered marginal likelihood (with its Occam factor) or from the
        sup-based (profile) predictive.
    outlier_cost : float
        Largest cost of one observation for a run, in units of ``|log hazard|``, ``> 0``.
    prune : float
        Runs more than ``prune`` (log scale) below the best are dropped, ``> 0``.
    max_runs : int
        Largest number of runs kept per model.
    prior : SegmentPrior, optional
        Default :func:`automatic_prior` of ``y``.

    Returns
    -------
    SegmentResult

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = np.r_[np.zeros(50), 10 + 0.5 * np.arange(50)] + rng.normal(size=100)
    >>> res = detect_segments(y)
    >>> res.changepoints.tolist(), res.segment_models.tolist()
    ([50], [0, 1])
    """
    models = _check_models(DEFAULT_MODELS if model is None else model)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"y must be a scalar series of shape (n,) for these segment models, "
                         f"got shape {y.shape}")
    if not (isinstance(hazard, (int, float, np.floating)) and 0 < hazard < 1):
        raise ValueError(f"hazard must be in (0, 1), got {hazard!r}")
    if evidence not in ("integrated", "profile"):
        raise ValueError(f"evidence must be 'integrated' or 'profile', got {evidence!r}")
    if not (isinstance(outlier_cost, (int, float, np.floating)) and outlier_cost > 0):
        raise ValueError(f"outlier_cost must be > 0, got {outlier_cost!r}")
    summary = automatic_prior(y) if prior is None else prior
    # work on the standardised series: the integrated evidence is a density, whose unit
    # (log scale, times γ_k, which differs between models) would otherwise favour one model
    # over another when the series is rescaled
    y = (y - summary.loc) / summary.scale
    summary = SegmentPrior(0.0, 1.0, summary.horizon)
    n = y.size
    log_h = math.log(hazard)
    floor = outlier_cost * log_h
    priors = [mod.prior(summary) for mod in models]
    runs = [_Runs(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros((0, len(p[0]))),
                  np.zeros((0, len(p[0]), len(p[0]))), np.zeros(0), np.zeros(0))
            for p in priors]
    change_poss = np.zeros(n)
    outlier_score = np.zeros(n)
    gammas = np.full((n, len(models)), np.nan)
    log_cs = np.full(n, np.nan)
    map_start = np.zeros(n, np.int64)
    map_model = np.zeros(n, np.int64)
    dims = [mod.dim for mod in models]
    integrated = evidence == "integrated"
    for t in range(n):
        # predict: shift every state forward, then one new run per model (log w = log h)
        for k, (mod, rk) in enumerate(zip(models, runs, strict=True)):
            f = mod._f
            if rk.m.shape[0]:
                rk.m = rk.m @ f.T
                rk.cov = f @ rk.cov @ f.T
            m0, c0, a0, b0 = priors[k]
            new_w = 0.0 if t == 0 else log_h
            rk.start = np.append(rk.start, t)
            rk.best = np.append(rk.best, -np.inf)
            rk.logw = np.append(rk.logw, new_w)
            rk.m = np.concatenate([rk.m, m0[None]])
            rk.cov = np.concatenate([rk.cov, c0[None]])
            rk.a = np.append(rk.a, a0)
            rk.b = np.append(rk.b, b0)
        yt = y[t]
        if not np.isfinite(yt):
            _renormalise(runs, prune, max_runs, change_poss)
            k_best, i_best = _argmax(runs)
            map_start[t], map_model[t] = runs[k_best].start[i_best], k_best
            continue
        # consistency over all runs, then one discount per model
        log_c = max(float(np.max(rk.logw + _run_log_consistency(rk.m, rk.cov, rk.a, rk.b, yt)))
                    for rk in runs)
        log_c = min(log_c, 0.0)
        log_cs[t] = log_c
        for k, rk in enumerate(runs):
            g = float(discount(log_c, dims[k], validate=False))
            gammas[t, k] = g
            rk.m, rk.cov, rk.a, rk.b, ev, _ = _observe(rk.m, rk.cov, rk.a, rk.b, yt, g,
                                                       integrated, floor)
            rk.logw = rk.logw + ev
        _renormalise(runs, prune, max_runs, change_poss)
        k_best, i_best = _argmax(runs)
        map_start[t], map_model[t] = runs[k_best].start[i_best], k_best
    # backtrack the MAP runs; final flush of the change possibilities
    for rk in runs:
        np.maximum.at(change_poss, rk.start, np.exp(rk.best))
    cps, seg_models = [], []
    t = n - 1
    while t >= 0:
        s, k = int(map_start[t]), int(map_model[t])
        seg_models.append(k)
        if s > 0:
            cps.append(s)
        t = s - 1
    cps, seg_models = cps[::-1], seg_models[::-1]
    change_poss[0] = 1.0
    change_poss[np.asarray(cps, dtype=np.int64)] = 1.0
    # hindsight outlier scores: replay each MAP segment's run with the exponents it was given
    bounds = [0, *cps, n]
    for (s0, s1), k in zip(zip(bounds[:-1], bounds[1:], strict=True), seg_models, strict=True):
        m, cov, a, b = (np.asarray(v, dtype=np.float64)[None] for v in priors[k])
        for t in range(s0, s1):
            if t > s0:
                m, cov = m @ models[k]._f.T, models[k]._f @ cov @ models[k]._f.T
            if np.isfinite(y[t]):
                lc = _run_log_consistency(m, cov, a, b, y[t])[0]
                m, cov, a, b, _, out = _observe(m, cov, a, b, y[t], gammas[t, k], integrated,
                                                floor)
                outlier_score[t] = 1.0 if out[0] else -math.expm1(lc)
    return SegmentResult(np.asarray(cps, dtype=np.int64), np.asarray(seg_models, dtype=np.int64),
                         np.minimum(change_poss, 1.0), outlier_score, gammas[:, 0], log_cs)


def _run_log_consistency(m, cov, a, b, y: float) -> np.ndarray:
    """Sup-based consistency of ``y`` with each run's prediction (Student-t shaped)."""
    r = y - m[:, 0]
    return -(a + 0.5) * np.log1p(r * r / (2.0 * b * (1.0 + cov[:, 0, 0])))


def _observe(m, cov, a, b, y: float, g: float, integrated: bool, floor: float):
    """One observation with exponent ``g`` for a batch of runs: ``(m, cov, a, b, evidence,
    outlier)``.

    The evidence is the integrated (or profile) tempered predictive, floored at the value for a
    perfectly predicted observation plus ``floor``; where the floor is taken the observation
    is an outlier for the run and leaves its state unchanged.
    """
    r = y - m[:, 0]
    q = cov[:, 0, 0]
    gq = 1.0 + g * q
    log_ratio = np.log1p(0.5 * g * r * r / (gq * b))
    if integrated:
        best = (-0.5 * g * _LOG_2PI + gammaln(a + 0.5 * g) - gammaln(a) - 0.5 * np.log(gq)
                - 0.5 * g * np.log(b))
    else:
        best = np.zeros_like(r)
    ev_in = best - (a + 0.5 * g) * log_ratio
    ev_out = best + floor
    inlier = ev_in >= ev_out
    # the update with exponent γ, only where the observation is an inlier
    gi = np.where(inlier, g, 0.0)
    gain = cov[:, :, 0] * (gi / (1.0 + gi * q))[:, None]     # (R, p)
    m = m + gain * r[:, None]
    cov = cov - gain[:, :, None] * cov[:, None, 0, :]
    a = a + 0.5 * gi
    b = b + 0.5 * gi * r * r / (1.0 + gi * q)
    return m, cov, a, b, np.where(inlier, ev_in, ev_out), ~inlier


def _argmax(runs: list[_Runs]) -> tuple[int, int]:
    best = (-np.inf, 0, 0)
    for k, rk in enumerate(runs):
        if rk.logw.size:
            i = int(np.argmax(rk.logw))
            if rk.logw[i] > best[0]:
                best = (float(rk.logw[i]), k, i)
    return best[1], best[2]


def _renormalise(runs: list[_Runs], prune: float, max_runs: int,
                 change_poss: np.ndarray) -> None:
    top = max(float(np.max(rk.logw)) for rk in runs if rk.logw.size)
    for rk in runs:
        rk.logw = rk.logw - top
        rk.best = np.maximum(rk.best, rk.logw)
        keep = rk.logw > -prune
        if keep.sum() > max_runs:
            keep &= rk.logw >= np.sort(rk.logw)[-max_runs]
        if not keep.all():
            gone = ~keep
            np.maximum.at(change_poss, rk.start[gone], np.exp(rk.best[gone]))
            for name in ("start", "best", "logw", "m", "cov", "a", "b"):
                setattr(rk, name, getattr(rk, name)[keep])
