"""Segment models of the change-point recursion: what a segment's parameter θ is, given its run.

The recursion (:mod:`possibly.changepoint.recursion`) keeps, for every run hypothesis (a
segment start and a model index), a log possibility ``log w`` and the possibility function
``f_r(θ)`` of the segment parameter. Everything that depends on what θ is lives in a segment
model; the recursion itself only handles weights, starts, the discount and pruning.

The segment-model interface
---------------------------
A segment model is an instance of a subclass of :class:`SegmentModel`. It stores the
possibility functions of a *batch of runs* as a dict of arrays, ``runs``, each with the run
axis first (length ``n``); the recursion concatenates and slices these dicts along that axis
and never looks inside them. A model supplies:

``dim`` (float)
    Effective dimension ``d`` of ``(θ, r)`` in the discount ``γ = c^(1/d)``
    (:func:`possibly.inference.discount`); 2 for a scalar θ (θ and the run length).
``estimate_shape`` (tuple)
    Shape of E* of θ for one run (``()`` for a scalar parameter).
``resolve(y) -> SegmentModel``
    The model with its data-dependent settings fixed from the whole series ``y`` (e.g.
    ``NormalMean(sigma="auto")`` estimates σ); ``self`` when there are none. ``resolved``
    says whether the model can process observations without that step (streaming).
``check_series(y) -> ndarray``
    ``y`` as a float array of shape ``(T, *event)``; bad input raises ValueError.
``new_runs(n) -> runs``
    The possibility function at the start of a segment (the segment prior), for ``n`` runs.
``forget(runs, rho) -> runs``
    The prediction step: every run's information is raised to the power ``rho`` in (0, 1]
    (``f_r ← f_r^ρ``; ``λ ← ρ λ`` for the normal mean).
``log_consistency(runs, y) -> ndarray (n,)``
    ``log sup_θ f_r(θ) L(θ | y)`` for one (non-missing) observation ``y``: the recursion's
    consistency is ``log c = max_r [log w_r + log_consistency_r]``.
``update(runs, y, gamma) -> (log_evidence (n,), runs)``
    The update with the discounted likelihood ``L^γ``: the new ``f_r ∝ f_r L^γ`` (normalised
    to a maximum 1) and the increment of each run's log weight. With ``evidence="profile"``
    (every model must support it; the paper's rule) the increment is the profile
    ``log sup_θ f_r(θ) L(θ | y)^γ``. **The evidence hook:** a model whose ``evidence``
    attribute takes another value (e.g. ``"integrated"``, a predictive that integrates θ out)
    returns that log predictive instead; the recursion only adds what ``update`` returns.
``prepare(runs, y)``, ``prepared_log_consistency(prepared)``, ``prepared_update(prepared, gamma)``
    Optional, the per-step hook: ``prepare`` computes once what the consistency and the update
    of one observation share (residuals, Mahalanobis distances, the likelihood), in a small
    immutable object (a named tuple) that the two ``prepared_*`` methods read; the recursion
    calls ``prepare`` once per model and step. The base class's default is
    :class:`Observation` ``(runs, y)`` with nothing precomputed, its ``prepared_*`` methods
    call ``log_consistency`` and ``update``, so a model that only writes those two keeps
    working; a model that writes the hook gets ``log_consistency`` and ``update`` from it.
    The recursion calls only the hook: a subclass of a model that writes it (the provided
    ones do) and overrides ``log_consistency`` or ``update`` overrides the hook as well.
``estimate(runs) -> ndarray (n, *estimate_shape)``
    E* of θ for every run; NaN for a run that has seen no observation yet.
``indistinguishable(runs, tol) -> ndarray of bool (n - 1,)``
    Optional (the base class says no pair is): whether the possibility functions of the
    adjacent runs ``j`` and ``j + 1`` agree within the relative tolerance ``tol``, so that the
    one with the smaller weight can be dropped (see :mod:`possibly.changepoint.recursion`,
    "Bounded cost").
``outlying(y, discount) -> ndarray of bool``
    The hindsight half of the outlier rule (:mod:`possibly.changepoint.outliers`): given the
    observations ``y`` of one segment (``(n, *event)``, NaN = missing) and their online
    discounts, which ones lie far from the segment in hindsight.

Two models are provided: :class:`NormalMean` (a normal mean with known noise scale σ, the
paper's model, with a compiled engine) and :class:`ConjugateModel` (any conjugate family of
:mod:`possibly.families`, through the public fast path of the algebra).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar, NamedTuple

import numpy as np

from possibly.families.base import ExponentialFamily, Possibility
from possibly.inference import combine, log_consistency
from possibly.validation import as_numbers

__all__ = [
    "DEFAULT_OUTLIER_COST",
    "MAX_MAGNITUDE",
    "MAX_SIGMA",
    "MIN_SIGMA",
    "ConjugateModel",
    "NormalMean",
    "Observation",
    "SegmentModel",
    "estimate_sigma",
]

#: largest accepted magnitude of observations (squares must not overflow)
MAX_MAGNITUDE = 1e150
#: accepted range of the noise scale σ of :class:`NormalMean`: σ² and 1/σ² stay finite and
#: normal, with room for the squared residuals of observations up to MAX_MAGNITUDE
MIN_SIGMA = 1e-100
MAX_SIGMA = 1e100
#: hindsight log consistency below which a discounted observation of a ConjugateModel is an
#: outlier: that of a normal value 3 σ from a well-determined mean
OUTLIER_LOG_CONSISTENCY = -4.5
#: default evidence floor of the segment models (``outlier_cost``): |log h| at the default
#: hazard 2.5e-3
DEFAULT_OUTLIER_COST = -math.log(2.5e-3)
#: NormalMean's outlier handling: the evidence floor, or the paper's recursion (none)
OUTLIER_RULES = ("floor", "paper")

Runs = dict[str, np.ndarray]


class Observation(NamedTuple):
    """One observation against a batch of runs, as :meth:`SegmentModel.prepare` returns it by
    default: nothing precomputed."""

    runs: Runs
    y: Any


def real_scalar(name: str, value: Any) -> float:
    """``value`` as a finite float; ValueError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        if isinstance(value, str):
            raise TypeError(f"{name} must be a real number, got the string {value!r}")
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a real number, got {value!r}") from None
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


