"""Segment models with a cycle: a level or a trend plus Fourier terms of one or more periods.

:class:`SeasonalTrend` is the normal-gamma regression of :class:`PolynomialTrend` (unknown noise
precision λ, state shifted forward each step) with ``K`` harmonics of a period ``P`` added to
the state. Harmonic ``k`` is the pair ``(c_k, s_k)``; each step rotates it by the angle
``2πk/P``, so the cycle's value at the current step is always ``c_k`` and the observation
vector ``h`` (1 on the level and on every ``c_k``) never changes: the rotation fits the
shift-forward state exactly and nothing grows with the segment length. The per-observation
formulas are those of the trend with ``e₀`` replaced by ``h`` (docs/math.md §6).

The cycle is refitted in every segment from a prior that does not depend on the phase (each
harmonic's pair has an isotropic normal prior), so a segment may start at any step: the
segment's run learns the cycle's phase from its own observations. With a period that is a whole
multiple of a shorter one (a week of a day), the default harmonics of the longer include the
sidebands of the shorter cycle, so that its amplitude may follow the longer one (quieter
weekends) without a change point (:func:`harmonic_numbers`). :func:`model_family` with a
``period`` adds the seasonal members to the default family; all its members run on this
module's compiled kernel. Priors are scale-free as in :mod:`~possibly.changepoint.models.trend`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, NamedTuple

import numpy as np

from possibly.changepoint.models.segment_model import (
    DEFAULT_OUTLIER_COST,
    CompiledKernel,
    KernelFunctions,
    Runs,
    SegmentModel,
    check_positive_settings,
)
from possibly.changepoint.models.trend import (
    B_MIN,
    LOG_2PI,
    TREND_NAMES,
    SegmentPrior,
    WholeSeriesPrior,
    floored_evidence,
    floored_rate,
    prior_noise_variance,
)
from possibly.changepoint.models.trend import model_family as trend_family

__all__ = ["SeasonalTrend", "harmonic_numbers", "model_family", "sidebands", "whole_multiple"]

#: at most this many harmonic pairs over all periods (the kernel's rows have a fixed width)
MAX_HARMONICS = 8
#: the largest state: a quadratic trend (3) and every harmonic pair
MAX_STATE = 3 + 2 * MAX_HARMONICS
#: harmonics per period when not given (fewer when the period is too short for them)
DEFAULT_HARMONICS = 3


def harmonics_of(period: float, wanted: int) -> int:
    """The harmonics a period can carry: ``wanted``, at most ``(P - 1) / 2`` (below the
    Nyquist frequency), at least 1.

    Examples
    --------
    >>> harmonics_of(24, 3), harmonics_of(7, 5), harmonics_of(4, 3), harmonics_of(2, 3)
    (3, 3, 1, 1)
    """
    return max(1, min(int(wanted), _highest(period)))


def _highest(period: float) -> int:
    """The highest harmonic below the Nyquist frequency of ``period``: ``(P - 1) / 2``."""
    return int((period - 1.0) // 2.0)


def whole_multiple(period: float, shorter: float) -> int:
    """``period / shorter`` when it is a whole number of at least 3, else 0: then the longer
    cycle may modulate the shorter one (:func:`harmonic_numbers`).

    Examples
    --------
    >>> whole_multiple(168.0, 24.0), whole_multiple(24.0, 12.0), whole_multiple(365.2425, 7.0)
    (7, 0, 0)
    """
    ratio = period / shorter
    m = round(ratio)
    return m if m >= 3 and abs(ratio - m) <= 1e-9 * ratio else 0


def sidebands(period: float, shorter: float) -> tuple[int, ...]:
    """The harmonics of ``period`` next to the fundamental of a ``shorter`` period it is a
    whole multiple ``m`` of: ``m - 1, m + 1, m - 2, m + 2``, those below the Nyquist frequency
    (none when it is not a multiple). A shorter cycle whose amplitude follows the longer one
    lies on them (docs/math.md §6).

    Examples
    --------
    >>> sidebands(168.0, 24.0), sidebands(14.0, 2.0), sidebands(24.0, 7.0)
    ((6, 8, 5, 9), (6, 5), ())
    """
    m = whole_multiple(period, shorter)
    return tuple(j for j in (m - 1, m + 1, m - 2, m + 2) if m and 1 <= j <= _highest(period))


def harmonic_numbers(periods: tuple[float, ...], harmonics: Any = None
                     ) -> tuple[tuple[int, ...], ...]:
    """The Fourier harmonics of each period: harmonic ``j`` of period ``P`` is the pair of
    terms of angular frequency ``2πj/P``.

    ``harmonics`` is an int ``k`` (the first ``k`` of every period), one entry per period
    (an int ``k``, or a tuple of harmonic numbers), or None (default). A first ``k`` is capped
    at ``(P - 1) / 2`` (:func:`harmonics_of`). None gives each period its first
    :data:`DEFAULT_HARMONICS`; then, when those fit in :data:`MAX_HARMONICS` pairs, a period
    that is a whole multiple ``m >= 3`` of a shorter one (a week of a day: ``m = 7``) gets
    instead its first two and the sidebands ``m - 1, m + 1, m - 2, m + 2`` of the nearest such
    shorter cycle's fundamental, as many as fit (shortest periods first, at least one each),
    leaving out any at the frequency of a shorter period's harmonic. Those sidebands are a
    daily cycle whose amplitude follows the week (quieter weekends), which the first few
    harmonics of a day and of a week cannot hold: without them, the weekend's smaller daily
    swing looks like a change.

    Parameters
    ----------
    periods : tuple of float
        The periods in steps, each ``>= 2``.
    harmonics : int, tuple or None
        As above.

    Returns
    -------
    tuple of tuple of int
        The harmonic numbers of each period, in the order of ``periods``.

    Examples
    --------
    >>> harmonic_numbers((24.0, 168.0))      # hourly data: a day and a week
    ((1, 2, 3), (1, 2, 6, 8, 5))
    >>> harmonic_numbers((7.0, 365.2425))     # daily data: a week and a year
    ((1, 2, 3), (1, 2, 3))
    >>> harmonic_numbers((24.0, 168.0), (2, (1, 7)))
    ((1, 2), (1, 7))
    >>> harmonic_numbers((24.0,), ((1, 3),))  # one period: a tuple of one entry
    ((1, 3),)
    """
    given = harmonics if isinstance(harmonics, (tuple, list)) else (harmonics,) * len(periods)
    if len(given) != len(periods):
        hint = "" if len(periods) != 1 else (
            f"; for one period, harmonic numbers are written ({tuple(given)!r},)")
        raise ValueError(f"harmonics must be None, an integer >= 1, or one entry per period "
                         f"(an integer >= 1 or a tuple of harmonic numbers), got {harmonics!r} "
                         f"for period {periods!r}{hint}")
    numbers: list[tuple[int, ...]] = []
    for p, k in zip(periods, given, strict=True):
        highest = max(1, _highest(p))  # below the Nyquist frequency
        if isinstance(k, (tuple, list)):
            if not k or any(isinstance(j, bool) or not isinstance(j, (int, np.integer))
                            or not 1 <= j <= highest for j in k) or len(set(k)) < len(k):
                raise ValueError(f"harmonics of period {p:g} must be distinct integers in "
                                 f"[1, {highest}], got {k!r}")
            numbers.append(tuple(int(j) for j in k))
        elif k is None and harmonics is None:
            numbers.append(tuple(range(1, harmonics_of(p, DEFAULT_HARMONICS) + 1)))
        elif isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"harmonics of period {p:g} must be an integer >= 1 or a tuple of "
                             f"harmonic numbers in [1, {highest}], got {k!r}")
        else:
            numbers.append(tuple(range(1, harmonics_of(p, int(k)) + 1)))
    if harmonics is None and sum(map(len, numbers)) <= MAX_HARMONICS:
        numbers = _with_sidebands(periods, numbers)
    return tuple(numbers)


def _with_sidebands(periods: tuple[float, ...], numbers: list[tuple[int, ...]]
                    ) -> list[tuple[int, ...]]:
    """The default harmonics with a multiple's sidebands (:func:`harmonic_numbers`)."""
    order = sorted(range(len(periods)), key=lambda i: periods[i])
    budget = MAX_HARMONICS - sum(len(numbers[i]) for i in order)
    for rank, i in enumerate(order):
        p = periods[i]
        shorter = [periods[j] for j in order[:rank]]
        # the sidebands of the nearest shorter cycle that it is a multiple of
        near = max((q for q in shorter if whole_multiple(p, q)), default=None)
        if near is None:
            continue
        budget += len(numbers[i])
        later = len(order) - rank - 1  # one harmonic kept for each longer period
        taken = [k / q for q, j in zip(shorter, order[:rank], strict=True) for k in numbers[j]]
        wanted = list(range(1, harmonics_of(p, 2) + 1))
        wanted += [j for j in sidebands(p, near)  # not a shorter period's harmonic again
                   if not any(abs(j / p - f) <= 1e-9 * f for f in taken)]
        keep = tuple(dict.fromkeys(wanted))[:max(1, budget - later)]
        numbers[i] = keep
        budget -= len(keep)
    return numbers


