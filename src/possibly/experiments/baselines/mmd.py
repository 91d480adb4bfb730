"""Minimum-MMD estimation of a normal location (Chérief-Abdellatif & Alquier), the baseline of
the paper's appendix A.

The estimator minimises the squared maximum mean discrepancy between the model
``P_θ = N(θ, σ²)`` (σ known) and the empirical distribution of ``y_1, ..., y_n``, with the
Gaussian kernel ``k(x, x') = exp(-(x - x')² / h²)`` and the median-distance bandwidth
``h = median |y_i - y_j|``. Writing ``s² = h² / 2`` (so ``k = exp(-(x - x')² / (2 s²))``) and
``v = s² + σ²``, the criterion has the closed form::

    MMD²(θ) = s / sqrt(s² + 2σ²) - (2/n) Σ_i (s / sqrt(v)) exp(-(θ - y_i)² / (2v))
              + (1/n²) Σ_ij k(y_i, y_j)

Only the middle term depends on θ: it is a Gaussian kernel density of the data with
variance ``v``, so the estimate is a mode of that density near the bulk of the data. It is
found by gradient descent with the step ``η = n v^(3/2) / (2 s Σ_i w_i)``
(``w_i = exp(-(θ - y_i)² / (2v))``), which turns each step into the mean-shift update
``θ ← Σ w_i y_i / Σ w_i``: a majorise-minimise step, so the criterion never increases.
It starts from the median, so it converges to the minimum nearest the bulk of the data.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from possibly.validation import as_finite, check_positive

__all__ = ["MMDLocation", "median_bandwidth", "mmd_criterion", "mmd_location"]


def _data(y) -> np.ndarray:
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"y must be numeric, got {y!r}") from exc
    if arr.ndim == 0:
        raise ValueError("y must hold observations along its last axis, got a scalar")
    if np.isinf(arr).any():
        raise ValueError("y must be finite or NaN (NaN entries are ignored)")
    if (np.sum(~np.isnan(arr), axis=-1) < 2).any():
        raise ValueError("y must hold at least 2 non-NaN observations per problem")
    return arr


def median_bandwidth(y) -> np.ndarray:
    """The median of the pairwise distances ``|y_i - y_j|``, ``i < j`` (NaN ignored).

    Parameters
    ----------
    y : array_like, shape (..., n)

    Examples
    --------
    >>> from possibly.experiments.baselines.mmd import median_bandwidth
    >>> float(median_bandwidth([0.0, 1.0, 3.0]))       # distances 1, 3, 2
    2.0
    """
    y = _data(y)
    n = y.shape[-1]
    i, j = np.triu_indices(n, k=1)
    dist = np.abs(y[..., i] - y[..., j])
    h = np.nanmedian(dist, axis=-1)
    if (h <= 0).any():
        raise ValueError("y must not be mostly equal values: the median distance is 0")
    return h


def mmd_criterion(theta, y, *, sd, bandwidth=None) -> np.ndarray:
    """The closed-form ``MMD²(N(θ, sd²), empirical(y))`` (module docstring), NaN ignored.

    Parameters
    ----------
    theta : array_like, shape (..., M)
        Locations at which to evaluate the criterion.
    y : array_like, shape (..., n)
    sd : float > 0
        Known standard deviation of the model.
    bandwidth : array_like, optional
        Kernel bandwidth ``h``; defaults to :func:`median_bandwidth`.

    Examples
    --------
    >>> from possibly.experiments.baselines.mmd import mmd_criterion
    >>> mmd_criterion([0.0, 5.0], [-1.0, 0.0, 1.0], sd=1.0).round(4)
    array([0.0116, 0.9462])
    """
    y = _data(y)
    theta = as_finite("theta", theta)
    theta = theta[None] if theta.ndim == 0 else theta
    sd = check_positive("sd", sd)
    h = median_bandwidth(y) if bandwidth is None else check_positive("bandwidth", bandwidth)
    s2 = 0.5 * np.asarray(h) ** 2
    v = s2 + sd**2
    valid = ~np.isnan(y)
    n = valid.sum(-1)
    yz = np.where(valid, y, 0.0)
    cross = np.where(valid[..., None, :],
                     np.exp(-0.5 * (theta[..., :, None] - yz[..., None, :]) ** 2
                            / np.asarray(v)[..., None, None]), 0.0).sum(-1)
    kyy = np.where(valid[..., :, None] & valid[..., None, :],
                   np.exp(-0.5 * (yz[..., :, None] - yz[..., None, :]) ** 2
                          / s2[..., None, None]), 0.0).sum((-2, -1))
    model = np.sqrt(s2 / (s2 + 2 * sd**2))
    return ((model + kyy / n**2)[..., None]
            - (2.0 / n * np.sqrt(s2 / v))[..., None] * cross)


class MMDLocation(NamedTuple):
    """Result of :func:`mmd_location` (batch shape of ``y`` without its last axis)."""

    location: np.ndarray
    bandwidth: np.ndarray
    iterations: int
    converged: np.ndarray


def mmd_location(y, *, sd, bandwidth=None, tol: float = 1e-10, max_iter: int = 1000
                 ) -> MMDLocation:
    """Minimum-MMD estimate of the mean of ``N(θ, sd²)`` from ``y`` (shape ``(..., n)``).

    Vectorised over leading dimensions; NaN observations are ignored.

    Parameters
    ----------
    y : array_like, shape (..., n)
    sd : float > 0
        Known standard deviation of the model.
    bandwidth : array_like, optional
        Kernel bandwidth ``h``; defaults to the median pairwise distance.
    tol : float > 0
        Stop when every step moves by less than ``tol * sqrt(v)``.
    max_iter : int

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.experiments.baselines.mmd import mmd_location
    >>> y = np.array([1.9, 2.1, 2.4, 1.6, 2.0, 40.0])     # one outlier
    >>> round(float(mmd_location(y, sd=0.5).location), 4), round(float(np.mean(y)), 4)
    (2.0, 8.3333)
    """
    y = _data(y)
    sd = check_positive("sd", sd)
    tol_arr = check_positive("tol", tol)
    h = median_bandwidth(y) if bandwidth is None else check_positive("bandwidth", bandwidth)
    h = np.broadcast_to(h, y.shape[:-1])
    v = (0.5 * h**2 + sd**2)[..., None]
    valid = ~np.isnan(y)
    yz = np.where(valid, y, 0.0)
    theta = np.nanmedian(y, axis=-1)
    done = np.zeros(theta.shape, dtype=bool)
    it = 0
    for it in range(1, int(max_iter) + 1):  # noqa: B007 (it is reported)
        w = np.where(valid, np.exp(-0.5 * (theta[..., None] - yz) ** 2 / v), 0.0)
        total = w.sum(-1)
        # w sums to 0 only if every point is ~40 sd away from theta, impossible from the median
        new = np.where(total > 0, (w * yz).sum(-1) / np.where(total > 0, total, 1.0), theta)
        step = np.abs(new - theta)
        theta = np.where(done, theta, new)
        done |= step < tol_arr * np.sqrt(v[..., 0])
        if done.all():
            break
    return MMDLocation(location=theta, bandwidth=np.asarray(h, dtype=np.float64),
                       iterations=it, converged=done)
