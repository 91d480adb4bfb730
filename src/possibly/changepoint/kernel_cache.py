"""Compiling the change-point detector's kernels ahead of time (``possibly compile``).

Each compiled kernel is compiled on its first call on a machine and cached on disk; later
processes only load it. A build step (a container image's) that runs :func:`compile_kernels`
once spares every later process that compile. It writes nothing but numba's cache files.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["DETECTORS", "compile_kernels"]

#: the detectors whose kernels are compiled: the default family without and with cycles (a
#: daily and a weekly one) and the paper's model
DETECTORS = ("default", "cycles", "paper")


def compile_kernels() -> list[str]:
    """Compile the change-point detector's kernels into numba's cache.

    For each of :data:`DETECTORS`, runs with ``engine="numba"`` what a user's first calls
    run: a fit (the recursion and the anomaly calibration of a long batch), the hindsight
    outliers, the streaming step of ``update``; and a
    :class:`~possibly.changepoint.DetectorBank` of default streams (serial and
    ``parallel=True``). A kernel already in the cache is loaded instead. Needs numba (``pip
    install possibly[fast]``).

    Returns
    -------
    list of str
        The detectors compiled (or loaded), :data:`DETECTORS`.

    Examples
    --------
    A build step runs it once:

    >>> compile_kernels()  # doctest: +SKIP
    ['default', 'cycles', 'paper']
    >>> DETECTORS
    ('default', 'cycles', 'paper')
    """
    import pandas as pd

    from possibly.changepoint.bank import DetectorBank
    from possibly.changepoint.detector import (
        COMPILED_CALIBRATION_FROM,
        ChangepointDetector,
        numba_available,
    )

    if not numba_available():
        raise ValueError("compiling the change-point kernels needs numba: pip install "
                         "'possibly[fast]'")
    rng = np.random.default_rng(0)
    n = COMPILED_CALIBRATION_FROM  # a batch this long is calibrated by the compiled code
    hours = np.arange(n)
    weekend = hours % 168 >= 120
    y = np.sin(2 * np.pi * hours / 24) * (1.0 - 0.4 * weekend) - 0.5 * weekend \
        + 0.3 * rng.normal(size=n) + np.where(hours >= n // 2, 2.0, 0.0)
    stamped = pd.Series(y, index=pd.date_range("2024-01-01", periods=n, freq="h"))
    flat = rng.normal(size=n) + np.where(hours >= n // 2, 3.0, 0.0)
    runs = {"default": (ChangepointDetector(engine="numba", period=None), flat),
            "cycles": (ChangepointDetector(engine="numba"), stamped),
            "paper": (ChangepointDetector(model="normal", sigma=1.0, engine="numba",
                                          period=None), flat)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for det, series in runs.values():
            res = det.fit(series)
            _ = res.anomaly, res.outliers
            for x in flat[:10]:
                det.update(float(x))
        for parallel in (False, True):
            bank = DetectorBank(engine="numba", parallel=parallel)
            bank.add([0, 1], warm_up=[flat[:200], flat[200:400]])
            for x in flat[:10]:
                bank.update_many([0, 1], [float(x), float(x)])
    return list(runs)
