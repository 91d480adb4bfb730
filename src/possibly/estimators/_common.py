"""Scale summaries of a series, for the estimators' automatic settings.

A default that is a number in the data's units (a prior rate, a decay) makes the estimate
depend on the units. The estimators set such defaults from these summaries instead: each is
equivariant, ``s(a·y + b) = |a| s(y)``, so the estimates follow any change of units. All work
per stream along the last axis and skip NaN (missing) values.
"""

from __future__ import annotations

import warnings

import numpy as np

from possibly.validation import check_positive

#: Resolution assumed for a series with a single distinct value ``v`` (no gap to measure it):
#: ``RELATIVE_RESOLUTION · |v|`` (1 when ``v = 0``: nothing sets a scale then).
RELATIVE_RESOLUTION = 1e-8

#: 1.4826 · MAD is consistent for the standard deviation of a normal sample.
MAD_TO_SD = 1.482602218505602


def _sorted(y: np.ndarray) -> np.ndarray:
    return np.sort(y, axis=-1)  # NaN sort last


def resolution(y: np.ndarray) -> np.ndarray:
    """The smallest positive gap between the observed values of each stream.

    For a stream with a single distinct value ``v``: ``RELATIVE_RESOLUTION · |v|`` (1 when
    ``v = 0``, or when the stream is all missing).
    """
    ys = _sorted(y)
    gaps = np.diff(ys, axis=-1)
    with np.errstate(invalid="ignore"):
        positive = np.where(gaps > 0, gaps, np.inf)
    smallest = positive.min(-1) if positive.shape[-1] else np.full(ys.shape[:-1], np.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing stream
        magnitude = np.nanmax(np.abs(ys), axis=-1)
    single = np.where(magnitude > 0, RELATIVE_RESOLUTION * magnitude, 1.0)
    return np.where(np.isfinite(smallest), smallest, single)


def robust_spread(y: np.ndarray) -> np.ndarray:
    """``1.4826 · MAD`` of each stream's observed values, or, where more than half of them
    tie (MAD 0), the :func:`resolution`.

    Examples
    --------
    >>> robust_spread(np.array([[1.0, 2.0, 4.0, 100.0, np.nan], [3.0, 3.0, 3.0, 3.5, 7.0]]))
    array([2.2239, 0.5   ])
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing stream
        med = np.nanmedian(y, axis=-1, keepdims=True)
        mad = np.nanmedian(np.abs(y - med), axis=-1)
    spread = MAD_TO_SD * mad
    ok = np.isfinite(spread) & (spread > 0)
    return np.where(ok, spread, resolution(y))


def median_gap(y: np.ndarray) -> np.ndarray:
    """The (lower) median gap between consecutive sorted observed values of each stream
    (about ``range / n``), or, where more than half the gaps are 0 (ties), the
    :func:`resolution`.

    The lower of the two middle gaps, not their mean: with few observations one gap to an
    outlier must not decide (``[1, 2, 1e308]`` has the gaps 1 and about 1e308).

    Examples
    --------
    >>> median_gap(np.array([[4.0, 1.0, 2.0, 8.0, np.nan], [1.0, 2.0, 1e308, np.nan, np.nan]]))
    array([2., 1.])
    """
    ys = _sorted(y)
    gaps = np.diff(ys, axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # fewer than two observed values
        gap = (np.nanquantile(gaps, 0.5, axis=-1, method="lower") if gaps.shape[-1]
               else np.full(ys.shape[:-1], np.nan))
    ok = np.isfinite(gap) & (gap > 0)
    return np.where(ok, gap, resolution(y))


def check_auto_or_positive(name: str, value: object) -> None:
    """``value`` is ``"auto"`` or a number > 0; ValueError naming ``name`` otherwise."""
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"{name} must be 'auto' or a number > 0, got {value!r}")
        return
    check_positive(name, value)


def needs_number_to_stream(name: str, automatic: str) -> ValueError:
    """The error for streaming with a setting that is ``"auto"`` (set from the whole series)."""
    return ValueError(f"{name}='auto' is set from the whole series: call fit(y), or pass "
                      f"{name}=<float> to stream ({automatic}(warm_up) gives the automatic "
                      "value from a first stretch of the data)")
