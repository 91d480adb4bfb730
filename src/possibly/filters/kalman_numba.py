"""Compiled (numba) loop of the covariance-form Kalman filter, for single series and small
batches (``KalmanFilter.filter(engine="numba")``; requires ``pip install possibly[fast]``).

The same formulas as the numpy kernels of :mod:`possibly.filters.kalman` (docs/math.md §2):
predict ``F μ, F P Fᵀ + Q``; update with the innovation ``v = y - H μ``, ``log c = -½ vᵀ S⁻¹ v``
(scaled by a power of two when ``v`` is huge), the (relative) discount from
:func:`possibly.compiled.discount_scalar` (the twin of :func:`possibly.inference.discount`)
and the gain ``K = ρ P Hᵀ (ρ H P Hᵀ + R)⁻¹``; missing components decoupled exactly as in
``_observation_at``. Time-invariant models with an onto ``H`` only; the information-form
start runs in numpy first. Tested equal to the numpy path to ~1e-12 (not bit for bit: the
order of floating-point operations differs).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from possibly.compiled import discount_scalar

__all__ = ["run"]

_BIG = 1e100  # as possibly.filters.kalman._BIG


@numba.njit(cache=True, nogil=True)
def run(ys, t0, mean, cov, F, Q, H, R, robust, dim, tau, log_c0,
        o_mean, o_var, o_cov, o_pmean, o_pcov, o_logc, o_disc,
        keep_var, keep_cov, keep_pred):  # pragma: no cover - compiled
    """Filter steps ``t0..T-1`` of every series, writing the time-major outputs in place.

    ``ys`` has shape (T, B, m); ``mean`` (B, n) and ``cov`` (B, n, n) are the state before
    step ``t0`` (predicted first unless ``t0 == 0``) and are overwritten with the final state.
    ``tau`` is NaN for no threshold; ``log_c0[k]`` is the reference log consistency of the
    relative discount with ``k`` observed components (zeros: the paper's discount). Outputs
    not kept may be empty arrays.
    """
    T, B, m = ys.shape
    n = F.shape[0]
    Ft = F.T.copy()
    for b in range(B):
        x = mean[b].copy()
        P = cov[b].copy()
        for t in range(t0, T):
            if t > 0:
                x = x @ Ft
                a = (P @ Ft).T @ Ft
                P = 0.5 * (a + a.T) + Q
            if keep_pred:
                o_pmean[t, b] = x
                o_pcov[t, b] = P
            y = ys[t, b]
            n_obs = 0
            for i in range(m):
                if not math.isnan(y[i]):
                    n_obs += 1
            if n_obs == 0:
                log_c = math.nan
                rho = math.nan
            elif m == 1:
                h = H[0]
                r = R[0, 0]
                ph = P @ h
                hph = ph @ h
                v = y[0] - x @ h
                s0 = hph + r
                log_c = min(-0.5 * v * v / s0, 0.0)
                rho = discount_scalar(min(log_c - log_c0[1], 0.0), dim, tau, robust)
                kk = rho / (rho * hph + r) if robust else 1.0 / s0
                k = kk * ph
                x = x + k * v
                for i in range(n):
                    for j in range(n):
                        P[i, j] -= k[i] * ph[j]
            else:
                y0 = np.zeros(m)
                Hm = H.copy()
                Rm = R.copy()
                for i in range(m):
                    if math.isnan(y[i]):
                        Hm[i, :] = 0.0
                        Rm[i, :] = 0.0
                        Rm[:, i] = 0.0
                        Rm[i, i] = 1.0
                    else:
                        y0[i] = y[i]
                hp = Hm @ P
                s0 = hp @ Hm.T + Rm
                v = y0 - Hm @ x
                big = np.abs(v).max()
                scale = 1.0
                if big > _BIG:  # exact power-of-two scaling: vᵀ S⁻¹ v cannot overflow
                    scale = 2.0 ** math.frexp(big)[1]
                vs = v / scale
                s_inv = np.linalg.inv(s0)
                q = vs @ s_inv @ vs
                log_c = -0.5 * q
                if scale != 1.0 and q > 0:
                    log_c = -0.5 * q * scale * scale
                log_c = min(log_c, 0.0)
                rho = discount_scalar(min(log_c - log_c0[n_obs], 0.0), dim, tau, robust)
                if robust:
                    gain = rho * hp.T @ np.linalg.inv(rho * (s0 - Rm) + Rm)
                else:
                    gain = hp.T @ s_inv
                x = x + (gain @ vs) * scale
                a = P - gain @ hp
                P = 0.5 * (a + a.T)
            o_mean[t, b] = x
            o_logc[t, b] = log_c
            o_disc[t, b] = rho
            if keep_cov:
                o_cov[t, b] = P
            if keep_var:
                for i in range(n):
                    o_var[t, b, i] = P[i, i]
        mean[b] = x
        cov[b] = P
