"""Numba twins of core functions, for compiled inner loops (``pip install possibly[fast]``).

Each function here has a pure-numpy original elsewhere in the library and a test asserting
that both give the same values. Importing this module requires numba.
"""

from __future__ import annotations

import math

import numba

__all__ = ["discount_scalar"]


@numba.njit(cache=True, nogil=True)
def discount_scalar(log_c, dim, tau, robust):  # pragma: no cover - compiled
    """Numba twin of :func:`possibly.inference.discount` for one observation.

    ``tau`` is the threshold, or NaN for none. The same floating-point expressions as the
    numpy original; values agree to one ulp (numpy's vectorised ``exp`` and libm's ``exp``
    may round differently), and exactly where no exponential is taken.
    """
    if math.isnan(log_c):
        return math.nan
    if not robust:
        return 1.0
    gamma = math.exp(log_c / dim)
    if not math.isnan(tau) and gamma > tau:
        return 1.0
    return gamma