class SeasonalObservation(NamedTuple):
    """A standardised observation against a batch of seasonal runs: the residual ``r = z -
    hᵀm``, ``ph = P h`` and ``q = hᵀ P h`` of every run, computed once per step."""

    runs: Runs
    z: float
    r: np.ndarray
    ph: np.ndarray
    q: np.ndarray


@dataclass(frozen=True)
class SeasonalTrend(WholeSeriesPrior, SegmentModel):
    """Segments with a polynomial trend, a cycle and unknown noise precision.

    Parameters
    ----------
    degree : int
        0 (level), 1 (level and slope) or 2 (and curvature).
    period : float or tuple of float, optional
        Period(s) of the cycle in steps, each ``>= 2`` (e.g. 24 for a daily cycle of hourly
        data, ``(24, 168)`` with a weekly one); None: no cycle (the model is then
        :class:`PolynomialTrend`'s, on this module's kernel).
    harmonics : int, tuple or None
        Fourier harmonics: the first ``k`` of every period (capped at ``(P - 1) / 2``), one
        entry per period (a first ``k`` or a tuple of harmonic numbers), or None: three per
        period, except that a period that is a whole multiple of a shorter one (a week of a
        day) gets its first two and the sidebands that let the shorter cycle's amplitude
        follow it (:func:`harmonic_numbers`). At most ``MAX_HARMONICS`` pairs in all.
    level_scale, slope_scale, noise_scale, noise_shape, evidence, outlier_cost, prior
        As :class:`PolynomialTrend`.
    cycle_scale : float
        Prior sd of each Fourier coefficient, in units of the series scale, ``> 0``.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> from possibly.changepoint.models.seasonal import SeasonalTrend
    >>> t = np.arange(480)
    >>> rng = np.random.default_rng(1)
    >>> y = 5 * np.sin(2 * np.pi * t / 24) + (t >= 300) * 6 + rng.normal(size=480)
    >>> res = ps.ChangepointDetector(model=SeasonalTrend(0, period=24)).fit(y)
    >>> res.changepoints.tolist()
    [300]
    """

    degree: int = 0
    period: float | tuple[float, ...] | None = None
    harmonics: int | tuple[int | tuple[int, ...], ...] | None = None
    _: KW_ONLY
    level_scale: float = 2.0
    slope_scale: float = 10.0
    cycle_scale: float = 1.0
    noise_scale: float = 0.5
    noise_shape: float = 1.0
    evidence: str = "integrated"
    outlier_cost: float = DEFAULT_OUTLIER_COST
    prior: SegmentPrior | None = None
    dim: float = field(init=False)
    default_forgetting = 1.0
    tol_per_hazard = 0.4
    #: the rotation angles' (cos, sin), one pair per harmonic
    _angles: tuple[tuple[float, float], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.degree, bool) or not isinstance(self.degree, (int, np.integer)) \
                or not 0 <= self.degree <= 2:
            raise ValueError(f"degree must be 0, 1 or 2, got {self.degree!r}")
        check_positive_settings(self, ("level_scale", "slope_scale", "cycle_scale",
                                       "noise_scale", "noise_shape", "outlier_cost"))
        if self.prior is not None and not isinstance(self.prior, SegmentPrior):
            raise ValueError(f"prior must be a SegmentPrior (see automatic_prior) or None, got "
                             f"{self.prior!r}")
        periods = () if self.period is None else (
            tuple(self.period) if isinstance(self.period, (tuple, list)) else (self.period,))
        for p in periods:
            if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)) \
                    or not (math.isfinite(p) and p >= 2):
                raise ValueError(f"period must be a number >= 2 (steps) or a tuple of them, "
                                 f"got {self.period!r}")
        angles = []
        numbers = harmonic_numbers(tuple(float(p) for p in periods), self.harmonics)
        if isinstance(self.harmonics, (tuple, list)):  # hashable, and equal whatever its types
            object.__setattr__(self, "harmonics", tuple(
                tuple(int(j) for j in k) if isinstance(k, (tuple, list)) else k
                for k in self.harmonics))
        for p, js in zip(periods, numbers, strict=True):
            for j in js:
                w = 2.0 * math.pi * j / float(p)
                angles.append((math.cos(w), math.sin(w)))
        if len(angles) > MAX_HARMONICS:
            raise ValueError(f"harmonics must total at most {MAX_HARMONICS} over the periods, "
                             f"got {len(angles)}")
        object.__setattr__(self, "degree", int(self.degree))
        object.__setattr__(self, "period", None if not periods else (
            float(periods[0]) if len(periods) == 1 else tuple(float(p) for p in periods)))
        object.__setattr__(self, "_angles", tuple(angles))
        # coefficients, λ and the run length
        object.__setattr__(self, "dim", float(self.degree + 1 + 2 * len(angles) + 2))

    @property
    def state_size(self) -> int:
        """Number of regression coefficients: trend terms and two per harmonic."""
        return self.degree + 1 + 2 * len(self._angles)

    @property
    def name(self) -> str:
        base = TREND_NAMES[self.degree]
        if self.period is None:
            return base
        periods = self.period if isinstance(self.period, tuple) else (self.period,)
        return base + " + cycle " + "/".join(f"{p:g}" for p in periods)

    def _observed(self) -> list[int]:
        """The state entries the observation sees: the level and every harmonic's ``c_k``."""
        p = self.degree + 1
        return [0] + [p + 2 * i for i in range(len(self._angles))]

    def prior_variances(self) -> np.ndarray:
        """The prior's diagonal covariance (standardised units, relative to the noise
        variance, which a quantised series raises to its rounding floor): level, trend terms
        over the horizon, then the Fourier coefficients."""
        horizon = 1.0 if self.prior is None else self._prior().horizon
        sds = [self.level_scale] + [self.slope_scale / horizon ** j
                                    for j in range(1, self.degree + 1)]
        sds += [self.cycle_scale] * (2 * len(self._angles))
        return np.square(np.asarray(sds)) / prior_noise_variance(self.noise_scale, self.prior)

    def new_runs(self, n: int) -> Runs:
        d = self.state_size
        noise_var = prior_noise_variance(self.noise_scale, self.prior)
        if n:  # the empty state of init() has the right shapes before the prior is known
            self._prior()
        cov = np.diag(self.prior_variances())
        return {"m": np.zeros((n, d)), "cov": np.repeat(cov[None], n, axis=0),
                "a": np.full(n, float(self.noise_shape)),
                "b": np.full(n, float(self.noise_shape) * noise_var),
                "seen": np.zeros(n, dtype=bool)}

    def forget(self, runs: Runs, rho: float) -> Runs:
        # the kernel's expressions, in its order (the engines agree bit for bit): F on the
        # rows (trend shift, then each rotation), then Fᵀ on the columns, then f ← f^ρ
        m, cov = runs["m"].copy(), runs["cov"].copy()
        for view in (cov, cov.transpose(0, 2, 1), m):  # rows of P, its columns, m
            self._transition(view)
        if rho == 1.0:
            return {**runs, "m": m, "cov": cov}
        return {"m": m, "cov": cov / rho, "a": runs["a"] * rho,
                "b": np.maximum(runs["b"] * rho, B_MIN), "seen": runs["seen"]}

    def _transition(self, view: np.ndarray) -> None:
        """``F`` applied in place along axis 1 of ``view``: the trend's shift, then each
        harmonic's rotation."""
        p = self.degree + 1
        if p == 3:
            view[:, 0] = view[:, 0] + view[:, 1] + view[:, 2]
            view[:, 1] = view[:, 1] + 2.0 * view[:, 2]
        elif p == 2:
            view[:, 0] = view[:, 0] + view[:, 1]
        for i, (cw, sw) in enumerate(self._angles):
            k = p + 2 * i
            x, y = view[:, k].copy(), view[:, k + 1].copy()
            view[:, k] = cw * x - sw * y
            view[:, k + 1] = sw * x + cw * y

    def _z(self, y: Any) -> float:
        prior = self._prior()
        return (float(y) - prior.loc) / prior.scale

    def prepare(self, runs: Runs, y: Any) -> SeasonalObservation:
        z = self._z(y)
        m, cov = runs["m"], runs["cov"]
        seen = self._observed()
        fit = m[:, 0].copy()
        for k in seen[1:]:
            fit = fit + m[:, k]
        ph = np.zeros(m.shape)
        for k in seen:
            ph = ph + cov[:, :, k]
        q = np.zeros(m.shape[0])
        for k in seen:
            q = q + ph[:, k]
        return SeasonalObservation(runs, z, z - fit, ph, q)

    def log_consistency(self, prepared: SeasonalObservation) -> np.ndarray:
        r, runs = prepared.r, prepared.runs
        return -(runs["a"] + 0.5) * np.log1p(r * r / (2.0 * runs["b"] * (1.0 + prepared.q)))

    def update(self, prepared: SeasonalObservation, gamma: float) -> tuple[np.ndarray, Runs]:
        incr, new, _ = self._observe(prepared, gamma)
        return incr, new

    def _observe(self, prepared: SeasonalObservation, gamma: float
                 ) -> tuple[np.ndarray, Runs, np.ndarray]:
        """:meth:`update` and where the outlier floor was taken (the run left unchanged)."""
        runs, r, q, ph = prepared.runs, prepared.r, prepared.q, prepared.ph
        a, b = runs["a"], runs["b"]
        incr, outlier = floored_evidence(a, b, r, q, gamma, self.evidence == "integrated",
                                         self.outlier_cost)
        g = np.where(outlier, 0.0, gamma)
        f = g / (1.0 + g * q)
        gain = ph * f[:, None]
        new = {"m": runs["m"] + gain * r[:, None],
               "cov": runs["cov"] - gain[:, :, None] * ph[:, None, :],
               "a": a + 0.5 * g, "b": b + 0.5 * g * r * r / (1.0 + g * q),
               "seen": runs["seen"] | ~outlier}
        # a quantised series: b / a, the noise variance, at least the rounding variance
        new["b"] = floored_rate(new["a"], new["b"], self._prior().noise_floor)
        return incr, new, outlier

    def outlying(self, y: np.ndarray, discount: np.ndarray) -> np.ndarray:
        """The observations of one segment that its run left out: the segment's run replayed
        from its start with the online discounts, an observation is far when its evidence took
        the outlier floor (it would have cost the run more than ``outlier_cost``).

        Examples
        --------
        >>> from possibly.changepoint import automatic_prior
        >>> t = np.arange(96)
        >>> y = 3 * np.sin(2 * np.pi * t / 24) + 0.1 * np.cos(t)
        >>> y[60] += 8.0
        >>> model = SeasonalTrend(0, period=24, prior=automatic_prior(y))
        >>> np.flatnonzero(model.outlying(y, np.ones(96))).tolist()
        [60]
        """
        z = (np.asarray(y, dtype=np.float64) - self._prior().loc) / self._prior().scale
        runs = self.new_runs(1)
        far = np.zeros(z.size, dtype=bool)
        for i in range(z.size):
            if i:
                runs = self.forget(runs, 1.0)
            if math.isnan(z[i]) or math.isnan(discount[i]):
                continue
            obs = self.prepare(runs, float(y[i]))
            _, runs, floored = self._observe(obs, float(discount[i]))
            far[i] = bool(floored[0])
        return far

    def estimate(self, runs: Runs) -> np.ndarray:
        """E* of the current fitted value (level plus cycle, in the units of the series)."""
        prior = self._prior()
        fit = runs["m"][:, 0].copy()
        for k in self._observed()[1:]:
            fit = fit + runs["m"][:, k]
        return np.where(runs["seen"], prior.loc + prior.scale * fit, np.nan)

    def compiled_kernel(self) -> CompiledKernel | None:
        """The kernel of this class, shared by all its settings (degree, periods).

        Examples
        --------
        >>> m = SeasonalTrend(0, period=24.0, prior=SegmentPrior(0.0, 1.0, 100.0))
        >>> kernel = m.compiled_kernel()
        >>> kernel.params[:3].tolist()   # state size, trend terms, harmonics
        [7.0, 1.0, 3.0]
        """
        if type(self) is not SeasonalTrend:
            return None
        params = np.full(SEASONAL_PARAMS, np.nan)
        nh = len(self._angles)
        params[:5] = (self.state_size, self.degree + 1, nh, self.evidence == "integrated",
                      self.outlier_cost)
        params[ANGLES:ANGLES + 2 * MAX_HARMONICS] = 0.0
        for i, (cw, sw) in enumerate(self._angles):
            params[ANGLES + i] = cw
            params[ANGLES + MAX_HARMONICS + i] = sw
        if self.prior is not None:  # unresolved: a kernel that is never run (fit resolves)
            params[5:9] = (self.prior.loc, self.prior.scale, self.noise_shape,
                           self.noise_shape * prior_noise_variance(self.noise_scale, self.prior))
            params[COV0:COV0 + self.state_size] = self.prior_variances()
            params[NOISE_FLOOR] = self.prior.noise_floor
        return CompiledKernel(SEASONAL_KERNEL, params, pack_runs,
                              functools.partial(unpack_runs, d=self.state_size),
                              work_size=MAX_STATE)


