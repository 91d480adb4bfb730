"""Minimum-MMD location estimate against an independent computation of the MMD criterion:
kernel expectations by numerical integration (scipy.integrate.quad), the bandwidth by an
explicit loop over pairs, and the minimiser by grid search refined with a bounded search."""

import functools
import itertools

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from possibly.experiments.baselines.mmd import median_bandwidth, mmd_criterion, mmd_location


def kernel(x, z, h):
    return np.exp(-((x - z) ** 2) / h**2)


def bandwidth_by_pairs(y):
    return float(np.median([abs(a - b) for a, b in itertools.combinations(y, 2)]))


@functools.lru_cache
def model_term(sd, h):
    """E k(X, X') for X, X' ~ N(0, sd²) i.i.d. (a double integral; it does not depend on θ)."""
    pdf = stats.norm(0.0, sd).pdf
    lo, hi = -12 * sd, 12 * sd
    return integrate.quad(lambda x: pdf(x) * integrate.quad(
        lambda z: kernel(x, z, h) * pdf(z), lo, hi, epsabs=1e-13)[0], lo, hi,
        epsabs=1e-12)[0]


def mmd2_by_quadrature(theta, y, sd, h):
    """E k(X, X') - (2/n) Σ E k(X, y_i) + (1/n²) Σ k(y_i, y_j), X, X' ~ N(θ, sd²) i.i.d."""
    pdf = stats.norm(theta, sd).pdf
    lo, hi = theta - 12 * sd, theta + 12 * sd
    e_xx = model_term(sd, h)
    e_xy = np.mean([integrate.quad(lambda x, yi=yi: kernel(x, yi, h) * pdf(x), lo, hi,
                                   epsabs=1e-13, points=[yi] if lo < yi < hi else None)[0]
                    for yi in y])
    e_yy = np.mean(kernel(np.asarray(y)[:, None], np.asarray(y)[None, :], h))
    return e_xx - 2 * e_xy + e_yy


@pytest.fixture
def contaminated():
    rng = np.random.default_rng(7)
    y = rng.normal(2.0, 2.0, size=20)
    y[[3, 11, 15]] = [35.0, 60.0, 18.0]
    return y


def test_median_bandwidth_by_pairs(contaminated):
    assert float(median_bandwidth(contaminated)) == pytest.approx(
        bandwidth_by_pairs(contaminated), rel=1e-14)


def test_criterion_equals_quadrature(contaminated):
    h = bandwidth_by_pairs(contaminated)
    thetas = np.array([-3.0, 1.0, 2.5, 10.0])
    got = mmd_criterion(thetas, contaminated, sd=2.0)
    expected = [mmd2_by_quadrature(t, contaminated, 2.0, h) for t in thetas]
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-10)


def test_location_is_the_brute_force_minimiser(contaminated):
    sd = 2.0
    h = bandwidth_by_pairs(contaminated)

    def crit(t):
        return mmd2_by_quadrature(t, contaminated, sd, h)

    grid = np.linspace(-4.0, 8.0, 49)
    values = [crit(t) for t in grid]
    i = int(np.argmin(values))
    best = optimize.minimize_scalar(crit, bounds=(grid[i - 1], grid[i + 1]), method="bounded",
                                    options={"xatol": 1e-9})
    est = mmd_location(contaminated, sd=sd)
    assert bool(est.converged)
    assert float(est.location) == pytest.approx(best.x, abs=1e-5)
    # the estimate is robust: far from the mean, near the inliers' centre
    assert abs(float(est.location) - 2.0) < 1.5
    assert abs(np.mean(contaminated) - 2.0) > 1.5


def test_criterion_never_increases_along_the_iterations(contaminated):
    previous = np.inf
    for it in (1, 2, 3, 5, 10, 50):
        theta = mmd_location(contaminated, sd=2.0, max_iter=it).location
        value = float(mmd_criterion(theta, contaminated, sd=2.0)[..., 0])
        assert value <= previous + 1e-15
        previous = value


def test_batch_and_nan(rng):
    y = rng.normal(0.0, 1.0, size=(3, 4, 15))
    est = mmd_location(y, sd=1.0)
    assert est.location.shape == (3, 4) and est.converged.all()
    for i, j in [(0, 0), (2, 3)]:
        one = mmd_location(y[i, j], sd=1.0)
        assert float(one.location) == pytest.approx(est.location[i, j], abs=1e-9)
    holes = y[0, 0].copy()
    holes[[1, 5]] = np.nan
    a = mmd_location(holes, sd=1.0)
    b = mmd_location(holes[~np.isnan(holes)], sd=1.0)
    assert float(a.location) == pytest.approx(float(b.location), abs=1e-12)
    assert float(a.bandwidth) == pytest.approx(float(b.bandwidth), rel=1e-14)


def test_bad_input():
    with pytest.raises(ValueError, match="sd"):
        mmd_location([1.0, 2.0, 3.0], sd=0.0)
    with pytest.raises(ValueError, match="y"):
        mmd_location([1.0, np.inf, 3.0], sd=1.0)
    with pytest.raises(ValueError, match="y"):
        mmd_location([1.0], sd=1.0)
    with pytest.raises(ValueError, match="y"):
        mmd_location([2.0, 2.0, 2.0], sd=1.0)
    with pytest.raises(ValueError, match="bandwidth"):
        mmd_location([1.0, 2.0, 3.0], sd=1.0, bandwidth=-1.0)
