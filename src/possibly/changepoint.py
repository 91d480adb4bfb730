"""Robust online change-point detection: the possibilistic BOCPD of the paper's §5.3.

The state at time ``t`` is the possibility ``w_r`` of each run length ``r`` (the number of
observations before ``t`` in the current segment) and, given ``r``, a normal possibility
``N̄(θ; μ_r, λ_r)`` of the segment mean. Per observation ``y`` with noise scale ``σ``, hazard
``h`` and forgetting ``ρ`` (MATH.md §6):

* predict: every run grows by one and keeps ``w_r``, its precision is forgotten, ``λ_r ← ρ λ_r``;
  a new run starts with ``w = h · max_r w_r`` and the uninformative ``λ = 0``;
* consistency: ``log c = max_r [log w_r − ½ (y − μ_r)² / (1/λ_r + σ²)]`` (``≥ log h``);
* discount: ``γ = c^(1/2)`` (the model ``(θ, r)`` is two-dimensional), or 1 for the standard
  version; with a threshold ``τ``, ``γ`` is kept only when ``γ ≤ τ``;
* update: ``log w_r −= ½ (y − μ_r)² / (1/λ_r + σ²/γ)``, normal update of ``μ_r, λ_r`` with
  noise ``σ²/γ``, then ``log w −= max log w``.

There is no normalising sum: dropping run lengths whose possibility is below ``tol`` (relative
to the maximum) changes no kept value at the step it happens (the new run alone makes
``c ≥ h > tol``). Change points are read off by backtracking the MAP run lengths from the end.

The pure functions :func:`init` and :func:`step` return new objects; :class:`ChangepointDetector`
is a thin, picklable, streaming wrapper (optionally with the numba inner loop of
:mod:`possibly.changepoint_numba`, which gives identical results).

Other segment models: ``model=ConjugateModel(prior, likelihood)`` runs the same run-length
recursion for any conjugate family (Poisson rates with a :class:`~possibly.Gamma` prior,
proportions with a :class:`~possibly.Beta` prior, ...): the forgetting is the power
``f_r ← f_r ** ρ``, the consistency and the update use the family's own sup of a product, and
``γ = c^(1/d)`` with ``d = prior.effective_dim + 1`` (the run length counts as one dimension).
The normal-mean model above is the default (``model="normal"``) and keeps its numba engine.

Choosing the parameters
-----------------------
``sigma``
    Noise scale within a segment. ``"auto"`` uses :func:`estimate_sigma` (MAD of first
    differences / √2), which is insensitive to both the jumps and the outliers.
``hazard``
    Possibility of a change at any step: roughly the largest probability of a change per
    observation that you consider plausible (``2.5e-3``: at most one change in 400 points).
    Lower values need stronger evidence before a change is called.
``forgetting``
    ``ρ`` in ``(0, 1]``: the precision of the segment mean is multiplied by ``ρ`` at each step,
    so the level is learnt from about ``1 / (1 − ρ)`` recent observations (10 for 0.9). Values
    below 1 absorb slow drifts within a segment; 1 is the constant-mean model.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from possibly.families.base import ExponentialFamily, Possibility
from possibly.validation import check_unit_interval

__all__ = [
    "ChangepointDetector",
    "ChangepointParams",
    "ChangepointResult",
    "ChangepointState",
    "ConjugateModel",
    "ConjugateState",
    "StepInfo",
    "backtrack",
    "estimate_sigma",
    "init",
    "step",
]

#: largest accepted magnitude of observations and sigma (squares must not overflow)
MAX_MAGNITUDE = 1e150
#: hindsight log consistency below which a discounted observation of a ConjugateModel is an
#: outlier: that of a normal value 3 σ from a well-determined mean
_OUTLIER_LOG_CONSISTENCY = -4.5


# ----------------------------------------------------------------------------------------------
# segment models


@dataclass(frozen=True, eq=False)
class ConjugateModel:
    """A segment model from any conjugate family: a prior and the information in one observation.

    Given the run length, the segment parameter θ has a possibility function of the prior's
    family. Per observation ``y`` (MATH.md §2 and §6, generalised):

    * predict: ``f_r ← f_r ** ρ`` (the forgetting is a power; for the normal mean it is
      ``λ ← ρ λ``), the new run gets ``f = prior``;
    * consistency: ``log c = max_r [log w_r + log sup_θ f_r(θ) L(θ | y)]``;
    * update: the possibilistic Bayes rule on the joint ``(r, θ)`` with ``L^γ``:
      ``log w_r += log sup_θ f_r(θ) L(θ | y)^γ`` and ``f_r ← f_r L^γ / sup`` (the conjugate
      sum), then ``log w −= max log w``.

    Parameters
    ----------
    prior : Possibility
        One member (batch shape ``()``) of a conjugate family (:class:`~possibly.Normal`,
        :class:`~possibly.Gamma`, :class:`~possibly.Beta`, :class:`~possibly.NormalGamma`,
        :class:`~possibly.MultivariateNormal`, ...): the possibility of θ at the start of a
        segment, e.g. ``Gamma.uninformative()``.
    likelihood : callable
        Maps one observation ``y[t]`` (a float, or an array for vector observations) to the
        information in its likelihood, a member of the prior's family with batch shape ``()``,
        e.g. :func:`possibly.likelihood.poisson` or
        ``functools.partial(possibly.likelihood.normal, sd=2.0)``. Use a module-level function
        or a ``functools.partial`` (not a lambda) if the detector must be pickled.
    dim : float, optional
        Effective dimension ``d`` of ``(θ, r)`` in ``γ = c^(1/d)``; default
        ``prior.effective_dim + 1`` (2 for a scalar θ, as in the paper).

    Examples
    --------
    >>> import possibly as ps
    >>> model = ConjugateModel(ps.Gamma.uninformative(), ps.likelihood.poisson)
    >>> model.dim
    2.0
    >>> counts = [3, 4, 2, 3, 4, 15, 14, 16, 15, 13]
    >>> res = ps.ChangepointDetector(hazard=0.01, forgetting=1.0, model=model).fit(counts)
    >>> res.changepoints.tolist(), round(float(res.mean[-1]), 2)  # E* of the last rate
    ([5], 14.33)
    >>> res.discount.round(2)  # the first counts after the change were discounted
    array([1.  , 0.96, 0.88, 1.  , 0.95, 0.1 , 0.17, 0.35, 1.  , 0.95])
    """

    prior: Possibility
    likelihood: Callable[[Any], Possibility]
    dim: float | None = None

    def __post_init__(self) -> None:
        prior = self.prior
        if not isinstance(prior, ExponentialFamily):
            raise ValueError(f"prior must be a member of a conjugate family (Normal, Gamma, Beta, "
                             f"NormalGamma, ...), got {type(prior).__name__}")
        if prior.batch_shape != ():
            raise ValueError(f"prior must be a single possibility function (batch shape ()), "
                             f"got batch shape {prior.batch_shape}")
        if not np.all(prior.bounded):
            raise ValueError("prior is unbounded (its supremum is infinite)")
        if not callable(self.likelihood):
            raise ValueError(f"likelihood must be callable (one observation -> the information "
                             f"in its likelihood), got {self.likelihood!r}")
        if self.dim is None:
            dim = float(prior.effective_dim + 1)
        else:
            dim = _scalar("dim", self.dim)
            if not dim > 0.0:
                raise ValueError(f"dim must be positive, got {dim!r}")
        object.__setattr__(self, "dim", dim)
        object.__setattr__(self, "_mode_shape", np.shape(_mode_value(prior)))

    def information(self, y) -> Possibility:
        """``likelihood(y)``, checked: the prior's family, batch shape ``()``, bounded."""
        try:
            lik = self.likelihood(y)
        except (TypeError, ValueError) as exc:
            try:
                shown = np.asarray(y, dtype=np.float64).tolist()
            except (TypeError, ValueError):
                shown = y
            raise ValueError(f"likelihood failed on the observation {shown!r}: {exc}") from exc
        if type(lik) is not type(self.prior):
            raise ValueError(f"likelihood must return a {type(self.prior).__name__} (the prior's "
                             f"family), got {type(lik).__name__}")
        if lik.batch_shape != ():
            raise ValueError(f"likelihood must return the information in one observation "
                             f"(batch shape ()), got batch shape {lik.batch_shape}")
        if not np.all(lik.bounded):
            raise ValueError("likelihood returned an unbounded function (infinite supremum): "
                             "it carries no normalised information")
        return lik

    def __repr__(self) -> str:
        name = getattr(self.likelihood, "__qualname__", None) or repr(self.likelihood)
        return f"ConjugateModel(prior={self.prior!r}, likelihood={name}, dim={self.dim:g})"


