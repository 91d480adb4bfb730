"""Compiled inner loop of :mod:`possibly.changepoint` (optional: ``pip install possibly[fast]``).

The same recursion as :func:`possibly.changepoint.step`, written with the same floating-point
expressions in the same order so that both engines give bit-identical results (checked by the
tests). Runs live in flat buffers ordered by start time; pruning compacts them in place.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from possibly.changepoint import ChangepointParams, ChangepointState, _Outputs

__all__ = ["run_numba"]


@numba.njit(cache=True, nogil=True)
def _run(y, t0, start_in, log_w_in, mu_in, lam_in, sigma, log_h, rho, robust, tau, use_tau,
         log_tol, prune):  # pragma: no cover - compiled (covered through run_numba)
    n = y.size
    cap = start_in.size + n
    start = np.empty(cap, np.int64)
    log_w = np.empty(cap)
    mu = np.empty(cap)
    lam = np.empty(cap)
    m = start_in.size
    start[:m] = start_in
    log_w[:m] = log_w_in
    mu[:m] = mu_in
    lam[:m] = lam_in
    out_r = np.empty(n, np.int64)
    out_mean = np.empty(n)
    out_c = np.empty(n)
    out_g = np.empty(n)
    out_n = np.empty(n, np.int64)
    s2 = sigma * sigma
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
            out_c[i] = math.nan
            out_g[i] = math.nan
            for j in range(m_old):
                lam[j] = lam[j] * rho
        else:
            log_c = -math.inf
            for j in range(m):
                if j < m_old:
                    lam[j] = lam[j] * rho
                d = yi - mu[j]
                v = log_w[j] - 0.5 * (d * d) * (lam[j] / (1.0 + lam[j] * s2))
                if v > log_c:
                    log_c = v
            out_c[i] = math.exp(log_c)
            if robust:
                g = math.exp(0.5 * log_c)
                if use_tau and g > tau:
                    g = 1.0
            else:
                g = 1.0
            out_g[i] = g
            k = g / s2
            mx = -math.inf
            for j in range(m):
                d = yi - mu[j]
                gain = k / (lam[j] + k)
                log_w[j] = log_w[j] - 0.5 * (d * d) * (lam[j] * gain)
                mu[j] = mu[j] + gain * d
                lam[j] = lam[j] + k
                if log_w[j] > mx:
                    mx = log_w[j]
            shift = mx
        # normalise, prune (compacting, order kept), find the MAP (first maximum)
        w = 0
        best = 0
        for j in range(m):
            v = log_w[j] - shift
            if (not prune) or v >= log_tol:
                start[w] = start[j]
                log_w[w] = v
                mu[w] = mu[j]
                lam[w] = lam[j]
                if log_w[w] > log_w[best]:
                    best = w
                w += 1
        m = w
        cur_max = log_w[best]
        out_r[i] = t - start[best]
        out_mean[i] = mu[best] if lam[best] > 0.0 else math.nan
        out_n[i] = m
    return (start[:m].copy(), log_w[:m].copy(), mu[:m].copy(), lam[:m].copy(),
            out_r, out_mean, out_c, out_g, out_n)


def run_numba(state: ChangepointState, y: np.ndarray,
              params: ChangepointParams) -> tuple[ChangepointState, _Outputs]:
    """Process ``y`` from ``state``; same contract as the numpy engine."""
    y = np.ascontiguousarray(y, dtype=np.float64)
    tau = 1.0 if params.tau is None else params.tau
    log_tol = math.log(params.tol) if params.tol > 0.0 else -math.inf
    res = _run(y, state.t, state.start, state.log_w, state.mean, state.precision,
               params.sigma, math.log(params.hazard), params.forgetting, params.robust, tau,
               params.tau is not None, log_tol, params.tol > 0.0)
    new = ChangepointState(state.t + y.size, *res[:4])
    return new, _Outputs(*res[4:])