def model_family(period: float | tuple[float, ...] | None = None, **kwargs: Any
                 ) -> list[SegmentModel]:
    """The default family of segment models, with seasonal members when ``period`` is given.

    Without ``period``: the level, linear and quadratic trends of
    :func:`possibly.changepoint.models.trend.model_family` (what ``ChangepointDetector()``
    runs). With a period (steps, or a tuple of periods): the same three, then a level plus a
    cycle and a linear trend plus a cycle (:class:`SeasonalTrend`), all on one compiled
    kernel. Keyword arguments go to every model.

    Parameters
    ----------
    period : float or tuple of float, optional
        Period(s) of the cycle in steps (see :func:`possibly.changepoint.infer_period`).
    **kwargs
        Settings shared by every model (``prior``, ``outlier_cost``, ...).

    Returns
    -------
    list of SegmentModel

    Examples
    --------
    >>> [m.name for m in model_family()]
    ['level', 'linear trend', 'quadratic trend']
    >>> [m.name for m in model_family(period=24)]  # doctest: +NORMALIZE_WHITESPACE
    ['level', 'linear trend', 'quadratic trend', 'level + cycle 24',
     'linear trend + cycle 24']
    """
    if period is None:
        return list(trend_family(**kwargs))
    plain = [SeasonalTrend(degree, **kwargs) for degree in (0, 1, 2)]
    return [*plain, *(SeasonalTrend(degree, period, **kwargs) for degree in (0, 1))]


