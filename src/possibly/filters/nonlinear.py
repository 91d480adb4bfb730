"""Robust extended and unscented Kalman filters for nonlinear state-space models.

Model: ``θ_t = f(θ_{t-1}) + u_t``, ``u_t ~ N(0, Q)`` and ``y_t = h(θ_t) + v_t``,
``v_t ~ N(0, R)``. Both filters approximate the predicted possibility function of ``y_t`` by a
normal ``N̄(y; ŷ, S)`` (the extended filter by linearising ``h`` at the predicted mean,
``S = H P Hᵀ + R``; the unscented filter by sigma points, ``S = P_yy + R``), and assess each
observation with the possibilistic consistency of that predictive (docs/math.md §2, the Kalman
instance): ``log c = -½ vᵀ S⁻¹ v`` with ``v = y - ŷ``. The robust update is the Kalman update
with ``R`` inflated to ``R / ρ``, ``ρ = min(1, (c / c₀)^(1/dim))`` relative to the
consistency ``c₀`` reached by a fraction ``coverage`` of inliers (``coverage=None``: the
paper's ``ρ = c^(1/dim)``; :func:`possibly.discount`, threshold τ optional), written so that
``ρ → 0`` is a pure prediction. With ``robust=False`` both are the
textbook EKF and UKF (checked against filterpy in the tests).

The model functions act on the last axis and must accept leading batch axes
(``f(x)`` with ``x`` of shape ``(..., n)`` returns ``(..., n)``, ``h(x)`` returns ``(..., m)``):
write ``x[..., 0]``, not ``x[0]``. Jacobians are optional: central finite differences are used
when they are not given. Unlike the linear :class:`possibly.KalmanFilter`, these filters need a
proper prior (the linearisation point must exist).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from possibly.families.multivariate_normal import MultivariateNormal
from possibly.filters._common import (
    COVERAGE,
    _check_coverage,
    _check_dim_tau,
    _check_observation_values,
    _mv,
    _reference_table,
    _sym,
    state_dataset,
    state_frame,
)
from possibly.filters.result import discounted_fraction, warn_if_mostly_discounted
from possibly.frames import time_labels
from possibly.inference import discount, relative_log_consistency
from possibly.sequential import Info, SequentialEstimator, time_first
from possibly.validation import as_finite, check_positive, check_psd

__all__ = [
    "ExtendedKalmanFilter",
    "NonlinearFilterResult",
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


class NonlinearState(tuple):
    """``(mean, covariance, started)``: the possibility function ``N̄(θ; mean, covariance⁻¹)``
    of the current state; ``started`` is False before the first observation (the prior is
    that of θ_1, so the first step does not predict)."""

    __slots__ = ()

    def __new__(cls, mean, covariance, started: bool):
        return super().__new__(cls, (mean, covariance, started))

    @property
    def mean(self) -> np.ndarray:
        return self[0]

    @property
    def covariance(self) -> np.ndarray:
        return self[1]

    @property
    def started(self) -> bool:
        return self[2]

    def __reduce__(self):
        return (NonlinearState, tuple(self))


@dataclass(frozen=True)
class NonlinearFilterResult:
    """Output of ``fit``: filtered E* and V* of θ_t, and what each observation did.

    Attributes
    ----------
    mean : ndarray, shape (..., T, n)
    covariance : ndarray, shape (..., T, n, n)
    log_consistency, discount : ndarray, shape (..., T)
        NaN at missing observations.
    state_names : tuple of str
        Names of the state components (``x0, x1, ...`` when empty).
    index : pandas.Index or None
        The index of a pandas input (kept by :meth:`to_frame` and :meth:`to_xarray`).
    """

    mean: np.ndarray
    covariance: np.ndarray
    log_consistency: np.ndarray
    discount: np.ndarray
    state_names: tuple[str, ...] = field(default=(), kw_only=True)
    index: Any = field(default=None, repr=False, kw_only=True)

    @property
    def consistency(self) -> np.ndarray:
        return np.exp(self.log_consistency)

    @property
    def variance(self) -> np.ndarray:
        """Diagonal of ``covariance``, shape ``(..., T, n)``."""
        return np.diagonal(self.covariance, axis1=-2, axis2=-1)

    def _names(self) -> tuple[str, ...]:
        return self.state_names or tuple(f"x{j}" for j in range(self.mean.shape[-1]))

    def _extra(self) -> dict[str, np.ndarray]:
        """Further per-step arrays ``(..., T)`` of a subclass, for the tables."""
        return {}

    def to_frame(self) -> Any:
        """The result as a pandas DataFrame, indexed like a pandas input.

        Columns as in :meth:`possibly.filters.kalman.FilterResult.to_frame`: the filtered
        mean of each state component, ``<name>_sd``, ``log_consistency``, ``consistency``,
        ``discount`` (and ``noise_scale`` for a learned noise scale).

        Examples
        --------
        >>> import pandas as pd, possibly as ps
        >>> from possibly.filters.nonlinear import ExtendedKalmanFilter, NonlinearModel
        >>> model = NonlinearModel(f=lambda x: x, h=lambda x: x ** 3, Q=[[1e-4]], R=[[0.01]])
        >>> ekf = ExtendedKalmanFilter(model, ps.MultivariateNormal([1.0], [[100.0]]))
        >>> y = pd.Series([1.3, 1.35, 30.0], index=pd.date_range("2024-01-01", periods=3))
        >>> ekf.fit(y).to_frame()[["x0", "discount"]].round(3)
                       x0  discount
        2024-01-01  1.090       1.0
        2024-01-02  1.099       1.0
        2024-01-03  1.099       0.0
        """
        return state_frame(self.mean, self.variance, self.log_consistency, self.discount,
                           self._names(), self.index, self._extra())

    def to_xarray(self) -> Any:
        """The result as an xarray Dataset (the layout of
        :meth:`possibly.filters.kalman.FilterResult.to_xarray`, plus ``noise_scale`` for a
        learned noise scale).

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> from possibly.filters.nonlinear import UnscentedKalmanFilter, NonlinearModel
        >>> model = NonlinearModel(f=lambda x: x, h=lambda x: x, Q=[[0.01]], R=[[1.0]])
        >>> ukf = UnscentedKalmanFilter(model, ps.MultivariateNormal([0.0], [[10.0]]))
        >>> dict(ukf.fit(np.zeros((3, 5, 1))).to_xarray()["mean"].sizes)   # 3 series
        {'series_0': 3, 'time': 5, 'state': 1}
        """
        return state_dataset(self.mean, self.variance, self.log_consistency, self.discount,
                             self._names(), self.index, self._extra())

    @property
    def discounted_fraction(self) -> np.ndarray:
        """Per series, the fraction of observed steps discounted below 0.1 (see
        :class:`~possibly.filters.kalman.MostlyDiscountedWarning`)."""
        return discounted_fraction(self.discount)


class _RobustNonlinearFilter(SequentialEstimator, ABC):
    """Shared parts: arguments, the robust gain, the protocol (``init``/``step``/``fit``).

    Subclasses implement the two steps :meth:`_predict` and :meth:`_update`."""

    def __init__(self, model: NonlinearModel, prior: MultivariateNormal, *,
                 robust: bool = True, tau=None, dim=None,
                 coverage: float | None = COVERAGE) -> None:
        if not isinstance(model, NonlinearModel):
            raise ValueError(f"model must be a possibly.filters.nonlinear.NonlinearModel, got "
                             f"{type(model).__name__}")
        if not isinstance(prior, MultivariateNormal):
            raise ValueError(f"prior must be a possibly.MultivariateNormal (a proper prior: the "
                             f"filter linearises at its mean), got {type(prior).__name__}")
        n = model.state_dim
        if prior.dim != n:
            raise ValueError(f"prior must have dimension {n} (the state), got {prior.dim}")
        prec = np.asarray(prior.precision, dtype=float)
        eig = np.linalg.eigvalsh(prec)
        if not (eig[..., 0] > 1e-12 * np.abs(eig[..., -1])).all():
            raise ValueError("prior must be proper (positive-definite precision) for a "
                             "nonlinear filter")
        self.model = model
        self._mean0 = np.asarray(prior.mean, dtype=float)
        self._cov0 = _sym(np.linalg.inv(prec))
        self.robust = bool(robust)
        if tau is not None and not self.robust:
            raise ValueError("tau only applies to the robust filter (robust=True)")
        self.dim, self.tau = _check_dim_tau(dim, tau, n)
        self.coverage = _check_coverage(coverage) if self.robust else None
        table = _reference_table(self.coverage, model.obs_dim)
        self._log_c0 = None if table is None else float(table[model.obs_dim])

    def __repr__(self) -> str:
        kind = "robust" if self.robust else "standard"
        return (f"{type(self).__name__}({kind}, n={self.model.state_dim}, "
                f"m={self.model.obs_dim}, dim={self.dim:g})")

    # -- protocol ---------------------------------------------------------------------------
    def init(self, batch_shape: tuple[int, ...] = ()) -> NonlinearState:
        n = self.model.state_dim
        batch_shape = tuple(batch_shape)
        mean = np.broadcast_to(self._mean0, batch_shape + (n,)).copy()
        cov = np.broadcast_to(self._cov0, batch_shape + (n, n)).copy()
        return NonlinearState(mean, cov, False)

    def step(self, state: NonlinearState, y) -> tuple[NonlinearState, Info]:
        """Predict (except before the first observation), then update with ``y`` (NaN:
        predict only)."""
        if not isinstance(state, NonlinearState):
            raise ValueError(f"state must be a NonlinearState, got {type(state).__name__}")
        return self._step(state, _observation(y, self.model.obs_dim))

    def _step(self, state: NonlinearState, y: np.ndarray) -> tuple[NonlinearState, Info]:
        """:meth:`step` without the checks: ``y`` already a checked array ``(..., m)``."""
        mean, cov = state.mean, state.covariance
        if state.started:
            mean, cov = self._predict(mean, cov)
        mean, cov, log_c, rho = self._update(mean, cov, y)
        return NonlinearState(mean, cov, True), Info(log_c, rho)

    def fit(self, y) -> NonlinearFilterResult:
        """Filter one or a batch of series ``(..., T, m)`` (or ``(T,)`` when m = 1)."""
        index = time_labels(y, 0)
        y = _observation(y, self.model.obs_dim, series=True)  # once: the steps skip it
        state = self.init(y.shape[:-2])
        means, covs, lcs, discs = [], [], [], []
        for y_t in time_first(y, 1):
            state, info = self._step(state, y_t)
            means.append(state.mean)
            covs.append(state.covariance)
            lcs.append(info.log_consistency)
            discs.append(info.discount)
        ax = y.ndim - 2
        warn_if_mostly_discounted(np.stack(discs, -1))
        return NonlinearFilterResult(np.stack(means, ax), np.stack(covs, ax),
                                     np.stack(lcs, -1), np.stack(discs, -1), index=index)

    # -- the two steps, per filter --------------------------------------------------------------
    @abstractmethod
    def _predict(self, mean: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, covariance)`` of the predicted state."""

    @abstractmethod
    def _update(self, mean: np.ndarray, cov: np.ndarray,
                y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(mean, covariance, log_consistency, discount)`` after the robust update with
        ``y`` (shape ``(..., m)``, NaN rows missing)."""

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


def _observation(y, m: int, series: bool = False) -> np.ndarray:
    arr = _check_observation_values(y)
    if m == 1 and (arr.ndim == 1 if series else arr.ndim == 0):
        arr = arr[..., None]
    if arr.shape[-1:] != (m,) or (series and arr.ndim < 2):
        want = f"(..., T, {m})" if series else f"(..., {m})"
        hint = ""
        if series and m == 1 and arr.ndim == 2 and arr.shape[0] == 1:
            hint = ": a row vector? pass y.ravel() for one series of T values"
        raise ValueError(f"y must have shape {want}, got {arr.shape}{hint}")
    return arr


class ExtendedKalmanFilter(_RobustNonlinearFilter):
    """Robust extended Kalman filter: ``h`` linearised at the predicted mean.

    Parameters
    ----------
    model : NonlinearModel
    prior : MultivariateNormal
        Proper possibility function of θ_1 (before y_1); batch dimensions broadcast.
    robust : bool
        Discount each observation (default) or run the standard EKF.
    tau : float in (0, 1], optional
        Threshold: observations with discount above ``tau`` are kept whole.
    dim : float > 0, optional
        Effective dimension, the state dimension by default.
    coverage : float in (0, 1) or None
        Relative discount ``ρ = min(1, (c / c₀)^(1/dim))`` as in
        :class:`possibly.KalmanFilter` (default 0.9); None: the paper's ``ρ = c^(1/dim)``.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> from possibly.filters.nonlinear import ExtendedKalmanFilter, NonlinearModel
    >>> model = NonlinearModel(f=lambda x: x, h=lambda x: x ** 3, Q=[[1e-4]], R=[[0.01]])
    >>> ekf = ExtendedKalmanFilter(model, ps.MultivariateNormal([1.0], [[100.0]]))
    >>> res = ekf.fit(np.array([1.3, 1.35, 30.0, 1.28]))    # 30 is an outlier
    >>> res.discount.round(3)
    array([1., 1., 0., 1.])
    >>> res.mean[:, 0].round(3)                                # ∛1.3 = 1.091
    array([1.09 , 1.099, 1.099, 1.093])
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


class UnscentedKalmanFilter(_RobustNonlinearFilter):
    """Robust unscented Kalman filter (scaled sigma points of van der Merwe).

    The predictive of ``y`` is that of sigma points of the predicted state (drawn afresh after
    the prediction, as filterpy does) passed through ``h``, and the consistency is that of
    this normal predictive. Parameters are those of :class:`ExtendedKalmanFilter` plus
    the sigma-point spread ``alpha``, ``beta``, ``kappa``.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> from possibly.filters.nonlinear import NonlinearModel, UnscentedKalmanFilter
    >>> model = NonlinearModel(f=lambda x: x, h=lambda x: x ** 3, Q=[[1e-4]], R=[[0.01]])
    >>> ukf = UnscentedKalmanFilter(model, ps.MultivariateNormal([1.0], [[100.0]]))
    >>> res = ukf.fit(np.array([1.3, 1.35, 30.0, 1.28]))
    >>> res.discount.round(3)
    array([1., 1., 0., 1.])
    >>> res.mean[:, 0].round(3)
    array([1.078, 1.095, 1.095, 1.09 ])
    """

    def __init__(self, model: NonlinearModel, prior: MultivariateNormal, *, robust=True,
                 tau=None, dim=None, coverage: float | None = COVERAGE, alpha: float = 1.0,
                 beta: float = 2.0, kappa: float | None = None) -> None:
        super().__init__(model, prior, robust=robust, tau=tau, dim=dim, coverage=coverage)
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