class SegmentModel:
    """Base class of segment models (the interface is in the module docstring)."""

    dim: float
    estimate_shape: tuple[int, ...] = ()
    event_ndim: ClassVar[int] = 0
    #: weight increment of ``update``: "profile" (the paper's sup) or a model-specific choice
    evidence: str = "profile"

    @property
    def resolved(self) -> bool:
        return True

    def resolve(self, y: np.ndarray) -> SegmentModel:
        return self

    def check_series(self, y: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def new_runs(self, n: int) -> Runs:  # pragma: no cover - abstract
        raise NotImplementedError

    def forget(self, runs: Runs, rho: float) -> Runs:  # pragma: no cover - abstract
        raise NotImplementedError

    def log_consistency(self, runs: Runs, y: Any) -> np.ndarray:
        # from the per-step hook when the model writes it (else abstract: the default hook
        # calls this method)
        if type(self).prepared_log_consistency is SegmentModel.prepared_log_consistency:
            raise NotImplementedError  # pragma: no cover - abstract
        return self.prepared_log_consistency(self.prepare(runs, y))

    def update(self, runs: Runs, y: Any, gamma: float) -> tuple[np.ndarray, Runs]:
        if type(self).prepared_update is SegmentModel.prepared_update:
            raise NotImplementedError  # pragma: no cover - abstract
        return self.prepared_update(self.prepare(runs, y), gamma)

    def prepare(self, runs: Runs, y: Any) -> Any:
        """What the consistency and the update of ``y`` (not missing) share, computed once.

        Parameters
        ----------
        runs : dict of ndarray
            A batch of runs (run axis first).
        y : float or ndarray
            One observation, not missing.

        Returns
        -------
        tuple
            An immutable object read by :meth:`prepared_log_consistency` and
            :meth:`prepared_update`; the default computes nothing: :class:`Observation`
            ``(runs, y)``.

        Examples
        --------
        >>> import numpy as np
        >>> from possibly.changepoint import MultivariateNormalSegments
        >>> model = MultivariateNormalSegments(prior=(np.zeros(2), np.ones(2)))
        >>> runs = model.new_runs(3)
        >>> prepared = model.prepare(runs, np.array([1.0, -1.0]))  # one solve against Ψ
        >>> prepared.delta.round(3).tolist()                     # Mahalanobis rᵀ Ψ⁻¹ r
        [2.667, 2.667, 2.667]
        >>> bool((model.prepared_log_consistency(prepared)
        ...       == model.log_consistency(runs, np.array([1.0, -1.0]))).all())
        True
        """
        return Observation(runs, y)

    def prepared_log_consistency(self, prepared: Any) -> np.ndarray:
        """``log_consistency(runs, y)`` from ``prepare(runs, y)``."""
        return self.log_consistency(prepared.runs, prepared.y)

    def prepared_update(self, prepared: Any, gamma: float) -> tuple[np.ndarray, Runs]:
        """``update(runs, y, gamma)`` from ``prepare(runs, y)``."""
        return self.update(prepared.runs, prepared.y, gamma)

    def estimate(self, runs: Runs) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def indistinguishable(self, runs: Runs, tol: float) -> np.ndarray:
        n = len(next(iter(runs.values())))
        return np.zeros(max(n - 1, 0), dtype=bool)

    def outlying(self, y: np.ndarray, discount: np.ndarray) -> np.ndarray:
        return np.zeros(len(y), dtype=bool)


# ----------------------------------------------------------------------------------------------
# the normal mean (the paper's model)


def as_series(y: Any) -> np.ndarray:
    """A 1-D float array (pandas Series accepted), NaN allowed, infinities and junk rejected."""
    arr = as_numbers("y", y)
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
                         f"{float(arr[big][0])!r} at index {int(np.flatnonzero(big)[0])}")
    return arr


