"""SeasonalTrend: the per-observation formulas against brute force, the two engines, and the
detector on cyclic series.

References, independent of the model's code:

* the consistency and the profile evidence: numerical suprema (scipy.optimize) of
  ``log f(θ, λ) + γ log L(θ, λ | z)`` over ``(θ, log λ)``, with the normal-gamma possibility
  ``f = exp(-λ (θ - m)ᵀ P⁻¹ (θ - m) / 2) (bλ/a)^a exp(a - bλ)`` and ``L = √λ exp(-λ (z -
  hᵀθ)² / 2)``;
* the update: the new run's function equals ``f L^γ`` divided by its sup, at random points;
* the integrated evidence: ``∫ p(z | θ, λ)^γ π(θ, λ)`` by quadrature over λ (scipy.integrate),
  the θ integral by the normal convolution (scipy.stats.norm);
* the rotation: the cycle's value ``A cos(ω t + φ)`` written by hand, and ``F P Fᵀ`` with
  ``F`` built from scipy.linalg.block_diag.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, linalg, optimize, stats

import possibly as ps
from possibly.changepoint import SeasonalTrend, SegmentPrior, model_family
from possibly.changepoint.detector import numba_available
from possibly.changepoint.models.seasonal import harmonic_numbers
from possibly.changepoint.models.trend import model_family as trend_family

PRIOR = SegmentPrior(0.0, 1.0, 200.0)


def random_run(model: SeasonalTrend, seed: int) -> dict[str, np.ndarray]:
    """One run with a random mean, a random positive definite P and random a, b."""
    rng = np.random.default_rng(seed)
    d = model.state_size
    root = rng.normal(size=(d, d))
    return {"m": rng.normal(size=(1, d)), "cov": (root @ root.T / d + 0.2 * np.eye(d))[None],
            "a": np.array([rng.uniform(0.8, 4.0)]), "b": np.array([rng.uniform(0.3, 3.0)]),
            "seen": np.array([True])}


def observation_vector(model: SeasonalTrend) -> np.ndarray:
    h = np.zeros(model.state_size)
    h[0] = 1.0
    h[model.degree + 1::2] = 1.0
    return h


def log_f(run, theta, lam):
    m, cov, a, b = run["m"][0], run["cov"][0], run["a"][0], run["b"][0]
    dev = theta - m
    return (-0.5 * lam * dev @ np.linalg.solve(cov, dev) + a * math.log(b * lam / a) + a
            - b * lam)


def log_lik(theta, lam, z, h):
    return 0.5 * math.log(lam) - 0.5 * lam * (z - h @ theta) ** 2


def numerical_sup(fn, d: int, start_theta: np.ndarray, start_lam: float) -> float:
    """sup over (θ, λ) of ``fn(θ, λ)``, from several starts (the function is unimodal)."""
    best = -math.inf
    for scale in (1.0, 0.3, 3.0):
        x0 = np.r_[start_theta, math.log(start_lam * scale)]
        res = optimize.minimize(lambda x: -fn(x[:d], math.exp(x[d])), x0, method="BFGS",
                                options={"gtol": 1e-10, "maxiter": 10_000})
        best = max(best, -res.fun)
    return best


MODELS = [SeasonalTrend(0, period=7.0, harmonics=2, prior=PRIOR),
          SeasonalTrend(1, period=12.0, harmonics=1, prior=PRIOR),
          SeasonalTrend(0, period=(5.0, 24.0), harmonics=(1, 1), prior=PRIOR)]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
@pytest.mark.parametrize("z", [0.3, -2.5, 6.0])
def test_consistency_is_the_numerical_sup(model, z):
    run = random_run(model, 1)
    h, d = observation_vector(model), model.state_size
    top = numerical_sup(lambda t, lam: log_f(run, t, lam) + log_lik(t, lam, z, h), d,
                        run["m"][0], run["a"][0] / run["b"][0])
    # the sup over the observation: z = hᵀθ, so the likelihood is √λ
    best = numerical_sup(lambda t, lam: log_f(run, t, lam) + 0.5 * math.log(lam), d,
                         run["m"][0], run["a"][0] / run["b"][0])
    got = model.log_consistency(model.prepare(run, z))[0]
    assert got == pytest.approx(top - best, abs=1e-6)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
@pytest.mark.parametrize(("z", "gamma"), [(0.4, 1.0), (-2.0, 0.6), (3.0, 0.25)])
def test_profile_evidence_and_update_are_f_times_l_gamma(model, z, gamma):
    from dataclasses import replace

    model = replace(model, evidence="profile", outlier_cost=1e6)
    run = random_run(model, 2)
    h, d = observation_vector(model), model.state_size

    def joint(t, lam):
        return log_f(run, t, lam) + gamma * log_lik(t, lam, z, h)

    def perfect(t, lam):  # the sup over the observation
        return log_f(run, t, lam) + gamma * 0.5 * math.log(lam)

    top = numerical_sup(joint, d, run["m"][0], run["a"][0] / run["b"][0])
    best = numerical_sup(perfect, d, run["m"][0], run["a"][0] / run["b"][0])
    incr, new = model.update(model.prepare(run, z), gamma)
    assert incr[0] == pytest.approx(top - best, abs=1e-6)
    rng = np.random.default_rng(3)
    for _ in range(5):  # the new function is f L^γ divided by its sup
        t, lam = rng.normal(size=d), math.exp(rng.normal())
        assert log_f(new, t, lam) == pytest.approx(joint(t, lam) - top, abs=1e-6)


@pytest.mark.parametrize(("z", "gamma"), [(0.5, 1.0), (-1.5, 0.5), (2.5, 0.8)])
def test_integrated_evidence_is_the_tempered_marginal_likelihood(z, gamma):
    model = SeasonalTrend(0, period=9.0, harmonics=1, prior=PRIOR, outlier_cost=1e6)
    run = random_run(model, 4)
    h = observation_vector(model)
    m, cov, a, b = run["m"][0], run["cov"][0], run["a"][0], run["b"][0]
    mean, q = h @ m, h @ cov @ h

    def integrand(lam):
        # ∫ N(z; hᵀθ, 1/λ)^γ N(θ; m, P/λ) dθ: the tempered density is a normal in z of
        # variance 1/(γλ) times (λ/2π)^(γ/2) (2π/(γλ))^(1/2), convolved with hᵀθ's normal
        factor = (lam / (2 * math.pi)) ** (0.5 * gamma) * math.sqrt(2 * math.pi / (gamma * lam))
        return (factor * stats.norm.pdf(z, mean, math.sqrt(1 / (gamma * lam) + q / lam))
                * stats.gamma.pdf(lam, a, scale=1 / b))

    ref = math.log(integrate.quad(integrand, 0, np.inf, epsabs=0, epsrel=1e-11, limit=500)[0])
    incr, _ = model.update(model.prepare(run, z), gamma)
    assert incr[0] == pytest.approx(ref, abs=1e-7)


def test_outlier_floor_leaves_the_run_unchanged():
    model = SeasonalTrend(1, period=10.0, harmonics=2, prior=PRIOR)
    run = random_run(model, 5)
    incr_small, _ = model.update(model.prepare(run, float(run["m"][0] @ observation_vector(
        model))), 1.0)  # a perfectly predicted observation: the evidence's best value
    incr, new = model.update(model.prepare(run, 1e6), 1.0)
    assert incr[0] == pytest.approx(incr_small[0] - model.outlier_cost, rel=1e-12)
    for key in ("m", "cov", "a", "b"):
        np.testing.assert_array_equal(new[key], run[key])


def test_forget_rotates_the_cycle_and_raises_f_to_rho():
    period, amplitude, phase, level = 12.0, 2.0, 0.7, 3.0
    model = SeasonalTrend(0, period=period, harmonics=2, prior=PRIOR)
    run = random_run(model, 6)
    w = 2 * math.pi / period
    run["m"] = np.array([[level, amplitude * math.cos(phase), amplitude * math.sin(phase),
                          0.5 * math.cos(2 * phase), 0.5 * math.sin(2 * phase)]])
    h = observation_vector(model)
    state = run
    for t in range(1, 30):
        state = model.forget(state, 1.0)
        expected = (level + amplitude * math.cos(w * t + phase)
                    + 0.5 * math.cos(2 * (w * t + phase)))
        assert h @ state["m"][0] == pytest.approx(expected, abs=1e-10)

    def rot(angle):
        return np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])

    f = linalg.block_diag([[1.0]], rot(w), rot(2 * w))
    rho = 0.7
    after = model.forget(run, rho)
    np.testing.assert_allclose(after["cov"][0], f @ run["cov"][0] @ f.T / rho, rtol=1e-12)
    rng = np.random.default_rng(7)
    for _ in range(5):  # f^ρ: log f_new(Fθ, λ) = ρ log f(θ, λ)
        t, lam = rng.normal(size=5), math.exp(rng.normal())
        assert log_f(after, f @ t, lam) == pytest.approx(rho * log_f(run, t, lam), abs=1e-9)


def test_trend_state_shifts_forward():
    model = SeasonalTrend(2, prior=PRIOR)
    run = random_run(model, 8)
    run["m"] = np.array([[1.0, 0.5, -0.25]])
    after = model.forget(run, 1.0)
    # y(t + τ) = 1 + 0.5 τ - 0.25 τ²: the state at τ = 1 is (1.25, 0, -0.25)
    np.testing.assert_allclose(after["m"][0], [1.25, 0.0, -0.25], atol=1e-15)


def cyclic_series(seed: int, n: int = 600, period: int = 24, shift_at: int | None = 400):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    y = 10 + 4 * np.sin(2 * np.pi * t / period) + 2 * np.cos(4 * np.pi * t / period)
    if shift_at is not None:
        y = y + 5.0 * (t >= shift_at)
    return y + rng.normal(size=n)


needs_numba = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


@needs_numba
@pytest.mark.parametrize("evidence", ["integrated", "profile"])
def test_compiled_and_numpy_engines_agree(evidence):
    y = cyclic_series(0)
    y[[50, 51, 300]] = np.nan
    y[[120, 500]] += 40.0
    models = model_family(period=(24.0, 60.0), evidence=evidence)
    fits = [ps.ChangepointDetector(model=models, engine=engine).fit(y)
            for engine in ("numpy", "numba")]
    np.testing.assert_array_equal(fits[0].changepoints, fits[1].changepoints)
    np.testing.assert_array_equal(fits[0].map_model, fits[1].map_model)
    np.testing.assert_array_equal(fits[0].map_run_length, fits[1].map_run_length)
    # the same expressions in the same order, but log Γ from math.lgamma in the kernel and
    # scipy's gammaln in numpy: they may differ in the last bit
    np.testing.assert_allclose(fits[0].discount, fits[1].discount, rtol=1e-12)
    np.testing.assert_allclose(fits[0].mean, fits[1].mean, rtol=1e-12)
    assert fits[0].changepoints.size >= 1


@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_streaming_equals_fit(engine):
    y = cyclic_series(1, n=300, shift_at=200)
    y[100] = np.nan
    models = model_family(period=24, prior=ps.changepoint.automatic_prior(y))
    res = ps.ChangepointDetector(model=models, engine=engine).fit(y)
    det = ps.ChangepointDetector(model=models, engine=engine)
    infos = [det.update(v) for v in y]
    np.testing.assert_array_equal([i.map_run_length for i in infos], res.map_run_length)
    np.testing.assert_array_equal([i.discount for i in infos], res.discount)


@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_invariant_under_affine_maps(engine):
    y = cyclic_series(2)
    y[200] += 30.0
    models = model_family(period=24)
    base = ps.ChangepointDetector(model=models, engine=engine).fit(y)
    for a, b in [(1e-3, 5.0), (250.0, -1e4)]:
        res = ps.ChangepointDetector(model=models, engine=engine).fit(a * y + b)
        np.testing.assert_array_equal(res.changepoints, base.changepoints)
        np.testing.assert_array_equal(res.map_model, base.map_model)
        np.testing.assert_allclose(res.discount, base.discount, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(res.mean, a * base.mean + b, rtol=1e-9,
                                   atol=1e-9 * abs(b) + 1e-9)
    assert base.changepoints.tolist() == [400]


@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_missing_values_advance_the_cycle(engine):
    """A gap of 17 steps (not a multiple of the period): the first value after it is judged
    against the cycle's phase 17 steps on, so it is consistent and no change is found; a model
    whose rotation stopped during the gap would be out of phase."""
    y = cyclic_series(3, n=500, shift_at=None)
    y[240:257] = np.nan
    models = [SeasonalTrend(0, period=24)]
    res = ps.ChangepointDetector(model=models, engine=engine).fit(y)
    assert res.changepoints.size == 0
    assert np.all(np.isnan(res.discount[240:257]))
    assert np.min(res.discount[257:270]) > 0.5
    t = np.arange(257, 270)
    truth = 10 + 4 * np.sin(2 * np.pi * t / 24) + 2 * np.cos(4 * np.pi * t / 24)
    assert np.max(np.abs(res.mean[257:270] - truth)) < 1.0


def test_cycle_idle_has_no_change_point():
    """Hourly series with a daily cycle 40% smaller on weekends and no anomaly: none gets a
    change point, against several per series for the default family without the cycle. With
    three harmonics of the day and three of the week (no sidebands), seeds 6, 13 and 20 got
    change points (a Saturday, the first weekend, the first day)."""
    for seed in (*range(12), 13, 20):
        series, windows = ps.datasets.cycle_idle(seed=seed)
        models = ps.changepoint.models_for_series(series.values, series.index)
        assert len(models) == 5
        res = ps.ChangepointDetector(model=models).fit(series.values)
        assert res.changepoints.size == 0, (seed, res.changepoints)
        if seed < 3:
            assert ps.ChangepointDetector().fit(series.values).changepoints.size > 0


def test_default_harmonics_of_a_day_and_a_week():
    """A week is 7 days: harmonic 7 of the week is the day's fundamental, and a daily cycle
    whose amplitude follows the week puts its weekly terms at 7 ± 1, 7 ± 2."""
    assert harmonic_numbers((24.0, 168.0)) == ((1, 2, 3), (1, 2, 6, 8, 5))
    assert harmonic_numbers((168.0, 24.0)) == ((1, 2, 6, 8, 5), (1, 2, 3))
    assert harmonic_numbers((288.0, 2016.0)) == ((1, 2, 3), (1, 2, 6, 8, 5))  # 5 minutes
    # 12-hour data: harmonics of 14 steps stop at 6 (below Nyquist)
    assert harmonic_numbers((2.0, 14.0)) == ((1,), (1, 2, 6, 5))
    # three times a day: 3 ± 1 and 3 ± 2, without the ones already there
    assert harmonic_numbers((24.0, 72.0)) == ((1, 2, 3), (1, 2, 4, 5))
    # not a whole multiple, or only twice: three each, as for an int
    assert harmonic_numbers((7.0, 365.2425)) == harmonic_numbers((7.0, 365.2425), 3)
    assert harmonic_numbers((12.0, 24.0)) == ((1, 2, 3), (1, 2, 3))
    # three periods: the nearest shorter one's sidebands, 8 pairs in all
    assert harmonic_numbers((4.0, 24.0, 168.0)) == ((1,), (1, 2, 5), (1, 2, 6, 8))
    # a sideband at a shorter period's harmonic is left out: 8/24 = 1/3, 6/24 = 1/4, 6/30 = 1/5
    assert harmonic_numbers((3.0, 4.0, 24.0)) == ((1,), (1,), (1, 2, 5, 7, 4))
    assert harmonic_numbers((4.0, 6.0, 24.0)) == ((1,), (1, 2), (1, 2, 3, 5))
    assert harmonic_numbers((5.0, 6.0, 30.0)) == ((1, 2), (1, 2), (1, 2, 4, 3))
    # no sidebands when three each do not fit in 8 pairs: the limit's error, as without them
    assert harmonic_numbers((8.0, 24.0, 168.0)) == ((1, 2, 3),) * 3
    with pytest.raises(ValueError, match="at most 8"):
        SeasonalTrend(0, period=(8, 24, 168))
    assert SeasonalTrend(0, period=(24, 168)).state_size == 1 + 2 * 8
    assert SeasonalTrend(0, period=(24, 168), harmonics=3).state_size == 1 + 2 * 6


def test_a_daily_cycle_modulated_by_the_week_is_fitted_exactly():
    """(1 + ½ cos(2πt/168)) cos(2πt/24) = cos(2πt/24) + ¼ cos(2π·6t/168) + ¼ cos(2π·8t/168):
    in the span of the default harmonics, not of three per period. Four weeks with little
    noise: the default gets no change point and its fitted value of the last day is within
    the noise; the other is cut about every 80 steps and is off by a tenth of the amplitude."""
    t = np.arange(4 * 168)
    truth = 10.0 + 4.0 * (1.0 + 0.5 * np.cos(2 * np.pi * t / 168)) * np.cos(2 * np.pi * t / 24)
    y = truth + np.random.default_rng(0).normal(0.0, 0.01, t.size)
    cuts, errors = [], []
    for harmonics in (None, 3):
        model = SeasonalTrend(0, period=(24, 168), harmonics=harmonics)
        res = ps.ChangepointDetector(model=model).fit(y)
        cuts.append(res.changepoints.size)
        errors.append(np.max(np.abs(res.mean[-24:] - truth[-24:])))
    assert cuts[0] == 0 and errors[0] < 0.05
    assert cuts[1] > 4 and errors[1] > 0.3


@pytest.mark.parametrize("degree", [0, 1, 2])
@pytest.mark.parametrize("harmonics", [None, ((1,), (5, 9))])
@pytest.mark.parametrize("rho", [1.0, 0.9])
def test_kernel_forget_is_the_numpy_forget_bit_for_bit(degree, harmonics, rho):
    """The compiled kernel's forget (run here as Python: the same operations) against the
    numpy engine's, on a random state, eight pairs of a day and a week."""
    from possibly.changepoint.models.seasonal import kernel_forget, pack_runs, unpack_runs

    model = SeasonalTrend(degree, period=(24, 168), harmonics=harmonics, prior=PRIOR)
    rng = np.random.default_rng(degree)
    d = model.state_size
    runs = model.new_runs(3)
    runs["m"] = rng.normal(size=(3, d))
    half = rng.normal(size=(3, d, d))
    runs["cov"] = half @ half.transpose(0, 2, 1)
    runs["a"], runs["b"] = rng.uniform(1, 5, 3), rng.uniform(0.5, 2, 3)
    expected = model.forget(runs, rho)
    rows = pack_runs(runs)
    params = model.compiled_kernel().params
    for j in range(3):
        kernel_forget(params, rows, j, rho, np.zeros(d))
    got = unpack_runs(rows, d)
    for key in ("m", "cov", "a", "b"):
        np.testing.assert_array_equal(got[key], expected[key])


