"""Plots for the robust Kalman filter (paper §5.2 figure, ``possibly kalman --plot``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from possibly.plotting import pyplot
from possibly.plotting._common import TimeAxis
from possibly.plotting.discount_plots import discount_panel

__all__ = ["plot_error_boxes", "plot_filtered_series", "plot_realisation"]


def plot_realisation(realisation: dict, path) -> str:
    """One realisation: true position, observations (outliers marked), filtered positions,
    and below, the discount of the robust filter.

    ``realisation`` is the ``"realisation"`` entry of :func:`possibly.experiments.kalman_study.run`.
    """
    plt = pyplot()
    pos = np.asarray(realisation["position"])
    ys = np.asarray(realisation["observation"])
    out = np.asarray(realisation["outlier"], dtype=bool)
    t = np.arange(1, pos.size + 1)
    fig, (ax, axd) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1]})
    ax.plot(t[~out], ys[~out], ".", color="0.6", ms=3, label="inliers")
    ax.plot(t[out], ys[out], "x", color="tab:red", ms=4, label="outliers")
    ax.plot(t, pos, "k-", lw=1.5, label="true position")
    styles = {"std all": ("tab:orange", "--"), "discount": ("tab:blue", "-"),
              "threshold": ("tab:green", ":")}
    for name, (color, ls) in styles.items():
        if name in realisation["estimate"]:
            ax.plot(t, realisation["estimate"][name], ls, color=color, lw=1.2, label=name)
    lo, hi = pos.min(), pos.max()
    pad = max(5.0, 0.2 * (hi - lo))
    ax.set_ylim(lo - pad, hi + pad)  # outliers beyond are clipped: the track is the point
    ax.set_ylabel("position")
    ax.legend(loc="best", fontsize=8)
    ax.set_title("Nearly-constant velocity model: one realisation")
    disc = np.array([np.nan if d is None else d for d in realisation["discount"]], dtype=float)
    discount_panel(axd, t, disc)
    return _save(plt, fig, path)


def plot_error_boxes(errors: dict, path, repeats: int | None = None,
                     variant: dict | None = None) -> str:
    """Box plots of the time-averaged absolute position error, one box per method.

    With ``variant`` (errors of the scenario whose first two observations are inliers), a
    second panel shows those.
    """
    plt = pyplot()
    panels = [("as printed: outliers at any step", errors)]
    if variant is not None:
        panels.append(("first two observations inliers", variant))
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), sharey=True,
                             squeeze=False)
    for ax, (title, errs) in zip(axes[0], panels, strict=True):
        names = list(errs)
        ax.boxplot([np.asarray(errs[k], dtype=float) for k in names], showfliers=True,
                   flierprops={"markersize": 3})
        ax.set_xticks(range(1, len(names) + 1), names)
        ax.set_yscale("log")  # runs that lost the track are orders of magnitude off
        ax.set_title(title, fontsize=10)
    axes[0, 0].set_ylabel("time-averaged |position error|")
    n = f" over {repeats} repeats" if repeats else ""
    fig.suptitle(f"Absolute position error{n}")
    return _save(plt, fig, path)


def plot_filtered_series(ys, position, discount, path, title: str = "Kalman filter", *,
                         sd=None, smoothed: bool = False, index=None,
                         ylabel: str | Sequence[str] = "position") -> str:
    """Observations, estimated positions (±2 sd band) and discounts of one track, to a PNG.

    One panel per observed axis (a 2-D track: two panels sharing the time axis), and below,
    the discount of each step (one per vector observation).

    Parameters
    ----------
    ys : array, shape (T,) or (T, k)
        Observations (``k`` axes); NaN = missing, marked by ticks under the data.
    position : array, shape of ``ys``
        Filtered (or, with ``smoothed=True``, smoothed) position.
    discount : array, shape (T,)
        Discount γ of each observation, drawn as ``log10 γ`` so that outliers' discounts of
        1e-120 stay visible (γ = 0 is marked at the bottom of the panel).
    path : str or Path
    title : str
    sd : array, shape of ``ys``, optional
        Standard deviation of the position: adds the ±2 sd band (left out where infinite,
        i.e. before the position is informed).
    smoothed : bool
        The estimate is the smoother's (for the legend).
    index : DatetimeIndex or array of numbers, optional
        x coordinate (time stamp) of each step; default 1..T.
    ylabel : str or sequence of k str
        Label of each axis' panel (one string: the same for all).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> y = np.array([0.0, 1.0, np.nan, 3.0, 40.0, 5.0])
    >>> path = plot_filtered_series(y, np.arange(6.0), [1, 1, np.nan, 1, 1e-120, 1],
    ...                             os.path.join(tempfile.mkdtemp(), "kf.png"),
    ...                             sd=np.ones(6), smoothed=True)
    >>> os.path.getsize(path) > 0
    True
    """
    plt = pyplot()
    ys = np.asarray(ys, dtype=float)
    ys2 = ys.reshape(ys.shape[0], -1) if ys.ndim else ys.reshape(1, 1)
    T, k = ys2.shape
    position = np.asarray(position, dtype=float).reshape(T, k)
    if sd is not None:
        sd = np.asarray(sd, dtype=float).reshape(T, k)
    labels = [ylabel] * k if isinstance(ylabel, str) else [str(v) for v in ylabel]
    if len(labels) != k:
        raise ValueError(f"ylabel must be a string or {k} strings (one per axis), "
                         f"got {len(labels)}")
    axis = TimeAxis(T, index)
    t = axis.x if index is not None else np.arange(1, T + 1)
    fig, axes = plt.subplots(k + 1, 1, figsize=(8, 2.75 + 2.75 * k), sharex=True,
                             layout="constrained",
                             gridspec_kw={"height_ratios": [3] * k + [1.3]})
    kind = "smoothed" if smoothed else "filtered"
    for j, ax in enumerate(axes[:-1]):
        _series_panel(ax, t, ys2[:, j], position[:, j], None if sd is None else sd[:, j], kind)
        ax.set_ylabel(labels[j])
    axes[0].set_title(title)
    discount_panel(axes[-1], t, discount, ylabel="discount",
                   xlabel="time" if index is not None else "time step")
    if axis.is_date:
        axis.format(axes[-1])
    return _save(plt, fig, path)


def _series_panel(ax, t, ys, position, sd, kind: str) -> None:
    """One axis of the track: observations, estimate, ±2 sd band, missing steps."""
    if sd is not None:
        sd = np.where(np.isfinite(sd), sd, np.nan)  # no band before the position is informed
        ax.fill_between(t, position - 2 * sd, position + 2 * sd, color="tab:blue", alpha=0.18,
                        lw=0, label=f"{kind} position ± 2 sd")
    ax.plot(t, ys, ".", color="0.45", ms=3, label="observations")
    ax.plot(t, position, "-", color="tab:blue", lw=1.3, label=f"{kind} position")
    missing = np.isnan(ys)
    if missing.any():
        ax.plot(t[missing], np.zeros(missing.sum()), "|", color="tab:purple", ms=10, mew=1.5,
                transform=ax.get_xaxis_transform(),  # ticks along the bottom edge
                label=f"missing observations ({int(missing.sum())})")
    lo, hi = np.nanpercentile(np.r_[position, ys[~missing]], [0.5, 99.5])
    pad = 0.15 * max(hi - lo, 1e-9)
    ax.set_ylim(min(lo, np.nanmin(position)) - pad, max(hi, np.nanmax(position)) + pad)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _save(plt, fig, path) -> str:
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)