def estimate_sigma(y: Any) -> float:
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
    y = as_series(y)
    d = np.diff(y[~np.isnan(y)])
    if d.size < 2:
        raise ValueError("sigma='auto' needs at least 3 observed (non-NaN) values; "
                         "pass sigma=<float> instead")
    mad = float(np.median(np.abs(d - np.median(d))))
    if not mad > 0.0:
        raise ValueError("sigma='auto' failed: the first differences have zero median absolute "
                         "deviation (constant or heavily tied series); pass sigma=<float>")
    sigma = 1.482602218505602 * mad / math.sqrt(2.0)
    if not MIN_SIGMA <= sigma <= MAX_SIGMA:
        raise ValueError(f"sigma='auto' gave {sigma:g}, outside the accepted range "
                         f"[{MIN_SIGMA:g}, {MAX_SIGMA:g}]: rescale y")
    return sigma


def check_sigma(sigma: Any) -> float:
    """σ as a float in ``[MIN_SIGMA, MAX_SIGMA]``; ValueError naming sigma otherwise."""
    sigma = real_scalar("sigma", sigma)
    if not MIN_SIGMA <= sigma <= MAX_SIGMA:
        raise ValueError(f"sigma must be in [{MIN_SIGMA:g}, {MAX_SIGMA:g}] (rescale the data "
                         f"otherwise), got {sigma!r}")
    return sigma


class MeanObservation(NamedTuple):
    """:meth:`NormalMean.prepare`: the residual ``d = y - μ_r`` of every run."""

    runs: Runs
    y: Any
    d: np.ndarray