# ----------------------------------------------------------------------------------------------
# the compiled kernel (KernelFunctions), the formulas of SeasonalTrend's methods per run. A run
# of d coefficients is the row (a, b, seen, m (d), cov (d², row-major)): its first
# 3 + d + d² floats (run_size), the rest of the row never read, so that a short state is
# written and moved whole in a few cache lines. params are (d, p, nh, integrated, floor, loc,
# scale, a₀, b₀, cos of the angles, sin of the angles, prior variances, noise floor).

SEASONAL_WIDTH = 3 + MAX_STATE + MAX_STATE * MAX_STATE
A_AT = 0  # a, then b and seen
M_AT = 3  # the coefficients, then the covariance
ANGLES = 9
COV0 = ANGLES + 2 * MAX_HARMONICS
NOISE_FLOOR = COV0 + MAX_STATE
SEASONAL_PARAMS = NOISE_FLOOR + 1


def pack_runs(runs: Runs) -> np.ndarray:
    """Seasonal runs as rows of :data:`SEASONAL_WIDTH` floats (zeros past the state)."""
    n, d = runs["m"].shape
    rows = np.zeros((n, SEASONAL_WIDTH))
    rows[:, A_AT], rows[:, A_AT + 1], rows[:, A_AT + 2] = runs["a"], runs["b"], runs["seen"]
    rows[:, M_AT:M_AT + d] = runs["m"]
    rows[:, M_AT + d:M_AT + d + d * d] = runs["cov"].reshape(n, d * d)
    return rows


