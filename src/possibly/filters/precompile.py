"""Compiling the Kalman filters' loops ahead of time (``possibly compile``).

Each compiled loop is compiled on its first call on a machine, once per model shape (numbers
of states and observed components), and cached on disk; later processes only load it. A
build step (a container image's) that runs :func:`compile_loops` once spares every later
process that compile. It writes nothing but numba's cache files.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Iterable

import numpy as np

__all__ = ["CONSTANT_VELOCITY_SHAPES", "compile_loops"]

#: ``(states, observed components)`` of the constant-velocity model of one and of two axes
#: (what ``possibly kalman`` runs)
CONSTANT_VELOCITY_SHAPES = ((2, 1), (4, 2))
#: the largest number of states accepted (numba compiles a loop per shape)
MAX_STATES = 64


def _checked_shapes(shapes: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    try:
        pairs = [tuple(operator.index(k) for k in shape) for shape in shapes]
    except TypeError:
        pairs = [()]
    if not pairs or any(len(p) != 2 or not 1 <= p[1] <= p[0] <= MAX_STATES for p in pairs):
        raise ValueError(f"shapes must be pairs of integers (n, m) with 1 <= m <= n <= "
                         f"{MAX_STATES} (n states, m observed components), got {shapes!r}")
    return [(p[0], p[1]) for p in pairs]


def compile_loops(shapes: Iterable[tuple[int, int]] = CONSTANT_VELOCITY_SHAPES
                  ) -> list[tuple[int, int]]:
    """Compile the Kalman filters' loops into numba's cache for models of each shape.

    For each ``(n, m)`` (``n`` states, ``m`` observed components), runs on a short series
    every loop that ``engine="numba"`` runs: the filter with its robust start, the smoother,
    the learned noise scale and the streaming step of ``update``. A loop already in the cache
    is loaded instead. Afterwards this process runs them with ``engine="auto"`` too (they are
    loaded). Needs numba (``pip install possibly[fast]``).

    Parameters
    ----------
    shapes : iterable of (int, int)
        ``(n, m)`` pairs with ``1 <= m <= n <= 64``; default the constant-velocity model of
        one and of two axes, ``(2, 1)`` and ``(4, 2)``.

    Returns
    -------
    list of (int, int)
        The shapes compiled (or loaded).

    Examples
    --------
    >>> compile_loops([(2, 1)])  # doctest: +SKIP
    [(2, 1)]
    >>> compile_loops([(1, 2)])  # more observed components than states: H cannot be onto
    Traceback (most recent call last):
    ...
    ValueError: shapes must be pairs of integers (n, m) with 1 <= m <= n <= 64 ...
    """
    from possibly.filters.filter_result import MostlyDiscountedWarning
    from possibly.filters.kalman import KalmanFilter
    from possibly.filters.state_space import LinearGaussianModel

    pairs = _checked_shapes(shapes)
    for n, m in pairs:
        # a chain of n states whose first m are observed: every state informed, so that the
        # steps in covariance form (the compiled loops) run; 200 steps take the learned
        # scale past its start
        model = LinearGaussianModel(F=np.eye(n) + np.eye(n, k=1), Q=0.01 * np.eye(n),
                                    H=np.eye(m, n), R=np.eye(m))
        rng = np.random.default_rng(0)
        y = np.cumsum(0.1 * rng.normal(size=(200, m)), axis=0) + rng.normal(size=(200, m))
        kf = KalmanFilter(model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MostlyDiscountedWarning)
            kf.smooth(y, engine="numba")  # the filter, its robust start, the smoother
            KalmanFilter(model, learn_noise_scale=True).fit(y, engine="numba")
            for row in y:
                kf.update(row)  # the streaming step, once the start has settled
    return pairs
