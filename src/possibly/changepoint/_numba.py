"""Compiled inner loop of the normal-mean recursion (optional: ``pip install possibly[fast]``).

The same recursion as :func:`possibly.changepoint.recursion.step` with one
:class:`~possibly.changepoint.NormalMean` model, written with the same floating-point
expressions in the same order so that both engines give bit-identical results (checked by the
tests); the discount is :func:`possibly.compiled.discount_scalar`, the numba twin of
:func:`possibly.inference.discount`. Runs live in flat buffers ordered by start time; pruning
and merging compact them in place. This module imports nothing from the package that imports
it (no cycle): it takes and returns plain arrays.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from possibly.compiled import discount_scalar

__all__ = ["run_normal_mean"]


@numba.njit(cache=True, nogil=True)
def run_normal_mean(y, t0, start_in, log_w_in, mu_in, lam_in, sigma, log_h, rho, robust,
                    tau_or_nan, dim, log_tol, prune, merge_tol,
                    floor):  # pragma: no cover - compiled (covered through the detector)
    """Process ``y`` from the given runs; returns the new runs and the per-step outputs.

    ``floor`` is the model's evidence floor (``outlier_cost``; ``inf`` for the paper's
    recursion): a run whose increment falls below ``-floor`` gets ``-floor`` and is left
    unchanged."""
    n = y.size
    cap = start_in.size + n
    start = np.empty(cap, np.int64)
    log_w = np.empty(cap)
    mu = np.empty(cap)
    lam = np.empty(cap)
    keep = np.empty(cap, np.bool_)
    m = start_in.size
    start[:m] = start_in
    log_w[:m] = log_w_in
    mu[:m] = mu_in
    lam[:m] = lam_in
    out_start = np.empty(n, np.int64)
    out_mean = np.empty(n)
    out_lc = np.empty(n)
    out_g = np.empty(n)
    out_n = np.empty(n, np.int64)
    out_cp = np.empty(n)
    s2 = sigma * sigma
    merge = merge_tol > 0.0
    tol2 = merge_tol * merge_tol
    # max of log_w, carried from one step to the next (the state's own maximum at entry)
    cur_max = -math.inf
    for j in range(m):
        if log_w[j] > cur_max:
            cur_max = log_w[j]
    for i in range(n):
        t = t0 + i
        yi = y[i]
        # predict (the forgetting of λ is fused into the next pass)
        log_new = log_h + cur_max if m > 0 else 0.0
        start[m] = t
        log_w[m] = log_new
        mu[m] = 0.0
        lam[m] = 0.0
        m_old = m
        m += 1
        shift = 0.0  # subtracting 0.0 is exact: a missing value leaves log_w as it is
        if math.isnan(yi):
            out_lc[i] = math.nan
            out_g[i] = math.nan
            for j in range(m_old):
                lam[j] = lam[j] * rho
        else:
            log_c = -math.inf
            for j in range(m):
                if j < m_old:
                    lam[j] = lam[j] * rho
                d = yi - mu[j]
                v = log_w[j] + (-(0.5 * (d * d) * (lam[j] / (1.0 + lam[j] * s2))))
                if v > log_c:
                    log_c = v
            out_lc[i] = log_c
            g = discount_scalar(log_c, dim, tau_or_nan, robust)
            out_g[i] = g
            k = g / s2
            mx = -math.inf
            for j in range(m):
                d = yi - mu[j]
                gain = k / (lam[j] + k)
                incr = -(0.5 * (d * d) * (lam[j] * gain))
                if incr < -floor:  # never with floor = inf (the paper's recursion)
                    log_w[j] = log_w[j] + (-floor)
                else:
                    log_w[j] = log_w[j] + incr
                    mu[j] = mu[j] + gain * d
                    lam[j] = lam[j] + k
                if log_w[j] > mx:
                    mx = log_w[j]
            shift = mx
        # normalise and prune (compacting, order kept)
        w = 0
        for j in range(m):
            v = log_w[j] - shift
            if (not prune) or v >= log_tol:
                start[w] = start[j]
                log_w[w] = v
                mu[w] = mu[j]
                lam[w] = lam[j]
                w += 1
        m = w
        # merge adjacent indistinguishable runs (larger weight kept; the older on ties)
        if merge and m > 1:
            for j in range(m):
                keep[j] = True
            for j in range(m - 1):
                lmax = lam[j + 1] if lam[j + 1] > lam[j] else lam[j]
                dm = mu[j + 1] - mu[j]
                if abs(lam[j + 1] - lam[j]) <= merge_tol * lmax and (dm * dm) * lmax <= tol2:
                    if log_w[j + 1] > log_w[j]:
                        keep[j] = False
                    else:
                        keep[j + 1] = False
            w = 0
            for j in range(m):
                if keep[j]:
                    start[w] = start[j]
                    log_w[w] = log_w[j]
                    mu[w] = mu[j]
                    lam[w] = lam[j]
                    w += 1
            m = w
        # the MAP (first maximum)
        best = 0
        for j in range(1, m):
            if log_w[j] > log_w[best]:
                best = j
        cur_max = log_w[best]
        out_start[i] = start[best]
        out_mean[i] = mu[best] if lam[best] > 0.0 else math.nan
        out_n[i] = m
        out_cp[i] = log_w[m - 1] if start[m - 1] == t else -math.inf
    return (start[:m].copy(), log_w[:m].copy(), mu[:m].copy(), lam[:m].copy(),
            out_start, out_mean, out_lc, out_g, out_n, out_cp)
