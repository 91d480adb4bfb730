"""Plots for :mod:`possibly.changepoint` (matplotlib is imported only when a plot is made).

:func:`plot_result` draws one result as ruptures' ``display`` does (alternating shaded
segments) with each segment's fitted level or trend and its band, the outliers marked, on a
time-stamp axis when the series had one, and stays readable and fast for long series: the
observations are drawn as their min/max envelope per pixel column and, beyond a few hundred,
outliers get one mark per column.
:func:`plot_run_length` is the run-length possibility heat map with its colour bar.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from possibly.plotting import pyplot
from possibly.plotting._common import TimeAxis

__all__ = ["plot_changepoints", "plot_result", "plot_run_length", "plot_run_length_figure",
           "plot_zooms", "run_length_image"]

#: alternating segment colours (those of ruptures' ``display``)
SEGMENT_COLOURS = ("#4286f4", "#f44174")
#: default number of columns the series is reduced to (about one per pixel of a 11-inch figure)
MAX_COLUMNS = 2000
#: beyond this many outliers, one mark per column
MAX_OUTLIER_MARKS = 300


def _bucket_starts(n: int, columns: int) -> np.ndarray:
    """First position of each of ``columns`` contiguous buckets of ``range(n)``."""
    return np.unique(np.linspace(0, n, columns + 1)[:-1].astype(np.int64))


def min_max_envelope(x: np.ndarray, y: np.ndarray, columns: int = MAX_COLUMNS
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Reduce a line to its min and max per column: what a line of all points would paint.

    Series of at most ``2 · columns`` points are returned unchanged; longer ones become
    ``2 · columns`` points, a vertical stroke from the minimum to the maximum of each bucket.
    NaNs are skipped; a bucket of NaNs only stays NaN (a gap in the line).

    Examples
    --------
    >>> x = np.arange(8.0)
    >>> min_max_envelope(x, np.array([0., 5, 1, 2, np.nan, np.nan, 3, -1]), columns=2)
    (array([0., 0., 4., 4.]), array([ 0.,  5., -1.,  3.]))
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if y.size <= 2 * columns:
        return x, y
    starts = _bucket_starts(y.size, columns)
    lo = np.fmin.reduceat(y, starts)  # fmin/fmax skip NaN unless all are NaN
    hi = np.fmax.reduceat(y, starts)
    return np.repeat(x[starts], 2), np.column_stack([lo, hi]).ravel()


def _index_of(y, index, result=None):
    """The x coordinates: ``index``, else ``y``'s pandas index, else the result's own index
    (if it keeps the input's), else None (positions)."""
    if index is not None:
        return index
    index = getattr(y, "index", None)
    if index is None and y is None:
        index = getattr(result, "index", None)
        index = None if callable(index) else index
    if index is None:
        return None
    import pandas as pd  # only reached with a pandas input
    return None if isinstance(index, pd.RangeIndex) else index


# ----------------------------------------------------------------------------------------------
# one result


def plot_result(result, y=None, ax=None, *, index=None, ylabel: str | None = None,
                title: str | None = None, truth=None, show_estimate: bool = True,
                columns: int = MAX_COLUMNS, max_outlier_marks: int = MAX_OUTLIER_MARKS,
                band: float | None = 0.1):
    """Draw a change-point result: shaded segments, segment fits, outliers, the series.

    Segments alternate between two shades as in ruptures' ``display``. Each gets its fitted
    function (:meth:`~possibly.ChangepointResult.segment_fit`): a segment of the default
    models its fitted level, linear or quadratic trend, with the band where the fitted
    value's possibility is at least ``band``; a segment of another model (e.g. the paper's
    normal mean) a line at the mean of its observations (outliers left out). Outliers are
    red circles. The legend sits outside the data, to the right. Long series stay readable
    and quick: the series (outliers left out) and the online estimate are drawn as their
    min/max per column (``columns`` of them), the fits at about one point per column, and
    more than ``max_outlier_marks`` outliers get one small mark per column (the one farthest
    from its segment's fit), the legend giving their total.

    Parameters
    ----------
    result : ChangepointResult
        Output of :meth:`possibly.ChangepointDetector.fit`.
    y : array or pandas Series, optional
        The series to draw (default ``result.y``); a Series with a DatetimeIndex (or any
        index other than the default range) gives the x axis, its ``name`` the y label.
        Without ``y`` and ``index``, a result that keeps its input's index (``result.index``)
        gives the x axis.
    ax : matplotlib Axes, optional
        Where to draw; default a new 11 × 4 inch figure.
    index : DatetimeIndex or array of numbers, optional
        x coordinate of each observation (overrides ``y``'s index), e.g. the time stamps.
    ylabel, title : str, optional
    truth : array of int, optional
        True change points (positions), drawn dashed.
    show_estimate : bool
        Also draw the online estimate ``E*(θ)`` (``result.mean``).
    columns : int
        Number of columns the series is reduced to when longer than ``2 · columns``.
    max_outlier_marks : int
        Up to this many outliers, one mark each.
    band : float or None
        Possibility level in (0, 1) of the band drawn around each fitted level or trend
        (0.1: about ± 2.1 standard errors of the fit once the noise scale is well known);
        None: no band.

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import pandas as pd
    >>> import possibly as ps
    >>> from possibly.plotting.changepoint_plots import plot_result
    >>> values, _, _ = ps.datasets.piecewise_constant(300, n_changes=2, seed=3)
    >>> y = pd.Series(values, index=pd.date_range("2024-01-01", periods=300, freq="h"),
    ...               name="level (m)")
    >>> res = ps.ChangepointDetector(sigma=1.0, hazard=1e-3).fit(y)
    >>> ax = plot_result(res, y)
    >>> ax.get_ylabel(), len(ax.patches)                  # one shaded band per segment
    ('level (m)', 3)
    """
    plt = pyplot()
    values = np.asarray(result.y if y is None else y, dtype=float)
    if values.ndim != 1 or values.shape != np.shape(result.y):
        raise ValueError(f"y must be the series of the result, shape {np.shape(result.y)}, "
                         f"got shape {values.shape}")
    if int(columns) < 1 or int(max_outlier_marks) < 0:
        raise ValueError("columns must be >= 1 and max_outlier_marks >= 0")
    axis = TimeAxis(values.size, _index_of(y, index, result))
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 4), layout="constrained")
    n = values.size
    segments = result.segments
    for i, (a, b) in enumerate(segments):
        ax.axvspan(*axis.at([a - 0.5, b - 0.5]), color=SEGMENT_COLOURS[i % 2], alpha=0.12,
                   lw=0, label="segments (alternating shades)" if i == 0 else None)
    if n <= 2 * columns:
        ax.plot(axis.x, values, ".", ms=2.5, color="0.35", label="observations")
    else:  # outliers left out of the envelope: they are marked below, beyond the band
        inliers = values.copy()
        inliers[result.outliers] = np.nan
        ax.plot(*min_max_envelope(axis.x, inliers, columns), lw=0.6, color="0.35",
                label="observations (min/max per column)")
    if show_estimate:
        ax.plot(*min_max_envelope(axis.x, result.mean, columns), lw=0.9, color="tab:blue",
                alpha=0.8, label="online estimate E*(θ)")
    fit = _draw_segment_fits(ax, axis, result, columns, band)
    for i, c in enumerate(result.changepoints):
        ax.axvline(axis.at(c - 0.5), color="tab:green", lw=1.0,
                   label="detected change points" if i == 0 else None)
    if truth is not None:
        for i, c in enumerate(np.asarray(truth, dtype=np.int64)):
            ax.axvline(axis.at(c - 0.5), color="k", lw=1.0, ls="--",
                       label="true change points" if i == 0 else None)
    _mark_outliers(ax, axis, values, fit, result.outliers, columns, max_outlier_marks)
    ax.set_xlim(*axis.at([-0.5, n - 0.5]))
    axis.format(ax)
    name = getattr(y, "name", None)
    ax.set_ylabel(ylabel or (str(name) if name is not None else "y"))
    if title is None:
        p = result.params
        sigma = "" if p.sigma is None else f"σ = {p.sigma:.4g}, "
        title = (f"{'robust' if p.robust else 'standard'} change-point detection: {sigma}"
                 f"h = {p.hazard:g}, forgetting = {p.forgetting:g}")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return ax


