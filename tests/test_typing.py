"""Users type-check their own code against the public API: a user script, written the way
README.md and docs/getting-started/*.md use the library, passes mypy.

The constructors take what they accept at run time (floats, lists, arrays: ``ArrayLike``),
while the attributes keep their types (``Normal(0.0, 1.0).mean`` is an ``ndarray``).
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mypy", reason="mypy (the dev extra) type-checks the user script")

USER_SCRIPT = textwrap.dedent('''
    from typing import Any

    import numpy as np
    import pandas as pd

    import possibly as ps
    from possibly.estimators.covariance import CovarianceInfo, CovarianceState
    from possibly.sequential import Info, SequentialEstimator

    # families from plain numbers, lists and arrays
    prior = ps.Normal(0.0, 1.0)
    flat = ps.Normal(0.0, 0.0)
    beta = ps.Beta(3, 7)
    gamma = ps.Gamma(2.0, 1.0)
    inv_gamma = ps.InverseGamma(2.0, 1.0)
    ng = ps.NormalGamma(0.0, 1.0, 2.0, 1.0)
    mvn = ps.MultivariateNormal([0.0, 0.0], [[1.0, 0.0], [0.0, 1.0]])
    iw = ps.InverseWishart(np.eye(2), 5.0)
    niw = ps.NormalInverseWishart([0.0, 0.0], 1.0, np.eye(2), 5.0)
    pareto = ps.Pareto(2.0, 1.0)
    batch = ps.Normal(np.zeros(3), [1.0, 2.0, 3.0])

    # the attributes stay arrays for the type checker
    mean: np.ndarray = prior.mean
    precision: np.ndarray = batch.precision
    alpha: np.ndarray = beta.alpha
    psi: np.ndarray = niw.psi
    print(mean.shape, precision.sum(), alpha.item(), psi.shape, flat, gamma, inv_gamma, ng,
          mvn, iw, pareto)

    # the algebra
    res = ps.robust_update(prior, ps.likelihood.normal(0.5, sd=1.0))
    print(float(res.consistency), res.posterior.mode, res.discount)
    res = ps.robust_update(ps.Beta(3, 7), ps.likelihood.binomial(90, 100), tau=0.1)
    print(res.consistency, res.discount, res.posterior.mode)
    post = ps.combine(prior, ps.Normal(2.0, 4.0))
    print(post.mode, ps.consistency(prior, ps.likelihood.normal(3.0, sd=1.0)))
    g = ps.discount(np.log(0.5), 2.0, tau=0.1)
    gs = ps.discount([-1.0, -2.0], 1)
    print(g, gs)

    rng = np.random.default_rng(0)
    y = rng.normal(3.0, 1.0, 200)
    lik = ps.likelihood.normal(y, sd=1.0)
    robust = ps.update_sequence(flat, lik)
    standard = ps.update_sequence(flat, lik, robust=False)
    print(robust.posterior.mode, standard.posterior.mode, np.flatnonzero(robust.discount < 1e-3))
    print(ps.likelihood.poisson([3, 4, 5]), ps.likelihood.exponential(2.0),
          ps.likelihood.normal_unknown([1.0, 2.0]), ps.likelihood.uniform([1.0, 2.5]),
          ps.likelihood.linear_gaussian([1.0], [[1.0, 0.0]], [[1.0]]))

    theta = np.linspace(-4.0, 4.0, 801)
    grid = ps.GridPossibility(theta, ps.Normal(0.0, 1.0).log_possibility(theta))
    grid2 = ps.GridPossibility([0.0, 1.0, 2.0], [-1.0, 0.0, -1.0])
    print(ps.combine(grid, ps.likelihood.normal(2.0, sd=1.0)).mode, grid2.shape)
    cloud = ps.ParticlePossibility(rng.uniform(0.0, 1.0, 500), [0.0] * 500)
    print(ps.combine(cloud, ps.likelihood.binomial(7, 10)).mode)
    log_values: np.ndarray = grid.log_values
    print(log_values.max(), cloud.particles.shape)

    # change points: a list, a numpy array, a pandas Series
    values, true_changes, _ = ps.datasets.piecewise_constant(500, n_changes=3, seed=7)
    series, truth = ps.datasets.level_shifts(300, seed=1)
    print(truth.changepoints, series.mean())
    times = pd.date_range("2024-05-01", periods=500, freq="10min")
    levels = pd.Series(values, index=times)
    fitted = ps.ChangepointDetector().fit(levels)
    print(levels.index[fitted.changepoints], levels.index[fitted.outliers])
    frame = fitted.to_frame()
    print(frame.head())
    on_list = ps.ChangepointDetector(sigma=1.0, hazard=1e-3).fit([0.0, 0.1, 5.0, 5.1, 4.9])
    on_array = ps.ChangepointDetector(model="normal").fit(values)
    print(on_list.changepoints.tolist(), on_array.sigma, on_array.segment_models)
    again = ps.ChangepointDetector(model=fitted.params.models).fit(values)  # the fitted priors
    det = ps.ChangepointDetector(sigma=1.0)
    for x in values[:50]:
        info = det.update(x)
        if info.change_detected:
            print(info.map_run_length, info.discount)
    print(again.changepoints, det.changepoints.tolist())

    # filtering
    kf = ps.KalmanFilter(*ps.filters.constant_velocity())
    track = np.cumsum(rng.normal(0.5, 1.0, 100))
    filtered = kf.fit(track)
    print(filtered.discount, filtered.to_frame())
    print(filtered.mean[:, 0])  # always kept: an ndarray for the type checker, no narrowing
    F, Q, H, R = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    smoothed = ps.KalmanFilter(F, Q, H, R, robust=True, tau=0.1).smooth(track)
    print(np.sqrt(smoothed.covariance[:, 0, 0]))
    model = ps.LinearGaussianModel(F=[[1.0]], Q=[[0.1]], H=[[1.0]], R=[[1.0]])
    print(ps.KalmanFilter(model).filter([1.0, 2.0, 3.0]).mean)

    # location and scale
    loc = ps.RobustNormalEstimator(beta0=1.0, omega=0.99, tau=0.1).fit(y)
    print(f"location {loc.mean[-1]:.2f}, scale {loc.precision[-1] ** -0.5:.2f}")
    print(ps.RobustNormalEstimator(robust=False).fit(list(y)).discount)
    print(ps.SoftUniformEstimator(decay=10.0).fit(y[:20]).mode)
    print(ps.RobustCovarianceEstimator(dim=2.0, tau=0.1).fit([rng.normal(size=(10, 2))]))

    # the typed protocol: a function over any estimator, states and infos typed per class
    def stream(est: SequentialEstimator[Any, Info, Any], values: np.ndarray) -> float:
        return sum(float(est.update(v).discount) for v in values)

    print(stream(ps.RobustNormalEstimator(beta0=1.0), y[:5]), stream(ps.SoftUniformEstimator(
        decay=10.0), np.abs(y[:5])))
    cov_est = ps.RobustCovarianceEstimator(d=2)
    cov_info: CovarianceInfo = cov_est.update(rng.normal(size=(10, 2)))
    cov_state: CovarianceState | None = cov_est.state
    print(cov_info.gamma, None if cov_state is None else cov_state.posterior.psi)
''')


def test_user_script_type_checks(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(USER_SCRIPT)
    # the project's configuration (mypy_path = src), run from the root as `make test` does
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--no-error-summary", str(script)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
