"""Private helpers shared by the segment models: the checks of the segment arguments of their
public hindsight methods (a clear error instead of a numpy one from deep inside)."""

from __future__ import annotations

from typing import Any

import numpy as np


def checked_bounds(bounds: Any, n: int) -> np.ndarray:
    """``bounds`` as an ``(k, 2)`` int64 array of half-open segments ``[start, stop)`` of a
    series of ``n`` observations: ``0 <= start < stop <= n``, increasing and disjoint."""
    arr = np.asarray(bounds)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    accepted = (f"bounds must be (start, stop) pairs of integers with 0 <= start < stop <= "
                f"{n} (the series' length), increasing and disjoint")
    if arr.dtype.kind not in "iu" and not (
            arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
        raise ValueError(f"{accepted}; got values of type {arr.dtype}")
    if arr.ndim > 2 or arr.shape[-1] != 2 or (arr.ndim == 2 and arr.shape[0] == 0):
        raise ValueError(f"{accepted}; got an array of shape {arr.shape}")
    arr = arr.astype(np.int64).reshape(-1, 2)
    start, stop = arr[:, 0], arr[:, 1]
    bad = (start < 0) | (stop <= start) | (stop > n)
    bad[1:] |= start[1:] < stop[:-1]
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{accepted}; got [{start[k]}, {stop[k]}] at row {k}")
    return arr


def checked_lengths(lengths: Any, n: int) -> np.ndarray:
    """``lengths`` as int64 segment lengths, each at least 1, summing to ``n``."""
    arr = np.asarray(lengths)
    accepted = f"lengths must be positive integers (the segments' lengths) summing to {n}"
    integral = arr.dtype.kind in "iu" or (
        arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)))
    if arr.ndim != 1 or not integral:
        raise ValueError(f"{accepted}; got {arr.dtype} values of shape {arr.shape}")
    arr = arr.astype(np.int64)
    if (arr < 1).any() or int(arr.sum()) != n:
        raise ValueError(f"{accepted}; got lengths {arr.tolist()[:10]} (sum {int(arr.sum())})")
    return arr
