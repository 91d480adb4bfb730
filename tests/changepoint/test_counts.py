"""PoissonLevel: gamma-Poisson segments of counts, their formulas against brute force and
their evidence against the models of densities."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats
from scipy.special import gammaln

import possibly as ps
from possibly.changepoint import PoissonLevel, model_family
from possibly.changepoint.models import counts
from possibly.changepoint.models.counts import sup_log_joint, tempered_log_marginal

CASES = [(1.0, 0.5, 0.0), (1.0, 0.5, 3.0), (4.5, 2.0, 0.0), (4.5, 2.0, 7.0), (30.0, 6.0, 2.0)]


@pytest.mark.parametrize("alpha, beta, k", CASES)
def test_sup_log_joint_by_numerical_sup(alpha, beta, k):
    def minus(log_lam):
        lam = math.exp(log_lam)
        return -((alpha - 1 + k) * log_lam - beta * lam - lam - gammaln(k + 1))
    if alpha - 1 + k == 0:  # the sup is at λ → 0: e^0 / k!
        expected = -gammaln(k + 1)
    else:
        expected = -optimize.minimize_scalar(minus, bounds=(-30, 10), method="bounded",
                                             options={"xatol": 1e-12}).fun
    assert sup_log_joint(alpha, beta, k) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("alpha, beta, k", CASES)
@pytest.mark.parametrize("gamma", [1.0, 0.3])
def test_tempered_marginal_by_quadrature(alpha, beta, k, gamma):
    def integrand(lam):
        return math.exp(gamma * stats.poisson.logpmf(k, lam)
                        + stats.gamma.logpdf(lam, alpha, scale=1.0 / beta))
    total, _ = integrate.quad(integrand, 0.0, np.inf, limit=200, epsabs=1e-14)
    assert tempered_log_marginal(alpha, beta, k, gamma) == pytest.approx(math.log(total),
                                                                         abs=1e-7)


def _runs(model, counts):
    runs = model.new_runs(1)
    for k in counts:
        _, runs = model.update(model.prepare(runs, k), 1.0)
    return runs


def test_consistency_is_normalised_over_every_count():
    model = PoissonLevel(prior_mean=3.0, reference_scale=1.0)
    runs = _runs(model, [2, 4, 3, 5, 1, 3])
    a, b = float(runs["alpha"][0]), float(runs["beta"][0])
    every = sup_log_joint(a, b, np.arange(2000.0))  # brute force over the counts
    for k in (0, 2, 3, 9, 40):
        lc = float(model.log_consistency(model.prepare(runs, k))[0])
        assert lc == pytest.approx(sup_log_joint(a, b, k) - every.max(), abs=1e-12)
    assert max(float(model.log_consistency(model.prepare(runs, k))[0])
               for k in range(10)) == 0.0


def test_evidence_is_a_probability_in_the_units_of_the_density_models():
    # exp(increment) = s · P(k) for γ = 1: the sum over the counts is s
    s = 2.7
    model = PoissonLevel(prior_mean=3.0, reference_scale=s, outlier_cost=1e9)
    runs = _runs(model, [2, 4, 3])
    total = sum(math.exp(float(model.update(model.prepare(runs, k), 1.0)[0][0]))
                for k in range(400))
    assert total == pytest.approx(s, rel=1e-9)


def test_outlier_floor_leaves_the_run_unchanged():
    model = PoissonLevel(prior_mean=3.0, reference_scale=1.0)
    runs = _runs(model, [3] * 40)
    incr, new = model.update(model.prepare(runs, 500), 1.0)
    assert new["alpha"][0] == runs["alpha"][0] and new["beta"][0] == runs["beta"][0]
    best = max(float(model.update(model.prepare(runs, k), 1.0)[0][0]) for k in range(20))
    assert float(incr[0]) == pytest.approx(best - model.outlier_cost, abs=1e-9)


def test_hindsight_outliers_by_leaving_each_count_out():
    model = PoissonLevel(prior_mean=3.0, reference_scale=1.0)
    y = np.array([3.0, 2.0, 4.0, 40.0, 3.0, np.nan, 1.0, 3.0, 9.0, 2.0])
    discount = np.array([1.0, 1.0, 0.9, 0.01, 1.0, np.nan, 0.8, 1.0, 0.5, 1.0])
    expected = np.zeros(y.size, dtype=bool)
    for i in range(y.size):
        if np.isnan(y[i]):
            continue
        runs = model.new_runs(1)  # the others, each with its discount, then observation i
        for j in range(y.size):
            if j != i and not np.isnan(y[j]):
                _, runs = PoissonLevel(prior_mean=3.0, reference_scale=1.0,
                                       outlier_cost=1e9).update(model.prepare(runs, y[j]),
                                                                discount[j])
        a, b = float(runs["alpha"][0]), float(runs["beta"][0])
        lc = sup_log_joint(a, b, y[i]) - sup_log_joint(a, b, np.arange(5000.0)).max()
        expected[i] = lc < -12.5
    np.testing.assert_array_equal(model.outlying(y, discount), expected)
    assert expected.tolist() == [False, False, False, True] + [False] * 6


def test_the_evidence_picks_the_count_model_on_counts():
    rng = np.random.default_rng(5)
    y = rng.poisson(np.r_[np.full(200, 1.5), np.full(200, 5.0)]).astype(float)
    res = ps.ChangepointDetector(model=model_family() + [PoissonLevel()]).fit(y)
    assert res.changepoints.tolist() == [200]
    assert res.segment_model_names == ["Poisson level", "Poisson level"]
    assert res.mean[-1] == pytest.approx(5.0, rel=0.15)
    z = y.copy()
    z[[50, 300]] = [30.0, 60.0]  # two spikes: outliers, not changes
    res = ps.ChangepointDetector(model=model_family() + [PoissonLevel()]).fit(z)
    assert res.changepoints.tolist() == [200] and res.outliers.tolist() == [50, 300]
    # streaming from a warm-up gives the fit's results
    warm = y[:100]
    models = [PoissonLevel(prior_mean=float(np.median(warm)),
                           reference_scale=ps.changepoint.automatic_prior(warm).scale)]
    ref = ps.ChangepointDetector(model=models).fit(y)
    det = ps.ChangepointDetector(model=models)
    for v in y:
        det.update(v)
    np.testing.assert_array_equal(det.result().changepoints, ref.changepoints)
    np.testing.assert_allclose(det.result().discount, ref.discount, rtol=1e-12)


def test_bad_input_is_named():
    for bad in ([1.0, 2.5, 3.0], [1.0, -1.0, 2.0]):
        with pytest.raises(ValueError, match="y must be non-negative integer counts"):
            ps.ChangepointDetector(model=[PoissonLevel()]).fit(bad)
    with pytest.raises(ValueError, match="prior_mean"):
        PoissonLevel(prior_mean=-1.0)
    with pytest.raises(ValueError, match="reference_scale"):
        PoissonLevel(reference_scale=0.0)
    with pytest.raises(ValueError, match="evidence"):
        PoissonLevel(evidence="profile")
    res = ps.ChangepointDetector(model=[PoissonLevel()]).fit([1.0, np.nan, 2.0, 0.0, 1.0])
    assert np.isnan(res.discount[1]) and np.isfinite(res.discount[[0, 2, 3, 4]]).all()


def _brute_force_normalisations(a: float, b: float, gamma: float, size: int
                                ) -> tuple[float, float]:
    """The sups over the counts 0..size of the consistency's and the evidence's functions."""
    counts = np.arange(size + 1.0)
    return (float(sup_log_joint(a, b, counts).max()),
            float(tempered_log_marginal(a, b, counts, gamma).max()))


@pytest.mark.parametrize("bisection", [False, True])
@pytest.mark.parametrize("gamma", [1.0, 0.5, 0.05])
def test_normalisations_match_every_count_on_small_counts(gamma, bisection, monkeypatch):
    if bisection:  # the search used beyond GRID_LIMIT, here on every count
        monkeypatch.setattr(counts, "GRID_LIMIT", -1.0)
    # many runs at once, modes up to ~60: the sups over the counts 0..4000, brute force
    rng = np.random.default_rng(7)
    alpha = 1.0 + rng.exponential(40.0, 60)
    alpha[:3] = [1.0, 1.0001, 1.5]
    beta = rng.uniform(0.05, 8.0, 60)
    model = PoissonLevel(prior_mean=3.0, reference_scale=1.0, outlier_cost=1e9)
    runs = {"alpha": alpha, "beta": beta, "seen": np.ones(60, dtype=bool)}
    for k in (0.0, 3.0, 250.0):
        prepared = model.prepare(runs, k)
        lc = model.log_consistency(prepared)
        ev, _ = model.update(prepared, gamma)  # outlier_cost 1e9: the evidence itself
        for j in range(60):
            sup, _ = _brute_force_normalisations(alpha[j], beta[j], gamma, 4000)
            assert lc[j] == pytest.approx(min(sup_log_joint(alpha[j], beta[j], k) - sup, 0.0),
                                          abs=1e-11)
        np.testing.assert_allclose(ev, tempered_log_marginal(alpha, beta, k, gamma),
                                   rtol=1e-14)
    # the outlier floor is the largest evidence minus the cost, brute force
    strict = PoissonLevel(prior_mean=3.0, reference_scale=1.0, outlier_cost=2.0)
    ev, new = strict.update(strict.prepare(runs, 400.0), gamma)
    floored = 0
    for j in range(60):
        _, best = _brute_force_normalisations(alpha[j], beta[j], gamma, 4000)
        expected = tempered_log_marginal(alpha[j], beta[j], 400.0, gamma)
        if expected < best - 2.0:
            assert ev[j] == pytest.approx(best - 2.0, abs=1e-11)
            assert new["alpha"][j] == alpha[j]
            floored += 1
    assert floored >= 10


def test_normalisations_on_large_counts_by_brute_force():
    # runs at rates of a million: the sups over a window of every count around the mode
    model = PoissonLevel(prior_mean=3.0, reference_scale=1.0, outlier_cost=1e9)
    beta = np.array([0.5, 3.0, 200.0])
    alpha = 1.0 + beta * np.array([1e6, 2.5e6, 7e5])
    runs = {"alpha": alpha, "beta": beta, "seen": np.ones(3, dtype=bool)}
    prepared = model.prepare(runs, 1e6)
    lc = model.log_consistency(prepared)
    ev, _ = model.update(prepared, 1.0)
    for j in range(3):
        mode = (alpha[j] - 1.0) / beta[j]
        window = np.arange(mode - 3e4, mode + 3e4)
        sup = float(sup_log_joint(alpha[j], beta[j], window).max())
        assert lc[j] == pytest.approx(min(sup_log_joint(alpha[j], beta[j], 1e6) - sup, 0.0),
                                      abs=1e-6)
        assert ev[j] == pytest.approx(tempered_log_marginal(alpha[j], beta[j], 1e6, 1.0),
                                      rel=1e-14)


def test_huge_counts_stay_finite_in_a_stream():
    # a Poisson(3) stream, then a count of 1e12 and more ordinary counts: finite discounts and
    # the huge count an outlier of the count model (a grid up to the count would not fit)
    rng = np.random.default_rng(1)
    warm = rng.poisson(3.0, 300).astype(float)
    model = PoissonLevel().resolve(warm)
    det = ps.ChangepointDetector(
        model=model_family(prior=ps.changepoint.automatic_prior(warm)) + [model])
    for v in warm:
        det.update(v)
    for v in (1e12, 3.0, 2.0, 1e10, 4.0):
        info = det.update(v)
        assert np.isfinite(info.discount) and 0.0 <= info.discount <= 1.0
    runs = model.new_runs(2)
    incr, new = model.update(model.prepare(runs, 1e12), 1.0)
    assert np.all(np.isfinite(incr))
    assert np.all(np.isfinite(model.log_consistency(model.prepare(new, 1e12))))