@pytest.mark.parametrize("seed", range(5))
def test_seasonal_dataset_has_no_change_point(seed):
    y, truth = ps.datasets.seasonal(seed=seed)
    res = ps.ChangepointDetector(model=ps.changepoint.models_for_series(y)).fit(y)
    assert res.changepoints.size == 0 == truth.changepoints.size


def test_daily_cycle_with_level_shifts_gets_the_shifts():
    """Ten hourly series with a daily and weekly cycle and two level shifts each: every shift
    found within 5 steps, and at least 8 of the series get no other change point (the default
    family, without the cycle, cuts some of them into dozens of segments)."""
    clean = 0
    for seed in range(10):
        series, windows = ps.datasets.cycle_level_shift(seed=seed)
        models = ps.changepoint.models_for_series(series.values, series.index)
        cps = ps.ChangepointDetector(model=models).fit(series.values).changepoints
        near = [int(np.min(np.abs(cps - a))) if cps.size else 10**9 for a in windows[:, 0]]
        assert max(near) <= 5, (seed, cps, windows[:, 0])
        clean += cps.size == len(windows)
    assert clean >= 8


def test_a_level_shift_in_a_daily_cycle_is_the_only_change():
    y = cyclic_series(4, n=24 * 30, shift_at=24 * 17 + 5)
    res = ps.ChangepointDetector(model=ps.changepoint.models_for_series(y)).fit(y)
    assert res.changepoints.tolist() == [24 * 17 + 5]


