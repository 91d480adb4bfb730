"""Soft-uniform likelihood and its exact robust recursion (paper §4.4 and appendix B).

The uniform likelihood ``p(y | θ) = θ⁻¹ 1[θ >= y]`` cannot be discounted: its zero below ``y``
stays zero under any power, so one outlier moves the support for good. The soft version with
decay ``c > 0`` (docs/math.md §5) replaces the zero by an exponential decay::

    L̃(θ | y) = (y / (θ ∨ y)) exp(c (θ - θ ∨ y)),       sup L̃ = L̃(y | y) = 1.

With discounts ``γ_i`` the unnormalised robust posterior (from the uninformative prior 1) is

    log f̃(θ) = Σ_i γ_i g(θ; y_i),     g(θ; y) = c (θ - θ ∨ y) - log(θ ∨ y).

Between consecutive observations ``log f̃`` is ``-A log θ + B c θ + const`` (convex), it
increases below the smallest observation and decreases above the largest, so its maximum
``C`` sits at one of the observations. Keeping ``log f̃`` at every observation up to date
costs ``O(t)`` per step, and the consistency of ``y_t`` is exact:

    c(y_t) = sup_θ L̃(θ | y_t) f(θ | y_{1:t-1})
           = y_t C(y_{1:t}, (γ_{1:t-1}, 1)) / C(y_{1:t-1}, γ_{1:t-1}),

with discount ``γ_t = c(y_t)``. By default the observations are processed in increasing order,
as in the paper (the consistency then measures the jump of the support). The decay, in units of
``1/θ``, is by default set from the data, ``c = 12 / g`` with ``g`` the median gap of the
sorted observations (:func:`automatic_decay`), so that the estimate follows any change of
units (its effect on the estimate: :class:`SoftUniformEstimator`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from possibly.estimators._common import (
    check_auto_or_positive,
    median_gap,
    needs_number_to_stream,
)
from possibly.frames import per_step_dataset, per_step_frame, time_labels
from possibly.inference import discount
from possibly.sequential import Info, SequentialEstimator
from possibly.validation import (
    as_finite,
    check_bool,
    check_observations,
    check_positive,
    check_tau,
    check_unit_interval,
)

__all__ = [
    "SoftUniformEstimator",
    "SoftUniformFit",
    "SoftUniformInfo",
    "SoftUniformState",
    "automatic_decay",
    "soft_uniform_init",
    "soft_uniform_log_likelihood",
    "soft_uniform_log_possibility",
    "soft_uniform_step",
]


#: The automatic decay is ``DECAY_PER_GAP / g``, ``g`` the median gap between the sorted
#: observations: the paper's ``c = 10`` for its scenario (``θ* = 100``, ``T = 100``, ``ε =
#: 0.25``), whose median gap is 1.23 (median over the 1000 draws of its seed 0).
DECAY_PER_GAP = 12.0


def automatic_decay(y) -> np.ndarray:
    """The decay ``c`` that ``SoftUniformEstimator()`` sets from each stream.

    ``c = 12 / g`` with ``g`` the median gap between the stream's sorted observed values
    (NaN skipped), or, when most gaps are 0 (ties), the smallest positive gap (the data's
    resolution); the gap is ``1e-8 · v`` for a stream with a single distinct value ``v``. So
    ``c(a·y) = c(y) / a`` and the estimates follow the units.

    Parameters
    ----------
    y : array_like, shape (..., T), > 0
        Observations, one stream per leading index.

    Returns
    -------
    ndarray, shape (...)

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> from possibly.estimators.soft_uniform import automatic_decay
    >>> float(automatic_decay(np.array([3.0, 1.0, 2.0, 6.0])))   # gaps 1, 1, 3
    12.0
    >>> est = ps.SoftUniformEstimator(decay=float(automatic_decay([3.0, 1.0, 2.0, 6.0])))
    >>> info = est.update(2.5)                    # streaming needs a number
    """
    y = check_observations("y", y, positive=True)
    with np.errstate(over="ignore"):  # a gap below 1e-307: the hard uniform
        decay = DECAY_PER_GAP / median_gap(y)
    return np.minimum(decay, np.finfo(np.float64).max)


def _g(theta, y, decay):
    """``g(θ; y) = c (θ - θ ∨ y) - log(θ ∨ y)``: ``log L̃(θ | y) - log y``.

    ``-inf`` where ``c (y - θ)`` overflows (a possibility that is 0 in double precision).
    """
    top = np.maximum(theta, y)
    with np.errstate(over="ignore"):
        return decay * (theta - top) - np.log(top)


def _weighted(weight, g):
    """``weight * g`` with ``0 * (-inf) = 0``: a weight 0 removes the term, even where the
    term is ``-inf`` (an observation discounted to nothing)."""
    with np.errstate(invalid="ignore"):
        return np.where(weight > 0, weight * g, 0.0)


def soft_uniform_log_likelihood(theta, y, decay) -> np.ndarray:
    """``log L̃(θ | y) = log y - log(θ ∨ y) + c (θ - θ ∨ y)``; its maximum 0 is at ``θ = y``.

    Parameters
    ----------
    theta : array_like, > 0
    y : array_like, > 0
        Observation(s), broadcast against ``theta``.
    decay : float > 0
        The coefficient ``c`` of the exponential decay below ``y`` (``c → ∞``: the uniform).

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.estimators.soft_uniform import soft_uniform_log_likelihood
    >>> soft_uniform_log_likelihood(np.array([9.0, 10.0, 20.0]), 10.0, decay=2.0).round(4)
    array([-2.    ,  0.    , -0.6931])
    """
    theta = check_positive("theta", theta)
    y = check_positive("y", y)
    decay = check_positive("decay", decay)
    return np.log(y) + _g(theta, y, decay)


@dataclass(frozen=True)
class SoftUniformState:
    """Exact robust posterior after ``filled`` steps, for a batch of streams.

    ``points[..., i]``, ``weights[..., i]`` are the observations and their discounts (slots
    ``>= filled`` and skipped observations hold NaN and 0); ``values[..., i]`` is
    ``log f̃`` at ``points[..., i]`` (``-inf`` for empty slots) and ``log_norm`` is
    ``log C = max log f̃``.
    """

    points: np.ndarray
    weights: np.ndarray
    values: np.ndarray
    log_norm: np.ndarray
    filled: int


@dataclass(frozen=True)
class SoftUniformInfo(Info):
    """One step: ``log_consistency`` ``log c(y_t)`` and the ``discount`` applied (both NaN
    for a missing observation), and ``mode`` ``E*(θ)`` after the step (NaN before any
    observation)."""

    mode: Any = None


def soft_uniform_init(capacity: int = 16, batch_shape: tuple[int, ...] = ()
                      ) -> SoftUniformState:
    """The uninformative prior ``f ≡ 1`` with room for ``capacity`` observations (the state
    grows when more arrive).

    Examples
    --------
    >>> from possibly.estimators.soft_uniform import soft_uniform_init
    >>> soft_uniform_init(3).values
    array([-inf, -inf, -inf])
    """
    if isinstance(capacity, bool) or int(capacity) != capacity or capacity < 1:
        raise ValueError(f"capacity must be an integer >= 1, got {capacity!r}")
    shape = tuple(batch_shape) + (int(capacity),)
    return SoftUniformState(points=np.full(shape, np.nan), weights=np.zeros(shape),
                            values=np.full(shape, -np.inf),
                            log_norm=np.zeros(tuple(batch_shape)), filled=0)


def soft_uniform_step(state: SoftUniformState, y, *, decay, robust: bool = True, tau=None
                      ) -> tuple[SoftUniformState, SoftUniformInfo]:
    """Add one observation per stream with its exact consistency; ``O(filled)`` work.

    Parameters
    ----------
    state : SoftUniformState
    y : array_like
        One positive observation per stream (batch shape), NaN to skip.
    decay : float > 0, or array of the batch shape
        The decay ``c`` of the soft-uniform likelihood (one per stream if an array).
    robust : bool
        ``False``: standard update (exponent 1); the consistency is still reported.
    tau : float in (0, 1], optional
        Threshold variant: ``c > tau`` is not discounted. ``None`` (the paper's choice):
        always discount by ``c``.

    Examples
    --------
    >>> from possibly.estimators.soft_uniform import soft_uniform_init, soft_uniform_step
    >>> state = soft_uniform_init(2)
    >>> state, info = soft_uniform_step(state, 10.0, decay=1.0)
    >>> float(info.consistency), float(info.mode)        # the prior is uninformative
    (1.0, 10.0)
    >>> state, info = soft_uniform_step(state, 20.0, decay=1.0)
    >>> float(info.consistency)                         # (10 / 20) ** 1: the Pareto value
    0.5
    """
    decay = check_positive("decay", decay)
    tau = check_tau(tau)
    if state.filled >= state.points.shape[-1]:
        state = _grow(state)
    y = np.broadcast_to(np.asarray(y, dtype=np.float64), state.log_norm.shape)
    decay = np.broadcast_to(decay, state.log_norm.shape)[..., None]  # against the points
    if np.isinf(y).any() or (y <= 0).any():
        raise ValueError("y must be > 0 and finite, or NaN (NaN entries are missing)")
    skip = np.isnan(y)
    ys = np.where(skip, 1.0, y)[..., None]
    used = ~np.isnan(state.points)
    pts = np.where(used, state.points, 1.0)
    # g at every stored point for the new observation, and log f̃ at the new observation
    # sums of huge negative logs overflow to -inf: a possibility 0 in double precision
    with np.errstate(over="ignore"):
        g_old = np.where(used, _g(pts, ys, decay), 0.0)
        v_new = _weighted(state.weights, np.where(used, _g(ys, pts, decay), 0.0)).sum(-1)
        g_self = -np.log(ys[..., 0])
        log_c_new = np.maximum((state.values + g_old).max(-1), v_new + g_self)
        log_c = np.minimum(np.log(ys[..., 0]) + log_c_new - state.log_norm, 0.0)
        rho = np.where(skip, 0.0, discount(log_c, 1.0, tau, robust, validate=False))
        values = state.values + _weighted(rho[..., None], g_old)
        new_value = v_new + _weighted(rho, g_self)
    new, mode = _append(state, np.where(skip, np.nan, y), rho,
                        values, np.where(skip, -np.inf, new_value))
    nan = np.where(skip, np.nan, 0.0)
    info = SoftUniformInfo(log_consistency=log_c + nan, discount=rho + nan, mode=mode)
    return new, info


def _append(state: SoftUniformState, point: np.ndarray, weight: np.ndarray,
            values: np.ndarray, value: np.ndarray) -> tuple[SoftUniformState, np.ndarray]:
    """``state`` with the observation ``point`` (NaN: skipped), its discount ``weight`` and
    ``log f̃`` at it (``value``) in the next slot, ``values`` at the stored points already
    updated; and the new mode ``E*(θ)`` (NaN before any observation)."""
    i = state.filled
    points = state.points.copy()
    weights = state.weights.copy()
    points[..., i] = point
    weights[..., i] = weight
    values[..., i] = value
    log_norm = values.max(-1)
    any_used = np.isfinite(log_norm)
    log_norm = np.where(any_used, log_norm, 0.0)
    best = np.argmax(values, axis=-1)
    mode = np.where(any_used, np.take_along_axis(np.where(np.isnan(points), 0.0, points),
                                                 best[..., None], -1)[..., 0], np.nan)
    return SoftUniformState(points=points, weights=weights, values=values, log_norm=log_norm,
                            filled=i + 1), mode


def _grow(state: SoftUniformState) -> SoftUniformState:
    """The same state with twice the room (streaming past the initial capacity)."""
    extra = state.points.shape[-1]
    pad = state.points.shape[:-1] + (extra,)
    return SoftUniformState(
        points=np.concatenate([state.points, np.full(pad, np.nan)], -1),
        weights=np.concatenate([state.weights, np.zeros(pad)], -1),
        values=np.concatenate([state.values, np.full(pad, -np.inf)], -1),
        log_norm=state.log_norm, filled=state.filled)


def soft_uniform_log_possibility(state: SoftUniformState, theta, *, decay) -> np.ndarray:
    """``log f(θ) = Σ γ_i g(θ; y_i) - log C`` of the posterior in ``state``.

    ``theta`` has shape ``(..., M)`` (batch dimensions broadcast with the state's); the
    result has the same shape. ``decay`` is a number or one per stream (batch shape).

    Examples
    --------
    >>> from possibly.estimators.soft_uniform import (
    ...     soft_uniform_init, soft_uniform_log_possibility, soft_uniform_step)
    >>> state, _ = soft_uniform_step(soft_uniform_init(1), 10.0, decay=1.0)
    >>> soft_uniform_log_possibility(state, [9.0, 10.0], decay=1.0)     # L̃(θ | 10)
    array([-1.,  0.])
    """
    theta = check_positive("theta", theta)
    if theta.ndim == 0:
        theta = theta[None]
    used = ~np.isnan(state.points)
    pts = np.where(used, state.points, 1.0)[..., None, :]
    decay = np.asarray(decay, dtype=np.float64)[..., None, None]  # against (M, points)
    terms = np.where(used[..., None, :], _g(theta[..., :, None], pts, decay), 0.0)
    with np.errstate(over="ignore"):
        return (_weighted(state.weights[..., None, :], terms).sum(-1)
                - state.log_norm[..., None])


@dataclass(frozen=True)
class SoftUniformFit:
    """Result of :meth:`SoftUniformEstimator.fit`; arrays have shape ``(..., T)`` and follow
    the processing order (``observations``; increasing by default).

    Attributes
    ----------
    observations : ndarray
        The observations in the order processed (missing ones, NaN, last when sorted).
    mode : ndarray
        ``E*(θ)`` after each observation.
    log_consistency, discount : ndarray
        Per observation ``log c(y_t)`` and the exponent applied (NaN where missing).
    state : SoftUniformState
        The final posterior; evaluate it with :meth:`log_possibility`.
    decay : float or ndarray
        The decay used: the estimator's, or with ``decay="auto"`` one per stream (batch
        shape).
    index : pandas.Index or None
        The time labels of a pandas input in the processing order (a Series' index sorted
        with its values; a DataFrame's columns, time being the last axis, when the order is
        as given), kept by :meth:`to_frame` and :meth:`to_xarray`.
    """

    observations: np.ndarray
    mode: np.ndarray
    log_consistency: np.ndarray
    discount: np.ndarray
    state: SoftUniformState
    decay: float | np.ndarray
    index: Any = field(default=None, repr=False)

    def _columns(self) -> dict[str, np.ndarray]:
        return {"observation": self.observations, "mode": self.mode,
                "log_consistency": self.log_consistency, "consistency": self.consistency,
                "discount": self.discount}

    def to_frame(self) -> Any:
        """One row per observation, in the processing order, as a pandas DataFrame.

        Columns ``observation``, ``mode`` (E* after it), ``log_consistency``,
        ``consistency``, ``discount``. Index: the labels of a pandas input in the processing
        order (:attr:`index`), else a RangeIndex ``step``; a batch gets a leading ``series``
        level (flattened batch position).

        Examples
        --------
        >>> import pandas as pd, possibly as ps
        >>> y = pd.Series([3.0, 9.0, 1.0, 40.0], index=list("abcd"))
        >>> ps.SoftUniformEstimator().fit(y).to_frame()["observation"]   # sorted: labels too
        c     1.0
        a     3.0
        b     9.0
        d    40.0
        Name: observation, dtype: float64
        """
        return per_step_frame(self._columns(), self.index)

    def to_xarray(self) -> Any:
        """The columns of :meth:`to_frame` as an xarray Dataset over ``series_0, ...`` and
        ``time`` (the labels of a pandas input, in the processing order).

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> fit = ps.SoftUniformEstimator(order="given").fit(np.arange(1.0, 7.0).reshape(2, 3))
        >>> dict(fit.to_xarray()["mode"].sizes)
        {'series_0': 2, 'time': 3}
        """
        return per_step_dataset({name: (value, ()) for name, value in self._columns().items()},
                                self.index)

    @property
    def consistency(self) -> np.ndarray:
        """``c(y_t) = exp(log_consistency)``."""
        return np.exp(self.log_consistency)

    @property
    def estimate(self) -> np.ndarray:
        """The final ``E*(θ)`` (batch shape)."""
        return self.mode[..., -1]

    def log_possibility(self, theta) -> np.ndarray:
        """``log f(θ | y_{1:T})`` at ``theta`` (shape ``(..., M)``)."""
        return soft_uniform_log_possibility(self.state, theta, decay=self.decay)


@dataclass(frozen=True, eq=False, kw_only=True)
class SoftUniformEstimator(SequentialEstimator[SoftUniformState, SoftUniformInfo,
                                               SoftUniformFit]):
    """Robust estimation of the upper end θ of a uniform ``U(0, θ)`` with the soft-uniform
    likelihood (paper appendix B). Every argument is keyword-only.

    Parameters
    ----------
    decay : float > 0 or "auto"
        Decay ``c`` of the soft likelihood below each observation, in the units of ``1/θ``
        (paper: 10 for θ* = 100). ``"auto"`` (default): set by :meth:`fit` from each
        stream, 12 over the median gap between its sorted observations
        (:func:`automatic_decay`), so that the estimate does not depend on the data's
        units; it looks at the whole series (fix it from a warm-up for a causal backtest).
        On clean uniform data it still collapses below half the sample maximum in about
        1–3% of series (a larger constant trades that for outlier resistance).
        Streaming (:meth:`step`, :meth:`update`) needs a number.
    order : {"increasing", "given"}
        ``fit`` processes the observations sorted increasingly (the paper's choice, default)
        or as given. Streaming (:meth:`update`) takes them in arrival order.
    robust : bool
        ``False``: standard update of the soft-uniform posterior (no discount).
    tau : float in (0, 1], optional
        Threshold variant (not used by the paper).

    Notes
    -----
    What matters is ``c`` times the gap ``g`` between neighbouring observations (about
    ``θ/n``; the paper's ``c = 10`` is ``12.3 / g`` in its scenario). Too small a ``c·g``
    lets the soft tails of the first (smallest) observations hold the mode down, and later
    observations, judged against it, are discounted: on ``U(0, 3)`` with ``c = 10`` the
    estimate collapses to one of the smallest observations. The estimate is not monotone in
    ``c``: with the discounts fixed, the mode cannot decrease as ``c`` grows, but the
    discounts themselves change with ``c`` (each observation is judged against the posterior
    the earlier ones made), and the mode then jumps between observations both ways. This is
    the recursion's behaviour (a brute-force recursion on a fine grid gives the same
    estimates), not a search error (docs/math.md §5).

    Numeric range: any positive finite observations (up to ``1.8e308``); where
    ``decay · (y - θ)`` overflows the soft likelihood is 0 in double precision and the
    results stay finite. With ``decay="auto"`` the estimate is equivariant: ``y → a·y``
    (``a > 0``; the model's support starts at 0, so there is no shift) maps it to ``a·θ``
    and leaves the discounts unchanged. Each step costs ``O(t)`` (the exact recursion keeps every
    observation). Threads: ``init``/``step`` are pure and thread-safe; one instance used by
    ``fit``/``update`` from two threads at once raises
    :class:`~possibly.sequential.ConcurrentUseError`.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> y = np.concatenate([[240.0, 180.0], np.arange(95.0, 0.0, -5.0)])  # two outliers
    >>> fit = ps.SoftUniformEstimator(decay=10.0).fit(y)
    >>> fit.observations[-3:]                       # processed in increasing order
    array([ 95., 180., 240.])
    >>> fit.discount[-3:] < 1e-3
    array([False,  True,  True])
    >>> float(fit.estimate)
    95.0

    The default decay is set from the data, so the units do not matter:

    >>> float(ps.SoftUniformEstimator().fit(y / 1000).estimate)
    0.095
    """

    decay: float | str = "auto"
    order: str = "increasing"
    robust: bool = True
    tau: float | None = None

    def __post_init__(self) -> None:
        check_auto_or_positive("decay", self.decay)
        if self.order not in ("increasing", "given"):
            raise ValueError(f"order must be 'increasing' or 'given', got {self.order!r}")
        if self.tau is not None:
            check_unit_interval("tau", self.tau, low_open=True, high_open=False)
        check_bool("robust", self.robust)

    def init(self, batch_shape: tuple[int, ...] = ()) -> SoftUniformState:
        """The uninformative prior for a batch of streams."""
        return soft_uniform_init(16, tuple(batch_shape))

    def step(self, state: SoftUniformState, y) -> tuple[SoftUniformState, SoftUniformInfo]:
        """One observation per stream (NaN = missing); pure. Needs a numeric ``decay``."""
        if isinstance(self.decay, str):
            raise needs_number_to_stream("decay", "automatic_decay")
        return soft_uniform_step(state, y, decay=float(self.decay), robust=self.robust,
                                 tau=None if self.tau is None else float(self.tau))

    def fit(self, y) -> SoftUniformFit:
        """Process ``y`` (shape ``(..., T)``, positive) along its last axis.

        NaN observations are missing (with ``order="increasing"`` they sort last);
        non-positive or infinite observations and an empty time axis raise ``ValueError``.
        With ``decay="auto"`` each stream's decay is :func:`automatic_decay` of its
        observations.
        """
        index = time_labels(y, -1)
        y = check_observations("y", y, positive=True)
        decay: float | np.ndarray = float(as_finite("decay", self.decay)) if not isinstance(
            self.decay, str) else automatic_decay(y)
        if np.ndim(decay) == 0:
            decay = float(decay)
        if self.order == "increasing":
            order = np.argsort(y, axis=-1, kind="stable")  # NaN sort last
            y = np.take_along_axis(y, order, axis=-1)
            # a Series' labels follow its values; a batch has no common order
            index = index[order] if index is not None and y.ndim == 1 else None
        tau = None if self.tau is None else float(self.tau)
        with self._exclusive():
            state = soft_uniform_init(y.shape[-1], y.shape[:-1])
            infos = []
            for t in range(y.shape[-1]):
                state, info = soft_uniform_step(state, y[..., t], decay=decay,
                                                robust=self.robust, tau=tau)
                infos.append(info)

        def stack(name):
            return np.stack([getattr(i, name) for i in infos], axis=-1)

        return SoftUniformFit(observations=y, mode=stack("mode"),
                              log_consistency=stack("log_consistency"),
                              discount=stack("discount"), state=state, decay=decay,
                              index=index)
