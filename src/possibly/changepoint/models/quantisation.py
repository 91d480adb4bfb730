"""The resolution of a series: the quantisation step of metrics recorded in whole units.

Many monitored metrics are rounded (CPU in whole percent, counts, values to one decimal): more
than half the values can be identical, so that a robust scale (the MAD) is 0 and a segment of
identical values has a noise variance estimate that collapses to 0, after which a value one
step away looks infinitely far. Rounding to a step δ adds an error of at least the resolution's
own spread: an error uniform on ``[-δ/2, δ/2]`` has variance ``δ²/12`` (Sheppard), so no scale
of the noise is taken below ``δ / √12`` (:data:`ROUNDING_SD`). The step is read from the data
(:func:`quantisation_step`), so the floor moves with the units (``y → a y + b`` scales it by
``a``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["FAIR_SHARE", "ROUNDING_SD", "TIE_TOLERANCE", "WIDE_GAP", "quantisation_step"]

#: the standard deviation of a rounding error uniform over one step, in steps: ``1 / √12``
ROUNDING_SD = 1.0 / math.sqrt(12.0)
#: gaps between sorted values below this fraction of their magnitude are ties (the
#: floating-point noise of decimal values, such as 0.1 + 0.2 against 0.3); relative to the
#: values themselves, not to the range, which a spike can make as large as it likes
TIE_TOLERANCE = 1e-11
#: a level holds a fair share of the data when it holds at least two values and at least this
#: fraction of the mean number of values per level
FAIR_SHARE = 0.05
#: a gap between levels is wide when it exceeds this many times the median gap between levels
WIDE_GAP = 10.0


def quantisation_step(y: Any) -> float:
    """The resolution of a series: the smallest gap between its distinct levels, once isolated
    values are set aside, when some values repeat and at least three levels remain; 0 otherwise.

    Ties are what rounding leaves (with ``n`` values on ``k < n`` levels, some repeat), and
    the smallest gap between distinct levels is the step (or a divisor of it when a few values
    lie between the levels, which only lowers the floor). Values within
    :data:`TIE_TOLERANCE` of each other, relative to their magnitude (not to the range, which
    spikes inflate), are one level. A level is isolated when it holds less than a fair share of
    the data (fewer than two values, or less than :data:`FAIR_SHARE` of the ``n / k`` values per
    level) and its gaps to the neighbouring levels are wide (over :data:`WIDE_GAP` times the
    median gap): spikes are set aside, so they neither set the step nor hide it. Two levels say
    nothing of the step: a plateau and one value off it is the same series, up to ``y → a y +
    b``, whether the value is one step away or a billion, so it gets no floor (and the value off
    the plateau stays an outlier). For the same reason a plateau with one value on each side
    (and nothing else) reads as quantised by the distance to them, however far. NaN and
    infinite values are ignored. Equivariant: ``quantisation_step(a * y + b) == a *
    quantisation_step(y)`` for ``a > 0`` (up to rounding).

    Parameters
    ----------
    y : array_like
        Observations (any shape; flattened).

    Returns
    -------
    float
        The step ``δ >= 0``.

    Examples
    --------
    >>> quantisation_step([3.0, 3.0, 4.0, 3.0, 2.0, 3.0])      # whole units
    1.0
    >>> quantisation_step([0.25, 0.5, 0.5, 1.0])                  # the smallest gap
    0.25
    >>> quantisation_step([0.31, 1.7, 2.2])                       # no value repeats
    0.0
    >>> quantisation_step([3.0, 3.0, 3.0, 4.0])                   # two levels: unknown
    0.0
    >>> quantisation_step([2.0, 3.0, 4.0] * 10 + [1e10, 2e10])    # spikes: not levels
    1.0
    """
    arr = np.asarray(y, dtype=np.float64).ravel()
    values = np.sort(arr[np.isfinite(arr)])
    if values.size < 2:
        return 0.0
    magnitude = np.maximum(np.abs(values[:-1]), np.abs(values[1:]))
    gaps = np.diff(values)
    tied = gaps <= TIE_TOLERANCE * magnitude
    if not tied.any():
        return 0.0
    # levels: runs of tied values, their sizes and the gaps between neighbouring levels
    starts = np.flatnonzero(np.r_[True, ~tied])
    sizes = np.diff(np.r_[starts, values.size])
    level_gaps = gaps[~tied]
    if level_gaps.size < 2:
        return 0.0
    fair = (sizes >= 2) & (sizes >= FAIR_SHARE * values.size / starts.size)
    wide = np.r_[True, level_gaps > WIDE_GAP * float(np.median(level_gaps)), True]
    isolated = ~fair & wide[:-1] & wide[1:]
    kept = values[starts[~isolated]]
    if kept.size < 3:
        return 0.0
    return float(np.diff(kept).min())
