"""A robust possibilistic particle filter and smoother (docs/particles.md).

:class:`ParticleFilter` runs the robust update (docs/math.md §1) on a nonlinear state-space
model ``x_t | x_{t-1}`` described by ``N̄(x_t; g(x_{t-1}), Q)`` (or a user transition),
``y_t | x_t`` with log-likelihood ``loglik(x_t, y_t)``; its possibility functions are
:class:`~possibly.pointwise.particles.ParticlePossibility` values at particles.

Each particle carries a **possibility value** ``log f(x_i)`` (max-normalised: E*, the
consistency and the update use only these) and a **sampling weight** ``f / q`` (``q`` the
density it was drawn from), which decides only where the next particles go, so the cloud
follows the density ∝ ``f`` (the Kalman density for a linear-Gaussian model) instead of
shrinking. The prediction ``f_{t|t-1}(x) = sup_x' f(x | x') f_{t-1}(x')`` takes the supremum
over all previous particles; with a :class:`GaussianNoise` transition ``f`` is first
interpolated by a max of normal kernels with shrunk centres (Liu & West), which is exact for
a linear ``g`` and a normal ``f`` and works with a singular ``Q``. O(N²) per step.

The smoother (:meth:`ParticleFilter.smooth`) is the max-product backward pass over the same
pairs of particles, with the transition possibilities the prediction used, so that the two
passes are exact on the particles.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

import numpy as np

from possibly.families.multivariate_normal import MultivariateNormal
from possibly.families.normal import Normal
from possibly.frames import component_columns, per_step_dataset, per_step_frame, time_labels
from possibly.inference import discount
from possibly.pointwise.grid import LogLikelihood, log_power
from possibly.pointwise.particles import ParticlePossibility
from possibly.sequential import Info, SequentialEstimator
from possibly.validation import (
    check_bool,
    check_positive,
    check_psd,
    check_tau,
    check_unit_interval,
)

__all__ = [
    "GaussianNoise",
    "ParticleFilter",
    "ParticleFilterResult",
    "ParticleFilterState",
    "ParticleInfo",
    "ParticleSmootherResult",
    "predict",
    "sample_prior",
    "update",
    "weighted_mean",
]

#: at most this many pairwise terms are held in memory at once
_CHUNK = 2**22

#: ``kernel(rows)``: the block ``K[rows, :]`` of the log transition possibilities ``K[j, i]``
#: from the previous particles ``i`` to the new particles ``j`` (computed in row chunks)
_Kernel = Callable[[slice], np.ndarray]


@dataclass(frozen=True, eq=False)
class GaussianNoise:
    """Additive normal transition noise ``x_t = g(x_{t-1}) + u``, ``u`` described by N̄(0, cov).

    ``cov`` may be singular (noise confined to a subspace); new particles are drawn from the
    normal density of the same covariance.

    Examples
    --------
    >>> import possibly as ps
    >>> F, Q, H, R = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    >>> ps.filters.GaussianNoise(Q).dim
    2
    """

    cov: Any

    def __post_init__(self) -> None:
        c = np.asarray(self.cov, dtype=np.float64)
        c = check_psd("cov", c.reshape(1, 1) if c.ndim == 0 else c)
        object.__setattr__(self, "cov", c)

    @property
    def dim(self) -> int:
        return self.cov.shape[0]


@dataclass(frozen=True, eq=False)
class ParticleFilterState:
    """Particles, their possibility values and their sampling weights.

    Attributes
    ----------
    particles : ndarray, shape (n,) or (n, d)
    log_values : ndarray, shape (n,)
        Log possibility of the state at each particle (max 0).
    log_weights : ndarray, shape (n,)
        Log importance weight ``log f - log q`` (up to a constant): where to explore next.
    rng : numpy.random.Generator or None
        The random stream of the next prediction (copied, never advanced in place, by
        :meth:`ParticleFilter.step` and :meth:`ParticleFilter.predict`).
    t : int
        Number of observations absorbed so far.
    """

    particles: np.ndarray
    log_values: np.ndarray
    log_weights: np.ndarray
    rng: np.random.Generator | None = None
    t: int = 0

    def possibility(self) -> ParticlePossibility:
        """The possibility function the particles represent."""
        return ParticlePossibility(self.particles, self.log_values)


@dataclass(frozen=True)
class ParticleInfo(Info):
    """What one step learnt (``log_consistency`` and ``discount`` NaN for a missing ``y``).

    Attributes
    ----------
    log_consistency : float
        ``log c``, with ``c`` the max over particles of the predicted possibility times ``L``.
    discount : float
        Exponent applied to the likelihood (``gamma``, 1 above ``tau``, 1 if not robust).
    gamma : float
        ``c ** (1 / dim)``.
    mode : ndarray
        E* of the state after the step (the best particle).
    """

    gamma: Any
    mode: np.ndarray


def _estimate_columns(mean: np.ndarray, mode: np.ndarray) -> tuple[dict[str, np.ndarray],
                                                                   list[str]]:
    """``mean`` and ``mode`` as ``(T, d)``, and the state names ``x0, x1, ...``."""
    states = {name: value.reshape(value.shape[0], -1)
              for name, value in (("mean", mean), ("mode", mode))}
    return states, [f"x{j}" for j in range(states["mean"].shape[-1])]


def _estimates_frame(mean: np.ndarray, mode: np.ndarray, filtered: ParticleFilterResult) -> Any:
    """The table of :meth:`ParticleFilterResult.to_frame` for these estimates."""
    states, names = _estimate_columns(mean, mode)
    cols = component_columns(states["mean"], names)
    cols.update(component_columns(states["mode"], names, "_mode"))
    cols.update(log_consistency=filtered.log_consistency, consistency=filtered.consistency,
                gamma=filtered.gamma, discount=filtered.discount)
    return per_step_frame(cols, filtered.index)


def _estimates_dataset(mean: np.ndarray, mode: np.ndarray,
                      filtered: ParticleFilterResult) -> Any:
    """The Dataset of :meth:`ParticleFilterResult.to_xarray` for these estimates."""
    states, names = _estimate_columns(mean, mode)
    data: dict[str, tuple[np.ndarray, tuple[str, ...]]] = {
        name: (value, ("state",)) for name, value in states.items()}
    data.update(log_consistency=(filtered.log_consistency, ()), gamma=(filtered.gamma, ()),
                discount=(filtered.discount, ()))
    return per_step_dataset(data, filtered.index, {"state": names})


@dataclass(frozen=True)
class ParticleFilterResult:
    """Output of :meth:`ParticleFilter.filter`, one entry per observation.

    The two point estimates summarise the filtered possibility function ``f_t`` of each step
    (known at the particles) in two ways.

    Attributes
    ----------
    mode : ndarray, shape (T,) or (T, d)
        E* of the filtered state, ``argmax f_t``: the particle of highest possibility.
    mean : ndarray, shape (T,) or (T, d)
        The mean of the probability density proportional to ``f_t``,
        ``∫ x f_t(x) dx / ∫ f_t(x) dx``, estimated by self-normalised importance sampling:
        the particles weighted by their sampling weights ``f_t / q_t`` (``q_t`` the density
        they were drawn from). For a normal ``f_t`` (a linear-Gaussian model) it equals E*,
        the Kalman filter's mean, so ``mean`` and ``mode`` estimate the same number (with
        Monte Carlo errors of the same order); for a skewed or multimodal ``f_t`` it is
        another summary than E*.
    log_consistency, gamma, discount : ndarray, shape (T,)
    final : ParticlePossibility
        The last filtered possibility function.
    index : pandas.Index or None
        The index of a pandas input (kept by :meth:`to_frame` and :meth:`to_xarray`).
    """

    mode: np.ndarray
    mean: np.ndarray
    log_consistency: np.ndarray
    gamma: np.ndarray
    discount: np.ndarray
    final: ParticlePossibility
    index: Any = field(default=None, repr=False)

    @property
    def consistency(self) -> np.ndarray:
        return np.exp(self.log_consistency)

    def to_frame(self) -> Any:
        """The result as a pandas DataFrame, indexed like a pandas input.

        Columns: the mean of each state component (``x0, x1, ...``), its mode
        (``x0_mode, ...``), ``log_consistency``, ``consistency``, ``gamma`` and ``discount``.
        Index: that of a pandas input, else a RangeIndex ``step``.

        Examples
        --------
        >>> import pandas as pd, possibly as ps
        >>> from possibly.filters.particle_filter import GaussianNoise
        >>> pf = ps.ParticleFilter(lambda x: x, GaussianNoise(0.1),
        ...                        lambda x, y: -0.5 * (y - x) ** 2, n_particles=200,
        ...                        loglik_sup=0.0, prior=ps.Normal(0.0, 1.0), seed=1)
        >>> ys = pd.Series([0.1, 30.0, 0.0], index=pd.date_range("2024-01-01", periods=3))
        >>> frame = pf.filter(ys).to_frame()
        >>> frame.columns.tolist()
        ['x0', 'x0_mode', 'log_consistency', 'consistency', 'gamma', 'discount']
        >>> frame["discount"].round(2)
        2024-01-01    1.0
        2024-01-02    0.0
        2024-01-03    1.0
        Freq: D, Name: discount, dtype: float64
        """
        return _estimates_frame(self.mean, self.mode, self)

    def to_xarray(self) -> Any:
        """The result as an xarray Dataset: ``mean`` and ``mode`` over ``(time, state)``,
        ``log_consistency``, ``gamma`` and ``discount`` over ``time`` (the pandas index if
        there was one).

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> from possibly.filters.state_space import constant_velocity
        >>> pf = ps.ParticleFilter.from_model(constant_velocity(), n_particles=100,
        ...                                   prior=ps.MultivariateNormal([0.0, 1.0], np.eye(2)))
        >>> dict(pf.filter(np.array([0.1, 1.2, 1.9]), seed=0).to_xarray()["mode"].sizes)
        {'time': 3, 'state': 2}
        """
        return _estimates_dataset(self.mean, self.mode, self)


@dataclass(frozen=True)
class ParticleSmootherResult:
    """Output of :meth:`ParticleFilter.smooth`: the possibilistic particle smoother.

    The smoothed possibility function of step ``t`` is the max-marginal of the states' joint
    possibility given all ``T`` observations, ``f_{t|T}(x_t) = sup f(x_0, ..., x_{T-1} | y)``
    over the other states, known at the forward pass's particles; the observations keep the
    discounts of the forward pass (see :meth:`ParticleFilter.smooth`).

    Attributes
    ----------
    mode : ndarray, shape (T,) or (T, d)
        E* of the smoothed state, ``argmax f_{t|T}``: the particle of highest smoothed
        possibility.
    mean : ndarray, shape (T,) or (T, d)
        The mean of the probability density proportional to ``f_{t|T}``, estimated with the
        particles weighted by ``f_{t|T} / q_t`` (as :attr:`ParticleFilterResult.mean`).
    possibilities : tuple of ParticlePossibility
        The smoothed possibility function of each step.
    filtered : ParticleFilterResult
        The forward pass, whose discounts the smoother keeps.
    """

    mode: np.ndarray
    mean: np.ndarray
    possibilities: tuple[ParticlePossibility, ...] = field(repr=False)
    filtered: ParticleFilterResult = field(repr=False)

    @property
    def log_consistency(self) -> np.ndarray:
        return self.filtered.log_consistency

    @property
    def consistency(self) -> np.ndarray:
        return self.filtered.consistency

    @property
    def gamma(self) -> np.ndarray:
        return self.filtered.gamma

    @property
    def discount(self) -> np.ndarray:
        return self.filtered.discount

    @property
    def index(self) -> Any:
        return self.filtered.index

    def to_frame(self) -> Any:
        """The smoothed ``mean`` and ``mode`` per step as a pandas DataFrame, indexed like a
        pandas input, with the forward pass's consistency and discount (the columns of
        :meth:`ParticleFilterResult.to_frame`)."""
        return _estimates_frame(self.mean, self.mode, self.filtered)

    def to_xarray(self) -> Any:
        """The smoothed ``mean`` and ``mode`` as an xarray Dataset, with the forward pass's
        log-consistency, gamma and discount (the layout of
        :meth:`ParticleFilterResult.to_xarray`)."""
        return _estimates_dataset(self.mean, self.mode, self.filtered)


@dataclass(frozen=True, eq=False)
class _LinearDrift:
    """``g(x) = F x`` for particles of shape (n, d) (a picklable transition)."""

    F: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x @ self.F.T


@dataclass(frozen=True, eq=False)
class _GaussianLoglik:
    """``log N̄(y; H x, R)`` at particles, and its supremum over ``x`` (picklable)."""

    H: np.ndarray
    W: np.ndarray  # R^-1
    resid: np.ndarray | None  # None when H is onto: the supremum is 0

    def __call__(self, x: np.ndarray, y: Any) -> np.ndarray:
        e = np.asarray(y, dtype=np.float64) - x @ self.H.T
        with np.errstate(over="ignore"):  # a gross outlier: log-likelihood -inf, cleanly
            return -0.5 * (e * (e @ self.W)).sum(axis=1)

    def sup(self, y: Any) -> float:
        if self.resid is None:
            return 0.0
        y = np.asarray(y, dtype=np.float64)
        with np.errstate(over="ignore"):
            return float(-0.5 * y @ self.resid @ y)


def _is_missing(y: Any) -> bool:
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return bool(np.isnan(arr).any())


@dataclass(frozen=True, eq=False)
class ParticleFilter(
        SequentialEstimator[ParticleFilterState, ParticleInfo, ParticleFilterResult]):
    """Robust possibilistic particle filter (and smoother) for nonlinear state-space models.

    Parameters
    ----------
    transition : callable
        With a :class:`GaussianNoise` as ``transition_logpossibility``: the drift ``g(x)``,
        mapping particles of shape ``(n,)`` or ``(n, d)`` to the same shape. Otherwise a
        sampler ``transition(x, rng)`` returning one next state per particle.
    transition_logpossibility : GaussianNoise or callable
        The noise model, or ``log f(x_next | x_prev)`` evaluated by broadcasting: it is
        called with ``x_next[:, None]`` and ``x_prev[None, :]`` and must return an ``(n, m)``
        array (O(N²) pairs). The sampler's density must then be proportional to its
        exponential (as for any additive noise).
    loglik : callable
        ``loglik(x, y)``: log-likelihood of observation ``y`` at each of the ``n`` particles.
    n_particles : int
        Number of particles N (cost O(N²) per step). This and the following arguments are
        keyword-only.
    robust : bool
        Discount each observation by its consistency (default) or use it whole.
    tau : float in (0, 1], optional
        Threshold: observations with ``gamma > tau`` are kept whole.
    dim : float, optional
        ``d`` in ``gamma = c ** (1 / d)``; defaults to the state dimension.
    loglik_sup : float or callable, optional
        ``sup_x loglik(x, y)`` in closed form (number or ``loglik_sup(y)``); without it the
        supremum is searched by Nelder-Mead from the best particle (an approximation).
    bandwidth : float in [0, 1), optional
        ``h²`` of the kernel interpolation (GaussianNoise transitions only); default
        Silverman's ``(4 / ((d + 2) N)) ** (2 / (d + 4))``.
    prior : Normal, MultivariateNormal or ParticlePossibility, optional
        Default possibility function of the first state for :meth:`init`, :meth:`filter`,
        :meth:`smooth` and streaming :meth:`update` (particles cannot represent the
        uninformative prior).
    seed : int, optional
        Default seed of :meth:`init`, :meth:`filter` and :meth:`smooth`.

    Notes
    -----
    The protocol of :mod:`possibly.sequential`: ``init()`` samples the prior, ``step(state,
    y)`` predicts (after the first observation) and updates; a ``y`` containing NaN is
    missing (predict only). The random stream lives in the state, so ``step`` and
    ``predict`` are pure and a pickled filter resumes identically. Series are not batched
    (``fit`` takes one series). Thread safety: ``init``, ``step``, ``predict``,
    ``filter``/``fit`` and ``smooth`` do not change the instance; streaming
    ``update``/``reset`` raise :class:`~possibly.sequential.ConcurrentUseError` when used
    from two threads at once.

    Examples
    --------
    Random walk observed in noise, one gross outlier at t = 3:

    >>> import numpy as np, possibly as ps
    >>> from possibly.filters.particle_filter import GaussianNoise
    >>> pf = ps.ParticleFilter(lambda x: x, GaussianNoise(0.1),
    ...                        lambda x, y: -0.5 * (y - x) ** 2, n_particles=300,
    ...                        loglik_sup=0.0)
    >>> ys = np.array([0.1, -0.2, 0.0, 30.0, 0.1])
    >>> res = pf.filter(ys, prior=ps.Normal(0.0, 1.0), seed=1)
    >>> res.discount.round(2)
    array([1.  , 0.98, 1.  , 0.  , 0.99])
    >>> bool(abs(res.mode[3]) < 0.5)                   # the outlier is ignored
    True

    From a linear-Gaussian model (the same model object as the Kalman filter):

    >>> from possibly.filters.state_space import constant_velocity
    >>> pf = ps.ParticleFilter.from_model(constant_velocity(), n_particles=200,
    ...                                   prior=ps.MultivariateNormal([0.0, 1.0], np.eye(2)))
    >>> res = pf.filter(np.array([0.1, 1.2, 1.9, 40.0, 4.1]), seed=0)
    >>> res.discount.round(2)
    array([1.  , 0.99, 1.  , 0.  , 0.99])
    """

    transition: Callable
    transition_logpossibility: GaussianNoise | Callable
    loglik: Callable
    _: KW_ONLY
    n_particles: int = 1000
    robust: bool = True
    tau: float | None = None
    dim: float | None = None
    loglik_sup: float | Callable | None = None
    bandwidth: float | None = None
    prior: Any = None
    seed: Any = None

    def __post_init__(self) -> None:
        for name in ("transition", "loglik"):
            if not callable(getattr(self, name)):
                raise ValueError(f"{name} must be callable, got "
                                 f"{type(getattr(self, name)).__name__}")
        tl = self.transition_logpossibility
        if not (isinstance(tl, GaussianNoise) or callable(tl)):
            raise ValueError("transition_logpossibility must be a GaussianNoise or a callable "
                             f"log f(x_next, x_prev), got {type(tl).__name__}")
        n = self.n_particles
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
            raise ValueError(f"n_particles must be an integer >= 2, got {n!r}")
        check_bool("robust", self.robust)
        check_tau(self.tau)
        if self.dim is not None:
            check_positive("dim", self.dim)
        if self.bandwidth is not None:
            check_unit_interval("bandwidth", self.bandwidth, low_open=False, high_open=True)

    @classmethod
    def from_model(cls, model: Any, *, n_particles: int = 1000,
                   **options: Any) -> ParticleFilter:
        """The particle filter of a time-invariant linear-Gaussian model.

        Parameters
        ----------
        model : LinearGaussianModel or (F, Q, H, R)
        n_particles : int
        **options
            ``robust``, ``tau``, ``dim``, ``bandwidth``, ``prior``, ``seed`` as in the class.
        """
        from possibly.filters.state_space import LinearGaussianModel

        model = LinearGaussianModel.of(model)
        if model.time_varying:
            raise ValueError("ParticleFilter.from_model needs a time-invariant model (F and Q "
                             "not per step)")
        ob = model._observation
        loglik = _GaussianLoglik(ob.H, ob.W, ob.resid)
        return cls(_LinearDrift(model.F), GaussianNoise(model.Q), loglik,
                   n_particles=n_particles, loglik_sup=loglik.sup, **options)

    # -- the protocol -----------------------------------------------------------------------
    def init(self, batch_shape: tuple[int, ...] = (), prior: Any = None, *,
             seed: Any = None) -> ParticleFilterState:
        """Particles sampled from ``prior`` (default: the filter's), see :func:`sample_prior`.

        ``seed`` (default: the filter's) starts the random stream kept in the state.
        """
        if tuple(batch_shape) != ():
            raise ValueError(f"ParticleFilter runs one series at a time: batch_shape must be "
                             f"(), got {batch_shape!r}")
        prior = self.prior if prior is None else prior
        if prior is None:
            raise ValueError("prior must be given (here or to ParticleFilter): particles "
                             "cannot represent the uninformative prior")
        rng = np.random.default_rng(self.seed if seed is None else seed)
        return replace(sample_prior(self, prior, rng), rng=rng)

    def _advance(self, state: ParticleFilterState, y: Any
                 ) -> tuple[ParticleFilterState, ParticleInfo, _Kernel | None, np.ndarray]:
        """One step: the new state, its Info, the transition kernel from the previous
        particles (None at the first step) and the predicted log values."""
        rng = _stream_copy(state)
        kernel = None
        if state.t:
            state, kernel = _propagate(self, state, rng)
        predicted = state.log_values
        if _is_missing(y):
            best = state.particles[int(np.argmax(state.log_values))]
            return (replace(state, rng=rng, t=state.t + 1),
                    ParticleInfo(math.nan, math.nan, gamma=math.nan, mode=best), kernel,
                    predicted)
        state, info = update(self, state, y)
        return replace(state, rng=rng, t=state.t + 1), info, kernel, predicted

    def step(self, state: ParticleFilterState,
             y: Any) -> tuple[ParticleFilterState, ParticleInfo]:
        """Predict (after the first observation), then update with ``y``; pure."""
        new, info, _, _ = self._advance(state, y)
        return new, info

    def predict(self, state: ParticleFilterState) -> ParticleFilterState:
        """One predict step (new particles and their predicted values, see :func:`predict`),
        with the random stream of ``state``; pure (``state`` and its stream are not advanced,
        the returned state carries the advanced stream)."""
        rng = _stream_copy(state)
        return replace(predict(self, state, rng), rng=rng)

    def fit(self, y: Any) -> ParticleFilterResult:
        """Filter a whole series from :meth:`init` (same as :meth:`filter`)."""
        return self.filter(y)

    def filter(self, ys: Sequence[Any] | np.ndarray, prior: Any = None, *, seed: Any = None
               ) -> ParticleFilterResult:
        """Filter the observations ``ys[0], ys[1], ...``.

        Parameters
        ----------
        ys : sequence, ndarray, pandas Series or DataFrame
            Observations, each passed as ``y`` to ``loglik`` (a ``y`` containing NaN is
            missing: predict only); a DataFrame's rows are the observations.
        prior : Normal, MultivariateNormal or ParticlePossibility, optional
            Possibility function of the first state, before ``ys[0]`` (default: the
            filter's).
        seed : int or numpy.random.Generator, optional

        Returns
        -------
        ParticleFilterResult
        """
        return self._run(ys, prior, seed, None)

    def _run(self, ys: Any, prior: Any, seed: Any,
             trace: list[tuple[ParticleFilterState, _Kernel | None, np.ndarray]] | None
             ) -> ParticleFilterResult:
        """The forward pass; with a ``trace`` list, also appends, per step, what the
        backward pass needs: the filtered state, the kernel and the predicted log values."""
        index = time_labels(ys, 0)
        if index is not None:
            ys = np.asarray(ys)  # a DataFrame's rows are the observations
        if len(ys) < 1:
            raise ValueError("ys must hold at least one observation")
        state = self.init((), prior, seed=seed)
        modes, means, infos = [], [], []
        for y in ys:
            state, info, kernel, predicted = self._advance(state, y)
            if trace is not None:
                trace.append((state, kernel, predicted))
            modes.append(info.mode)
            means.append(weighted_mean(state))
            infos.append(info)
        return ParticleFilterResult(
            mode=np.stack(modes),
            mean=np.stack(means),
            index=index,
            log_consistency=np.array([i.log_consistency for i in infos]),
            gamma=np.array([i.gamma for i in infos]),
            discount=np.array([i.discount for i in infos]),
            final=state.possibility(),
        )

    def smooth(self, ys: Sequence[Any] | np.ndarray, prior: Any = None, *, seed: Any = None
               ) -> ParticleSmootherResult:
        """Possibilistic particle smoother: :meth:`filter`, then a backward pass.

        The smoothed possibility function of step ``t`` is the max-marginal of the joint
        possibility of the states given every observation, with each observation discounted
        as in the forward pass. On the particles,

            f_{t|T}(i) = f_{t|t}(i) · max_j k_{t+1}(j, i) f_{t+1|T}(j) / f_{t+1|t}(j),

        ``f_{t|t}`` and ``f_{t+1|t}`` the filtered and predicted values, and ``k_{t+1}(j, i)``
        the transition possibility from particle ``i`` at ``t`` to particle ``j`` at ``t + 1``
        with which the forward pass predicted (the transition's log-possibility, or with a
        :class:`GaussianNoise` the interpolation kernel), so that the backward pass is exact
        for the possibility function the forward pass computes. That kernel couples
        consecutive states a little more loosely than ``Q`` does, which pulls the smoothed
        estimates towards the filtered ones by an amount of order ``bandwidth``: choose a
        small ``bandwidth`` to smooth (derivation and figures: docs/particles.md). O(N²) per
        step, as the forward pass; it keeps every step's particles.

        Parameters
        ----------
        ys, prior, seed
            As in :meth:`filter` (the same ``seed`` gives the same forward pass).

        Returns
        -------
        ParticleSmootherResult

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> from possibly.filters.particle_filter import GaussianNoise
        >>> pf = ps.ParticleFilter(lambda x: x, GaussianNoise(0.1),
        ...                        lambda x, y: -0.5 * (y - x) ** 2, n_particles=300,
        ...                        loglik_sup=0.0, prior=ps.Normal(0.0, 1.0), seed=1)
        >>> ys = np.array([0.1, -0.2, 0.0, 30.0, 0.1])
        >>> res = pf.smooth(ys)
        >>> res.discount.round(2)                     # the forward pass's discounts
        array([1.  , 0.98, 1.  , 0.  , 0.99])
        >>> bool(np.all(np.abs(res.mode) < 0.5))      # the outlier is ignored throughout
        True
        """
        trace: list[tuple[ParticleFilterState, _Kernel | None, np.ndarray]] = []
        filtered = self._run(ys, prior, seed, trace)
        states = [s for s, _, _ in trace]
        backs = _backward(states, [k for _, k, _ in trace], [p for _, _, p in trace])
        modes, means, possibilities = [], [], []
        for state, back in zip(states, backs, strict=True):
            f = ParticlePossibility(state.particles, state.log_values + back)
            modes.append(state.particles[int(np.argmax(f.log_values))])
            means.append(weighted_mean(replace(state, log_weights=state.log_weights + back)))
            possibilities.append(f)
        return ParticleSmootherResult(mode=np.stack(modes), mean=np.stack(means),
                                      possibilities=tuple(possibilities), filtered=filtered)


# -- pure functions -----------------------------------------------------------------------------
def weighted_mean(state: ParticleFilterState) -> np.ndarray:
    """Mean of the density proportional to the possibility function of ``state``: the
    particles weighted by their sampling weights ``f / q`` (see :class:`ParticleFilterResult`).

    Examples
    --------
    >>> import numpy as np
    >>> state = ParticleFilterState(np.array([0.0, 1.0, 4.0]), np.zeros(3), np.log([1, 1, 2]))
    >>> float(weighted_mean(state))
    2.25
    """
    w = np.exp(state.log_weights - state.log_weights.max())
    return np.tensordot(w / w.sum(), state.particles, axes=1)


def sample_prior(pf: ParticleFilter, prior, rng: np.random.Generator) -> ParticleFilterState:
    """Initial particles from a prior possibility function.

    A :class:`~possibly.Normal` or :class:`~possibly.MultivariateNormal` with positive
    precision is sampled from its normal density (so the sampling weights start equal); the
    particles of a :class:`ParticlePossibility` are used as they are, with sampling weights
    ∝ their values (they are assumed spread by a flat exploration density).
    """
    n = pf.n_particles
    if isinstance(prior, ParticlePossibility):
        return ParticleFilterState(prior.particles, prior.log_values, prior.log_values.copy())
    if isinstance(prior, Normal | MultivariateNormal) and not prior.batch_shape:
        prec = np.atleast_2d(prior.precision)
        try:
            chol = np.linalg.cholesky(prec)
        except np.linalg.LinAlgError:
            chol = None
        if chol is None or np.linalg.cond(prec) > 1e12:
            raise ValueError("prior must have a positive-definite precision to be sampled; "
                             "the uninformative prior cannot be represented by particles")
        z = rng.standard_normal((n, prec.shape[0]))
        x = np.atleast_1d(prior.mean) + np.linalg.solve(chol.T, z.T).T
        x = x[:, 0] if isinstance(prior, Normal) else x
        lv = prior.log_possibility(x)
        return ParticleFilterState(x, lv - lv.max(), np.zeros(n))
    raise ValueError(f"prior must be an unbatched Normal, MultivariateNormal or "
                     f"ParticlePossibility, got {type(prior).__name__}")


def _stream_copy(state: Any) -> np.random.Generator:
    """A copy of the random stream of a valid ``state`` (the state's own is never advanced)."""
    if not isinstance(state, ParticleFilterState) or state.rng is None:
        raise ValueError("state must be a ParticleFilterState from init()")
    return copy.deepcopy(state.rng)


def _systematic(prob: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    u = (rng.random() + np.arange(n)) / n
    return np.minimum(np.searchsorted(np.cumsum(prob), u), len(prob) - 1)


def _check_states(name: str, x, like: np.ndarray) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must return numbers") from exc
    if arr.shape != like.shape:
        raise ValueError(f"{name} returned shape {arr.shape}, expected {like.shape} (one state "
                         "per particle)")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} returned NaN or infinite states")
    return arr


def _pairwise_max_logsumexp(pair: Callable[[slice], np.ndarray], n: int, m: int,
                            log_values: np.ndarray, prob: np.ndarray):
    """Row-wise ``max_j(log_values_j + K_ij)`` and ``log sum_j prob_j exp(K_ij)``.

    ``pair(rows)`` returns the block ``K[rows, :]``; rows are processed in chunks.
    """
    top = np.empty(n)
    lse = np.empty(n)
    rows = max(1, _CHUNK // max(m, 1))
    for start in range(0, n, rows):
        sl = slice(start, min(n, start + rows))
        k = pair(sl)
        top[sl] = (log_values[None, :] + k).max(axis=1)
        # shift each row by its largest K so that exp neither overflows nor underflows
        kmax = k.max(axis=1, keepdims=True)
        safe = np.where(np.isfinite(kmax), kmax, 0.0)
        with np.errstate(divide="ignore"):
            lse[sl] = safe[:, 0] + np.log(np.exp(k - safe) @ prob)
    return top, lse


def predict(pf: ParticleFilter, state: ParticleFilterState,
            rng: np.random.Generator) -> ParticleFilterState:
    """Prediction: new particles, their possibility values by a sup over all old particles.

    The scheme: docs/particles.md. ``rng`` is advanced; the returned state keeps
    the stream of ``state``.
    """
    return _propagate(pf, state, rng)[0]


def _propagate(pf: ParticleFilter, state: ParticleFilterState, rng: np.random.Generator
               ) -> tuple[ParticleFilterState, _Kernel]:
    """:func:`predict`, and the log transition possibilities it maximised over (the
    smoother's backward pass maximises over the same)."""
    x, lv, lw = state.particles, state.log_values, state.log_weights
    m = len(x)
    n = pf.n_particles
    prob = np.exp(lw - lw.max())
    prob /= prob.sum()
    anc = _systematic(prob, n, rng)
    tl = pf.transition_logpossibility
    if isinstance(tl, GaussianNoise):
        gx = _check_states("transition", pf.transition(x), x)
        g2 = gx.reshape(m, -1)
        d = g2.shape[1]
        if tl.dim != d:
            raise ValueError(f"GaussianNoise has dimension {tl.dim}, the state {d}")
        h2 = _silverman(d, n) if pf.bandwidth is None else float(pf.bandwidth)
        mean = prob @ g2
        c = g2 - mean
        cov = h2 * ((c * prob[:, None]).T @ c) + tl.cov
        cov = 0.5 * (cov + cov.T) + 1e-12 * max(np.trace(cov) / d, 1e-300) * np.eye(d)
        chol = np.linalg.cholesky(cov)
        centres = np.sqrt(1.0 - h2) * g2 + (1.0 - np.sqrt(1.0 - h2)) * mean
        new2 = centres[anc] + rng.standard_normal((n, d)) @ chol.T
        # whitened coordinates, centred to keep the expanded squares small
        wc = np.linalg.solve(chol, (centres - mean).T).T
        wn = np.linalg.solve(chol, (new2 - mean).T).T
        nc, nn = (wc * wc).sum(1), (wn * wn).sum(1)

        def pair(sl: slice) -> np.ndarray:
            d2 = nn[sl, None] + nc[None, :] - 2.0 * wn[sl] @ wc.T
            return -0.5 * np.maximum(d2, 0.0)

        new = new2.reshape((n,) + x.shape[1:])
    else:
        new = _check_states("transition", pf.transition(x[anc], rng), x[anc])

        def pair(sl: slice) -> np.ndarray:
            k = np.asarray(tl(new[sl][:, None], x[None, :]), dtype=np.float64)
            rows = len(range(n)[sl])
            if k.shape != (rows, m):
                raise ValueError(f"transition_logpossibility(x_next[:, None], x_prev[None, :]) "
                                 f"returned shape {k.shape}, expected {(rows, m)}")
            if np.isnan(k).any() or (k == np.inf).any():
                raise ValueError("transition_logpossibility returned NaN or +inf")
            return k

    top, log_q = _pairwise_max_logsumexp(pair, n, m, lv, prob)
    if top.max() == -np.inf:
        raise ValueError("every new particle has possibility 0 under the transition")
    top = top - top.max()
    with np.errstate(invalid="ignore"):
        log_w = np.where(top == -np.inf, -np.inf, top - log_q)
    return ParticleFilterState(new, top, log_w, state.rng, state.t), pair


def _backward(states: list[ParticleFilterState], kernels: list[_Kernel | None],
              predicted: list[np.ndarray]) -> list[np.ndarray]:
    """The smoother's backward pass: per step ``t``, ``log f_{t|T} - log f_{t|t}`` at the
    particles (up to a constant), ``max_j K_{t+1}[j, i] + log f_{t+1|T}(j) - log
    f_{t+1|t}(j)`` (see :meth:`ParticleFilter.smooth`)."""
    last = np.zeros(len(states[-1].log_values))
    backs = [last]
    smoothed = states[-1].log_values
    for t in range(len(states) - 2, -1, -1):
        kernel = kernels[t + 1]
        assert kernel is not None  # every step after the first predicts
        pred = predicted[t + 1]
        with np.errstate(invalid="ignore"):  # -inf - -inf: a particle of possibility 0
            ratio = np.where(pred == -np.inf, -np.inf, smoothed - pred)
        back = _column_max(kernel, len(pred), len(states[t].log_values), ratio)
        smoothed = states[t].log_values + back
        smoothed = smoothed - smoothed.max()
        backs.append(back)
    return backs[::-1]


def _column_max(kernel: _Kernel, n: int, m: int, add: np.ndarray) -> np.ndarray:
    """Column-wise ``max_j(K[j, i] + add_j)`` of the ``(n, m)`` kernel, in row chunks."""
    out = np.full(m, -np.inf)
    rows = max(1, _CHUNK // max(m, 1))
    for start in range(0, n, rows):
        sl = slice(start, min(n, start + rows))
        np.maximum(out, (kernel(sl) + add[sl, None]).max(axis=0), out=out)
    return out


def _silverman(d: int, n: int) -> float:
    return float((4.0 / ((d + 2.0) * n)) ** (2.0 / (d + 4.0)))


def update(pf: ParticleFilter, state: ParticleFilterState,
           y) -> tuple[ParticleFilterState, ParticleInfo]:
    """Robust update with observation ``y``: ``log f + rho log L``, max-normalised."""
    x, lv, lw = state.particles, state.log_values, state.log_weights
    lik = LogLikelihood(pf.loglik, y, pf.loglik_sup)
    log_l = lik.log_information(x)
    with np.errstate(invalid="ignore"):
        log_c = float(min((lv + log_l).max(), 0.0))
    d = 1 if x.ndim == 1 else x.shape[1]
    dim = float(d if pf.dim is None else pf.dim)
    gamma = float(discount(log_c, dim))
    if not pf.robust:
        rho = 1.0
    else:
        rho = gamma if pf.tau is None else float(discount(log_c, dim, pf.tau))
    step_l = log_power(rho, log_l)
    new_lv = lv + step_l
    top = new_lv.max()
    if top == -np.inf:
        raise ValueError("the observation has likelihood 0 at every particle with a nonzero "
                         "possibility: the (standard) posterior is undefined")
    new_lv = new_lv - top
    new_lw = lw + step_l
    mode = x[int(np.argmax(new_lv))]
    return (ParticleFilterState(x, new_lv, new_lw - new_lw.max(), state.rng, state.t),
            ParticleInfo(log_consistency=log_c, discount=rho, gamma=gamma, mode=mode))