@dataclass(frozen=True)
class NormalMean(SegmentModel):
    """Piecewise-constant mean with normal noise of known scale σ (the paper's §5.3 model).

    Given its run, the segment mean θ has the normal possibility ``N̄(θ; μ_r, λ_r)``; a new
    segment starts uninformative (``λ = 0``). Per observation ``y`` (docs/math.md §6):

    * forget: ``λ_r ← ρ λ_r``;
    * consistency: ``log sup_θ f_r L = −½ (y − μ_r)² λ_r / (1 + λ_r σ²)``;
    * update with ``L^γ`` (noise variance ``σ²/γ``): ``k = γ/σ²``, gain ``k/(λ_r + k)``,
      increment ``−½ (y − μ_r)² λ_r gain``, ``μ_r += gain (y − μ_r)``, ``λ_r += k``;
    * outlier floor (``outliers="floor"``, the default, as the default models): the increment
      never falls below ``−outlier_cost``, and a run whose increment is floored is left
      unchanged. The paper's discount alone keeps at least ``γ = √h`` of any observation, so
      a gross spike kills every established run and becomes a pair of change points; with
      the floor a lone spike of any size costs a run at most ``outlier_cost`` (``|log h|`` at
      the default hazard), no more than the change point that would isolate it, and is an
      outlier. ``outliers="paper"`` is the paper's recursion exactly (its reproduction pins
      it).

    The detector runs this model with a compiled (numba) engine when it is installed; both
    engines give bit-identical results.

    Parameters
    ----------
    sigma : "auto" or float
        Noise scale within a segment, in ``[1e-100, 1e100]``; ``"auto"`` is estimated from the
        whole series by :func:`estimate_sigma` (MAD of first differences / √2) when the
        detector's ``fit`` is called.
    outliers : {"floor", "paper"}
        ``"floor"``: the evidence floor above; ``"paper"``: the paper's §5.3 recursion, no
        floor.
    outlier_cost : float, optional
        The floor, ``> 0``, with ``outliers="floor"`` only; default ``|log 2.5e-3|``, the
        default hazard's.

    Examples
    --------
    >>> import possibly as ps
    >>> from possibly.changepoint import NormalMean
    >>> res = ps.ChangepointDetector(model=NormalMean(1.0), hazard=0.01).fit(
    ...     [0.1, -0.2, 0.0, 0.2, 8.0, 8.1, 7.9, 8.2])
    >>> res.changepoints.tolist(), res.segment_models
    ([4], [0, 0])
    """

    sigma: float | str = "auto"
    outliers: str = "floor"
    outlier_cost: float | None = None
    dim = 2.0  # (θ, r): not a field

    def __post_init__(self) -> None:
        if isinstance(self.sigma, str):
            if self.sigma != "auto":
                raise ValueError(f"sigma must be 'auto' or a number in [{MIN_SIGMA:g}, "
                                 f"{MAX_SIGMA:g}], got {self.sigma!r}")
        else:
            object.__setattr__(self, "sigma", check_sigma(self.sigma))
        if not (isinstance(self.outliers, str) and self.outliers in OUTLIER_RULES):
            raise ValueError(f"outliers must be 'floor' (the evidence floor outlier_cost) or "
                             f"'paper' (the paper's recursion), got {self.outliers!r}")
        if self.outliers == "paper":
            if self.outlier_cost is not None:
                raise ValueError(f"outlier_cost is the floor of outliers='floor'; the paper's "
                                 f"recursion (outliers='paper') has none: drop one of them, got "
                                 f"outlier_cost={self.outlier_cost!r}")
            return
        cost = DEFAULT_OUTLIER_COST if self.outlier_cost is None else \
            real_scalar("outlier_cost", self.outlier_cost)
        if not cost > 0.0:
            raise ValueError(f"outlier_cost must be a finite number > 0, got "
                             f"{self.outlier_cost!r}")
        object.__setattr__(self, "outlier_cost", cost)

    @property
    def floor(self) -> float:
        """The evidence floor: ``outlier_cost``, or ``inf`` for the paper's recursion."""
        return math.inf if self.outlier_cost is None else self.outlier_cost

    @property
    def resolved(self) -> bool:
        return not isinstance(self.sigma, str)

    def resolve(self, y: np.ndarray) -> NormalMean:
        return self if self.resolved else replace(self, sigma=estimate_sigma(y))

    def _s2(self) -> float:
        if isinstance(self.sigma, str):
            raise ValueError("sigma='auto' needs the whole series: call fit(y) first, or "
                             "construct the detector with sigma=<float> to stream")
        return self.sigma * self.sigma

    def check_series(self, y: Any) -> np.ndarray:
        return as_series(y)

    def new_runs(self, n: int) -> Runs:
        return {"mean": np.zeros(n), "precision": np.zeros(n)}

    def forget(self, runs: Runs, rho: float) -> Runs:
        return {"mean": runs["mean"], "precision": runs["precision"] * rho}

    def prepare(self, runs: Runs, y: Any) -> MeanObservation:
        return MeanObservation(runs, y, y - runs["mean"])

    def prepared_log_consistency(self, prepared: MeanObservation) -> np.ndarray:
        s2 = self._s2()
        lam = prepared.runs["precision"]
        d = prepared.d
        # 1 / (1/λ + σ²) written so that λ = 0 gives 0 (uninformative: no penalty); an
        # overflow to -inf is the right limit (an impossible run), so it is not warned about
        with np.errstate(over="ignore"):
            return -(0.5 * (d * d) * (lam / (1.0 + lam * s2)))

    def prepared_update(self, prepared: MeanObservation, gamma: float
                        ) -> tuple[np.ndarray, Runs]:
        k = gamma / self._s2()  # precision of the discounted observation
        lam, mu = prepared.runs["precision"], prepared.runs["mean"]
        d = prepared.d
        gain = k / (lam + k)
        with np.errstate(over="ignore"):  # -inf: an impossible run (see log_consistency)
            incr = -(0.5 * (d * d) * (lam * gain))
        if self.outlier_cost is None:  # the paper's recursion
            return incr, {"mean": mu + gain * d, "precision": lam + k}
        # the compiled engine evaluates the same expressions (changepoint/_numba.py)
        floor = -self.outlier_cost
        floored = incr < floor
        return np.where(floored, floor, incr), {
            "mean": np.where(floored, mu, mu + gain * d),
            "precision": np.where(floored, lam, lam + k)}

    def estimate(self, runs: Runs) -> np.ndarray:
        lam = runs["precision"]
        return np.where(lam > 0.0, runs["mean"], np.nan)

    def indistinguishable(self, runs: Runs, tol: float) -> np.ndarray:
        # same precision within tol (relative) and means within tol standard units; the
        # compiled engine evaluates the same expressions (changepoint/_numba.py)
        lam, mu = runs["precision"], runs["mean"]
        lmax = np.maximum(lam[:-1], lam[1:])
        dm = mu[1:] - mu[:-1]
        with np.errstate(over="ignore"):  # inf: far apart, not merged
            return (np.abs(lam[1:] - lam[:-1]) <= tol * lmax) & ((dm * dm) * lmax <= tol * tol)

    def outlying(self, y: np.ndarray, discount: np.ndarray) -> np.ndarray:
        obs = y[~np.isnan(y)]
        if not obs.size:
            return np.zeros(len(y), dtype=bool)
        return np.abs(y - np.median(obs)) > 3.0 * float(self.sigma)  # NaN compares False

    def __repr__(self) -> str:
        extra = ""
        if self.outliers != "floor":
            extra = f", outliers={self.outliers!r}"
        elif self.outlier_cost != DEFAULT_OUTLIER_COST:
            extra = f", outlier_cost={self.outlier_cost!r}"
        return f"NormalMean(sigma={self.sigma!r}{extra})"


