"""Figures of the appendices: RMSE against ε (appendix A) and the soft uniform (appendix B).

Each function takes the dict returned by the matching ``possibly.experiments`` module's
``run`` and writes PNG files into ``out_dir``, returning their paths.
"""

from __future__ import annotations

import os

import numpy as np

from possibly.plotting import pyplot

__all__ = ["plot_normal", "plot_normal_mmd", "plot_soft_uniform"]

LABELS = {
    "bayes_all": "Bayes (all)",
    "bayes_inliers": "Bayes (inliers)",
    "median_mad": "median / MAD",
    "median": "median",
    "robust_discount": "robust (discount)",
    "robust_threshold": r"robust (threshold $\tau$ = 0.1)",
    "printed_threshold": "threshold, paper's printed updates (typo)",
    "mmd": "MMD",
}
STYLE = {"printed_threshold": {"linestyle": ":", "color": "grey"}}


def _rmse_panel(ax, eps, series: dict, key: str | None, ylabel: str, crop=None):
    for method, values in series.items():
        vals = values if key is None else values[key]
        ax.plot(eps, vals, marker="o", markersize=3, label=LABELS.get(method, method),
                **STYLE.get(method, {}))
    ax.set_xlabel(r"probability of outliers $\epsilon$")
    ax.set_ylabel(ylabel)
    if crop is not None:
        ax.set_ylim(0, crop)
    ax.grid(alpha=0.3)


def plot_normal(result: dict, out_dir) -> list[str]:
    """Appendix A, first figure: RMSE of μ (cropped, as in the paper) and of λ, per T."""
    plt = pyplot()
    paths = []
    eps = result["eps"]
    for n, series in result["results"].items():
        fig, (ax_mu, ax_lam) = plt.subplots(1, 2, figsize=(11, 4.2))
        robust_max = max(max(v["rmse_mu"]) for m, v in series.items() if m != "bayes_all")
        _rmse_panel(ax_mu, eps, series, "rmse_mu", r"RMSE of $\mu$", crop=1.5 * robust_max)
        lam_max = max(max(v["rmse_lambda"]) for m, v in series.items()
                      if m != "printed_threshold")
        _rmse_panel(ax_lam, eps, series, "rmse_lambda", r"RMSE of $\lambda$",
                    crop=1.3 * lam_max)
        ax_lam.legend(fontsize=8)
        fig.suptitle(f"Normal, unknown mean and precision: T = {n}, "
                     f"{result['setting']['repeats']} repeats")
        fig.tight_layout()
        path = os.path.join(out_dir, f"normal_T{n}.png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_normal_mmd(result: dict, out_dir) -> list[str]:
    """Appendix A, second figure: RMSE of μ with known precision, with MMD; a second panel
    restricted to repeats whose first observation is an inlier."""
    plt = pyplot()
    eps = result["eps"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    crop = 1.5 * max(max(v) for m, v in result["rmse_first_inlier"].items()
                     if m != "bayes_all")
    _rmse_panel(axes[0], eps, result["rmse"], None, r"RMSE of $\mu$", crop=crop)
    axes[0].set_title("all repeats", fontsize=10)
    _rmse_panel(axes[1], eps, result["rmse_first_inlier"], None, r"RMSE of $\mu$", crop=crop)
    axes[1].set_title("repeats whose first observation is an inlier", fontsize=10)
    axes[1].legend(fontsize=8)
    fig.suptitle(f"Normal, known precision: T = {result['setting']['T']}, "
                 f"{result['setting']['repeats']} repeats")
    fig.tight_layout()
    path = os.path.join(out_dir, "normal_mmd.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [path]


def plot_soft_uniform(result: dict, out_dir, decays=(0.05, 0.2, 1.0, 10.0)) -> list[str]:
    """Appendix B: the soft-uniform likelihood ``L̃(θ | y = 100)`` for several decays, and the
    robust posterior of one realisation against the standard (hard) posterior on inliers."""
    from possibly.estimators.soft_uniform import soft_uniform_log_likelihood

    plt = pyplot()
    fig, (ax_l, ax_p) = plt.subplots(1, 2, figsize=(11, 4.2))
    theta = np.linspace(1.0, 250.0, 2000)
    for c in decays:
        ax_l.plot(theta, np.exp(soft_uniform_log_likelihood(theta, 100.0, decay=c)),
                  label=f"c = {c:g}")
    ax_l.set_xlabel(r"$\theta$")
    ax_l.set_ylabel(r"$\tilde L(\theta \mid y = 100)$")
    ax_l.legend(fontsize=8)
    ax_l.grid(alpha=0.3)

    ex = result["example"]
    grid = np.asarray(ex["theta"])
    ax_p.plot(grid, np.exp(ex["robust_log_possibility"]),
              label=f"robust, soft (c = {result['setting']['decay']:g})")
    s, a = ex["hard_inliers_scale"], ex["hard_inliers_shape"]
    hard = np.where(grid >= s, (s / grid) ** a, 0.0)
    ax_p.plot(grid, hard, linestyle="--", label="standard, hard uniform, inliers only")
    obs = np.asarray(ex["observations"])
    inl = np.asarray(ex["inlier_sorted"], dtype=bool)
    lo, hi = grid[0], grid[-1]
    shown = (obs >= lo) & (obs <= hi)
    ax_p.plot(obs[shown & inl], np.zeros((shown & inl).sum()), "|", color="k", markersize=10,
              label="inliers")
    ax_p.plot(obs[shown & ~inl], np.zeros((shown & ~inl).sum()), "|", color="r",
              markersize=10, label="outliers")
    ax_p.axvline(result["setting"]["theta"], color="grey", linewidth=0.8)
    ax_p.set_xlabel(r"$\theta$")
    ax_p.set_ylabel("posterior possibility")
    ax_p.legend(fontsize=8)
    ax_p.grid(alpha=0.3)
    fig.suptitle("Soft-uniform likelihood (left) and one posterior (right)")
    fig.tight_layout()
    path = os.path.join(out_dir, "soft_uniform.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [path]
