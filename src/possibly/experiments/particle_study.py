"""Beyond conjugacy: the robust possibilistic particle filter.

Two studies, both with the same data and seeds for every method:

1. **Linear-Gaussian check** (paper §5.2 scenario, data from
   :func:`possibly.experiments.kalman_study.simulate`): the particle filter on
   ``x -> F x + N̄(0, Q)``, ``y ~ N(x_1, 1)`` against the exact (robust) Kalman filter
   :class:`possibly.KalmanFilter`, both started from the same prior
   ``N̄(m_0, diag(10², 0.5²)⁻¹)`` (particles cannot represent the uninformative prior). Score:
   time-averaged absolute position error of E*, per repeat.
2. **Range-bearing tracking with outliers** (nonlinear, no closed form): a target on a
   nearly-constant-velocity path in the plane passes a sensor at the origin, which measures
   bearing (sd 0.05 rad) and range (sd 1); with probability 0.1 a measurement is an outlier
   with 10 times the noise. Methods: ``std inliers`` (standard particle filter given only the
   inliers), ``std all`` (standard, every measurement), ``discount`` (robust), ``threshold``
   (robust, τ = 0.1). Prior: normal, centred on the true initial state plus a draw of the
   prior error (sd 5 in position, 0.2 in velocity). Score: time-averaged Euclidean position
   error of E*.
"""

from __future__ import annotations

import os

import numpy as np

from possibly.families.multivariate_normal import MultivariateNormal
from possibly.filters.kalman import KalmanFilter
from possibly.filters.particle_filter import GaussianNoise, ParticleFilter
from possibly.filters.state_space import constant_velocity
from possibly.progress import progress_bar

__all__ = ["METHODS", "plot", "range_bearing_model", "run", "simulate_range_bearing"]

METHODS = ("std inliers", "std all", "discount", "threshold")
TAU = 0.1
#: range-bearing scenario constants
BEARING_SD, RANGE_SD, OUTLIER_SCALE, OUTLIER_PROB = 0.05, 1.0, 10.0, 0.1
INITIAL_STATE = (-30.0, 1.0, 20.0, 0.0)  # (x, vx, y, vy): passes 20 above the sensor
PRIOR_SD = (5.0, 0.2, 5.0, 0.2)


def _summary(err: np.ndarray) -> dict:
    q1, med, q3 = np.percentile(err, [25, 50, 75])
    return {"median": float(med), "q1": float(q1), "q3": float(q3), "mean": float(err.mean())}


# -- study 1: linear-Gaussian, against the Kalman filter --------------------------------------
def _linear(repeats: int, seed: int, T: int, n_particles: int, progress: bool) -> dict:
    from possibly.experiments.kalman_study import simulate

    model = constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    states, ys, outlier = simulate(repeats, seed, T)
    prior = MultivariateNormal(np.zeros(2), np.diag([1 / 10.0**2, 1 / 0.5**2]))

    errors: dict[str, np.ndarray] = {}
    discounts: dict[str, np.ndarray] = {}
    for robust, label in ((True, "discount"), (False, "std all")):
        # coverage=None: the particle filter discounts by the paper's γ = c^(1/d) too; no
        # robust start, which the particle filter does not have either (like for like)
        kf = KalmanFilter(model, robust=robust, coverage=None,
                          robust_start=False).filter(ys, prior=prior, engine="numpy")
        errors[f"kalman {label}"] = np.abs(kf.mean[..., 0] - states[..., 0]).mean(axis=-1)
        discounts[f"kalman {label}"] = kf.discount
        # the same model object as the Kalman filter
        pf = ParticleFilter.from_model(model, n_particles=n_particles, robust=robust)
        err = np.empty(repeats)
        disc = np.empty((repeats, T))
        for i in progress_bar(range(repeats), enabled=progress, desc=f"linear PF {label}"):
            res = pf.filter(ys[i], prior, seed=seed + 1000 + i)
            err[i] = np.abs(res.mode[:, 0] - states[i, :, 0]).mean()
            disc[i] = res.discount
        errors[f"particle {label}"] = err
        discounts[f"particle {label}"] = disc
    # the robust update assumes the first observation is an inlier (paper §4.1): report the
    # comparison with and without the repeats whose first observation is an outlier
    first_in = ~outlier[:, 0]

    def ratios(label: str, keep: np.ndarray) -> dict:
        pe, ke = errors[f"particle {label}"][keep], errors[f"kalman {label}"][keep]
        return {
            "repeats": int(keep.sum()),
            "mean_ratio": float(pe.mean() / ke.mean()),
            "median_ratio": float(np.median(pe) / np.median(ke)),
            "median_per_repeat_ratio": float(np.median(pe / ke)),
            "q90_per_repeat_ratio": float(np.percentile(pe / ke, 90)),
            "mean_abs_discount_difference": float(np.abs(discounts[f"particle {label}"][keep]
                                                         - discounts[f"kalman {label}"][keep])
                                                  .mean()),
        }

    ratio = {label: ratios(label, np.ones(repeats, bool)) for label in ("discount", "std all")}
    ratio_first_in = {label: ratios(label, first_in) for label in ("discount", "std all")}
    return {
        "config": {"T": T, "repeats": repeats, "n_particles": n_particles,
                   "prior_mean": [0.0, 0.0], "prior_sd": [10.0, 0.5],
                   "data": "possibly.experiments.kalman_study.simulate (paper §5.2)"},
        "summary": {k: _summary(v) for k, v in errors.items()},
        "errors": {k: v.tolist() for k, v in errors.items()},
        "particle_vs_kalman": ratio,
        "particle_vs_kalman_first_inlier": ratio_first_in,
        "first_outlier_repeats": np.flatnonzero(~first_in).tolist(),
        "outlier_fraction": float(outlier.mean()),
    }


