"""Outlier-robust Kalman filters from the literature, batched over trials in numpy.

Used by ``bench_filtering.py`` for the head-to-head with possibly's robust filter on WoLF's
2-D tracking experiment. Each filter was written from its paper, with the conventions of the
authors' published code (gerdm/rebayes-mini, ``rebayes_mini/methods/robust_filter.py``, and
gerdm/weighted-likelihood-filter ``experiments/``), read but not copied:

* WoLF-IMQ (Duran-Martin et al., ICML 2024): the likelihood weighted by the inverse
  multi-quadric ``w = c² / (c² + ‖y - H m⁻‖²)`` of the *raw* (not standardised) prediction
  error, i.e. the Kalman update with ``R / w``;
* WoLF-MD (same paper): a hard 0/1 weight, 1 when the Mahalanobis distance
  ``√(eᵀ R⁻¹ e)`` of the prediction error is below the threshold;
* KF-B, the Bernoulli (outlier indicator) filter of Wang, Li, Fang & Wang (IEEE SPL 2018),
  "Robust Gaussian Kalman filter with outlier detection": a beta-Bernoulli inlier indicator
  with a mean-field variational update iterated ``n_inner`` times; an observation whose
  inlier probability falls below ``tol_inlier`` is skipped. As in the authors' code, the
  indicator's evidence uses ``B = (y - H m)(y - H m)ᵀ`` at the current iterate, and the prior
  ``(α, β)`` is reset at every step;
* KF-IW, the variational filter of Agamennoni, Nieto & Nebot (IEEE TSP 2012), "Approximate
  inference in state-space models with heavy-tailed noise": an inverse-Wishart observation
  covariance per step with prior scale ``R`` and weight ``noise_scaling``,
  ``Λ = (s R + (y - H m)(y - H m)ᵀ + H P Hᵀ) / (s + 1)``, iterated ``n_inner`` times, Joseph
  form covariance update.

Every filter takes the prior of the state *before* the first prediction (WoLF's convention:
``z_0 ~ N(m_0, P_0)``, then predict, then update with ``y_1``) and returns the filtered means,
shape (B, T, n).
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma


def _predict(m, P, F, Q):
    return m @ F.T, F @ P @ F.T + Q


def _gain_update(m, P, v, H, R, w):
    """Kalman update with noise ``R / w`` per trial, written ``K = w P Hᵀ (w H P Hᵀ + R)⁻¹``
    so that ``w = 0`` (skip the observation) is exact."""
    ph = P @ H.T  # (B, n, m)
    hph = H @ ph
    w3 = w[:, None, None]
    gain = w3 * ph @ np.linalg.inv(w3 * hph + R)
    m_new = m + (gain @ v[..., None])[..., 0]
    P_new = P - gain @ np.swapaxes(ph, -1, -2)
    return m_new, 0.5 * (P_new + np.swapaxes(P_new, -1, -2))


def _init(ys, m0, P0):
    B = ys.shape[0]
    n = len(m0)
    return np.broadcast_to(m0, (B, n)).copy(), np.broadcast_to(P0, (B, n, n)).copy()


def kalman(ys, model, m0, P0):
    """Standard Kalman filter (the reference every robust filter must approach)."""
    return wolf_imq(ys, model, m0, P0, soft_threshold=np.inf)


def wolf_imq(ys, model, m0, P0, soft_threshold: float):
    F, Q, H, R = model
    m, P = _init(ys, m0, P0)
    out = np.empty(ys.shape[:2] + (len(m0),))
    c2 = float(soft_threshold) ** 2
    for t in range(ys.shape[1]):
        m, P = _predict(m, P, F, Q)
        v = ys[:, t] - m @ H.T
        w = np.ones(len(m)) if np.isinf(c2) else c2 / (c2 + (v * v).sum(-1))
        m, P = _gain_update(m, P, v, H, R, w)
        out[:, t] = m
    return out


def wolf_md(ys, model, m0, P0, threshold: float):
    F, Q, H, R = model
    W = np.linalg.inv(R)
    m, P = _init(ys, m0, P0)
    out = np.empty(ys.shape[:2] + (len(m0),))
    for t in range(ys.shape[1]):
        m, P = _predict(m, P, F, Q)
        v = ys[:, t] - m @ H.T
        dist = np.sqrt(np.einsum("bi,ij,bj->b", v, W, v))
        m, P = _gain_update(m, P, v, H, R, (dist < threshold).astype(float))
        out[:, t] = m
    return out


def bernoulli_kf(ys, model, m0, P0, alpha: float, beta: float, n_inner: int,
                 tol_inlier: float = 1e-7):
    """Wang et al. (2018); ``E[log π]``, ``E[log(1 - π)]`` as eqs. (29)-(30) of the paper."""
    F, Q, H, R = model
    W = np.linalg.inv(R)
    m, P = _init(ys, m0, P0)
    B = len(m)
    out = np.empty(ys.shape[:2] + (len(m0),))
    for t in range(ys.shape[1]):
        m_pred, P_pred = _predict(m, P, F, Q)
        y = ys[:, t]
        v = y - m_pred @ H.T
        e_in = np.ones(B)
        a, b = np.full(B, 1.0), np.full(B, 1.0)
        for _ in range(int(n_inner)):
            w = np.where(e_in < tol_inlier, 0.0, e_in)
            m, P = _gain_update(m_pred, P_pred, v, H, R, w)
            r = y - m @ H.T
            elog_pi = digamma(a) - digamma(a + b + 1)
            elog_1mpi = digamma(b + 1) - digamma(a + b + 1)
            log_in = elog_pi - 0.5 * np.einsum("bi,ij,bj->b", r, W, r)
            e_in = np.exp(log_in - np.logaddexp(log_in, elog_1mpi))
            a, b = alpha + e_in, beta + 1.0 - e_in
        out[:, t] = m
    return out


def inverse_wishart_kf(ys, model, m0, P0, noise_scaling: float, n_inner: int):
    F, Q, H, R = model
    n = len(m0)
    eye = np.eye(n)
    m, P = _init(ys, m0, P0)
    out = np.empty(ys.shape[:2] + (n,))
    for t in range(ys.shape[1]):
        m_pred, P_pred = _predict(m, P, F, Q)
        y = ys[:, t]
        v_pred = y - m_pred @ H.T
        ph = P_pred @ H.T
        m, P = m_pred, P_pred
        for _ in range(int(n_inner)):
            r = y - m @ H.T
            S = r[:, :, None] * r[:, None, :] + H @ P @ H.T
            lam = (noise_scaling * R + S) / (noise_scaling + 1.0)
            gain = ph @ np.linalg.inv(H @ ph + lam)
            m = m_pred + (gain @ v_pred[..., None])[..., 0]
            a = eye - gain @ H
            P = a @ P_pred @ np.swapaxes(a, -1, -2) + gain @ lam @ np.swapaxes(gain, -1, -2)
        out[:, t] = m
    return out
