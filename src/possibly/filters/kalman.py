"""Possibilistic and robust Kalman filtering (paper §5.2).

With ``θ_t = F θ_{t-1} + u_t``, ``u_t ~ N(0, Q)`` and ``y_t = H θ_t + v_t``, ``v_t ~ N(0, R)``
(a :class:`~possibly.filters.state_space.LinearGaussianModel`), the possibilistic filter has
the Kalman recursion (for normal possibility functions sup and integral give the same
quadratic forms). An observation's consistency with the prediction is
``log c = -½ vᵀ S⁻¹ v`` (``v = y - H μ``, ``S = H Σ Hᵀ + R``; docs/math.md §2), and ``L^ρ`` is
the same likelihood with ``R / ρ``: the robust filter is the Kalman filter with the
observation noise inflated by ``1 / ρ`` at each step, ``ρ`` from
:func:`possibly.inference.discount` relative to the level ``c₀`` that a fraction ``coverage``
of inliers reach (docs/math.md §7). The gain ``K = ρ Σ Hᵀ (ρ H Σ Hᵀ + R)⁻¹`` makes ``ρ → 0``
a pure prediction.

The uninformative start (the possibility function 1) is exact: while a direction of the
state is not informed the filter runs in information form, and it reports ``inf`` variances
there. The update forms that stay accurate under diffuse priors and more sensors than states
are described in docs/numerics.md; the robust start is :mod:`possibly.filters.robust_start`,
the learned noise scale :mod:`possibly.filters.noise_scale`, the smoother
:mod:`possibly.filters.smoother`.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast, overload

import numpy as np

from possibly._tree import tree_map
from possibly.families.multivariate_normal import MultivariateNormal
from possibly.filters._common import (
    _BIG,
    COVERAGE,
    AutoCall,
    KernelOutputs,
    _check_coverage,
    _check_dim_tau,
    _check_observation_values,
    _checked_observation,
    _checked_transition,
    _covariance_or_inf,
    _inverse,
    _keep_set,
    _maybe_covariance_form,
    _mv,
    _Observation,
    _prepare_observation,
    _prepare_transition,
    _reference_table,
    _residual_matrix,
    _scale_exponent,
    _start_state_error,
    _sym,
    _Transition,
    _unscale,
    compiled_module,
    kernel_arrays,
    numpy_work,
    with_rejected,
)
from possibly.filters.filter_result import (
    FilterResult,
    MostlyDiscountedWarning,
    warn_if_mostly_discounted,
)
from possibly.filters.kalman_state import KalmanInfo, KalmanState
from possibly.filters.noise_scale import NoiseScaleEngine
from possibly.filters.robust_start import (
    MAX_OUTLIERS,
    WINDOW,
    K,
    KalmanStartState,
    mixture_tables,
    settled_leader,
    start_hypotheses,
    start_init,
    start_step,
)
from possibly.filters.smoother import smooth
from possibly.filters.state_space import LinearGaussianModel
from possibly.frames import time_labels
from possibly.inference import discount, relative_log_consistency
from possibly.sequential import SequentialEstimator
from possibly.validation import check_bool, refuse_non_numbers

__all__ = [
    "COVERAGE",
    "KalmanFilter",
    "NoiseScaleKalmanFilter",
    "predict",
    "update",
]

#: an update whose prior spread ``ρ H P Hᵀ`` exceeds the noise ``R`` by more than this factor
#: (on some diagonal entry) takes a stable form (Joseph or information; module docstring):
#: ``P - K H P`` would lose that many ulps
_DIFFUSE = 1e4
# -- small helpers ----------------------------------------------------------------------------
def _inv(a: np.ndarray) -> np.ndarray:
    # scalar observations (the common case) need no LAPACK call
    if a.shape[-1] == 1:
        return 1.0 / a
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:  # R lost in rounding next to a huge H P Hᵀ: its limit
        return np.linalg.pinv(a, hermitian=True)


def _scaled_log_c(q: np.ndarray, k: np.ndarray | None) -> np.ndarray:
    """``-½ q 4**k`` for a scaled quadratic form ``q``; ``-inf`` where that overflows."""
    if k is None:
        return -0.5 * q
    with np.errstate(over="ignore"):
        return np.where(q > 0, -0.5 * np.ldexp(q, 2 * k), -0.5 * q)


def _right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for a batch ``a`` (..., k, n) and one matrix ``b`` (n, p), as a single gemm
    (numpy's batched matmul loops over tiny matrices, which dominates for n = 2)."""
    return (a.reshape(-1, a.shape[-1]) @ b).reshape(a.shape[:-1] + b.shape[-1:])


# -- the two step kernels (no validation: callers validate once) ------------------------------
def _predict(state: KalmanState, tr: _Transition) -> KalmanState:
    mean = state.mean @ tr.Ft
    if state.covariance is not None:
        pf = _right(state.covariance, tr.Ft)  # P Fᵀ; F P Fᵀ = (P Fᵀ)ᵀ Fᵀ as P is symmetric
        return KalmanState(mean, _sym(_right(np.swapaxes(pf, -1, -2), tr.Ft)) + tr.Q, None,
                           state.t)
    if tr.F_inv is None:
        raise ValueError("F must be invertible to predict a state that is not yet fully "
                         "informed (uninformative or singular-precision prior)")
    m = tr.F_inv.T @ cast(np.ndarray, state.precision) @ tr.F_inv
    if tr.G.shape[1]:
        mg = m @ tr.G
        a = tr.Qg_inv + tr.G.T @ mg
        m = m - mg @ np.linalg.solve(a, np.swapaxes(mg, -1, -2))
    return KalmanState(mean, None, _sym(m), state.t)