# -- study 2: range-bearing tracking ----------------------------------------------------------
def _wrap(a: np.ndarray) -> np.ndarray:
    return (a + np.pi) % (2.0 * np.pi) - np.pi


def range_bearing_model(n_particles: int, *, robust: bool = True,
                        tau: float | None = None) -> ParticleFilter:
    """The particle filter of the range-bearing study (NaN measurements carry no information).

    Examples
    --------
    >>> from possibly.experiments.particle_study import range_bearing_model
    >>> range_bearing_model(100).n_particles
    100
    """
    F, Q, _, _ = constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0, ndim=2)

    def loglik(x, y):
        if np.isnan(y).any():
            return np.zeros(len(x))
        bearing = np.arctan2(x[:, 2], x[:, 0])
        rng_ = np.hypot(x[:, 0], x[:, 2])
        return -0.5 * ((_wrap(y[0] - bearing) / BEARING_SD) ** 2
                       + ((y[1] - rng_) / RANGE_SD) ** 2)

    def loglik_sup(y):
        # any bearing is reachable; a range below 0 is not (the best is range 0)
        if np.isnan(y).any():
            return 0.0
        return -0.5 * (min(float(y[1]), 0.0) / RANGE_SD) ** 2

    return ParticleFilter(lambda x: x @ F.T, GaussianNoise(Q), loglik, n_particles=n_particles,
                          robust=robust, tau=tau, loglik_sup=loglik_sup)


def simulate_range_bearing(repeats: int, seed: int, T: int = 60):
    """Simulate the range-bearing scenario.

    Returns
    -------
    states : ndarray, shape (repeats, T, 4)
        (x, vx, y, vy).
    observations : ndarray, shape (repeats, T, 2)
        (bearing, range).
    outlier_mask : ndarray of bool, shape (repeats, T)
    prior_means : ndarray, shape (repeats, 4)
        Prior mean of each repeat: the true initial state plus a draw from the prior.

    Examples
    --------
    >>> from possibly.experiments.particle_study import simulate_range_bearing
    >>> states, ys, out, m0 = simulate_range_bearing(2, seed=0, T=5)
    >>> states.shape, ys.shape, out.shape, m0.shape
    ((2, 5, 4), (2, 5, 2), (2, 5), (2, 4))
    """
    F, Q, _, _ = constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0, ndim=2)
    rng = np.random.default_rng(seed)
    g = np.array([0.5, 1.0])
    states = np.empty((repeats, T, 4))
    states[:, 0] = INITIAL_STATE
    accel = rng.normal(0.0, 0.05, (repeats, T - 1, 2))
    for t in range(1, T):
        noise = np.stack([accel[:, t - 1, 0, None] * g, accel[:, t - 1, 1, None] * g],
                         axis=1).reshape(repeats, 4)
        states[:, t] = states[:, t - 1] @ F.T + noise
    outlier = rng.random((repeats, T)) < OUTLIER_PROB
    scale = np.where(outlier, OUTLIER_SCALE, 1.0)
    bearing = np.arctan2(states[..., 2], states[..., 0])
    rng_ = np.hypot(states[..., 0], states[..., 2])
    ys = np.stack([_wrap(bearing + scale * BEARING_SD * rng.standard_normal((repeats, T))),
                   rng_ + scale * RANGE_SD * rng.standard_normal((repeats, T))], axis=-1)
    prior_means = states[:, 0] + np.asarray(PRIOR_SD) * rng.standard_normal((repeats, 4))
    return states, ys, outlier, prior_means


