"""Plots for :mod:`possibly.changepoint` (matplotlib is imported only when a plot is made)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from possibly.plotting import pyplot

__all__ = ["plot_changepoints", "plot_run_length_figure", "plot_zooms", "run_length_image"]


def _segment_means(result) -> np.ndarray:
    """Mean of each final segment, outliers and missing values left out, shape (T,)."""
    y = np.asarray(result.y, dtype=float).copy()
    y[result.outliers] = np.nan
    out = np.full(y.size, np.nan)
    for a, b in result.segments:
        seg = y[a:b]
        if np.isfinite(seg).any():
            out[a:b] = np.nanmean(seg)
    return out


def plot_changepoints(result, path, *, truth=None, title: str | None = None,
                      window: tuple[int, int] | None = None) -> Path:
    """Series, segment means, online estimate, change points and outliers, to a PNG.

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
    """
    plt = pyplot()
    t = np.arange(result.y.size)
    lo, hi = window if window is not None else (0, result.y.size)
    sl = slice(lo, hi)
    fig, ax = plt.subplots(figsize=(11, 4.2))
    ax.plot(t[sl], result.y[sl], ".", ms=2.5, color="0.45", label="observations")
    ax.plot(t[sl], result.mean[sl], lw=1.0, color="tab:blue", alpha=0.8,
            label="online estimate E*(θ)")
    ax.plot(t[sl], _segment_means(result)[sl], lw=2.0, color="tab:orange",
            label="segment means")
    cps = [c for c in result.changepoints if lo <= c < hi]
    for i, c in enumerate(cps):
        ax.axvline(c - 0.5, color="tab:green", lw=1.0,
                   label="detected change points" if i == 0 else None)
    if truth is not None:
        for i, c in enumerate(c for c in np.asarray(truth) if lo <= c < hi):
            ax.axvline(c - 0.5, color="k", lw=1.0, ls="--",
                       label="true change points" if i == 0 else None)
    outs = [o for o in result.outliers if lo <= o < hi]
    if outs:
        ax.plot(outs, result.y[outs], "o", mfc="none", mec="tab:red", ms=7,
                label="outliers (discounted)")
    ax.set_xlim(lo - 0.5, hi - 0.5)
    ax.set_xlabel("t")
    ax.legend(loc="best", fontsize=8, ncol=2)
    p = result.params
    ax.set_title(title or (f"{'robust' if p.robust else 'standard'} change-point detection: "
                           f"σ = {p.sigma:.4g}, h = {p.hazard:g}, forgetting = {p.forgetting:g}"))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


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


def plot_run_length_figure(result, path, *, title: str | None = None) -> Path:
    """The paper's figure: top, observations, estimate and rescaled MAP run length; bottom,
    the fourth root of the run-length possibility as an image with the MAP path."""
    plt = pyplot()
    T = result.y.size
    t = np.arange(T)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 7), sharex=True,
                                      gridspec_kw={"height_ratios": [1, 1.2]})
    top.plot(t, result.y, ".", ms=2, color="0.5", label="observations")
    top.plot(t, result.mean, lw=1.0, color="tab:blue", label="estimate E*(θ)")
    y_lo, y_hi = np.nanmin(result.y), np.nanmax(result.y)
    r = result.map_run_length
    scaled = y_lo + (y_hi - y_lo) * r / max(r.max(), 1)
    top.plot(t, scaled, lw=1.0, color="tab:red", alpha=0.8, label="MAP run length (rescaled)")
    top.legend(loc="lower left", fontsize=8)
    img = run_length_image(result)
    bottom.imshow(img ** 0.25, aspect="auto", origin="lower", cmap="Greys",
                  extent=(-0.5, T - 0.5, -0.5, img.shape[0] - 0.5), interpolation="nearest")
    bottom.plot(t, r, lw=0.8, color="tab:red", label="MAP run length")
    bottom.set_ylabel("run length r")
    bottom.set_xlabel("t")
    bottom.legend(loc="upper left", fontsize=8)
    top.set_title(title or "fourth root of the run-length possibility (bottom)")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_zooms(results: dict, path, windows=((1175, 1250), (3875, 4000))) -> Path:
    """Observations and estimates of several results (label -> result) on a few windows."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(windows), figsize=(6 * len(windows), 3.8))
    axes = np.atleast_1d(axes)
    styles = ["tab:blue", "tab:orange", "tab:green"]
    for ax, (lo, hi) in zip(axes, windows, strict=True):
        first = next(iter(results.values()))
        t = np.arange(lo, hi + 1)
        ax.plot(t, first.y[lo:hi + 1], "o", ms=3, color="0.4", label="observations")
        for (label, res), color in zip(results.items(), styles, strict=False):
            ax.plot(t, res.mean[lo:hi + 1], lw=1.3, color=color, label=f"estimate, {label}")
            for c in res.changepoints:
                if lo <= c <= hi:
                    ax.axvline(c - 0.5, color=color, lw=0.8, ls=":")
            outs = [o for o in res.outliers if lo <= o <= hi]
            if outs:
                ax.plot(outs, res.y[outs], "o", mfc="none", mec="tab:red", ms=8)
        ax.set_title(f"t in [{lo}, {hi}]")
        ax.set_xlabel("t")
    axes[0].legend(fontsize=8, loc="best")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