def _observation_at(y: np.ndarray, ob: _Observation):
    """``(y0, H, Hᵀ, R, W, resid)`` for a step whose ``y`` may contain NaN.

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


def _discounts(log_c: np.ndarray, robust: bool, dim: float, tau: float | None,
               log_c0: np.ndarray | float | None = None):
    """``(γ, ρ)``: γ = c^(1/dim) before any threshold and the exponent applied: the
    discount of ``c`` itself (γ, computed once, when robust without a threshold) or, with a
    reference ``log_c0`` (the coverage), of ``c / c₀`` capped at 1."""
    gamma = discount(log_c, dim, validate=False)
    if log_c0 is not None:
        return gamma, discount(relative_log_consistency(log_c, log_c0), dim, tau, robust,
                               validate=False)
    if robust and tau is None:
        return gamma, gamma
    return gamma, discount(log_c, dim, tau, robust, validate=False)


def _reference(table: np.ndarray | None, y: np.ndarray, H: np.ndarray,
               resid: np.ndarray | None) -> np.ndarray | None:
    """``log c₀`` per batch element: the table at the degrees of freedom of ``-2 log c`` for
    an inlier, the number of observed components (the rank of their rows of ``H`` when some
    part of ``y`` is not explained by any state: that part is not in ``c``)."""
    if table is None:
        return None
    if resid is None:
        dof = (~np.isnan(y)).sum(-1)
    else:
        dof = np.linalg.matrix_rank(H)
    return table[dof]


def _update_scalar(state: KalmanState, y: np.ndarray, ob: _Observation, robust: bool,
                   dim: float, tau: float | None,
                   ref: np.ndarray | float | None = None) -> tuple[KalmanState, KalmanInfo]:
    """Covariance-form update for one complete scalar observation (m = 1, H ≠ 0): the same
    formulas as :func:`_update` without any matrix inverse; ``ref``: ``log c₀`` (None: the
    paper's discount)."""
    P = cast(np.ndarray, state.covariance)
    h = ob.H[0]
    r = ob.R[0, 0]
    ph, hph, v, s0, log_c = _scalar_log_c(P, state.mean, y, h, r)
    gamma, rho = _discounts(log_c, robust, dim, tau, ref)
    k = ((rho / (rho * hph + r)) if robust else 1.0 / s0)[..., None] * ph
    mean = state.mean + k * v[..., None]
    cov = P - k[..., :, None] * ph[..., None, :]  # k ∝ P hᵀ: symmetric as it stands
    # ρ ≤ 1: nothing is diffuse unless some h P hᵀ is (one reduction in the common case)
    if hph.max() > _DIFFUSE * r:
        rho1 = rho if robust else 1.0
        diffuse = rho1 * hph > _DIFFUSE * r
        if P.shape[-1] == 1:  # one state: P r / (ρ h² P + r), a ratio of positive terms
            stable = P * (r / (rho1 * hph + r))[..., None, None]
        else:
            g = ph / (rho1 * hph + r)[..., None]  # P hᵀ (ρ h P hᵀ + r)⁻¹
            rr = np.broadcast_to(r * rho1, np.shape(hph))
            stable = _joseph(P, k[..., :, None], h[None, :], g[..., :, None],
                             rr[..., None, None])
        cov = np.where(diffuse[..., None, None], stable, cov)
    return (KalmanState(mean, cov, None, state.t + 1),
            KalmanInfo(log_consistency=log_c, discount=rho, gamma=gamma))


def _scalar_log_c(P: np.ndarray, mean: np.ndarray, y: np.ndarray, h: np.ndarray, r: float
                  ) -> tuple[np.ndarray, ...]:
    """``(P hᵀ, h P hᵀ, v, s, log c)`` of a complete scalar observation ``y`` (``h`` the row
    of ``H``, ``r`` = R): the innovation ``v``, its variance ``s`` and ``log c = -½ v² / s``
    (at most 0)."""
    ph = _right(P, h[:, None])[..., 0]  # P hᵀ
    hph = ph @ h
    v = y[..., 0] - mean @ h
    s0 = hph + r
    if np.abs(v).max() > _BIG:  # v² could overflow: -inf, i.e. c = 0, is the right answer
        with np.errstate(over="ignore"):
            log_c = np.minimum(-0.5 * (v * v) / s0, 0.0)
    else:
        log_c = np.minimum(-0.5 * v * v / s0, 0.0)
    return ph, hph, v, s0, log_c


def _joseph(P: np.ndarray, gain: np.ndarray, H: np.ndarray, g: np.ndarray,
            rR: np.ndarray) -> np.ndarray:
    """Joseph form ``(I - K H) P (I - K H)ᵀ + ρ G R Gᵀ`` (``K = ρ G``, ``rR = ρ R``) of the
    updated covariance: a sum of two positive semi-definite terms, with no difference of
    large numbers however diffuse ``P`` is relative to ``R``."""
    a = np.eye(P.shape[-1]) - gain @ H
    return _sym(a @ P @ np.swapaxes(a, -1, -2) + g @ rR @ np.swapaxes(g, -1, -2))


def _information_update(cov: np.ndarray, P: np.ndarray, H: np.ndarray, R: np.ndarray,
                        W: np.ndarray, r3: np.ndarray, hph: np.ndarray) -> np.ndarray:
    """``cov`` where the prior is diffuse relative to ``R / ρ`` in every direction of a
    square ``H`` (``ρ H P Hᵀ ≻ 10⁴ R``) replaced by ``(P⁻¹ + ρ Hᵀ W H)⁻¹``: there ``P⁻¹``
    is a small correction to the observation's information, and the Joseph form's
    second-order rounding (``eps² |P|``) would dominate the posterior."""
    L = np.linalg.cholesky(R)
    a = np.linalg.solve(L, r3 * hph)
    lam = np.linalg.eigvalsh(_sym(np.linalg.solve(L, np.swapaxes(a, -1, -2))))[..., 0]
    every = lam > _DIFFUSE
    if not every.any():
        return cov
    safe = np.where(every[..., None, None], P, np.eye(P.shape[-1]))
    info = _sym(_inverse(_inverse(safe) + r3 * (np.swapaxes(H, -1, -2) @ W @ H)))
    return np.where(every[..., None, None], info, cov)


def _explained(y0: np.ndarray, H: np.ndarray, R: np.ndarray,
               R0: np.ndarray) -> tuple[np.ndarray, _Observation]:
    """The part of an observation that the state explains, as an equivalent observation
    ``z = A y = H' θ + e``, ``e ~ N(0, c² I)``, with ``H'`` of full row rank.

    With ``R = c² L Lᵀ`` and the thin SVD ``L⁻¹ H = U Σ Vᵀ``: ``A = U_kᵀ L⁻¹``,
    ``H' = Σ_k V_kᵀ`` (``k = rank H``) and noise ``c² I``. The rest of ``y`` is the residual
    that no θ explains, which is neither in ``c`` nor in the update, so both are those of
    ``z``; and ``S' = H' P H'ᵀ + c² I`` is well-conditioned however diffuse ``P`` is, where
    ``H P Hᵀ + R`` (rank-``k`` term plus ``R``) is nearly singular. ``H``, ``R`` may carry
    batch axes (missing components decoupled, ``R0`` the model's ``R``): then ``min(m, n)``
    rows, those beyond the rank zero.
    """
    # in the units of y: L⁻¹ and the noise scaled by a power of two c ≈ √max R0_ii (exact;
    # R0 the model's R, whose missing components R has decoupled), so that y up to 1e300 with
    # R down to 1e-100 does not overflow; the noise is then c² I
    c = float(np.exp2(np.round(0.5 * np.log2(np.diagonal(R0).max()))))
    L = np.linalg.cholesky(R / (c * c))
    hw = np.linalg.solve(L, H)
    u, sv, vt = np.linalg.svd(hw, full_matrices=False)
    keep = sv > sv.max(axis=-1, keepdims=True) * max(H.shape[-2:]) * np.finfo(float).eps
    z = (np.swapaxes(u, -1, -2) @ np.linalg.solve(L, y0[..., None]))[..., 0]
    if H.ndim == 2:  # one model: exactly rank H components
        h, z = sv[keep, None] * vt[keep], z[..., keep]
    else:
        h, z = np.where(keep[..., None], sv[..., None] * vt, 0.0), np.where(keep, z, 0.0)
    eye = np.broadcast_to(np.eye(h.shape[-2]), h.shape[:-1] + h.shape[-2:-1])
    return z, _Observation(H=h, Ht=np.swapaxes(h, -1, -2), R=c * c * eye, W=eye / (c * c),
                           resid=None)


def _update(state: KalmanState, y: np.ndarray, ob: _Observation, robust: bool, dim: float,
            tau: float | None,
            log_c0: np.ndarray | None = None) -> tuple[KalmanState, KalmanInfo]:
    """Update with one observation per batch element (NaN components missing); ``log_c0``:
    the table of :func:`_reference_table` (None: the paper's discount)."""
    missing = np.isnan(y).all(axis=-1)
    explained = ob.resid is not None
    if explained:  # H not onto: the part of y that θ explains (_explained)
        y0, H, _, R, _, resid = _observation_at(y, ob)
        ref = _reference(log_c0, y, H, resid) if robust else None
        y, ob = _explained(y0, H, R, ob.R)
    if ob.H.shape[-2] == 1 and ob.H.ndim == 2 and not state.information_form \
            and not missing.any():
        return _update_scalar(state, y, ob, robust, dim, tau, ref if explained else
                              None if log_c0 is None else log_c0[1])
    y0, H, Ht, R, W, resid = _observation_at(y, ob)
    if not explained:
        ref = _reference(log_c0, y, H, resid) if robust else None
    v = y0 - _mv(H, state.mean)
    k = _scale_exponent(v, y0)
    vs = v if k is None else np.ldexp(v, -k[..., None])
    if not state.information_form:
        P = cast(np.ndarray, state.covariance)
        hp = H @ P
        s0 = hp @ Ht + R
        s_inv = _inv(s0)
        q = (vs[..., :, None] * s_inv * vs[..., None, :]).sum(axis=(-2, -1))
    else:
        Y = state.precision
        j = Ht @ W @ H
        b = _mv(Ht @ W, vs)
        q = (vs * _mv(W, vs)).sum(-1) - (b * _mv(np.linalg.pinv(Y + j, hermitian=True), b)).sum(-1)
        # from the uninformative prior every (explained) y fits exactly: c = 1, not rounding
        q = np.where(np.any(Y, axis=(-2, -1)), q, 0.0)
    # the part of y that no θ explains is not in c (resid is None here: _explained)
    log_c = np.minimum(_scaled_log_c(q, k), 0.0)
    gamma, rho = _discounts(log_c, robust, dim, tau, ref)

    if not state.information_form:
        new = _covariance_update(state, vs, k, H, R, W, hp, s0, s_inv, rho, robust)
    else:
        prec = _sym(Y + rho[..., None, None] * j)
        step = _mv(np.linalg.pinv(prec, hermitian=True), rho[..., None] * b)
        new = _maybe_covariance_form(KalmanState(state.mean + _unscale(step, k), None, prec,
                                                 state.t + 1))
    nan = np.where(missing, np.nan, 0.0)
    return new, KalmanInfo(log_consistency=log_c + nan, discount=rho + nan, gamma=gamma + nan)


def _covariance_update(state: KalmanState, vs: np.ndarray, k: np.ndarray | None,
                       H: np.ndarray, R: np.ndarray, W: np.ndarray, hp: np.ndarray,
                       s0: np.ndarray, s_inv: np.ndarray, rho: np.ndarray, robust: bool
                       ) -> KalmanState:
    """The covariance-form update of :func:`_update` with the (scaled) innovation ``vs``,
    ``hp = H P``, ``s0 = H P Hᵀ + R`` and its inverse, and the discount ``rho`` (applied when
    ``robust``)."""
    P = cast(np.ndarray, state.covariance)
    if robust:
        # K = ρ P Hᵀ (ρ H P Hᵀ + R)⁻¹: continuous down to ρ = 0
        r3 = rho[..., None, None]
        gain = r3 * np.swapaxes(hp, -1, -2) @ _inv(r3 * (s0 - R) + R)
    else:
        gain = np.swapaxes(hp, -1, -2) @ s_inv
    mean = state.mean + _unscale(_mv(gain, vs), k)
    cov = _sym(P - gain @ hp)
    rho1 = rho if robust else np.ones(np.shape(rho))
    d = np.arange(R.shape[-1])
    diffuse = (rho1[..., None] * (s0 - R)[..., d, d] > _DIFFUSE * R[..., d, d]).any(-1)
    if diffuse.any():
        r3 = rho1[..., None, None]
        g = np.swapaxes(hp, -1, -2) @ _inv(r3 * (s0 - R) + R)
        cov = np.where(diffuse[..., None, None], _joseph(P, gain, H, g, r3 * R), cov)
        if H.shape[-2] == H.shape[-1]:  # (a missing component fails the test inside)
            cov = _information_update(cov, P, H, R, W, r3, s0 - R)
    return KalmanState(mean, cov, None, state.t + 1)


# -- public pure step functions ---------------------------------------------------------------
def _check_state(state: KalmanState, n: int) -> None:
    if not isinstance(state, KalmanState):
        raise ValueError(f"state must be a KalmanState, got {type(state).__name__}")
    if state.mean.shape[-1:] != (n,):
        raise ValueError(f"state.mean must have shape (..., {n}), got {state.mean.shape}")


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
    >>> from possibly.filters.kalman import predict
    >>> from possibly.filters.kalman_state import KalmanState
    >>> F, Q, H, R = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    >>> s = predict(KalmanState(np.zeros(2), np.eye(2)), F, Q)
    >>> s.mean, s.covariance.round(6)
    (array([0., 0.]), array([[2.000625, 1.00125 ],
           [1.00125 , 1.0025  ]]))
    """
    F, Q = _checked_transition(F, Q)
    if F.ndim != 2 or Q.ndim != 2:
        raise ValueError("F and Q must be single (n, n) matrices here")
    _check_state(state, F.shape[0])
    return _predict(state, _prepare_transition(F, Q))


def update(state: KalmanState, y, H, R, *, robust: bool = True, dim=None,
           tau=None, coverage: float | None = COVERAGE) -> tuple[KalmanState, KalmanInfo]:
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
    coverage : float in (0, 1) or None
        Relative discount ``ρ = min(1, (c / c₀)^(1/dim))``, with ``c₀`` the consistency
        reached by this fraction of inliers (:func:`possibly.inference.inlier_log_consistency`):
        observations inside the predictive region of this probability are kept whole. None:
        the paper's ``ρ = c^(1/dim)``.

    Returns
    -------
    state : KalmanState
    info : KalmanInfo

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.filters.kalman import update
    >>> from possibly.filters.kalman_state import KalmanState
    >>> prior = KalmanState(np.zeros(1), np.eye(1))
    >>> post, info = update(prior, [2.0], H=[[1.0]], R=[[1.0]], coverage=None)
    >>> float(info.consistency), float(info.discount)             # c = exp(-½ 2² / 2)
    (0.36787944117144233, 0.36787944117144233)
    >>> post.mean, post.covariance                              # R inflated to R / c
    (array([0.53788284]), array([[0.73105858]]))
    >>> _, info = update(prior, [2.0], H=[[1.0]], R=[[1.0]])      # 2²/2 < χ²₁(0.9) = 2.71
    >>> float(info.discount)
    1.0
    """
    if not isinstance(state, KalmanState):
        raise ValueError(f"state must be a KalmanState, got {type(state).__name__}")
    n = state.mean.shape[-1]
    ob = _prepare_observation(*_checked_observation(H, R, n))
    y = _check_observation_values(y)
    if y.shape[-1:] != (ob.H.shape[0],):
        raise ValueError(f"y must have shape (..., {ob.H.shape[0]}), got {y.shape}")
    dim, tau = _check_dim_tau(dim, tau, n)
    return _update(state, y, ob, check_bool("robust", robust), dim, tau,
                   _reference_table(_check_coverage(coverage), ob.H.shape[0]))


# -- results ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Buffer:
    """What :meth:`KalmanFilter.filter` stores: the output arrays and the precisions of the
    steps run in information form (filtered, predicted), which the smoother needs where the
    covariances are ``inf``."""

    arrays: KernelOutputs
    filtered_precisions: list[np.ndarray] = field(default_factory=list)
    predicted_precisions: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def empty(cls, keep: frozenset[str], T: int, size: int, n: int) -> _Buffer:
        full = "covariance" in keep
        return cls(KernelOutputs.allocate(T, size, n, variance="variance" in keep or full,
                                          covariance=full, predicted="predicted" in keep))

    def record(self, t: int, predicted: KalmanState, state: KalmanState,
               info: KalmanInfo) -> None:
        """Store step ``t`` (the arrays not kept are left alone)."""
        o = self.arrays
        if o.keep_predicted:
            o.predicted_mean[t] = predicted.mean
            if predicted.precision is not None:
                self.predicted_precisions.append(predicted.precision)
                o.predicted_covariance[t] = _covariance_or_inf(predicted.precision)
            else:
                o.predicted_covariance[t] = predicted.covariance
        o.mean[t] = state.mean
        if o.keep_variance:
            if state.precision is not None:
                self.filtered_precisions.append(state.precision)
                c = _covariance_or_inf(state.precision)
            else:
                c = cast(np.ndarray, state.covariance)
            if o.keep_covariance:
                o.covariance[t] = c
            diag = np.arange(c.shape[-1])
            o.variance[t] = c[..., diag, diag]
        o.log_consistency[t], o.discount[t] = info.log_consistency, info.discount

    def result(self, batch: tuple[int, ...], final: KalmanState, **fields: Any
               ) -> FilterResult:
        """The filter's result, batch-major with the batch shape ``batch``."""
        o = self.arrays
        size, n = o.mean.shape[1:]

        def batch_major(a: np.ndarray) -> np.ndarray:
            a = np.moveaxis(a, 0, 1)
            return a.reshape(batch + a.shape[1:])

        def kept(a: np.ndarray, flag: bool) -> np.ndarray | None:
            return batch_major(a) if flag else None

        def prefix(items: list[np.ndarray]) -> np.ndarray:
            return batch_major(np.stack(items) if items else np.empty((0, size, n, n)))

        information = ((prefix(self.filtered_precisions), prefix(self.predicted_precisions))
                       if o.keep_covariance and o.keep_predicted else None)
        return FilterResult(mean=batch_major(o.mean), variance=kept(o.variance, o.keep_variance),
                            covariance=kept(o.covariance, o.keep_covariance),
                            log_consistency=batch_major(o.log_consistency),
                            discount=batch_major(o.discount),
                            predicted_mean=kept(o.predicted_mean, o.keep_predicted),
                            predicted_covariance=kept(o.predicted_covariance, o.keep_predicted),
                            final=tree_map(final, lambda a: a.reshape(batch + a.shape[1:])),
                            _information=information, **fields)


# -- the filter -------------------------------------------------------------------------------
class KalmanFilter(SequentialEstimator[Any, KalmanInfo, FilterResult]):
    """Possibilistic Kalman filter (and RTS smoother), robust to outliers by default.

    Parameters
    ----------
    model : LinearGaussianModel, or F
        The state-space model; ``KalmanFilter(F, Q, H, R)`` builds it from the four matrices
        (see :class:`~possibly.filters.state_space.LinearGaussianModel`: ``F`` and ``Q`` may be
        per step, ``Q`` may be singular, ``R`` positive definite).
    Q, H, R : array_like, optional
        With ``F`` as the first argument.
    robust : bool
        Discount each observation (default), or run the standard Kalman filter (whose
        possibilistic recursion equals the probabilistic one).
    tau : float in (0, 1], optional
        Threshold variant (paper §4.2): observations with discount above ``tau`` are kept
        whole.
    dim : float > 0, optional
        Effective dimension; the state dimension ``n`` by default. ``dim=1`` discounts more
        (see the module docstring).
    coverage : float in (0, 1) or None
        The discount is relative: ``ρ = min(1, (c / c₀)^(1/dim))``, where ``c₀`` is the
        consistency that this fraction of inliers reaches
        (:func:`~possibly.inference.inlier_log_consistency`), so an observation inside the
        predictive region of this probability is taken whole and one outside it is
        discounted as the paper's rule would, relative to that region's edge. Default 0.9
        (docs/math.md §7 and the guide "Choosing the knobs"). ``None``: the paper's
        discount ``ρ = γ = c^(1/dim)``, which discounts every inlier a little (on average
        ``(1 + m/dim)^{-1}`` for ``m`` observed components).
    prior : MultivariateNormal, optional
        Possibility function of the first state before any observation, the default of
        :meth:`init`, :meth:`filter` and streaming :meth:`update`; None: uninformative (exact).
    robust_start : bool
        Start with a maxitive mixture of hypotheses about which of the first observations are
        outliers, each run from the prior (uninformative or proper), collapsed after a few
        steps (:mod:`possibly.filters.robust_start`; default on, robust filter only).
        ``False`` gives the plain recursion, which takes an early outlier whole when the prior
        cannot judge it (the flat prior, or a weak one).
    learn_noise_scale : bool
        ``R`` is known up to a scale, learned online (:mod:`possibly.filters.noise_scale`; the
        same as :class:`NoiseScaleKalmanFilter`): the state carries the scale, results are
        :class:`~possibly.filters.noise_scale.NoiseScaleResult` with the scale after each
        step, and ``dim`` defaults to ``n + 1``.
    scale_prior : (alpha, beta), both > 0
        With ``learn_noise_scale``: gamma possibility of the precision scale λ (mode
        ``alpha / beta``); default ``(1, 1)``, which trusts ``R`` as given with the weight of
        two pseudo-observations.
    omega : float in (0, 1)
        With ``learn_noise_scale``: fraction of the scale's gamma kept in the prior when
        lending to the unbounded likelihood (default 0.99).
    scale_dim : float > 0
        With ``learn_noise_scale``: effective dimension of the discount of the scale's update
        (default 2).

    Notes
    -----
    Numeric range: model entries in ``[1e-100, 1e100]`` (see ``LinearGaussianModel``) and
    observations of magnitude up to 1e300 (larger ones are refused with a ValueError) give
    finite estimates; a gross outlier gets ``log c = -inf`` and discount 0.

    Thread safety: ``init``, ``step``, ``filter``/``fit`` and ``smooth`` are pure (they do not
    change the instance) and can be called from several threads at once; the streaming
    ``update``/``reset`` change the instance and raise
    :class:`~possibly.sequential.ConcurrentUseError` when used from two threads at once (as do
    ``state`` and pickling while another thread runs ``update``).

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> kf = ps.KalmanFilter(ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0))
    >>> ys = np.array([0.1, 0.3, 0.1, 40.0, 0.6, np.nan, 0.4])   # an outlier, a gap
    >>> res = kf.filter(ys)                                        # uninformative prior
    >>> res.discount                     # inliers taken whole, the outlier ignored
    array([ 1.,  1.,  1.,  0.,  1., nan,  1.])
    >>> res.mean[:, 0].round(2)                                    # filtered positions
    array([0.1 , 0.3 , 0.17, 0.17, 0.53, 0.64, 0.5 ])
    >>> std = ps.KalmanFilter(*ps.filters.constant_velocity(), robust=False).filter(ys)
    >>> round(float(std.mean[3, 0]), 2)                           # the outlier pulls it away
    28.06
    >>> info = kf.update(0.1)                                      # streaming
    >>> float(info.discount)
    1.0
    """

    def __init__(self, model: Any, Q: Any = None, H: Any = None, R: Any = None, *,
                 robust: bool = True, tau: float | None = None, dim: float | None = None,
                 coverage: float | None = COVERAGE,
                 prior: MultivariateNormal | None = None, robust_start: bool = True,
                 learn_noise_scale: bool = False, scale_prior: Any = None,
                 omega: float | None = None, scale_dim: float | None = None) -> None:
        model = _model(model, Q, H, R)
        self.model = model
        self.robust = check_bool("robust", robust)
        self.learn_noise_scale = check_bool("learn_noise_scale", learn_noise_scale)
        n = model.state_dim
        # the learned scale is one more free parameter of the possibility function
        self.dim, self.tau = _check_dim_tau(dim, tau, n + 1 if self.learn_noise_scale else n)
        if tau is not None and not robust:
            raise ValueError("tau only applies to the robust filter (robust=True)")
        self.coverage = _check_coverage(coverage) if self.robust else None
        self._log_c0 = _reference_table(self.coverage, model.obs_dim)
        if prior is not None:
            self._initial(prior, (), 1)  # validates
        self.prior = prior
        self.robust_start = check_bool("robust_start", robust_start)
        self._scale = self._scale_engine(scale_prior, omega, scale_dim)

    def _scale_engine(self, scale_prior: Any, omega: float | None,
                      scale_dim: float | None) -> NoiseScaleEngine | None:
        """The learned noise scale's recursion (None without ``learn_noise_scale``)."""
        options = {"scale_prior": scale_prior, "omega": omega, "scale_dim": scale_dim}
        if not self.learn_noise_scale:
            given = [name for name, value in options.items() if value is not None]
            if given:
                raise ValueError(f"{given[0]} only applies with learn_noise_scale=True")
            self.scale_prior = self.omega = self.scale_dim = None
            return None
        engine = NoiseScaleEngine(
            KalmanFilter(self.model, robust=False, prior=self.prior), robust=self.robust,
            tau=self.tau, dim=self.dim, prior=self.prior, robust_start=self.robust_start,
            coverage=self.coverage,
            **{name: value for name, value in options.items() if value is not None})
        self.scale_prior, self.omega, self.scale_dim = (engine.scale_prior, engine.omega,
                                                        engine.scale_dim)
        return engine

    @property
    def state_dim(self) -> int:
        return self.model.state_dim

    @property
    def obs_dim(self) -> int:
        return self.model.obs_dim

    def __repr__(self) -> str:
        kind = "robust" if self.robust else "standard"
        tau = "" if self.tau is None else f", tau={self.tau:g}"
        cover = "" if self.coverage is None else f", coverage={self.coverage:g}"
        scale = "" if self._scale is None else (
            f", scale_prior={self.scale_prior}, omega={self.omega:g}, "
            f"scale_dim={self.scale_dim:g}")
        return (f"{type(self).__name__}({kind}, n={self.state_dim}, m={self.obs_dim}, "
                f"dim={self.dim:g}{tau}{cover}{scale})")

    # -- the protocol ---------------------------------------------------------------------------
    def init(self, batch_shape: tuple[int, ...] = (),
             prior: MultivariateNormal | None = None) -> Any:
        """The state before any observation: ``prior`` (default: the filter's) or 1; with the
        robust start, the mixture of start hypotheses around it (a
        :class:`~possibly.filters.robust_start.KalmanStartState`). With a learned noise scale,
        a :class:`~possibly.filters.noise_scale.NoiseScaleState` (θ and the scale), or the
        scale's start hypotheses around it."""
        if self._scale is not None:
            _no_prior_override(prior)
            return self._scale.init(batch_shape)
        batch_shape = tuple(int(b) for b in batch_shape)
        size = int(np.prod(batch_shape))
        state = self._initial(self.prior if prior is None else prior, batch_shape, size)
        state = KalmanState(state.mean.reshape(batch_shape + (self.state_dim,)),
                            None if state.covariance is None
                            else state.covariance.reshape(batch_shape + (self.state_dim,) * 2),
                            None if state.precision is None
                            else state.precision.reshape(batch_shape + (self.state_dim,) * 2))
        if self._starts(prior):
            return start_init(state, batch_shape)
        return state

    def _starts(self, prior: MultivariateNormal | None) -> bool:
        """Whether a run from ``prior`` uses the robust start: the robust filter, from any
        prior (the hypotheses start from it; docs/math.md §9)."""
        return self.robust and self.robust_start

    def _plain_step(self, state: KalmanState,
                    y: np.ndarray) -> tuple[KalmanState, KalmanInfo, KalmanState]:
        """``(predicted, info, filtered)`` of one plain robust step (no validation)."""
        if state.t:
            state = _predict(state, self.model._transition(state.t - 1))
        new, info = _update(state, y, self.model._observation, self.robust, self.dim,
                            self.tau, self._log_c0)
        return state, info, new

    @overload
    def step(self, state: KalmanState, y: Any) -> tuple[KalmanState, KalmanInfo]: ...

    @overload
    def step(self, state: KalmanStartState,
             y: Any) -> tuple[KalmanState | KalmanStartState, KalmanInfo]: ...

    def step(self, state: Any, y: Any) -> tuple[Any, KalmanInfo]:
        """Predict (after the first observation) and update with ``y`` (shape ``(..., m)``;
        a scalar or shape ``(...,)`` batch when ``m = 1``); pure. During the robust start
        ``state`` is a :class:`~possibly.filters.robust_start.KalmanStartState` (what
        :meth:`init` returns then), and becomes a KalmanState when the mixture collapses
        (with a learned noise scale: the states of :meth:`init`)."""
        if self._scale is not None:
            return self._scale.step(state, y)
        if not isinstance(state, KalmanStartState):
            _check_state(state, self.state_dim)
        y = _check_observation_values(y)
        if self.obs_dim == 1 and y.shape[-1:] != (1,) or y.ndim == 0:
            y = y[..., None]
        if y.shape[-1:] != (self.obs_dim,):
            raise ValueError(f"y must have shape (..., {self.obs_dim}), got {y.shape}")
        if isinstance(state, KalmanStartState):
            new, info, _, _ = start_step(state, y, self._plain_step, self.obs_dim)
            return new, info
        _, info, new = self._plain_step(state, y)
        return new, info

    def update(self, y: Any) -> KalmanInfo:
        """Process one observation from the current state (streaming); returns its Info.

        The same step as :meth:`step`. Once the robust start has settled (the state one
        series in covariance form), it runs the compiled loop's step on the state kept
        between calls wherever ``filter(engine="numba")`` can run (numba installed, a
        time-invariant model with ``H`` of full row rank), from the first such update of the
        process on, whatever ``engine="auto"`` would choose for a batch call (a stream is
        long: the loading is paid there, not in the middle of it): the numbers of
        ``filter(engine="numba")`` (bit for bit for scalar observations, to rounding for
        vectors), and of the numpy step to about 1e-12. Elsewhere, the numpy step.

        Examples
        --------
        >>> import possibly as ps
        >>> kf = ps.KalmanFilter(ps.filters.constant_velocity(obs_sd=1.0))
        >>> [round(float(kf.update(y).discount), 3) for y in [0.1, 0.2, 0.1, 0.3, 9.0]]
        [1.0, 1.0, 1.0, 1.0, 0.0]
        >>> kf.state.t
        5
        """
        if type(y) is not float and type(y) is not np.float64:  # a float is a number
            refuse_non_numbers("y", y, f"one observation of {self.obs_dim} number(s) (NaN for "
                               "a missing value)")
        lock = self._acquire()  # as _exclusive, without a context manager's cost
        try:
            live = self._live if self._live is not None else self._open_live()
            if live is not None:
                x = _plain_observation(y, self.obs_dim)
                info = None if x is None else live.step(x)
                if info is not None:
                    return info
            self._sync()
            state = self.init() if self._state is None else self._state
            state, info = self.step(state, y)
            object.__setattr__(self, "_state", state)
            return info
        finally:
            lock.release()

    #: the compiled streaming step's buffers while streaming (_LiveStep), else None
    _live: Any = None
    #: (the compiled loop's module, or None for numpy's steps,) once asked by update()
    _step_engine: tuple[Any] | None = None

    def _open_live(self) -> _LiveStep | None:
        """The compiled step of :meth:`update` from the current state, or None where
        ``filter`` would not run the compiled loop (or the state is not one plain series in
        covariance form: the robust start, the uninformative start, a batch)."""
        state = self._state
        if (self._scale is not None or not isinstance(state, KalmanState)
                or state.information_form or state.mean.ndim != 1):
            return None
        if self._step_engine is None:  # asked once: importing numba fails every time
            self._step_engine = (self._compiled("auto"),)
        compiled = self._step_engine[0]
        if compiled is None:
            return None
        self._live = _LiveStep(compiled, state, self._kernel_model(), self._kernel_rule(),
                               self.dim)
        return self._live

    def _sync(self) -> None:
        """Leave the compiled step: its state back to a KalmanState."""
        if self._live is not None:
            object.__setattr__(self, "_state", self._live.state())
            object.__setattr__(self, "_live", None)

    @property
    def state(self) -> Any:
        """The state after the observations given to :meth:`update` so far (None before)."""
        lock = self._acquire()  # the compiled step's buffers are not read while update writes
        try:
            return self._current_state()
        finally:
            lock.release()

    def _current_state(self) -> Any:
        """:attr:`state`, for callers that hold the lock."""
        live = self._live  # streaming: a copy of the compiled step's state
        return self._state if live is None else live.state()

    def reset(self) -> KalmanFilter:
        """Forget the streamed observations; returns ``self``."""
        with self._exclusive():
            object.__setattr__(self, "_live", None)
            object.__setattr__(self, "_state", None)
        return self

    def __getstate__(self) -> dict[str, Any]:
        lock = self._acquire()  # the compiled step's buffers are not read while update writes
        try:
            state = super().__getstate__()
            state.pop("_step_engine", None)  # a module: asked again after unpickling
            # the compiled step's buffers as a KalmanState (unpickled, update copies them again)
            state["_state"], state["_live"] = self._current_state(), None
            return state
        finally:
            lock.release()

    def fit(self, y: Any, *, engine: str = "auto") -> FilterResult:
        """Filter a whole series from :meth:`init`: :meth:`filter` (with a learned noise
        scale, without the predicted states, which only the smoother needs)."""
        if self._scale is not None:
            return self._scale.fit(y, engine=engine, stacklevel=4)
        return self.filter(y, engine=engine)

    # -- thin wrappers around the pure steps, with this filter's model ---------------------------
    def predict(self, state: Any) -> Any:
        """One predict step with the transition from step ``state.t - 1`` (see
        :func:`predict`); with a learned noise scale, of the θ part of a
        :class:`~possibly.filters.noise_scale.NoiseScaleState` (the scale is unchanged). A
        plain state only: the robust start's mixture (what :meth:`init` and :meth:`step`
        return during the first steps) is refused; predict its leading hypothesis,
        ``predict(state.current)``."""
        if self._scale is not None:
            return self._scale.predict(state)
        if isinstance(state, KalmanStartState):
            raise _start_state_error(state)
        _check_state(state, self.state_dim)
        return _predict(state, self.model._transition(max(state.t - 1, 0)))

    def _observations(self, ys) -> tuple[np.ndarray, tuple[int, ...], Any]:
        index = time_labels(ys, 0)
        ys = _check_observation_values(ys, "ys")
        m = self.obs_dim
        if ys.ndim == 1 and m == 1:
            ys = ys[:, None]
        if ys.ndim < 2 or ys.shape[-1] != m:
            hint = ""
            if m == 1 and ys.ndim == 2 and ys.shape[0] == 1:
                hint = ": a row vector? pass ys.ravel() for one series of T values"
            elif m == 1 and ys.ndim >= 2:
                hint = ": a batch of series (B, T)? pass ys[..., None]"
            raise ValueError(f"ys must have shape (T, {m}) or (B, T, {m})"
                             f"{' or (T,)' if m == 1 else ''}, got {ys.shape}{hint}")
        if ys.shape[-2] < 1:
            raise ValueError("ys must contain at least one time step")
        self.model._check_length(ys.shape[-2])
        batch = ys.shape[:-2]
        return ys.reshape((-1,) + ys.shape[-2:]), batch, index

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
        mat = cast(np.ndarray, state.precision if state.information_form else state.covariance)
        mat = np.broadcast_to(mat, batch + (n, n)).reshape(size, n, n).copy()
        if state.information_form:
            return KalmanState(mean.copy(), None, mat)
        return KalmanState(mean.copy(), mat, None)

    def _compiled(self, engine: str, call: AutoCall | None = None) -> Any:
        """The compiled loop's module if ``engine`` selects it for this call (a batch
        ``call``: as :class:`~possibly.filters._common.AutoHistory` chooses), else None."""
        # once loaded, the compiled loop at every batch size (as fast as numpy's batched
        # steps or faster, from 1 to 10,000 series; benchmarks/bench_filtering.py --speed)
        fits = self.model.compiles

        def load() -> Any:
            from possibly.filters import kalman_numba

            return kalman_numba

        return compiled_module(engine, load, None if fits else (
            "engine='numba' needs a time-invariant model whose H has full row rank; use "
            "engine='numpy'"), call)

    def _auto_call(self, kernel: str, series: int, steps: int, weight: float = 1.0
                   ) -> AutoCall:
        """A batch call of ``series`` series of ``steps`` steps on ``kernel`` (compiled for
        this model's numbers of states and observed components)."""
        n = self.state_dim
        return AutoCall((kernel, n, self.obs_dim), numpy_work(steps, series, n, weight))

    def filter(self, ys, prior: MultivariateNormal | None = None, *,
               keep: str | Iterable[str] = "all", engine: str = "auto") -> FilterResult:
        """Filter one or a batch of series.

        Parameters
        ----------
        ys : array_like, shape (..., T, m) (or (T,) when m = 1), or a pandas Series/DataFrame
            Observations; rows (or components) that are NaN, or masked in a numpy masked
            array, are missing: predict only. A pandas index is kept for
            :meth:`FilterResult.to_frame`. Complex values and dates/times are refused.
        prior : MultivariateNormal, optional
            Possibility function of the first state θ_1, before y_1 (batch dims broadcast
            with those of ``ys``); default the filter's ``prior``; ``None`` there too is the
            uninformative prior 1, handled exactly.
        keep : "all" or tuple of str
            What to store per step besides ``log_consistency`` and ``discount``:
            ``("mean",)``, ``("mean", "variance")``, or with ``"covariance"`` and
            ``"predicted"`` (predicted means and covariances); ``"all"`` (default) is all of
            them and is what :func:`possibly.filters.smoother.smooth` needs. 10k series × 1000
            steps of the constant-velocity model hold 305 MiB with ``("mean",)``.
        engine : {"auto", "numpy", "numba"}
            ``"numba"``: a compiled loop (needs numba; time-invariant models with ``H`` of full
            row rank), much faster for one or a few series and at least as fast for large
            batches (measured up to 10,000 series); ``"numpy"``: batched numpy steps. Both
            agree to about 1e-12. The first compiled call of a process loads numba and the
            loop (the very first on a machine compiles it, many times longer, then caches it
            on disk). ``"auto"`` (default): numpy's steps while the process has not loaded
            the compiled loop and its calls' numpy work (steps × series, more with more
            states) stays within a budget of about that loading's cost, then the compiled
            loop when numba is installed and the model fits it; the choice depends only on
            the calls made before in the process (docs/numerics.md, "The Kalman filters'
            `engine="auto"`").

        Returns
        -------
        FilterResult
            A :class:`~possibly.filters.noise_scale.NoiseScaleResult` with a learned noise
            scale (which keeps every field whatever ``keep``, and takes its ``prior`` from
            the constructor only).
        """
        keep = _keep_set(keep)
        if self._scale is not None:
            _no_prior_override(prior)
            return self._scale.fit(ys, engine=engine, predicted=True, stacklevel=4)
        arr, batch, index = self._observations(ys)
        return self._filter(arr, batch, index, self.prior if prior is None else prior, keep,
                            engine, self._starts(prior))

    def _filter(self, arr: np.ndarray, batch: tuple[int, ...], index: Any,
                prior: MultivariateNormal | None, keep: frozenset[str], engine: str,
                starts: bool, stacklevel: int = 4) -> FilterResult:
        """:meth:`filter` of the checked observations ``arr`` (B, T, m) from ``prior`` (None:
        uninformative), with the robust start if ``starts`` (else the plain recursion); a
        warning names the caller ``stacklevel`` frames up."""
        size, T, _ = arr.shape
        compiled = self._compiled(engine, self._auto_call("filter", size, T))
        state = self._initial(prior, batch, size)
        # time-major storage: each step writes contiguous blocks
        ys_t = np.ascontiguousarray(np.moveaxis(arr, 1, 0))
        out = _Buffer.empty(keep, T, size, self.state_dim)
        t = 0
        if compiled is not None and (starts or state.information_form):
            # the start's mixture (one hypothesis without it) up to its collapse, compiled
            # in information form too
            done = self._compiled_start(compiled, state, ys_t, out, starts)
            if done is None:
                compiled = None  # singular by rounding: numpy's steps and fallbacks
            else:
                state, t = done
        if starts and t == 0:
            state, t = self._run_start(start_init(state, (size,)), ys_t, out)
        state = self._run_plain(state, ys_t, t, out, compiled)
        warn_if_mostly_discounted(out.arrays.discount.T, stacklevel)
        return out.result(batch, state, state_names=self.model.names, dim=self.dim,
                          index=index)

    def _run_start(self, start: KalmanStartState, ys_t: np.ndarray,
                   out: _Buffer) -> tuple[KalmanState, int]:
        """The robust start's steps of :meth:`filter` in numpy (robust_start.py; the
        reference of :meth:`_compiled_start`); returns the leader's state at the collapse (or
        at the end) and the next step."""
        state: Any = None  # ys_t has at least one step
        for t in range(ys_t.shape[0]):
            new, info, predicted, state = start_step(start, ys_t[t], self._plain_step,
                                                     self.obs_dim)
            out.record(t, predicted, state, info)
            if not isinstance(new, KalmanStartState):
                return state, t + 1
            start = new
        return state, ys_t.shape[0]

    def _run_plain(self, state: KalmanState, ys_t: np.ndarray, t0: int, out: _Buffer,
                   compiled: Any) -> KalmanState:
        """Steps ``t0..T-1`` of :meth:`filter` from ``state``: the compiled loop once the
        state is in covariance form (numpy's steps, with their fallbacks, where a matrix is
        singular by rounding); returns the final state."""
        for t in range(t0, ys_t.shape[0]):
            if compiled is not None and not state.information_form:
                final = self._run_compiled(compiled, state, ys_t, t, out.arrays)
                if final is not None:
                    return final
                compiled = None  # singular by rounding: numpy's fallbacks from step t
            predicted, info, state = self._plain_step(state, ys_t[t])
            out.record(t, predicted, state, info)
        return state

    def _run_compiled(self, compiled: Any, state: KalmanState, ys_t: np.ndarray, t: int,
                      arrays: KernelOutputs) -> KalmanState | None:
        """Steps ``t..T-1`` in the compiled loop from ``state`` (covariance form), written
        into ``arrays``; the final state, or None if a matrix is singular by rounding."""
        assert state.covariance is not None  # covariance form
        mean, cov = state.mean.copy(), state.covariance.copy()
        if compiled.run(ys_t, t, mean, cov, self._kernel_model(), self._kernel_rule(),
                        *compiled.sizes(self.state_dim, self.obs_dim), arrays):
            return KalmanState(mean, cov, None, ys_t.shape[0])
        return None

    def _kernel_model(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(F, Q, H, R)`` of the compiled loop (a time-invariant model)."""
        model = self.model
        F, Q, H, R = kernel_arrays(model.F, model.Q, model._observation.H, model._observation.R)
        return F, Q, H, R

    def _kernel_rule(self) -> tuple[bool, float, float, np.ndarray]:
        """``(robust, dim, tau, log_c0)`` of the compiled loop: ``tau`` NaN for none, the
        ``log_c0`` table zeros for the paper's discount."""
        # a writeable copy: numba compiles its loops again for a read-only array (the
        # table is shared, read-only), and the streaming step passes a writeable one
        levels = np.zeros(self.obs_dim + 1) if self._log_c0 is None else self._log_c0.copy()
        return self.robust, self.dim, np.nan if self.tau is None else self.tau, levels

    def _compiled_start(self, compiled: Any, state: KalmanState, ys_t: np.ndarray,
                        out: _Buffer, starts: bool, lead: np.ndarray | None = None
                        ) -> tuple[KalmanState, int] | None:
        """The robust start's steps up to its collapse (``starts``; else the plain recursion
        as a mixture of one hypothesis, over as many steps) from the prior ``state`` in the
        compiled loop (``kalman_numba.run_start``), information-form steps included, the
        leader's outputs written into ``out`` and each series' final leader into ``lead``
        (given: B integers, zeros). Returns the leader's state and the next step, or None
        where numpy must run them (a matrix singular by rounding, or ``F`` not invertible
        while a direction is uninformed)."""
        T, size, m = ys_t.shape
        n = self.state_dim
        t_end = min(T, K + WINDOW)
        tables = mixture_tables(m) if starts else mixture_tables(m, 0, 0)
        tr, ob = self.model._transition(0), self.model._observation
        f_inv = tr.F_inv if tr.F_inv is not None else np.zeros((n, n))
        inverse = (f_inv, tr.F_inv is not None, np.ascontiguousarray(tr.G),
                   np.ascontiguousarray(tr.Qg_inv), ob.W)
        info = state.information_form
        mean = state.mean.copy()
        mat = cast(np.ndarray, state.precision if info else state.covariance).copy()
        precisions = (np.empty((t_end, size, n, n)), np.empty((t_end, size, n, n)))
        forms = np.zeros((t_end, 2), dtype=bool)
        status = compiled.run_start(ys_t, 0, t_end, mean, mat, info, self._kernel_model(),
                                    inverse, self._kernel_rule(), tables,
                                    *compiled.sizes(n, m), out.arrays, precisions, forms,
                                    np.zeros(size, dtype=np.int64) if lead is None else lead)
        if status == 0:
            return None
        # the steps in information form (a prefix; the loop wrote their covariances): their
        # precisions, as numpy's record
        o = out.arrays
        for kept, precs, form, lists in (
                (o.keep_variance, precisions[0], forms[:, 0], out.filtered_precisions),
                (o.keep_predicted, precisions[1], forms[:, 1], out.predicted_precisions)):
            steps = int(form.sum())
            if kept and steps:
                lists.extend(precs[:steps])
        final = (KalmanState(mean, None, mat, t_end) if status == 2
                 else KalmanState(mean, mat, None, t_end))
        return final, t_end

    def smooth(self, ys, prior: MultivariateNormal | None = None, *,
               engine: str = "auto") -> Any:
        """Possibilistic RTS smoother: :meth:`filter`, then
        :func:`possibly.filters.smoother.smooth`, both with ``engine`` (``"auto"``: each as
        :meth:`filter` chooses; the compiled backward pass serves every model).

        With the robust start, the smoother of the hypothesis the start settled on (its
        outliers missing); those rejected observations are reported as observed and
        discounted: discount 0 and their consistency with the smoothed state at their step
        (which the other observations make). :meth:`filter` reports each step as its leader
        saw it then (an observation that only later ones expose was taken whole there).

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> kf = ps.KalmanFilter(*ps.filters.constant_velocity())
        >>> res = kf.smooth(np.array([0.0, 1.1, 1.9, 3.2, 30.0, 5.0]))
        >>> res.mean[:, 1].round(3)                   # velocities, the outlier ignored
        array([1.004, 1.004, 1.004, 1.004, 1.004, 1.004])
        >>> res.discount.round(3)
        array([1., 1., 1., 1., 0., 1.])

        With a learned noise scale, the smoother of the forward pass with each step's noise
        (:meth:`~possibly.filters.noise_scale.NoiseScaleEngine.smooth`): the exact RTS
        smoother of the model whose observation noise at step ``t`` is ``R₀ s_{t-1} / ρ_t``
        (``s_{t-1}`` the scale learned before ``y_t``, ``ρ_t`` its discount), i.e. of the
        filter as it ran; with the robust start, as above, that of the hypothesis the start
        settled on (its scale factor, its outliers missing and reported with discount 0).
        (The smoother with the final scale ``s_T`` throughout is that
        of ``KalmanFilter`` on the model with ``R = s_T R₀``, a different filter: its
        discounts change with the noise.)
        """
        if self._scale is not None:
            _no_prior_override(prior)
            return self._scale.smooth(ys, engine=engine, stacklevel=4)
        if self._starts(prior):
            # looking back, the robust start has settled on one hypothesis: smooth the plain
            # recursion in which its outliers are missing (exactly that hypothesis' filter)
            arr, batch, index = self._observations(ys)
            first = self.prior if prior is None else prior
            ys_b = arr.reshape(batch + arr.shape[1:])
            masked = self._settled_start(ys_b, first, engine)
            fr = self._filter(masked.reshape(arr.shape), batch, index, first,
                              _keep_set("all"), engine, False)
            res = smooth(self.model, fr, engine=engine)
            return res if masked is ys_b else self._report_rejected(res, ys_b, masked)
        return smooth(self.model, self.filter(ys, prior, engine=engine), engine=engine)

    def _settled_start(self, ys: np.ndarray, prior: MultivariateNormal | None,
                       engine: str) -> np.ndarray:
        """``ys`` (..., T, m) with the observations that the robust start settles on as
        outliers missing (as :func:`~possibly.filters.robust_start.start_masked`; ``ys``
        itself where it settles on none), from ``prior`` (None: uninformative). Each
        hypothesis is the plain filter with its outliers missing: compiled, the start's own
        mixture over its steps reports the leader at the collapse; in numpy, the hypotheses
        run over the start's steps as extra series, then their consistencies score the
        mixture step by step to that leader."""
        steps = min(ys.shape[-2], K + WINDOW)
        drop = start_hypotheses(K, MAX_OUTLIERS)  # the rows both leaders index
        cols = min(K, steps)
        flat = ys.reshape((-1,) + ys.shape[-2:])
        size = len(flat)
        # the call of the hypotheses as extra series (as engine="auto" counts it)
        compiled = self._compiled(engine, self._auto_call("filter", len(drop) * size, steps))
        lead = None if compiled is None else self._compiled_leader(
            compiled, self._initial(prior, ys.shape[:-2], size), flat[:, :steps])
        if lead is None:
            lead = self._hypotheses_leader(ys, flat, prior, "numpy" if compiled is None
                                           else engine, drop, steps)
        if not lead.any():  # the hypothesis that drops nothing
            return ys
        masked = flat.copy()
        head = masked[:, :cols]
        head[drop[lead][:, :cols]] = np.nan
        return masked.reshape(ys.shape)

    def _compiled_leader(self, compiled: Any, prior: KalmanState, ys: np.ndarray
                         ) -> np.ndarray | None:
        """Each series' leading hypothesis after the robust start's steps ``ys`` (B, steps,
        m) from ``prior``, in the compiled start (``kalman_numba.run_start``), or None where
        numpy must run them."""
        size, steps, _ = ys.shape
        lead = np.zeros(size, dtype=np.int64)
        out = _Buffer.empty(frozenset({"mean"}), steps, size, self.state_dim)
        ys_t = np.ascontiguousarray(ys.swapaxes(0, 1))
        if self._compiled_start(compiled, prior, ys_t, out, True, lead) is None:
            return None
        return lead

    def _hypotheses_leader(self, ys: np.ndarray, flat: np.ndarray,
                           prior: MultivariateNormal | None, engine: str, drop: np.ndarray,
                           steps: int) -> np.ndarray:
        """Each series' leading hypothesis (``flat``: ``ys`` as (B, T, m)) after the robust
        start's first ``steps``, from the hypotheses ``drop`` run over those steps as extra
        series of the plain filter."""
        cols = min(K, steps)
        # hypotheses first: the prior's batch shape broadcasts with the rest
        yh = np.repeat(ys[None, ..., :steps, :], len(drop), axis=0)
        head = yh[..., :cols, :]
        mask = drop[:, :cols].reshape((len(drop),) + (1,) * (ys.ndim - 2) + (cols,))
        head[np.broadcast_to(mask, head.shape[:-1])] = np.nan
        with warnings.catch_warnings():  # a wrong hypothesis discounts much: no news
            warnings.simplefilter("ignore", MostlyDiscountedWarning)
            log_c = self._filter(yh.reshape((-1,) + yh.shape[-2:]), yh.shape[:-2], None,
                                 prior, _keep_set(("mean",)), engine, False).log_consistency
        log_c = np.moveaxis(log_c.reshape(len(drop), -1, steps), 0, 1)  # (B, H, steps)
        return settled_leader(log_c, ~np.isnan(flat[:, :steps]).all(-1), self.obs_dim)

    def _report_rejected(self, res: Any, ys: np.ndarray, masked: np.ndarray) -> Any:
        """``res`` (a SmootherResult) with the observations that the robust start rejected
        (observed in ``ys``, missing in ``masked``) reported by :func:`with_rejected`."""
        ob = self.model._observation

        def log_consistency(mean: np.ndarray, cov: np.ndarray, y: np.ndarray) -> np.ndarray:
            if ob.resid is None and ob.H.ndim == 2 and ob.H.shape[0] == 1:  # as _update_scalar
                return _scalar_log_c(cov, mean, y, ob.H[0], ob.R[0, 0])[-1]
            _, info = _update(KalmanState(mean, cov), y, ob, True, self.dim, None)
            return info.log_consistency

        # the start's steps only: it rejects nothing later
        cols = min(K, ys.shape[-2])
        rejected = np.zeros(ys.shape[:-1], dtype=bool)
        rejected[..., :cols] = (~np.isnan(ys[..., :cols, :]).all(-1)
                                & np.isnan(masked[..., :cols, :]).all(-1))
        return dataclasses.replace(res, filtered=with_rejected(
            res.filtered, rejected, res.mean, res.covariance, ys, log_consistency))


class NoiseScaleKalmanFilter(KalmanFilter):
    """The robust Kalman filter learning the scale of ``R`` online:
    ``KalmanFilter(..., learn_noise_scale=True)`` (see :mod:`possibly.filters.noise_scale`
    for the recursion, and :class:`KalmanFilter` for the arguments; ``dim`` defaults to
    ``n + 1``). It is a :class:`KalmanFilter`, with the same verbs; its results are
    :class:`~possibly.filters.noise_scale.NoiseScaleResult` (the scale after each step).

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.filters.kalman import NoiseScaleKalmanFilter
    >>> from possibly.filters.state_space import constant_velocity
    >>> F, Q, H, R = constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    >>> rng = np.random.default_rng(2)          # simulate the model, with R = 4
    >>> acc = 0.05 * rng.standard_normal(1000)
    >>> vel = np.cumsum(acc)
    >>> pos = np.cumsum(vel - acc / 2)          # pos_t = pos_t-1 + vel_t-1 + acc_t / 2
    >>> ys = pos + 2.0 * rng.standard_normal(1000)
    >>> res = NoiseScaleKalmanFilter(F, Q, H, R).fit(ys)                # told R = 1
    >>> round(float(res.noise_scale[-1]), 1)                # learned: R ≈ 4.0 (truth 4)
    4.0
    >>> res = NoiseScaleKalmanFilter(F, Q, H, 100 * R).fit(ys)          # told R = 100
    >>> round(float(100 * res.noise_scale[-1]), 1)          # from 25x too large
    4.0
    >>> isinstance(NoiseScaleKalmanFilter(F, Q, H, R), KalmanFilter)
    True
    """

    def __init__(self, model: Any, Q: Any = None, H: Any = None, R: Any = None, *,
                 robust: bool = True, tau: float | None = None, dim: float | None = None,
                 coverage: float | None = COVERAGE,
                 prior: MultivariateNormal | None = None, robust_start: bool = True,
                 scale_prior: Any = (1.0, 1.0), omega: float = 0.99,
                 scale_dim: float = 2.0) -> None:
        super().__init__(model, Q, H, R, robust=robust, tau=tau, dim=dim, coverage=coverage,
                         prior=prior, robust_start=robust_start, learn_noise_scale=True,
                         scale_prior=scale_prior, omega=omega, scale_dim=scale_dim)


_new_object = object.__new__
_float64 = np.float64


class _LiveStep:
    """The compiled loop's step (``kalman_numba.step``) on one series' state, kept in flat
    buffers between the calls of :meth:`KalmanFilter.update`."""

    def __init__(self, compiled: Any, state: KalmanState, model: tuple[np.ndarray, ...],
                 rule: tuple[Any, ...], dim: float) -> None:
        self.step_fn = compiled.step
        self.io, self.buffer, self.settings = compiled.step_buffers(model, rule)
        self.n, self.m = model[2].shape[1], model[2].shape[0]
        self.sizes = compiled.sizes(self.n, self.m)
        self.buffer[:self.n] = state.mean
        self.buffer[self.n:] = cast(np.ndarray, state.covariance).ravel()
        self.t = state.t
        self.dim = dim

    def step(self, y: Any) -> KalmanInfo | None:
        """One observation (a float when ``m = 1``, else ``m`` floats); None where a matrix
        is singular by rounding (the state is then unchanged: the caller runs numpy's step)."""
        m, n, io = self.m, self.n, self.io
        saved = None
        if m == 1:
            io[1] = y  # m = 1 solves no system: the step never fails
        else:
            io[m:2 * m] = y
            saved = self.buffer.copy()
        if not self.step_fn(io, self.buffer, self.settings, self.t > 0, *self.sizes):
            self.buffer[:] = cast(np.ndarray, saved)
            return None
        self.t += 1
        log_c = io[2 * m + 2 * n + 1]  # numpy scalars, as the numpy step's Info
        # KalmanInfo(...) with its fields written at once (a frozen dataclass's __init__ sets
        # each through object.__setattr__); γ = c^(1/dim) by math.exp, within an ulp of the
        # numpy step's np.exp
        info = _new_object(KalmanInfo)
        info.__dict__.update(log_consistency=log_c, discount=io[2 * m + 2 * n + 3],
                             gamma=_float64(math.exp(log_c / self.dim)))
        return info

    def state(self) -> KalmanState:
        n = self.n
        return KalmanState(self.buffer[:n].copy(), self.buffer[n:].reshape(n, n).copy(), None,
                           self.t)


def _plain_observation(y: Any, m: int) -> Any:
    """``y`` when it is one plain observation of ``m`` components the compiled step takes as
    it is (a finite or NaN float of magnitude at most 1e300 when ``m = 1``; a checked array
    of shape ``(m,)`` otherwise), else None (the numpy step checks it)."""
    if m == 1 and (type(y) is float or type(y) is np.float64):
        return y if -1e300 <= y <= 1e300 or y != y else None
    try:
        arr = _check_observation_values(y)
    except (TypeError, ValueError):
        return None
    if arr.shape == (m,) or (m == 1 and arr.shape == ()):
        return float(arr.reshape(-1)[0]) if m == 1 else arr
    return None


def _model(model: Any, Q: Any, H: Any, R: Any) -> LinearGaussianModel:
    """The model from a LinearGaussianModel or the four matrices ``F, Q, H, R``."""
    if isinstance(model, LinearGaussianModel):
        if Q is not None or H is not None or R is not None:
            raise TypeError("give either a LinearGaussianModel or the matrices F, Q, H, R, "
                            "not both")
        return model
    if Q is None or H is None or R is None:
        raise TypeError("KalmanFilter needs a LinearGaussianModel or the four matrices "
                        "F, Q, H, R")
    return LinearGaussianModel(model, Q, H, R)


def _no_prior_override(prior: MultivariateNormal | None) -> None:
    if prior is not None:
        raise ValueError("prior: with learn_noise_scale=True the prior is the constructor's "
                         "(KalmanFilter(..., prior=...)); pass prior=None here")
