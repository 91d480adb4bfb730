"""Figure of docs/applications/changepoint.md, "Segment models, evidence and uncertainty".

Run from the repository root: ``python docs/applications/figures/changepoint_models.py``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import possibly as ps
from possibly.changepoint import NormalMean, NormalMeanVariance, PolynomialTrend

OUT = Path(__file__).with_name("changepoint_models.png")


def main() -> None:
    rng = np.random.default_rng(4)
    # a level, a spike, a trend after a jump, then a variance change
    y = np.r_[rng.normal(0, 1, 120), 6 + 0.08 * np.arange(120) + rng.normal(0, 1, 120),
              rng.normal(20, 4, 120)]
    y[60] += 40.0
    family = [NormalMeanVariance(), PolynomialTrend(1), PolynomialTrend(2)]
    new = ps.ChangepointDetector(model=family, forgetting=1.0, tol=1e-3).fit(y)  # the default
    # the paper's model and recursion (no evidence floor), sigma estimated
    old = ps.ChangepointDetector(model=NormalMean("auto", outliers="paper")).fit(y)
    names = ["level", "linear", "quadratic"]

    fig, axes = plt.subplots(3, 1, figsize=(9, 7.5), sharex=True,
                             gridspec_kw={"height_ratios": [2, 2, 1]})
    for ax, res, title in ((axes[0], old, "the paper's model (normal mean, known σ)"),
                           (axes[1], new, "default: level / linear / quadratic, unknown noise")):
        ax.plot(y, lw=0.8, color="0.35")
        for c in res.changepoints:
            ax.axvline(c, color="tab:red", lw=1)
        ax.plot(res.outliers, y[res.outliers], "o", mfc="none", color="tab:orange",
                label="outlier")
        ax.set_title(f"{title}: {res.changepoints.size} change points", fontsize=10)
        ax.set_ylim(-8, 45)
    for (a, b), k in zip(new.segments, new.segment_models, strict=True):
        axes[1].text((a + b) / 2, 40, names[k], ha="center", fontsize=8)
    axes[0].legend(loc="upper right", fontsize=8)
    axes[2].plot(new.change_possibility, color="tab:blue", lw=0.9)
    for lo, hi in new.changepoint_intervals(0.5):
        axes[2].axvspan(lo - 0.5, hi - 0.5, color="tab:red", alpha=0.3)
    axes[2].set_ylabel("change\npossibility")
    axes[2].set_xlabel("t")
    fig.tight_layout()
    fig.savefig(OUT, dpi=110)
    print(f"wrote {OUT}: {new.changepoints.tolist()} models {new.segment_models}, "
          f"paper's model {old.changepoints.tolist()}")


if __name__ == "__main__":
    main()
