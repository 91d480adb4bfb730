"""The discount panel shared by the filter plots: ``log10 γ`` per step, nothing clipped."""

from __future__ import annotations

import numpy as np

__all__ = ["discount_panel"]


def discount_panel(ax, t, disc, *, outlier=None, ylabel: str = "discount γ",
                   xlabel: str = "time step t") -> None:
    """Draw the discount of each step as ``log10 γ`` on a linear axis.

    Outliers' discounts of 1e-120 (and down to the smallest float) are what the panel is for,
    so nothing is clipped: the axis reaches the smallest value. ``γ = 0`` (an observation
    ignored, e.g. by the threshold variant) has no logarithm: it is marked by a red triangle
    at the bottom of the panel; NaN (missing) is left out.

    Parameters
    ----------
    ax : matplotlib Axes
    t : array, shape (T,)
        x coordinates.
    disc : array, shape (T,)
        Discounts in [0, 1], NaN for missing observations.
    outlier : bool array, shape (T,), optional
        True outliers (simulations): drawn as red crosses, the others as blue dots.
    ylabel, xlabel : str

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> discount_panel(ax, np.arange(4), np.array([1.0, 1e-120, np.nan, 0.0]))
    >>> ax.lines[0].get_ydata().tolist(), bool(ax.get_ylim()[0] < -120)
    ([0.0, -120.0], True)
    >>> plt.close(fig)
    """
    t = np.asarray(t)
    disc = np.asarray(disc, dtype=float)
    with np.errstate(divide="ignore"):
        log_disc = np.log10(disc)
    finite = np.isfinite(log_disc)
    if outlier is None:
        ax.plot(t[finite], log_disc[finite], ".", ms=3, color="tab:blue")
    else:
        outlier = np.asarray(outlier, dtype=bool)
        ax.plot(t[finite & ~outlier], log_disc[finite & ~outlier], ".", ms=4,
                color="tab:blue", label="inliers")
        ax.plot(t[finite & outlier], log_disc[finite & outlier], "x", ms=5, color="tab:red",
                label="outliers")
    low = min(float(log_disc[finite].min()) if finite.any() else 0.0, -1.0)
    bottom = low - 0.08 * (0.05 - low)
    zero = disc == 0.0
    if zero.any():
        ax.plot(t[zero], np.full(zero.sum(), bottom), "v", ms=4, color="tab:red",
                label="γ = 0 (ignored)", clip_on=False)
    if zero.any() or outlier is not None:
        ax.legend(loc="lower left", fontsize=7)
    ax.set_ylim(bottom, 0.05 - 0.08 * low)
    ax.axhline(0.0, color="0.7", lw=0.6)
    ax.set_ylabel(f"log10 {ylabel}")
    ax.set_xlabel(xlabel)
