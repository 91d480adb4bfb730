"""Possibilistic and robust Kalman filtering and smoothing (paper §5.2, MATH.md §2).

With ``θ_t = F θ_{t-1} + u_t``, ``u_t ~ N(0, Q)`` and ``y_t = H θ_t + v_t``, ``v_t ~ N(0, R)``,
the possibilistic filter has the Kalman recursion (sup replaces the integral, and for normal
possibility functions both give the same quadratic forms). The information in one
observation is ``L(θ | y) = N̄(θ; θ_ls, Hᵀ R⁻¹ H)`` and its consistency with the predicted
``N̄(θ; μ, Σ⁻¹)`` is

    log c = -½ vᵀ S⁻¹ v + ½ r,   v = y - H μ,   S = H Σ Hᵀ + R,

where ``r = min_θ (y - Hθ)ᵀ R⁻¹ (y - Hθ)`` is zero whenever ``H`` has full row rank (the usual
case). ``L^ρ`` is the same likelihood with ``R`` replaced by ``R / ρ``, so the robust filter is
the Kalman filter with the observation noise inflated by ``1 / ρ`` at each step, where
``ρ = γ = c^(1/dim)`` (or ``ρ = 1`` above a threshold ``τ``). The gain is written
``K = ρ Σ Hᵀ (ρ H Σ Hᵀ + R)⁻¹`` so that ``ρ → 0`` is continuous (``K = 0``: predict only).

The uninformative initial state (the possibility function 1) is exact: while some direction of
the state is not yet informed the filter runs in information form (precision ``Y`` may be
singular; the prediction ``Y' = M - M G (Q_g⁻¹ + Gᵀ M G)⁻¹ Gᵀ M``, ``M = F⁻ᵀ Y F⁻¹``, uses a
factorisation ``Q = G Q_g Gᵀ`` and so handles a singular, e.g. rank-one, ``Q``), and it switches
to covariance form once every precision in the batch is well conditioned. Variances of
directions not yet informed are reported as ``inf``.

Choice of ``dim``: the default is the state dimension ``n`` (the paper's rule: the number of
free scalar parameters of the possibility function being updated). ``dim=1`` uses ``γ = c``,
which discounts every observation more: inliers lose more information (for a scalar inlier,
``vᵀS⁻¹v ~ χ²₁`` and the median ``γ`` drops from 0.89 to 0.80 with ``n = 2``) and outliers are
cut harder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from possibly.families.multivariate_normal import MultivariateNormal
from possibly.inference import discount
from possibly.validation import as_finite, check_positive, check_psd, check_unit_interval

__all__ = [
    "FilterResult",
    "KalmanFilter",
    "KalmanState",
    "SmootherResult",
    "UpdateInfo",
    "predict",
    "update",
]

#: a precision whose condition number is below this is inverted into a covariance
_MAX_COND = 1e9


class KalmanState(NamedTuple):
    """A batch of normal possibility functions ``N̄(θ; mean, ·)`` of the state.

    Exactly one of ``covariance`` and ``precision`` is set: the covariance form is used once
    every direction of the state is informed, the information form (precision, possibly
    singular) before that.

    Attributes
    ----------
    mean : ndarray, shape (..., n)
    covariance : ndarray, shape (..., n, n), or None
    precision : ndarray, shape (..., n, n), or None
    """

    mean: np.ndarray
    covariance: np.ndarray | None = None
    precision: np.ndarray | None = None

    @classmethod
    def uninformative(cls, n: int, batch_shape: tuple[int, ...] = ()) -> KalmanState:
        """The possibility function 1 on ``R^n`` (precision 0)."""
        return cls(np.zeros(batch_shape + (n,)), None, np.zeros(batch_shape + (n, n)))

    @classmethod
    def from_possibility(cls, f: MultivariateNormal) -> KalmanState:
        """Covariance form if every precision is well conditioned, information form otherwise."""
        if not isinstance(f, MultivariateNormal):
            raise ValueError(f"prior must be a possibly.MultivariateNormal (or None for the "
                             f"uninformative prior), got {type(f).__name__}")
        return _maybe_covariance_form(cls(f.mean, None, f.precision))

    @property
    def information_form(self) -> bool:
        return self.precision is not None

    def to_possibility(self) -> MultivariateNormal:
        """The state as a :class:`possibly.MultivariateNormal` (mean, precision)."""
        prec = self.precision if self.information_form else np.linalg.inv(self.covariance)
        return MultivariateNormal(self.mean, _sym(prec))


class UpdateInfo(NamedTuple):
    """What an update learnt about its observation (NaN where the observation is missing).

    Attributes
    ----------
    log_consistency : ndarray
        ``log c`` (kept in log space: gross outliers underflow ``c``).
    gamma : ndarray
        ``c ** (1 / dim)``.
    discount : ndarray
        The exponent ρ applied to the likelihood (``gamma``, 1 above the threshold, or 1 for
        the standard filter).
    """

    log_consistency: np.ndarray
    gamma: np.ndarray
    discount: np.ndarray

    @property
    def consistency(self) -> np.ndarray:
        return np.exp(self.log_consistency)


# -- prepared model pieces --------------------------------------------------------------------
@dataclass(frozen=True)
class _Transition:
    F: np.ndarray
    Ft: np.ndarray
    Q: np.ndarray
    F_inv: np.ndarray | None  # None when F is singular (information-form predict impossible)
    G: np.ndarray  # Q = G Q_g G', G with orthonormal columns spanning range(Q)
    Qg_inv: np.ndarray


@dataclass(frozen=True)
class _Observation:
    H: np.ndarray
    Ht: np.ndarray
    R: np.ndarray
    W: np.ndarray  # R^-1
    resid: np.ndarray | None  # y' resid y = min_θ (y - Hθ)' W (y - Hθ); None if H is onto


def _prepare_transition(F, Q) -> _Transition:
    F = as_finite("F", F)
    if F.ndim != 2 or F.shape[0] != F.shape[1]:
        raise ValueError(f"F must be a square (n, n) matrix, got shape {F.shape}")
    n = F.shape[0]
    Q = check_psd("Q", Q)
    if Q.shape != (n, n):
        raise ValueError(f"Q must have shape ({n}, {n}) to match F, got {Q.shape}")
    lam, vec = np.linalg.eigh(Q)
    keep = lam > 1e-12 * max(lam.max(initial=0.0), 1e-300)
    G = vec[:, keep]
    f_inv = np.linalg.inv(F) if n and np.linalg.cond(F) < 1e12 else None
    return _Transition(F=F, Ft=F.T.copy(), Q=Q, F_inv=f_inv, G=G, Qg_inv=np.diag(1.0 / lam[keep]))


def _residual_matrix(H: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``W - W H (Hᵀ W H)⁺ Hᵀ W``: the weighted least-squares residual quadratic form."""
    wh = W @ H
    return W - wh @ np.linalg.pinv(np.swapaxes(H, -1, -2) @ wh, hermitian=True) @ \
        np.swapaxes(wh, -1, -2)