def unpack_runs(rows: np.ndarray, d: int) -> Runs:
    """The inverse of :func:`pack_runs` for a state of ``d`` coefficients."""
    n = len(rows)
    cov = rows[:, M_AT + d:M_AT + d + d * d].reshape(n, d, d)
    return {"m": rows[:, M_AT:M_AT + d].copy(), "cov": cov.copy(),
            "a": rows[:, A_AT].copy(), "b": rows[:, A_AT + 1].copy(),
            "seen": rows[:, A_AT + 2] != 0.0}


def run_size(params: np.ndarray) -> int:
    """The floats a run of these settings uses: the first ``3 + d + d²`` of its row."""
    d = int(params[0])
    return M_AT + d + d * d


def kernel_prepare(params: np.ndarray, y: float) -> float:
    return (y - params[5]) / params[6]


def kernel_new_run(params: np.ndarray, runs: np.ndarray, j: int) -> None:
    d = int(params[0])
    for c in range(M_AT + d + d * d):
        runs[j, c] = 0.0
    for r in range(d):
        runs[j, M_AT + d + d * r + r] = params[COV0 + r]
    runs[j, A_AT] = params[7]
    runs[j, A_AT + 1] = params[8]


def kernel_forget(params: np.ndarray, runs: np.ndarray, j: int, rho: float,
                  work: np.ndarray) -> None:
    d = int(params[0])
    p = int(params[1])
    nh = int(params[2])
    s = M_AT + d  # the covariance's first entry
    # F on the rows of P: whole rows at a time (contiguous), each entry as in the column pass
    if p == 3:
        for c in range(s, s + d):
            runs[j, c] = runs[j, c] + runs[j, c + d] + runs[j, c + 2 * d]
            runs[j, c + d] = runs[j, c + d] + 2.0 * runs[j, c + 2 * d]
    elif p == 2:
        for c in range(s, s + d):
            runs[j, c] = runs[j, c] + runs[j, c + d]
    for i in range(nh):
        cw = params[ANGLES + i]
        sw = params[ANGLES + MAX_HARMONICS + i]
        k = s + (p + 2 * i) * d
        for c in range(k, k + d):
            x = runs[j, c]
            y = runs[j, c + d]
            runs[j, c] = cw * x - sw * y
            runs[j, c + d] = sw * x + cw * y
    # then Fᵀ on its columns, row by row, and F on m (row -1): contiguous entries alike
    for r in range(-1, d):
        base = M_AT if r < 0 else s + r * d
        if p == 3:
            runs[j, base] = runs[j, base] + runs[j, base + 1] + runs[j, base + 2]
            runs[j, base + 1] = runs[j, base + 1] + 2.0 * runs[j, base + 2]
        elif p == 2:
            runs[j, base] = runs[j, base] + runs[j, base + 1]
        for i in range(nh):
            cw = params[ANGLES + i]
            sw = params[ANGLES + MAX_HARMONICS + i]
            k = base + p + 2 * i
            x = runs[j, k]
            y = runs[j, k + 1]
            runs[j, k] = cw * x - sw * y
            runs[j, k + 1] = sw * x + cw * y
    if rho != 1.0:
        for r in range(d):
            for c in range(d):
                runs[j, s + d * r + c] = runs[j, s + d * r + c] / rho
        runs[j, A_AT] = runs[j, A_AT] * rho
        runs[j, A_AT + 1] = max(runs[j, A_AT + 1] * rho, B_MIN)


