"""Plots for the particle-filter study (:mod:`possibly.experiments.particle_study`)."""

from __future__ import annotations

import numpy as np

from possibly.plotting import pyplot
from possibly.plotting.discount_plots import discount_panel

__all__ = ["plot_error_boxes", "plot_particle_vs_kalman", "plot_tracking"]


def plot_particle_vs_kalman(linear: dict, path) -> str:
    """Per-repeat error of the particle filter against the Kalman filter (same data).

    ``linear`` is the ``"linear"`` entry of :func:`possibly.experiments.particle_study.run`.
    """
    plt = pyplot()
    errs = {k: np.asarray(v) for k, v in linear["errors"].items()}
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
    for ax, label in zip(axes, ("discount", "std all"), strict=True):
        kf, pf = errs[f"kalman {label}"], errs[f"particle {label}"]
        lo, hi = min(kf.min(), pf.min()), max(kf.max(), pf.max())
        first_out = np.zeros(kf.size, dtype=bool)
        first_out[linear.get("first_outlier_repeats", [])] = True
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="equal error")
        ax.plot(kf[~first_out], pf[~first_out], ".", ms=4,
                color="tab:blue" if label == "discount" else "tab:orange",
                label="first observation inlier")
        ax.plot(kf[first_out], pf[first_out], "x", ms=5, color="tab:red",
                label="first observation outlier")
        ratios = linear.get("particle_vs_kalman_first_inlier", linear["particle_vs_kalman"])
        r = ratios[label]["mean_ratio"]
        ax.set_title(f"{'robust' if label == 'discount' else 'standard'}: mean error ratio "
                     f"{r:.3f} (first obs. inlier)", fontsize=9)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("Kalman filter: mean |position error|")
        ax.set_ylabel("particle filter: mean |position error|")
        ax.legend(loc="lower right", fontsize=7)
    fig.suptitle(f"§5.2 scenario, {linear['config']['repeats']} repeats, "
                 f"N = {linear['config']['n_particles']} particles", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)


def plot_tracking(realisation: dict, path) -> str:
    """One range-bearing realisation: track, measurements, estimates, and the discounts.

    ``realisation`` is ``run(...)["range_bearing"]["realisation"]``.
    """
    plt = pyplot()
    truth = np.asarray(realisation["truth"])
    ys = np.asarray(realisation["observation"])
    out = np.asarray(realisation["outlier"], dtype=bool)
    meas = ys[:, 1:2] * np.stack([np.cos(ys[:, 0]), np.sin(ys[:, 0])], axis=-1)
    fig, (ax, axd) = plt.subplots(2, 1, figsize=(7, 7), gridspec_kw={"height_ratios": [3, 1]})
    ax.plot(meas[~out, 0], meas[~out, 1], ".", color="0.6", ms=4, label="measurements")
    ax.plot(meas[out, 0], meas[out, 1], "x", color="tab:red", ms=5, label="outliers")
    ax.plot(truth[:, 0], truth[:, 1], "k-", lw=1.5, label="true track")
    ax.plot([0], [0], "k^", ms=8, label="sensor")
    styles = {"std all": ("tab:orange", "--"), "discount": ("tab:blue", "-"),
              "std inliers": ("tab:green", ":")}
    for name, (color, ls) in styles.items():
        if name in realisation["estimate"]:
            pos = np.asarray(realisation["estimate"][name]["position"])
            ax.plot(pos[:, 0], pos[:, 1], ls, color=color, lw=1.2, label=f"E*: {name}")
    pad = 10.0
    ax.set_xlim(truth[:, 0].min() - pad, truth[:, 0].max() + pad)
    ax.set_ylim(min(truth[:, 1].min(), 0.0) - pad, truth[:, 1].max() + pad)
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(loc="best", fontsize=8)
    ax.set_title("Range-bearing tracking with outliers: one realisation")
    t = np.arange(1, truth.shape[0] + 1)
    disc = np.asarray(realisation["estimate"]["discount"]["discount"], dtype=float)
    discount_panel(axd, t, disc, outlier=out)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)


def plot_error_boxes(errors: dict, path) -> str:
    """Box plots of the time-averaged position error per method (range-bearing study)."""
    plt = pyplot()
    names = [k for k in ("std inliers", "std all", "discount", "threshold") if k in errors]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.boxplot([np.asarray(errors[k]) for k in names], showfliers=True)
    ax.set_xticks(range(1, len(names) + 1), names)
    ax.set_yscale("log")
    ax.set_ylabel("mean position error")
    ax.set_title(f"Range-bearing tracking, {len(errors[names[0]])} repeats", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)