def _prepare_observation(H, R, n: int) -> _Observation:
    H = as_finite("H", H)
    if H.ndim != 2 or H.shape[1] != n:
        raise ValueError(f"H must have shape (m, {n}) to match F, got {H.shape}")
    m = H.shape[0]
    if m < 1:
        raise ValueError("H must have at least one row")
    R = check_psd("R", R, definite=True)
    if R.shape != (m, m):
        raise ValueError(f"R must have shape ({m}, {m}) to match H, got {R.shape}")
    W = np.linalg.inv(R)
    onto = np.linalg.matrix_rank(H) == m
    resid = None if onto else _sym(_residual_matrix(H, W))
    return _Observation(H=H, Ht=H.T.copy(), R=R, W=_sym(W), resid=resid)


# -- small helpers ----------------------------------------------------------------------------
def _sym(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def _inv(a: np.ndarray) -> np.ndarray:
    # scalar observations (the common case) need no LAPACK call
    return 1.0 / a if a.shape[-1] == 1 else np.linalg.inv(a)


def _mv(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    return (a @ x[..., None])[..., 0]


def _well_conditioned(prec: np.ndarray) -> np.ndarray:
    if prec.shape[-1] == 0:
        return np.ones(prec.shape[:-2], dtype=bool)
    eig = np.linalg.eigvalsh(prec)
    return eig[..., 0] > eig[..., -1] / _MAX_COND


def _maybe_covariance_form(state: KalmanState) -> KalmanState:
    if state.information_form and _well_conditioned(state.precision).all():
        return KalmanState(state.mean, _sym(np.linalg.inv(state.precision)), None)
    return state


def _covariance_or_inf(prec: np.ndarray) -> np.ndarray:
    """Inverse of each precision, or all ``inf`` where it is singular (uninformed directions)."""
    ok = _well_conditioned(prec)
    n = prec.shape[-1]
    safe = np.where(ok[..., None, None], prec, np.eye(n))
    return np.where(ok[..., None, None], _sym(np.linalg.inv(safe)), np.inf)


# -- the two step kernels (no validation: callers validate once) ------------------------------
def _right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for a batch ``a`` (..., k, n) and one matrix ``b`` (n, p), as a single gemm
    (numpy's batched matmul loops over tiny matrices, which dominates for n = 2)."""
    return (a.reshape(-1, a.shape[-1]) @ b).reshape(a.shape[:-1] + b.shape[-1:])


def _predict(state: KalmanState, tr: _Transition) -> KalmanState:
    mean = state.mean @ tr.Ft
    if not state.information_form:
        pf = _right(state.covariance, tr.Ft)  # P Fᵀ; F P Fᵀ = (P Fᵀ)ᵀ Fᵀ as P is symmetric
        return KalmanState(mean, _sym(_right(np.swapaxes(pf, -1, -2), tr.Ft)) + tr.Q, None)
    if tr.F_inv is None:
        raise ValueError("F must be invertible to predict a state that is not yet fully "
                         "informed (uninformative or singular-precision prior)")
    m = tr.F_inv.T @ state.precision @ tr.F_inv
    if tr.G.shape[1]:
        mg = m @ tr.G
        a = tr.Qg_inv + tr.G.T @ mg
        m = m - mg @ np.linalg.solve(a, np.swapaxes(mg, -1, -2))
    return KalmanState(mean, None, _sym(m))


def _observation_at(y: np.ndarray, ob: _Observation):
    """``(y0, H, R, W, resid)`` for a step whose ``y`` may contain NaN.

    A missing component ``j`` is decoupled exactly: ``y_j = 0``, ``H_j = 0``, its row and
    column of ``R`` replaced by those of the identity. The likelihood of the completed vector
    is then that of the observed components times a constant, so the update and the
    consistency are those of the observed part (and a fully missing row is a pure predict).
    """
    obs = ~np.isnan(y)
    if obs.all():
        return y, ob.H, ob.Ht, ob.R, ob.W, ob.resid
    m = y.shape[-1]
    y0 = np.where(obs, y, 0.0)
    H = np.where(obs[..., None], ob.H, 0.0)
    both = obs[..., :, None] & obs[..., None, :]
    R = np.where(both, ob.R, 0.0) + np.eye(m) * (~obs)[..., None, :]
    W = _sym(np.linalg.inv(R))
    resid = None if ob.resid is None else _sym(_residual_matrix(H, W))
    return y0, H, np.swapaxes(H, -1, -2), R, W, resid


def _discount(log_c: np.ndarray, robust: bool, dim: float, tau: float | None):
    return (discount(log_c, dim, validate=False),
            discount(log_c, dim, tau, robust, validate=False))


def _update_scalar(state: KalmanState, y: np.ndarray, ob: _Observation, robust: bool,
                   dim: float, tau: float | None) -> tuple[KalmanState, UpdateInfo]:
    """Covariance-form update for one complete scalar observation (m = 1, H ≠ 0): the same
    formulas as :func:`_update` without any matrix inverse."""
    P = state.covariance
    h = ob.H[0]
    r = ob.R[0, 0]
    ph = _right(P, h[:, None])[..., 0]  # P hᵀ
    hph = ph @ h
    v = y[..., 0] - state.mean @ h
    s0 = hph + r
    log_c = np.minimum(-0.5 * v * v / s0, 0.0)
    gamma, rho = _discount(log_c, robust, dim, tau)
    k = ((rho / (rho * hph + r)) if robust else 1.0 / s0)[..., None] * ph
    mean = state.mean + k * v[..., None]
    cov = P - k[..., :, None] * ph[..., None, :]  # k ∝ P hᵀ: symmetric as it stands
    return KalmanState(mean, cov, None), UpdateInfo(log_c, gamma, rho)


def _update(state: KalmanState, y: np.ndarray, ob: _Observation, robust: bool, dim: float,
            tau: float | None) -> tuple[KalmanState, UpdateInfo]:
    missing = np.isnan(y).all(axis=-1)
    if ob.H.shape[0] == 1 and ob.resid is None and not state.information_form \
            and not missing.any():
        return _update_scalar(state, y, ob, robust, dim, tau)
    y0, H, Ht, R, W, resid = _observation_at(y, ob)
    v = y0 - _mv(H, state.mean)
    if not state.information_form:
        P = state.covariance
        hp = H @ P
        s0 = hp @ Ht + R
        s_inv = _inv(s0)
        q = (v[..., :, None] * s_inv * v[..., None, :]).sum(axis=(-2, -1))
    else:
        Y = state.precision
        j = Ht @ W @ H
        b = _mv(Ht @ W, v)
        q = (v * _mv(W, v)).sum(-1) - (b * _mv(np.linalg.pinv(Y + j, hermitian=True), b)).sum(-1)
    log_c = -0.5 * q
    if resid is not None:
        log_c = log_c + 0.5 * (y0 * _mv(resid, y0)).sum(-1)
    log_c = np.minimum(log_c, 0.0)
    gamma, rho = _discount(log_c, robust, dim, tau)

    if not state.information_form:
        if robust:
            # K = ρ P Hᵀ (ρ H P Hᵀ + R)⁻¹: continuous down to ρ = 0
            r3 = rho[..., None, None]
            gain = r3 * np.swapaxes(hp, -1, -2) @ _inv(r3 * (s0 - R) + R)
        else:
            gain = np.swapaxes(hp, -1, -2) @ s_inv
        mean = state.mean + _mv(gain, v)
        new = KalmanState(mean, _sym(P - gain @ hp), None)
    else:
        prec = _sym(Y + rho[..., None, None] * j)
        step = _mv(np.linalg.pinv(prec, hermitian=True), rho[..., None] * b)
        new = _maybe_covariance_form(KalmanState(state.mean + step, None, prec))
    nan = np.where(missing, np.nan, 0.0)
    return new, UpdateInfo(log_c + nan, gamma + nan, rho + nan)


# -- public pure step functions ---------------------------------------------------------------
def _check_state(state: KalmanState, n: int) -> None:
    if not isinstance(state, KalmanState):
        raise ValueError(f"state must be a KalmanState, got {type(state).__name__}")
    if state.mean.shape[-1:] != (n,):
        raise ValueError(f"state.mean must have shape (..., {n}), got {state.mean.shape}")


def _check_dim_tau(dim, tau, n: int) -> tuple[float, float | None]:
    dim = float(n) if dim is None else float(check_positive("dim", dim))
    if tau is not None:
        tau = float(check_unit_interval("tau", tau, low_open=True, high_open=False))
    return dim, tau


def predict(state: KalmanState, F, Q) -> KalmanState:
    """Predict step: ``N̄(θ; μ, Σ) -> N̄(θ; F μ, F Σ Fᵀ + Q)`` (exact in information form too).

    Parameters
    ----------
    state : KalmanState
    F : array_like, shape (n, n)
    Q : array_like, shape (n, n), symmetric positive semi-definite (may be singular)

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> from possibly.kalman import KalmanState, predict
    >>> F, Q, H, R = ps.models.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    >>> s = predict(KalmanState(np.zeros(2), np.eye(2)), F, Q)
    >>> s.mean, s.covariance.round(6)
    (array([0., 0.]), array([[2.000625, 1.00125 ],
           [1.00125 , 1.0025  ]]))
    """
    tr = _prepare_transition(F, Q)
    _check_state(state, tr.F.shape[0])
    return _predict(state, tr)


def update(state: KalmanState, y, H, R, *, robust: bool = True, dim=None,
           tau=None) -> tuple[KalmanState, UpdateInfo]:
    """Update step with one observation ``y ~ N(H θ, R)``, robust by default.

    Parameters
    ----------
    state : KalmanState
        The predicted state.
    y : array_like, shape (..., m)
        Observation; NaN components are missing (all NaN: the state is returned unchanged).
    H : array_like, shape (m, n)
    R : array_like, shape (m, m), symmetric positive definite
    robust : bool
        Raise the likelihood to ``ρ = c ** (1 / dim)`` (default) or use the standard update.
    dim : float > 0, optional
        Effective dimension in ``γ = c ** (1 / dim)``; defaults to the state dimension ``n``.
    tau : float in (0, 1], optional
        Threshold: observations with ``γ > tau`` are kept whole.

    Returns
    -------
    state : KalmanState
    info : UpdateInfo

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.kalman import KalmanState, update
    >>> prior = KalmanState(np.zeros(1), np.eye(1))
    >>> post, info = update(prior, [2.0], H=[[1.0]], R=[[1.0]])
    >>> float(info.consistency), float(info.discount)             # c = exp(-½ 2² / 2)
    (0.36787944117144233, 0.36787944117144233)
    >>> post.mean, post.covariance                              # R inflated to R / c
    (array([0.53788284]), array([[0.73105858]]))
    """
    if not isinstance(state, KalmanState):
        raise ValueError(f"state must be a KalmanState, got {type(state).__name__}")
    n = state.mean.shape[-1]
    ob = _prepare_observation(H, R, n)
    y = _check_observation_values(y)
    if y.shape[-1:] != (ob.H.shape[0],):
        raise ValueError(f"y must have shape (..., {ob.H.shape[0]}), got {y.shape}")
    dim, tau = _check_dim_tau(dim, tau, n)
    return _update(state, y, ob, robust, dim, tau)


def _check_observation_values(y) -> np.ndarray:
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"observations must be numeric (NaN for missing), got {y!r}") from exc
    if np.isinf(arr).any():
        raise ValueError("observations must be finite or NaN (missing), got an infinite value")
    return arr


# -- results ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class FilterResult:
    """Output of :meth:`KalmanFilter.filter`: one entry per time step ``t`` (axis ``-2``/``-3``).

    Attributes
    ----------
    mean : ndarray, shape (..., T, n)
        E* of the filtered possibility function of θ_t given y_1..y_t.
    covariance : ndarray, shape (..., T, n, n)
        V* (all ``inf`` while some direction is not yet informed).
    log_consistency, gamma, discount : ndarray, shape (..., T)
        As in :class:`UpdateInfo`; NaN at missing observations.
    predicted_mean : ndarray, shape (..., T, n)
        E* of θ_t given y_1..y_{t-1} (the prior at t = 0).
    predicted_covariance : ndarray, shape (..., T, n, n)
    """

    mean: np.ndarray
    covariance: np.ndarray
    log_consistency: np.ndarray
    gamma: np.ndarray
    discount: np.ndarray
    predicted_mean: np.ndarray
    predicted_covariance: np.ndarray
    #: exact precisions of the first steps, run in information form, shape (..., k, n, n)
    filtered_precision_prefix: np.ndarray
    predicted_precision_prefix: np.ndarray

    @property
    def consistency(self) -> np.ndarray:
        """``c = exp(log_consistency)`` in [0, 1] (NaN at missing observations)."""
        return np.exp(self.log_consistency)

    @property
    def precision(self) -> np.ndarray:
        """Precision of each filtered state (finite also before every direction is informed)."""
        return _precision(self.covariance, self.filtered_precision_prefix)

    @property
    def predicted_precision(self) -> np.ndarray:
        return _precision(self.predicted_covariance, self.predicted_precision_prefix)


def _precision(cov: np.ndarray, prefix: np.ndarray) -> np.ndarray:
    k = prefix.shape[-3]
    rest = _sym(np.linalg.inv(cov[..., k:, :, :]))
    return np.concatenate([prefix, rest], axis=-3)


@dataclass(frozen=True)
class SmootherResult:
    """Output of :meth:`KalmanFilter.smooth`.

    Attributes
    ----------
    mean : ndarray, shape (..., T, n)
        E* of θ_t given all observations (the max-marginal mode).
    covariance : ndarray, shape (..., T, n, n)
    filtered : FilterResult
        The forward pass, whose discounts the smoother keeps.
    """

    mean: np.ndarray
    covariance: np.ndarray
    filtered: FilterResult

    @property
    def consistency(self) -> np.ndarray:
        return self.filtered.consistency

    @property
    def discount(self) -> np.ndarray:
        return self.filtered.discount


# -- the filter -------------------------------------------------------------------------------
class KalmanFilter:
    """Possibilistic Kalman filter and RTS smoother, robust to outliers by default.

    Parameters
    ----------
    F, Q : array_like, shape (n, n)
        Transition matrix and process noise covariance (positive semi-definite, may be
        singular, e.g. the rank-one Q of :func:`possibly.models.constant_velocity`).
    H : array_like, shape (m, n)
    R : array_like, shape (m, m)
        Observation matrix and noise covariance (positive definite).
    robust : bool
        Discount each observation by ``γ = c ** (1 / dim)`` (default), or run the standard
        Kalman filter (whose possibilistic recursion equals the probabilistic one).
    tau : float in (0, 1], optional
        Threshold variant (paper §4.2): observations with ``γ > tau`` are kept whole.
    dim : float > 0, optional
        Effective dimension; the state dimension ``n`` by default. ``dim=1`` discounts more
        (see the module docstring).

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> kf = ps.KalmanFilter(*ps.models.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0))
    >>> ys = np.array([0.1, 0.3, 0.1, 40.0, 0.6, np.nan, 0.4])   # an outlier, a gap
    >>> res = kf.filter(ys)                                        # uninformative prior
    >>> res.discount.round(3)
    array([1.   , 1.   , 0.993, 0.   , 0.992,   nan, 0.991])
    >>> res.mean[:, 0].round(2)                                    # filtered positions
    array([0.1 , 0.3 , 0.17, 0.17, 0.53, 0.64, 0.5 ])
    >>> std = ps.KalmanFilter(*ps.models.constant_velocity(), robust=False).filter(ys)
    >>> round(float(std.mean[3, 0]), 2)                           # the outlier pulls it away
    28.06
    """

    def __init__(self, F, Q, H, R, robust: bool = True, tau=None, dim=None) -> None:
        self._tr = _prepare_transition(F, Q)
        n = self._tr.F.shape[0]
        self._ob = _prepare_observation(H, R, n)
        self.robust = bool(robust)
        self.dim, self.tau = _check_dim_tau(dim, tau, n)
        if tau is not None and not robust:
            raise ValueError("tau only applies to the robust filter (robust=True)")

    @property
    def state_dim(self) -> int:
        return self._tr.F.shape[0]

    @property
    def obs_dim(self) -> int:
        return self._ob.H.shape[0]

    def __repr__(self) -> str:
        kind = "robust" if self.robust else "standard"
        tau = "" if self.tau is None else f", tau={self.tau:g}"
        return (f"KalmanFilter({kind}, n={self.state_dim}, m={self.obs_dim}, "
                f"dim={self.dim:g}{tau})")

    # thin wrappers around the pure steps, with this filter's model
    def predict(self, state: KalmanState) -> KalmanState:
        """One predict step (see :func:`predict`)."""
        _check_state(state, self.state_dim)
        return _predict(state, self._tr)

    def update(self, state: KalmanState, y) -> tuple[KalmanState, UpdateInfo]:
        """One update step (see :func:`update`)."""
        _check_state(state, self.state_dim)
        y = _check_observation_values(y)
        if y.shape[-1:] != (self.obs_dim,):
            raise ValueError(f"y must have shape (..., {self.obs_dim}), got {y.shape}")
        return _update(state, y, self._ob, self.robust, self.dim, self.tau)

    def _observations(self, ys) -> tuple[np.ndarray, tuple[int, ...]]:
        ys = _check_observation_values(ys)
        m = self.obs_dim
        if ys.ndim == 1 and m == 1:
            ys = ys[:, None]
        if ys.ndim < 2 or ys.shape[-1] != m:
            raise ValueError(f"ys must have shape (T, {m}) or (B, T, {m})"
                             f"{' or (T,)' if m == 1 else ''}, got {ys.shape}")
        if ys.shape[-2] < 1:
            raise ValueError("ys must contain at least one time step")
        batch = ys.shape[:-2]
        return ys.reshape((-1,) + ys.shape[-2:]), batch

    def _initial(self, prior, batch: tuple[int, ...], size: int) -> KalmanState:
        n = self.state_dim
        if prior is None:
            return KalmanState.uninformative(n, (size,))
        state = KalmanState.from_possibility(prior)
        if prior.dim != n:
            raise ValueError(f"prior must have dimension {n} (the state), got {prior.dim}")
        try:
            mean = np.broadcast_to(state.mean, batch + (n,)).reshape(size, n)
        except ValueError:
            raise ValueError(f"prior batch shape {prior.batch_shape} does not broadcast with "
                             f"the batch shape of ys {batch}") from None
        mat = state.precision if state.information_form else state.covariance
        mat = np.broadcast_to(mat, batch + (n, n)).reshape(size, n, n).copy()
        if state.information_form:
            return KalmanState(mean.copy(), None, mat)
        return KalmanState(mean.copy(), mat, None)

    def filter(self, ys, prior: MultivariateNormal | None = None) -> FilterResult:
        """Filter one or a batch of series.

        Parameters
        ----------
        ys : array_like, shape (..., T, m) (or (T,) when m = 1)
            Observations; rows (or components) that are NaN are missing: predict only.
        prior : MultivariateNormal, optional
            Possibility function of the first state θ_1, before y_1 (batch dims broadcast
            with those of ``ys``); ``None`` is the uninformative prior 1, handled exactly.

        Returns
        -------
        FilterResult
        """
        ys, batch = self._observations(ys)
        size, T, _ = ys.shape
        n = self.state_dim
        state = self._initial(prior, batch, size)
        # time-major storage: each step writes contiguous blocks
        ys_t = np.ascontiguousarray(np.moveaxis(ys, 1, 0))
        mean = np.empty((T, size, n))
        cov = np.empty((T, size, n, n))
        p_mean = np.empty((T, size, n))
        p_cov = np.empty((T, size, n, n))
        log_c = np.empty((T, size))
        gamma = np.empty((T, size))
        disc = np.empty((T, size))
        f_prefix, p_prefix = [], []
        tr, ob, robust, dim, tau = self._tr, self._ob, self.robust, self.dim, self.tau
        for t in range(T):
            if t:
                state = _predict(state, tr)
            p_mean[t] = state.mean
            if state.information_form:
                p_prefix.append(state.precision)
                p_cov[t] = _covariance_or_inf(state.precision)
            else:
                p_cov[t] = state.covariance
            state, info = _update(state, ys_t[t], ob, robust, dim, tau)
            mean[t] = state.mean
            if state.information_form:
                f_prefix.append(state.precision)
                cov[t] = _covariance_or_inf(state.precision)
            else:
                cov[t] = state.covariance
            log_c[t], gamma[t], disc[t] = info

        def shaped(a):
            a = np.moveaxis(a, 0, 1)
            return a.reshape(batch + a.shape[1:])

        def prefix(items):
            return shaped(np.stack(items) if items else np.empty((0, size, n, n)))

        return FilterResult(mean=shaped(mean), covariance=shaped(cov),
                            log_consistency=shaped(log_c), gamma=shaped(gamma),
                            discount=shaped(disc), predicted_mean=shaped(p_mean),
                            predicted_covariance=shaped(p_cov),
                            filtered_precision_prefix=prefix(f_prefix),
                            predicted_precision_prefix=prefix(p_prefix))

    def smooth(self, ys, prior: MultivariateNormal | None = None) -> SmootherResult:
        """Possibilistic RTS smoother: the forward filter, then the backward recursion.

        The backward pass keeps the discounts of the forward pass (it is the exact smoother
        of the model with noise ``R / ρ_t``). Steps whose filtered state is in information
        form use the same recursion in natural parameters: ``smoothed_t = filtered_t ×
        back-propagated(smoothed_{t+1} / predicted_{t+1})``, exact with a singular ``Q``.

        Parameters and the missing-data convention are those of :meth:`filter`.

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> kf = ps.KalmanFilter(*ps.models.constant_velocity())
        >>> res = kf.smooth(np.array([0.0, 1.1, 1.9, 3.2, 30.0, 5.0]))
        >>> res.mean[:, 1].round(3)                   # velocities, the outlier ignored
        array([1.004, 1.004, 1.004, 1.004, 1.004, 1.004])
        >>> res.discount.round(3)
        array([1.   , 1.   , 0.996, 0.993, 0.   , 0.998])
        """
        fr = self.filter(ys, prior)
        batch = fr.mean.shape[:-2]
        T, n = fr.mean.shape[-2:]
        size = int(np.prod(batch))

        def fl(a, ev):
            return a.reshape((size,) + a.shape[a.ndim - ev:])

        f_mean, f_cov = fl(fr.mean, 2), fl(fr.covariance, 3)
        p_mean, p_cov = fl(fr.predicted_mean, 2), fl(fr.predicted_covariance, 3)
        f_pre = fl(fr.filtered_precision_prefix, 3)
        p_pre = fl(fr.predicted_precision_prefix, 3)
        kf = f_pre.shape[1]
        tr = self._tr
        s_mean = np.empty_like(f_mean)
        s_cov = np.empty_like(f_cov)
        s_mean[:, -1] = f_mean[:, -1]
        s_cov[:, -1] = f_cov[:, -1]
        s_prec = f_pre[:, -1] if kf == T else None
        for t in range(T - 2, -1, -1):
            if t >= kf:  # covariance form: RTS gain G = P_t Fᵀ P_{t+1|t}⁻¹
                fp = tr.F @ f_cov[:, t]
                gain = np.swapaxes(np.linalg.solve(p_cov[:, t + 1], fp), -1, -2)
                s_mean[:, t] = f_mean[:, t] + _mv(gain, s_mean[:, t + 1] - p_mean[:, t + 1])
                s_cov[:, t] = _sym(f_cov[:, t] + gain @ (s_cov[:, t + 1] - p_cov[:, t + 1])
                                   @ np.swapaxes(gain, -1, -2))
                continue
            if s_prec is None:  # smoothed t+1 is in covariance form (proper)
                s_prec = _sym(np.linalg.inv(s_cov[:, t + 1]))
            yp = p_pre[:, t + 1]
            lam = s_prec - yp
            h = _mv(s_prec, s_mean[:, t + 1]) - _mv(yp, p_mean[:, t + 1])
            if tr.G.shape[1]:  # sup over the process noise in range(Q)
                lg = lam @ tr.G
                a = tr.Qg_inv + tr.G.T @ lg
                h = h - _mv(lg, np.linalg.solve(a, (h @ tr.G)[..., None])[..., 0])
                lam = lam - lg @ np.linalg.solve(a, np.swapaxes(lg, -1, -2))
            back = tr.Ft @ lam @ tr.F
            prec = _sym(f_pre[:, t] + back)
            rhs = _mv(tr.Ft, h) - _mv(back, f_mean[:, t])
            s_mean[:, t] = f_mean[:, t] + _mv(np.linalg.pinv(prec, hermitian=True), rhs)
            s_cov[:, t] = _covariance_or_inf(prec)
            s_prec = prec
        return SmootherResult(mean=s_mean.reshape(batch + (T, n)),
                              covariance=s_cov.reshape(batch + (T, n, n)), filtered=fr)