def test_model_family_without_period_is_the_trend_family():
    assert model_family() == trend_family()
    kw = {"outlier_cost": 4.0, "noise_shape": 2.0}
    assert model_family(**kw) == trend_family(**kw)
    names = [m.name for m in model_family(period=(24, 168))]
    assert names[3:] == ["level + cycle 24/168", "linear trend + cycle 24/168"]


def test_series_without_a_cycle_keep_the_default_models():
    for name in ("level_shifts_outliers", "trend_jumps", "ar1_shifts", "heavy_tailed"):
        for seed in range(3):
            y = ps.datasets.SYNTHETIC_SUITE[name](seed=seed)[0]
            assert ps.changepoint.models_for_series(y) == trend_family()


def test_settings_and_errors():
    m = SeasonalTrend(1, period=(24, 168), harmonics=(3, 2))
    assert m.state_size == 2 + 10 and m.dim == 14.0
    assert SeasonalTrend(0, period=4).state_size == 3  # one harmonic below Nyquist
    assert SeasonalTrend(0).state_size == 1
    with pytest.raises(ValueError, match="period must be a number >= 2"):
        SeasonalTrend(0, period=1.5)
    with pytest.raises(ValueError, match="period must be a number >= 2"):
        SeasonalTrend(0, period=float("nan"))
    with pytest.raises(ValueError, match="harmonics of period 24 must be an integer >= 1 or "
                                         r"a tuple of harmonic numbers in \[1, 11\], got 0"):
        SeasonalTrend(0, period=24, harmonics=0)
    with pytest.raises(ValueError, match="harmonics of period 24 must be an integer >= 1"):
        SeasonalTrend(0, period=(24, 168), harmonics=(None, 3))
    with pytest.raises(ValueError, match="harmonics must be None, an integer >= 1, or one "
                                         "entry per period"):
        SeasonalTrend(0, period=(24, 168), harmonics=(3,))
    with pytest.raises(ValueError, match=r"for one period, harmonic numbers are written "
                                         r"\(\(1, 5\),\)"):
        SeasonalTrend(0, period=24, harmonics=(1, 5))
    for bad in ((), (0,), (12,), (2, 2), (1.0,), (True,)):  # 24 steps: 1 to 11
        with pytest.raises(ValueError, match=r"harmonics of period 24 must be distinct "
                                             r"integers in \[1, 11\]"):
            SeasonalTrend(0, period=(24, 168), harmonics=(bad, 3))
    assert SeasonalTrend(0, period=(24, 168), harmonics=((1, 11), (84 - 1,))).state_size == 7
    with pytest.raises(ValueError, match="at most 8"):
        SeasonalTrend(0, period=(100, 200), harmonics=(5, 5))
    with pytest.raises(ValueError, match="degree must be 0, 1 or 2"):
        SeasonalTrend(3, period=24)
    with pytest.raises(ValueError, match="cycle_scale must be a finite number > 0"):
        SeasonalTrend(0, period=24, cycle_scale=0.0)
    with pytest.raises(ValueError, match="prior.*automatic_prior"):
        SeasonalTrend(0, period=24).new_runs(1)


