"""Possibilistic uncertainty of a segmentation: change possibility per step and intervals.

For a step ``s``, the change possibility is the largest possibility that, at any time
``t ≥ s``, the recursion gave to "the current segment started at ``s``" (relative to the best
hypothesis at that time, any model):

    π(s) = max_{t ≥ s} max_k w_t(s, k)    (weights normalised to a maximum 1 at each t).

It is in [0, 1], equals 1 at the first observation and at every change point of the MAP
segmentation (each MAP segment is the MAP hypothesis at its last step), and is small where no
segment can start. In possibility theory ``π`` is an upper bound: the necessity of "a segment
starts at s" is ``1 − max_{s' ≠ s} π(s')`` over the competing locations, and any probability
consistent with the possibility lies between the two (necessity ≤ probability ≤
possibility). A possibility interval for a change point is the contiguous set of steps around
it where ``π ≥ α`` (``α = 0.5`` by default): every location outside it has possibility below
``α``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["change_possibility", "possibility_intervals"]


def change_possibility(n: int, hypotheses: Iterable[tuple[np.ndarray, np.ndarray]]
                       ) -> np.ndarray:
    """``π(s)`` from the kept hypotheses ``(start, log_w)`` after each step.

    Examples
    --------
    >>> steps = [(np.array([0]), np.array([0.0])),
    ...          (np.array([0, 1]), np.array([0.0, -3.0])),
    ...          (np.array([0, 1, 2]), np.array([-1.0, 0.0, -5.0]))]
    >>> change_possibility(3, steps).round(3)
    array([1.   , 1.   , 0.007])
    """
    best = np.full(n, -np.inf)
    for start, log_w in hypotheses:
        np.maximum.at(best, start, log_w)
    return np.exp(best)


def possibility_intervals(possibility: np.ndarray, changepoints: np.ndarray,
                          alpha: float = 0.5) -> list[tuple[int, int]]:
    """Half-open ``(first, stop)`` around each change point where ``π >= alpha``.

    Examples
    --------
    >>> possibility_intervals(np.array([1.0, 0.1, 0.6, 1.0, 0.7, 0.2]), np.array([3]))
    [(2, 5)]
    """
    if not (isinstance(alpha, (int, float, np.floating)) and 0 < alpha <= 1):
        raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")
    cps = np.asarray(changepoints, dtype=np.int64)
    # position i of the series is i + 1 here: a step outside it is below alpha
    above = np.r_[False, np.asarray(possibility) >= alpha, False]  # NaN compares False
    edges = np.diff(above.astype(np.int8))
    # the maximal runs at or above alpha, [first, last] in positions of the series
    firsts, lasts = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    lo, hi = cps.copy(), cps.copy()
    left = above[cps]  # the step before the change point is in a run: its first step
    lo[left] = firsts[np.searchsorted(firsts, cps[left] - 1, side="right") - 1]
    right = above[cps + 2]  # the step after it likewise: its last step
    hi[right] = lasts[np.searchsorted(lasts, cps[right] + 1, side="left")]
    return list(zip(lo.tolist(), (hi + 1).tolist(), strict=True))
