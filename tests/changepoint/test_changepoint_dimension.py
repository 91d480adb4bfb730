"""The vector-series detector in any dimension: no change point in i.i.d. N(0, I) data, a
shift found where it is, and the evidence floor and the hindsight outlier threshold that grow
with the dimension (``outlier_cost_in_dimension``).

References: ``scipy.stats.chi2`` for the quantiles, and, beyond the range of double precision,
the upper tail in log space, ``log Q(a, x) = -x + (a - 1) log x - log Γ(a) + log ∫₀^∞
(1 + u/x)^(a-1) e^(-u) du`` (the integral by quadrature), solved by root finding.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, special, stats

import possibly as ps
from possibly.changepoint import MultivariateNormalSegments
from possibly.changepoint.models.vector import outlier_cost_in_dimension


def _log_upper_tail(a: float, x: float) -> float:
    integral, _ = integrate.quad(lambda u: (1.0 + u / x) ** (a - 1.0) * math.exp(-u), 0.0,
                                 math.inf)
    return -x + (a - 1.0) * math.log(x) - special.gammaln(a) + math.log(integral)


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8, 13, 20, 50])
@pytest.mark.parametrize("cost", [0.5, 6.0, 12.5, 100.0, 600.0])
def test_floor_has_the_scalar_tail_in_every_dimension(d, cost):
    tail = stats.chi2.sf(2.0 * cost, 1)
    assert outlier_cost_in_dimension(cost, d) == pytest.approx(
        0.5 * stats.chi2.isf(tail, d), rel=1e-9)


@pytest.mark.parametrize("d", [2, 8, 20])
@pytest.mark.parametrize("cost", [720.0, 5e3, 1e6])
def test_floor_beyond_double_precision_tails(d, cost):
    target = _log_upper_tail(0.5, cost)
    ref = optimize.brentq(lambda f: _log_upper_tail(0.5 * d, f) - target, cost, 2 * cost + 1e3,
                          xtol=1e-12, rtol=1e-14)
    # the leading term of the asymptotic tails: within (d/2 - 1) / f of the exact quantile
    assert outlier_cost_in_dimension(cost, d) == pytest.approx(ref, abs=0.05)
    assert outlier_cost_in_dimension(1e300, d) == pytest.approx(1e300, rel=1e-12)


def test_floor_is_the_scalar_one_in_one_dimension_and_grows_with_d():
    cost = -math.log(2.5e-3)
    assert outlier_cost_in_dimension(cost, 1) == pytest.approx(cost, rel=1e-12)
    floors = [outlier_cost_in_dimension(cost, d) for d in range(1, 30)]
    assert np.all(np.diff(floors) > 0)
    model = MultivariateNormalSegments(prior=(np.zeros(8), np.ones(8)))
    assert model._floor == pytest.approx(0.5 * stats.chi2.isf(stats.chi2.sf(2 * cost, 1), 8))


def _iid(d: int, seed: int, n: int = 1500) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


@pytest.mark.parametrize("d", [2, 6, 8, 12, 20])
def test_iid_vector_series_have_no_change_point(d):
    for seed in range(4):
        res = ps.ChangepointDetector().fit(_iid(d, seed))
        assert res.changepoints.tolist() == [], (d, seed)
        assert res.outliers.size <= 2, (d, seed)  # a 5 σ-rare value, now and then


def test_a_smaller_hazard_keeps_iid_data_whole():
    res = ps.ChangepointDetector(hazard=1e-5).fit(_iid(8, 11))
    assert res.changepoints.tolist() == []


@pytest.mark.parametrize("d", [2, 8, 20])
def test_a_shift_of_every_component_is_found_where_it_is(d):
    y = _iid(d, 100)
    y[300:] += 1.5
    res = ps.ChangepointDetector().fit(y)
    assert res.changepoints.size == 1
    assert abs(int(res.changepoints[0]) - 300) <= 5


def test_iid_high_dimensional_inliers_are_not_outliers():
    # the hindsight threshold of 5 σ in one dimension flagged a fifth of the rows at d = 20
    res = ps.ChangepointDetector().fit(_iid(20, 3, n=600))
    assert res.outliers.size <= 1


def test_prior_noise_is_the_within_segment_noise_of_the_first_differences():
    from possibly.changepoint.models.vector import automatic_vector_noise

    rng = np.random.default_rng(5)
    y = rng.normal(size=(3000, 4)) * [1.0, 2.0, 0.5, 3.0]
    y[1500:] += [8.0, 16.0, 4.0, 24.0]  # a shift of 8 sd in every component
    # by hand: 1.4826 MAD of the differences / √2 over 1.4826 MAD of the values, per component
    diff = np.diff(y, axis=0)
    noise = 1.4826 * np.median(np.abs(diff - np.median(diff, axis=0)), axis=0) / np.sqrt(2)
    spread = 1.4826 * np.median(np.abs(y - np.median(y, axis=0)), axis=0)
    assert automatic_vector_noise(y) == pytest.approx(float(np.median(noise / spread)))
    assert automatic_vector_noise(y) < 0.3  # the shift widens the spread, not the noise
    # scale-free, per component
    assert automatic_vector_noise(-3.0 * y + 7.0) == pytest.approx(automatic_vector_noise(y))
    # i.i.d. data: the noise is the spread (at most 1)
    assert automatic_vector_noise(rng.normal(size=(3000, 4))) == pytest.approx(1.0, abs=0.05)
    res = ps.ChangepointDetector().fit(y)
    assert res.params.models[0].noise_scale == automatic_vector_noise(y)
    assert res.changepoints.tolist() == [1500]


def test_a_prior_given_for_streaming_keeps_the_fixed_noise():
    model = MultivariateNormalSegments(prior=(np.zeros(3), np.ones(3)))
    assert model.noise_scale is None
    np.testing.assert_allclose(model.new_runs(1)["psi"][0], 4 * 0.25 * np.eye(3))
    given = MultivariateNormalSegments(noise_scale=0.8)
    y = _iid(3, 0, n=200)
    assert ps.ChangepointDetector(model=given).fit(y).params.models[0].noise_scale == 0.8
