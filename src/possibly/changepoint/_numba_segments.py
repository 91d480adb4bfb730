"""Compiled inner loop of the recursion for a family of :class:`PolynomialTrend` models.

The same recursion as :func:`possibly.changepoint.recursion.step` with the models of
:mod:`possibly.changepoint.segments` (``PolynomialTrend`` of degrees 0 to 2, one shared prior),
written with the same formulas in the same order; numpy's and the C library's ``log1p``,
``log`` and ``lgamma`` may differ in the last bit, so the engines agree to rounding (tested:
equal change points and outputs to 1e-9). Runs live in per-model buffers ordered by start;
pruning compacts them in place. Imports nothing from the package that imports it.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from possibly.compiled import discount_scalar

_B_MIN = 1e-300  # as possibly.changepoint.segments.B_MIN

__all__ = ["run_trend_family"]

_LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(cache=True, nogil=True)
def run_trend_family(y, t0, count_in, start_in, log_w_in, m_in, cov_in, a_in, b_in, seen_in,
                     degrees, m0, cov0, a0, b0, integrated, floor, loc, scale, log_h, rho,
                     robust, tau_or_nan, dim, log_tol,
                     prune):  # pragma: no cover - compiled (covered through the detector)
    """Process ``y`` from the given runs (per-model buffers); returns runs and outputs."""
    n_models = degrees.size
    n = y.size
    cap = count_in.max() + n
    start = np.empty((n_models, cap), np.int64)
    log_w = np.empty((n_models, cap))
    m = np.zeros((n_models, cap, 3))
    cov = np.zeros((n_models, cap, 3, 3))
    a = np.empty((n_models, cap))
    b = np.empty((n_models, cap))
    seen = np.empty((n_models, cap), np.bool_)
    cnt = count_in.copy()
    for k in range(n_models):
        c = cnt[k]
        start[k, :c] = start_in[k, :c]
        log_w[k, :c] = log_w_in[k, :c]
        m[k, :c] = m_in[k, :c]
        cov[k, :c] = cov_in[k, :c]
        a[k, :c] = a_in[k, :c]
        b[k, :c] = b_in[k, :c]
        seen[k, :c] = seen_in[k, :c]
    out_start = np.empty(n, np.int64)
    out_model = np.empty(n, np.int64)
    out_mean = np.empty(n)
    out_lc = np.empty(n)
    out_g = np.empty(n)
    out_n = np.empty(n, np.int64)
    out_cp = np.empty(n)
    # the shift matrices F[i, j] = C(j, i)
    comb = np.zeros((3, 3))
    for i in range(3):
        for j in range(i, 3):
            comb[i, j] = 2.0 if (i == 1 and j == 2) else 1.0  # C(j, i) for j < 3
    fc = np.empty((3, 3))
    row0 = np.empty(3)
    cur_max = -math.inf
    total = 0
    for k in range(n_models):
        total += cnt[k]
        for j in range(cnt[k]):
            if log_w[k, j] > cur_max:
                cur_max = log_w[k, j]
    for i in range(n):
        t = t0 + i
        yi = y[i]
        log_new = log_h + cur_max if total > 0 else 0.0
        # predict: shift every run forward (forget), then one new run per model
        for k in range(n_models):
            p = degrees[k] + 1
            for j in range(cnt[k]):
                if p > 1:
                    for r_ in range(p):  # m ← F m
                        s_ = 0.0
                        for c_ in range(p):
                            s_ += comb[r_, c_] * m[k, j, c_]
                        row0[r_] = s_
                    for r_ in range(p):
                        m[k, j, r_] = row0[r_]
                    for r_ in range(p):  # F cov
                        for c_ in range(p):
                            s_ = 0.0
                            for e_ in range(p):
                                s_ += comb[r_, e_] * cov[k, j, e_, c_]
                            fc[r_, c_] = s_
                    for r_ in range(p):  # (F cov) Fᵀ
                        for c_ in range(p):
                            s_ = 0.0
                            for e_ in range(p):
                                s_ += fc[r_, e_] * comb[c_, e_]
                            cov[k, j, r_, c_] = s_
                if rho != 1.0:
                    for r_ in range(p):
                        for c_ in range(p):
                            cov[k, j, r_, c_] = cov[k, j, r_, c_] / rho
                    a[k, j] = a[k, j] * rho
                    b[k, j] = max(b[k, j] * rho, _B_MIN)
            c = cnt[k]
            start[k, c] = t
            log_w[k, c] = log_new
            m[k, c] = m0[k]
            cov[k, c] = cov0[k]
            a[k, c] = a0[k]
            b[k, c] = b0[k]
            seen[k, c] = False
            cnt[k] = c + 1
        shift = 0.0
        if math.isnan(yi):
            out_lc[i] = math.nan
            out_g[i] = math.nan
        else:
            z = (yi - loc) / scale
            log_c = -math.inf
            for k in range(n_models):
                for j in range(cnt[k]):
                    r = z - m[k, j, 0]
                    v = log_w[k, j] + (-(a[k, j] + 0.5) * math.log1p(
                        r * r / (2.0 * b[k, j] * (1.0 + cov[k, j, 0, 0]))))
                    if v > log_c:
                        log_c = v
            out_lc[i] = log_c
            g = discount_scalar(log_c, dim, tau_or_nan, robust)
            out_g[i] = g
            mx = -math.inf
            for k in range(n_models):
                p = degrees[k] + 1
                for j in range(cnt[k]):
                    aj = a[k, j]
                    bj = b[k, j]
                    r = z - m[k, j, 0]
                    q = cov[k, j, 0, 0]
                    gq = 1.0 + g * q
                    log_ratio = math.log1p(0.5 * g * r * r / (gq * bj))
                    if integrated[k]:
                        best = (-0.5 * g * _LOG_2PI + math.lgamma(aj + 0.5 * g)
                                - math.lgamma(aj) - 0.5 * math.log(gq) - 0.5 * g * math.log(bj))
                    else:
                        best = 0.0
                    ev_in = best - (aj + 0.5 * g) * log_ratio
                    if ev_in < best - floor[k]:  # outlier for this run: no update
                        log_w[k, j] = log_w[k, j] + (best - floor[k])
                    else:
                        log_w[k, j] = log_w[k, j] + ev_in
                        f_ = g / (1.0 + g * q)
                        for c_ in range(p):
                            row0[c_] = cov[k, j, 0, c_]
                        for r_ in range(p):
                            gain = cov[k, j, r_, 0] * f_
                            m[k, j, r_] = m[k, j, r_] + gain * r
                            for c_ in range(p):
                                cov[k, j, r_, c_] = cov[k, j, r_, c_] - gain * row0[c_]
                        a[k, j] = aj + 0.5 * g
                        b[k, j] = bj + 0.5 * g * r * r / (1.0 + g * q)
                        seen[k, j] = True
                    if log_w[k, j] > mx:
                        mx = log_w[k, j]
            shift = mx
        # normalise and prune (compacting, order kept)
        total = 0
        for k in range(n_models):
            w = 0
            for j in range(cnt[k]):
                v = log_w[k, j] - shift
                if (not prune) or v >= log_tol:
                    start[k, w] = start[k, j]
                    log_w[k, w] = v
                    m[k, w] = m[k, j]
                    cov[k, w] = cov[k, j]
                    a[k, w] = a[k, j]
                    b[k, w] = b[k, j]
                    seen[k, w] = seen[k, j]
                    w += 1
            cnt[k] = w
            total += w
        # the MAP: the first maximum, model 0 first, then by start
        bk = -1
        bj_ = 0
        bv = -math.inf
        cp = -math.inf
        for k in range(n_models):
            for j in range(cnt[k]):
                if log_w[k, j] > bv:
                    bk = k
                    bj_ = j
                    bv = log_w[k, j]
            c = cnt[k]
            if c > 0 and start[k, c - 1] == t and log_w[k, c - 1] > cp:
                cp = log_w[k, c - 1]
        cur_max = bv
        out_start[i] = start[bk, bj_]
        out_model[i] = bk
        out_mean[i] = loc + scale * m[bk, bj_, 0] if seen[bk, bj_] else math.nan
        out_n[i] = total
        out_cp[i] = cp
    return (cnt, start, log_w, m, cov, a, b, seen,
            out_start, out_model, out_mean, out_lc, out_g, out_n, out_cp)
