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

__all__ = ["ROUNDING_SD", "TIE_TOLERANCE", "quantisation_step"]

#: the standard deviation of a rounding error uniform over one step, in steps: ``1 / √12``
ROUNDING_SD = 1.0 / math.sqrt(12.0)
#: gaps between sorted values below this fraction of the range are ties (the floating-point
#: noise of decimal values, such as 0.1 + 0.2 against 0.3)
TIE_TOLERANCE = 1e-9


def quantisation_step(y: Any) -> float:
    """The resolution of a series: the smallest gap between its distinct values, when some
    values repeat and at least three differ; 0 otherwise.

    Ties are what rounding leaves (with ``n`` values on ``k < n`` levels, some repeat), and
    the smallest gap between distinct levels is the step (or a divisor of it when a few values
    lie between the levels, which only lowers the floor). Two levels say nothing of the step:
    a plateau and one value off it is the same series, up to ``y → a y + b``, whether the value
    is one step away or a billion, so it gets no floor (and the value off the plateau stays an
    outlier). NaN and infinite values are ignored. Equivariant: ``quantisation_step(a * y + b)
    == a * quantisation_step(y)`` for ``a > 0`` (up to rounding).

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
    """
    arr = np.asarray(y, dtype=np.float64).ravel()
    values = np.sort(arr[np.isfinite(arr)])
    if values.size < 2:
        return 0.0
    span = float(values[-1] - values[0])
    if not span > 0.0:
        return 0.0
    gaps = np.diff(values)
    tied = gaps <= TIE_TOLERANCE * span
    distinct = gaps[~tied]
    if not tied.any() or distinct.size < 2:
        return 0.0
    return float(distinct.min())
