"""Sequential robust estimation of a normal mean and precision (paper §4.3 and appendix A).

One observation ``y ~ N(μ, 1/λ)`` with both parameters unknown has an unbounded likelihood
(``μ = y``, ``λ → ∞``), so its information ``L(θ | y)`` is undefined. The ω split
(docs/math.md §3) lends a fraction ``1 - ω`` of the precision part of the current
normal-gamma posterior ``N̄Ḡ(m, k, a, b)`` to the likelihood; one step is
``robust_update(posterior, likelihood.normal_unknown(y), omega=ω, lend="precision")`` of the
core algebra, called on its unchecked fast path (written out in
:class:`RobustNormalEstimator`'s notes).

The prior rate ``beta0`` has the units of a variance, so by default it is set from the data,
``beta0 = s² / 4`` with ``s`` the robust spread of each stream (:func:`automatic_beta0`): the
estimates then follow any change of units, ``y → a·y + b``. The paper's fixed ``beta0 = 1``
is ``s² / 4`` for its inliers of standard deviation 2.

From the prior ``N̄Ḡ(mu0, 0, 0, beta0)`` the first observation cannot be judged (its
consistency is always ``sqrt(1 - ω)``), so an outlier there would capture the estimate. By
default the estimator starts robustly (:mod:`possibly.estimators.exchangeable_start`): the
first ``start_size`` observed values are each tried as the start, and the mixture collapses
to the best hypothesis once the others are negligible. ``robust_start=False`` is the paper's
recursion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from possibly._tree import tree_select
from possibly.estimators._common import (
    check_auto_or_positive,
    needs_number_to_stream,
    robust_spread,
)
from possibly.estimators.exchangeable_start import StartState, start_init, start_step
from possibly.families import NormalGamma
from possibly.frames import per_step_dataset, per_step_frame, time_labels
from possibly.inference import robust_update
from possibly.sequential import Info, SequentialEstimator, time_first
from possibly.validation import (
    as_finite,
    as_numbers,
    check_bool,
    check_observations,
    check_positive,
    check_tau,
    check_unit_interval,
)

__all__ = [
    "LocationScaleFit",
    "LocationScaleInfo",
    "RobustNormalEstimator",
    "MAX_ABS_OBSERVATION",
    "automatic_beta0",
]

#: The start hypotheses are compared on at most this many observations, then collapsed.
START_HORIZON = 20

#: Largest accepted ``|y|``: squared differences of observations, summed over a long series,
#: must stay finite in double precision (``(2e100)² · 1e9 ≪ 1.8e308``).
MAX_ABS_OBSERVATION = 1e100

#: The automatic prior rate is ``BETA0_PER_VARIANCE · s²``, ``s`` the stream's robust spread:
#: the paper's ``beta0 = 1`` for inliers of variance 4 (appendix A).
BETA0_PER_VARIANCE = 0.25

#: Floor of the spread behind ``beta0="auto"``: a precision ``1/s²`` beyond ``1e300`` would
#: leave double precision (smaller spreads are not resolved, the estimates stay finite).
MIN_SPREAD = 1e-150


def automatic_beta0(y) -> np.ndarray:
    """The prior rate ``beta0`` that ``RobustNormalEstimator()`` sets from each stream.

    ``beta0 = s² / 4`` with ``s = 1.4826 · MAD`` of the stream's observed values (NaN are
    skipped), or, when more than half of them tie, the smallest positive gap between them (the
    data's resolution). So ``beta0(a·y + b) = a² beta0(y)`` and the estimates follow the
    units. A stream with a single distinct value ``v`` has no spread: ``s = 1e-8 · |v|``
    (1 if ``v = 0`` or nothing is observed). Spreads below ``1e-150`` count as ``1e-150``:
    the precision ``1/s²`` must stay in double precision (rescale such data).

    Parameters
    ----------
    y : array_like, shape (..., T)
        Observations, one stream per leading index.

    Returns
    -------
    ndarray, shape (...)

    Examples
    --------
    Stream with it (``update``) by fixing the rate from a first stretch of the data:

    >>> import numpy as np, possibly as ps
    >>> from possibly.estimators.location_scale import automatic_beta0
    >>> warm_up = np.array([1.8, 2.4, 1.1, 2.9, 50.0, 2.2, 1.6, 2.5])
    >>> float(automatic_beta0(warm_up))
    0.1662...
    >>> est = ps.RobustNormalEstimator(beta0=float(automatic_beta0(warm_up)))
    >>> info = est.update(2.0)
    """
    y = check_observations("y", y, max_abs=MAX_ABS_OBSERVATION)
    return BETA0_PER_VARIANCE * np.maximum(robust_spread(y), MIN_SPREAD) ** 2


@dataclass(frozen=True)
class LocationScaleInfo(Info):
    """What one observation did (batch shape).

    Attributes
    ----------
    log_consistency, discount
        As in :class:`possibly.sequential.Info`: ``log c`` of the observation with the
        current (mixture) posterior and the exponent ``ρ`` applied by the leading
        hypothesis; NaN for a missing observation.
    gamma : ndarray
        ``c ** (1/2)`` before thresholding, of the leading hypothesis (NaN if missing).
    """

    gamma: Any = None


@dataclass(frozen=True)
class LocationScaleFit:
    """Result of :meth:`RobustNormalEstimator.fit`; every array has shape ``(..., T)``.

    Attributes
    ----------
    mean, precision : ndarray
        ``E*(μ)`` and ``E*(λ) = alpha / beta`` after each observation.
    log_consistency, gamma, discount : ndarray
        Per observation (see :class:`LocationScaleInfo`); NaN where ``y`` is missing.
    trajectory : NormalGamma
        The (leading) posterior after each observation (batch shape ``(..., T)``).
    index : pandas.Index or None
        The time labels of a pandas input (a Series' index, a DataFrame's columns: time is
        the last axis), kept by :meth:`to_frame` and :meth:`to_xarray`.
    """

    mean: np.ndarray
    precision: np.ndarray
    log_consistency: np.ndarray
    gamma: np.ndarray
    discount: np.ndarray
    trajectory: NormalGamma
    index: Any = field(default=None, repr=False)

    def _columns(self) -> dict[str, np.ndarray]:
        return {"mean": self.mean, "precision": self.precision,
                "log_consistency": self.log_consistency, "consistency": self.consistency,
                "gamma": self.gamma, "discount": self.discount}

    def to_frame(self) -> Any:
        """The per-observation estimates as a pandas DataFrame, indexed like a pandas input.

        Columns ``mean``, ``precision``, ``log_consistency``, ``consistency``, ``gamma``,
        ``discount``. Index: the time labels of a pandas input, else a RangeIndex ``step``;
        a batch gets a leading ``series`` level (flattened batch position).

        Examples
        --------
        >>> import pandas as pd, possibly as ps
        >>> y = pd.Series([0.1, -0.2, 25.0, 0.3], index=pd.date_range("2024-01-01", periods=4))
        >>> ps.RobustNormalEstimator().fit(y).to_frame()[["mean", "discount"]].round(2)
                    mean  discount
        2024-01-01  0.10       1.0
        2024-01-02 -0.05       1.0
        2024-01-03 -0.04       0.0
        2024-01-04  0.08       1.0
        """
        return per_step_frame(self._columns(), self.index)

    def to_xarray(self) -> Any:
        """The per-observation estimates as an xarray Dataset over ``series_0, ...`` and
        ``time`` (the time labels of a pandas input), with the columns of :meth:`to_frame`.

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> fit = ps.RobustNormalEstimator().fit(np.zeros((2, 5)) + np.arange(5))
        >>> dict(fit.to_xarray()["mean"].sizes)
        {'series_0': 2, 'time': 5}
        """
        return per_step_dataset({name: (value, ()) for name, value in self._columns().items()},
                                self.index)

    @property
    def consistency(self) -> np.ndarray:
        """``c = exp(log_consistency)``."""
        return np.exp(self.log_consistency)

    @property
    def posterior(self) -> NormalGamma:
        """The final posterior ``N̄Ḡ`` (batch shape ``(...)``)."""
        return self.trajectory[..., -1]


@dataclass(frozen=True, eq=False, kw_only=True)
class RobustNormalEstimator(SequentialEstimator[StartState, LocationScaleInfo, LocationScaleFit]):
    """Robust sequential estimation of the mean and precision of a normal stream.

    Starts from ``N̄Ḡ(mu0, 0, 0, beta0)`` and applies the robust ω-split update to each
    observation in turn (the order matters once observations are discounted). Every argument is
    keyword-only.

    Parameters
    ----------
    beta0 : float > 0 or "auto"
        Prior rate: a weak decay ``exp(-beta0 λ)`` on the precision, in the units of a
        variance. ``"auto"`` (default): set by :meth:`fit` from each stream,
        ``s² / 4`` with ``s`` its robust spread (:func:`automatic_beta0`), so that the
        estimates do not depend on the data's units. The prior then looks at the whole
        series: ``fit(y)`` at step ``k`` is not ``fit(y[:k])`` (fix ``beta0`` from a
        warm-up for a causal backtest). Streaming (:meth:`init`, :meth:`update`) needs a
        number: the data are not known in advance.
    omega : float in (0, 1)
        Share of the precision information kept in the prior at each step (paper: 0.99).
    tau : float in (0, 1] or None
        Threshold variant (default 0.1, the paper's choice); ``None`` discounts every
        observation by ``gamma`` (which biases the precision upwards, paper appendix A).
    mu0 : float
        Prior location; irrelevant while ``k = 0`` (kept for completeness).
    robust : bool
        ``False`` gives the standard (possibilistic) Bayesian update.
    robust_start : bool
        Try each of the first ``start_size`` observed values as the start
        (:mod:`possibly.estimators.exchangeable_start`; default). ``False``: the paper's
        recursion, which
        assumes that the first observation is an inlier.
    start_size : int >= 1
        Number of start candidates (default 3; the cost of the first steps grows like it).
    start_ratio : float in (0, 1)
        The hypotheses collapse to the leader once all others weigh less than this.

    Notes
    -----
    One step, written out (the code calls the algebra and does not repeat it), with
    ``γ = c ** (1/2)`` and the exponent ``ρ`` (``γ``, or 1 above the threshold ``τ``)::

        log c = S(a + 1/2, b̂) - S(ω a, ω b) - S((1-ω) a + 1/2, (1-ω) b),
                S(α, β) = α log(α/β) - α,     b̂ = b + k (m - y)² / (2 (k + 1))
        m' = (k m + ρ y) / (k + ρ)              k' = k + ρ
        a' = ω a + ρ ((1-ω) a + 1/2)            b' = ω b + ρ ((1-ω) b + k (m - y)² / (2 (k + ρ)))

    At ``ρ = 1`` it is the standard normal-gamma update. The paper prints
    ``a' = a + ρ((1-ω) a + 1/2)`` and ``b' = b + ρ k (m - y)² / (2 (k + ρ))``, which do not
    reduce to the standard update at ``ρ = 1``; this module uses the algebra's version.

    Numeric range: observations must satisfy ``|y| <= 1e100`` (a ``ValueError`` naming ``y``
    otherwise): squared differences must stay finite. With ``beta0="auto"`` the estimates are
    equivariant: ``y → a·y + b`` maps the mean to ``a·m + b``, the precision to ``λ / a²``
    and leaves the discounts unchanged, for robust spreads from ``1e-150`` (smaller ones are
    floored there, which keeps the precision finite). Threads: ``init``/``step`` are pure
    and thread-safe; one instance used by ``fit``/``update`` from two threads at once raises
    :class:`~possibly.sequential.ConcurrentUseError`.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> y = np.array([1.8, 2.4, 1.1, 2.9, 50.0, 2.2, 1.6, 2.5])    # one gross outlier
    >>> fit = ps.RobustNormalEstimator(beta0=1.0, omega=0.99, tau=0.1).fit(y)   # the paper's
    >>> fit.discount > 0.01
    array([ True,  True,  True,  True, False,  True,  True,  True])
    >>> round(float(fit.discount[4]), 5)
    0.00025
    >>> round(float(fit.mean[-1]), 3), round(float(fit.precision[-1]), 3)
    (2.073, 1.459)

    An outlier first no longer captures the estimate:

    >>> y = np.array([60.0, 2.1, 1.7, 2.4, 1.9, 2.2])
    >>> round(float(ps.RobustNormalEstimator().fit(y).mean[-1]), 2)
    2.09
    >>> round(float(ps.RobustNormalEstimator(robust_start=False).fit(y).mean[-1]), 2)
    16.49

    Leading dimensions are independent streams; NaN observations are missing (predict only):

    >>> fit = ps.RobustNormalEstimator().fit(np.array([[1.0, 2.0, 3.0], [1.0, np.nan, 3.0]]))
    >>> fit.mean[:, -1], fit.discount[1]
    (array([2., 2.]), array([ 1., nan,  1.]))
    """

    beta0: float | str = "auto"
    omega: float = 0.99
    tau: float | None = 0.1
    mu0: float = 0.0
    robust: bool = True
    robust_start: bool = True
    start_size: int = 3
    start_ratio: float = 1e-3

    def __post_init__(self) -> None:
        check_auto_or_positive("beta0", self.beta0)
        check_unit_interval("omega", self.omega, low_open=True, high_open=True)
        check_tau(self.tau)
        as_finite("mu0", self.mu0)
        for name in ("robust", "robust_start"):
            check_bool(name, getattr(self, name))
        if (isinstance(self.start_size, bool) or int(self.start_size) != self.start_size
                or self.start_size < 1):
            raise ValueError(f"start_size must be an integer >= 1, got {self.start_size!r}")
        check_unit_interval("start_ratio", self.start_ratio, low_open=True, high_open=True)

    @property
    def _size(self) -> int:
        # the standard update does not depend on the order: one hypothesis is enough
        return int(self.start_size) if self.robust_start and self.robust else 1

    @property
    def _log_floor(self) -> float:
        # an outlier's possibility for scoring start hypotheses: c = τ^d, where the
        # threshold rule starts discounting (τ = 0.1 without a threshold)
        return 2.0 * float(np.log(0.1 if self.tau is None else self.tau))

    def prior(self, batch_shape: tuple[int, ...] = (), beta0=None) -> NormalGamma:
        """The prior ``N̄Ḡ(mu0, 0, 0, beta0)`` for a batch of streams.

        ``beta0`` (broadcast to ``batch_shape``) replaces the estimator's; it is required
        when that is ``"auto"``.

        Examples
        --------
        >>> import possibly as ps
        >>> ps.RobustNormalEstimator(beta0=2.0).prior((3,)).beta
        array([2., 2., 2.])
        """
        if beta0 is None:
            if isinstance(self.beta0, str):
                raise needs_number_to_stream("beta0", "automatic_beta0")
            beta0 = float(self.beta0)
        zeros = np.zeros(tuple(batch_shape))
        return NormalGamma.from_fields({"mean": float(self.mu0) + zeros, "k": zeros,
                                        "alpha": zeros.copy(),
                                        "beta": check_positive("beta0", beta0) + zeros})

    def init(self, batch_shape: tuple[int, ...] = ()) -> StartState:
        """The state before any observation: the mixture of start hypotheses, all empty.

        Needs a numeric ``beta0`` (``"auto"`` is set from the data by :meth:`fit`).
        """
        return self._start(self.prior(batch_shape))

    def _start(self, prior: NormalGamma) -> StartState:
        return start_init(prior, prior.batch_shape, self._size,
                          START_HORIZON if self._size > 1 else 0)

    def _score(self, hypotheses: NormalGamma, history: np.ndarray) -> np.ndarray:
        """Log weight of each start hypothesis: the capped log-likelihood of the observations
        so far at its ``E* = (m, λ)``, ``Σ_s ½ log λ + max(-λ (y_s - m)² / 2, log α)``.

        A possibilistic consistency cannot tell the hypotheses apart here: one whose start
        was an outlier has a vague precision and is consistent with everything; the
        likelihood at its ``E*`` pays for the vagueness (``½ log λ``), and the cap ``α``
        (``τ²``) makes each observation either an inlier or an outlier, so that one outlier
        cannot decide (a Talwar-type capped likelihood).
        """
        mean, lam = hypotheses.mode
        d2 = (history[..., None, :] - mean[..., None]) ** 2
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            terms = 0.5 * np.log(lam)[..., None] + np.maximum(-0.5 * lam[..., None] * d2,
                                                               self._log_floor)
        return np.where(np.isnan(d2), 0.0, terms).sum(-1)

    def _robust_step(self, post: NormalGamma, y: np.ndarray
                     ) -> tuple[NormalGamma, np.ndarray, dict[str, np.ndarray]]:
        """The plain ω-split step on a batch of posteriors; NaN ``y`` = predict only.

        ``robust_update(post, normal_unknown(y), omega=ω, lend="precision")`` on the unchecked
        fast path (``log c`` is kept in log space by :class:`~possibly.RobustUpdate`).
        """
        y = np.broadcast_to(y, post.batch_shape)
        missing = np.isnan(y)
        lik = NormalGamma.from_fields({"mean": np.where(missing, 0.0, y),
                                       "k": np.ones(y.shape), "alpha": np.full(y.shape, 0.5),
                                       "beta": np.zeros(y.shape)})
        res = robust_update(post, lik, 2.0, self.tau, omega=self.omega,  # docs/math.md §3
                            lend="precision", robust=self.robust, validate=False)
        new = tree_select(missing, post, cast(NormalGamma, res.posterior))
        nan = np.where(missing, np.nan, 0.0)
        return new, res.log_consistency + nan, {"discount": res.discount + nan,
                                                "gamma": res.gamma + nan}

    def step(self, state: StartState, y) -> tuple[StartState, LocationScaleInfo]:
        """One observation per stream (batch shape); NaN = missing (predict only). Pure."""
        y = as_numbers("y", y)
        if y.ndim == 0 or y.shape != state.seen.shape:
            y = np.broadcast_to(y, state.seen.shape)
        check_observations("y", y[..., None], max_abs=MAX_ABS_OBSERVATION)
        new, log_c, extras = start_step(state, y, self._robust_step,
                                        ratio=float(self.start_ratio), log_floor=self._log_floor,
                                        score=self._score)
        return new, LocationScaleInfo(log_consistency=log_c, discount=extras["discount"],
                                      gamma=extras["gamma"])

    def fit(self, y) -> LocationScaleFit:
        """Process ``y`` (shape ``(..., T)``) one observation at a time along the last axis.

        NaN observations are missing (the posterior is carried over, discount NaN);
        infinities, ``|y| > 1e100`` and an empty time axis raise ``ValueError``. With
        ``beta0="auto"`` each stream's prior rate is :func:`automatic_beta0` of its
        observations.
        """
        index = time_labels(y, -1)
        y = check_observations("y", y, max_abs=MAX_ABS_OBSERVATION)
        prior = self.prior(y.shape[:-1], automatic_beta0(y) if isinstance(self.beta0, str)
                           else None)
        with self._exclusive():
            posts, log_cs, rhos, gammas = [], [], [], []
            if self._size == 1:
                # one hypothesis: the start mixture is the plain recursion (tested equal)
                post = prior
                for y_t in time_first(y, 0):
                    post, log_c, extras = self._robust_step(post, y_t)
                    posts.append(post)
                    log_cs.append(log_c)
                    rhos.append(extras["discount"])
                    gammas.append(extras["gamma"])
            else:
                state = self._start(prior)
                ratio, floor = float(self.start_ratio), self._log_floor
                for y_t in time_first(y, 0):
                    state, log_c, extras = start_step(state, y_t, self._robust_step,
                                                      ratio=ratio, log_floor=floor,
                                                      score=self._score)
                    posts.append(state.current)
                    log_cs.append(log_c)
                    rhos.append(extras["discount"])
                    gammas.append(extras["gamma"])
        axis = y.ndim - 1
        trajectory = cast(NormalGamma, NormalGamma.stack(posts, axis=axis))
        fields = trajectory.fields()
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = np.where(fields["beta"] > 0, fields["alpha"] / fields["beta"], np.inf)
        return LocationScaleFit(mean=fields["mean"], precision=precision,
                                log_consistency=np.stack(log_cs, axis),
                                gamma=np.stack(gammas, axis), discount=np.stack(rhos, axis),
                                trajectory=trajectory, index=index)