def _mode_value(member: Possibility):
    """E* of an unbatched member: a float, or a flat array (tuple modes concatenated)."""
    m = member.mode
    if isinstance(m, tuple):
        return np.concatenate([np.ravel(np.asarray(c, dtype=np.float64)) for c in m])
    m = np.asarray(m, dtype=np.float64)
    return float(m) if m.ndim == 0 else m.copy()


# ----------------------------------------------------------------------------------------------
# parameters, state and the pure step


@dataclass(frozen=True)
class ChangepointParams:
    """Model parameters (all validated by :meth:`make`).

    Attributes
    ----------
    sigma : float or None
        Observation noise scale within a segment (normal-mean model); None with ``model``.
    hazard : float
        Possibility ``h`` in (0, 1) of a change point at each step.
    forgetting : float
        Factor ``ρ`` in (0, 1] applied to the precision of the segment mean at each step.
    robust : bool
        Discount each observation by ``γ = √c`` (True) or keep it whole (False, standard).
    tau : float or None
        Threshold variant: discount only when ``γ ≤ tau``, in (0, 1].
    tol : float
        Run lengths whose possibility falls below ``tol`` (relative to the maximum) are
        dropped; in [0, hazard), 0 keeps every run length.
    model : ConjugateModel or None
        The segment model; None is the built-in normal mean with known ``sigma``.
    """

    sigma: float | None
    hazard: float = 2.5e-3
    forgetting: float = 0.9
    robust: bool = True
    tau: float | None = None
    tol: float = 1e-12
    model: ConjugateModel | None = None

    @classmethod
    def make(cls, sigma, hazard=2.5e-3, forgetting=0.9, robust=True, tau=None,
             tol=1e-12, model=None) -> ChangepointParams:
        """Validate and build; bad values raise ValueError naming the argument and range."""
        if model is None:
            sigma = _check_sigma(sigma)
        elif not isinstance(model, ConjugateModel):
            raise ValueError(f"model must be a ConjugateModel or None, got {model!r}")
        elif sigma is not None:
            raise ValueError("sigma belongs to the normal-mean model: it must be None with a "
                             f"ConjugateModel (whose likelihood holds the noise), got {sigma!r}")
        hazard = float(check_unit_interval("hazard", _scalar("hazard", hazard),
                                           low_open=True, high_open=True))
        forgetting = float(check_unit_interval("forgetting", _scalar("forgetting", forgetting),
                                               low_open=True, high_open=False))
        if tau is not None:
            tau = float(check_unit_interval("tau", _scalar("tau", tau),
                                            low_open=True, high_open=False))
        tol = float(_scalar("tol", tol))
        if not 0.0 <= tol < hazard:
            raise ValueError(f"tol must be in [0, hazard) = [0, {hazard:g}), got {tol!r}")
        return cls(sigma, hazard, forgetting, bool(robust), tau, tol, model)


