"""Robust extended and unscented Kalman filters for nonlinear state-space models.

Model: ``θ_t = f(θ_{t-1}) + u_t``, ``u_t ~ N(0, Q)`` and ``y_t = h(θ_t) + v_t``,
``v_t ~ N(0, R)``. Both filters approximate the predictive of ``y_t`` by a normal
``N̄(y; ŷ, S)`` (the extended filter by linearising ``h``, the unscented one by sigma points)
and assess each observation with its consistency ``log c = -½ vᵀ S⁻¹ v``; the robust update is
the Kalman update with ``R / ρ``, as in :class:`possibly.KalmanFilter`, whose verbs and result
they share. With ``robust=False`` they are the textbook EKF and UKF. ``f`` and ``h`` act on the
last axis and accept leading batch axes (``x[..., 0]``, not ``x[0]``); Jacobians default to
central finite differences.

From no prior (``prior=None``) the state runs in information form with the robust start, and
the update relinearises ``h`` at its own result until it settles (Gauss-Newton), so the first
observations define the state through ``h`` itself; ``initial_guess`` only sets where ``f`` and
``h`` are first linearised. The smoothers are the extended and unscented RTS passes (Särkkä,
*Bayesian Filtering and Smoothing*, §9), keeping the forward discounts as the linear smoother
does. Details: docs/applications/robust_filtering.md.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from possibly.families.multivariate_normal import MultivariateNormal
from possibly.filters._common import (
    COVERAGE,
    _check_coverage,
    _check_dim_tau,
    _check_observation_values,
    _covariance_or_inf,
    _keep_set,
    _mv,
    _reference_table,
    _start_state_error,
    _sym,
    _well_conditioned,
    with_rejected,
)
from possibly.filters.filter_result import FilterResult, warn_if_mostly_discounted
from possibly.filters.kalman_state import KalmanInfo
from possibly.filters.robust_start import (
    KalmanStartState,
    start_init,
    start_masked,
    start_step,
)
from possibly.filters.smoother import SmootherResult
from possibly.frames import time_labels
from possibly.inference import discount, relative_log_consistency
from possibly.sequential import SequentialEstimator, time_first
from possibly.validation import as_finite, check_bool, check_positive, check_psd

__all__ = [
    "ExtendedKalmanFilter",
    "NonlinearModel",
    "NonlinearState",
    "UnscentedKalmanFilter",
]


@dataclass(frozen=True)
class NonlinearModel:
    """A nonlinear state-space model with additive Gaussian noises.

    Parameters
    ----------
    f : callable, ``(..., n) -> (..., n)``
        Transition function.
    h : callable, ``(..., n) -> (..., m)``
        Measurement function.
    Q : array_like, shape (n, n)
        Process noise covariance (positive semi-definite).
    R : array_like, shape (m, m)
        Observation noise covariance (positive definite).
    f_jacobian, h_jacobian : callable, optional
        ``(..., n) -> (..., n, n)`` and ``(..., n) -> (..., m, n)``; central finite differences
        when omitted.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> rng = lambda x: np.sqrt(x[..., :1] ** 2 + 1.0)     # range to a point at height 1
    >>> model = NonlinearModel(f=lambda x: x, h=rng, Q=[[0.01]], R=[[0.1]])
    >>> model.state_dim, model.obs_dim
    (1, 1)
    >>> model.h_jac(np.array([1.0])).round(6)               # d/dx √(x²+1) = x / √(x²+1)
    array([[0.707107]])
    """

    f: Callable[[np.ndarray], np.ndarray]
    h: Callable[[np.ndarray], np.ndarray]
    Q: Any
    R: Any
    f_jacobian: Callable[[np.ndarray], np.ndarray] | None = None
    h_jacobian: Callable[[np.ndarray], np.ndarray] | None = None
    W: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("f", "h"):
            if not callable(getattr(self, name)):
                raise ValueError(f"{name} must be callable, got {getattr(self, name)!r}")
        for name in ("f_jacobian", "h_jacobian"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise ValueError(f"{name} must be callable or None, got {value!r}")
        Q = check_psd("Q", self.Q)
        R = check_psd("R", self.R, definite=True)
        if Q.ndim != 2 or Q.shape[0] < 1:
            raise ValueError(f"Q must be an (n, n) matrix with n >= 1, got shape {Q.shape}")
        if R.ndim != 2 or R.shape[0] < 1:
            raise ValueError(f"R must be an (m, m) matrix with m >= 1, got shape {R.shape}")
        object.__setattr__(self, "Q", Q)
        object.__setattr__(self, "R", R)
        object.__setattr__(self, "W", np.linalg.inv(R))

    @property
    def state_dim(self) -> int:
        return self.Q.shape[0]

    @property
    def obs_dim(self) -> int:
        return self.R.shape[0]

    def transition(self, x: np.ndarray) -> np.ndarray:
        return _checked("f", self.f(x), x.shape[:-1] + (self.state_dim,))

    def measurement(self, x: np.ndarray) -> np.ndarray:
        return _checked("h", self.h(x), x.shape[:-1] + (self.obs_dim,))

    def f_jac(self, x: np.ndarray) -> np.ndarray:
        if self.f_jacobian is not None:
            return _checked("f_jacobian", self.f_jacobian(x),
                            x.shape[:-1] + (self.state_dim, self.state_dim))
        return _finite_difference("f", self.transition, x)

    def h_jac(self, x: np.ndarray) -> np.ndarray:
        if self.h_jacobian is not None:
            return _checked("h_jacobian", self.h_jacobian(x),
                            x.shape[:-1] + (self.obs_dim, self.state_dim))
        return _finite_difference("h", self.measurement, x)


def _checked(name: str, value, shape: tuple[int, ...]) -> np.ndarray:
    out = np.asarray(value, dtype=np.float64)
    try:
        out = np.broadcast_to(out, shape)
    except ValueError:
        raise ValueError(f"{name} must return an array of shape {shape} (it must accept "
                         f"leading batch axes), got shape {out.shape}") from None
    if not np.isfinite(out).all():
        raise ValueError(f"{name} returned a non-finite value (the state left the domain "
                         f"where {name} is defined?)")
    return out


def _finite_difference(name: str, fn, x: np.ndarray) -> np.ndarray:
    """Central differences ``J[..., i, j] = ∂fn_i / ∂x_j``; a derivative whose two one-sided
    estimates disagree grossly (a kink or a jump at ``x``) is rejected."""
    n = x.shape[-1]
    step = 1e-6 * np.maximum(1.0, np.abs(x))  # (..., n)
    eye = np.eye(n)
    shifts = step[..., None, :] * eye  # (..., n, n): row j perturbs component j
    base = fn(x)[..., None, :]
    up = fn(x[..., None, :] + shifts)  # (..., n, m)
    down = fn(x[..., None, :] - shifts)
    fwd, bwd = (up - base) / step[..., :, None], (base - down) / step[..., :, None]
    scale = np.maximum(1.0, np.maximum(np.abs(fwd), np.abs(bwd)))
    if (np.abs(fwd - bwd) > 1e-2 * scale).any():
        raise ValueError(f"{name} is not differentiable at the linearisation point (its "
                         f"one-sided finite differences disagree); give a smooth {name} or "
                         f"use the UnscentedKalmanFilter")
    return np.swapaxes(0.5 * (fwd + bwd), -1, -2)


@dataclass(frozen=True)
class NonlinearState:
    """The possibility function ``N̄(θ; mean, ·)`` of the current state (a batch).

    Exactly one of ``covariance`` and ``precision`` is set, as in
    :class:`~possibly.filters.kalman_state.KalmanState`: the information form (precision, possibly
    singular) while some direction of the state is not yet informed (a start from no prior),
    the covariance form after.

    Attributes
    ----------
    mean : ndarray, shape (..., n)
        E* of the state; in a direction not yet informed, the linearisation point.
    covariance : ndarray, shape (..., n, n), or None
    precision : ndarray, shape (..., n, n), or None
    t : int
        Number of observations absorbed so far (0: the state is that of θ_1 and the first
        step does not predict).
    """

    mean: np.ndarray
    covariance: np.ndarray | None = None
    precision: np.ndarray | None = None
    t: int = 0

    @property
    def started(self) -> bool:
        """Whether an observation (or a missing one) has been processed."""
        return self.t > 0

    @property
    def information_form(self) -> bool:
        return self.precision is not None


class _RobustNonlinearFilter(
        SequentialEstimator[NonlinearState | KalmanStartState, KalmanInfo, FilterResult], ABC):
    """Shared parts: arguments, the robust gain, the information form of a start from no
    prior, the protocol and the verbs of :class:`~possibly.filters.kalman.KalmanFilter`.

    Subclasses implement the two steps :meth:`_predict` and :meth:`_update` (covariance
    form) and the smoother's gain :meth:`_smoother_gain`."""

    def __init__(self, model: NonlinearModel, *, prior: MultivariateNormal | None = None,
                 robust: bool = True, tau=None, dim=None,
                 coverage: float | None = COVERAGE, robust_start: bool | None = None,
                 initial_guess=None) -> None:
        if not isinstance(model, NonlinearModel):
            raise ValueError(f"model must be a possibly.filters.nonlinear.NonlinearModel, got "
                             f"{type(model).__name__}")
        self.model = model
        n = model.state_dim
        self.prior = prior
        self._moments0 = None if prior is None else self._prior_moments(prior)
        self.robust = check_bool("robust", robust)
        if tau is not None and not self.robust:
            raise ValueError("tau only applies to the robust filter (robust=True)")
        self.dim, self.tau = _check_dim_tau(dim, tau, n)
        self.coverage = _check_coverage(coverage) if self.robust else None
        table = _reference_table(self.coverage, model.obs_dim)
        self._log_c0 = None if table is None else float(table[model.obs_dim])
        self.robust_start = None if robust_start is None else check_bool("robust_start",
                                                                          robust_start)
        if initial_guess is None:
            guess = np.zeros(n)
        else:
            guess = as_finite("initial_guess", initial_guess)
            if guess.shape != (n,):
                raise ValueError(f"initial_guess must have shape ({n},) (the state), got "
                                 f"{guess.shape}")
        self.initial_guess = guess
        # Q = G Q_g Gᵀ over its range: the information-form prediction takes the sup over
        # the process noise there, so a singular Q is exact
        w, v = np.linalg.eigh(model.Q)
        kept = w > 1e-12 * max(float(w[-1]), 0.0)
        self._G, self._Qg_inv = v[:, kept], np.diag(1.0 / w[kept])

    def _prior_moments(self, prior: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, covariance)`` of a proper prior, checked."""
        if not isinstance(prior, MultivariateNormal):
            raise ValueError(f"prior must be a possibly.MultivariateNormal (proper) or None "
                             f"(no prior: the robust start), got {type(prior).__name__}")
        n = self.model.state_dim
        if prior.dim != n:
            raise ValueError(f"prior must have dimension {n} (the state), got {prior.dim}")
        prec = np.asarray(prior.precision, dtype=float)
        eig = np.linalg.eigvalsh(prec)
        if not (eig[..., 0] > 1e-12 * np.abs(eig[..., -1])).all():
            raise ValueError("prior must be proper (positive-definite precision) for a "
                             "nonlinear filter, or None (no prior)")
        return np.asarray(prior.mean, dtype=float), _sym(np.linalg.inv(prec))

    def __repr__(self) -> str:
        kind = "robust" if self.robust else "standard"
        return (f"{type(self).__name__}({kind}, n={self.model.state_dim}, "
                f"m={self.model.obs_dim}, dim={self.dim:g})")

    # -- protocol ---------------------------------------------------------------------------
    def init(self, batch_shape: tuple[int, ...] = (),
             prior: MultivariateNormal | None = None) -> NonlinearState | KalmanStartState:
        """The state before any observation: ``prior`` (default: the filter's) or, with no
        prior, the uninformative state at ``initial_guess``; with the robust start, the
        mixture of start hypotheses around it (a
        :class:`~possibly.filters.robust_start.KalmanStartState`)."""
        batch_shape = tuple(int(b) for b in batch_shape)
        state = self._initial(prior, batch_shape)
        return start_init(state, batch_shape) if self._starts(prior) else state

    def _initial(self, prior: MultivariateNormal | None,
                 batch_shape: tuple[int, ...]) -> NonlinearState:
        n = self.model.state_dim
        if prior is None and self.prior is None:  # precision 0 at the linearisation point
            mean = np.broadcast_to(self.initial_guess, batch_shape + (n,)).copy()
            return NonlinearState(mean, None, np.zeros(batch_shape + (n, n)))
        mean0, cov0 = self._prior_moments(prior) if prior is not None \
            else cast(tuple[np.ndarray, np.ndarray], self._moments0)
        try:
            mean = np.broadcast_to(mean0, batch_shape + (n,)).copy()
            cov = np.broadcast_to(cov0, batch_shape + (n, n)).copy()
        except ValueError:
            raise ValueError(f"prior batch shape {mean0.shape[:-1]} does not broadcast with "
                             f"the batch shape {batch_shape}") from None
        return NonlinearState(mean, cov)

    def _starts(self, prior: MultivariateNormal | None) -> bool:
        """Whether a run from ``prior`` uses the robust start: the robust filter, from no
        prior (``robust_start=None``) or from any prior (``robust_start=True``)."""
        if not self.robust or self.robust_start is False:
            return False
        return self.robust_start is True or (prior is None and self.prior is None)

    def step(self, state: NonlinearState | KalmanStartState,
             y) -> tuple[NonlinearState | KalmanStartState, KalmanInfo]:
        """Predict (except before the first observation), then update with ``y`` (NaN:
        predict only); pure. During the robust start ``state`` is a
        :class:`~possibly.filters.robust_start.KalmanStartState` (what :meth:`init` returns
        then), and becomes a NonlinearState when the mixture collapses."""
        if isinstance(state, KalmanStartState):
            new, info, _, _ = start_step(state, _observation(y, self.model.obs_dim),
                                         self._plain_step, self.model.obs_dim)
            return new, info
        if not isinstance(state, NonlinearState):
            raise ValueError(f"state must be a NonlinearState, got {type(state).__name__}")
        _, info, new = self._plain_step(state, _observation(y, self.model.obs_dim))
        return new, info

    def _plain_step(self, state: NonlinearState,
                    y: np.ndarray) -> tuple[NonlinearState, KalmanInfo, NonlinearState]:
        """``(predicted, info, filtered)`` of one step without the checks (``y`` already a
        checked array ``(..., m)``)."""
        if state.started:
            state = self._predict_state(state)
        if state.precision is not None:
            new, log_c, rho = self._update_information(state, y)
        else:
            mean, cov, log_c, rho = self._update(state.mean, cast(np.ndarray, state.covariance),
                                                 y)
            new = NonlinearState(mean, cov, None, state.t + 1)
        gamma = discount(log_c, self.dim, validate=False)
        return state, KalmanInfo(log_consistency=log_c, discount=rho, gamma=gamma), new

    def predict(self, state: NonlinearState) -> NonlinearState:
        """One predict step: the state of θ_{t+1} from that of θ_t. A plain state only: the
        robust start's mixture (a :class:`~possibly.filters.robust_start.KalmanStartState`,
        what :meth:`init` and :meth:`step` return during the first steps) is refused; predict
        its leading hypothesis, ``predict(state.current)``."""
        if isinstance(state, KalmanStartState):
            raise _start_state_error(state)
        if not isinstance(state, NonlinearState):
            raise ValueError(f"state must be a NonlinearState, got {type(state).__name__}")
        if state.mean.shape[-1:] != (self.model.state_dim,):
            raise ValueError(f"state.mean must have shape (..., {self.model.state_dim}), got "
                             f"{state.mean.shape}")
        return self._predict_state(state)

    def _predict_state(self, state: NonlinearState) -> NonlinearState:
        if state.precision is None:
            mean, cov = self._predict(state.mean, cast(np.ndarray, state.covariance))
            return NonlinearState(mean, cov, None, state.t)
        # information form: f linearised at the mean, Y' = M - M G (Q_g⁻¹ + Gᵀ M G)⁻¹ Gᵀ M
        # with M = F⁻ᵀ Y F⁻¹ (the Kalman filter's, exact for a singular Y)
        fj = self.model.f_jac(state.mean)
        try:
            f_inv = np.linalg.inv(fj)
        except np.linalg.LinAlgError:
            raise ValueError("the Jacobian of f must be invertible to predict a state that is "
                             "not yet fully informed (a start from no prior)") from None
        m = np.swapaxes(f_inv, -1, -2) @ state.precision @ f_inv
        if self._G.shape[1]:
            mg = m @ self._G
            a = self._Qg_inv + self._G.T @ mg
            m = m - mg @ np.linalg.solve(a, np.swapaxes(mg, -1, -2))
        return NonlinearState(self.model.transition(state.mean), None, _sym(m), state.t)

    def _update_information(self, state: NonlinearState,
                            y: np.ndarray) -> tuple[NonlinearState, np.ndarray, np.ndarray]:
        """The update of a state in information form: ``h`` linearised at the mean (the
        predicted mean, or the linearisation point in the directions not informed), then
        relinearised at the update until it settles (Gauss-Newton for the mode of the
        discounted posterior, the discount fixed at the first linearisation's)."""
        m0, Y = state.mean, cast(np.ndarray, state.precision)
        model, W = self.model, self.model.W
        missing = np.isnan(y).any(-1)

        def linearised(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """``(Hᵀ W H, Hᵀ W v)`` with ``H`` the Jacobian at ``x`` and ``v = y - h(x) -
            H (m0 - x)`` the innovation of the linearised model at ``m0``."""
            hj = model.h_jac(x)
            v = np.where(missing[..., None], 0.0, y - model.measurement(x) - _mv(hj, m0 - x))
            htw = np.swapaxes(hj, -1, -2) @ W
            return htw @ hj, _mv(htw, v)

        try:
            hj = model.h_jac(m0)
        except ValueError as err:  # e.g. h not differentiable at initial_guess
            raise ValueError(f"{err}; with no prior h is first linearised at initial_guess, "
                             f"so give an initial_guess where h is smooth") from None
        v = np.where(missing[..., None], 0.0, y - model.measurement(m0))
        htw = np.swapaxes(hj, -1, -2) @ W
        j, b = htw @ hj, _mv(htw, v)
        q = (v * _mv(W, v)).sum(-1) - (b * _mv(np.linalg.pinv(Y + j, hermitian=True), b)).sum(-1)
        # from the uninformative prior every y fits exactly: c = 1, not rounding
        log_c = np.minimum(-0.5 * np.where(np.any(Y, axis=(-2, -1)), q, 0.0), 0.0)
        rel = log_c if self._log_c0 is None else relative_log_consistency(log_c, self._log_c0)
        rho = np.where(missing, 0.0, discount(rel, self.dim, self.tau, self.robust,
                                              validate=False))
        r3 = rho[..., None, None]
        mean = m0 + _mv(np.linalg.pinv(Y + r3 * j, hermitian=True), rho[..., None] * b)
        # each batch element stops at the point it settles on (and its Jacobian there), so
        # that it does not depend on the others
        settled = np.zeros(mean.shape[:-1], dtype=bool)
        for _ in range(_MAX_ITER):
            j, b = linearised(mean)
            new = m0 + _mv(np.linalg.pinv(Y + r3 * j, hermitian=True), rho[..., None] * b)
            settled = settled | (np.abs(new - mean) <= _SETTLED * (1.0 + np.abs(mean))).all(-1)
            if settled.all():
                break
            mean = np.where(settled[..., None], mean, new)
        else:
            j, _ = linearised(mean)
        prec = _sym(Y + r3 * j)
        t = state.t + 1
        new_state = (NonlinearState(mean, _sym(np.linalg.inv(prec)), None, t)
                     if _well_conditioned(prec).all() else NonlinearState(mean, None, prec, t))
        nan = np.where(missing, np.nan, 0.0)
        return new_state, log_c + nan, rho + nan

    # -- whole series -------------------------------------------------------------------------
    def fit(self, y, *, engine: str = "auto") -> FilterResult:
        """Filter a whole series from :meth:`init` (same as :meth:`filter`)."""
        return self._filter(y, None, "all", engine, name="y")

    def filter(self, ys, prior: MultivariateNormal | None = None, *,
               keep: str | Iterable[str] = "all", engine: str = "auto") -> FilterResult:
        """Filter one or a batch of series.

        Parameters
        ----------
        ys : array_like, shape (..., T, m) (or (T,) when m = 1), or a pandas Series/DataFrame
            Observations; a row containing a NaN is missing: predict only (wholly, even if
            its other components are observed: unlike :class:`possibly.KalmanFilter`, which
            uses them). A pandas index is kept for :meth:`FilterResult.to_frame`.
        prior : MultivariateNormal, optional
            Proper possibility function of θ_1 (batch dims broadcast with those of ``ys``);
            default the filter's ``prior``; ``None`` there too: no prior (the robust start
            from ``initial_guess``; see the class docstring).
        keep : "all" or tuple of str
            What to store per step besides ``log_consistency`` and ``discount``, as in
            :meth:`possibly.KalmanFilter.filter`: ``("mean",)``, ``("mean", "variance")``, or
            with ``"covariance"`` and ``"predicted"``; ``"all"`` (default).
        engine : {"auto", "numpy"}
            The nonlinear filters run batched numpy steps only (``"numba"`` is refused).

        Returns
        -------
        FilterResult
        """
        return self._filter(ys, prior, keep, engine)

    def _filter(self, ys, prior: MultivariateNormal | None, keep: str | Iterable[str],
                engine: str, name: str = "ys") -> FilterResult:
        """:meth:`filter` and :meth:`fit` (the warning points at their caller)."""
        keep = _keep_set(keep)
        if engine not in ("auto", "numpy"):
            raise ValueError(f"engine must be 'auto' or 'numpy' (the nonlinear filters have no "
                             f"compiled loop), got {engine!r}")
        index = time_labels(ys, 0)
        y = _observation(ys, self.model.obs_dim, series=name)  # once: the steps skip it
        run = self._run(y, prior, self._starts(prior), stacklevel=5)
        return run.result(keep, self._names(), self.dim, index)

    def _names(self) -> tuple[str, ...]:
        return tuple(f"x{j}" for j in range(self.model.state_dim))

    def _run(self, y: np.ndarray, prior: MultivariateNormal | None, start: bool,
             stacklevel: int = 4) -> _Run:
        """The forward pass over ``y`` (checked, ``(..., T, m)``)."""
        state = self._initial(prior, y.shape[:-2])
        mixture = start_init(state, y.shape[:-2]) if start else None
        run = _Run()
        for y_t in time_first(y, 1):
            if mixture is not None:  # the robust start: the leader's steps (robust_start.py)
                out, info, predicted, state = start_step(mixture, y_t, self._plain_step,
                                                         self.model.obs_dim)
                mixture = out if isinstance(out, KalmanStartState) else None
            else:
                predicted, info, state = self._plain_step(state, y_t)
            run.record(predicted, info, state)
        run.final = state
        warn_if_mostly_discounted(np.stack(run.discount, -1), stacklevel=stacklevel,
                                  advice=_ADVICE)
        return run

    def smooth(self, ys, prior: MultivariateNormal | None = None, *,
               engine: str = "auto") -> SmootherResult:
        """Robust extended or unscented RTS smoother: :meth:`filter`, then the backward pass
        (module docstring), which keeps the forward pass's discounts.

        With the robust start, the smoother of the hypothesis the start settled on (its
        outliers missing), as :meth:`possibly.KalmanFilter.smooth`; those rejected
        observations are reported as observed and discounted: discount 0 and their
        consistency with the smoothed state at their step.

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> from possibly.filters.nonlinear import ExtendedKalmanFilter, NonlinearModel
        >>> model = NonlinearModel(f=lambda x: x, h=lambda x: x ** 3, Q=[[1e-4]], R=[[0.01]])
        >>> ekf = ExtendedKalmanFilter(model, initial_guess=[1.0])      # no prior
        >>> res = ekf.smooth(np.array([1.3, 1.35, 30.0, 1.28]))         # 30 is an outlier
        >>> res.mean[:, 0].round(3)                                     # ∛1.3 = 1.091
        array([1.095, 1.095, 1.094, 1.093])
        >>> res.discount.round(3)
        array([1., 1., 0., 1.])
        """
        if engine not in ("auto", "numpy"):
            raise ValueError(f"engine must be 'auto' or 'numpy' (the nonlinear filters have no "
                             f"compiled loop), got {engine!r}")
        index = time_labels(ys, 0)
        y = _observation(ys, self.model.obs_dim, series="ys")
        masked = y
        if self._starts(prior):
            # looking back, the robust start has settled on one hypothesis: smooth the plain
            # recursion in which its outliers are missing (exactly that hypothesis' filter)
            batch = y.shape[:-2]
            size = int(np.prod(batch))
            init = self._initial(prior, batch)

            def flat(a: np.ndarray | None) -> Any:
                return None if a is None else a.reshape((size,) + a.shape[len(batch):])

            first = NonlinearState(flat(init.mean), flat(init.covariance),
                                   flat(init.precision), init.t)
            masked = start_masked(y.reshape((size,) + y.shape[-2:]), first, self._plain_step,
                                  self.model.obs_dim).reshape(y.shape)
        run = self._run(masked, prior, False)
        s_mean, s_cov = self._backward(run)
        fr = run.result(frozenset(_KEEP_ALL), self._names(), self.dim, index)
        fr = self._report_rejected(fr, y, masked, s_mean, s_cov)
        return SmootherResult(mean=s_mean, covariance=s_cov, filtered=fr)
    def _backward(self, run: _Run) -> tuple[np.ndarray, np.ndarray]:
        """The RTS backward pass over a forward pass: ``(mean, covariance)`` smoothed,
        batch-major. A step in covariance form takes the gain ``G = C P_{t+1|t}⁻¹`` (``C``
        the cross covariance of θ_t and θ_{t+1}: :meth:`_smoother_gain`); one in information
        form the linear smoother's recursion in natural parameters with ``f`` linearised at
        the filtered mean, as the forward pass predicted it."""
        T = len(run.mean)
        s_mean, s_cov = [run.mean[-1]] * T, [run.cov[-1]] * T
        s_prec = run.prec[-1]
        # the gains of the steps in covariance form do not depend on the smoothed states: all
        # at once, time as a leading batch axis of f and h (one call instead of one a step)
        steps = [t for t in range(T - 1) if run.prec[t] is None]
        gains = dict(zip(steps, self._smoother_gain(
            np.stack([run.mean[t] for t in steps]), np.stack([run.cov[t] for t in steps]),
            np.stack([run.p_cov[t + 1] for t in steps])), strict=True)) if steps else {}
        for t in range(T - 2, -1, -1):
            fm, fc, f_prec = run.mean[t], run.cov[t], run.prec[t]
            pm, pc, p_prec = run.p_mean[t + 1], run.p_cov[t + 1], run.p_prec[t + 1]
            if f_prec is None:
                gain = gains[t]
                s_mean[t] = fm + _mv(gain, s_mean[t + 1] - pm)
                s_cov[t] = _sym(fc + gain @ (s_cov[t + 1] - pc) @ np.swapaxes(gain, -1, -2))
                s_prec = None
                continue
            if s_prec is None:  # smoothed t+1 is in covariance form (proper)
                s_prec = _sym(np.linalg.inv(s_cov[t + 1]))
            p_prec = cast(np.ndarray, p_prec)
            # the message of the later observations, smoothed / predicted at t+1, in natural
            # parameters (lam, h); then the sup over the process noise in range(Q)
            lam = s_prec - p_prec
            h = _mv(s_prec, s_mean[t + 1]) - _mv(p_prec, pm)
            if self._G.shape[1]:
                lg = lam @ self._G
                a = self._Qg_inv + self._G.T @ lg
                h = h - _mv(lg, np.linalg.solve(a, (h @ self._G)[..., None])[..., 0])
                lam = lam - lg @ np.linalg.solve(a, np.swapaxes(lg, -1, -2))
            # back through θ_{t+1} ≈ f(m_t) + F (θ_t - m_t), f(m_t) the predicted mean
            fj = self.model.f_jac(fm)
            ft = np.swapaxes(fj, -1, -2)
            prec = _sym(f_prec + ft @ lam @ fj)
            s_mean[t] = fm + _mv(np.linalg.pinv(prec, hermitian=True), _mv(ft, h - _mv(lam, pm)))
            s_cov[t] = _covariance_or_inf(prec)
            s_prec = prec
        ax = run.mean[0].ndim - 1
        return np.stack(s_mean, ax), np.stack(s_cov, ax)

    def _report_rejected(self, fr: FilterResult, ys: np.ndarray, masked: np.ndarray,
                         s_mean: np.ndarray, s_cov: np.ndarray) -> FilterResult:
        """``fr`` with the observations that the robust start rejected (observed in ``ys``,
        missing in ``masked``; a row with a NaN is missing) reported by
        :func:`with_rejected`."""
        rejected = ~np.isnan(ys).any(-1) & np.isnan(masked).any(-1)
        return with_rejected(fr, rejected, s_mean, s_cov, ys,
                             lambda mean, cov, y: self._update(mean, cov, y)[2])

    # -- the steps, per filter ----------------------------------------------------------------
    @abstractmethod
    def _predict(self, mean: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, covariance)`` of the predicted state."""

    @abstractmethod
    def _update(self, mean: np.ndarray, cov: np.ndarray,
                y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(mean, covariance, log_consistency, discount)`` after the robust update with
        ``y`` (shape ``(..., m)``, NaN rows missing)."""

    @abstractmethod
    def _smoother_gain(self, mean: np.ndarray, cov: np.ndarray,
                       p_cov: np.ndarray) -> np.ndarray:
        """The RTS gain ``C P⁻¹`` from the filtered ``(mean, cov)`` of θ_t and the predicted
        covariance ``p_cov`` of θ_{t+1} (``C``: their cross covariance)."""

    # -- the update shared by both filters, from the predictive moments -----------------------
    def _robust_update(self, mean: np.ndarray, cov: np.ndarray, y: np.ndarray,
                       y_hat: np.ndarray, pyy0: np.ndarray,
                       pxy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``pyy0``: predictive covariance of ``h(θ)`` (without R); ``pxy``: cross covariance.

        ``K = ρ Pxy (ρ Pyy0 + R)⁻¹``, ``P' = P - ρ Pxy (ρ Pyy0 + R)⁻¹ Pxyᵀ``: the update with
        ``R / ρ``, continuous down to ρ = 0."""
        R = self.model.R
        missing = np.isnan(y).any(-1)
        v = np.where(missing[..., None], 0.0, y - y_hat)
        s = pyy0 + R
        q = (v * np.linalg.solve(s, v[..., None])[..., 0]).sum(-1)
        log_c = np.minimum(-0.5 * q, 0.0)
        rel = log_c if self._log_c0 is None else relative_log_consistency(log_c, self._log_c0)
        rho = discount(rel, self.dim, self.tau, self.robust, validate=False)
        rho = np.where(missing, 0.0, rho)
        r3 = np.asarray(rho)[..., None, None]
        a = r3 * pyy0 + R
        gain = r3 * np.swapaxes(np.linalg.solve(a, np.swapaxes(pxy, -1, -2)), -1, -2)
        mean = mean + _mv(gain, v)
        cov = _sym(cov - gain @ np.swapaxes(pxy, -1, -2))
        nan = np.where(missing, np.nan, 0.0)
        return mean, cov, log_c + nan, rho + nan


#: Gauss-Newton iterations of an update in information form, at most
_MAX_ITER = 50
#: ... which stop once no component of the mean moves by more than this (relative)
_SETTLED = 1e-12
_KEEP_ALL = _keep_set("all")
#: the mostly-discounted warning's advice (these filters have no learned noise scale)
_ADVICE = ("the model does not fit the data, most likely its noise covariances R and Q (in "
           "other units than the data?): check R and Q in the data's units")


class _Run:
    """The per-step outputs of a forward pass (lists over time) and its final state."""

    def __init__(self) -> None:
        self.mean: list[np.ndarray] = []
        self.cov: list[np.ndarray] = []
        self.prec: list[np.ndarray | None] = []
        self.p_mean: list[np.ndarray] = []
        self.p_cov: list[np.ndarray] = []
        self.p_prec: list[np.ndarray | None] = []
        self.log_c: list[np.ndarray] = []
        self.discount: list[np.ndarray] = []
        self.final: NonlinearState | None = None

    def record(self, predicted: NonlinearState, info: KalmanInfo,
               state: NonlinearState) -> None:
        for st, means, covs, precs in ((predicted, self.p_mean, self.p_cov, self.p_prec),
                                       (state, self.mean, self.cov, self.prec)):
            means.append(st.mean)
            precs.append(st.precision)
            covs.append(cast(np.ndarray, st.covariance) if st.precision is None
                        else _covariance_or_inf(st.precision))
        self.log_c.append(info.log_consistency)
        self.discount.append(info.discount)

    def result(self, keep: frozenset[str], names: tuple[str, ...], dim: float,
               index: Any) -> FilterResult:
        """The :class:`FilterResult` (batch-major) holding what ``keep`` asks for."""
        ax = self.mean[0].ndim - 1
        cov = np.stack(self.cov, ax)
        full, pred = "covariance" in keep, "predicted" in keep
        variance = (np.diagonal(cov, axis1=-2, axis2=-1).copy()
                    if full or "variance" in keep else None)
        mean = np.stack(self.mean, ax)

        def prefix(precs: list[np.ndarray | None]) -> np.ndarray:
            """The precisions of the first steps, those in information form (a prefix)."""
            items = [p for p in precs if p is not None]
            if not items:
                return np.empty(mean.shape[:-2] + (0,) + mean.shape[-1:] * 2)
            return np.stack(items, ax)

        # what FilterResult.precision needs where covariances are inf
        information = (prefix(self.prec), prefix(self.p_prec)) if full and pred else None
        return FilterResult(mean=mean, variance=variance,
                            covariance=cov if full else None,
                            log_consistency=np.stack(self.log_c, -1),
                            discount=np.stack(self.discount, -1),
                            predicted_mean=np.stack(self.p_mean, ax) if pred else None,
                            predicted_covariance=np.stack(self.p_cov, ax) if pred else None,
                            state_names=names, dim=dim, index=index,
                            final=cast(Any, self.final),  # the state of this filter
                            _information=information)


def _observation(y, m: int, series: str | None = None) -> np.ndarray:
    """``y`` checked: one observation ``(..., m)``, or with ``series`` (the argument's name)
    a series ``(..., T, m)`` of at least one step."""
    arr = _check_observation_values(y)
    if m == 1 and (arr.ndim == 1 if series else arr.ndim == 0):
        arr = arr[..., None]
    if arr.shape[-1:] != (m,) or (series and arr.ndim < 2):
        want = f"(..., T, {m})" if series else f"(..., {m})"
        hint = ""
        if series and m == 1 and arr.ndim == 2 and arr.shape[0] == 1:
            hint = ": a row vector? pass y.ravel() for one series of T values"
        raise ValueError(f"y must have shape {want}, got {arr.shape}{hint}")
    if series and arr.shape[-2] < 1:
        raise ValueError(f"{series} must contain at least one time step")
    return arr


class ExtendedKalmanFilter(_RobustNonlinearFilter):
    """Robust extended Kalman filter: ``h`` linearised at the predicted mean.

    Parameters
    ----------
    model : NonlinearModel
    prior : MultivariateNormal, optional
        Proper possibility function of θ_1 (before y_1), batch dimensions broadcast; the
        default of :meth:`init`, :meth:`filter` and streaming :meth:`update`. None (default):
        no prior, the robust start from ``initial_guess`` (module docstring).
    robust : bool
        Discount each observation (default) or run the standard EKF.
    tau : float in (0, 1], optional
        Threshold: observations with discount above ``tau`` are kept whole.
    dim : float > 0, optional
        Effective dimension, the state dimension by default.
    coverage : float in (0, 1) or None
        Relative discount ``ρ = min(1, (c / c₀)^(1/dim))`` as in
        :class:`possibly.KalmanFilter` (default 0.9); None: the paper's ``ρ = c^(1/dim)``.
    robust_start : bool or None
        The maxitive mixture of start hypotheses of :class:`possibly.KalmanFilter`
        (:mod:`possibly.filters.robust_start`). None (default): on when there is no prior,
        off from a proper prior (the plain recursion); True: on from any prior; False: off.
        Robust filter only. ``KalmanFilter``'s default (``robust_start=True``) runs the start
        from any prior: pass ``robust_start=True`` for its behaviour from a proper prior.
    initial_guess : array_like, shape (n,), optional
        Where ``h`` (and ``f``) are first linearised when there is no prior: the mean of the
        directions that no observation has informed yet (default zeros). It does not bias
        the estimate of an informed direction, which is the mode of the observations'
        likelihood reached from it by Gauss-Newton; give a point in the right basin when
        ``h`` is far from linear (module docstring).

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> from possibly.filters.nonlinear import ExtendedKalmanFilter, NonlinearModel
    >>> model = NonlinearModel(f=lambda x: x, h=lambda x: x ** 3, Q=[[1e-4]], R=[[0.01]])
    >>> ekf = ExtendedKalmanFilter(model, prior=ps.MultivariateNormal([1.0], [[100.0]]))
    >>> res = ekf.fit(np.array([1.3, 1.35, 30.0, 1.28]))    # 30 is an outlier
    >>> res.discount.round(3)
    array([1., 1., 0., 1.])
    >>> res.mean[:, 0].round(3)                                # ∛1.3 = 1.091
    array([1.09 , 1.099, 1.099, 1.093])
    >>> start = ExtendedKalmanFilter(model, initial_guess=[1.0]).filter([1.3, 1.35, 30.0])
    >>> start.mean[:, 0].round(3)                              # no prior: y_1 defines θ
    array([1.091, 1.099, 1.099])
    """

    def _predict(self, mean: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        fj = self.model.f_jac(mean)
        cov = _sym(fj @ cov @ np.swapaxes(fj, -1, -2)) + self.model.Q
        return self.model.transition(mean), cov

    def _update(self, mean: np.ndarray, cov: np.ndarray,
                y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        hj = self.model.h_jac(mean)
        pxy = cov @ np.swapaxes(hj, -1, -2)
        return self._robust_update(mean, cov, y, self.model.measurement(mean), hj @ pxy, pxy)

    def _smoother_gain(self, mean: np.ndarray, cov: np.ndarray,
                       p_cov: np.ndarray) -> np.ndarray:
        # C = P Fᵀ with F the Jacobian of the filter's prediction: G = P Fᵀ P_{t+1|t}⁻¹
        fp = self.model.f_jac(mean) @ cov
        return np.swapaxes(np.linalg.solve(p_cov, fp), -1, -2)


class UnscentedKalmanFilter(_RobustNonlinearFilter):
    """Robust unscented Kalman filter (scaled sigma points of van der Merwe).

    The predictive of ``y`` is that of sigma points of the predicted state (drawn afresh after
    the prediction, as filterpy does) passed through ``h``, and the consistency is that of
    this normal predictive. Parameters are those of :class:`ExtendedKalmanFilter` plus
    the sigma-point spread ``alpha``, ``beta``, ``kappa``.

    While some direction of the state is not yet informed (a start from no prior) its
    variance is infinite and sigma points do not exist: those first steps linearise ``f`` and
    ``h`` as the extended filter does (module docstring), and the sigma points take over
    once the state is proper.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> from possibly.filters.nonlinear import NonlinearModel, UnscentedKalmanFilter
    >>> model = NonlinearModel(f=lambda x: x, h=lambda x: x ** 3, Q=[[1e-4]], R=[[0.01]])
    >>> ukf = UnscentedKalmanFilter(model, prior=ps.MultivariateNormal([1.0], [[100.0]]))
    >>> res = ukf.fit(np.array([1.3, 1.35, 30.0, 1.28]))
    >>> res.discount.round(3)
    array([1., 1., 0., 1.])
    >>> res.mean[:, 0].round(3)
    array([1.078, 1.095, 1.095, 1.09 ])
    """

    def __init__(self, model: NonlinearModel, *, prior: MultivariateNormal | None = None,
                 robust: bool = True, tau=None, dim=None, coverage: float | None = COVERAGE,
                 robust_start: bool | None = None, initial_guess=None, alpha: float = 1.0,
                 beta: float = 2.0, kappa: float | None = None) -> None:
        super().__init__(model, prior=prior, robust=robust, tau=tau, dim=dim,
                         coverage=coverage, robust_start=robust_start,
                         initial_guess=initial_guess)
        n = model.state_dim
        self.alpha = float(check_positive("alpha", alpha))
        self.beta = float(as_finite("beta", beta))
        self.kappa = float(3.0 - n if kappa is None else as_finite("kappa", kappa))
        lam = self.alpha ** 2 * (n + self.kappa) - n
        if n + lam <= 0:
            raise ValueError(f"alpha and kappa must give alpha² (n + kappa) > 0, got "
                             f"alpha={self.alpha}, kappa={self.kappa}, n={n}")
        self._lam = lam
        wm = np.full(2 * n + 1, 0.5 / (n + lam))
        wc = wm.copy()
        wm[0] = lam / (n + lam)
        wc[0] = wm[0] + 1.0 - self.alpha ** 2 + self.beta
        self._wm, self._wc = wm, wc

    def _sigma_points(self, mean, cov):
        n = mean.shape[-1]
        try:
            root = np.linalg.cholesky((n + self._lam) * cov)
        except np.linalg.LinAlgError:
            raise ValueError("the state covariance lost positive definiteness; the sigma "
                             "points are undefined") from None
        offs = np.swapaxes(root, -1, -2)  # rows: columns of the Cholesky factor
        return np.concatenate([mean[..., None, :], mean[..., None, :] + offs,
                               mean[..., None, :] - offs], axis=-2)

    def _moments(self, pts):
        mu = np.einsum("k,...ki->...i", self._wm, pts)
        d = pts - mu[..., None, :]
        return mu, d

    def _predict(self, mean: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pts = self.model.transition(self._sigma_points(mean, cov))
        mu, d = self._moments(pts)
        cov = np.einsum("k,...ki,...kj->...ij", self._wc, d, d) + self.model.Q
        return mu, _sym(cov)

    def _update(self, mean: np.ndarray, cov: np.ndarray,
                y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        # fresh points of the predicted covariance, which includes Q (as filterpy does)
        pts = self._sigma_points(mean, cov)
        yp = self.model.measurement(pts)
        y_hat, dy = self._moments(yp)
        dx = pts - mean[..., None, :]
        pyy0 = _sym(np.einsum("k,...ki,...kj->...ij", self._wc, dy, dy))
        pxy = np.einsum("k,...ki,...kj->...ij", self._wc, dx, dy)
        return self._robust_update(mean, cov, y, y_hat, pyy0, pxy)

    def _smoother_gain(self, mean: np.ndarray, cov: np.ndarray,
                       p_cov: np.ndarray) -> np.ndarray:
        # the unscented RTS gain: C = Σ w_k (X_k - m)(f(X_k) - m⁻)ᵀ over sigma points of the
        # filtered state, the same points the prediction used; G = C P_{t+1|t}⁻¹
        pts = self._sigma_points(mean, cov)
        _, d = self._moments(self.model.transition(pts))
        cross = np.einsum("k,...ki,...kj->...ij", self._wc, pts - mean[..., None, :], d)
        return np.swapaxes(np.linalg.solve(p_cov, np.swapaxes(cross, -1, -2)), -1, -2)
