"""Compiled (numba) backward pass of the RTS smoother in covariance form, for single series and
batches (:func:`possibly.filters.smoother.smooth` with ``engine="numba"``, and ``"auto"`` when
numba is installed; requires ``pip install possibly[fast]``).

The same formulas as the numpy step of :mod:`possibly.filters.smoother`: the gain
``G = P_t Fᵀ P_{t+1|t}⁻¹``, ``μ_t + G (μ^s_{t+1} - μ_{t+1|t})`` (the difference scaled by a power
of two when a mean is huge) and ``sym(P_t + G (P^s_{t+1} - P_{t+1|t}) Gᵀ)``. The steps whose
filtered state is in information form run in ``kalman_numba.backward_information`` (a
time-invariant model; with the pseudo-inverses of the filter's compiled start); a step whose
``P_{t+1|t}`` is singular by rounding (numpy's pseudo-inverse fallback) runs in numpy. Tested
equal to the numpy path to ~1e-12 where well conditioned (not bit for bit: the order of
floating-point operations differs); the information-form steps and ill-conditioned models
round more, as the filter's do.

Why explicit loops: the states are tiny, so the per-step cost of numpy's batched linear
algebra is its call overhead, many times the arithmetic; here every work array is allocated
once per call and ``P_{t+1|t}`` is solved in place by Gaussian elimination with partial
pivoting (:func:`possibly.filters.elimination_numba.solve_in_place`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

import possibly.compiled  # noqa: F401  (the package's cache folder, before njit(cache=True))
from possibly.filters.elimination_numba import solve_in_place

__all__ = ["backward", "sizes"]

_BIG = 1e100  # as possibly.filters._common._BIG


def sizes(n: int) -> tuple[int, ...]:
    """The ``n_tup`` argument of :func:`backward` for ``n`` states."""
    return (0,) * n


@numba.njit(cache=True, nogil=True)
def backward(f_mean, f_cov, p_mean, p_cov, F, t_hi, t_lo, s_mean, s_cov,
             n_tup):  # pragma: no cover - compiled
    """Covariance-form RTS steps ``t = t_hi, t_hi - 1, ..., t_lo`` of every series, in place.

    Every array is time-major: ``f_mean`` (T, B, n) and ``f_cov`` (T, B, n, n) the filtered
    states, ``p_mean`` and ``p_cov`` the predicted ones, ``s_mean`` and ``s_cov`` the smoothed
    ones, read at ``t + 1`` and written at ``t``. ``F`` (K, n, n): the transition from step
    ``t`` to ``t + 1`` is ``F[min(t, K - 1)]`` (K = 1 for a time-invariant model). ``n_tup``
    is a tuple of ``n`` zeros (:func:`sizes`). Returns ``t_lo - 1`` when every step is done,
    else the step ``t`` whose ``P_{t+1|t}`` is singular by rounding (steps after it are done,
    step ``t`` is partly written): the caller runs that step in numpy and resumes.
    """
    B = f_mean.shape[1]
    K = F.shape[0]
    # n a compile-time constant (a tuple's length is part of its numba type): one compiled
    # loop per n, whose fixed-count small loops LLVM unrolls
    n = len(n_tup)
    a = np.empty((n, n))
    x = np.empty((n, n))  # Gᵀ = P_{t+1|t}⁻¹ F P_t
    gd = np.empty((n, n))
    d = np.empty(n)
    # time outer, series inner: the time-major arrays are read and written contiguously
    for t in range(t_hi, t_lo - 1, -1):
        Ft = F[min(t, K - 1)]
        for b in range(B):
            for i in range(n):
                for j in range(n):
                    a[i, j] = p_cov[t + 1, b, i, j]
                    acc = 0.0
                    for c in range(n):
                        acc += Ft[i, c] * f_cov[t, b, c, j]
                    x[i, j] = acc
            if not solve_in_place(a, x, n):
                return t
            big = 0.0
            for i in range(n):
                big = max(big, abs(s_mean[t + 1, b, i]), abs(p_mean[t + 1, b, i]))
            if big > _BIG:  # exact power-of-two scaling: the difference cannot overflow
                k = math.frexp(big)[1]
                for i in range(n):
                    d[i] = math.ldexp(s_mean[t + 1, b, i], -k) - \
                        math.ldexp(p_mean[t + 1, b, i], -k)
                for i in range(n):
                    acc = 0.0
                    for j in range(n):
                        acc += x[j, i] * d[j]
                    s_mean[t, b, i] = f_mean[t, b, i] + math.ldexp(acc, k)
            else:
                for i in range(n):
                    d[i] = s_mean[t + 1, b, i] - p_mean[t + 1, b, i]
                for i in range(n):
                    acc = 0.0
                    for j in range(n):
                        acc += x[j, i] * d[j]
                    s_mean[t, b, i] = f_mean[t, b, i] + acc
            for i in range(n):  # P^s - P_{t+1|t}, then G times it
                for j in range(n):
                    a[i, j] = s_cov[t + 1, b, i, j] - p_cov[t + 1, b, i, j]
            for i in range(n):
                for j in range(n):
                    acc = 0.0
                    for c in range(n):
                        acc += x[c, i] * a[c, j]
                    gd[i, j] = acc
            for i in range(n):  # P_t + (G D) Gᵀ, symmetrised
                for j in range(n):
                    acc = 0.0
                    for c in range(n):
                        acc += gd[i, c] * x[c, j]
                    a[i, j] = f_cov[t, b, i, j] + acc
            for i in range(n):
                for j in range(n):
                    s_cov[t, b, i, j] = 0.5 * (a[i, j] + a[j, i])
    return t_lo - 1
