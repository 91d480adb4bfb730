"""Compiled (numba) loop of the Kalman filter with a learned noise scale, for single series and
small batches (``KalmanFilter(..., learn_noise_scale=True).fit(engine="numba")``; requires
``pip install possibly[fast]``).

The same formulas as the numpy step of :mod:`possibly.filters.noise_scale` (docs/math.md §8),
in covariance form, for a time-invariant model whose ``H`` has full row rank (so the
residual has ``m`` degrees of freedom): predict ``F μ, F P Fᵀ + Q``; ``q = vᵀ (λ̂ H P Hᵀ + R₀)⁻¹ v``,
``log c = -(α + m/2) log(1 + q / 2β)``; the Kalman update with noise ``R₀ / (ρ_θ λ̂)``; the
ω-split update of ``(α, β)`` with ``ρ_λ`` and ``κ(α)`` read from the same table (direct
quadrature outside it). A row with a NaN is missing (predict only). The information-form
start and the robust start's mixture run in numpy first. Tested equal to the numpy path to
~1e-12 (not bit for bit: the order of floating-point operations differs).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from possibly.compiled import discount_scalar

__all__ = ["run"]

_NEGLIGIBLE = 1e-12  # as possibly.filters.noise_scale._NEGLIGIBLE
_DIFFUSE = 1e4  # as possibly.filters.kalman._DIFFUSE (the numpy step)


@numba.njit(cache=True, nogil=True)
def _interp_inside(u, grid, values):  # pragma: no cover - compiled
    """``np.interp(u, grid, values)`` for ``grid[0] <= u <= grid[-1]`` on an increasing grid,
    with numpy's arithmetic (the same interval, slope and NaN retries): numba's own
    ``np.interp`` compiles for several seconds on a cold cache."""
    last = grid.shape[0] - 1
    if u >= grid[last]:
        return values[last]
    lo, hi = 0, last  # grid[lo] <= u < grid[hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if grid[mid] <= u:
            lo = mid
        else:
            hi = mid
    if grid[lo] == u:
        return values[lo]
    slope = (values[lo + 1] - values[lo]) / (grid[lo + 1] - grid[lo])
    out = slope * (u - grid[lo]) + values[lo]
    if math.isnan(out):  # as numpy: from the other end, then a flat interval's value
        out = slope * (u - grid[lo + 1]) + values[lo + 1]
        if math.isnan(out) and values[lo] == values[lo + 1]:
            out = values[lo]
    return out


@numba.njit(cache=True, nogil=True)
def _kappa(alpha, m, scale_dim, tau, grid, values, nodes_x, nodes_w):  # pragma: no cover
    """κ(α): the table where it covers ``log α``, else the quadrature (``kappa_direct``)."""
    u = math.log(alpha)
    if grid[0] <= u <= grid[-1]:
        return _interp_inside(u, grid, values)
    num = 0.0
    den = 0.0
    for i in range(nodes_x.shape[0]):
        x = nodes_x[i]
        rho = discount_scalar(-(alpha + 0.5 * m) * math.log1p(x / (2.0 * alpha)), scale_dim,
                              tau, True)
        num += nodes_w[i] * rho * x
        den += nodes_w[i] * rho
    return num / (m * den)


@numba.njit(cache=True, nogil=True)
def _information_form(pk, P, H, R, hph, s):  # pragma: no cover - compiled
    """``(P⁻¹ + s Hᵀ R⁻¹ H)⁻¹`` where ``s H P Hᵀ ≻ 10⁴ R`` in every direction of a square
    ``H`` (as possibly.filters.kalman._information_update), else ``pk`` unchanged."""
    L = np.linalg.cholesky(R)
    a = np.linalg.solve(L, s * hph)
    w = np.linalg.solve(L, a.T)
    if not np.linalg.eigvalsh(0.5 * (w + w.T))[0] > _DIFFUSE:
        return pk
    out = np.linalg.inv(np.linalg.inv(P) + s * (H.T @ np.linalg.solve(R, H)))
    return 0.5 * (out + out.T)


@numba.njit(cache=True, nogil=True)
def _updated_covariance(P, gain, H, R, hp, hph, s, square):  # pragma: no cover - compiled
    """The covariance after the update with noise ``R₀ / s`` (``hp = H P``, ``hph = H P Hᵀ``),
    before symmetrisation: ``P - K H P``, or where the prior is diffuse relative to the noise
    the stable forms of the numpy step (one state: ``P r / (s h² P + r)``; else Joseph, and
    the information form for a square ``H``: ``square`` True, None for any other ``H``, which
    leaves that branch out of the compiled loop before typing)."""
    m, n = H.shape
    diffuse = False
    for i in range(m):
        if s * hph[i, i] > _DIFFUSE * R[i, i]:
            diffuse = True
    if diffuse and m == 1 and n == 1:  # P r / (s h² P + r), as the numpy step
        return P * (R[0, 0] / (s * hph[0, 0] + R[0, 0]))
    if diffuse:  # Joseph form, as possibly.filters.kalman._joseph
        a_ = np.eye(n) - gain @ H
        pk = a_ @ P @ a_.T + (gain @ R @ gain.T) / s
        if square is not None and m == n and m > 1:
            pk = _information_form(pk, P, H, R, hph, s)
        return pk
    return P - gain @ hp


@numba.njit(cache=True, nogil=True)
def run(ys, t0, mean, cov, alpha, beta, model, rule, kappa_table, out,
        square):  # pragma: no cover - compiled
    """Filter steps ``t0..T-1`` of every series, writing the time-major outputs in place.

    ``ys`` has shape (T, B, m); ``mean`` (B, n), ``cov`` (B, n, n), ``alpha`` and ``beta``
    (B,) are the state before step ``t0`` (predicted first unless ``t0 == 0``) and are
    overwritten with the final state. ``model`` is ``(F, Q, H, R)``; ``rule`` the named tuple
    ``(robust, dim, scale_dim, tau, chi2_p, omega)`` of :mod:`possibly.filters.noise_scale`:
    ``tau`` NaN for no threshold, ``chi2_p`` the χ²_m quantile at the coverage of θ's relative
    discount (0: the paper's); ``kappa_table`` the named tuple ``(grid, values, nodes_x,
    nodes_w)``: the table of κ over log α (a robust filter's; unused otherwise: κ = 1) and
    the quadrature nodes outside it; ``out`` the named tuple of the time-major outputs
    ``(mean, covariance, log_consistency, discount, noise_scale)``; ``square`` True for a
    square ``H`` with ``m > 1`` (its diffuse updates may take the information form), else
    None (that code is then not compiled: a version of its own).
    """
    F, Q, H, R = model
    robust, dim, scale_dim, tau, chi2_p, omega = rule
    grid, values, nodes_x, nodes_w = kappa_table
    o_mean, o_cov, o_logc, o_disc = out.mean, out.covariance, out.log_consistency, out.discount
    o_scale = out.noise_scale
    T, B, m = ys.shape
    Ft = F.T.copy()
    Ht = H.T.copy()
    for b in range(B):
        x = mean[b].copy()
        P = cov[b].copy()
        a = alpha[b]
        bb = beta[b]
        for t in range(t0, T):
            if t > 0:
                x = x @ Ft
                pf = (P @ Ft).T @ Ft
                P = 0.5 * (pf + pf.T) + Q
            y = ys[t, b]
            missing = False
            for i in range(m):
                if math.isnan(y[i]):
                    missing = True
            if missing:
                log_c = math.nan
                rho = math.nan
            else:
                lam = a / bb
                v = y - H @ x
                hp = H @ P
                hph = hp @ Ht
                # v as one column: the same LAPACK call (gesv, one right-hand side) and
                # the same compiled solve as the gain's below, not a second version
                q = v @ np.linalg.solve(lam * hph + R, v.reshape((m, 1))).T.ravel()
                q = min(q, 1e300)
                log_c = min(-(a + 0.5 * m) * math.log1p(0.5 * q / bb), 0.0)
                log_c0 = -(a + 0.5 * m) * math.log1p(chi2_p / (2.0 * a))
                rho = discount_scalar(min(log_c - log_c0, 0.0), dim, tau, robust)
                s = rho * lam
                if s > _NEGLIGIBLE:
                    # K = P Hᵀ (H P Hᵀ + R₀/s)⁻¹ = s P Hᵀ (s H P Hᵀ + R₀)⁻¹
                    gain = np.linalg.solve(s * hph + R, s * hp).T
                    x = x + gain @ v
                    pk = _updated_covariance(P, gain, H, R, hp, hph, s, square)
                    P = 0.5 * (pk + pk.T)
                    if robust:
                        kappa = _kappa(a, m, scale_dim, tau, grid, values, nodes_x, nodes_w)
                    else:
                        kappa = 1.0
                    rl = discount_scalar(log_c, scale_dim, tau, robust)
                    a, bb = (omega * a + rl * ((1.0 - omega) * a + 0.5 * m * kappa),
                             omega * bb + rl * ((1.0 - omega) * bb + 0.5 * q))
            # element loops, not o_mean[t, b] = x: a slice assignment compiles its shape
            # check's error message, a large part of this loop's compile time
            n = x.shape[0]
            for i in range(n):
                o_mean[t, b, i] = x[i]
                for j in range(n):
                    o_cov[t, b, i, j] = P[i, j]
            o_logc[t, b] = log_c
            o_disc[t, b] = rho
            o_scale[t, b] = bb / a
        for i in range(x.shape[0]):
            mean[b, i] = x[i]
            for j in range(x.shape[0]):
                cov[b, i, j] = P[i, j]
        alpha[b] = a
        beta[b] = bb