def _fit_positions(a: int, b: int, n: int, columns: int) -> np.ndarray:
    """The steps of segment ``[a, b)`` at which its fit is drawn: all of them in a series of
    at most ``2 · columns`` steps, else about two per column (a smooth polynomial)."""
    if n <= 2 * columns:
        return np.arange(a, b)
    k = max(2, int(np.ceil(2 * columns * (b - a) / n)))
    return np.unique(np.linspace(a, b - 1, k).round().astype(np.int64))


def _draw_segment_fits(ax, axis, result, columns: int, band: float | None) -> np.ndarray:
    """Each segment's fitted function (and its band), or its mean; returns the fit, (T,)."""
    if band is not None and not 0.0 < float(band) < 1.0:
        raise ValueError(f"band must be in (0, 1) or None, got {band!r}")
    fit, low, high = result.segment_fit(0.1 if band is None else float(band))
    n = fit.size
    labelled = set()
    for a, b in result.segments:
        if np.isnan(fit[a]):
            continue
        if np.isnan(low[a]) or b - a == 1:  # a level: one horizontal line
            label = "segment means" if np.isnan(low[a]) else "segment fits (level, trend)"
            ax.hlines(fit[a], *axis.at([a - 0.5, b - 0.5]), color="tab:orange", lw=2.0,
                      label=None if label in labelled else label)
            labelled.add(label)
            continue
        at = _fit_positions(a, b, n, columns)
        x = axis.x[at]
        if band is not None:
            label = f"band of the fit (possibility ≥ {float(band):g})"
            ax.fill_between(x, low[at], high[at], color="tab:orange", alpha=0.25, lw=0,
                            gid="segment fit band", label=None if label in labelled else label)
            labelled.add(label)
        label = "segment fits (level, trend)"
        ax.plot(x, fit[at], color="tab:orange", lw=2.0, gid="segment fit",
                label=None if label in labelled else label)
        labelled.add(label)
    return fit