# ----------------------------------------------------------------------------------------------
# any conjugate family


def _mode_value(member: Possibility) -> Any:
    """E* of an unbatched member: a float, or a flat array (tuple modes concatenated)."""
    m = member.mode
    if isinstance(m, tuple):
        return np.concatenate([np.ravel(np.asarray(c, dtype=np.float64)) for c in m])
    m = np.asarray(m, dtype=np.float64)
    return float(m) if m.ndim == 0 else m.copy()


class ConjugateObservation(NamedTuple):
    """:meth:`ConjugateModel.prepare`: the runs as a batched family member and the checked
    information in ``y``."""

    runs: Runs
    y: Any
    member: Possibility
    information: Possibility


@dataclass(frozen=True, eq=False)
class ConjugateModel(SegmentModel):
    """A segment model from any conjugate family: a prior and the information in one observation.

    Given the run length, the segment parameter θ has a possibility function of the prior's
    family. Per observation ``y`` (docs/math.md §2 and §6, generalised):

    * forget: ``f_r ← f_r ** ρ`` (for the normal mean it is ``λ ← ρ λ``), the new run gets
      ``f = prior``;
    * consistency: ``log c = max_r [log w_r + log sup_θ f_r(θ) L(θ | y)]``;
    * update: the possibilistic Bayes rule on the joint ``(r, θ)`` with ``L^γ``:
      ``log w_r += log sup_θ f_r(θ) L(θ | y)^γ`` and ``f_r ← f_r L^γ / sup`` (the conjugate
      sum, :func:`possibly.combine`), then ``log w −= max log w``.

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
    dim: float | None = None  # type: ignore[assignment]

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
            dim = real_scalar("dim", self.dim)
            if not dim > 0.0:
                raise ValueError(f"dim must be positive, got {dim!r}")
        object.__setattr__(self, "dim", dim)
        object.__setattr__(self, "estimate_shape", np.shape(_mode_value(prior)))

    def information(self, y: Any) -> Possibility:
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

    def check_series(self, y: Any) -> np.ndarray:
        """Observations as a float array, time first (NaN = missing)."""
        arr = as_numbers("y", y)
        if arr.ndim == 0:
            raise ValueError("y must have at least one dimension (time along the first axis), "
                             "got a scalar")
        if arr.shape[0] == 0:
            raise ValueError("y must contain at least one value, got an empty series")
        if np.isinf(arr).any():
            raise ValueError(f"y must be finite or NaN (missing), got an infinite value at "
                             f"index {int(np.argwhere(np.isinf(arr))[0][0])}")
        return arr

    # the runs dict: the family's fields (run axis first) and "seen" (absorbed an observation)
    def _member(self, runs: Runs) -> Possibility:
        return type(self.prior).from_fields({k: v for k, v in runs.items() if k != "seen"})

    def _runs(self, member: Possibility, seen: np.ndarray) -> Runs:
        return {**member.fields(), "seen": seen}

    def new_runs(self, n: int) -> Runs:
        fields = {name: np.repeat(np.asarray(arr)[None], n, axis=0)
                  for name, arr in self.prior.fields().items()}
        return {**fields, "seen": np.zeros(n, dtype=bool)}

    def forget(self, runs: Runs, rho: float) -> Runs:
        if rho == 1.0:
            return runs
        return self._runs(self._member(runs).power(rho, validate=False), runs["seen"])

    def prepare(self, runs: Runs, y: Any) -> ConjugateObservation:
        return ConjugateObservation(runs, y, self._member(runs), self.information(y))

    def prepared_log_consistency(self, prepared: ConjugateObservation) -> np.ndarray:
        return log_consistency(prepared.member, prepared.information, validate=False)

    def prepared_update(self, prepared: ConjugateObservation, gamma: float
                        ) -> tuple[np.ndarray, Runs]:
        lik = prepared.information
        if gamma != 1.0:
            lik = lik.power(gamma, validate=False)
        post = prepared.member
        # Bayes on (r, θ): w_r f_r L^γ = [w_r sup(f_r L^γ)] · [f_r L^γ / sup(f_r L^γ)]
        incr = log_consistency(post, lik, validate=False)
        post = combine(post, lik, validate=False)
        return incr, self._runs(post, np.ones_like(prepared.runs["seen"]))

    def estimate(self, runs: Runs) -> np.ndarray:
        n = len(runs["seen"])
        out = np.full((n, *self.estimate_shape), np.nan)
        post = self._member(runs)
        for i in np.flatnonzero(runs["seen"]):
            out[i] = _mode_value(post[int(i)])
        return out

    def outlying(self, y: np.ndarray, discount: np.ndarray) -> np.ndarray:
        """Consistency with the segment in hindsight below ``exp(-4.5)`` (see the result)."""
        post, liks = self.prior, {}
        for i in range(len(y)):
            if not math.isnan(discount[i]):
                liks[i] = self.information(y[i])
                post = combine(post, liks[i].power(float(discount[i]), validate=False),
                               validate=False)
        out = np.zeros(len(y), dtype=bool)
        for i, lik in liks.items():
            out[i] = float(log_consistency(post, lik, validate=False)) < OUTLIER_LOG_CONSISTENCY
        return out

    def __repr__(self) -> str:
        name = getattr(self.likelihood, "__qualname__", None) or repr(self.likelihood)
        return f"ConjugateModel(prior={self.prior!r}, likelihood={name}, dim={self.dim:g})"