@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_spikes_in_a_cycle_are_outliers_not_changes(engine):
    y = cyclic_series(5, shift_at=None)
    y[[120, 333, 500]] += [15.0, -12.0, 20.0]
    res = ps.ChangepointDetector(model=model_family(period=24), engine=engine).fit(y)
    assert res.changepoints.size == 0
    assert res.outliers.tolist() == [120, 333, 500]


def test_outlying_replays_the_run():
    """The hindsight half of the outlier rule: the observations whose evidence took the run's
    floor, here a spike of 8 in a clean cycle (and nothing in the same cycle without it)."""
    t = np.arange(96)
    y = 3 * np.sin(2 * np.pi * t / 24)
    model = SeasonalTrend(0, period=24, prior=ps.changepoint.automatic_prior(y))
    assert not model.outlying(y, np.ones(96)).any()
    y[60] += 8.0
    assert np.flatnonzero(model.outlying(y, np.ones(96))).tolist() == [60]
    y[70] = np.nan
    assert np.flatnonzero(model.outlying(y, np.ones(96))).tolist() == [60]


def test_pickled_stream_resumes():
    import pickle

    y = cyclic_series(6, n=300, shift_at=150)
    models = model_family(period=24, prior=ps.changepoint.automatic_prior(y[:100]))
    det = ps.ChangepointDetector(model=models)
    first = [det.update(v).discount for v in y[:120]]
    clone = pickle.loads(pickle.dumps(det))
    rest = [det.update(v) for v in y[120:]]
    again = [clone.update(v) for v in y[120:]]
    assert [i.discount for i in rest] == [i.discount for i in again]
    assert [i.map_run_length for i in rest] == [i.map_run_length for i in again]
    assert len(first) == 120 and rest[-1].map_run_length == 149  # the change at 150