def _mark_outliers(ax, axis, values, means, outliers, columns, max_marks) -> None:
    outliers = np.asarray(outliers, dtype=np.int64)
    if not outliers.size:
        return
    if outliers.size <= max_marks:
        ax.plot(axis.x[outliers], values[outliers], "o", mfc="none", mec="tab:red", ms=7,
                label=f"outliers ({outliers.size}, discounted)")
        # the value itself (the envelope of a long series leaves outliers out)
        ax.plot(axis.x[outliers], values[outliers], ".", ms=2.5, color="0.35")
        return
    # one mark per column: the outlier farthest from its segment's fit stands for the others
    starts = _bucket_starts(values.size, columns)
    bucket = np.searchsorted(starts, outliers, side="right") - 1
    far = np.abs(values[outliers] - np.nan_to_num(means[outliers]))
    order = np.lexsort((-far, bucket))  # by bucket, farthest first
    first = np.r_[True, bucket[order][1:] != bucket[order][:-1]]
    keep = outliers[order][first]
    ax.plot(axis.x[keep], values[keep], ".", color="tab:red", ms=3,
            label=f"outliers ({outliers.size}; per column, the farthest)")


# ----------------------------------------------------------------------------------------------
# run-length possibility


def run_length_image(result, max_run_length: int | None = None) -> np.ndarray:
    """Dense ``(R, T)`` array of run-length possibilities (row = run length), one replay pass."""
    T = result.y.size
    R = int(result.map_run_length.max()) + 1 if max_run_length is None else max_run_length + 1
    img = np.zeros((R, T), dtype=np.float32)
    for t, (start, log_w) in enumerate(result.iter_run_lengths()):
        r = t - start
        keep = r < R
        img[r[keep], t] = np.exp(log_w[keep])
    return img


def _binned_run_length_image(result, max_run_length, columns, rows):
    """Run-length image reduced to at most ``rows × columns`` cells, max per cell."""
    T = result.y.size
    R = int(result.map_run_length.max()) + 1 if max_run_length is None else max_run_length + 1
    if T <= columns and R <= rows:
        return run_length_image(result, R - 1), R
    col_of = np.searchsorted(_bucket_starts(T, columns), np.arange(T), side="right") - 1
    n_rows = min(R, rows)
    img = np.zeros((n_rows, col_of[-1] + 1), dtype=np.float32)
    for t, (start, log_w) in enumerate(result.iter_run_lengths()):
        r = t - start
        keep = r < R
        rows_t, w = (r[keep] * n_rows) // R, np.exp(log_w[keep])
        if not rows_t.size:
            continue
        rows_t, w = rows_t[::-1], w[::-1]  # runs are kept oldest first: r decreasing
        step = np.diff(rows_t)
        if (step < 0).any():  # not in order after all: sort
            order = np.argsort(rows_t, kind="stable")
            rows_t, w = rows_t[order], w[order]
            step = np.diff(rows_t)
        first = np.r_[0, np.flatnonzero(step) + 1]  # max within each row bin
        cells = rows_t[first]
        img[cells, col_of[t]] = np.maximum(img[cells, col_of[t]], np.maximum.reduceat(w, first))
    return img, R


