"""Private helpers shared by the plotting modules: the time axis of a series."""

from __future__ import annotations

import numpy as np


class TimeAxis:
    """Maps positions ``p`` (floats, ``-0.5`` = left edge of step 0) to x coordinates.

    Integer positions by default; with a DatetimeIndex (or a PeriodIndex: its start times),
    matplotlib date numbers (the axis is then formatted as dates); with any other numeric
    index, its values; with labels (strings, ...), positions, the ticks showing the labels.
    Missing time stamps (NaT, NaN) are placed linearly between their neighbours; the index
    must not decrease.
    """

    def __init__(self, n: int, index=None) -> None:
        self.is_date = False
        self.labels: list[str] | None = None
        if index is None:
            self.x = np.arange(n, dtype=float)
            return
        if len(index) != n:
            raise ValueError(f"index must have one entry per observation ({n}), "
                             f"got {len(index)}")
        if callable(getattr(index, "to_timestamp", None)):  # a pandas PeriodIndex
            index = index.to_timestamp()
        values = np.asarray(index)
        if np.issubdtype(values.dtype, np.datetime64) or values.dtype == object:
            try:
                from matplotlib.dates import date2num
                self.x = np.asarray(date2num(values), dtype=float)
                self.is_date = True
            except (TypeError, ValueError, AttributeError):  # labels, not time stamps
                self.x = np.arange(n, dtype=float)
                self.labels = [str(v) for v in values]
                return
        elif np.issubdtype(values.dtype, np.number):
            self.x = values.astype(float)
        else:  # strings, ...: labels at the positions
            self.x = np.arange(n, dtype=float)
            self.labels = [str(v) for v in values]
            return
        missing = np.isnan(self.x)  # NaT / NaN time stamps: placed by their neighbours
        if missing.all():
            raise ValueError("index has no valid time stamp")
        if missing.any():
            known = np.flatnonzero(~missing)
            at = np.flatnonzero(missing)
            self.x = self.x.copy()
            if known.size == 1:
                self.x[at] = self.x[known[0]] + (at - known[0])
            else:
                self.x[at] = np.interp(at, known, self.x[known])
                slope_lo = (self.x[known[1]] - self.x[known[0]]) / (known[1] - known[0])
                slope_hi = (self.x[known[-1]] - self.x[known[-2]]) / (known[-1] - known[-2])
                lo, hi = at < known[0], at > known[-1]
                self.x[at[lo]] = self.x[known[0]] + (at[lo] - known[0]) * slope_lo
                self.x[at[hi]] = self.x[known[-1]] + (at[hi] - known[-1]) * slope_hi
        if n > 1 and np.any(np.diff(self.x) < 0):
            raise ValueError("index must be increasing (sort the series by time)")

    def at(self, p) -> np.ndarray:
        """x of (fractional) positions, extended linearly beyond both ends."""
        p = np.asarray(p, dtype=float)
        x, n = self.x, self.x.size
        if n == 1:
            return x[0] + p
        out = np.interp(p, np.arange(n), x)
        out = np.where(p < 0, x[0] + p * (x[1] - x[0]), out)
        return np.where(p > n - 1, x[-1] + (p - n + 1) * (x[-1] - x[-2]), out)

    def format(self, ax, label: str = "t") -> None:
        if self.is_date:
            from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

            locator = AutoDateLocator()
            ax.xaxis.set_major_locator(locator)
            ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
        elif self.labels is not None:
            from matplotlib.ticker import FuncFormatter, MaxNLocator

            labels = self.labels

            def label_at(x: float, _pos: int) -> str:
                i = int(round(x))
                return labels[i] if 0 <= i < len(labels) and abs(x - i) < 1e-6 else ""

            ax.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
            ax.xaxis.set_major_formatter(FuncFormatter(label_at))
        else:
            ax.set_xlabel(label)