@pytest.mark.parametrize("degree, period", [(0, 24), (1, (24, 168)), (2, 7)])
def test_kernel_reads_only_the_run_size_of_a_row(degree, period):
    # the compiled engine moves only the first run_size floats of a row: NaN past them must
    # change nothing, and the state read back must be the numpy model's
    from possibly.changepoint.models import seasonal

    model = SeasonalTrend(degree, period, prior=PRIOR)
    kernel = model.compiled_kernel()
    functions, params = kernel.functions, kernel.params
    size = functions.run_size(params)
    d = model.state_size
    assert size == 3 + d + d * d < functions.width
    clean = np.zeros((1, functions.width))
    functions.new_run(params, clean, 0)
    dirty = np.full((1, functions.width), np.nan)
    functions.new_run(params, dirty, 0)
    runs = model.new_runs(1)
    work = np.zeros(kernel.work_size)
    rng = np.random.default_rng(degree)
    for i, y in enumerate(rng.normal(size=60) + 3.0 * np.sin(np.arange(60) / 3.0)):
        if i:
            runs = model.forget(runs, 1.0)
            for rows in (clean, dirty):
                functions.forget(params, rows, 0, 1.0, work)
        z = functions.prepare(params, y)
        assert functions.log_consistency(params, clean, 0, z) == \
            functions.log_consistency(params, dirty, 0, z)
        assert functions.update(params, clean, 0, z, 1.0, work) == \
            functions.update(params, dirty, 0, z, 1.0, work)
        runs = model.update(model.prepare(runs, y), 1.0)[1]
    np.testing.assert_array_equal(clean[0, :size], dirty[0, :size])
    back = seasonal.unpack_runs(dirty, d)
    for key in ("m", "cov", "a", "b"):
        np.testing.assert_allclose(back[key], runs[key], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(seasonal.pack_runs(back)[0, :size], dirty[0, :size])


@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_streaming_equals_fit_with_two_periods_and_the_anomaly(engine):
    import pickle

    y = cyclic_series(3, n=400, shift_at=250)
    y[120] = np.nan
    y[300] += 25.0
    models = model_family(period=(24, 168), prior=ps.changepoint.automatic_prior(y[:150]))
    res = ps.ChangepointDetector(model=models, period=24, engine=engine).fit(y)
    det = ps.ChangepointDetector(model=models, period=24, engine=engine)
    infos = [det.update(v) for v in y[:200]]
    det = pickle.loads(pickle.dumps(det))
    infos += [det.update(v) for v in y[200:]]
    for field in ("map_run_length", "discount", "log_consistency", "anomaly"):
        np.testing.assert_array_equal([getattr(i, field) for i in infos], getattr(res, field))
    np.testing.assert_array_equal(det.result().anomaly, res.anomaly)