def plot_run_length(result, ax=None, *, index=None, max_run_length: int | None = None,
                    columns: int = MAX_COLUMNS, rows: int = 600, gamma: float = 0.25,
                    map_path: bool = True, colorbar: bool = True):
    """Heat map of the run-length possibility after each step, with a colour bar.

    Row ``r``, column ``t``: the possibility that, after observation ``t``, the current
    segment has lasted ``r`` steps (replayed from the result, one pass). The colours follow
    ``possibility ** gamma`` (default the fourth root, as in the paper) so that low but
    non-negligible run lengths show; the colour bar is labelled in possibility. Long series
    are reduced to ``columns × rows`` cells (max per cell). The replay runs the numpy step
    function once per observation (slow with thousands of kept run lengths): fine for
    10⁴ points, long for 10⁶.

    Parameters
    ----------
    result : ChangepointResult
    ax : matplotlib Axes, optional
    index : DatetimeIndex or array of numbers, optional
        x coordinate of each observation.
    max_run_length : int, optional
        Largest run length shown (default: the largest MAP run length).
    columns, rows : int
        Largest image size.
    gamma : float
        Colour scale exponent in (0, 1].
    map_path : bool
        Draw the MAP run length on top.
    colorbar : bool
        Add the colour bar, in an inset axis just right of ``ax`` (``ax.child_axes``;
        ``ax.images[-1]`` is the image, for a shared bar).

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import possibly as ps
    >>> from possibly.plotting.changepoint_plots import plot_run_length
    >>> res = ps.ChangepointDetector(sigma=1.0, hazard=0.01).fit([0.0, 0.1, -0.1, 5, 5.1, 4.9])
    >>> ax = plot_run_length(res)
    >>> ax.images[0].get_array().shape, ax.get_ylabel()
    ((5, 6), 'run length r')
    """
    plt = pyplot()
    from matplotlib.colors import PowerNorm

    if not 0.0 < float(gamma) <= 1.0:
        raise ValueError(f"gamma must be in (0, 1], got {gamma!r}")
    n = result.y.shape[0]
    axis = TimeAxis(n, index)
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 3.5), layout="constrained")
    img, R = _binned_run_length_image(result, max_run_length, int(columns), int(rows))
    x0, x1 = axis.at([-0.5, n - 0.5])
    im = ax.imshow(img, aspect="auto", origin="lower", cmap="Greys",
                   norm=PowerNorm(gamma=float(gamma), vmin=0.0, vmax=1.0),
                   extent=(x0, x1, -0.5, R - 0.5), interpolation="nearest")
    if map_path:
        ax.plot(*min_max_envelope(axis.x, result.map_run_length, columns), lw=0.8,
                color="tab:red", label="MAP run length")
        ax.legend(loc="upper left", fontsize=8)
    ax.set_ylim(-0.5, R - 0.5)
    ax.set_ylabel("run length r")
    axis.format(ax)
    if colorbar:  # in an inset just right of the panel: beside it whatever the layout
        cax = ax.inset_axes((1.01, 0.0, 0.015, 1.0))
        ax.figure.colorbar(im, cax=cax, label="run-length possibility")
    return ax


# ----------------------------------------------------------------------------------------------
# figures written to files (CLI, demo, paper reproduction)


