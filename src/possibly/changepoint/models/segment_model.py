"""The segment-model interface: what the change-point recursion asks of a segment's parameter θ.

The recursion (:mod:`possibly.changepoint.recursion`) keeps, for every run hypothesis, a log
weight and the possibility function ``f_r(θ)`` of the segment parameter; everything that
depends on what θ is lives in a :class:`SegmentModel`. A model stores a batch of runs as a
dict of arrays with the run axis first, which the recursion concatenates and slices without
looking inside. One path, six methods; the optional compiled engine is one more hook,
:meth:`SegmentModel.compiled_kernel`, answered by :class:`CompiledKernel`.
"""

from __future__ import annotations

import abc
import math
import numbers
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import numpy as np

from possibly.changepoint.models._common import checked_bounds
from possibly.validation import as_numbers

__all__ = [
    "DEFAULT_OUTLIER_COST",
    "MAX_MAGNITUDE",
    "CompiledKernel",
    "KernelFunctions",
    "Observation",
    "Runs",
    "SegmentModel",
    "as_series",
    "check_positive_settings",
    "real_scalar",
]

#: largest accepted magnitude of observations (squares must not overflow)
MAX_MAGNITUDE = 1e150
#: default evidence floor of the segment models (``outlier_cost``): |log h| at the default
#: hazard 2.5e-3
DEFAULT_OUTLIER_COST = -math.log(2.5e-3)

Runs = dict[str, np.ndarray]


class Observation(NamedTuple):
    """One observation against a batch of runs, as :meth:`SegmentModel.prepare` returns it by
    default: nothing precomputed."""

    runs: Runs
    y: Any


class KernelFunctions(NamedTuple):
    """The per-run functions of a compiled kernel (plain Python that numba compiles) and the
    number of floats, ``width``, that hold one run.

    Each run is one row of a float64 array ``runs`` (``(capacity, width)``), and ``params`` is
    the model's packed settings, read by index (a tuple of floats when there are at most 4, else
    a 1-D float64 array). The generic compiled driver
    (:mod:`possibly.changepoint.compiled_engine`) calls, with ``j`` a row index:

    ``prepare(params, y) -> x``
        What every run of this model sees of the observation ``y`` (not missing), once per step
        (e.g. the standardised value).
    ``new_run(params, runs, j)``
        Write the segment prior into row ``j``.
    ``forget(params, runs, j, rho, work)``
        The prediction step of row ``j`` (``f ← f^ρ``; ``work`` is scratch space).
    ``log_consistency(params, runs, j, x) -> float``
        ``log sup_θ f_j(θ) L(θ | y)``: never positive (or NaN), as a consistency is at most 1
        (the driver skips the runs whose log weight cannot raise the largest ``log w + log c``).
    ``update(params, runs, j, x, gamma, work) -> float``
        Update row ``j`` with ``L^γ``; returns the increment of the run's log weight.
    ``estimate(params, runs, j) -> float``
        E* of the (scalar) parameter; NaN before the run's first observation.
    ``indistinguishable(params, runs, j, tol) -> bool`` or None
        Whether rows ``j`` and ``j + 1`` agree within ``tol`` (merging); None: never merged.
    ``run_size(params) -> int`` or None
        How many leading floats of a row the run of these settings uses (the rest of its row
        is never read, so moving a run copies only those); None: all ``width``.

    The functions must evaluate the same floating-point expressions, in the same order, as the
    model's numpy methods when the two engines are to agree bit for bit.
    """

    width: int
    prepare: Callable[..., float]
    new_run: Callable[..., None]
    forget: Callable[..., None]
    log_consistency: Callable[..., float]
    update: Callable[..., float]
    estimate: Callable[..., float]
    indistinguishable: Callable[..., bool] | None = None
    run_size: Callable[..., int] | None = None


class CompiledKernel(NamedTuple):
    """A model's compiled kernel (:meth:`SegmentModel.compiled_kernel`).

    Models whose kernels share ``functions`` (the same object) run together in one compiled
    loop, each with its own ``params``.

    Attributes
    ----------
    functions : KernelFunctions
        The per-run functions.
    params : ndarray
        The model's packed settings, 1-D float64 (read only by ``functions``).
    pack : callable
        ``runs -> ndarray (n, functions.width)``: a batch of runs as rows of floats.
    unpack : callable
        ``ndarray (n, functions.width) -> runs``: the inverse of ``pack``.
    work_size : int
        Length of the scratch array passed to ``forget`` and ``update``.
    """

    functions: KernelFunctions
    params: np.ndarray
    pack: Callable[[Runs], np.ndarray]
    unpack: Callable[[np.ndarray], Runs]
    work_size: int = 0


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


