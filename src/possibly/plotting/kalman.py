"""Plots for the robust Kalman filter (paper §5.2 figure, ``possibly kalman --plot``)."""

from __future__ import annotations

import numpy as np

from possibly.plotting import pyplot

__all__ = ["plot_error_boxes", "plot_filtered_series", "plot_realisation"]


def plot_realisation(realisation: dict, path) -> str:
    """One realisation: true position, observations (outliers marked), filtered positions,
    and below, the discount of the robust filter.

    ``realisation`` is the ``"realisation"`` entry of :func:`possibly.experiments.kalman.run`.
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
    _discount_panel(axd, t, disc, "discount γ", "time step t")
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


def plot_filtered_series(ys, position, discount, path, title: str = "Kalman filter") -> str:
    """Observations, filtered positions and discounts of one series (for the CLI)."""
    plt = pyplot()
    ys = np.asarray(ys, dtype=float)
    t = np.arange(1, ys.size + 1)
    fig, (ax, axd) = plt.subplots(2, 1, figsize=(7, 5), sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1]})
    ax.plot(t, ys, ".", color="0.5", ms=3, label="observations")
    ax.plot(t, position, "-", color="tab:blue", lw=1.3, label="filtered position")
    ax.set_ylabel("position")
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title)
    _discount_panel(axd, t, np.asarray(discount, dtype=float), "discount", "time step")
    return _save(plt, fig, path)


def _discount_panel(ax, t, disc, ylabel: str, xlabel: str) -> None:
    """The discount per step on a log scale (0, an ignored outlier, drawn at the floor)."""
    ax.semilogy(t, np.maximum(disc, 1e-300), ".", ms=3, color="tab:blue")
    ax.set_ylim(1e-12, 2.0)
    ax.set_ylabel(ylabel)
    ax.set_xlabel(xlabel)


def _save(plt, fig, path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)
