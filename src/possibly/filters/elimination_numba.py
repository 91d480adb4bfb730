"""Gaussian elimination with partial pivoting for the tiny linear systems of the compiled
filter and smoother loops (requires ``pip install possibly[fast]``).

Inside a compiled loop over time, ``np.linalg.solve`` on a 2 × 2 system costs its allocation,
not its arithmetic; this solves in place, in the work arrays the loop allocated once, with
the pivoting of LAPACK's ``getrf`` behind ``numpy.linalg.solve`` (the same results up to the
order of floating-point operations), and reports a singular matrix instead of raising, so the
loop can hand that step to numpy's fallbacks.
"""

from __future__ import annotations

import math

import numba

import possibly.compiled  # noqa: F401  (the package's cache folder, before njit(cache=True))

__all__ = ["solve_in_place"]


@numba.njit(cache=True, nogil=True, inline="always")  # inlined: no call per use
def solve_in_place(a, rhs, k):  # pragma: no cover - compiled
    """Overwrite ``rhs[:, :k]`` with ``a⁻¹ rhs[:, :k]`` (``a`` is destroyed); partial
    pivoting. False if ``a`` is singular (an exactly zero pivot, as LAPACK's getrf)."""
    m = a.shape[0]
    for c in range(m):
        p = c
        best = abs(a[c, c])
        for i in range(c + 1, m):
            if abs(a[i, c]) > best:
                best = abs(a[i, c])
                p = i
        if best == 0.0 or math.isnan(best):
            return False
        if p != c:
            for j in range(m):
                a[c, j], a[p, j] = a[p, j], a[c, j]
            for j in range(k):
                rhs[c, j], rhs[p, j] = rhs[p, j], rhs[c, j]
        for i in range(c + 1, m):
            f = a[i, c] / a[c, c]
            if f != 0.0:
                for j in range(c + 1, m):
                    a[i, j] -= f * a[c, j]
                for j in range(k):
                    rhs[i, j] -= f * rhs[c, j]
    for c in range(m - 1, -1, -1):
        for j in range(k):
            s = rhs[c, j]
            for i in range(c + 1, m):
                s -= a[c, i] * rhs[i, j]
            rhs[c, j] = s / a[c, c]
    return True
