"""The relative discount of the Kalman filters (``coverage``, docs/math.md §7), against
independent computations: scipy's χ² quantiles, a hand-written filter, and the probability that
an inlier is taken whole."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import possibly as ps
from possibly.filters import kalman
from possibly.filters.kalman_state import KalmanState
from possibly.filters.nonlinear import NonlinearModel, UnscentedKalmanFilter
from possibly.inference import inlier_log_consistency, relative_log_consistency


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 80), p=st.floats(1e-4, 1 - 1e-9))
def test_level_is_the_chi2_quantile(m, p):
    # the series + bisection up to m = 64, scipy.special beyond
    np.testing.assert_allclose(inlier_log_consistency(m, p), -0.5 * stats.chi2.ppf(p, m),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan"), float("inf")])
def test_bad_coverage_is_refused(bad):
    with pytest.raises(ValueError, match="coverage"):
        inlier_log_consistency(2, bad)
    with pytest.raises(ValueError, match="coverage"):
        ps.KalmanFilter(*ps.filters.constant_velocity(), coverage=bad)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_obs_dim_is_refused(bad):
    with pytest.raises(ValueError, match="obs_dim"):
        inlier_log_consistency(bad, 0.9)


def test_relative_log_consistency():
    got = relative_log_consistency(np.array([0.0, -1.0, -3.0, -np.inf, np.nan]), -2.0)
    np.testing.assert_array_equal(got[:4], [0.0, 0.0, -1.0, -np.inf])
    assert np.isnan(got[4])


def _reference_filter(ys, F, Q, H, R, mean, cov, dim, coverage):
    """The relative-discount filter written out from docs/math.md §7 (complete observations,
    proper prior), with the χ² quantile from scipy.stats."""
    log_c0 = -0.5 * stats.chi2.ppf(coverage, H.shape[0])
    x, P = mean.copy(), cov.copy()
    means, discounts = [], []
    for t, y in enumerate(ys):
        if t:
            x, P = F @ x, F @ P @ F.T + Q
        v = y - H @ x
        S = H @ P @ H.T + R
        log_c = -0.5 * v @ np.linalg.solve(S, v)
        rho = min(1.0, np.exp((log_c - log_c0) / dim))
        K = (P @ H.T @ np.linalg.inv(H @ P @ H.T + R / rho) if rho > 0
             else np.zeros((len(x), len(y))))
        x = x + K @ v
        P = P - K @ H @ P
        means.append(x)
        discounts.append(rho)
    return np.array(means), np.array(discounts)


@pytest.mark.parametrize("coverage", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_filter_equals_hand_written_reference(coverage, engine):
    rng = np.random.default_rng(3)
    F, Q, H, R = ps.filters.constant_velocity(dt=0.5, accel_sd=0.3, obs_sd=1.0, ndim=2)
    T = 60
    ys = np.cumsum(rng.normal(size=(T, 2)), axis=0) + rng.normal(size=(T, 2))
    ys[[10, 30]] += 15.0  # two outliers
    mean0, cov0 = np.zeros(4), 4.0 * np.eye(4)
    prior = ps.MultivariateNormal(mean0, np.linalg.inv(cov0))
    res = ps.KalmanFilter(F, Q, H, R, coverage=coverage).filter(ys, prior=prior, engine=engine)
    ref_mean, ref_disc = _reference_filter(ys, F, Q, H, R, mean0, cov0, 4.0, coverage)
    np.testing.assert_allclose(res.mean, ref_mean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(res.discount, ref_disc, rtol=1e-9, atol=1e-300)
    assert res.discount[10] < 0.1 and res.discount[30] < 0.1
    # the reported γ is still the paper's c^(1/d)
    np.testing.assert_allclose(res.gamma, np.exp(res.log_consistency / 4.0), rtol=1e-12)


@pytest.mark.parametrize("coverage", [0.6, 0.9])
def test_fraction_of_inliers_taken_whole_is_the_coverage(coverage):
    """y drawn from the predictive: P(ρ = 1) = coverage, also with a component missing (the
    level then uses the number observed)."""
    rng = np.random.default_rng(7)
    n, m, B = 3, 3, 40000
    H = rng.normal(size=(m, n))
    R = np.diag([0.5, 1.0, 2.0])
    P = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 1.5]])
    state = KalmanState(np.zeros((B, n)), np.broadcast_to(P, (B, n, n)).copy())
    S = H @ P @ H.T + R
    y = rng.multivariate_normal(np.zeros(m), S, size=B)
    y[: B // 2, 1] = np.nan  # half the batch observes two components of three
    _, info = kalman.update(state, y, H, R, coverage=coverage)
    se = np.sqrt(coverage * (1 - coverage) / (B // 2))
    for half in (slice(0, B // 2), slice(B // 2, B)):
        whole = np.mean(info.discount[half] == 1.0)
        assert abs(whole - coverage) < 5 * se, (whole, coverage)


def test_coverage_none_is_the_paper_discount_and_threshold_applies_to_rho():
    F, Q, H, R = ps.filters.constant_velocity()
    rng = np.random.default_rng(2)
    ys = np.cumsum(rng.normal(size=50)) + rng.normal(size=50)
    ys[25] += 12.0
    paper = ps.KalmanFilter(F, Q, H, R, coverage=None).filter(ys)
    np.testing.assert_allclose(paper.discount, paper.gamma, rtol=1e-15)
    both = ps.KalmanFilter(F, Q, H, R, tau=0.2, coverage=0.9).filter(ys)
    rel = np.exp(np.minimum(both.log_consistency + 0.5 * stats.chi2.ppf(0.9, 1), 0.0) / 2.0)
    np.testing.assert_allclose(both.discount, np.where(rel > 0.2, 1.0, rel), rtol=1e-12)
    # the standard filter ignores coverage
    assert ps.KalmanFilter(F, Q, H, R, robust=False).coverage is None
    assert "coverage=0.9" in repr(ps.KalmanFilter(F, Q, H, R))


def test_unscented_filter_uses_the_relative_discount():
    model = NonlinearModel(f=lambda x: x, h=lambda x: x ** 3, Q=[[1e-4]], R=[[0.01]])
    prior = ps.MultivariateNormal([1.0], [[100.0]])
    ys = np.array([1.3, 1.35, 30.0, 1.28])
    paper = UnscentedKalmanFilter(model, prior=prior, coverage=None).fit(ys)
    rel = UnscentedKalmanFilter(model, prior=prior, coverage=0.8).fit(ys)
    # first step: same predictive, so the relative discount follows from the paper's γ
    log_c0 = -0.5 * stats.chi2.ppf(0.8, 1)
    want = min(1.0, float(np.exp(paper.log_consistency[0] - log_c0)))
    np.testing.assert_allclose(rel.discount[0], want, rtol=1e-12)
    assert rel.discount[2] < 1e-6


def test_cli_coverage(tmp_path, capsys):
    from possibly.cli import main

    path = tmp_path / "track.csv"
    path.write_text("y\n0.1\n0.3\n0.2\n9\n0.5\n0.6\n")
    assert main(["kalman", str(path), "--coverage", "none"]) == 0
    paper = capsys.readouterr().out
    assert main(["kalman", str(path), "--coverage", "0.9"]) == 0
    assert capsys.readouterr().out != paper
    assert main(["kalman", str(path), "--coverage", "1"]) == 2
    assert "--coverage" in capsys.readouterr().err
