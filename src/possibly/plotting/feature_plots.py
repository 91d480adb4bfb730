"""Plots of the extended feature estimation study (paper §5.1, Fig. 1)."""

from __future__ import annotations

import numpy as np

from possibly.plotting import pyplot

__all__ = ["plot_consistency", "plot_errors"]

_LABELS = {
    "standard_inliers": "standard, inliers only",
    "standard_all": "standard, all batches",
    "robust": "robust (discount)",
    "threshold": "robust, threshold",
}


def plot_errors(errors: dict, path: str) -> str:
    """Mean Frobenius error against t, one panel per reading of "outlier" (Fig. 1a).

    ``errors`` maps a reading to the dict returned by
    :func:`possibly.experiments.feature_study.error_study`.
    """
    plt = pyplot()
    fig, axes = plt.subplots(1, len(errors), figsize=(5.5 * len(errors), 4), squeeze=False)
    for ax, (reading, res) in zip(axes[0], errors.items(), strict=True):
        t = np.asarray(res["t"])
        for method, label in _LABELS.items():
            ax.plot(t, res["mean_error"][method], label=label)
        ax.set_yscale("log")
        ax.set_xlabel("iteration t")
        ax.set_ylabel(r"mean $\|\Sigma - \Psi_t/\nu_t\|_F$")
        what = "whole batches" if reading == "batch" else "single vectors"
        ax.set_title(f"outliers = {what} ({res['repeats']} repeats)")
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_consistency(consistency: dict, path: str, tau: float | None = None) -> str:
    """γ_t = c_t^(1/d') per iteration for each dimension, inliers and outliers marked (Fig. 1b).

    One row per reading of "outlier"; under the vector reading a batch is marked as an outlier
    when it holds at least one outlying vector.
    """
    plt = pyplot()
    rows = list(consistency.items())
    ncols = max(len(res["runs"]) for _, res in rows)
    fig, axes = plt.subplots(len(rows), ncols, figsize=(4.2 * ncols, 3.3 * len(rows)),
                             squeeze=False, sharey="row")
    for r, (reading, res) in enumerate(rows):
        for c, run in enumerate(res["runs"]):
            ax = axes[r, c]
            gamma = np.asarray(run["gamma"])
            out = np.asarray(run["outlier"], dtype=bool)
            t = np.arange(1, gamma.size + 1)
            ax.scatter(t[~out], gamma[~out], s=4, color="tab:blue", label="inlier batch")
            ax.scatter(t[out], gamma[out], s=14, color="tab:red", marker="x",
                       label="outlier batch" if reading == "batch" else "≥ 1 outlier vector")
            if tau is not None:
                ax.axhline(tau, color="grey", lw=0.8, ls="--", label=rf"$\tau$ = {tau}")
            ax.set_yscale("log")
            ax.set_title(f"d = {run['dim']}, n = {run['n']} ({reading} outliers)")
            ax.set_xlabel("iteration t")
            if c == 0:
                ax.set_ylabel(r"$\gamma_t = c_t^{1/d'}$")
                ax.legend(fontsize="small", loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
