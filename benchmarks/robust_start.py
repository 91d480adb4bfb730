"""Prototype of the robust start of the robust Kalman filter, on the public KalmanFilter API.

From the uninformative prior the first observations cannot be checked (their consistency is
1 until every direction of the state is informed), so an outlier among them is taken whole,
later inliers then look inconsistent and are discounted: the track is lost. The paper's §4.1
assumes the first observation is an inlier; this scheme drops the assumption in the
possibilistic way.

Start hypotheses ``h``: which of the first ``k`` observations are outliers (at most
``max_outliers`` of them); under ``h`` those observations are treated as missing and the robust
filter is run from the uninformative prior. Every hypothesis is then scored on the *same*
observations, those after the first ``k``: its possibility is the product of the
consistencies ``max(c_t, ε)`` of these observations under it (``ε``: an outlier, equally
possible under every hypothesis), max-normalised over the hypotheses
(a maxitive mixture of the filters, whose weight is the likelihood-based possibility of
the hypothesis given the common data). A hypothesis built on an outlier predicts the next
inliers badly, so its weight collapses; hypotheses built on inliers only predict alike and
keep comparable weights. After ``window`` scored steps the mixture is collapsed to its most
possible hypothesis (its E* is the E* of the mixture), whose state seeds the robust filter
for the rest of the series.

Cost: ``1 + k + C(k, 2) + ...`` filters over the first ``k + window`` steps only.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.stats import chi2

import possibly as ps


def hypotheses(k: int, max_outliers: int) -> list[tuple[int, ...]]:
    """Index sets of the first ``k`` observations declared outliers (the empty set first)."""
    out: list[tuple[int, ...]] = []
    for r in range(max_outliers + 1):
        out.extend(combinations(range(k), r))
    return out


def robust_start_filter(kf: ps.KalmanFilter, ys: np.ndarray, *, k: int = 3,
                        max_outliers: int = 1, window: int = 20) -> dict:
    """Filtered means (B, T, n) and the chosen hypothesis per series; ys shape (B, T, m)."""
    F, Q = kf._tr.F, kf._tr.Q  # prototype only: the package version owns the model
    B, T, m = ys.shape
    head = min(T, k + window)
    hyps = hypotheses(k, max_outliers)
    H = len(hyps)
    trial = np.repeat(ys[None, :, :head], H, axis=0)  # (H, B, head, m)
    for i, h in enumerate(hyps):
        trial[i][:, list(h)] = np.nan
    res = kf.filter(trial.reshape(H * B, head, m))
    log_c = res.log_consistency.reshape(H, B, head)[:, :, k:]
    # an observation may also be an outlier under every hypothesis: its possibility is then
    # floored at the consistency that 99.9% of inliers exceed (vᵀS⁻¹v ~ χ²_m), the same for
    # every hypothesis, so one outlier in the window cannot decide between hypotheses
    floor = -0.5 * chi2.ppf(0.999, m)
    score = np.nansum(np.maximum(log_c, floor), axis=-1)  # (H, B)
    best = np.argmax(score, axis=0)  # ties -> fewest outliers (listed first)
    mean = res.mean.reshape(H, B, head, -1)[best, np.arange(B)]
    out = np.empty((B, T, mean.shape[-1]))
    out[:, :head] = mean
    if head < T:
        cov = res.covariance.reshape(H, B, head, mean.shape[-1], -1)[best, np.arange(B), -1]
        pm = mean[:, -1] @ F.T
        pc = F @ cov @ F.T + Q
        prior = ps.MultivariateNormal(pm, np.linalg.inv(pc))
        out[:, head:] = kf.filter(ys[:, head:], prior=prior).mean
    return {"mean": out, "hypothesis": best, "hypotheses": hyps}
