"""Numba twins of core functions, for compiled inner loops (``pip install possibly[fast]``).

Each function here is a plain-Python function of the library compiled by numba, so the
compiled loops and the Python loops run the same code. Importing this module requires numba.
"""

from __future__ import annotations

import numba

from possibly.inference import discount_one

__all__ = ["discount_scalar"]

#: :func:`possibly.inference.discount_one` compiled (the discount of one observation)
discount_scalar = numba.njit(cache=True, nogil=True)(discount_one)