def _range_bearing(repeats: int, seed: int, T: int, n_particles: int, progress: bool) -> dict:
    states, ys, outlier, prior_means = simulate_range_bearing(repeats, seed, T)
    prior_prec = np.diag(1.0 / np.asarray(PRIOR_SD) ** 2)
    filters = {
        "std inliers": range_bearing_model(n_particles, robust=False),
        "std all": range_bearing_model(n_particles, robust=False),
        "discount": range_bearing_model(n_particles),
        "threshold": range_bearing_model(n_particles, tau=TAU),
    }
    errors = {k: np.empty(repeats) for k in METHODS}
    shown: dict[str, dict] = {}
    for i in progress_bar(range(repeats), enabled=progress, desc="range-bearing"):
        prior = MultivariateNormal(prior_means[i], prior_prec)
        for name in METHODS:
            data = np.where(outlier[i, :, None], np.nan, ys[i]) if name == "std inliers" \
                else ys[i]
            res = filters[name].filter(data, prior, seed=seed + 2000 + i)
            pos = res.mode[:, [0, 2]]
            errors[name][i] = np.linalg.norm(pos - states[i][:, [0, 2]], axis=-1).mean()
            if i == 0:
                shown[name] = {"position": pos.tolist(), "discount": res.discount.tolist()}
    return {
        "config": {"T": T, "repeats": repeats, "n_particles": n_particles,
                   "bearing_sd": BEARING_SD, "range_sd": RANGE_SD,
                   "outlier_scale": OUTLIER_SCALE, "outlier_prob": OUTLIER_PROB,
                   "initial_state": list(INITIAL_STATE), "prior_sd": list(PRIOR_SD),
                   "accel_sd": 0.05, "tau": TAU},
        "summary": {k: _summary(v) for k, v in errors.items()},
        "summary_first_inlier": ({k: _summary(v[~outlier[:, 0]]) for k, v in errors.items()}
                                 if (~outlier[:, 0]).any() else None),
        "first_outlier_repeats": np.flatnonzero(outlier[:, 0]).tolist(),
        "errors": {k: v.tolist() for k, v in errors.items()},
        "outlier_fraction": float(outlier.mean()),
        "realisation": {
            "truth": states[0][:, [0, 2]].tolist(),
            "observation": ys[0].tolist(),
            "outlier": outlier[0].tolist(),
            "estimate": shown,
        },
    }


def run(repeats: int = 100, seed: int = 0, quick: bool = False, progress: bool = False,
        n_particles: int = 500) -> dict:
    """Run both studies; returns a JSON-serialisable summary.

    Parameters
    ----------
    repeats : int
        Independent realisations per study (default 100: 4 to 7 minutes on 2 cores).
    seed : int
    quick : bool
        3 repeats, short series and 150 particles (a few seconds), for tests.
    progress : bool
        Progress bars over repeats.
    n_particles : int
        Particles per filter (cost O(N²) per step).

    Returns
    -------
    dict
        ``linear``: per-repeat errors of the particle and Kalman filters (robust and
        standard), summaries and their ratios; ``range_bearing``: errors per method,
        summaries, and the first realisation for the plot.
    """
    if quick:
        repeats, n_particles = min(repeats, 3), min(n_particles, 150)
    T_lin, T_rb = (40, 30) if quick else (250, 60)
    return {
        "config": {"repeats": int(repeats), "seed": int(seed), "quick": bool(quick),
                   "n_particles": int(n_particles)},
        "linear": _linear(repeats, seed, T_lin, n_particles, progress),
        "range_bearing": _range_bearing(repeats, seed, T_rb, n_particles, progress),
    }


def plot(result: dict, out_dir) -> list[str]:
    """Write the figures of :func:`run` to ``out_dir``; returns the PNG paths."""
    from possibly.plotting.particle_plots import (
        plot_error_boxes,
        plot_particle_vs_kalman,
        plot_tracking,
    )

    os.makedirs(out_dir, exist_ok=True)
    return [
        plot_particle_vs_kalman(result["linear"], os.path.join(out_dir,
                                                               "particles_vs_kalman.png")),
        plot_tracking(result["range_bearing"]["realisation"],
                      os.path.join(out_dir, "particles_range_bearing.png")),
        plot_error_boxes(result["range_bearing"]["errors"],
                         os.path.join(out_dir, "particles_range_bearing_errors.png")),
    ]


if __name__ == "__main__":  # pragma: no cover
    import json
    import sys

    out = run(repeats=int(sys.argv[1]) if len(sys.argv) > 1 else 100, progress=True)
    print(json.dumps({k: out[k]["summary"] for k in ("linear", "range_bearing")}, indent=1))
    print(json.dumps(out["linear"]["particle_vs_kalman"], indent=1))