def check_positive_settings(model: Any, positive: tuple[str, ...]) -> None:
    """The named settings of ``model`` are finite numbers > 0 and ``evidence`` is a known rule."""
    for name in positive:
        v = getattr(model, name)
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    if model.evidence not in ("integrated", "profile"):
        raise ValueError(f"evidence must be 'integrated' or 'profile', got {model.evidence!r}")


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


class SegmentModel(abc.ABC):
    """Base class of segment models: one path of six methods, and optional settings.

    A subclass writes :meth:`new_runs`, :meth:`forget`, :meth:`log_consistency`,
    :meth:`update` and :meth:`estimate`, and may write :meth:`prepare` (what the consistency
    and the update of one observation share, computed once per step). The recursion calls,
    per model and step: ``forget``, ``new_runs(1)``, then for an observation ``y`` (not
    missing) ``prepared = prepare(runs, y)``, ``log_consistency(prepared)`` and
    ``update(prepared, gamma)``, and ``estimate`` of the MAP run.

    Everything else has a default: ``dim`` (the effective dimension ``d`` of ``(θ, r)`` in the
    discount ``γ = c^(1/d)``; 2 for a scalar θ), ``name`` (reports), :meth:`resolve` (settings
    fixed from the whole series), :meth:`check_series`, :meth:`indistinguishable` (merging),
    :meth:`outlying` (the hindsight outlier rule), :meth:`compiled_kernel` (None: the numpy
    engine) and the detector's defaults ``default_forgetting`` and ``tol_per_hazard``.

    Examples
    --------
    A model of its own: a normal mean with unit noise, written with the six methods only.

    >>> import numpy as np, possibly as ps
    >>> class UnitMean(SegmentModel):
    ...     def new_runs(self, n):
    ...         return {"mean": np.zeros(n), "precision": np.zeros(n)}
    ...     def forget(self, runs, rho):
    ...         return {"mean": runs["mean"], "precision": rho * runs["precision"]}
    ...     def log_consistency(self, prepared):
    ...         lam, d = prepared.runs["precision"], prepared.y - prepared.runs["mean"]
    ...         return -0.5 * d * d * lam / (1.0 + lam)
    ...     def update(self, prepared, gamma):
    ...         lam, mu = prepared.runs["precision"], prepared.runs["mean"]
    ...         d, gain = prepared.y - mu, gamma / (lam + gamma)
    ...         return -0.5 * d * d * lam * gain, {"mean": mu + gain * d,
    ...                                            "precision": lam + gamma}
    ...     def estimate(self, runs):
    ...         return np.where(runs["precision"] > 0, runs["mean"], np.nan)
    >>> res = ps.ChangepointDetector(model=UnitMean(), hazard=0.01).fit(
    ...     [0.1, -0.2, 0.0, 0.2, 8.0, 8.1, 7.9, 8.2])
    >>> res.changepoints.tolist(), res.segment_model_names
    ([4], ['UnitMean', 'UnitMean'])
    """

    dim: float = 2.0
    #: shape of E* of θ for one run (``()`` for a scalar parameter)
    estimate_shape: tuple[int, ...] = ()
    event_ndim: ClassVar[int] = 0
    #: weight increment of ``update``: "profile" (the paper's sup) or a model-specific choice
    evidence: str = "profile"
    #: the outlier rule uses :meth:`outlying` alone (no online discount condition)
    hindsight_outliers: ClassVar[bool] = False
    #: the detector's ``forgetting`` when it is not given (the smallest over its models)
    default_forgetting: ClassVar[float] = 0.9
    #: the detector's ``tol`` relative to the hazard when every model gives one; else 1e-12
    tol_per_hazard: ClassVar[float | None] = None

    @property
    def name(self) -> str:
        """A short name for reports (``result.segment_model_names``): the class name."""
        return type(self).__name__

    @property
    def takes_prior_on_y(self) -> bool:
        """Whether the model's ``prior`` is a :class:`~possibly.changepoint.SegmentPrior` on
        the observations ``y``, the prior that ``ChangepointDetector.stream_params(prior=...)``
        and ``DetectorBank.add(prior=...)`` give: true of
        :class:`~possibly.changepoint.PolynomialTrend` and
        :class:`~possibly.changepoint.SeasonalTrend`; a model whose prior is on another scale
        says False (:class:`~possibly.changepoint.LogTrend`: on ``log y``)."""
        return False

    @property
    def resolved(self) -> bool:
        """Whether the model can process observations without :meth:`resolve` (streaming)."""
        return True

    def resolve(self, y: np.ndarray) -> SegmentModel:
        """The model with its data-dependent settings fixed from the whole series ``y``."""
        return self

    def check_series(self, y: Any) -> np.ndarray:
        """Observations as a float array, time first (NaN = missing); ValueError otherwise."""
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

    @abc.abstractmethod
    def new_runs(self, n: int) -> Runs:
        """The possibility function at the start of a segment (the prior), for ``n`` runs."""

    @abc.abstractmethod
    def forget(self, runs: Runs, rho: float) -> Runs:
        """The prediction step: every run's function raised to the power ``rho`` in (0, 1]."""

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
            An immutable object with at least ``runs``, read by :meth:`log_consistency` and
            :meth:`update`; the default computes nothing: :class:`Observation` ``(runs, y)``.

        Examples
        --------
        >>> import numpy as np
        >>> from possibly.changepoint.models import MultivariateNormalSegments
        >>> model = MultivariateNormalSegments(prior=(np.zeros(2), np.ones(2)))
        >>> runs = model.new_runs(3)
        >>> prepared = model.prepare(runs, np.array([1.0, -1.0]))  # one solve against Ψ
        >>> prepared.delta.round(3).tolist()                     # Mahalanobis rᵀ Ψ⁻¹ r
        [2.667, 2.667, 2.667]
        """
        return Observation(runs, y)

    @abc.abstractmethod
    def log_consistency(self, prepared: Any) -> np.ndarray:
        """``log sup_θ f_r(θ) L(θ | y)`` of every run, shape ``(n,)``, from ``prepare(runs, y)``."""

    @abc.abstractmethod
    def update(self, prepared: Any, gamma: float) -> tuple[np.ndarray, Runs]:
        """The update with ``L^γ``: ``(increment of each run's log weight, new runs)``.

        With ``evidence="profile"`` the increment is ``log sup_θ f_r(θ) L(θ | y)^γ`` and the new
        function ``f_r L^γ`` divided by it; a model may return another evidence (e.g. an
        integrated predictive), which the recursion adds as it is.
        """

    @abc.abstractmethod
    def estimate(self, runs: Runs) -> np.ndarray:
        """E* of θ for every run, shape ``(n, *estimate_shape)``; NaN for a run without an
        observation yet."""

    def indistinguishable(self, runs: Runs, tol: float) -> np.ndarray:
        """Whether adjacent runs ``j`` and ``j + 1`` agree within ``tol`` (merged, keeping the
        larger weight); the default: no pair does."""
        n = len(next(iter(runs.values())))
        return np.zeros(max(n - 1, 0), dtype=bool)

    def outlying(self, y: np.ndarray, discount: np.ndarray) -> np.ndarray:
        """The hindsight half of the outlier rule (:mod:`possibly.changepoint.outliers`): which
        observations of one segment lie far from it; the default: none."""
        return np.zeros(len(y), dtype=bool)

    def outlying_segments(self, y: np.ndarray, discount: np.ndarray, bounds: np.ndarray,
                          compiled: bool | None = None) -> np.ndarray:
        """:meth:`outlying` of several segments at once: ``bounds`` holds one ``(start,
        stop)`` row per segment (half-open, increasing, disjoint, within ``y``: else a
        ValueError), and the result one flag per observation of ``y`` (False outside the
        segments). The default calls
        :meth:`outlying` per segment; models override it with one pass over all of them.
        ``compiled``: for a model with a compiled pass, False runs numpy's steps, None the
        compiled pass when numba is installed (the default ignores it).

        Examples
        --------
        >>> from possibly.changepoint import NormalMean
        >>> y = np.array([0.0, 0.1, 9.0, 5.0, 5.1, -4.0, 4.9])
        >>> bounds = np.array([[0, 3], [3, 7]])
        >>> np.flatnonzero(NormalMean(1.0).outlying_segments(y, np.ones(7), bounds)).tolist()
        [2, 5]
        """
        out = np.zeros(len(y), dtype=bool)
        for a, b in checked_bounds(bounds, len(y)).tolist():
            out[a:b] = self.outlying(y[a:b], discount[a:b])
        return out

    def compiled_kernel(self) -> CompiledKernel | None:
        """The model's compiled kernel, or None (the default): the numpy engine runs it."""
        return None