def kernel_log_consistency(params: np.ndarray, runs: np.ndarray, j: int, z: float) -> float:
    d = int(params[0])
    p = int(params[1])
    s = M_AT + d
    fit = runs[j, M_AT]
    for i in range(int(params[2])):
        fit = fit + runs[j, M_AT + p + 2 * i]
    r = z - fit
    q = 0.0
    for t in range(int(params[2]) + 1):
        row = 0 if t == 0 else p + 2 * (t - 1)
        v = 0.0 + runs[j, s + d * row]
        for i in range(int(params[2])):
            v = v + runs[j, s + d * row + p + 2 * i]
        q = q + v
    return -(runs[j, A_AT] + 0.5) * math.log1p(r * r / (2.0 * runs[j, A_AT + 1] * (1.0 + q)))


def kernel_update(params: np.ndarray, runs: np.ndarray, j: int, z: float, g: float,
                  work: np.ndarray) -> float:
    d = int(params[0])
    p = int(params[1])
    nh = int(params[2])
    s = M_AT + d
    aj = runs[j, A_AT]
    bj = runs[j, A_AT + 1]
    fit = runs[j, M_AT]
    for i in range(nh):
        fit = fit + runs[j, M_AT + p + 2 * i]
    r = z - fit
    for row in range(d):  # work = P h
        v = 0.0 + runs[j, s + d * row]
        for i in range(nh):
            v = v + runs[j, s + d * row + p + 2 * i]
        work[row] = v
    q = 0.0 + work[0]
    for i in range(nh):
        q = q + work[p + 2 * i]
    gq = 1.0 + g * q
    log_ratio = math.log1p(0.5 * g * r * r / (gq * bj))
    if params[3] != 0.0:  # integrated evidence
        best = (-0.5 * g * LOG_2PI + math.lgamma(aj + 0.5 * g) - math.lgamma(aj)
                - 0.5 * math.log(gq) - 0.5 * g * math.log(bj))
    else:
        best = 0.0
    ev_in = best - (aj + 0.5 * g) * log_ratio
    if ev_in < best - params[4]:  # outlier for this run: no update
        return best - params[4]
    f = g / (1.0 + g * q)
    for row in range(d):
        gain = work[row] * f
        runs[j, M_AT + row] = runs[j, M_AT + row] + gain * r
        for c in range(d):
            runs[j, s + d * row + c] = runs[j, s + d * row + c] - gain * work[c]
    runs[j, A_AT] = aj + 0.5 * g
    runs[j, A_AT + 1] = bj + 0.5 * g * r * r / (1.0 + g * q)
    if params[NOISE_FLOOR] > 0.0:  # floored_rate: b / a at least the rounding variance
        runs[j, A_AT + 1] = max(runs[j, A_AT + 1], runs[j, A_AT] * params[NOISE_FLOOR])
    runs[j, A_AT + 2] = 1.0
    return ev_in


def kernel_estimate(params: np.ndarray, runs: np.ndarray, j: int) -> float:
    if runs[j, A_AT + 2] == 0.0:
        return math.nan
    p = int(params[1])
    fit = runs[j, M_AT]
    for i in range(int(params[2])):
        fit = fit + runs[j, M_AT + p + 2 * i]
    return params[5] + params[6] * fit


SEASONAL_KERNEL = KernelFunctions(SEASONAL_WIDTH, kernel_prepare, kernel_new_run, kernel_forget,
                                  kernel_log_consistency, kernel_update, kernel_estimate,
                                  run_size=run_size)