def plot_changepoints(result, path, *, truth=None, title: str | None = None,
                      window: tuple[int, int] | None = None, index=None,
                      ylabel: str | None = None) -> Path:
    """:func:`plot_result` to a PNG, optionally on a window of time indices.

    Parameters
    ----------
    result : ChangepointResult
    path : str or Path
        Output PNG.
    truth : array of int, optional
        True change points, drawn dashed.
    title : str, optional
    window : (start, stop), optional
        Only this range of time indices.
    index : DatetimeIndex or array of numbers, optional
        x coordinate (time stamp) of each observation.
    ylabel : str, optional
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(11, 4.2), layout="constrained")
    plot_result(result, ax=ax, index=index, truth=truth, title=title, ylabel=ylabel)
    if window is not None:
        lo, hi = int(window[0]), int(window[1])
        # the same x coordinates as plot_result drew (the result's own index by default)
        axis = TimeAxis(result.y.shape[0], _index_of(None, index, result))
        ax.set_xlim(*axis.at([lo - 0.5, hi - 0.5]))
        shown = np.r_[result.y[lo:hi], result.mean[lo:hi]]
        shown = shown[np.isfinite(shown)]
        if shown.size:  # the y range of the window, not of the whole series
            pad = 0.05 * max(np.ptp(shown), 1e-9)
            ax.set_ylim(shown.min() - pad, shown.max() + pad)
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_run_length_figure(result, path, *, title: str | None = None) -> Path:
    """The paper's figure, in three panels sharing the time axis: observations and estimate;
    the MAP run length; the run-length possibility (fourth-root colour scale) with its
    colour bar."""
    plt = pyplot()
    T = result.y.size
    t = np.arange(T)
    fig = plt.figure(figsize=(12, 8), layout="constrained")
    # the colour bar in its own narrow column, next to the heat map only: the three panels
    # keep one width (they share the time axis)
    grid = fig.add_gridspec(3, 2, height_ratios=[1, 0.45, 1.2], width_ratios=[1, 0.015])
    top = fig.add_subplot(grid[0, 0])
    mid = fig.add_subplot(grid[1, 0], sharex=top)
    bottom = fig.add_subplot(grid[2, 0], sharex=top)
    for ax in (top, mid):
        ax.tick_params(labelbottom=False)
    top.plot(t, result.y, ".", ms=2, color="0.5", label="observations")
    top.plot(t, result.mean, lw=1.0, color="tab:blue", label="estimate E*(θ)")
    name = getattr(result, "name", None)
    top.set_ylabel("y" if name is None else str(name))
    top.legend(loc="lower left", fontsize=8)
    mid.plot(t, result.map_run_length, lw=1.0, color="tab:red")
    mid.set_ylabel("MAP run\nlength")
    plot_run_length(result, ax=bottom, colorbar=False)
    fig.colorbar(bottom.images[-1], cax=fig.add_subplot(grid[2, 1]),
                 label="run-length possibility")
    bottom.set_xlabel("t")
    top.set_title(title or "fourth root of the run-length possibility (bottom)")
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_zooms(results: dict, path, windows=((1175, 1250), (3875, 4000))) -> Path:
    """Observations and estimates of several results (label -> result) on a few windows."""
    plt = pyplot()
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(1, len(windows), figsize=(6 * len(windows), 4.2),
                             layout="constrained")
    axes = np.atleast_1d(axes)
    styles = ["tab:blue", "tab:orange", "tab:green"]
    for ax, (lo, hi) in zip(axes, windows, strict=True):
        first = next(iter(results.values()))
        t = np.arange(lo, hi + 1)
        ax.plot(t, first.y[lo:hi + 1], "o", ms=3, color="0.4")
        for (_, res), color in zip(results.items(), styles, strict=False):
            ax.plot(t, res.mean[lo:hi + 1], lw=1.3, color=color)
            for c in res.changepoints:
                if lo <= c <= hi:
                    ax.axvline(c - 0.5, color=color, lw=0.8, ls=":")
            outs = [o for o in res.outliers if lo <= o <= hi]
            if outs:
                ax.plot(outs, res.y[outs], "o", mfc="none", mec="tab:red", ms=8)
        ax.set_title(f"t in [{lo}, {hi}]")
        ax.set_xlabel("t")
    # one legend for all panels, naming every kind of mark
    handles = [Line2D([], [], ls="none", marker="o", ms=3, color="0.4", label="observations")]
    for label, color in zip(results, styles, strict=False):
        handles += [Line2D([], [], color=color, lw=1.3, label=f"estimate, {label}"),
                    Line2D([], [], color=color, lw=0.8, ls=":",
                           label=f"change points, {label}")]
    handles.append(Line2D([], [], ls="none", marker="o", mfc="none", mec="tab:red", ms=8,
                          label="outliers (discounted)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 4),
               fontsize=8, frameon=False)
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
