"""Numba twins of core functions, for compiled inner loops (``pip install possibly[fast]``).

Each function here is a plain-Python function of the library compiled by numba, so the
compiled loops and the Python loops run the same code. Importing this module requires numba;
every module that compiles kernels imports it first, so the package's cache folder is in place
(:mod:`possibly._numba_cache`) before any ``njit(cache=True)``.
"""

from __future__ import annotations

import numba

from possibly._numba_cache import has_cached_code, register_cache_locator
from possibly.inference import discount_one

register_cache_locator()

__all__ = ["discount_scalar", "has_cached_code"]

#: :func:`possibly.inference.discount_one` compiled (the discount of one observation)
discount_scalar = numba.njit(cache=True, nogil=True)(discount_one)