def _scalar(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a real number, got {value!r}") from None
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def _check_sigma(sigma) -> float:
    sigma = _scalar("sigma", sigma)
    if not 0.0 < sigma <= MAX_MAGNITUDE:
        raise ValueError(f"sigma must be in (0, {MAX_MAGNITUDE:g}], got {sigma!r}")
    return sigma


@dataclass(frozen=True, eq=False)
class ChangepointState:
    """Kept run lengths after ``t`` observations, ordered by start time (longest run first).

    Attributes
    ----------
    t : int
        Number of observations processed; the next one has index ``t``.
    start : ndarray of int64
        Index of the first observation of each kept run (run length ``t - 1 - start``).
    log_w : ndarray
        Log possibility of each run, maximum 0.
    mean, precision : ndarray
        ``μ_r`` and ``λ_r`` of the normal possibility of the segment mean given the run.
    """

    t: int
    start: np.ndarray
    log_w: np.ndarray
    mean: np.ndarray
    precision: np.ndarray

    @property
    def n_active(self) -> int:
        return int(self.start.size)


@dataclass(frozen=True, eq=False)
class ConjugateState:
    """Kept run lengths of a :class:`ConjugateModel`, ordered by start time (longest first).

    Attributes
    ----------
    t : int
        Number of observations processed; the next one has index ``t``.
    start : ndarray of int64
        Index of the first observation of each kept run (run length ``t - 1 - start``).
    log_w : ndarray
        Log possibility of each run, maximum 0.
    posterior : Possibility
        The possibility function of the segment parameter given each run (batch shape
        ``(n_active,)``, the prior's family).
    seen : ndarray of bool
        Whether each run has absorbed an observation (False: only missing values so far).
    """

    t: int
    start: np.ndarray
    log_w: np.ndarray
    posterior: Possibility
    seen: np.ndarray

    @property
    def n_active(self) -> int:
        return int(self.start.size)


class StepInfo(NamedTuple):
    """What one observation did: MAP run length and segment mean after the update.

    With a :class:`ConjugateModel`, ``mean`` is E* of the segment parameter (an array when the
    parameter is not scalar).
    """

    t: int
    map_run_length: int
    mean: float
    consistency: float
    discount: float
    n_active: int


def init(model: ConjugateModel | None = None) -> ChangepointState | ConjugateState:
    """The state before any observation: no run yet (the first one starts for sure).

    ``model`` is the :class:`ConjugateModel` of the parameters (None: the normal mean).
    """
    empty = np.zeros(0)
    if model is None:
        return ChangepointState(0, np.zeros(0, dtype=np.int64), empty, empty, empty)
    fields = {name: np.asarray(arr)[None][:0] for name, arr in model.prior.fields().items()}
    return ConjugateState(0, np.zeros(0, dtype=np.int64), empty,
                          type(model.prior).from_fields(fields), np.zeros(0, dtype=bool))


def step(state: ChangepointState | ConjugateState, y,
         params: ChangepointParams) -> tuple[ChangepointState | ConjugateState, StepInfo]:
    """Process one observation (NaN = missing: predict only); returns ``(new_state, info)``.

    With ``params.model`` set, ``state`` is a :class:`ConjugateState` (from
    ``init(params.model)``) and ``y`` is whatever ``params.model.likelihood`` takes; an
    observation containing a NaN is missing.

    Examples
    --------
    >>> p = ChangepointParams.make(sigma=1.0, hazard=0.01, forgetting=1.0)
    >>> s = init()
    >>> for y in [0.1, -0.2, 0.0, 8.0, 8.1, 7.9]:
    ...     s, info = step(s, y, p)
    >>> info.map_run_length, round(info.mean, 3)
    (2, 8.0)

    The same with a generic conjugate model (here counts with a gamma prior on their rate):

    >>> import possibly as ps
    >>> m = ConjugateModel(ps.Gamma.uninformative(), ps.likelihood.poisson)
    >>> p = ChangepointParams.make(None, hazard=0.01, forgetting=1.0, model=m)
    >>> s = init(m)
    >>> for y in [2, 3, 2, 2, 20, 19, 22]:
    ...     s, info = step(s, y, p)
    >>> info.map_run_length, round(info.mean, 2)  # 20 was discounted: a change or an outlier?
    (2, 21.14)
    """
    if params.model is not None:
        return _step_model(state, y, params)
    t = state.t
    s2 = params.sigma * params.sigma
    # predict: every run grows, its precision is forgotten; a new run may start
    log_new = math.log(params.hazard) + float(state.log_w.max()) if state.log_w.size else 0.0
    start = np.append(state.start, t)
    log_w = np.append(state.log_w, log_new)
    mu = np.append(state.mean, 0.0)
    lam = np.append(state.precision * params.forgetting, 0.0)
    if math.isnan(y):
        consistency = discount = math.nan
    else:
        d = y - mu
        q = d * d
        # 1 / (1/λ + σ²) written so that λ = 0 gives 0 (uninformative: no penalty)
        log_c = float(np.max(log_w - 0.5 * q * (lam / (1.0 + lam * s2))))
        consistency = math.exp(log_c)
        discount = _discount(log_c, params)
        k = discount / s2  # precision of the discounted observation
        gain = k / (lam + k)
        log_w = log_w - 0.5 * q * (lam * gain)
        mu = mu + gain * d
        lam = lam + k
        log_w = log_w - np.max(log_w)
    if params.tol > 0.0:
        keep = log_w >= math.log(params.tol)
        if not keep.all():
            start, log_w, mu, lam = start[keep], log_w[keep], mu[keep], lam[keep]
    i = int(np.argmax(log_w))
    mean = float(mu[i]) if lam[i] > 0.0 else math.nan
    new = ChangepointState(t + 1, start, log_w, mu, lam)
    return new, StepInfo(t, t - int(start[i]), mean, consistency, discount, int(start.size))


def _discount(log_c: float, params: ChangepointParams) -> float:
    if not params.robust:
        return 1.0
    if params.model is None:
        gamma = math.exp(0.5 * log_c)
    else:
        gamma = math.exp(log_c / params.model.dim)
    if params.tau is not None and gamma > params.tau:
        return 1.0
    return gamma


def _is_missing(y) -> bool:
    return bool(np.isnan(np.asarray(y, dtype=np.float64)).any())


def _append_run(post: Possibility, prior: Possibility) -> Possibility:
    """``post`` (batch ``(n,)``) with ``prior`` (batch ``()``) appended as run ``n``."""
    fields = {name: np.concatenate([arr, np.asarray(getattr(prior, name))[None]])
              for name, arr in post.fields().items()}
    return type(post).from_fields(fields)


def _step_model(state: ConjugateState, y,
                params: ChangepointParams) -> tuple[ConjugateState, StepInfo]:
    """:func:`step` for a :class:`ConjugateModel`: the same recursion, family-agnostic."""
    model = params.model
    t = state.t
    # predict: every run grows, its information is forgotten (a power); a new run may start
    log_new = math.log(params.hazard) + float(state.log_w.max()) if state.log_w.size else 0.0
    start = np.append(state.start, t)
    log_w = np.append(state.log_w, log_new)
    post = state.posterior
    if params.forgetting != 1.0:
        post = post._scaled(params.forgetting)
    post = _append_run(post, model.prior)
    seen = np.append(state.seen, False)
    if _is_missing(y):
        consistency = discount = math.nan
    else:
        lik = model.information(y)
        log_c = float(np.max(log_w + post._log_consistency(lik)))
        consistency = math.exp(log_c)
        discount = _discount(log_c, params)
        if discount != 1.0:
            lik = lik._scaled(discount)
        # Bayes on (r, θ): w_r f_r L^γ = [w_r sup(f_r L^γ)] · [f_r L^γ / sup(f_r L^γ)]
        log_w = log_w + post._log_consistency(lik)
        post = post._add(lik)
        seen = np.ones_like(seen)
        log_w = log_w - np.max(log_w)
    if params.tol > 0.0:
        keep = log_w >= math.log(params.tol)
        if not keep.all():
            start, log_w, post, seen = start[keep], log_w[keep], post[keep], seen[keep]
    i = int(np.argmax(log_w))
    if seen[i]:
        mean = _mode_value(post[i])
    else:
        mean = np.full(model._mode_shape, np.nan) if model._mode_shape else math.nan
    new = ConjugateState(t + 1, start, log_w, post, seen)
    return new, StepInfo(t, t - int(start[i]), mean, consistency, discount, int(start.size))


# ----------------------------------------------------------------------------------------------
# segmentation


def backtrack(map_run_length) -> np.ndarray:
    """Change points from MAP run lengths: segment start ``t - r_t``, then jump to ``start - 1``.

    Returns the 0-based start indices of the segments after the first, increasing.

    Examples
    --------
    >>> backtrack([0, 1, 2, 0, 1, 0, 1, 2]).tolist()
    [3, 5]
    >>> backtrack([0, 1, 2, 0, 4, 5]).tolist()  # the reset at 3 was overridden by t = 5
    []
    """
    r = np.asarray(map_run_length)
    if r.ndim != 1 or (r.size and not np.issubdtype(r.dtype, np.integer)):
        raise ValueError("map_run_length must be a 1-D array of integers")
    r = r.astype(np.int64)
    bad = (r < 0) | (r > np.arange(r.size))
    if bad.any():  # a run length outside [0, t] would make the walk go forwards
        t = int(np.flatnonzero(bad)[0])
        raise ValueError(f"map_run_length[t] must be in [0, t], got {int(r[t])} at t={t}")
    cps = []
    t = r.size - 1
    while t >= 0:
        s = t - int(r[t])
        if s > 0:
            cps.append(s)
        t = s - 1
    return np.array(cps[::-1], dtype=np.int64)


class _MapTrace:
    """MAP run lengths stored only where they do not simply grow by one (bounded memory)."""

    def __init__(self) -> None:
        self.times: list[int] = []
        self.values: list[int] = []
        self.t = 0  # number of steps recorded

    def extend(self, r: np.ndarray) -> None:
        r = np.asarray(r, dtype=np.int64)
        if r.size == 0:
            return
        prev = self.run_length(self.t - 1) if self.t else -2
        expected = np.concatenate([[prev], r[:-1]]) + 1
        for i in np.flatnonzero(r != expected):
            self.times.append(self.t + int(i))
            self.values.append(int(r[i]))
        self.t += r.size

    def run_length(self, t: int) -> int:
        k = int(np.searchsorted(self.times, t, side="right")) - 1
        return self.values[k] + (t - self.times[k])

    def changepoints(self) -> np.ndarray:
        cps = []
        t = self.t - 1
        while t >= 0:
            s = t - self.run_length(t)
            if s > 0:
                cps.append(s)
            t = s - 1
        return np.array(cps[::-1], dtype=np.int64)


def estimate_sigma(y) -> float:
    """Robust noise scale: ``1.4826 · MAD(first differences) / √2``, NaNs skipped.

    Differencing removes the piecewise-constant level (a jump only moves one difference) and
    the median ignores outliers; ``1.4826 · MAD`` is consistent for the normal standard deviation
    and a difference of two independent noises has variance ``2σ²``.

    Examples
    --------
    >>> y = np.random.default_rng(0).normal(0.0, 2.0, 5000)
    >>> round(estimate_sigma(y), 1)
    2.0
    """
    y = _as_series(y)
    d = np.diff(y[~np.isnan(y)])
    if d.size < 2:
        raise ValueError("sigma='auto' needs at least 3 observed (non-NaN) values; "
                         "pass sigma=<float> instead")
    mad = float(np.median(np.abs(d - np.median(d))))
    if not mad > 0.0:
        raise ValueError("sigma='auto' failed: the first differences have zero median absolute "
                         "deviation (constant or heavily tied series); pass sigma=<float>")
    return 1.482602218505602 * mad / math.sqrt(2.0)


def _as_series(y) -> np.ndarray:
    """A 1-D float array (pandas Series accepted), NaN allowed, infinities and junk rejected."""
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("y must be a 1-D sequence of numbers (NaN for missing values)") from None
    if arr.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("y must contain at least one value, got an empty series")
    if np.isinf(arr).any():
        raise ValueError(f"y must be finite or NaN (missing), got an infinite value at index "
                         f"{int(np.flatnonzero(np.isinf(arr))[0])}")
    big = np.abs(arr) > MAX_MAGNITUDE
    if big.any():
        raise ValueError(f"y values must be at most {MAX_MAGNITUDE:g} in magnitude, got "
                         f"{arr[big][0]!r} at index {int(np.flatnonzero(big)[0])}")
    return arr


# ----------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True, eq=False)
class ChangepointResult:
    """Output of :meth:`ChangepointDetector.fit` (arrays of shape ``(T,)``).

    Attributes
    ----------
    y : ndarray
        The observations (NaN = missing); shape ``(T, ...)`` with a :class:`ConjugateModel`.
    map_run_length : ndarray of int64
        MAP run length after each observation (``0``: a segment starts here).
    mean : ndarray
        E* of the segment mean (the mean of the MAP run); NaN before any observation. With a
        :class:`ConjugateModel`, E* of the segment parameter, shape ``(T, ...)`` when it is
        not scalar (the components of a joint mode, e.g. ``NormalGamma``'s ``(mean,
        precision)``, are concatenated).
    consistency, discount : ndarray
        ``c_t`` and the exponent ``γ_t`` applied to the likelihood (1 for the standard
        version); NaN at missing observations.
    n_active : ndarray of int64
        Number of kept run lengths after each step.
    params : ChangepointParams
        The parameters used, including the ``sigma`` actually used.
    sigma_estimated : bool
        Whether ``sigma`` came from :func:`estimate_sigma`.
    outlier_level : float
        Discount level below which an observation counts as discounted (see ``outliers``).
    """

    y: np.ndarray
    map_run_length: np.ndarray
    mean: np.ndarray
    consistency: np.ndarray
    discount: np.ndarray
    n_active: np.ndarray
    params: ChangepointParams
    sigma_estimated: bool = False
    outlier_level: float = 0.1
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def sigma(self) -> float | None:
        return self.params.sigma

    @property
    def changepoints(self) -> np.ndarray:
        """Start indices of the segments after the first, by backtracking MAP run lengths."""
        if "cps" not in self._cache:
            self._cache["cps"] = backtrack(self.map_run_length)
        return self._cache["cps"].copy()

    @property
    def segments(self) -> list[tuple[int, int]]:
        """``[(start, stop), ...]``, half-open, covering ``0..T``."""
        bounds = [0, *self.changepoints.tolist(), len(self.y)]
        return list(zip(bounds[:-1], bounds[1:], strict=True))

    @property
    def discounted(self) -> np.ndarray:
        """Indices whose discount fell below ``outlier_level`` (change points included)."""
        return np.flatnonzero(self.discount < self.outlier_level)

    @property
    def outliers(self) -> np.ndarray:
        """Observations treated as outliers.

        Those whose discount fell below ``outlier_level`` (online: the observation was at most
        ``outlier_level²`` consistent with what came before) and that, in hindsight, lie more
        than ``3 σ`` from the median of their segment, change points excluded. The second
        condition separates isolated spikes from the first few observations after a real
        change, which are discounted too: online they look like outliers until the change is
        confirmed. The standard version discounts nothing, so it has no outliers.

        With a :class:`ConjugateModel` the second condition reads: the observation's
        consistency with its segment in hindsight (the prior updated with every observation of
        the segment, each raised to its online discount) is below ``exp(-4.5)``, the
        consistency of a normal value ``3 σ`` from a well-determined mean.
        """
        if self.params.model is not None:
            if "outliers" not in self._cache:
                self._cache["outliers"] = self._model_outliers()
            return self._cache["outliers"].copy()
        levels = self.segment_medians()
        far = np.abs(self.y - levels) > 3.0 * self.sigma
        flagged = (self.discount < self.outlier_level) & far
        flagged[self.changepoints] = False
        return np.flatnonzero(flagged)

    def _model_outliers(self) -> np.ndarray:
        model = self.params.model
        flagged = self.discount < self.outlier_level  # NaN (missing) compares False
        flagged[self.changepoints] = False
        found = []
        for a, b in self.segments:
            candidates = np.flatnonzero(flagged[a:b]) + a
            if not candidates.size:
                continue
            post, liks = model.prior, {}
            for i in range(a, b):
                if not math.isnan(self.discount[i]):
                    liks[i] = model.information(self.y[i])
                    post = post._add(liks[i]._scaled(float(self.discount[i])))
            found += [int(i) for i in candidates
                      if float(post._log_consistency(liks[i])) < _OUTLIER_LOG_CONSISTENCY]
        return np.array(found, dtype=np.int64)

    def segment_medians(self) -> np.ndarray:
        """Median of the observations of each segment, broadcast to shape ``(T,)``.

        Vector observations (a :class:`ConjugateModel`) get componentwise medians, shape
        ``y.shape``; observations containing a NaN are left out.
        """
        out = np.full(self.y.shape, np.nan)
        for a, b in self.segments:
            seg = self.y[a:b]
            seg = seg[~np.isnan(seg.reshape(len(seg), -1)).any(axis=1)]
            if len(seg):
                out[a:b] = np.median(seg, axis=0)
        return out

    def log_run_length_possibility(self, t: int) -> np.ndarray:
        """Log possibility of every run length ``0..t`` after observation ``t``.

        Recomputed by replaying the (deterministic) recursion without pruning, so nothing is
        stored by :meth:`~ChangepointDetector.fit` and every run length gets its value, also
        those that the ``tol`` pruning dropped (pruning changes no kept value: there is no
        normalising sum). The replay costs ``O(t²)``.
        """
        t = self._check_t(t)
        for s, (starts, log_w) in enumerate(self.iter_run_lengths(stop=t + 1, tol=0.0)):
            if s == t:
                out = np.full(t + 1, -np.inf)
                out[t - starts] = log_w
                return out
        raise AssertionError("unreachable")  # pragma: no cover

    def run_length_possibility(self, t: int) -> np.ndarray:
        """Possibility of every run length ``0..t`` after observation ``t`` (max 1).

        Examples
        --------
        >>> det = ChangepointDetector(sigma=1.0, hazard=0.01)
        >>> res = det.fit([0.0, 0.1, -0.1, 5.0, 5.1, 4.9, 5.0])
        >>> res.run_length_possibility(6).round(4).tolist()  # MAP r = 3: a segment began at 3
        [0.01, 0.0394, 0.3005, 1.0, 0.001, 0.0001, 0.0007]
        >>> res.discount.round(2)  # the jump was discounted until it was confirmed
        array([1.  , 1.  , 1.  , 0.1 , 0.18, 0.5 , 1.  ])
        """
        return np.exp(self.log_run_length_possibility(t))

    def iter_run_lengths(self, stop: int | None = None, tol: float | None = None
                         ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(start, log_w)`` of the kept runs after each step ``0..stop-1`` (one pass).

        ``tol`` overrides the pruning tolerance of the fit (0 keeps every run length).
        """
        stop = len(self.y) if stop is None else stop
        params = self.params if tol is None else dataclasses.replace(self.params, tol=tol)
        model = params.model
        state = init(model)
        for t in range(stop):
            state, _ = step(state, float(self.y[t]) if model is None else self.y[t], params)
            yield state.start, state.log_w

    def _check_t(self, t) -> int:
        if isinstance(t, bool) or not isinstance(t, numbers.Integral):
            raise ValueError(f"t must be an integer index, got {t!r}")
        t = int(t)
        n = len(self.y)
        if t < 0:
            t += n
        if not 0 <= t < n:
            raise ValueError(f"t must be in [0, {n}), got {t}")
        return t

    def to_dict(self) -> dict[str, Any]:
        """Plain lists and numbers (JSON-serialisable; NaN becomes None)."""

        def floats(a):
            if np.ndim(a) > 1:
                return [floats(row) for row in a]
            return [None if math.isnan(v) else float(v) for v in a]

        p = self.params
        params = {"sigma": p.sigma, "hazard": p.hazard, "forgetting": p.forgetting,
                  "robust": p.robust, "tau": p.tau, "tol": p.tol}
        if p.model is not None:
            params["model"] = repr(p.model)
        return {
            "params": params,
            "sigma_estimated": self.sigma_estimated,
            "outlier_level": self.outlier_level,
            "changepoints": self.changepoints.tolist(),
            "outliers": self.outliers.tolist(),
            "y": floats(self.y),
            "map_run_length": self.map_run_length.tolist(),
            "mean": floats(self.mean),
            "consistency": floats(self.consistency),
            "discount": floats(self.discount),
        }


# ----------------------------------------------------------------------------------------------
# engines


class _Outputs(NamedTuple):
    map_run_length: np.ndarray
    mean: np.ndarray
    consistency: np.ndarray
    discount: np.ndarray
    n_active: np.ndarray


def _run_numpy(state: ChangepointState, y: np.ndarray,
               params: ChangepointParams) -> tuple[ChangepointState, _Outputs]:
    n = y.size
    r = np.empty(n, dtype=np.int64)
    mean, cons, disc = np.empty(n), np.empty(n), np.empty(n)
    nact = np.empty(n, dtype=np.int64)
    for i in range(n):
        state, info = step(state, float(y[i]), params)
        r[i], mean[i], cons[i], disc[i], nact[i] = info[1:]
    return state, _Outputs(r, mean, cons, disc, nact)


def _numba_available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _run_model(state: ConjugateState, y: np.ndarray,
               params: ChangepointParams) -> tuple[ConjugateState, _Outputs]:
    n = len(y)
    r = np.empty(n, dtype=np.int64)
    mean = np.empty((n, *params.model._mode_shape))
    cons, disc = np.empty(n), np.empty(n)
    nact = np.empty(n, dtype=np.int64)
    for i in range(n):
        state, info = step(state, y[i], params)
        r[i], mean[i], cons[i], disc[i], nact[i] = info[1:]
    return state, _Outputs(r, mean, cons, disc, nact)


def _run(engine: str, state, y, params):
    if params.model is not None:
        return _run_model(state, y, params)
    if engine == "numba":
        from possibly.changepoint_numba import run_numba

        return run_numba(state, y, params)
    return _run_numpy(state, y, params)


# ----------------------------------------------------------------------------------------------
# the detector


class ChangepointDetector:
    """Robust online change-point detector for a piecewise-constant mean (paper §5.3).

    Parameters
    ----------
    sigma : "auto" or float
        Noise scale within a segment; ``"auto"`` estimates it from the series given to
        :meth:`fit` with :func:`estimate_sigma` (the value used is ``result.sigma``).
        Normal-mean model only: with a :class:`ConjugateModel` leave it at ``"auto"`` (it is
        ignored; the likelihood holds the noise).
    hazard : float
        Possibility of a change at each step, in (0, 1).
    forgetting : float
        Precision forgetting factor in (0, 1] (see the module docstring).
    robust : bool
        Discount observations by ``γ = √c`` (True) or run the standard recursion (False).
    tau : float, optional
        Threshold variant: keep observations whole unless ``γ ≤ tau``.
    tol : float
        Relative possibility below which run lengths are dropped, in [0, hazard).
    outlier_level : float, optional
        Discount below which an observation counts as discounted; default ``2 √hazard``
        (consistency within a factor 4 of its floor ``hazard``, the possibility of a change);
        with a :class:`ConjugateModel`, ``(4 hazard)^(1/d)``, the same rule for ``γ = c^(1/d)``.
    engine : {"auto", "numpy", "numba"}
        Inner loop; ``"auto"`` uses numba when installed (identical results).
    history : bool
        Keep per-step outputs so that :meth:`result` works after streaming; False streams in
        bounded memory (only :attr:`changepoints` and the last step are available).
    model : "normal" or ConjugateModel
        The segment model: ``"normal"`` (default) is a normal mean with known ``sigma``;
        a :class:`ConjugateModel` brings any conjugate family (numpy engine only). The
        ``forgetting`` applies to either, as a power of the segment's possibility function.

    Examples
    --------
    >>> import possibly as ps
    >>> y, cps, outliers = ps.datasets.piecewise_constant(300, n_changes=2, seed=3)
    >>> res = ps.ChangepointDetector(sigma=1.0, hazard=1e-3).fit(y)
    >>> res.changepoints.tolist(), cps.tolist()
    ([40, 235], [40, 235])
    >>> res.outliers.tolist(), np.flatnonzero(outliers).tolist()  # y[5] is a 3.5 σ noise value
    ([5, 7, 159, 223], [7, 159, 223])

    Counts with a change of rate and one gross outlier, with a gamma prior on the rate:

    >>> from possibly.changepoint import ConjugateModel
    >>> counts = np.r_[np.full(30, 4), np.full(30, 12)]
    >>> counts[10] = 40
    >>> model = ConjugateModel(ps.Gamma.uninformative(), ps.likelihood.poisson)
    >>> res = ps.ChangepointDetector(hazard=1e-3, model=model).fit(counts)
    >>> res.changepoints.tolist(), res.outliers.tolist()
    ([30], [10])
    """

    def __init__(self, sigma: float | str = "auto", hazard: float = 2.5e-3,
                 forgetting: float = 0.9, robust: bool = True, tau: float | None = None,
                 tol: float = 1e-12, outlier_level: float | None = None,
                 engine: str = "auto", history: bool = True,
                 model: str | ConjugateModel = "normal") -> None:
        if isinstance(model, str):
            if model != "normal":
                raise ValueError(f"model must be 'normal' or a ConjugateModel, got {model!r}")
        elif not isinstance(model, ConjugateModel):
            raise ValueError(f"model must be 'normal' or a ConjugateModel, got {model!r}")
        generic = not isinstance(model, str)
        if isinstance(sigma, str):
            if sigma != "auto":
                raise ValueError(f"sigma must be 'auto' or a positive number, got {sigma!r}")
            check_sigma = 1.0  # placeholder to validate the other parameters now
        elif generic:
            raise ValueError(f"sigma belongs to model='normal'; with a ConjugateModel the "
                             f"likelihood holds the noise: leave sigma at 'auto', got {sigma!r}")
        else:
            check_sigma = sigma
        # validate everything at construction, so that errors point at the call site
        ChangepointParams.make(None if generic else check_sigma, hazard, forgetting, robust,
                               tau, tol, model if generic else None)
        if engine not in ("auto", "numpy", "numba"):
            raise ValueError(f"engine must be 'auto', 'numpy' or 'numba', got {engine!r}")
        if engine == "numba" and generic:
            raise ValueError("engine='numba' supports model='normal' only; use engine='auto' "
                             "or 'numpy' with a ConjugateModel")
        if engine == "numba" and not _numba_available():
            raise ImportError("engine='numba' needs numba: pip install 'possibly[fast]'")
        if outlier_level is None:
            if generic:  # γ = c^(1/d) at c = 4 · hazard, as for the normal model below
                outlier_level = (4.0 * float(hazard)) ** (1.0 / model.dim)
            else:
                outlier_level = 2.0 * math.sqrt(hazard)
        outlier_level = float(check_unit_interval(
            "outlier_level", _scalar("outlier_level", outlier_level),
            low_open=True, high_open=False))
        self.sigma = sigma
        self.hazard = float(hazard)
        self.forgetting = float(forgetting)
        self.robust = bool(robust)
        self.tau = tau
        self.tol = float(tol)
        self.outlier_level = outlier_level
        self.engine = engine
        self.history = bool(history)
        self.model = model
        self.reset()

    # -- state ---------------------------------------------------------------------------------

    def reset(self) -> ChangepointDetector:
        """Forget every observation (``sigma='auto'`` is estimated again by :meth:`fit`)."""
        self.params_: ChangepointParams | None = None
        self.sigma_estimated_ = False
        self.state_: ChangepointState | ConjugateState = init(self._conjugate_model())
        self._trace = _MapTrace()
        self._chunks: list[tuple[np.ndarray, _Outputs]] = []
        return self

    def _conjugate_model(self) -> ConjugateModel | None:
        # getattr: detectors pickled before the model argument existed have no model
        model = getattr(self, "model", "normal")
        return None if isinstance(model, str) else model

    def _engine(self) -> str:
        if self._conjugate_model() is not None:
            return "numpy"
        if self.engine == "auto":
            return "numba" if _numba_available() else "numpy"
        return self.engine

    def _make_params(self, sigma: float | None) -> ChangepointParams:
        return ChangepointParams.make(sigma, self.hazard, self.forgetting, self.robust,
                                      self.tau, self.tol, self._conjugate_model())

    @property
    def t(self) -> int:
        """Number of observations processed."""
        return self.state_.t

    @property
    def changepoints(self) -> np.ndarray:
        """Change points so far (backtracking the MAP run lengths; works with history=False)."""
        return self._trace.changepoints()

    # -- processing ----------------------------------------------------------------------------

    def fit(self, y) -> ChangepointResult:
        """Process a whole series from scratch and return the result.

        ``y`` is a 1-D array or pandas Series; NaN marks a missing observation (prediction
        only: the run lengths grow, nothing is learnt). The detector keeps its state, so
        :meth:`update` continues the same stream. With a :class:`ConjugateModel`, ``y`` has
        time along its first axis and ``y[t]`` goes to the model's likelihood (an observation
        containing a NaN is missing).
        """
        arr = self._as_input(y)
        self.reset()
        if isinstance(self.sigma, str) and self._conjugate_model() is None:
            self.params_ = self._make_params(estimate_sigma(arr))
            self.sigma_estimated_ = True
        history, self.history = self.history, True
        try:
            self.extend(arr)
        finally:
            self.history = history
        res = self.result()
        if not history:
            self._chunks = []
        return res

    def _as_input(self, y) -> np.ndarray:
        return _as_series(y) if self._conjugate_model() is None else _as_observations(y)

    def _ensure_params(self) -> ChangepointParams:
        if self.params_ is None:
            if self._conjugate_model() is not None:
                self.params_ = self._make_params(None)
            elif isinstance(self.sigma, str):
                raise ValueError("sigma='auto' needs the whole series: call fit(y) first, or "
                                 "construct the detector with sigma=<float> to stream")
            else:
                self.params_ = self._make_params(self.sigma)
        return self.params_

    def extend(self, values) -> _Outputs:
        """Process several observations in order; returns their per-step outputs (arrays)."""
        arr = self._as_input(values)
        params = self._ensure_params()
        self.state_, out = _run(self._engine(), self.state_, arr, params)
        self._trace.extend(out.map_run_length)
        if self.history:
            self._chunks.append((arr, out))
        return out

    def update(self, x: float) -> StepInfo:
        """Process one observation (NaN = missing); same results as :meth:`fit`.

        Examples
        --------
        >>> det = ChangepointDetector(sigma=1.0, hazard=0.01)
        >>> for x in [0.0, 0.2, -0.1, 6.0, 6.1, 5.9]:
        ...     info = det.update(x)
        >>> info.map_run_length, det.changepoints.tolist()
        (2, [3])
        """
        t = self.t
        if self._conjugate_model() is not None:
            try:
                value = np.asarray(x, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"x must be a number or an array of numbers (NaN for a "
                                 f"missing value), got {x!r}") from None
            out = self.extend(value[None])
            mean = out.mean[0]
            return StepInfo(t, int(out.map_run_length[0]), float(mean) if mean.ndim == 0
                            else mean, float(out.consistency[0]), float(out.discount[0]),
                            int(out.n_active[0]))
        out = self.extend(np.array([_scalar_or_nan(x)]))
        return StepInfo(t, int(out.map_run_length[0]), float(out.mean[0]),
                        float(out.consistency[0]), float(out.discount[0]),
                        int(out.n_active[0]))

    def result(self) -> ChangepointResult:
        """Everything processed since the last :meth:`fit` or :meth:`reset` (needs history)."""
        if not self.history and self.t > 0:
            raise ValueError("result() needs history=True (this detector streams in bounded "
                             "memory: use .changepoints or the per-step outputs)")
        if self.t == 0:
            raise ValueError("no observation processed yet: call fit(y) or update(x)")
        ys = np.concatenate([c[0] for c in self._chunks], axis=0)
        outs = [c[1] for c in self._chunks]
        cat = _Outputs(*(np.concatenate(parts) for parts in zip(*outs, strict=True)))
        if len(self._chunks) > 1:  # keep later calls cheap
            self._chunks = [(ys, cat)]
        return ChangepointResult(ys, *cat, params=self.params_,
                                 sigma_estimated=self.sigma_estimated_,
                                 outlier_level=self.outlier_level)

    def __repr__(self) -> str:
        model = self._conjugate_model()
        extra = "" if model is None else f", model={model!r}"
        return (f"ChangepointDetector(sigma={self.sigma!r}, hazard={self.hazard!r}, "
                f"forgetting={self.forgetting!r}, robust={self.robust!r}, tau={self.tau!r}, "
                f"tol={self.tol!r}, t={self.t}{extra})")


def _as_observations(y) -> np.ndarray:
    """Observations of a ConjugateModel: a float array, time first (NaN = missing)."""
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("y must be an array of numbers, time along the first axis (NaN for "
                         "missing values)") from None
    if arr.ndim == 0:
        raise ValueError("y must have at least one dimension (time along the first axis), "
                         "got a scalar")
    if arr.shape[0] == 0:
        raise ValueError("y must contain at least one value, got an empty series")
    if np.isinf(arr).any():
        raise ValueError(f"y must be finite or NaN (missing), got an infinite value at index "
                         f"{int(np.argwhere(np.isinf(arr))[0][0])}")
    return arr


def _scalar_or_nan(x) -> float:
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"x must be a number (NaN for a missing value), got {x!r}") from None
    return value
